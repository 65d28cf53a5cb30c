//! A connection picked up mid-stream (the capture has no handshake for it): the server's first
//! bytes may be the middle of an event stream whose request and head the capture missed.
//!
//! Until a head shows, the bytes the start-line search consumed are kept in a probe (bounded)
//! and searched for a point to read Server-Sent Events from (`crate::resync`). When one is
//! found the bytes from there on are read again, each with its packet's mark, as the body of a
//! response with no request and no head; if none is, they were skipped.

use super::message::{Start, new_message};
use super::{ConnKind, Connection, HttpSink, State, di};
use crate::body::{ChunkedDecoder, Framing};
use crate::resync::{self, Search};
use crate::sse::SseParser;
use crate::{ExchangeId, Headers};
use mcpf_model::{AnomalyKind, Direction, Mark};

/// The first server bytes of a connection picked up mid-stream, kept while they may be the
/// middle of an event stream whose head the capture missed: at most this many bytes, ...
const MAX_SSE_PROBE: usize = 64 << 10;
/// ... from at most this many packets, searched at most this many times.
const MAX_SSE_PROBE_PIECES: usize = 1024;
const MAX_SSE_SEARCHES: u32 = 64;

/// The server's first bytes on a connection picked up mid-stream, while they are searched for a
/// point to read an event stream from ([`resync::find_sse_sync`]).
#[derive(Debug)]
pub(super) struct SseProbe {
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    offset: u64,
    /// Where each packet's bytes end in `buf`, and its mark.
    pieces: Vec<(usize, Mark)>,
    /// Candidates before this are ruled out.
    from: usize,
    searches: u32,
    /// A blank line came since the last search (an event can only be whole after one).
    due: bool,
}

impl SseProbe {
    pub(super) fn new() -> Self {
        SseProbe {
            buf: Vec::new(),
            offset: 0,
            pieces: Vec::new(),
            from: 0,
            searches: 0,
            due: false,
        }
    }

    /// The packet that carried byte `at` of `buf`.
    fn mark_at(&self, at: usize) -> Option<Mark> {
        let i = self.pieces.partition_point(|&(end, _)| end <= at);
        self.pieces.get(i).map(|&(_, m)| m)
    }
}

impl Connection {
    /// The probe is to be searched again: a blank line came since its last search.
    pub(super) fn probe_due(&self) -> bool {
        self.sse_probe.as_ref().is_some_and(|p| p.due)
    }

    /// Takes server bytes the start-line search consumed without finding a head (`blank`: they
    /// ended a blank line) into the probe of a mid-stream connection.
    pub(super) fn probe_push(&mut self, bytes: &[u8], mark: Mark, blank: bool) {
        let pos = self.pos[di(Direction::ServerToClient)];
        let Some(p) = self.sse_probe.as_mut() else {
            return;
        };
        if p.buf.len() + bytes.len() > MAX_SSE_PROBE || p.pieces.len() >= MAX_SSE_PROBE_PIECES {
            self.end_probe();
            return;
        }
        if p.buf.is_empty() {
            p.offset = pos;
        }
        p.buf.extend_from_slice(bytes);
        match p.pieces.last_mut() {
            Some((end, m)) if *m == mark => *end = p.buf.len(),
            _ => p.pieces.push((p.buf.len(), mark)),
        }
        p.due |= blank;
    }

    /// No event stream here: what the probe held was skipped.
    pub(super) fn end_probe(&mut self) {
        if let Some(p) = self.sse_probe.take() {
            self.resp.skipped += p.buf.len() as u64;
        }
    }

    /// Searches the probe for a point to read an event stream from (`ended`: no more server
    /// bytes will join these), and resynchronises there when found.
    pub(super) fn search_sse(&mut self, ended: bool, sink: &mut impl HttpSink) {
        if matches!(self.resp.state, State::Opaque) {
            self.end_probe();
        }
        let Some(p) = self.sse_probe.as_mut() else {
            return;
        };
        p.due = false;
        p.searches += 1;
        match resync::find_sse_sync(&p.buf, p.from, ended) {
            Search::Found { at, framing } => self.resync_sse(at, framing, sink),
            Search::NeedMore { from } => {
                p.from = from;
                if ended || p.searches >= MAX_SSE_SEARCHES {
                    self.end_probe();
                }
            }
        }
    }

