#![forbid(unsafe_code)]
//! The HTTP stage: reassembled TCP streams in, HTTP/1.1 messages and Server-Sent Events out,
//! each with the capture marks that prove it.
//!
//! HTTP is recognised by content on any port. Each connection gets a sans-IO parser fed the
//! capture layer's data, gap and close events; it emits [`HttpEvent`]s as soon as they are known
//! (a request when complete, a response head when its headers are, every SSE event when its
//! blank line arrives), so long-lived streams never need buffering.
//!
//! What is in it:
//! - [`Stage`]: the [`TcpSink`] that keeps one parser per connection and hands [`HttpEvent`]s
//!   to an [`HttpSink`]; [`HttpStats`] counts what the connections carried (HTTP, TLS, HTTP/2,
//!   other).
//! - The events and what they carry: [`Request`], [`ResponseHead`], [`ResponseEnd`], [`Body`],
//!   [`Headers`], [`Outcome`], [`ExchangeId`].
//! - [`sse`]: the Server-Sent Events parser, which can be used on its own (its module shows how).
//! - [`exchange`]: gathers the events into whole exchanges, for the `http` view and the tests.
//!
//! Inside, and not public: the start-line search and head parsing (with `httparse`), body
//! framing (RFC 9112: `Content-Length`, chunked, until close), content decoding (gzip, deflate,
//! brotli) and the in-order pairing of responses with requests.
//!
//! What TCP knows is used where capture order or capture loss would mislead: a response whose
//! segment acknowledges request bytes not parsed yet waits for them (bounded) before it is
//! paired; a connection picked up mid-stream is resynchronised on Server-Sent Events framing
//! when its server bytes start inside an event stream; a head cut by a gap (the snap length,
//! often) keeps its start line and whole header lines; a retransmission that disagreed with the
//! first copy marks the message it touched ([`Body::inconsistent_bytes`]). Each is counted in
//! [`HttpStats`] and reported as an [`HttpEvent::Anomaly`] where a reader should know.
//!
//! What it never does: know anything of JSON-RPC or MCP. Bodies and SSE data are handed on as
//! decoded bytes and text; the MCP stage reads them. Nor does it see packets: it knows the bytes,
//! gaps and closes that `mcpf-capture` reassembled, and HAR files and logs reach the same events
//! through `mcpf-ingest`.

mod body;
mod budget;
mod conn;
pub mod exchange;
mod h2;
pub use h2::HTTP2_VERSION;
mod held;
mod payload;
mod resync;
mod shrink;
pub mod sniff;
pub mod sse;

use rustc_hash::FxHashMap as HashMap;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use mcpf_capture::tcp::{CloseReason, ConnSummary, TcpEvent, TcpSink};
use mcpf_model::Mark;
use mcpf_model::{Anomaly, AnomalyKind, ConnId, Direction};

use conn::Connection;

/// An anomaly before its connection and frame are attached: its kind and its sentence.
type Problem = (AnomalyKind, String);

/// Decoding windows all brotli bodies in progress may hold together, in bytes.
pub const MAX_BROTLI_WINDOWS_HELD: u64 = budget::MAX_WINDOWS_HELD;

/// Bytes of bodies and events all messages in progress may hold together.
pub const MAX_MESSAGE_BYTES_HELD: u64 = budget::MAX_BYTES_HELD;
/// Decoded bytes of names and values an HTTP/2 header block keeps, ...
pub const MAX_H2_BLOCK_FIELD_BYTES: usize = h2::MAX_BLOCK_FIELD_BYTES;
/// ... what it keeps once a direction of its connection kept [`MAX_H2_CONN_FIELD_BYTES`].
pub const LEAST_H2_BLOCK_FIELD_BYTES: usize = h2::LEAST_BLOCK_FIELD_BYTES;
pub const MAX_H2_CONN_FIELD_BYTES: u64 = h2::MAX_CONN_FIELD_BYTES;
/// Decoded body bytes a connection's bodies may take at any ratio, then per compressed byte.
pub const CONN_DECODING_START: u64 = body::CONN_BUDGET.start;
pub const CONN_DECODING_RATIO: u64 = body::CONN_BUDGET.ratio;
/// SSE events one packet may yield over the messages of its connection.
pub const MAX_SSE_EVENTS_PER_PACKET: u64 = payload::MAX_EVENTS_PER_PACKET;
/// See [`payload::OTHER_TYPE_WINDOW`].
pub const OTHER_TYPE_WINDOW: usize = payload::OTHER_TYPE_WINDOW;

