//! Owned HTTP events of one non-capture input, sorted by time before they are emitted.
//!
//! HAR entries and log lines are not in time order (a log line is written when its request
//! ends; a HAR may list entries by completion), so an input is buffered whole, then emitted in
//! the order a capture of the same traffic would have produced: by time, and within one
//! exchange request → response head → events → end (times are made monotonic per exchange
//! before they are pushed, and ties keep the order of pushing).

use std::net::SocketAddr;

use crate::capture::tcp::{ConnId, Direction};
use crate::http::sse::SseEvent;
use crate::http::{ConnKind, ExchangeId, HttpEvent, HttpSink, Outcome, Request, ResponseEnd, ResponseHead};
use crate::model::{Mark, Timestamp};

pub(crate) enum Item {
    Request(Request),
    Head(ResponseHead),
    Sse(ExchangeId, SseEvent),
    End(ResponseEnd),
    NoResponse {
        exchange: ExchangeId,
        outcome: Outcome,
        closed_by: Option<Direction>,
        mark: Mark,
    },
    Anomaly {
        conn: ConnId,
        dir: Direction,
        mark: Mark,
        what: String,
    },
    ConnEnd {
        conn: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        mark: Mark,
    },
}

#[derive(Default)]
pub(crate) struct Timeline {
    items: Vec<(Timestamp, usize, Item)>,
}

impl Timeline {
    pub fn push(&mut self, time: Timestamp, item: Item) {
        let seq = self.items.len();
        self.items.push((time, seq, item));
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Emits every item in time order (ties in the order they were pushed).
    pub fn emit(mut self, sink: &mut impl HttpSink) {
        self.items.sort_by_key(|(t, seq, _)| (*t, *seq));
        for (_, _, item) in &self.items {
            let ev = match item {
                Item::Request(r) => HttpEvent::Request(r),
                Item::Head(h) => HttpEvent::ResponseHead(h),
                Item::Sse(exchange, event) => HttpEvent::SseEvent {
                    exchange: *exchange,
                    event,
                },
                Item::End(e) => HttpEvent::ResponseEnd(e),
                Item::NoResponse {
                    exchange,
                    outcome,
                    closed_by,
                    mark,
                } => HttpEvent::NoResponse {
                    exchange: *exchange,
                    outcome: *outcome,
                    closed_by: *closed_by,
                    mark: *mark,
                },
                Item::Anomaly {
                    conn,
                    dir,
                    mark,
                    what,
                } => HttpEvent::Anomaly {
                    conn: *conn,
                    dir: *dir,
                    mark: *mark,
                    what: what.clone(),
                },
                Item::ConnEnd {
                    conn,
                    client,
                    server,
                    mark,
                } => HttpEvent::ConnectionEnd {
                    conn: *conn,
                    client: *client,
                    server: *server,
                    kind: ConnKind::Http,
                    mark: *mark,
                },
            };
            sink.on_http(ev);
        }
    }
}

/// `t` moved forward to `floor` when earlier: times of one exchange never go backwards.
pub(crate) fn not_before(t: Timestamp, floor: Timestamp) -> Timestamp {
    t.max(floor)
}

/// Milliseconds (as HAR timings and Envoy durations give them) to nanoseconds.
pub(crate) fn ms_to_ns(ms: f64) -> i64 {
    if !ms.is_finite() || ms <= 0.0 {
        return 0;
    }
    (ms * 1e6).round().min(i64::MAX as f64) as i64
}

/// Seconds to nanoseconds.
pub(crate) fn secs_to_ns(s: f64) -> i64 {
    if !s.is_finite() || s <= 0.0 {
        return 0;
    }
    (s * 1e9).round().min(i64::MAX as f64) as i64
}
