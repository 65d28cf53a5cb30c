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
//!
//! The parts, one concern each:
//! - here: the [`Connection`], its two [`Half`]s, and the loop that hands each byte to the state
//!   of the half it belongs to;
//! - `handoff`: what the first bytes say the connection speaks (TLS, HTTP/2 by its preface),
//!   and the switch to HTTP/2 after a 101 to `Upgrade: h2c`;
//! - `start_line`: the search for the next start line (between messages, after a gap, in bytes
//!   that are not HTTP);
//! - `heads`: a head's bytes up to its blank line, within the size limit;
//! - `parse`: a whole head parsed into a request or a response, its fields kept within limits;
//! - `framing`: which framing a head gives its body (RFC 9112 §6.3), and the body read by it;
//! - `message`: a message in progress, and the event that reports it when it ends;
//! - `pairing`: which request a response answers (RFC 9112 §9.3);
//! - `hold`: responses held until the requests their ACK covers are parsed;
//! - `midstream`: the event stream found on a connection picked up mid-stream;
//! - `inconsistent`: retransmissions that disagreed, tied to the message they touched;
//! - `gap`: bytes missing from the capture;
//! - `end`: FINs and the end of the connection.

mod aside;
mod end;
mod framing;
mod gap;
mod handoff;
mod heads;
mod hold;
mod inconsistent;
mod message;
mod midstream;
mod pairing;
mod parse;
mod start_line;

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::h2::H2Connection;
use super::sse::SseEvent;
use super::{ConnKind, HttpEvent, HttpSink};
use mcpf_model::Mark;
use mcpf_model::{Anomaly, AnomalyKind, ConnId, Direction};

use hold::{Held, Hold};
use inconsistent::{EndedMessages, FutureInconsistent};
use message::Message;
use midstream::SseProbe;
use pairing::Pending;

pub(crate) use framing::MAX_BODY;
pub(crate) use handoff::{PREFACE_START, is_tls_record_start};
pub(crate) use heads::{MAX_HEADERS, never_dropped};
pub(crate) use hold::MAX_HELD;

/// Where a direction's parser is.
#[derive(Debug)]
enum State {
    /// Between messages, or looking for one after a gap: lines are tested for a start line.
    Start,
    Head,
    Body,
    /// Not HTTP (any more): bytes are counted and dropped.
    Opaque,
}

/// One direction of the connection: its parser's state, the head or message it is reading.
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
    /// Boxed: a direction is between messages much of the time (a request half almost always,
    /// once its request is read), and an open connection should not carry a message's 744
    /// bytes per direction for nothing.
    msg: Option<Box<Message>>,
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
    /// The head being read passed [`MAX_HEAD`](heads::MAX_HEAD): the bytes of header lines past
    /// it dropped so far (the lines before, and the fields never dropped, are kept in `head`),
    /// and the line being read when the last chunk ended (at most 8 KiB of it).
    head_dropped: Option<u64>,
    head_tail: Vec<u8>,
}

impl Half {
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
    pub(crate) header_fields_past_bytes: u64,
    pub(crate) bodies_past_conn_budget: u64,
    /// Not a count: what the connection's bodies may still decode, carried with its counts
    /// because every body's decoder reaches both.
    pub(crate) decoding: crate::body::Credit,
    /// Not a count either: SSE events the packet being read yielded so far.
    pub(crate) events_in_packet: u64,
    pub(crate) sse_streams_cut_in_packet: u64,
    pub(crate) json_bodies_shrunk: u64,
    pub(crate) other_type_bodies_cut: u64,
    pub(crate) h2_streams: u64,
    pub(crate) h2_streams_reset: u64,
    pub(crate) h2_goaways: u64,
    pub(crate) h2_flow_stalls: u64,
    pub(crate) h2_flow_stall_ns: u64,
    pub(crate) h2_flow_stalled_at_end: u64,
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
    /// SSE events a body's bytes completed, handed to the sink at once: empty between calls,
    /// and its buffer the stage's, lent for the call (see `lend_events`).
    out_events: Vec<SseEvent>,
    /// Per direction (`ClientToServer` first), the stream offset of the first byte the parser
    /// has not consumed (the offsets the capture stage numbers bytes with, gaps included) ...
    pos: [u64; 2],
    /// ... and what the step in progress consumed past it before ending a message, so that a
    /// message knows the offset it ended at.
    step_used: [u64; 2],
    future_inconsistent: Vec<FutureInconsistent>,
    /// The last messages that ended, per direction: where a retransmission that disagrees with
    /// bytes already parsed lands.
    ended: [EndedMessages; 2],
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
    /// Set aside by the early classification: see `aside`.
    aside: bool,
}

/// The index of a direction in per-direction arrays.
fn di(dir: Direction) -> usize {
    match dir {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}

impl Connection {
    /// Takes `spare`, an empty buffer of the stage, for the events of the call to come, unless
    /// it holds events still; returns whether it took it. A buffer per call costs an allocation
    /// per event, and one per connection its room for all its life (four events' room, 544
    /// bytes, for every connection that ever carried an event stream).
    #[inline]
    pub(crate) fn lend_events(&mut self, spare: &mut Vec<SseEvent>) -> bool {
        let lent = self.out_events.is_empty();
        if lent {
            std::mem::swap(&mut self.out_events, spare);
        }
        lent
    }

    /// Gives the buffer [`Connection::lend_events`] lent back, once the call handed its events
    /// on (as it does: it stays with them otherwise).
    #[inline]
    pub(crate) fn return_events(&mut self, spare: &mut Vec<SseEvent>, lent: bool) {
        if lent && self.out_events.is_empty() {
            std::mem::swap(&mut self.out_events, spare);
        }
    }

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
            ended: Default::default(),
            counts: Counts::default(),
            hold: None,
            hold_given_up: 0,
            sse_probe: midstream.then(|| Box::new(SseProbe::new())),
            h2: None,
            h2c_settings: None,
            aside: false,
        }
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

    /// Reports an anomaly of `kind` on this connection (`detail`: its sentence).
    fn anomaly(
        &mut self,
        (kind, detail): (AnomalyKind, String),
        dir: Direction,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        self.anomalies += 1;
        sink.on_http(HttpEvent::Anomaly(Anomaly {
            kind,
            conn: self.id,
            dir,
            mark,
            detail,
        }));
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
        self.counts.events_in_packet = 0;
        if let Some(h2) = self.h2.as_mut() {
            return h2.data(dir, data, mark, sink);
        }
        if self.kind.is_none() && dir == Direction::ServerToClient {
            self.keep_early_server_bytes(data, mark);
        }
        if self.kind.is_none()
            && dir == Direction::ClientToServer
            && self.probe_first_bytes(data, mark, sink)
        {
            // HTTP/2: its reader took these bytes.
            return;
        }
        self.forget_early_server_bytes();
        self.feed(dir, data, mark, acked, sink);
        if dir == Direction::ClientToServer {
            self.release_if_answered(sink);
        }
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
            if dir == Direction::ServerToClient && self.probe_due() {
                self.search_sse(false, sink);
            }
        }
        self.step_used[di(dir)] = 0;
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

#[cfg(test)]
pub(crate) mod tests;