/// Header fields in their original order and case; lookups ignore case.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// The bytes of the names and values.
    pub fn bytes(&self) -> usize {
        self.0.iter().map(|(n, v)| n.len() + v.len()).sum()
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Whether a comma-separated header lists `token` (case-insensitive), e.g. `Connection: close`.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.get_all(name)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// The media type of `Content-Type`, lower-cased, without parameters.
    pub fn media_type(&self) -> Option<String> {
        self.media_type_as_sent().map(str::to_ascii_lowercase)
    }

    /// [`Self::media_type`] in the case it was sent in, for tests that ignore case (and need no
    /// copy).
    pub(crate) fn media_type_as_sent(&self) -> Option<&str> {
        self.get("content-type")
            .map(|v| v.split(';').next().unwrap_or("").trim())
    }

    /// Whether the media type is `t` (lower case).
    pub(crate) fn media_type_is(&self, t: &str) -> bool {
        self.media_type_as_sent()
            .is_some_and(|m| m.eq_ignore_ascii_case(t))
    }
}

/// An exchange on a connection: the `index`-th request (from 0) and the response paired with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExchangeId {
    pub conn: ConnId,
    pub index: u32,
}

impl std::fmt::Display for ExchangeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tcp{}#{}", self.conn, self.index + 1)
    }
}

/// How a message ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Complete,
    /// Still being sent when the capture ended (an open SSE stream, typically).
    CutByCaptureEnd,
    /// The connection was closed (FIN) before the message was complete.
    ClosedEarly,
    /// The connection was reset.
    Reset,
    /// The HTTP/2 stream was reset (RST_STREAM): the connection and its other streams went on.
    /// `closed_by` says which side reset it.
    StreamReset,
    /// The server refused the HTTP/2 stream: it was above the last stream its GOAWAY would
    /// process, or reset with REFUSED_STREAM. Never processed (RFC 9113 §8.7): a client may
    /// retry it safely.
    Refused,
    /// Bytes of it are missing from the capture.
    Gap,
    /// The connection was evicted as idle.
    Idle,
    /// The connection was set aside as not MCP by the early classification before the message
    /// ended: the rest of it was not examined.
    NotExamined,
}