    /// The server's bytes read as an event stream from byte `at` of the probe: they are the body
    /// of a response whose request and head the capture missed. It is reported with no request
    /// and no head (an orphan the MCP stage ties to a session by later evidence), its first event
    /// after a gap, and one anomaly; the probe's bytes from `at` on are parsed as that body.
    fn resync_sse(&mut self, at: usize, framing: resync::Framing, sink: &mut impl HttpSink) {
        let Some(p) = self.sse_probe.take() else {
            return;
        };
        let dir = Direction::ServerToClient;
        let first = p.mark_at(at).unwrap_or(Mark {
            time: mcpf_model::Timestamp(0),
            frame: mcpf_model::FrameRef::new(0, 0),
        });
        self.resp.skipped += at as u64;
        self.resp.line.clear();
        self.resp.line_first = None;
        self.resp.head_offset = p.offset + at as u64;
        self.kind = Some(ConnKind::Http);
        self.counts.midstream_resyncs += 1;
        let how = self.begin_midstream_body(first, framing);
        let what = format!(
            "response picked up in the middle of its body (no request or head in the capture): \
             resynchronised on {how} after skipping {at} bytes"
        );
        self.anomaly((AnomalyKind::MidstreamResync, what), dir, first, sink);
        self.replay_probe(&p, at, sink);
    }

    /// Starts the body of a response whose request and head the capture missed, read with the
    /// framing found (its first event after a gap); returns how it was found, for the anomaly.
    fn begin_midstream_body(&mut self, first: Mark, framing: resync::Framing) -> &'static str {
        let (index, _) = self.response_index(first);
        let exchange = ExchangeId {
            conn: self.id,
            index,
        };
        let (body_framing, decoder, how) = match framing {
            resync::Framing::Chunked { in_chunk } => (
                Framing::Chunked,
                Some(in_chunk.map_or_else(ChunkedDecoder::new, ChunkedDecoder::in_chunk)),
                "SSE framing inside chunked transfer coding",
            ),
            resync::Framing::UntilClose => (
                Framing::UntilClose,
                None,
                "SSE framing (a close-delimited body)",
            ),
        };
        let headers = Headers::default();
        let mut msg = new_message(
            Start::Response,
            headers,
            exchange,
            body_framing,
            first,
            first,
        );
        msg.chunked = decoder;
        let mut sse = SseParser::new();
        sse.gap_at_boundary();
        msg.payload.sse = Some(sse);
        self.begin_body(Direction::ServerToClient, msg);
        if let Some(m) = self.resp.msg.as_mut() {
            // Its start is not in the capture: it cannot end complete.
            m.gap = true;
        }
        how
    }

    /// The probe's bytes were consumed by the start-line search: from byte `at` on they are read
    /// again, each with its packet's mark, as the body.
    fn replay_probe(&mut self, p: &SseProbe, at: usize, sink: &mut impl HttpSink) {
        let dir = Direction::ServerToClient;
        self.pos[di(dir)] = p.offset + at as u64;
        let mut begin = 0;
        for &(end, mark) in &p.pieces {
            let from = begin.max(at);
            if from < end {
                self.feed(dir, &p.buf[from..end], mark, None, sink);
            }
            begin = end;
        }
    }

    /// A gap in the server's bytes while they are probed. What came before the gap is all there
    /// is of it: a stream found in it goes on (and loses these bytes); if none, the search
    /// starts again after them.
    pub(super) fn probe_gap(&mut self, sink: &mut impl HttpSink) {
        let found = self.probe_before_gap(sink);
        if !found && let Some(p) = self.sse_probe.as_mut() {
            self.resp.skipped += p.buf.len() as u64;
            p.buf.clear();
            p.pieces.clear();
            p.from = 0;
            p.due = false;
        }
    }

    /// Searches the probe as if its bytes were all (a gap or the end follows them); returns
    /// whether it resynchronised. An unfinished search is kept.
    fn probe_before_gap(&mut self, sink: &mut impl HttpSink) -> bool {
        let Some(p) = self.sse_probe.as_ref() else {
            return false;
        };
        match resync::find_sse_sync(&p.buf, p.from, true) {
            Search::Found { at, framing } => {
                self.resync_sse(at, framing, sink);
                true
            }
            Search::NeedMore { .. } => false,
        }
    }
}
