//! HAProxy's timers, under whatever keys an operator gave them. HAProxy measures an HTTP exchange
//! in phases from the connection's accept (`%Ts`): `Th` the handshake, `Ti` idle before the
//! request, `TR` receiving its head (`%tr` is the accept plus `Th + Ti`), `Tw` queued, `Tc`
//! connecting, `Tr` until the server's response head, then the data. `Ta` is the request's
//! active time from `%tr` to the end, `Tt` the total from the accept. A timer is `-1` when its
//! phase did not happen. Keys are the codes themselves (`Ta`, `%Tt`), or names (`time_active`,
//! `time_total_ms`), with a unit suffix when they are not milliseconds.

use serde_json::{Map, Value};

use mcpf_model::DurationEstimate;

use super::aliases::normalized;
use super::times::{DurationUnit, parse_duration, unit_suffix};

/// One record's timers, in nanoseconds; `None` when not logged or when the phase did not happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Timers {
    handshake: Option<i64>,
    idle: Option<i64>,
    request: Option<i64>,
    queue: Option<i64>,
    connect: Option<i64>,
    response: Option<i64>,
    active: Option<i64>,
    total: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    Handshake,
    Idle,
    Request,
    Queue,
    Connect,
    Response,
    Active,
    Total,
}

/// Where a record's times are counted from: `%tr` (the request's first byte) or `%Ts` (the
/// connection's accept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    Request,
    Accept,
}

/// A record's end and response head as offsets from its origin, and how the end was derived
/// when no timer measures it exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) end: Option<i64>,
    pub(super) head: Option<i64>,
    pub(super) estimate: Option<DurationEstimate>,
}

/// Which timer a key holds, and in what unit.
fn timer_of(key: &str) -> Option<(Timer, DurationUnit)> {
    let code = key.trim_start_matches('%');
    // `TR` and `Tr` differ only by case: the code is read as HAProxy writes it.
    let exact = match code {
        "Th" => Some(Timer::Handshake),
        "Ti" => Some(Timer::Idle),
        "TR" => Some(Timer::Request),
        "Tw" => Some(Timer::Queue),
        "Tc" => Some(Timer::Connect),
        "Tr" => Some(Timer::Response),
        "Ta" => Some(Timer::Active),
        "Tt" => Some(Timer::Total),
        _ => None,
    };
    if let Some(t) = exact {
        return Some((t, DurationUnit::Millis));
    }
    let norm = normalized(code);
    let (base, unit) = unit_suffix(&norm);
    let timer = match base {
        "th" | "time_handshake" | "handshake_time" => Timer::Handshake,
        "ti" | "time_idle" | "idle_time" => Timer::Idle,
        "time_request" | "request_header_time" => Timer::Request,
        "tw" | "time_wait" | "time_queue" | "queue_time" => Timer::Queue,
        "tc" | "time_connect" | "connect_time" => Timer::Connect,
        "tr" | "time_response" | "response_time" | "server_time" | "time_server" => Timer::Response,
        // An operator's `duration` is the request's own: `%Ta`.
        "ta" | "time_active" | "active_time" | "duration" => Timer::Active,
        "tt" | "time_total" | "total_time" => Timer::Total,
        _ => return None,
    };
    Some((timer, unit.unwrap_or(DurationUnit::Millis)))
}

/// Whether a key holds one of HAProxy's timers.
pub(super) fn is_timer(key: &str) -> bool {
    timer_of(key).is_some()
}

/// What a timer key is read as, for a person to check.
pub(super) fn read_as(key: &str) -> Option<String> {
    let (timer, unit) = timer_of(key)?;
    let code = match timer {
        Timer::Handshake => "%Th",
        Timer::Idle => "%Ti",
        Timer::Request => "%TR",
        Timer::Queue => "%Tw",
        Timer::Connect => "%Tc",
        Timer::Response => "%Tr",
        Timer::Active => "%Ta",
        Timer::Total => "%Tt",
    };
    let unit = match unit {
        DurationUnit::Seconds => "s",
        DurationUnit::Millis => "ms",
        DurationUnit::Micros => "µs",
        DurationUnit::Nanos => "ns",
    };
    Some(format!("timer {code} in {unit}"))
}

/// `-1`: the phase did not happen.
fn negative(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64().is_some_and(|f| f < 0.0),
        Value::String(s) => s.trim().starts_with('-'),
        _ => false,
    }
}