/// A message body as captured: decoded when the content coding is known.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Body {
    /// Decoded bytes (not kept for event streams, whose events are reported one by one).
    #[serde(with = "mcpf_model::wire_bytes")]
    pub data: Vec<u8>,
    /// Bytes of the body on the wire (after de-chunking, before content decoding).
    pub wire_bytes: u64,
    pub decoded_bytes: u64,
    /// `data` stopped at the size limit.
    pub truncated: bool,
    pub content_encoding: Option<String>,
    pub decode_error: Option<String>,
    pub chunked: bool,
    /// The source did not record this body (a HAR hole, an access log): unknown, not empty.
    pub unknown: bool,
    /// Its content coding could not be undone, wholly or in part (a coding not decoded, a
    /// corrupt or cut stream, the decoding budget, the brotli windows held): what it carried is
    /// not all known, so nothing is concluded from what it seems to lack.
    pub not_decoded: bool,
    /// Bytes of the body missing from the capture.
    pub gap_bytes: u64,
    /// Of `gap_bytes`, the bytes the capture's snap length cut from frames it did capture: not
    /// lost on the wire or by the capturing host, only not recorded.
    pub snaplen_bytes: u64,
    /// Bytes of this message that TCP saw retransmitted with different content (counted from
    /// the first to the last differing byte of each such retransmission). The message was
    /// parsed from the first copy (`mcpf_capture::tcp::TcpEvent::Inconsistent`, reported as an
    /// [`HttpEvent::Anomaly`] naming both frames): what rests on these bytes rests on one of two
    /// versions the wire carried, so findings built on it deserve less confidence. 0 for inputs
    /// other than captures.
    pub inconsistent_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    pub exchange: ExchangeId,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub method: String,
    pub target: String,
    /// HTTP minor version (1 for HTTP/1.1), or [`HTTP2_VERSION`] for an HTTP/2 stream.
    pub version: u8,
    pub headers: Headers,
    pub body: Body,
    pub first: Mark,
    pub last: Mark,
    pub outcome: Outcome,
    /// The whole head was captured. `false`: a capture gap (often the snap length: see
    /// [`HttpStats::heads_cut_by_snaplen`]) cut it, and only its request line and the header
    /// lines before the cut are here; the body is then unknown (`body.unknown`) and the outcome
    /// [`Outcome::Gap`]. Sources other than captures record whole heads (`true`), whatever
    /// headers they keep.
    pub head_complete: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResponseHead {
    pub exchange: ExchangeId,
    pub status: u16,
    pub reason: String,
    /// As [`Request::version`].
    pub version: u8,
    pub headers: Headers,
    /// Interim (1xx) statuses received before this one.
    pub interim: Vec<u16>,
    pub first: Mark,
    /// The body is an event stream (`Content-Type: text/event-stream`).
    pub event_stream: bool,
    /// The whole head was captured. `false`: a capture gap cut it after its status line, and
    /// only the header lines before the cut are here (a header not here may have been sent);
    /// its [`ResponseEnd`] follows at once, with an unknown body and [`Outcome::Gap`].
    pub head_complete: bool,
    /// The upstream (server replica) a proxy's log says served it (nginx `$upstream_addr`,
    /// Envoy `%UPSTREAM_HOST%`, HAProxy's server, Traefik's `ServiceAddr`); None from the wire.
    pub upstream: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResponseEnd {
    pub exchange: ExchangeId,
    /// The body (events are reported separately for event streams).
    pub body: Body,
    pub last: Mark,
    pub outcome: Outcome,
    /// Who ended the connection when the response did not complete by its own framing.
    pub closed_by: Option<Direction>,
    pub sse: Option<sse::SseStats>,
    /// The source did not record when the response ended (a HAR entry whose timings stop at
    /// its head): `last` is only the last moment it does record.
    pub when_unknown: bool,
}

/// What the HTTP stage reports, in the order it learns it. Events own their data, so a sink
/// may keep them, or hand them to another thread, without a copy.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpEvent {
    Request(Box<Request>),
    ResponseHead(Box<ResponseHead>),
    /// Inline, not boxed: most events are SSE events, and a box each would be an allocation
    /// freed on the analysis thread.
    SseEvent {
        exchange: ExchangeId,
        event: sse::SseEvent,
    },
    ResponseEnd(Box<ResponseEnd>),
    /// A request the connection never answered.
    NoResponse {
        exchange: ExchangeId,
        outcome: Outcome,
        closed_by: Option<Direction>,
        mark: Mark,
        /// The source did not record whether a response came (a HAR entry without one): the
        /// exchange's outcome is unknown, not "no answer".
        unknown: bool,
        /// The source did not record when it ended (a HAR entry whose timings stop at sending):
        /// `mark` is only when the request was sent.
        when_unknown: bool,
        /// Bytes missing from the capture where the response would have been (the server's
        /// HTTP/2 frames became unreadable at a gap of this many bytes), and of them the bytes
        /// the snap length cut; 0 elsewhere.
        gap_bytes: u64,
        snaplen_bytes: u64,
    },
    /// Something about the bytes that is worth a line in the report.
    Anomaly(Anomaly),
    /// A retransmission that disagreed with the first copy of `bytes` bytes of a message of
    /// `exchange` came after the message ended (its anomaly names both frames): what rests on
    /// that message rests on one of two versions of it.
    LateInconsistency {
        exchange: ExchangeId,
        dir: Direction,
        bytes: u64,
    },
    /// A connection began (its endpoints, for responses whose request was never seen).
    ConnectionStart {
        conn: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        mark: Mark,
    },
    /// The connection ended; `kind` says whether any HTTP was found on it.
    ConnectionEnd {
        conn: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        kind: ConnKind,
        mark: Mark,
        /// Frames that carried the connection and their captured bytes (0 for HAR files and
        /// logs): what the input's accounting moves to `not_http` or `not_mcp` when the
        /// connection carried neither.
        packets: u64,
        frame_bytes: u64,
    },
}

