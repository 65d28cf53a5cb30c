//! One TCP connection seen as HTTP/1.1: a request parser on the client's bytes, a response
//! parser on the server's, and the in-order pairing between them (RFC 9112 §9.3: responses come
//! back in the order of the requests, pipelined or not).
//!
//! Sans-IO and chunk-agnostic: the same bytes in any chunking give the same events. After a
//! capture gap the message it touched is marked, and parsing picks up at the next plausible
//! request or status line; bytes from both sides of a gap are never joined into one message. When
//! the framing is known (a `Content-Length`, or the inside of a chunk), a gap is skipped over and
//! the following messages keep their framing. A gap inside a head keeps what was whole of it.
//!
//! Pairing trusts TCP over capture order: a response that starts while no request waits, but
//! whose segment acknowledges client bytes not parsed yet, is held (with what follows it) until
//! those bytes are, then paired; with nothing unseen acknowledged it answers a request the
//! capture missed (an orphan). On a connection picked up mid-stream, the server's first bytes
//! are searched for an event stream to resynchronise on (`resync`). Every byte is numbered by its
//! stream offset, as the capture stage numbers it, so that TCP's reports (ACKs, inconsistent
//! retransmissions) find the message they concern.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::net::SocketAddr;

use super::body::{ChunkOutput, ChunkedDecoder, ChunkedError, Framing};
use super::h2::{H2Connection, PREFACE};
use super::payload::Payload;
use super::resync::{self, Search};
use super::sse::{SseEvent, SseParser};
use super::{
    ConnKind, ExchangeId, Headers, HttpEvent, HttpSink, Outcome, Request, ResponseEnd, ResponseHead,
};
use mcpf_model::Mark;
use mcpf_model::{ConnId, Direction};

/// Bytes of a connection's start looked at to tell TLS and HTTP/2 apart from HTTP/1.1.
const PROBE_BYTES: usize = 24;
/// Server bytes kept while the client has sent none (an HTTP/2 server's first frames).
const MAX_EARLY_SERVER_BYTES: usize = 64 << 10;
/// Headers larger than this are not an HTTP message we can use.
const MAX_HEAD: usize = 64 * 1024;
/// A start line is looked for within lines up to this long while resynchronising.
const MAX_RESYNC_LINE: usize = 8 * 1024;
/// A connection that has shown no HTTP after this many bytes is not scanned further.
const GIVE_UP_NON_HTTP: u64 = 256 * 1024;
/// Body bytes kept per message (the rest is counted, and the body marked truncated).
pub(crate) const MAX_BODY: usize = 16 << 20;
/// Header fields kept per message; past it only the fields the pipeline reads
/// ([`READ_PAST_MAX_HEADERS`]) are, and the others are counted and dropped, with an anomaly.
/// The head is still parsed whole (any number of lines within [`MAX_HEAD`]).
pub(crate) const MAX_HEADERS: usize = 128;
/// The fields that frame a message or place it in an MCP session: never dropped, wherever a
/// crafted head puts them.
const READ_PAST_MAX_HEADERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "content-encoding",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "accept",
    "host",
];
/// Inconsistent retransmissions of bytes not parsed yet (the first copy still buffered by TCP)
/// remembered until the message carrying them ends; more are counted, not tied to a message.
const MAX_FUTURE_INCONSISTENT: usize = 16;
/// Server bytes held for a response whose request is not parsed yet, per connection ...
pub(crate) const MAX_HELD: usize = 256 << 10;
/// ... and for how long (capture time): past it the request bytes its ACK covers are taken as
/// lost, not late. Four times the capture stage's reorder window: a request captured after its
/// response (`-i any`, merged interfaces) lags by microseconds to milliseconds.
const HOLD_NS: i64 = 2_000_000_000;
/// The first server bytes of a connection picked up mid-stream, kept while they may be the
/// middle of an event stream whose head the capture missed: at most this many bytes, ...
const MAX_SSE_PROBE: usize = 64 << 10;
/// ... from at most this many packets, searched at most this many times.
const MAX_SSE_PROBE_PIECES: usize = 1024;
const MAX_SSE_SEARCHES: u32 = 64;

#[derive(Debug)]
enum State {
    /// Between messages, or looking for one after a gap: lines are tested for a start line.
    Start,
    Head,
    Body,
    /// Not HTTP (any more): bytes are counted and dropped.
    Opaque,
}

#[derive(Debug)]
enum Start {
    Request {
        method: String,
        target: String,
        version: u8,
    },
    Response,
}

#[derive(Debug)]
struct Message {
    start: Start,
    /// A request's fields (a response's are handed to its head when it is read).
    headers: Headers,
    exchange: ExchangeId,
    framing: Framing,
    remaining: u64,
    chunked: Option<ChunkedDecoder>,
    payload: Payload,
    /// Body bytes after a gap are not kept (they would be joined across the hole).
    holed: bool,
    gap: bool,
    /// A gap of it was bytes lost, not only bytes the snap length cut.
    lost: bool,
    first: Mark,
    last: Mark,
    /// Stream offset of its first byte (its start line).
    offset: u64,
    /// Its head was not cut by a gap.
    head_complete: bool,
}

#[derive(Debug)]
struct Half {
    state: State,
    /// Start-line search: the bytes of the line being examined, and where its first byte came
    /// (capture mark and stream offset).
    line: Vec<u8>,
    line_first: Option<Mark>,
    line_offset: u64,
    head: Vec<u8>,
    head_first: Option<Mark>,
    /// Stream offset of the first byte of the head being read.
    head_offset: u64,
    msg: Option<Message>,
    /// The next message found follows a gap.
    after_gap: bool,
    /// A gap fell between two messages (or ran past the end of one): the bytes it took began at
    /// least one more, whose head is lost with them.
    gap_between: bool,
    /// Such bytes were found: a message was lost in the gap.
    lost_in_gap: bool,
    /// The last message ended where its framing said: what follows starts another one (after
    /// one cut short, what follows may be the rest of it).
    framed_end: bool,
    /// Bytes were lost since the last head was read: a message may be among them.
    gap_since_head: bool,
    skipped: u64,
    /// The head being read passed [`MAX_HEAD`]: the bytes of header lines past it dropped so far
    /// (the lines before, and the fields never dropped, are kept in `head`), and the line being
    /// read when the last chunk ended (at most 8 KiB of it).
    head_dropped: Option<u64>,
    head_tail: Vec<u8>,
}

impl Half {
    /// Cuts a head that passed [`MAX_HEAD`] back to its whole lines within the limit, counting
    /// the rest as dropped; false when not even the start line fits (the head is then skipped).
    fn keep_head_within_limit(&mut self) -> bool {
        let Some(keep) = self.head[..MAX_HEAD].iter().rposition(|&b| b == b'\n') else {
            return false;
        };
        let rest = self.head.split_off(keep + 1);
        self.head_dropped = Some(0);
        self.head_tail.clear();
        self.scan_past_limit(&rest);
        true
    }

    /// Reads header lines past [`MAX_HEAD`]: keeps those the pipeline reads, counts the others;
    /// returns the bytes of `data` used and whether the blank line ending the head was among them.
    fn scan_past_limit(&mut self, data: &[u8]) -> (usize, bool) {
        /// A kept field line longer than this is dropped like the others.
        const MAX_KEPT_LINE: usize = 8 << 10;
        let mut at = 0;
        while at < data.len() {
            let nl = data[at..].iter().position(|&b| b == b'\n');
            let end = nl.map_or(data.len(), |i| at + i + 1);
            let piece = &data[at..end];
            at = end;
            let take = piece
                .len()
                .min(MAX_KEPT_LINE.saturating_sub(self.head_tail.len()));
            self.head_tail.extend_from_slice(&piece[..take]);
            // What does not fit is never kept: a line that long is not a field we read.
            self.count_dropped((piece.len() - take) as u64);
            if nl.is_none() {
                break;
            }
            let line = std::mem::take(&mut self.head_tail);
            if line == b"\n" || line == b"\r\n" {
                return (at, true);
            }
            if line.len() < MAX_KEPT_LINE && is_read_past_limit(&line) {
                self.head.extend_from_slice(&line);
            } else {
                self.count_dropped(line.len() as u64);
            }
        }
        (at, false)
    }

    fn count_dropped(&mut self, n: u64) {
        *self.head_dropped.get_or_insert(0) += n;
    }

    fn new() -> Self {
        Half {
            state: State::Start,
            line: Vec::new(),
            line_first: None,
            line_offset: 0,
            head: Vec::new(),
            head_first: None,
            head_offset: 0,
            msg: None,
            after_gap: false,
            gap_between: false,
            lost_in_gap: false,
            framed_end: true,
            gap_since_head: false,
            skipped: 0,
            head_dropped: None,
            head_tail: Vec::new(),
        }
    }
}