impl Timers {
    /// The timers of a record; the first key for a timer wins.
    pub(super) fn of(obj: &Map<String, Value>) -> Timers {
        let mut t = Timers::default();
        for (k, v) in obj {
            let Some((timer, unit)) = timer_of(k) else {
                continue;
            };
            let slot = t.slot(timer);
            if slot.is_none() && !negative(v) {
                *slot = parse_duration(v, unit);
            }
        }
        t
    }

    fn slot(&mut self, timer: Timer) -> &mut Option<i64> {
        match timer {
            Timer::Handshake => &mut self.handshake,
            Timer::Idle => &mut self.idle,
            Timer::Request => &mut self.request,
            Timer::Queue => &mut self.queue,
            Timer::Connect => &mut self.connect,
            Timer::Response => &mut self.response,
            Timer::Active => &mut self.active,
            Timer::Total => &mut self.total,
        }
    }

    /// Whether the response head's time is measured (`Tr` logged and the head came).
    pub(super) fn head_measured(&self) -> bool {
        self.response.is_some()
    }

    /// `Th + Ti`: the time between the accept and the request's first byte, when both are
    /// logged.
    fn before_request(&self) -> Option<i64> {
        Some(self.handshake? + self.idle?)
    }

    /// The end and the response head, counted from `origin`.
    pub(super) fn span(&self, origin: Origin) -> Span {
        let shift = match origin {
            Origin::Request => 0,
            Origin::Accept => self.before_request().unwrap_or(0),
        };
        let head = self.response.map(|tr| {
            shift
                + [self.request, self.queue, self.connect]
                    .iter()
                    .flatten()
                    .sum::<i64>()
                + tr
        });
        let (end, estimate) = match (origin, self.active, self.total) {
            (Origin::Request, Some(ta), _) => (Some(ta), None),
            (Origin::Request, None, Some(tt)) => match self.before_request() {
                Some(before) => (Some((tt - before).max(0)), None),
                None => (Some(tt), Some(DurationEstimate::TotalIncludesIdle)),
            },
            (Origin::Accept, _, Some(tt)) => (Some(tt), None),
            (Origin::Accept, Some(ta), None) => match self.before_request() {
                Some(before) => (Some(before + ta), None),
                None => (Some(ta), Some(DurationEstimate::ActiveFromAccept)),
            },
            (_, None, None) => (None, None),
        };
        Span {
            end,
            head,
            estimate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MS: i64 = 1_000_000;

    fn timers(v: Value) -> Timers {
        Timers::of(v.as_object().unwrap())
    }

    #[test]
    fn codes_names_and_unit_suffixes_are_read() {
        let t = timers(json!({"TR": 1, "Tw": 2, "Tc": 3, "Tr": 40, "Ta": 4455, "Tt": 4460}));
        assert_eq!(t.request, Some(MS));
        assert_eq!(t.response, Some(40 * MS), "`Tr` is not `TR`");
        let t = timers(json!({"time_total_ms": 4455, "time_response_us": 2000, "tw_s": "0.5"}));
        assert_eq!(t.total, Some(4455 * MS));
        assert_eq!(t.response, Some(2 * MS));
        assert_eq!(t.queue, Some(500 * MS));
        let t = timers(json!({"Tr": -1, "Ta": "+12"}));
        assert_eq!(t.response, None, "-1: there was no response head");
        assert_eq!(t.active, Some(12 * MS), "`+` of option logasap");
    }

    #[test]
    fn the_active_time_counts_from_the_request_and_the_total_from_the_accept() {
        let t = timers(json!({"Th": 0, "Ti": 1000, "TR": 1, "Tr": 5, "Ta": 4455, "Tt": 5455}));
        let from_request = t.span(Origin::Request);
        assert_eq!(from_request.end, Some(4455 * MS));
        assert_eq!(from_request.head, Some(6 * MS));
        assert_eq!(from_request.estimate, None);
        let from_accept = t.span(Origin::Accept);
        assert_eq!(from_accept.end, Some(5455 * MS));
        assert_eq!(from_accept.head, Some(1006 * MS));
    }

    #[test]
    fn a_total_without_the_idle_time_is_an_estimate() {
        let t = timers(json!({"time_total_ms": 4455, "termination_state": "CD"}));
        let span = t.span(Origin::Request);
        assert_eq!(span.end, Some(4455 * MS));
        assert_eq!(span.estimate, Some(DurationEstimate::TotalIncludesIdle));
        let t = timers(json!({"Ta": 30}));
        assert_eq!(
            t.span(Origin::Accept).estimate,
            Some(DurationEstimate::ActiveFromAccept)
        );
        assert_eq!(timers(json!({})).span(Origin::Request), Span::default());
    }
}