impl HttpEvent {
    /// The bytes of a request's body and headers.
    pub fn request_bytes(r: &Request) -> usize {
        r.body.data.len() + r.headers.bytes()
    }

    /// The bytes of bodies, events and headers an event carries: what holding it costs.
    pub fn payload_bytes(&self) -> usize {
        match self {
            HttpEvent::Request(r) => Self::request_bytes(r),
            HttpEvent::ResponseHead(h) => h.headers.bytes(),
            HttpEvent::SseEvent { event, .. } => {
                event.data.len() + event.id.as_ref().map_or(0, |i| i.len())
            }
            HttpEvent::ResponseEnd(e) => e.body.data.len(),
            HttpEvent::Anomaly(a) => a.detail.len(),
            _ => 0,
        }
    }
}

/// The next stage of the HTTP events.
pub trait HttpSink {
    fn on_http(&mut self, event: HttpEvent);
}

impl<F: FnMut(HttpEvent)> HttpSink for F {
    fn on_http(&mut self, event: HttpEvent) {
        self(event)
    }
}

/// What a TCP connection carried, judged from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnKind {
    Http,
    Tls,
    Http2,
    /// No data at all.
    Empty,
    Other,
}

/// Counters the HTTP stage keeps for the report.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HttpStats {
    pub connections_http: u64,
    pub connections_tls: u64,
    pub connections_http2: u64,
    pub connections_other: u64,
    pub connections_empty: u64,
    /// Server ports of TLS connections (for the hint to capture plaintext).
    pub tls_ports: Vec<u16>,
    /// Server ports that carried HTTP.
    pub http_ports: Vec<u16>,
    /// Bytes skipped while looking for the next message after a gap or on a non-HTTP stream.
    pub skipped_bytes: u64,
    pub anomalies: u64,
    /// Retransmissions TCP saw disagree with the first copy (each also an anomaly).
    // Counters the JSON report does not carry (its schema lists the keys it does, through its
    // own view of these stats): the report decides how to show them. Record files carry them
    // all.
    pub inconsistent_retransmissions: u64,
    /// Bytes marked as [`Body::inconsistent_bytes`] over all messages.
    pub inconsistent_bytes: u64,
    /// Inconsistent retransmissions of bytes no message used (skipped bytes, or a message
    /// already reported when the retransmission came).
    pub inconsistent_unattributed: u64,
    /// Responses captured before the request they answer (their ACK covered client bytes not
    /// parsed yet): held until those bytes were, then paired in order (RFC 9112 §9.3).
    pub responses_held: u64,
    /// Of those, responses paired with a request once it was parsed (the rest answered requests
    /// lost from the capture: orphans).
    pub held_paired: u64,
    /// Holds given up before the acknowledged bytes were parsed: too long (2 s of capture time),
    /// too large (256 KiB, or 16 MiB over all connections), or the connection ended.
    pub held_released_early: u64,
    /// Responses picked up in the middle of their body on connections captured mid-stream (no
    /// request, no head), read from the first point their bytes make a whole Server-Sent Event
    /// (after a chunk-size line, or at a field line): reported as exchanges with neither request
    /// nor head, whose first event is `after_gap`, with an anomaly giving the bytes skipped.
    pub midstream_resyncs: u64,
    /// Request and response heads cut by a capture gap of which the start line survived:
    /// reported with `head_complete: false` and what header lines survived whole.
    pub heads_cut: u64,
    /// Of those, heads whose gap was the capture's snap length cutting the frame
    /// (`tcpdump -s`): the traffic was captured, its bytes were not kept (capture with `-s 0`).
    pub heads_cut_by_snaplen: u64,
    /// Compressed bodies whose decoding stopped at the decoding budget (`body::BUDGET`: past
    /// 1 MiB decoded, more than 1024 bytes per compressed byte: a decompression bomb), each
    /// reported truncated with an anomaly.
    pub bodies_not_decoded_past_budget: u64,
    /// Brotli bodies not decoded because the bodies in progress already held the windows
    /// allowed together (`body::MAX_WINDOWS_HELD`), each an anomaly.
    pub brotli_bodies_refused: u64,
    /// Messages whose body or event was kept shorter than its own cap because the messages in
    /// progress held all the bytes allowed together (`budget::MAX_BYTES_HELD`), each an anomaly.
    pub messages_cut_by_held: u64,
    /// Header fields dropped past the first 128 of a head (each such head an anomaly; the
    /// message is reported with the rest).
    pub headers_dropped: u64,
    /// HTTP/2 header fields dropped past the decoded bytes a header block keeps, or repeated
    /// pseudo-headers (each such block an anomaly).
    pub header_fields_past_bytes: u64,
    /// Compressed bodies whose decoding stopped at their connection's budget of decoded bytes
    /// (`body::CONN_BUDGET`), each reported truncated with an anomaly.
    pub bodies_past_conn_budget: u64,
    /// Event streams no longer read after one packet yielded more events than are handed on
    /// (`payload::MAX_EVENTS_PER_PACKET`), each an anomaly.
    pub sse_streams_cut_in_packet: u64,
    /// JSON bodies over 16 MiB kept with their strings cut to 64 KiB, so that their envelope is
    /// read whole (each an anomaly; SSE lines over 16 MiB are kept the same way, their events
    /// `truncated` and counted in [`crate::sse::SseStats::oversized_lines`]).
    pub json_bodies_shrunk: u64,
    /// Bodies of a media type that cannot carry MCP (not JSON, not an event stream, not text)
    /// kept to their first 64 KiB, the rest counted and not copied.
    pub other_type_bodies_cut: u64,
    /// HTTP/2 streams the client opened (each an exchange), ...
    pub h2_streams: u64,
    /// ... of them ended by RST_STREAM or left unprocessed by a GOAWAY, ...
    pub h2_streams_reset: u64,
    /// ... GOAWAY frames, ...
    pub h2_goaways: u64,
    /// ... waits of a sender that had used all its flow-control window until the other side
    /// granted more, and how long they took in all, ...
    pub h2_flow_stalls: u64,
    pub h2_flow_stall_ns: u64,
    /// ... and streams that ended, or were cut by the capture's end, while their sender still
    /// waited (each an anomaly).
    pub h2_flow_stalled_at_end: u64,
    /// Connections the early classification set aside as not MCP (filled by the engine, which
    /// classifies; not by the stage).
    pub set_aside: sniff::SetAside,
}

