//! Bytes missing from the capture: lost on the way, or cut from a frame by the snap length.
//!
//! Bytes from both sides of a gap are never joined into one message. When the framing is known
//! (a `Content-Length`, or the inside of a chunk) the gap is skipped over and the following
//! messages keep their framing; otherwise the message it touched ends there, and the next one
//! is looked for. A gap inside a head keeps what was whole of it (RFC 9112 §2.1: a head is
//! lines, each usable once whole).

use super::hold::Held;
use super::message::Message;
use super::{Connection, HttpSink, State, di, message_kind};
use crate::Outcome;
use crate::body::{ChunkedDecoder, Framing};
use mcpf_model::{AnomalyKind, Direction, Mark};

impl Connection {
    /// `len` bytes of `dir` are missing from the capture (`snaplen`: cut from a captured frame by
    /// the snap length).
    pub(crate) fn gap(
        &mut self,
        dir: Direction,
        len: u64,
        snaplen: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if let Some(h2) = self.h2.as_mut() {
            return h2.gap(dir, len, snaplen, mark, sink);
        }
        self.expire_hold(mark, sink);
        match dir {
            Direction::ServerToClient if self.hold.is_some() => {
                self.hold_item(Held::Gap { len, snaplen, mark });
            }
            Direction::ServerToClient => self.lose(dir, len, snaplen, mark, sink),
            Direction::ClientToServer => {
                self.lose(dir, len, snaplen, mark, sink);
                self.release_if_answered(sink);
            }
        }
    }

    /// A gap cut the head being read (`head`, its first byte captured at `first`): what
    /// survives of it is reported, the start line and every header line before the cut (RFC
    /// 9112 §2.1: a head is lines, each usable once whole), as a request or response head that
    /// says it is not complete, ended at once with an unknown body (its framing may be among
    /// the lines lost). A start line alone is enough; with none, the head is lost.
    #[allow(clippy::too_many_arguments)]
    fn cut_head(
        &mut self,
        dir: Direction,
        head: &[u8],
        first: Mark,
        len: u64,
        snaplen: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let whole = head
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(&head[..0], |i| &head[..=i]);
        let lines = whole.iter().filter(|&&b| b == b'\n').count();
        let kind = message_kind(dir);
        let parsed = self.parse_cut_head(dir, whole, first, mark, sink);
        let cause = if snaplen {
            " (cut by the capture's snap length)"
        } else {
            ""
        };
        if !parsed {
            let what = format!("headers of a message lost in a {len}-byte capture gap{cause}");
            self.anomaly((AnomalyKind::HeadLostInGap, what), dir, mark, sink);
            return;
        }
        self.counts.heads_cut += 1;
        if snaplen {
            self.counts.heads_cut_by_snaplen += 1;
        }
        let what = format!(
            "{kind} head cut by a {len}-byte capture gap{cause}: its start line and {} whole \
             header lines kept",
            lines.saturating_sub(1)
        );
        self.anomaly((AnomalyKind::HeadCutByGap, what), dir, mark, sink);
        if !self.cut_message(dir, len, snaplen) {
            self.end_message(dir, Outcome::Gap, None, mark, sink);
        }
    }

    /// Marks the message a cut head started: its body unknown, the gap's bytes its. A request
    /// the snap length cut reads on to the start of a later segment (returns true); any other
    /// message is to end at once.
    fn cut_message(&mut self, dir: Direction, len: u64, snaplen: bool) -> bool {
        let keep_body = snaplen && dir == Direction::ClientToServer;
        let half = self.half(dir);
        let Some(msg) = half.msg.as_mut() else {
            return false;
        };
        // Unknown until bytes come after the cut: those are the body's first, with no hole
        // before them yet.
        msg.payload.body.unknown = true;
        msg.holed = !keep_body;
        msg.gap = true;
        msg.lost |= !snaplen;
        msg.payload.body.gap_bytes += len;
        if snaplen {
            msg.payload.body.snaplen_bytes += len;
        }
        if keep_body {
            msg.framing = Framing::UntilCut;
            half.state = State::Body;
        }
        keep_body
    }

