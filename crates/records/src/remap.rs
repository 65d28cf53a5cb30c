//! The identities an event carries, renamed: when the records of several extract runs are read
//! as one run, each file's inputs take their place in the run's list of inputs and its TCP
//! connections are numbered again in the run's order.

use mcpf_http::HttpEvent;
use mcpf_model::{ConnId, Mark};

/// Calls `mark` on every capture mark of `event` and `conn` on every connection it names.
pub fn visit(
    event: &mut HttpEvent,
    mut mark: impl FnMut(&mut Mark),
    mut conn: impl FnMut(&mut ConnId),
) {
    match event {
        HttpEvent::Request(r) => {
            conn(&mut r.exchange.conn);
            mark(&mut r.first);
            mark(&mut r.last);
        }
        HttpEvent::ResponseHead(h) => {
            conn(&mut h.exchange.conn);
            mark(&mut h.first);
        }
        HttpEvent::SseEvent { exchange, event } => {
            conn(&mut exchange.conn);
            mark(&mut event.mark);
        }
        HttpEvent::ResponseEnd(end) => {
            conn(&mut end.exchange.conn);
            mark(&mut end.last);
        }
        HttpEvent::NoResponse {
            exchange, mark: m, ..
        } => {
            conn(&mut exchange.conn);
            mark(m);
        }
        HttpEvent::Anomaly(a) => {
            conn(&mut a.conn);
            mark(&mut a.mark);
        }
        HttpEvent::LateInconsistency { exchange, .. } => conn(&mut exchange.conn),
        HttpEvent::ConnectionStart {
            conn: c, mark: m, ..
        }
        | HttpEvent::ConnectionEnd {
            conn: c, mark: m, ..
        } => {
            conn(c);
            mark(m);
        }
    }
}

/// The mark of the frame that completed `event` (every event but a late inconsistency has one).
pub fn completed_at(event: &HttpEvent) -> Option<Mark> {
    Some(match event {
        HttpEvent::Request(r) => r.last,
        HttpEvent::ResponseHead(h) => h.first,
        HttpEvent::SseEvent { event, .. } => event.mark,
        HttpEvent::ResponseEnd(end) => end.last,
        HttpEvent::NoResponse { mark, .. } => *mark,
        HttpEvent::Anomaly(a) => a.mark,
        HttpEvent::LateInconsistency { .. } => return None,
        HttpEvent::ConnectionStart { mark, .. } | HttpEvent::ConnectionEnd { mark, .. } => *mark,
    })
}

/// The input `event` was read from, when it carries a mark.
pub fn input_of(event: &HttpEvent) -> Option<mcpf_model::InputId> {
    completed_at(event).map(|m| m.frame.input)
}