impl HttpStats {
    /// Adds what another stage counted (a shard of the same run). Every field is named, so a new
    /// counter cannot be left out.
    pub fn merge(&mut self, other: &HttpStats) {
        let HttpStats {
            connections_http,
            connections_tls,
            connections_http2,
            connections_other,
            connections_empty,
            tls_ports,
            http_ports,
            skipped_bytes,
            anomalies,
            inconsistent_retransmissions,
            inconsistent_bytes,
            inconsistent_unattributed,
            responses_held,
            held_paired,
            held_released_early,
            midstream_resyncs,
            heads_cut,
            heads_cut_by_snaplen,
            bodies_not_decoded_past_budget,
            brotli_bodies_refused,
            messages_cut_by_held,
            headers_dropped,
            header_fields_past_bytes,
            bodies_past_conn_budget,
            sse_streams_cut_in_packet,
            json_bodies_shrunk,
            other_type_bodies_cut,
            h2_streams,
            h2_streams_reset,
            h2_goaways,
            h2_flow_stalls,
            h2_flow_stall_ns,
            h2_flow_stalled_at_end,
            set_aside,
        } = other;
        self.set_aside.merge(set_aside);
        for (mine, theirs) in [
            (&mut self.connections_http, connections_http),
            (&mut self.connections_tls, connections_tls),
            (&mut self.connections_http2, connections_http2),
            (&mut self.connections_other, connections_other),
            (&mut self.connections_empty, connections_empty),
            (&mut self.skipped_bytes, skipped_bytes),
            (&mut self.anomalies, anomalies),
            (
                &mut self.inconsistent_retransmissions,
                inconsistent_retransmissions,
            ),
            (&mut self.inconsistent_bytes, inconsistent_bytes),
            (
                &mut self.inconsistent_unattributed,
                inconsistent_unattributed,
            ),
            (&mut self.responses_held, responses_held),
            (&mut self.held_paired, held_paired),
            (&mut self.held_released_early, held_released_early),
            (&mut self.midstream_resyncs, midstream_resyncs),
            (&mut self.heads_cut, heads_cut),
            (&mut self.heads_cut_by_snaplen, heads_cut_by_snaplen),
            (
                &mut self.bodies_not_decoded_past_budget,
                bodies_not_decoded_past_budget,
            ),
            (&mut self.brotli_bodies_refused, brotli_bodies_refused),
            (&mut self.messages_cut_by_held, messages_cut_by_held),
            (&mut self.headers_dropped, headers_dropped),
            (&mut self.header_fields_past_bytes, header_fields_past_bytes),
            (&mut self.bodies_past_conn_budget, bodies_past_conn_budget),
            (
                &mut self.sse_streams_cut_in_packet,
                sse_streams_cut_in_packet,
            ),
            (&mut self.json_bodies_shrunk, json_bodies_shrunk),
            (&mut self.other_type_bodies_cut, other_type_bodies_cut),
            (&mut self.h2_streams, h2_streams),
            (&mut self.h2_streams_reset, h2_streams_reset),
            (&mut self.h2_goaways, h2_goaways),
            (&mut self.h2_flow_stalls, h2_flow_stalls),
            (&mut self.h2_flow_stall_ns, h2_flow_stall_ns),
            (&mut self.h2_flow_stalled_at_end, h2_flow_stalled_at_end),
        ] {
            *mine += theirs;
        }
        for &p in tls_ports {
            note_port(&mut self.tls_ports, p);
        }
        for &p in http_ports {
            note_port(&mut self.http_ports, p);
        }
    }