    /// `len` bytes of `dir` are missing, in order with the bytes parsed (a gap of the capture, or
    /// one held and replayed): what they cost depends on where the parser was.
    pub(super) fn lose(
        &mut self,
        dir: Direction,
        len: u64,
        snaplen: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if dir == Direction::ServerToClient && self.sse_probe.is_some() {
            self.probe_gap(sink);
        }
        self.pos[di(dir)] += len;
        // Bytes the snap length cut are the end of their own segment: a message found at the
        // start of a later one lost nothing of itself.
        let lost = !snaplen;
        let half = self.half(dir);
        half.gap_since_head |= lost;
        match half.state {
            State::Opaque => {}
            State::Start => {
                half.line.clear();
                half.after_gap |= lost;
                half.gap_between |= half.framed_end;
            }
            State::Head => {
                self.lose_in_head(dir, len, snaplen, mark, sink);
                self.half(dir).after_gap |= lost;
            }
            State::Body => self.lose_in_body(dir, len, snaplen, mark, sink),
        }
    }

    /// A gap inside the head being read: what was whole of it is kept ([`Self::cut_head`]).
    fn lose_in_head(
        &mut self,
        dir: Direction,
        len: u64,
        snaplen: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let half = self.half(dir);
        let head = std::mem::take(&mut half.head);
        let first = half.head_first.take().unwrap_or(mark);
        half.state = State::Start;
        half.head_dropped = None;
        half.head_tail.clear();
        self.cut_head(dir, &head, first, len, snaplen, mark, sink);
    }

    /// A gap inside a body: the message goes on if its framing survives the gap (unless the gap
    /// took the rest of its length), and ends there if not.
    fn lose_in_body(
        &mut self,
        dir: Direction,
        len: u64,
        snaplen: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let half = self.half(dir);
        let Some(msg) = half.msg.as_mut() else {
            half.state = State::Start;
            return;
        };
        let overran = matches!(msg.framing, Framing::Length(_)) && len > msg.remaining;
        let survives = msg.lose(len, snaplen);
        let done = matches!(msg.framing, Framing::Length(_)) && msg.remaining == 0;
        if !survives {
            self.end_message(dir, Outcome::Gap, None, mark, sink);
            // Bytes the snap length cut took nothing of the next message (see `lose`).
            self.half(dir).after_gap |= !snaplen;
            self.half(dir).gap_between |= overran;
        } else if done {
            self.end_message(dir, Outcome::Gap, None, mark, sink);
        }
    }
}

impl Message {
    /// `len` bytes of the body are missing from the capture. Returns whether the framing
    /// survives them (the next message can still be found where it starts).
    fn lose(&mut self, len: u64, snaplen: bool) -> bool {
        self.gap = true;
        self.lost |= !snaplen;
        self.holed = true;
        self.payload.body.gap_bytes += len;
        if snaplen {
            self.payload.body.snaplen_bytes += len;
        }
        self.payload
            .body
            .decode_error
            .get_or_insert_with(|| "bytes missing from the capture".into());
        // Between two events, with chunk framing to find the next chunk, nothing needs
        // skipping; anywhere else the partial event is dropped up to the next blank line.
        let clean = self.framing == Framing::Chunked
            && self
                .chunked
                .as_ref()
                .is_none_or(|c| c.remaining_in_chunk().is_none_or(|r| len > r));
        if let Some(sse) = self.payload.sse.as_mut() {
            if clean && sse.at_boundary() {
                sse.gap_at_boundary();
            } else {
                sse.gap();
            }
        }
        self.skip_framing(len)
    }

    /// Skips `len` bytes in the framing; returns whether it survives them. The framing is kept
    /// when the gap falls inside a known length.
    fn skip_framing(&mut self, len: u64) -> bool {
        match self.framing {
            Framing::Length(_) => {
                if len <= self.remaining {
                    self.remaining -= len;
                    true
                } else {
                    false
                }
            }
            Framing::Chunked => {
                let c = self.chunked.get_or_insert_with(ChunkedDecoder::new);
                if c.remaining_in_chunk().is_some_and(|r| len <= r) {
                    c.skip_data(len);
                } else {
                    c.after_gap();
                }
                true
            }
            Framing::UntilClose => true,
            Framing::None | Framing::Tunnel => true,
            Framing::UntilCut => false,
        }
    }
}
