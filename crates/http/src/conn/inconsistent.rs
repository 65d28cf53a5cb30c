//! Retransmissions that disagreed with the first copy of their bytes (the capture stage keeps
//! the first copy and reports the difference). Each is reported, and the message whose content
//! rests on those bytes is marked: at once when it is being read, or when it ends if TCP still
//! buffered the bytes; bytes no message used are counted apart.

use std::collections::VecDeque;

use super::message::Message;
use super::{Connection, HttpSink, di, frame_name, message_kind};
use crate::{ExchangeId, HttpEvent};
use mcpf_model::{AnomalyKind, Direction, Mark};

/// Messages that ended remembered per direction: a retransmission comes within a few round
/// trips of the first copy, a handful of messages later at most.
const ENDED_KEPT: usize = 8;

/// The stream offsets of the last messages that ended in one direction, and their exchanges.
#[derive(Debug, Default)]
pub(super) struct EndedMessages(VecDeque<(u64, u64, ExchangeId)>);

impl EndedMessages {
    fn push(&mut self, start: u64, end: u64, exchange: ExchangeId) {
        if self.0.len() == ENDED_KEPT {
            self.0.pop_front();
        }
        self.0.push_back((start, end, exchange));
    }

    /// The exchange whose message held the byte at `offset`.
    fn holding(&self, offset: u64) -> Option<ExchangeId> {
        self.0
            .iter()
            .find(|&&(start, end, _)| start <= offset && offset < end)
            .map(|&(_, _, exchange)| exchange)
    }
}

/// Inconsistent retransmissions of bytes not parsed yet (the first copy still buffered by TCP)
/// remembered until the message carrying them ends; more are counted, not tied to a message.
const MAX_FUTURE_INCONSISTENT: usize = 16;

/// A retransmission that disagreed with the first copy of bytes the parser had not reached yet.
#[derive(Clone, Copy, Debug)]
pub(super) struct FutureInconsistent {
    dir: Direction,
    offset: u64,
    len: u64,
}

impl Connection {
    /// A retransmission of `len` bytes from `offset` on disagreed with the first copy, carried
    /// by `first`; the copy in `second` was dropped by the capture stage. Reported, and the
    /// message whose content rests on those bytes is marked, now or when it ends.
    pub(crate) fn inconsistent(
        &mut self,
        dir: Direction,
        offset: u64,
        len: u64,
        first: Mark,
        second: Mark,
        sink: &mut impl HttpSink,
    ) {
        self.counts.inconsistent_retransmissions += 1;
        if self.h2.is_some() {
            // Frames are not tied to stream offsets here: counted, not attributed.
            self.counts.inconsistent_unattributed += 1;
            return;
        }
        let parsed = self.pos[di(dir)];
        let half = match dir {
            Direction::ClientToServer => &mut self.req,
            Direction::ServerToClient => &mut self.resp,
        };
        let mut carried_by = None;
        match half.msg.as_mut() {
            Some(m) if m.offset <= offset && offset < parsed => {
                m.payload.body.inconsistent_bytes += len;
                carried_by = Some(m.exchange);
            }
            _ if offset >= parsed && self.future_inconsistent.len() < MAX_FUTURE_INCONSISTENT => {
                self.future_inconsistent
                    .push(FutureInconsistent { dir, offset, len });
            }
            _ => match self.ended[di(dir)].holding(offset) {
                // The message ended before the retransmission came: marked downstream.
                Some(exchange) => {
                    carried_by = Some(exchange);
                    self.counts.inconsistent_bytes += len;
                    let bytes = len;
                    sink.on_http(HttpEvent::LateInconsistency {
                        exchange,
                        dir,
                        bytes,
                    });
                }
                None => self.counts.inconsistent_unattributed += 1,
            },
        }
        let within = carried_by.map_or(String::new(), |ex| {
            format!(" in the {} of {ex}", message_kind(dir))
        });
        let what = format!(
            "retransmitted bytes differ from the first copy: {len} bytes at stream offset \
             {offset}{within} (first copy in {}, retransmission in {}; the first copy was kept)",
            frame_name(first),
            frame_name(second)
        );
        let kind = AnomalyKind::RetransmissionInconsistent;
        self.anomaly((kind, what), dir, second, sink);
    }

    /// Inconsistent retransmissions of bytes a message that ends at `end` carried: its body is
    /// marked. Ones before its start were in bytes no message used.
    pub(super) fn settle_inconsistent(&mut self, dir: Direction, msg: &mut Message, end: u64) {
        let counts = &mut self.counts;
        self.future_inconsistent.retain(|f| {
            if f.dir != dir || f.offset >= end {
                return true;
            }
            if f.offset >= msg.offset {
                msg.payload.body.inconsistent_bytes += f.len;
            } else {
                counts.inconsistent_unattributed += 1;
            }
            false
        });
        self.counts.inconsistent_bytes += msg.payload.body.inconsistent_bytes;
        self.ended[di(dir)].push(msg.offset, end, msg.exchange);
    }
}