    /// What one connection's parsers counted.
    fn add(&mut self, n: &conn::Counts) {
        self.inconsistent_retransmissions += n.inconsistent_retransmissions;
        self.inconsistent_bytes += n.inconsistent_bytes;
        self.inconsistent_unattributed += n.inconsistent_unattributed;
        self.responses_held += n.responses_held;
        self.held_paired += n.held_paired;
        self.held_released_early += n.held_released_early;
        self.midstream_resyncs += n.midstream_resyncs;
        self.heads_cut += n.heads_cut;
        self.heads_cut_by_snaplen += n.heads_cut_by_snaplen;
        self.bodies_not_decoded_past_budget += n.bodies_not_decoded_past_budget;
        self.brotli_bodies_refused += n.brotli_bodies_refused;
        self.messages_cut_by_held += n.messages_cut_by_held;
        self.headers_dropped += n.headers_dropped;
        self.header_fields_past_bytes += n.header_fields_past_bytes;
        self.bodies_past_conn_budget += n.bodies_past_conn_budget;
        self.sse_streams_cut_in_packet += n.sse_streams_cut_in_packet;
        self.json_bodies_shrunk += n.json_bodies_shrunk;
        self.other_type_bodies_cut += n.other_type_bodies_cut;
        self.h2_streams += n.h2_streams;
        self.h2_streams_reset += n.h2_streams_reset;
        self.h2_goaways += n.h2_goaways;
        self.h2_flow_stalls += n.h2_flow_stalls;
        self.h2_flow_stall_ns += n.h2_flow_stall_ns;
        self.h2_flow_stalled_at_end += n.h2_flow_stalled_at_end;
    }
}