#[derive(Debug)]
struct Pending {
    index: u32,
    method: String,
    first: Mark,
}

/// What a connection counts for [`HttpStats`](super::HttpStats) beyond its kind.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) inconsistent_retransmissions: u64,
    pub(crate) inconsistent_bytes: u64,
    pub(crate) inconsistent_unattributed: u64,
    pub(crate) responses_held: u64,
    pub(crate) held_paired: u64,
    pub(crate) held_released_early: u64,
    pub(crate) midstream_resyncs: u64,
    pub(crate) heads_cut: u64,
    pub(crate) heads_cut_by_snaplen: u64,
    pub(crate) bodies_not_decoded_past_budget: u64,
    pub(crate) brotli_bodies_refused: u64,
    pub(crate) messages_cut_by_held: u64,
    pub(crate) headers_dropped: u64,
    pub(crate) json_bodies_shrunk: u64,
    pub(crate) h2_streams: u64,
    pub(crate) h2_streams_reset: u64,
    pub(crate) h2_goaways: u64,
    pub(crate) h2_flow_stalls: u64,
    pub(crate) h2_flow_stall_ns: u64,
    pub(crate) h2_flow_stalled_at_end: u64,
}

/// The server's first bytes on a connection picked up mid-stream, while they are searched for a
/// point to read an event stream from ([`resync::find_sse_sync`]).
#[derive(Debug)]
struct SseProbe {
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
    /// The packet that carried byte `at` of `buf`.
    fn mark_at(&self, at: usize) -> Option<Mark> {
        let i = self.pieces.partition_point(|&(end, _)| end <= at);
        self.pieces.get(i).map(|&(_, m)| m)
    }
}

