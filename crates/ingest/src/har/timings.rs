//! HAR `timings` to the marks of an exchange. `startedDateTime` plus `blocked`, `dns` and
//! `connect` is the request's first byte, plus `send` its last, plus `wait` the response's first
//! byte, plus `receive` its end; -1 means not applicable, and `ssl` is already inside `connect`.
//! `time` is the whole entry's: Playwright writes every timing -1 for a request aborted before
//! its response and keeps the wait in `time` alone, so the end is never before `time` says.

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
    /// The entry does not say when its response ended: `receive` is -1 (Playwright's for a
    /// stream the page aborted; its `time` then stops near the head).
    pub(super) end_unknown: bool,
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
    let total = started.add_nanos(ms_to_ns(obj.get("time").and_then(as_f64).unwrap_or(0.0)));
    let req_first = started.add_nanos(t("blocked") + t("dns") + t("connect"));
    let req_last = req_first.add_nanos(t("send"));
    let head = req_last.add_nanos(t("wait"));
    let end = not_before(not_before(head.add_nanos(t("receive")), total), head);
    let timing = |k: &str| timings.and_then(|t| t.get(k)).and_then(as_f64);
    let receive_known = timing("receive").is_some_and(|r| r >= 0.0);
    // No time at all after the sending (mitmproxy's for a response it never had whole: a
    // stream it held, a client that left): a real response takes some.
    let stops_at_sending = timing("wait").is_none_or(|w| w <= 0.0)
        && timing("receive").is_none_or(|r| r <= 0.0)
        && end <= req_last;
    Times {
        req_first,
        req_last,
        head,
        end,
        end_unknown: timings.is_some() && (!receive_known || stops_at_sending),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(entry: serde_json::Value) -> Times {
        times(entry.as_object().unwrap(), Timestamp(0))
    }

    #[test]
    fn timings_give_each_mark() {
        let t = of(
            json!({"time": 10.0, "timings": {"blocked": 1, "dns": -1, "connect": 1, "send": 1, "wait": 5, "receive": 2}}),
        );
        assert_eq!(
            (t.req_first.0, t.req_last.0, t.head.0, t.end.0),
            (2_000_000, 3_000_000, 8_000_000, 10_000_000)
        );
        assert!(!t.end_unknown);
    }

    #[test]
    fn a_request_aborted_before_its_response_ends_when_time_says() {
        // Playwright: every timing -1, the client's wait in `time` alone.
        let t = of(json!({"time": 1504.362, "timings": {"send": -1, "wait": -1, "receive": -1}}));
        assert_eq!(t.req_last.0, 0);
        assert_eq!(t.end.0, 1_504_362_000);
    }

    #[test]
    fn timings_that_stop_at_the_sending_give_no_end() {
        // mitmproxy, for an event stream it held: 200 recorded, no wait, no receive.
        let t = of(
            json!({"time": 0.34, "timings": {"connect": -1, "send": 0.34, "wait": 0, "receive": 0}}),
        );
        assert!(t.end_unknown);
        let t = of(json!({"time": 1.0, "timings": {"send": 0.2, "wait": 0.5, "receive": 0.3}}));
        assert!(!t.end_unknown);
    }

    #[test]
    fn a_stream_without_receive_has_no_known_end() {
        let t = of(json!({"time": 2.5, "timings": {"send": 0, "wait": 0.9, "receive": -1}}));
        assert!(t.end_unknown);
        let t = of(json!({"time": 2.5}));
        assert!(!t.end_unknown, "no timings at all: `time` is the end");
        assert_eq!(t.end.0, 2_500_000);
    }
}