/// The HTTP stage: a [`TcpSink`] that keeps one parser per connection and forwards
/// [`HttpEvent`]s to the next stage.
pub struct Stage<S: HttpSink> {
    /// Boxed: the table grows by doubling, and a parser's state is large.
    connections: HashMap<ConnId, Box<Connection>>,
    pub sink: S,
    pub stats: HttpStats,
    /// Server bytes held over all connections for responses whose requests are not parsed yet.
    held: usize,
    /// Past it, the connection that holds more gives its hold up.
    max_held: usize,
    /// What the messages in progress of this stage's connections hold, and may hold.
    budget: budget::Budget,
    /// An empty buffer for SSE events, lent to the connection an event is handed to.
    events: Vec<sse::SseEvent>,
}

/// Server bytes held over all connections for responses whose requests are not parsed yet: past
/// it, the connection that holds more gives its hold up (64 connections' worth).
const MAX_HELD_TOTAL: usize = 64 * conn::MAX_HELD;

impl<S: HttpSink> Stage<S> {
    pub fn new(sink: S) -> Self {
        Stage {
            connections: HashMap::default(),
            sink,
            stats: HttpStats::default(),
            held: 0,
            max_held: MAX_HELD_TOTAL,
            budget: budget::Budget::whole(),
            events: Vec::new(),
        }
    }

    /// A stage for one of `parts` shards of a run's connections: each cap on what connections
    /// hold together is divided among the shards, so the run's memory stays what one stage's
    /// would be, and each shard's decisions depend on its own connections only.
    pub fn shard(sink: S, parts: u64) -> Self {
        let parts_usize = usize::try_from(parts.max(1)).unwrap_or(usize::MAX);
        Stage {
            max_held: (MAX_HELD_TOTAL / parts_usize).max(conn::MAX_HELD),
            budget: budget::Budget::share(parts),
            ..Stage::new(sink)
        }
    }

    /// A connection ended: its parser ends what is in progress, and its kind is counted.
    fn closed(&mut self, summary: &ConnSummary) {
        let Some(mut c) = self.connections.remove(&summary.conn) else {
            return;
        };
        self.held -= c.held_bytes().min(self.held);
        let (outcome, by) = match summary.close {
            CloseReason::CaptureEnd => (Outcome::CutByCaptureEnd, None),
            CloseReason::Reset { by } => (Outcome::Reset, Some(by)),
            // Both leave what was open cut: the connection was forgotten, not ended.
            CloseReason::Idle | CloseReason::Evicted => (Outcome::Idle, None),
            CloseReason::Fin | CloseReason::Superseded => (Outcome::ClosedEarly, None),
        };
        // What a connection set aside had in progress was not examined, not cut.
        let (outcome, by) = match c.is_aside() {
            true => (Outcome::NotExamined, None),
            false => (outcome, by),
        };
        c.close(outcome, by, summary.end, &mut self.sink);
        let kind = c.kind();
        let port = summary.server.port();
        match kind {
            ConnKind::Http => {
                self.stats.connections_http += 1;
                note_port(&mut self.stats.http_ports, port);
            }
            ConnKind::Tls => {
                self.stats.connections_tls += 1;
                note_port(&mut self.stats.tls_ports, port);
            }
            ConnKind::Http2 => {
                self.stats.connections_http2 += 1;
                note_port(&mut self.stats.http_ports, port);
            }
            ConnKind::Empty => self.stats.connections_empty += 1,
            ConnKind::Other => self.stats.connections_other += 1,
        }
        self.stats.skipped_bytes += c.skipped_bytes();
        self.stats.anomalies += c.anomalies();
        for n in c.counts() {
            self.stats.add(n);
        }
        self.sink.on_http(HttpEvent::ConnectionEnd {
            conn: summary.conn,
            client: summary.client,
            server: summary.server,
            kind,
            mark: summary.end,
            packets: summary.packets,
            frame_bytes: summary.frame_bytes,
        });
    }
}

