//! A connection set aside by the early classification (the engine's), and resumed.
//!
//! Set aside, a connection's bytes stop coming; what it has in progress waits. Closed while set
//! aside, what was in progress ends as not examined, and each request still waiting for its
//! answer is reported unanswered for that reason, not as cut or lost. Resumed with every byte
//! (the classification kept them all), the bytes simply come late and parsing goes on as if
//! they never stopped. Resumed after bytes it did not keep, what was in progress ends as not
//! examined and both directions start again as on a connection picked up mid-stream: the next
//! start line is searched for, and the server's bytes for an event stream.

use super::midstream::SseProbe;
use super::{Connection, Half, HttpSink, di};
use crate::Outcome;
use mcpf_model::{Direction, Mark};

impl Connection {
    /// No more bytes come until [`Self::resume`].
    pub(crate) fn set_aside(&mut self, sink: &mut impl HttpSink) {
        // Responses held for their requests are parsed first: they were captured, and nothing
        // is to stay held while no bytes come.
        self.release_hold(false, sink);
        self.aside = true;
    }

    /// Whether the connection is set aside: what its close ends was not examined.
    pub(crate) fn is_aside(&self) -> bool {
        self.aside
    }

    /// Bytes come again, after `skipped` of each direction (the client's first) not kept.
    pub(crate) fn resume(&mut self, skipped: [u64; 2], mark: Mark, sink: &mut impl HttpSink) {
        if !std::mem::take(&mut self.aside) || skipped == [0, 0] || self.h2.is_some() {
            return;
        }
        for dir in [Direction::ClientToServer, Direction::ServerToClient] {
            self.end_message(dir, Outcome::NotExamined, None, mark, sink);
            *self.half(dir) = Half::new();
            self.pos[di(dir)] += skipped[di(dir)];
        }
        self.report_unanswered(Outcome::NotExamined, None, mark, sink);
        self.unpaired_responses.clear();
        self.sse_probe = Some(Box::new(SseProbe::new()));
    }
}
