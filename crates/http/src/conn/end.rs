//! The end of a connection: each side's FIN, and the close (FIN both ways, a reset, eviction
//! or the end of the capture).
//!
//! A close-delimited body ends complete at its sender's FIN; any other message in progress was
//! cut short. Who sent the first FIN is who gave up first: a request left unanswered, or a
//! response the client walked away from, is reported at that moment.

use super::hold::Held;
use super::{Connection, HttpSink, State};
use crate::body::Framing;
use crate::{ExchangeId, HttpEvent, Outcome};
use mcpf_model::{AnomalyKind, Direction, Mark};

impl Connection {
    /// `dir` sent FIN: a close-delimited body is complete; any other message in progress was
    /// cut short.
    pub(crate) fn fin(&mut self, dir: Direction, mark: Mark, sink: &mut impl HttpSink) {
        if let Some(h2) = self.h2.as_mut() {
            return h2.fin(dir);
        }
        self.expire_hold(mark, sink);
        // The order the FINs were captured in says who gave up first, held or not.
        if self.first_fin.is_none() {
            self.first_fin = Some((dir, mark));
        }
        match dir {
            Direction::ServerToClient if self.hold.is_some() => {
                self.hold_item(Held::Fin { mark });
            }
            Direction::ServerToClient => self.fin_now(dir, mark, sink),
            Direction::ClientToServer => {
                self.fin_now(dir, mark, sink);
                // Every client byte is in: nothing more to wait for.
                self.release_hold(false, sink);
            }
        }
    }

    pub(super) fn fin_now(&mut self, dir: Direction, mark: Mark, sink: &mut impl HttpSink) {
        if dir == Direction::ServerToClient && self.sse_probe.is_some() {
            self.search_sse(true, sink);
        }
        let half = self.half(dir);
        match half.state {
            State::Body => self.fin_in_body(dir, mark, sink),
            State::Head => {
                half.head.clear();
                half.head_dropped = None;
                half.head_tail.clear();
                half.state = State::Start;
                let what = "connection closed in the middle of message headers".into();
                self.anomaly((AnomalyKind::ConnectionClosedInHead, what), dir, mark, sink);
            }
            _ => {}
        }
    }

    /// FIN in the middle of a body: a close-delimited one ends there, any other was cut short.
    fn fin_in_body(&mut self, dir: Direction, mark: Mark, sink: &mut impl HttpSink) {
        let framing = self.half(dir).msg.as_ref().map(|m| m.framing);
        let until_close = framing == Some(Framing::UntilClose);
        if framing == Some(Framing::UntilCut) {
            self.end_message(dir, Outcome::Gap, None, mark, sink);
            return;
        }
        // A close-delimited response ends at the server's FIN, unless the client had already
        // closed its side: then the client walked away from it (a proxy whose own client gave
        // up closes upstream like this).
        let client_left = match self.first_fin {
            Some((Direction::ClientToServer, at)) if dir == Direction::ServerToClient => Some(at),
            _ => None,
        };
        if until_close && let Some(at) = client_left {
            self.end_message(
                dir,
                Outcome::ClosedEarly,
                Some(Direction::ClientToServer),
                at,
                sink,
            );
        } else if until_close {
            self.end_message(dir, Outcome::Complete, Some(dir), mark, sink);
        } else {
            let (first, at) = self.first_fin.unwrap_or((dir, mark));
            self.end_message(dir, Outcome::ClosedEarly, Some(first), at, sink);
        }
    }

    /// The connection is gone: end what is in progress and report requests never answered.
    pub(crate) fn close(
        &mut self,
        outcome: Outcome,
        by: Option<Direction>,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if let Some(h2) = self.h2.as_mut() {
            return h2.close(outcome, by, mark, sink);
        }
        // What was held goes first: the connection ends after it.
        self.release_hold(true, sink);
        if self.sse_probe.is_some() {
            self.search_sse(true, sink);
        }
        let closed_by = by.or(self.first_fin.map(|f| f.0));
        // A request left unanswered is reported at the moment its connection was given up: the
        // first FIN, when the connection ended that way.
        let gave_up = match (by, self.first_fin) {
            (None, Some((_, fin_mark))) => fin_mark,
            _ => mark,
        };
        for dir in [Direction::ClientToServer, Direction::ServerToClient] {
            if self.half(dir).msg.is_some() {
                self.end_at_close(dir, outcome, closed_by, mark, gave_up, sink);
            }
        }
        self.counts.inconsistent_unattributed += self.future_inconsistent.len() as u64;
        self.future_inconsistent.clear();
        self.report_unanswered(outcome, closed_by, gave_up, sink);
    }

    /// Ends the message of `dir` in progress when its connection ended with `outcome` at `mark`:
    /// complete if it was close-delimited and the close was orderly, else cut short at the
    /// moment the connection was given up (`gave_up`).
    fn end_at_close(
        &mut self,
        dir: Direction,
        outcome: Outcome,
        closed_by: Option<Direction>,
        mark: Mark,
        gave_up: Mark,
        sink: &mut impl HttpSink,
    ) {
        let until_close_done = outcome == Outcome::ClosedEarly
            && self
                .half(dir)
                .msg
                .as_ref()
                .is_some_and(|m| m.framing == Framing::UntilClose);
        let o = if until_close_done {
            Outcome::Complete
        } else {
            outcome
        };
        let at = if o == Outcome::Complete {
            mark
        } else {
            gave_up
        };
        self.end_message(dir, o, closed_by, at, sink);
    }

    /// Reports each request still waiting for its response as never answered.
    pub(super) fn report_unanswered(
        &mut self,
        outcome: Outcome,
        closed_by: Option<Direction>,
        gave_up: Mark,
        sink: &mut impl HttpSink,
    ) {
        // Answers may have been in bytes the server sent that the capture lost.
        let outcome = if self.resp.gap_since_head {
            Outcome::Gap
        } else {
            outcome
        };
        while let Some(p) = self.pending.pop_front() {
            let _ = p.first;
            sink.on_http(HttpEvent::NoResponse {
                exchange: ExchangeId {
                    conn: self.id,
                    index: p.index,
                },
                outcome,
                closed_by,
                mark: gave_up,
                unknown: false,
                when_unknown: false,
                gap_bytes: 0,
                snaplen_bytes: 0,
            });
        }
    }
}