impl<S: HttpSink> Stage<S> {
    /// Hands an event to its connection's parser, keeping the count of server bytes held over
    /// all connections: past the stage's share of [`MAX_HELD_TOTAL`], this connection's hold is given up on (which
    /// it counts).
    #[inline]
    fn on_conn(&mut self, conn: ConnId, event: impl FnOnce(&mut Connection, &mut S)) {
        let Some(c) = self.connections.get_mut(&conn) else {
            return;
        };
        let before = c.held_bytes();
        let lent = c.lend_events(&mut self.events);
        event(c, &mut self.sink);
        c.return_events(&mut self.events, lent);
        self.held = (self.held + c.held_bytes()).saturating_sub(before);
        if self.held > self.max_held {
            self.held -= c.held_bytes().min(self.held);
            c.release_hold(true, &mut self.sink);
        }
    }
}

fn note_port(ports: &mut Vec<u16>, port: u16) {
    if !ports.contains(&port) && ports.len() < 64 {
        ports.push(port);
        ports.sort_unstable();
    }
}

impl<S: HttpSink> TcpSink for Stage<S> {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        let outer = budget::swap(self.budget);
        self.dispatch(event);
        self.budget = budget::swap(outer);
    }
}

impl<S: HttpSink> Stage<S> {
    fn dispatch(&mut self, event: TcpEvent<'_>) {
        match event {
            TcpEvent::Opened {
                conn,
                client,
                server,
                mark,
                handshake_seen,
            } => {
                let c = Connection::new(conn, client, server, mark, !handshake_seen);
                self.connections.insert(conn, Box::new(c));
                self.sink.on_http(HttpEvent::ConnectionStart {
                    conn,
                    client,
                    server,
                    mark,
                });
            }
            TcpEvent::Data {
                conn,
                dir,
                data,
                mark,
                acked,
            } => self.on_conn(conn, |c, sink| c.data(dir, data, mark, acked, sink)),
            TcpEvent::Gap {
                conn,
                dir,
                len,
                mark,
                snaplen,
            } => self.on_conn(conn, |c, sink| c.gap(dir, len, snaplen, mark, sink)),
            TcpEvent::Fin { conn, dir, mark } => {
                self.on_conn(conn, |c, sink| c.fin(dir, mark, sink))
            }
            TcpEvent::Inconsistent {
                conn,
                dir,
                offset,
                len,
                first,
                second,
            } => self.on_conn(conn, |c, sink| {
                c.inconsistent(dir, offset, len, first, second, sink)
            }),
            TcpEvent::Closed { summary } => self.closed(summary),
            TcpEvent::SetAside { conn, .. } => self.on_conn(conn, |c, sink| c.set_aside(sink)),
            TcpEvent::Resumed {
                conn,
                skipped,
                mark,
            } => self.on_conn(conn, |c, sink| c.resume(skipped, mark, sink)),
        }
    }
}
