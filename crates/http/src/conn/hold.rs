//! Responses held until the requests they answer are parsed.
//!
//! Capture order can put a server's segment before the client's it answers (`-i any`, merged
//! interfaces). Pairing trusts TCP over that order: a response that starts while no request
//! waits, but whose segment acknowledges client bytes not parsed yet, is held with what follows
//! it until those bytes are, and then replayed in order. A hold too large, too old, or cut by
//! the connection's end is given up on, and the response is parsed without its request.

use std::collections::VecDeque;

use super::{Connection, HttpSink, State, di};
use mcpf_model::{Direction, Mark};

/// Server bytes held for a response whose request is not parsed yet, per connection ...
pub(crate) const MAX_HELD: usize = 256 << 10;
/// ... and for how long (capture time): past it the request bytes its ACK covers are taken as
/// lost, not late. Four times the capture stage's reorder window: a request captured after its
/// response (`-i any`, merged interfaces) lags by microseconds to milliseconds.
const HOLD_NS: i64 = 2_000_000_000;

/// What the server sent while a response was held: replayed in order once it is released.
#[derive(Debug)]
pub(super) enum Held {
    Data {
        bytes: Vec<u8>,
        mark: Mark,
        acked: Option<u64>,
    },
    Gap {
        len: u64,
        snaplen: bool,
        mark: Mark,
    },
    Fin {
        mark: Mark,
    },
}

/// A response that came before the request it answers: its ACK covers request bytes the parser
/// has not seen yet (the capture put the server's segment first).
#[derive(Debug)]
pub(super) struct Hold {
    items: VecDeque<Held>,
    bytes: usize,
    /// When the first held segment was captured.
    since: Mark,
    /// The client stream offset the response's ACK covers: once the parser has read that far,
    /// the requests it answers are parsed.
    until: u64,
}

impl Connection {
    /// Server bytes held for a response whose request is not parsed yet.
    pub(crate) fn held_bytes(&self) -> usize {
        self.hold.as_ref().map_or(0, |h| h.bytes)
    }

    /// Whether server bytes are to be held: a hold is on, or they start a response (between
    /// messages, no request waiting for an answer) whose ACK covers client bytes the parser has
    /// not read yet. The n-th response answers the n-th request (RFC 9112 §9.3), so a response
    /// that arrives first, acknowledging a request still to come, waits for it rather than
    /// being taken for the answer to a request the capture missed. Starts the hold when due.
    pub(super) fn holds(&mut self, acked: Option<u64>, mark: Mark) -> bool {
        if self.hold.is_some() {
            return true;
        }
        let Some(until) = acked else {
            return false;
        };
        let read = self.pos[di(Direction::ClientToServer)];
        let between = matches!(self.resp.state, State::Start)
            && self.resp.line.is_empty()
            && self.resp.msg.is_none();
        if !between
            || !self.pending.is_empty()
            || until <= read
            || until <= self.hold_given_up
            || matches!(self.req.state, State::Opaque)
        {
            return false;
        }
        self.counts.responses_held += 1;
        self.hold = Some(Box::new(Hold {
            items: VecDeque::new(),
            bytes: 0,
            since: mark,
            until,
        }));
        true
    }

    pub(super) fn hold_item(&mut self, item: Held) {
        if let Some(h) = self.hold.as_mut() {
            if let Held::Data { bytes, .. } = &item {
                h.bytes += bytes.len();
            }
            h.items.push_back(item);
        }
    }

    /// A hold larger than [`MAX_HELD`] is given up on: the response is parsed without its
    /// request.
    pub(super) fn limit_hold(&mut self, sink: &mut impl HttpSink) {
        if self.held_bytes() > MAX_HELD {
            self.release_hold(true, sink);
        }
    }

    /// A hold older than [`HOLD_NS`] at the capture time `mark` is given up on.
    #[inline]
    pub(super) fn expire_hold(&mut self, mark: Mark, sink: &mut impl HttpSink) {
        if self
            .hold
            .as_ref()
            .is_some_and(|h| mark.time.0.saturating_sub(h.since.time.0) > HOLD_NS)
        {
            self.release_hold(true, sink);
        }
    }

    /// The parser read the client bytes the held response acknowledged, or a request it can
    /// answer: the response goes on.
    pub(super) fn release_if_answered(&mut self, sink: &mut impl HttpSink) {
        let read = self.pos[di(Direction::ClientToServer)];
        if self
            .hold
            .as_ref()
            .is_some_and(|h| read >= h.until || !self.pending.is_empty())
        {
            self.release_hold(false, sink);
        }
    }

    /// Replays what was held (`early`: before the requests it acknowledged were read, which is
    /// counted). A later response in the replay may start a hold of its own.
    pub(crate) fn release_hold(&mut self, early: bool, sink: &mut impl HttpSink) {
        let Some(hold) = self.hold.take() else {
            return;
        };
        if early {
            self.counts.held_released_early += 1;
            self.hold_given_up = self.hold_given_up.max(hold.until);
        }
        if !self.pending.is_empty() {
            self.counts.held_paired += 1;
        }
        let dir = Direction::ServerToClient;
        for item in hold.items {
            if self.hold.is_some() {
                self.hold_item(item);
                continue;
            }
            // A held 101 may have upgraded the connection: what follows it is HTTP/2's.
            match (item, self.h2.as_mut()) {
                (Held::Data { bytes, mark, .. }, Some(h2)) => h2.data(dir, &bytes, mark, sink),
                (Held::Gap { len, snaplen, mark }, Some(h2)) => {
                    h2.gap(dir, len, snaplen, mark, sink)
                }
                (Held::Fin { .. }, Some(h2)) => h2.fin(dir),
                (Held::Data { bytes, mark, acked }, None) => {
                    self.feed(dir, &bytes, mark, acked, sink)
                }
                (Held::Gap { len, snaplen, mark }, None) => {
                    self.lose(dir, len, snaplen, mark, sink)
                }
                (Held::Fin { mark }, None) => self.fin_now(dir, mark, sink),
            }
        }
    }
}
