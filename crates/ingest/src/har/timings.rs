//! HAR `timings` to the marks of an exchange. `startedDateTime` plus `blocked`, `dns` and
//! `connect` is the request's first byte, plus `send` its last, plus `wait` the response's first
//! byte, plus `receive` its end; -1 means not applicable, and `ssl` is already inside `connect`.

use serde_json::{Map, Value};

use mcpf_model::Timestamp;

use super::as_f64;
use crate::timeline::{ms_to_ns, not_before};

/// When an exchange's request and response began and ended.
pub(super) struct Times {
    pub(super) req_first: Timestamp,
    pub(super) req_last: Timestamp,
    pub(super) head: Timestamp,
    pub(super) end: Timestamp,
}

/// The times of the entry `obj` that started at `started`.
pub(super) fn times(obj: &Map<String, Value>, started: Timestamp) -> Times {
    let timings = obj.get("timings").and_then(Value::as_object);
    let t = |k: &str| {
        ms_to_ns(
            timings
                .and_then(|t| t.get(k))
                .and_then(as_f64)
                .unwrap_or(0.0),
        )
    };
    let total = ms_to_ns(obj.get("time").and_then(as_f64).unwrap_or(0.0));
    let req_first = started.add_nanos(t("blocked") + t("dns") + t("connect"));
    let req_last = req_first.add_nanos(t("send"));
    let head = req_last.add_nanos(t("wait"));
    let mut end = head.add_nanos(t("receive"));
    if timings.is_none() {
        end = started.add_nanos(total);
    }
    Times {
        req_first,
        req_last,
        head,
        end: not_before(end, head),
    }
}