/// What the server sent while a response was held: replayed in order once it is released.
#[derive(Debug)]
enum Held {
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
struct Hold {
    items: VecDeque<Held>,
    bytes: usize,
    /// When the first held segment was captured.
    since: Mark,
    /// The client stream offset the response's ACK covers: once the parser has read that far,
    /// the requests it answers are parsed.
    until: u64,
}

/// A retransmission that disagreed with the first copy of bytes the parser had not reached yet.
#[derive(Clone, Copy, Debug)]
struct FutureInconsistent {
    dir: Direction,
    offset: u64,
    len: u64,
}

/// HTTP state of one TCP connection.
#[derive(Debug)]
pub(crate) struct Connection {
    id: ConnId,
    client: SocketAddr,
    server: SocketAddr,
    req: Half,
    resp: Half,
    pending: VecDeque<Pending>,
    /// Responses that came before any request to pair them with (a reordered or lossy
    /// capture): the next requests take their places, in order.
    unpaired_responses: VecDeque<(u32, Mark)>,
    /// Requests emitted but not yet answered are in `pending`; this counts all heads seen.
    next_index: u32,
    interim: Vec<u16>,
    kind: Option<ConnKind>,
    saw_data: bool,
    /// Who sent the first FIN, and when: the moment a side gave up on the connection.
    first_fin: Option<(Direction, Mark)>,
    anomalies: u64,
    scanned_without_http: u64,
    /// The client's first bytes, until they tell TLS or HTTP/2 from the rest, ...
    probe: Vec<u8>,
    /// ... and the server's bytes before them (see `keep_early_server_bytes`).
    early_server: Option<Vec<(Vec<u8>, Mark)>>,
    early_server_bytes: usize,
    out_events: Vec<SseEvent>,
    /// Per direction (`ClientToServer` first), the stream offset of the first byte the parser
    /// has not consumed (the offsets the capture stage numbers bytes with, gaps included) ...
    pos: [u64; 2],
    /// ... and what the step in progress consumed past it before ending a message, so that a
    /// message knows the offset it ended at.
    step_used: [u64; 2],
    future_inconsistent: Vec<FutureInconsistent>,
    counts: Counts,
    hold: Option<Box<Hold>>,
    /// A hold was given up on (too long, too large, the connection ending) although the client
    /// stream was not parsed up to here: responses whose ACK covers no more are not held again.
    hold_given_up: u64,
    /// Set on a connection picked up mid-stream until its server side shows a head, an event
    /// stream, or neither within the probe's bounds.
    sse_probe: Option<Box<SseProbe>>,
    /// Set once the connection is seen to speak HTTP/2 (its preface, or an upgrade to h2c):
    /// every byte from then on is its.
    h2: Option<Box<H2Connection>>,
    /// The client's SETTINGS from the last request asking for `Upgrade: h2c` (its
    /// `HTTP2-Settings`), for the connection the 101 starts.
    h2c_settings: Option<Vec<u8>>,
}

/// The index of a direction in per-direction arrays.
fn di(dir: Direction) -> usize {
    match dir {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}

impl Connection {
    /// `midstream`: the capture has no handshake for it, so its first bytes may be in the
    /// middle of a message.
    pub(crate) fn new(
        id: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        _opened: Mark,
        midstream: bool,
    ) -> Self {
        Connection {
            id,
            client,
            server,
            req: Half::new(),
            resp: Half::new(),
            pending: VecDeque::new(),
            unpaired_responses: VecDeque::new(),
            next_index: 0,
            interim: Vec::new(),
            kind: None,
            saw_data: false,
            first_fin: None,
            anomalies: 0,
            scanned_without_http: 0,
            probe: Vec::new(),
            early_server: None,
            early_server_bytes: 0,
            out_events: Vec::new(),
            pos: [0; 2],
            step_used: [0; 2],
            future_inconsistent: Vec::new(),
            counts: Counts::default(),
            hold: None,
            hold_given_up: 0,
            sse_probe: midstream.then(|| {
                Box::new(SseProbe {
                    buf: Vec::new(),
                    offset: 0,
                    pieces: Vec::new(),
                    from: 0,
                    searches: 0,
                    due: false,
                })
            }),
            h2: None,
            h2c_settings: None,
        }
    }

    /// Server bytes held for a response whose request is not parsed yet.
    pub(crate) fn held_bytes(&self) -> usize {
        self.hold.as_ref().map_or(0, |h| h.bytes)
    }

    /// What the connection's parsers counted: its HTTP/1.1 parser's, and its HTTP/2 reader's
    /// once it has one.
    pub(crate) fn counts(&self) -> impl Iterator<Item = &Counts> {
        std::iter::once(&self.counts).chain(self.h2.as_ref().map(|h| &h.counts))
    }

    pub(crate) fn kind(&self) -> ConnKind {
        if self.h2.is_some() {
            return ConnKind::Http2;
        }
        match self.kind {
            Some(k) => k,
            None if self.saw_data => ConnKind::Other,
            None => ConnKind::Empty,
        }
    }

    pub(crate) fn skipped_bytes(&self) -> u64 {
        self.req.skipped + self.resp.skipped + self.h2.as_ref().map_or(0, |h| h.skipped)
    }

    pub(crate) fn anomalies(&self) -> u64 {
        self.anomalies + self.h2.as_ref().map_or(0, |h| h.anomalies)
    }

    fn anomaly(&mut self, dir: Direction, mark: Mark, what: String, sink: &mut impl HttpSink) {
        self.anomalies += 1;
        sink.on_http(HttpEvent::Anomaly {
            conn: self.id,
            dir,
            mark,
            what,
        });
    }

    /// Bytes of `dir`; `acked` is the offset of the other direction their segment acknowledged,
    /// when the capture stage knows it.
    pub(crate) fn data(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        acked: Option<u64>,
        sink: &mut impl HttpSink,
    ) {
        self.expire_hold(mark, sink);
        self.saw_data = true;
        if let Some(h2) = self.h2.as_mut() {
            return h2.data(dir, data, mark, sink);
        }
        if self.kind.is_none() && dir == Direction::ServerToClient {
            self.keep_early_server_bytes(data, mark);
        }
        if self.kind.is_none() && dir == Direction::ClientToServer && self.probe.len() < PROBE_BYTES
        {
            let before = self.probe.len();
            let take = (PROBE_BYTES - before).min(data.len());
            self.probe.extend_from_slice(&data[..take]);
            if let Some(kind) = classify_first_bytes(&self.probe) {
                // TLS or HTTP/2 from the first byte on: nothing here for an HTTP/1.1 parser.
                self.kind = Some(kind);
                self.req.state = State::Opaque;
                self.resp.state = State::Opaque;
                if kind == ConnKind::Http2 {
                    return self.become_h2(before, data, mark, sink);
                }
            }
        }
        if self.kind.is_some() || self.probe.len() >= PROBE_BYTES {
            self.early_server = None;
        }
        self.feed(dir, data, mark, acked, sink);
        if dir == Direction::ClientToServer {
            self.release_if_answered(sink);
        }
    }

    /// Server bytes that came before the client's first: kept (bounded) until the client's bytes
    /// tell what the connection speaks, for an HTTP/2 server sends its SETTINGS as soon as the
    /// TLS handshake is done, often before the client's preface is captured.
    fn keep_early_server_bytes(&mut self, data: &[u8], mark: Mark) {
        if !self.probe.is_empty() || self.early_server_bytes > MAX_EARLY_SERVER_BYTES {
            return;
        }
        // Past the cap nothing more is kept, so that what is replayed has no hole in it.
        self.early_server_bytes += data.len();
        if self.early_server_bytes > MAX_EARLY_SERVER_BYTES {
            self.early_server = None;
            return;
        }
        let early = self.early_server.get_or_insert_with(Vec::new);
        match early.last_mut() {
            // Many tiny segments are kept as one piece (at the first one's mark).
            Some((last, _)) if last.len() < 1024 => last.extend_from_slice(data),
            _ => early.push((data.to_vec(), mark)),
        }
    }

    /// The client's bytes began with the HTTP/2 preface: from here on the connection is read
    /// as HTTP/2, from the server's early bytes and the probe's on.
    fn become_h2(&mut self, before: usize, data: &[u8], mark: Mark, sink: &mut impl HttpSink) {
        let mut h2 = Box::new(H2Connection::new(self.id, self.client, self.server));
        for (bytes, m) in self.early_server.take().unwrap_or_default() {
            h2.data(Direction::ServerToClient, &bytes, m, sink);
        }
        // The probe's bytes before these were the client's, the preface's start.
        h2.data(Direction::ClientToServer, &self.probe[..before], mark, sink);
        h2.data(Direction::ClientToServer, data, mark, sink);
        self.h2 = Some(h2);
    }

    /// Parses bytes of `dir`, unless they start a response to hold (or one is held already).
    fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        acked: Option<u64>,
        sink: &mut impl HttpSink,
    ) {
        let mut rest = data;
        while !rest.is_empty() {
            if dir == Direction::ServerToClient && self.holds(acked, mark) {
                self.hold_item(Held::Data {
                    bytes: rest.to_vec(),
                    mark,
                    acked,
                });
                self.limit_hold(sink);
                return;
            }
            self.step_used[di(dir)] = 0;
            let used = self.step(dir, rest, mark, sink);
            self.pos[di(dir)] += used as u64;
            rest = &rest[used..];
            if let Some(h2) = self.h2.as_mut() {
                // Upgraded: the rest of the segment is HTTP/2.
                h2.data(dir, rest, mark, sink);
                return;
            }
            if dir == Direction::ServerToClient && self.sse_probe.as_ref().is_some_and(|p| p.due) {
                self.search_sse(false, sink);
            }
        }
        self.step_used[di(dir)] = 0;
    }

    /// Takes server bytes the start-line search consumed without finding a head (`blank`: they
    /// ended a blank line) into the probe of a mid-stream connection.
    fn probe_push(&mut self, bytes: &[u8], mark: Mark, blank: bool) {
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
    fn end_probe(&mut self) {
        if let Some(p) = self.sse_probe.take() {
            self.resp.skipped += p.buf.len() as u64;
        }
    }

    /// Searches the probe for a point to read an event stream from (`ended`: no more server
    /// bytes will join these), and resynchronises there when found.
    fn search_sse(&mut self, ended: bool, sink: &mut impl HttpSink) {
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
        self.begin_body(dir, msg);
        if let Some(m) = self.resp.msg.as_mut() {
            // Its start is not in the capture: it cannot end complete.
            m.gap = true;
        }
        let what = format!(
            "response picked up in the middle of its body (no request or head in the capture): \
             resynchronised on {how} after skipping {at} bytes"
        );
        self.anomaly(dir, first, what, sink);
        // The probe's bytes were consumed by the start-line search; they are read again, each
        // with its packet's mark, as the body.
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

    /// Whether server bytes are to be held: a hold is on, or they start a response (between
    /// messages, no request waiting for an answer) whose ACK covers client bytes the parser has
    /// not read yet. The n-th response answers the n-th request (RFC 9112 §9.3), so a response
    /// that arrives first, acknowledging a request still to come, waits for it rather than
    /// being taken for the answer to a request the capture missed. Starts the hold when due.
    fn holds(&mut self, acked: Option<u64>, mark: Mark) -> bool {
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

    fn hold_item(&mut self, item: Held) {
        if let Some(h) = self.hold.as_mut() {
            if let Held::Data { bytes, .. } = &item {
                h.bytes += bytes.len();
            }
            h.items.push_back(item);
        }
    }

    /// A hold larger than [`MAX_HELD`] is given up on: the response is parsed without its
    /// request.
    fn limit_hold(&mut self, sink: &mut impl HttpSink) {
        if self.held_bytes() > MAX_HELD {
            self.release_hold(true, sink);
        }
    }

    /// A hold older than [`HOLD_NS`] at the capture time `mark` is given up on.
    #[inline]
    fn expire_hold(&mut self, mark: Mark, sink: &mut impl HttpSink) {
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
    fn release_if_answered(&mut self, sink: &mut impl HttpSink) {
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
            _ => self.counts.inconsistent_unattributed += 1,
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
        self.anomaly(dir, second, what, sink);
    }

    /// Inconsistent retransmissions of bytes a message that ends at `end` carried: its body is
    /// marked. Ones before its start were in bytes no message used.
    fn settle_inconsistent(&mut self, dir: Direction, msg: &mut Message, end: u64) {
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
    }

    fn half(&mut self, dir: Direction) -> &mut Half {
        match dir {
            Direction::ClientToServer => &mut self.req,
            Direction::ServerToClient => &mut self.resp,
        }
    }

    /// Consumes a prefix of `data` in the current state; returns its length (never 0 for
    /// non-empty input).
    fn step(&mut self, dir: Direction, data: &[u8], mark: Mark, sink: &mut impl HttpSink) -> usize {
        match self.half(dir).state {
            State::Opaque => {
                self.half(dir).skipped += data.len() as u64;
                data.len()
            }
            State::Start => {
                let used = self.find_start(dir, data, mark);
                if std::mem::take(&mut self.half(dir).lost_in_gap) {
                    self.lost_in_gap(dir, mark, sink);
                }
                used
            }
            State::Head => self.read_head(dir, data, mark, sink),
            State::Body => self.read_body(dir, data, mark, sink),
        }
    }

    /// Looks for the start line of the next message, a line at a time. Leading empty lines are
    /// allowed before a message (RFC 9112 §2.2); anything else before a start line is skipped
    /// and counted.
    fn find_start(&mut self, dir: Direction, data: &[u8], mark: Mark) -> usize {
        let probing = dir == Direction::ServerToClient && self.sse_probe.is_some();
        let (used, found, blank) = self.find_start_line(dir, data, mark, !probing);
        if probing {
            if found {
                // A head: not a body picked up in the middle.
                self.end_probe();
            } else {
                self.probe_push(&data[..used], mark, blank);
            }
        }
        used
    }

    /// [`Self::find_start`] on one line (or what there is of it): returns the bytes consumed,
    /// whether they started a head, and whether they ended a blank line. `count`: bytes
    /// skipped are counted (not while a probe holds them).
    fn find_start_line(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        count: bool,
    ) -> (usize, bool, bool) {
        let is_http = self.kind == Some(ConnKind::Http);
        let pos = self.pos[di(dir)];
        let half = self.half(dir);
        let (chunk, complete) = match data.iter().position(|&b| b == b'\n') {
            Some(i) => (&data[..=i], true),
            None => (data, false),
        };
        if half.line.len() + chunk.len() > MAX_RESYNC_LINE {
            // Too long to be a start line: drop what we hold and this chunk.
            if count {
                half.skipped += (half.line.len() + chunk.len()) as u64;
            }
            half.line.clear();
            if !is_http {
                self.scanned_without_http += chunk.len() as u64;
                self.maybe_give_up();
            }
            return (chunk.len(), false, false);
        }
        if !complete {
            if half.line.is_empty() {
                half.line_first = Some(mark);
                half.line_offset = pos;
            }
            half.line.extend_from_slice(chunk);
            return (chunk.len(), false, false);
        }
        let line_offset = if half.line.is_empty() {
            pos
        } else {
            half.line_offset
        };
        let line_first = half
            .line_first
            .take()
            .filter(|_| !half.line.is_empty())
            .unwrap_or(mark);
        let line: std::borrow::Cow<'_, [u8]> = if half.line.is_empty() {
            std::borrow::Cow::Borrowed(chunk)
        } else {
            let mut l = std::mem::take(&mut half.line);
            l.extend_from_slice(chunk);
            std::borrow::Cow::Owned(l)
        };
        let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
        let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
        if trimmed.is_empty() {
            return (chunk.len(), false, true);
        }
        let plausible = match dir {
            Direction::ClientToServer => is_request_line(trimmed),
            Direction::ServerToClient => is_status_line(trimmed),
        };
        // After a lost head, the next message may be glued to the end of a body that has no
        // final newline (a JSON body): look for a start line inside the line too.
        let embedded = if plausible {
            None
        } else {
            embedded_start(trimmed, dir)
        };
        if plausible || embedded.is_some() {
            let at = embedded.unwrap_or(0);
            // A connection carries nothing but messages: lost bytes before this head were one.
            half.lost_in_gap |= std::mem::take(&mut half.gap_between);
            half.skipped += at as u64;
            half.head.clear();
            half.head.extend_from_slice(&line[at..]);
            half.head_first = Some(if at == 0 { line_first } else { mark });
            half.head_offset = line_offset + at as u64;
            half.state = State::Head;
            self.kind = Some(ConnKind::Http);
            return (chunk.len(), true, false);
        }
        if count {
            half.skipped += line.len() as u64;
            half.lost_in_gap |= std::mem::take(&mut half.gap_between);
        }
        if !is_http {
            self.scanned_without_http += line.len() as u64;
            self.maybe_give_up();
        }
        (chunk.len(), false, false)
    }

    fn maybe_give_up(&mut self) {
        if self.scanned_without_http > GIVE_UP_NON_HTTP && self.kind.is_none() {
            self.kind = Some(ConnKind::Other);
            self.req.state = State::Opaque;
            self.resp.state = State::Opaque;
        }
    }

    fn read_head(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        if self.half(dir).head_dropped.is_some() {
            return self.read_head_past_limit(dir, data, mark, sink);
        }
        let half = self.half(dir);
        let before = half.head.len();
        // The blank line may straddle the previous chunk: search from a little before it.
        let search_from = before.saturating_sub(3);
        half.head.extend_from_slice(data);
        let end = find_head_end(&half.head[search_from..]).map(|e| e + search_from);
        let Some(end) = end else {
            if half.head.len() > MAX_HEAD && !half.keep_head_within_limit() {
                let len = half.head.len() as u64;
                half.head.clear();
                half.skipped += len;
                half.state = State::Start;
                self.anomaly(
                    dir,
                    mark,
                    format!("message headers exceed {} KiB: skipped", MAX_HEAD / 1024),
                    sink,
                );
            }
            return data.len();
        };
        let used = end - before;
        let half = self.half(dir);
        half.head.truncate(end);
        let head = std::mem::take(&mut half.head);
        self.finish_head(dir, head, used, mark, sink)
    }

    /// A head past [`MAX_HEAD`]: the lines before the limit are kept, and of the lines after it
    /// only those that frame the message or name its session ([`READ_PAST_MAX_HEADERS`]); the
    /// rest are counted and dropped up to the blank line that ends the head. The message is
    /// reported with an anomaly: a crafted head must not hide the request it carries.
    fn read_head_past_limit(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        let half = self.half(dir);
        let (used, ended) = half.scan_past_limit(data);
        if !ended {
            return data.len();
        }
        let dropped = half.head_dropped.take().unwrap_or(0);
        let mut head = std::mem::take(&mut half.head);
        head.extend_from_slice(b"\r\n");
        self.anomaly(
            dir,
            mark,
            format!(
                "message headers exceed {} KiB: {dropped} bytes of header lines past it were dropped (the fields that frame the message or name its session kept)",
                MAX_HEAD / 1024
            ),
            sink,
        );
        self.finish_head(dir, head, used, mark, sink)
    }

    /// Parses a head that ended `used` bytes into the last chunk, and ends a message that has
    /// no body.
    fn finish_head(
        &mut self,
        dir: Direction,
        head: Vec<u8>,
        used: usize,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        self.step_used[di(dir)] = used as u64;
        let half = self.half(dir);
        let first = half.head_first.take().unwrap_or(mark);
        half.state = State::Start;
        self.parse_head(dir, &head, first, mark, sink);
        // A message with no body ends with its headers.
        if matches!(self.half(dir).state, State::Body)
            && self
                .half(dir)
                .msg
                .as_ref()
                .is_some_and(|m| m.framing == Framing::None || m.framing == Framing::Length(0))
        {
            self.end_message(dir, Outcome::Complete, None, mark, sink);
        }
        used
    }

    /// Parses a complete head (`first` is where its first byte was captured, `mark` where its
    /// end was) and starts its message.
    fn parse_head(
        &mut self,
        dir: Direction,
        head: &[u8],
        first: Mark,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let head = self.without_control_bytes(dir, head, mark, sink);
        let mut slots = header_slots(&head);
        match dir {
            Direction::ClientToServer => {
                let mut req = httparse::Request::new(&mut slots);
                let parsed = req.parse(&head);
                if self.head_parsed(dir, parsed, head.len(), mark, sink) {
                    self.request_head(&req, first, mark, true, sink);
                }
            }
            Direction::ServerToClient => {
                let mut resp = httparse::Response::new(&mut slots);
                let parsed = resp.parse(&head);
                if self.head_parsed(dir, parsed, head.len(), mark, sink) {
                    self.response_head(&resp, first, mark, true, sink);
                }
            }
        }
    }

    /// The fields of a head as [`kept_headers`] keeps them; the dropped ones are counted, with an
    /// anomaly.
    fn headers_of(
        &mut self,
        dir: Direction,
        raw: &[httparse::Header<'_>],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> Headers {
        let (headers, dropped) = kept_headers(raw);
        if dropped > 0 {
            self.counts.headers_dropped += dropped as u64;
            let what = format!(
                "{} head has {} header fields: {dropped} past the first {MAX_HEADERS} dropped \
                 (those that frame the message or name its session kept)",
                message_kind(dir),
                headers.0.len() + dropped
            );
            self.anomaly(dir, mark, what, sink);
        }
        headers
    }

    /// Starts the message of a request head (`complete`: not cut by a gap).
    fn request_head(
        &mut self,
        req: &httparse::Request<'_, '_>,
        first: Mark,
        mark: Mark,
        complete: bool,
        sink: &mut impl HttpSink,
    ) {
        let method = req.method.unwrap_or("").to_string();
        let target = req.path.unwrap_or("").to_string();
        let version = req.version.unwrap_or(1);
        let headers = self.headers_of(Direction::ClientToServer, req.headers, mark, sink);
        if headers.has_token("upgrade", "h2c") {
            self.h2c_settings = headers
                .get("http2-settings")
                .and_then(decode_http2_settings);
        }
        let (framing, problem) = request_framing(&headers);
        if let Some(p) = problem {
            self.anomaly(Direction::ClientToServer, mark, p, sink);
        }
        let index = self.request_index(&method, first);
        let exchange = ExchangeId {
            conn: self.id,
            index,
        };
        let start = Start::Request {
            method,
            target,
            version,
        };
        let mut msg = new_message(start, headers, exchange, framing, first, mark);
        msg.head_complete = complete;
        self.begin_body(Direction::ClientToServer, msg);
    }

    /// Reports a response head (`complete`: not cut by a gap) and starts its message.
    fn response_head(
        &mut self,
        resp: &httparse::Response<'_, '_>,
        first: Mark,
        mark: Mark,
        complete: bool,
        sink: &mut impl HttpSink,
    ) {
        let dir = Direction::ServerToClient;
        let status = resp.code.unwrap_or(0);
        let reason = resp.reason.unwrap_or("").to_string();
        let version = resp.version.unwrap_or(1);
        let headers = self.headers_of(dir, resp.headers, mark, sink);
        if (100..200).contains(&status) && status != 101 {
            // Interim response (100 Continue, 103 Early Hints): the final one follows.
            self.interim.push(status);
            return;
        }
        self.end_request_lost_in_gap(mark, sink);
        let (index, method) = self.response_index(first);
        let exchange = ExchangeId {
            conn: self.id,
            index,
        };
        if status == 101 && headers_upgrade_to_h2c(&headers) {
            // Cleartext HTTP/2 from here on (RFC 7540 §3.2): the 101 is interim, and the
            // response comes on stream 1.
            self.interim.push(101);
            let interim = std::mem::take(&mut self.interim);
            let settings = self.h2c_settings.take();
            let h2 = H2Connection::upgraded(
                self.id,
                self.client,
                self.server,
                exchange,
                interim,
                settings.as_deref(),
            );
            self.h2 = Some(Box::new(h2));
            self.req.state = State::Opaque;
            self.resp.state = State::Opaque;
            return;
        }
        let (framing, problem) = response_framing(&method, status, &headers);
        if let Some(p) = problem {
            self.anomaly(dir, mark, p, sink);
        }
        let event_stream =
            (200..300).contains(&status) && headers.media_type_is("text/event-stream");
        let mut msg = new_message(Start::Response, headers, exchange, framing, first, mark);
        let response_head = ResponseHead {
            exchange,
            status,
            reason,
            version,
            // A response's end does not carry its headers: the head takes them.
            headers: std::mem::take(&mut msg.headers),
            interim: std::mem::take(&mut self.interim),
            first,
            event_stream,
            head_complete: complete,
            upstream: None,
        };
        sink.on_http(HttpEvent::ResponseHead(Box::new(response_head)));
        if event_stream {
            msg.payload.sse = Some(SseParser::new());
        }
        self.begin_body(dir, msg);
        if framing == Framing::Tunnel {
            // After CONNECT 2xx or 101 the bytes are another protocol.
            self.end_message(dir, Outcome::Complete, None, mark, sink);
            self.req.state = State::Opaque;
            self.resp.state = State::Opaque;
        }
    }

    /// The head to parse: `head` itself, or a copy with its control bytes replaced by `?`.
    fn without_control_bytes<'h>(
        &mut self,
        dir: Direction,
        head: &'h [u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> Cow<'h, [u8]> {
        if !has_control_bytes(head) {
            return Cow::Borrowed(head);
        }
        // A crafted or broken peer put control bytes in the head: parse a copy with them
        // replaced, and say so (peers usually reject such messages, but they crossed the
        // wire and are evidence).
        let what = format!(
            "control characters in the {} head (shown as '?')",
            message_kind(dir)
        );
        self.anomaly(dir, mark, what, sink);
        Cow::Owned(replace_control_bytes(head))
    }

    /// Whether httparse read a whole head; when not, says why and counts a malformed head as
    /// skipped.
    fn head_parsed(
        &mut self,
        dir: Direction,
        parsed: httparse::Result<usize>,
        head_len: usize,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> bool {
        let what = match parsed {
            Ok(httparse::Status::Complete(_)) => return true,
            Ok(httparse::Status::Partial) => format!("incomplete {} head", message_kind(dir)),
            Err(e) => {
                self.half(dir).skipped += head_len as u64;
                format!("malformed {} head: {e}", message_kind(dir))
            }
        };
        self.anomaly(dir, mark, what, sink);
        false
    }

    /// The exchange a request head opens: the place a response already took for it, or a new
    /// one that waits for its response.
    fn request_index(&mut self, method: &str, first: Mark) -> u32 {
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
        self.pending.push_back(Pending {
            index,
            method: method.to_string(),
            first,
        });
        index
    }

    /// The exchange a response head answers, and its request's method (empty when unknown).
    fn response_index(&mut self, first: Mark) -> (u32, String) {
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
    fn lost_in_gap(&mut self, dir: Direction, mark: Mark, sink: &mut impl HttpSink) {
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
        self.anomaly(dir, mark, what, sink);
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
    fn end_request_lost_in_gap(&mut self, mark: Mark, sink: &mut impl HttpSink) {
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

    /// A head was read: its body (if any) follows.
    fn begin_body(&mut self, dir: Direction, mut msg: Message) {
        let half = self.half(dir);
        msg.offset = half.head_offset;
        msg.gap = std::mem::take(&mut half.after_gap);
        half.gap_since_head = false;
        half.msg = Some(msg);
        half.state = State::Body;
    }

    fn read_body(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        let Some(msg) = self.half(dir).msg.as_mut() else {
            // Nothing to read a body for: look for the next message (a state change, so the
            // caller's loop still makes progress).
            self.half(dir).state = State::Start;
            return 0;
        };
        // Framing bytes (chunk sizes, the last chunk) end a message too.
        msg.last = mark;
        match msg.framing {
            Framing::None | Framing::Tunnel => {
                self.end_message(dir, Outcome::Complete, None, mark, sink);
                0
            }
            Framing::Length(_) => {
                let take = (msg.remaining.min(data.len() as u64)) as usize;
                msg.remaining -= take as u64;
                let done = msg.remaining == 0;
                self.step_used[di(dir)] = take as u64;
                self.body_bytes(dir, &data[..take], mark, sink);
                if done {
                    self.end_message(dir, Outcome::Complete, None, mark, sink);
                }
                take
            }
            Framing::UntilClose => {
                self.body_bytes(dir, data, mark, sink);
                data.len()
            }
            // Each call starts a segment: one that starts a request is the next message.
            Framing::UntilCut if starts_request(data) => {
                self.end_message(dir, Outcome::Gap, None, mark, sink);
                0
            }
            Framing::UntilCut => {
                msg.payload.body.unknown = false;
                self.body_bytes(dir, data, mark, sink);
                data.len()
            }
            Framing::Chunked => {
                let mut decoder = msg.chunked.take().unwrap_or_default();
                let (result, ended) = self.dechunk(dir, &mut decoder, data, mark, sink);
                if let Some(m) = self.half(dir).msg.as_mut() {
                    m.chunked = Some(decoder);
                }
                let (Ok(used) | Err((used, _))) = &result;
                self.step_used[di(dir)] = *used as u64;
                match result {
                    Ok(used) => {
                        if ended {
                            self.end_message(dir, Outcome::Complete, None, mark, sink);
                        }
                        used
                    }
                    Err((used, e)) => {
                        // After a cut of the snap length, the framing ends where the next
                        // message begins: the cut took only this one's bytes.
                        let cut_only = self
                            .half(dir)
                            .msg
                            .as_ref()
                            .is_some_and(|m| m.gap && !m.lost);
                        let what = if cut_only {
                            format!(
                                "chunked framing not found after a snap-length cut ({e}): message ended there"
                            )
                        } else {
                            format!("bad chunked framing: {e}; message cut")
                        };
                        self.anomaly(dir, mark, what, sink);
                        if let Some(m) = self.half(dir).msg.as_mut() {
                            m.gap = true;
                        }
                        // The rest of the packet may hold the next message: it is scanned from
                        // the start state (and counted if skipped).
                        self.end_message(dir, Outcome::Gap, None, mark, sink);
                        self.half(dir).after_gap |= !cut_only;
                        used
                    }
                }
            }
        }
    }

    /// Reads chunked framing from `data`, each piece of body as it comes; returns the bytes
    /// used (or those read before a framing error, and the error) and whether the body ended.
    /// The decoder is out of its message meanwhile, so that the pieces need no buffer.
    fn dechunk(
        &mut self,
        dir: Direction,
        decoder: &mut ChunkedDecoder,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> (Result<usize, (usize, ChunkedError)>, bool) {
        let mut pos = 0;
        loop {
            match decoder.next(data, &mut pos) {
                Ok(Some(ChunkOutput::Data(bytes))) => self.body_bytes(dir, bytes, mark, sink),
                Ok(Some(ChunkOutput::End)) => return (Ok(pos), true),
                Ok(None) => return (Ok(pos), false),
                Err(e) => return (Err((pos, e)), false),
            }
        }
    }

    fn body_bytes(&mut self, dir: Direction, bytes: &[u8], mark: Mark, sink: &mut impl HttpSink) {
        if bytes.is_empty() {
            return;
        }
        let half = match dir {
            Direction::ClientToServer => &mut self.req,
            Direction::ServerToClient => &mut self.resp,
        };
        let Some(msg) = half.msg.as_mut() else {
            return;
        };
        msg.last = mark;
        let failed = msg.payload.write(
            bytes,
            !msg.holed,
            mark,
            &mut self.out_events,
            &mut self.counts,
        );
        self.flush_events(dir, sink);
        if let Some(e) = failed {
            self.anomaly(dir, mark, e, sink);
        }
    }

    fn flush_events(&mut self, dir: Direction, sink: &mut impl HttpSink) {
        if self.out_events.is_empty() {
            return;
        }
        let exchange = match self.half(dir).msg.as_ref() {
            Some(m) => m.exchange,
            None => return,
        };
        for event in self.out_events.drain(..) {
            sink.on_http(HttpEvent::SseEvent { exchange, event });
        }
    }

    /// Ends the message of `dir`, emitting it (a request) or its end (a response).
    fn end_message(
        &mut self,
        dir: Direction,
        outcome: Outcome,
        closed_by: Option<Direction>,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let (client, server) = (self.client, self.server);
        let half = self.half(dir);
        if matches!(half.state, State::Body) {
            half.state = State::Start;
        }
        let Some(mut msg) = half.msg.take() else {
            return;
        };
        half.framed_end = outcome == Outcome::Complete;
        // A message cut short ended when its connection was given up (`mark`), not at its last
        // byte: a client that closes 1.5 s after the last event waited those 1.5 s.
        if matches!(outcome, Outcome::ClosedEarly | Outcome::Reset) && mark > msg.last {
            msg.last = mark;
        }
        let complete = outcome == Outcome::Complete && !msg.holed;
        let notes = msg
            .payload
            .finish(complete, mark, &mut self.out_events, &mut self.counts);
        for what in notes {
            self.anomaly(dir, mark, what, sink);
        }
        let end = self.pos[di(dir)] + self.step_used[di(dir)];
        self.settle_inconsistent(dir, &mut msg, end);
        let exchange = msg.exchange;
        for event in self.out_events.drain(..) {
            sink.on_http(HttpEvent::SseEvent { exchange, event });
        }
        let outcome = if msg.gap && outcome == Outcome::Complete {
            Outcome::Gap
        } else {
            outcome
        };
        msg.payload.body.chunked = msg.chunked.is_some() || msg.framing == Framing::Chunked;
        sink.on_http(msg.into_event(outcome, closed_by, client, server));
    }

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
        let mut ended = whole.to_vec();
        ended.extend_from_slice(b"\r\n");
        let ended = self
            .without_control_bytes(dir, &ended, mark, sink)
            .into_owned();
        let mut slots = header_slots(&ended);
        let kind = message_kind(dir);
        let parsed = match dir {
            Direction::ClientToServer => {
                let mut req = httparse::Request::new(&mut slots);
                let ok = matches!(req.parse(&ended), Ok(httparse::Status::Complete(_)));
                if ok {
                    self.request_head(&req, first, mark, false, sink);
                }
                ok
            }
            Direction::ServerToClient => {
                let mut resp = httparse::Response::new(&mut slots);
                let ok = matches!(resp.parse(&ended), Ok(httparse::Status::Complete(_)));
                if ok {
                    self.response_head(&resp, first, mark, false, sink);
                }
                ok
            }
        };
        let cause = if snaplen {
            " (cut by the capture's snap length)"
        } else {
            ""
        };
        if !parsed {
            let what = format!("headers of a message lost in a {len}-byte capture gap{cause}");
            self.anomaly(dir, mark, what, sink);
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
        self.anomaly(dir, mark, what, sink);
        let keep_body = snaplen && dir == Direction::ClientToServer;
        let half = self.half(dir);
        if let Some(msg) = half.msg.as_mut() {
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
                return;
            }
        }
        self.end_message(dir, Outcome::Gap, None, mark, sink);
    }

    fn lose(
        &mut self,
        dir: Direction,
        len: u64,
        snaplen: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if dir == Direction::ServerToClient && self.sse_probe.is_some() {
            // What came before the gap is all there is of it: a stream found in it goes on
            // (and loses these bytes); if none, the search starts again after them.
            let found = self.probe_before_gap(sink);
            if !found && let Some(p) = self.sse_probe.as_mut() {
                self.resp.skipped += p.buf.len() as u64;
                p.buf.clear();
                p.pieces.clear();
                p.from = 0;
                p.due = false;
            }
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
                let head = std::mem::take(&mut half.head);
                let first = half.head_first.take().unwrap_or(mark);
                half.state = State::Start;
                half.head_dropped = None;
                half.head_tail.clear();
                self.cut_head(dir, &head, first, len, snaplen, mark, sink);
                self.half(dir).after_gap |= lost;
            }
            State::Body => {
                let Some(msg) = half.msg.as_mut() else {
                    half.state = State::Start;
                    return;
                };
                let overran = matches!(msg.framing, Framing::Length(_)) && len > msg.remaining;
                let survives = msg.lose(len, snaplen);
                let done = matches!(msg.framing, Framing::Length(_)) && msg.remaining == 0;
                if !survives {
                    self.end_message(dir, Outcome::Gap, None, mark, sink);
                    self.half(dir).after_gap |= lost;
                    self.half(dir).gap_between |= overran;
                } else if done {
                    self.end_message(dir, Outcome::Gap, None, mark, sink);
                }
            }
        }
    }

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

    fn fin_now(&mut self, dir: Direction, mark: Mark, sink: &mut impl HttpSink) {
        if dir == Direction::ServerToClient && self.sse_probe.is_some() {
            self.search_sse(true, sink);
        }
        let half = self.half(dir);
        match half.state {
            State::Body => {
                let framing = half.msg.as_ref().map(|m| m.framing);
                let until_close = framing == Some(Framing::UntilClose);
                if framing == Some(Framing::UntilCut) {
                    self.end_message(dir, Outcome::Gap, None, mark, sink);
                    return;
                }
                // A close-delimited response ends at the server's FIN, unless the client had
                // already closed its side: then the client walked away from it (a proxy whose own
                // client gave up closes upstream like this).
                let client_left = match self.first_fin {
                    Some((Direction::ClientToServer, at)) if dir == Direction::ServerToClient => {
                        Some(at)
                    }
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
            State::Head => {
                half.head.clear();
                half.head_dropped = None;
                half.head_tail.clear();
                half.state = State::Start;
                self.anomaly(
                    dir,
                    mark,
                    "connection closed in the middle of message headers".into(),
                    sink,
                );
            }
            _ => {}
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
        }
        self.counts.inconsistent_unattributed += self.future_inconsistent.len() as u64;
        self.future_inconsistent.clear();
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
        // Keep the framing when the gap falls inside a known length.
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

    /// What reports the finished message: the request, or the end of the response.
    fn into_event(
        self,
        outcome: Outcome,
        closed_by: Option<Direction>,
        client: SocketAddr,
        server: SocketAddr,
    ) -> HttpEvent {
        match self.start {
            Start::Request {
                method,
                target,
                version,
            } => HttpEvent::Request(Box::new(Request {
                exchange: self.exchange,
                client,
                server,
                method,
                target,
                version,
                headers: self.headers,
                body: self.payload.body,
                first: self.first,
                last: self.last,
                outcome,
                head_complete: self.head_complete,
            })),
            Start::Response => HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                exchange: self.exchange,
                body: self.payload.body,
                last: self.last,
                outcome,
                closed_by,
                sse: self.payload.sse.map(|s| s.stats),
                when_unknown: false,
            })),
        }
    }
}

fn new_message(
    start: Start,
    headers: Headers,
    exchange: ExchangeId,
    framing: Framing,
    first: Mark,
    head_end: Mark,
) -> Message {
    let payload = Payload::new(&headers);
    let remaining = match framing {
        Framing::Length(n) => n,
        _ => 0,
    };
    Message {
        start,
        headers,
        exchange,
        framing,
        remaining,
        chunked: None,
        payload,
        holed: false,
        lost: false,
        gap: false,
        first,
        last: head_end,
        offset: 0,
        head_complete: true,
    }
}

/// Bytes RFC 9110 forbids in a field value (CTLs other than HTAB, and DEL), outside line ends.
fn is_forbidden(b: u8) -> bool {
    (b < 0x20 && b != b'\t' && b != b'\r' && b != b'\n') || b == 0x7f
}

/// A frame as anomaly text names it (with its input when there are several).
pub(crate) fn frame_name(mark: Mark) -> String {
    match mark.frame.input {
        0 => format!("frame {}", mark.frame.frame),
        i => format!("frame {} of input {i}", mark.frame.frame),
    }
}

/// How a direction's messages are named in anomaly text.
fn message_kind(dir: Direction) -> &'static str {
    match dir {
        Direction::ClientToServer => "request",
        Direction::ServerToClient => "response",
    }
}

fn has_control_bytes(head: &[u8]) -> bool {
    // A block at a time with no exit inside: the compiler then tests many bytes per instruction.
    head.chunks(64)
        .any(|block| block.iter().fold(false, |any, &b| any | is_forbidden(b)))
}

fn replace_control_bytes(head: &[u8]) -> Vec<u8> {
    head.iter()
        .map(|&b| if is_forbidden(b) { b'?' } else { b })
        .collect()
}

/// Room for every header line of `head`: a field takes a line, so the parser never runs out
/// of slots (it would reject the whole head), and a usual head of a dozen fields takes a dozen.
fn header_slots(head: &[u8]) -> Vec<httparse::Header<'_>> {
    let lines = memchr::memchr_iter(b'\n', head).count();
    vec![httparse::EMPTY_HEADER; lines.min(MAX_HEAD) + 1]
}

/// The fields of a head: the first [`MAX_HEADERS`], and past them those the pipeline reads;
/// returns how many were dropped.
fn kept_headers(raw: &[httparse::Header<'_>]) -> (Headers, usize) {
    let mut kept = Vec::with_capacity(raw.len().min(MAX_HEADERS));
    let mut dropped = 0;
    for h in raw.iter().filter(|h| !h.name.is_empty()) {
        if kept.len() < MAX_HEADERS || never_dropped(h.name.as_bytes()) {
            // Values are mostly valid UTF-8: checked once, copied once.
            let value = match std::str::from_utf8(h.value) {
                Ok(v) => v.to_owned(),
                Err(_) => String::from_utf8_lossy(h.value).into_owned(),
            };
            kept.push((h.name.to_string(), value));
        } else {
            dropped += 1;
        }
    }
    (Headers(kept), dropped)
}

/// RFC 9112 §6.3 for requests: chunked, else Content-Length, else no body.
fn request_framing(headers: &Headers) -> (Framing, Option<String>) {
    if headers.has("transfer-encoding") {
        let problem = headers.has("content-length").then(|| {
            "request has both Transfer-Encoding and Content-Length (Transfer-Encoding wins)"
                .to_string()
        });
        if last_coding_is_chunked(headers) {
            return (Framing::Chunked, problem);
        }
        return (
            Framing::UntilClose,
            Some("request Transfer-Encoding without chunked: read until close".into()),
        );
    }
    match content_length(headers) {
        Ok(Some(n)) => (Framing::Length(n), None),
        Ok(None) => (Framing::None, None),
        Err(e) => (Framing::None, Some(e.to_string())),
    }
}

/// RFC 9112 §6.3 for responses.
fn response_framing(method: &str, status: u16, headers: &Headers) -> (Framing, Option<String>) {
    if method.eq_ignore_ascii_case("HEAD")
        || status == 204
        || status == 304
        || (100..200).contains(&status) && status != 101
    {
        return (Framing::None, None);
    }
    if status == 101 || (method.eq_ignore_ascii_case("CONNECT") && (200..300).contains(&status)) {
        return (Framing::Tunnel, None);
    }
    if headers.has("transfer-encoding") {
        let problem = headers.has("content-length").then(|| {
            "response has both Transfer-Encoding and Content-Length (Transfer-Encoding wins)"
                .to_string()
        });
        if last_coding_is_chunked(headers) {
            return (Framing::Chunked, problem);
        }
        return (Framing::UntilClose, problem);
    }
    match content_length(headers) {
        Ok(Some(n)) => (Framing::Length(n), None),
        Ok(None) => (Framing::UntilClose, None),
        Err(e) => (Framing::UntilClose, Some(e.to_string())),
    }
}

fn last_coding_is_chunked(headers: &Headers) -> bool {
    headers
        .get_all("transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"))
}

/// Why a Content-Length cannot frame a message. The text is the anomaly shown to users.
#[derive(Debug, thiserror::Error)]
enum ContentLengthError<'h> {
    #[error("invalid Content-Length {0:?}")]
    Invalid(&'h str),
    #[error("conflicting Content-Length values")]
    Conflicting,
}

/// The Content-Length, if any; several equal values are accepted (RFC 9110 §8.6).
fn content_length(headers: &Headers) -> Result<Option<u64>, ContentLengthError<'_>> {
    let mut value: Option<u64> = None;
    for v in headers.get_all("content-length").flat_map(|v| v.split(',')) {
        let v = v.trim();
        let n: u64 = v.parse().map_err(|_| ContentLengthError::Invalid(v))?;
        if value.is_some_and(|old| old != n) {
            return Err(ContentLengthError::Conflicting);
        }
        value = Some(n);
    }
    Ok(value)
}

/// Whether a field is one that is never dropped ([`READ_PAST_MAX_HEADERS`]).
pub(crate) fn never_dropped(name: &[u8]) -> bool {
    READ_PAST_MAX_HEADERS
        .iter()
        .any(|f| f.as_bytes().eq_ignore_ascii_case(name))
}

/// Whether a raw header line names a field that is never dropped.
fn is_read_past_limit(line: &[u8]) -> bool {
    line.iter()
        .position(|&b| b == b':')
        .is_some_and(|colon| never_dropped(line[..colon].trim_ascii()))
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'\n', buf).find_map(|i| match buf[i + 1..] {
        [b'\n', ..] => Some(i + 2),
        [b'\r', b'\n', ..] => Some(i + 3),
        _ => None,
    })
}

/// Where a start line begins inside `line` (not at 0), if one does.
fn embedded_start(line: &[u8], dir: Direction) -> Option<usize> {
    match dir {
        Direction::ClientToServer => (1..line.len()).find(|&p| {
            line[p].is_ascii_uppercase()
                && !line[p - 1].is_ascii_uppercase()
                && quick_method_prefix(&line[p..])
                && is_request_line(&line[p..])
        }),
        Direction::ServerToClient => line
            .windows(7)
            .enumerate()
            .skip(1)
            .filter(|(_, w)| *w == b"HTTP/1.")
            .map(|(p, _)| p)
            .find(|&p| is_status_line(&line[p..])),
    }
}

/// A method token followed by a space and the start of a target, checked before the full test.
fn quick_method_prefix(rest: &[u8]) -> bool {
    let n = rest
        .iter()
        .take(13)
        .take_while(|b| b.is_ascii_uppercase())
        .count();
    (3..=12).contains(&n)
        && rest.get(n) == Some(&b' ')
        && matches!(rest.get(n + 1), Some(b'/' | b'*' | b'h' | b'H'))
}

/// `METHOD SP target SP HTTP/1.x`.
/// `data` begins with a whole request line.
fn starts_request(data: &[u8]) -> bool {
    let Some(end) = data.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let line = &data[..end];
    is_request_line(line.strip_suffix(b"\r").unwrap_or(line))
}

pub(crate) fn is_request_line(line: &[u8]) -> bool {
    let Some(sp1) = line.iter().position(|&b| b == b' ') else {
        return false;
    };
    let method = &line[..sp1];
    if method.is_empty()
        || method.len() > 24
        || !method
            .iter()
            .all(|b| b.is_ascii_uppercase() || *b == b'-' || *b == b'_')
    {
        return false;
    }
    let rest = &line[sp1 + 1..];
    let Some(sp2) = rest.iter().rposition(|&b| b == b' ') else {
        return false;
    };
    let target = &rest[..sp2];
    let version = &rest[sp2 + 1..];
    !target.is_empty()
        && !target.contains(&b' ')
        && version.len() == 8
        && version.starts_with(b"HTTP/1.")
        && version[7].is_ascii_digit()
}

/// `HTTP/1.x NNN [reason]`.
pub(crate) fn is_status_line(line: &[u8]) -> bool {
    line.len() >= 12
        && line.starts_with(b"HTTP/1.")
        && line[7].is_ascii_digit()
        && line[8] == b' '
        && line[9..12].iter().all(u8::is_ascii_digit)
        && line.get(12).is_none_or(|&b| b == b' ')
}

/// The SETTINGS payload an `HTTP2-Settings` header carries: base64url, padding optional (RFC
/// 7540 §3.2.1); at most a few hundred settings are read.
fn decode_http2_settings(value: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const URL_SAFE_ANY_PADDING: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let value = value.trim();
    (value.len() <= 4096)
        .then(|| URL_SAFE_ANY_PADDING.decode(value).ok())
        .flatten()
}

/// A 101 response switching to cleartext HTTP/2 (RFC 7540 §3.2).
fn headers_upgrade_to_h2c(headers: &Headers) -> bool {
    headers.has_token("upgrade", "h2c")
}

fn classify_first_bytes(data: &[u8]) -> Option<ConnKind> {
    if data.len() >= 2 && data[0] == 0x16 && data[1] == 0x03 {
        return Some(ConnKind::Tls);
    }
    if data.starts_with(&PREFACE[..14]) {
        return Some(ConnKind::Http2);
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mcpf_model::{FrameRef, Timestamp};

    #[test]
    fn a_head_past_its_limit_keeps_the_fields_that_frame_it_across_chunks() {
        let mut half = Half::new();
        half.head = b"POST /mcp HTTP/1.1\r\n".to_vec();
        half.head_dropped = Some(0);
        let pad = b"X-Pad: aaaaaaaa\r\n".repeat(10);
        let rest = [
            &pad[..],
            b"Content-Le",
            b"ngth: 12\r\nX-More: 1\r\n\r",
            b"\n{body}",
        ]
        .concat();
        // Fed in pieces that cut a kept field and the blank line in two.
        let (a, b) = rest.split_at(pad.len() + 4);
        assert_eq!(half.scan_past_limit(a), (a.len(), false));
        let cut = b.iter().position(|&c| c == b'{').unwrap();
        let (b1, b2) = b.split_at(cut - 1);
        assert_eq!(half.scan_past_limit(b1), (b1.len(), false));
        assert_eq!(half.scan_past_limit(b2), (1, true));
        assert_eq!(half.head, b"POST /mcp HTTP/1.1\r\nContent-Length: 12\r\n");
        assert_eq!(half.head_dropped, Some(pad.len() as u64 + 11));
    }

    use Direction::{ClientToServer as C2S, ServerToClient as S2C};

    /// Frame `n`, `n` ms into the capture.
    pub(crate) fn mark(n: u64) -> Mark {
        Mark {
            time: Timestamp(n as i64 * 1_000_000),
            frame: FrameRef::new(0, n),
        }
    }

    /// What a connection reported, in order.
    #[derive(Default)]
    pub(crate) struct Events(pub(crate) Vec<HttpEvent>);

    impl HttpSink for Events {
        fn on_http(&mut self, event: HttpEvent) {
            self.0.push(event);
        }
    }

    /// `fn $name(&self) -> Vec<&$ty>`: what the events of one kind carry, in order.
    macro_rules! events_of {
        ($name:ident, $ty:ty, $pat:pat => $out:expr) => {
            fn $name(&self) -> Vec<&$ty> {
                let events = self.events.0.iter();
                events
                    .filter_map(|e| match e {
                        $pat => Some(&**$out),
                        _ => None,
                    })
                    .collect()
            }
        };
    }

    /// One connection fed event by event, frame numbers from 1; what it reported.
    struct Wire {
        conn: Connection,
        frame: u64,
        events: Events,
    }

    impl Wire {
        fn new() -> Wire {
            let conn = Connection::new(
                ConnId::tcp(0),
                "10.0.0.1:40000".parse().unwrap(),
                "10.0.0.2:9123".parse().unwrap(),
                mark(0),
                false,
            );
            Wire {
                conn,
                frame: 0,
                events: Events::default(),
            }
        }

        fn tick(&mut self) -> Mark {
            self.frame += 1;
            mark(self.frame)
        }

        fn data(&mut self, dir: Direction, bytes: &[u8]) -> &mut Self {
            let m = self.tick();
            self.conn.data(dir, bytes, m, None, &mut self.events);
            self
        }

        fn acking(&mut self, dir: Direction, bytes: &[u8], acked: u64) -> &mut Self {
            let m = self.tick();
            self.conn.data(dir, bytes, m, Some(acked), &mut self.events);
            self
        }

        fn gap(&mut self, dir: Direction, len: u64) -> &mut Self {
            let m = self.tick();
            self.conn.gap(dir, len, false, m, &mut self.events);
            self
        }

        fn fin(&mut self, dir: Direction) -> &mut Self {
            let m = self.tick();
            self.conn.fin(dir, m, &mut self.events);
            self
        }

        fn inconsistent(&mut self, dir: Direction, offset: u64, len: u64, first: u64) -> &mut Self {
            let m = self.tick();
            self.conn
                .inconsistent(dir, offset, len, mark(first), m, &mut self.events);
            self
        }

        fn close(&mut self) -> &mut Self {
            let m = self.tick();
            self.conn
                .close(Outcome::CutByCaptureEnd, None, m, &mut self.events);
            self
        }

        events_of!(requests, Request, HttpEvent::Request(r) => r);
        events_of!(heads, ResponseHead, HttpEvent::ResponseHead(h) => h);
        events_of!(ends, ResponseEnd, HttpEvent::ResponseEnd(e) => e);
        events_of!(anomalies, str, HttpEvent::Anomaly { what, .. } => what);
    }

    const POST: &[u8] = b"POST /mcp HTTP/1.1\r\nContent-Length: 10\r\n\r\n";

    #[test]
    fn inconsistent_bytes_of_a_message_in_progress_mark_it() {
        let mut w = Wire::new();
        w.data(C2S, POST).data(C2S, b"{\"a\"");
        // Bytes 3..5 of the body (stream offsets 46 and 47) were retransmitted differently.
        let at = POST.len() as u64 + 2;
        w.inconsistent(C2S, at, 2, 2).data(C2S, b":1234}");
        let [req] = w.requests()[..] else {
            panic!("{:?}", w.events.0)
        };
        assert_eq!(req.body.inconsistent_bytes, 2);
        assert_eq!(
            w.anomalies(),
            [format!(
                "retransmitted bytes differ from the first copy: 2 bytes at stream offset {at} \
                 in the request of tcp0#1 (first copy in frame 2, retransmission in frame 3; \
                 the first copy was kept)"
            )]
        );
        assert_eq!(w.conn.counts.inconsistent_bytes, 2);
    }

    #[test]
    fn inconsistent_bytes_not_parsed_yet_mark_the_message_that_carries_them() {
        let mut w = Wire::new();
        // TCP still buffers the first copy of the response's body when the retransmission
        // comes: the mark waits for the message.
        w.data(C2S, b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
        let first = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let second = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine";
        w.inconsistent(S2C, (first.len() + second.len() - 2) as u64, 1, 9);
        w.data(S2C, first).data(S2C, second);
        let ends = w.ends();
        assert_eq!(ends.len(), 2);
        assert_eq!(ends[0].body.inconsistent_bytes, 0);
        assert_eq!(ends[1].body.inconsistent_bytes, 1);
        assert_eq!(w.anomalies().len(), 1);
        assert!(w.anomalies()[0].contains("frame 9"), "{:?}", w.anomalies());
    }

    #[test]
    fn inconsistent_bytes_of_a_message_already_reported_are_counted_apart() {
        let mut w = Wire::new();
        w.data(C2S, POST).data(C2S, b"0123456789");
        w.inconsistent(C2S, 3, 1, 1).close();
        assert_eq!(w.requests()[0].body.inconsistent_bytes, 0);
        let counts = w.conn.counts;
        assert_eq!(
            (
                counts.inconsistent_retransmissions,
                counts.inconsistent_unattributed
            ),
            (1, 1)
        );
        assert_eq!(w.anomalies().len(), 1);
    }

    #[test]
    fn a_held_response_replays_its_gaps_and_fin_in_order_once_its_request_is_read() {
        let mut w = Wire::new();
        let req = b"GET /sse HTTP/1.1\r\n\r\n";
        let n = req.len() as u64;
        w.acking(
            S2C,
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
            n,
        )
        .acking(S2C, b"data: 1\n\n", n)
        .gap(S2C, 5)
        .acking(S2C, b"data: 3\n\n", n)
        .fin(S2C);
        assert!(w.events.0.is_empty(), "all held");
        assert_eq!(w.conn.held_bytes(), 52 + 9 + 9);
        // The request in two pieces: the response goes on once it is read.
        w.data(C2S, &req[..10]);
        assert!(w.events.0.is_empty());
        w.data(C2S, &req[10..]);
        let ends = w.ends();
        let [end] = ends[..] else {
            panic!("{:?}", w.events.0)
        };
        assert_eq!(end.exchange.index, 0);
        assert_eq!(end.outcome, Outcome::Gap);
        assert_eq!(end.closed_by, Some(S2C));
        // The event after the gap cannot be told from the tail of a cut one: skipped.
        assert_eq!(end.sse.as_ref().unwrap().events, 1);
        assert_eq!(w.requests()[0].exchange.index, 0);
        let c = w.conn.counts;
        assert_eq!(
            (c.responses_held, c.held_paired, c.held_released_early),
            (1, 1, 0)
        );
        assert_eq!(w.conn.held_bytes(), 0);
    }

    #[test]
    fn a_head_cut_by_the_snap_length_keeps_its_whole_lines() {
        let mut w = Wire::new();
        w.data(C2S, b"GET /mcp HTTP/1.1\r\n\r\n");
        w.data(
            S2C,
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Sess",
        );
        let m = w.tick();
        w.conn.gap(S2C, 300, true, m, &mut w.events);
        let [head] = w.heads()[..] else {
            panic!("the head that survives: {:?}", w.events.0)
        };
        assert_eq!(head.status, 200);
        assert!(!head.head_complete && head.event_stream);
        assert_eq!(head.headers.0.len(), 1, "the cut line is not a header");
        let [end] = w.ends()[..] else {
            panic!("{:?}", w.events.0)
        };
        assert_eq!(end.outcome, Outcome::Gap);
        assert!(end.body.unknown);
        assert_eq!(
            w.anomalies(),
            [
                "response head cut by a 300-byte capture gap (cut by the capture's snap length): \
              its start line and 1 whole header lines kept"
            ]
        );
        let c = w.conn.counts;
        assert_eq!((c.heads_cut, c.heads_cut_by_snaplen), (1, 1));
    }
}
