//! Which request a response answers. HTTP/1.1 answers in order (RFC 9112 §9.3): the n-th
//! response on a connection answers its n-th request, pipelined or not.
//!
//! A capture that began late, lost bytes, or put a response before its request breaks the
//! count, so a response with no request waiting takes a place the next request head fills
//! (when that request was captured before it), and a response whose head a gap took ends the
//! oldest request still waiting as unanswered.

use super::{Connection, HttpSink};
use crate::body::Framing;
use crate::{ExchangeId, HttpEvent, Outcome};
use mcpf_model::{AnomalyKind, Direction, Mark};

/// A request waiting for its response: its exchange's index, its method (the response to a
/// `HEAD` has no body), and where its first byte was captured.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) index: u32,
    pub(super) method: String,
    pub(super) first: Mark,
}

impl Connection {
    /// The exchange a request head opens: the place a response already took for it, or a new
    /// one that waits for its response.
    pub(super) fn request_index(&mut self, method: &str, first: Mark) -> u32 {
        // Only a request whose first byte was captured before the response is the one it
        // answers; a later request is a new one (the capture began after the first request).
        if self
            .unpaired_responses
            .front()
            .is_some_and(|(_, at)| first > *at)
        {
            self.unpaired_responses.clear();
        }
        if let Some((answered, _)) = self.unpaired_responses.pop_front() {
            return answered;
        }
        let index = self.next_index;
        self.next_index += 1;
        if self.pending.capacity() == 0 {
            // Room for one: HTTP/1.1 clients seldom pipeline, and a first push would make room
            // for four, kept for the connection's life (224 bytes instead of 56).
            self.pending.reserve_exact(1);
        }
        self.pending.push_back(Pending {
            index,
            method: method.to_string(),
            first,
        });
        index
    }

    /// The exchange a response head answers, and its request's method (empty when unknown).
    pub(super) fn response_index(&mut self, first: Mark) -> (u32, String) {
        if let Some(p) = self.pending.pop_front() {
            return (p.index, p.method);
        }
        // A response to a request not seen yet (capture started late, a gap, or the capture
        // reordered them): the next request head takes this place.
        let index = self.next_index;
        self.next_index += 1;
        self.unpaired_responses.push_back((index, first));
        (index, String::new())
    }

    /// Bytes after a gap between two messages started none: the gap took the head of a message
    /// whose rest they are. A response answers the oldest request still waiting (HTTP/1.1
    /// answers in order): that request's answer was lost, and the next response is the next
    /// request's, not its.
    pub(super) fn lost_in_gap(&mut self, dir: Direction, mark: Mark, sink: &mut impl HttpSink) {
        if dir != Direction::ServerToClient {
            return;
        }
        self.end_request_lost_in_gap(mark, sink);
        let Some(p) = self.pending.pop_front() else {
            return;
        };
        let exchange = ExchangeId {
            conn: self.id,
            index: p.index,
        };
        let what = format!(
            "the response to request {} ({}) was lost in a capture gap: its head is missing and the rest of it skipped",
            p.index + 1,
            p.method
        );
        self.anomaly((AnomalyKind::ResponseLostInGap, what), dir, mark, sink);
        sink.on_http(HttpEvent::NoResponse {
            exchange,
            outcome: Outcome::Gap,
            closed_by: None,
            mark,
            unknown: false,
            when_unknown: false,
            gap_bytes: 0,
            snaplen_bytes: 0,
        });
    }

    /// The server answered: a request still waiting for bytes lost in a gap is as complete as
    /// it will ever be.
    pub(super) fn end_request_lost_in_gap(&mut self, mark: Mark, sink: &mut impl HttpSink) {
        let Some(msg) = self.req.msg.as_ref() else {
            return;
        };
        if msg.gap
            && self
                .pending
                .front()
                .is_some_and(|p| msg.exchange.index == p.index)
        {
            // A head the snap length cut lost only its own bytes: the next request is whole.
            let lost = msg.framing != Framing::UntilCut;
            self.end_message(Direction::ClientToServer, Outcome::Gap, None, mark, sink);
            self.req.after_gap |= lost;
        }
    }
}
