//! The MCP session model: sessions, the HTTP exchanges and SSE streams they are made of, and every
//! event with the transport namespace that minted its ID.
//!
//! Records are compact (IDs, marks, JSON-RPC summaries, a hash of each event's data) so the
//! detectors can reason about every event without payload copies.

use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use crate::jsonrpc::{Message, RequestId};
use crate::payloads::{PayloadRef, Payloads};
use mcpf_http::{ExchangeId, Outcome};
use mcpf_model::Direction;
use mcpf_model::{FrameRef, InputId, Mark};

/// Index of a session in the analysis (shown as `S1`, `S2`, ... from 1).
pub type SessionIdx = usize;
/// Index of a stream within its session (shown as `s1`, `s2`, ...).
pub type StreamIdx = usize;

/// How a stream's SSE body was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StreamTransport {
    /// The response to a POST (Streamable HTTP).
    Post,
    /// A GET on the MCP endpoint: the standalone stream, a fallback channel or a resume.
    Get,
    /// The long-lived GET of the 2024-11-05 HTTP+SSE transport.
    LegacySse,
}

impl StreamTransport {
    pub fn name(self) -> &'static str {
        match self {
            StreamTransport::Post => "post",
            StreamTransport::Get => "get",
            StreamTransport::LegacySse => "legacy-sse",
        }
    }
}

/// The session's transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    StreamableHttp,
    LegacySse,
}

/// Which event sequence minted an event's ID: a stream of this session, or unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Namespace {
    Stream(StreamIdx),
    Unknown,
}

/// How an event on a resume stream was attributed to the namespace that minted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribution {
    /// A fresh event on its own stream.
    Own,
    /// The ID names its stream (`sse:42`, `<uuid>_<ms>_<rand>`).
    IdToken,
    /// The same ID and data were delivered earlier on a known stream.
    IdenticalEvent,
    /// A JSON-RPC response or progress notification of a request whose stream is known.
    RequestStream,
    /// The next integer of one namespace's counter.
    CounterContinuity,
    /// A priming event the server sent on the resume: servers mint it in the stream resumed
    /// (the Python SDK primes every replay connection under the replayed stream's key).
    PrimingOfResume,
    /// A new ID on a resume that replayed no other stream's events: the server goes on in the
    /// stream the resume named.
    ResumedStream,
    Unknown,
}

impl Attribution {
    /// A new event the server minted on the resume in the stream it went on in (its priming
    /// event, a new ID), not one it replayed.
    pub fn went_on(self) -> bool {
        matches!(
            self,
            Attribution::PrimingOfResume | Attribution::ResumedStream
        )
    }

    pub fn describe(self) -> &'static str {
        match self {
            Attribution::Own => "minted by the stream that delivered it",
            Attribution::IdToken => "the event ID names the stream that minted it",
            Attribution::IdenticalEvent => "identical event (same ID and data) delivered earlier",
            Attribution::RequestStream => "it answers a request whose stream is known",
            Attribution::CounterContinuity => "the next integer of that stream's counter",
            Attribution::PrimingOfResume => {
                "a priming event the server sent on the resume, minted in the stream the resume went on in"
            }
            Attribution::ResumedStream => {
                "a new ID on the resume, minted in the stream the resume went on in (the one its replayed events prove, else the one it named)"
            }
            Attribution::Unknown => "no evidence",
        }
    }
}

/// One SSE event as the analysis keeps it: compact, because every event of the sessions in
/// progress is held until its session ends.
#[derive(Clone, Debug)]
pub struct EventRec {
    /// The explicit `id` field, as on the wire.
    pub id: Option<Box<str>>,
    pub mark: Mark,
    /// A hash of the data: it picks the candidates for "the same event"; the bytes decide.
    pub data_hash: u64,
    /// Where the data's bytes are kept, offset + 1 (0: not kept, when the payload file could not
    /// be written); their length is `data_len` (see [`EventRec::data`]).
    pub(crate) data_at: u64,
    pub messages: Box<[Message]>,
    /// What few events carry, apart: a finalized session holds all its events as structs.
    pub rare: Option<Box<RareEvent>>,
    pub index: u32,
    pub data_len: u32,
    /// Filled by namespace attribution.
    pub namespace: Namespace,
    pub attribution: Attribution,
    pub priming: bool,
    pub after_gap: bool,
    pub estimated_time: bool,
}

impl EventRec {
    /// Where the data's bytes are kept (not when the payload file could not be written).
    pub fn data(&self) -> Option<PayloadRef> {
        self.data_at.checked_sub(1).map(|offset| PayloadRef {
            offset,
            len: self.data_len,
        })
    }

    pub(crate) fn set_data(&mut self, at: Option<PayloadRef>) {
        debug_assert!(at.is_none_or(|d| d.len == self.data_len));
        self.data_at = at.map_or(0, |d| d.offset + 1);
    }

    pub fn event_type(&self) -> &str {
        self.rare
            .as_ref()
            .and_then(|r| r.event_type.as_deref())
            .unwrap_or("message")
    }

    /// The legacy transport's `endpoint` event URI.
    pub fn endpoint(&self) -> Option<&str> {
        self.rare.as_ref().and_then(|r| r.endpoint.as_deref())
    }

    pub fn retry(&self) -> Option<u32> {
        self.rare.as_ref().and_then(|r| r.retry)
    }
}

/// The fields of an event that most events lack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RareEvent {
    /// The event type when it is not `message`.
    pub event_type: Option<Box<str>>,
    /// The legacy transport's `endpoint` event URI.
    pub endpoint: Option<Box<str>>,
    pub retry: Option<u32>,
}

impl RareEvent {
    /// Boxed, or nothing when the event has none of them.
    pub fn boxed(
        event_type: Option<Box<str>>,
        endpoint: Option<Box<str>>,
        retry: Option<u32>,
    ) -> Option<Box<RareEvent>> {
        let rare = RareEvent {
            event_type,
            endpoint,
            retry,
        };
        (rare != RareEvent::default()).then(|| Box::new(rare))
    }
}

/// A Last-Event-ID resume attempt (a GET carrying the header).
#[derive(Clone, Debug, Default)]
pub struct Resume {
    pub last_event_id: String,
    /// The stream it continues (the interrupted one whose last delivered ID is `last_event_id`).
    pub continues: Option<StreamIdx>,
    /// Other streams on which the same ID was delivered: proof that IDs collide.
    pub also_seen_on: Vec<StreamIdx>,
}

/// One HTTP exchange of a session; an SSE response body makes it a stream.
#[derive(Clone, Debug)]
pub struct Stream {
    pub idx: StreamIdx,
    pub transport: StreamTransport,
    pub exchange: ExchangeId,
    pub input: InputId,
    pub method: String,
    pub target: String,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub opened: Mark,
    /// Status and first byte of the response, when one came.
    pub status: Option<u16>,
    pub response_mark: Option<Mark>,
    /// The upstream (server replica) a proxy's log says served it.
    pub upstream: Option<String>,
    pub content_type: Option<String>,
    pub event_stream: bool,
    pub ended: Option<Mark>,
    pub outcome: Option<Outcome>,
    pub closed_by: Option<Direction>,
    pub session_id_sent: Option<String>,
    pub session_id_received: Option<String>,
    pub accept_sse: bool,
    pub protocol_version_header: Option<String>,
    /// The request's `Host`: with the server's address and the endpoint, which server it asked
    /// (one address may front several).
    pub host: Option<String>,
    pub transport_mode: Option<String>,
    /// Boxed: few exchanges resume one, and every exchange of a session in progress is held.
    pub resume: Option<Box<Resume>>,
    /// JSON-RPC messages the client sent in the request body.
    pub client_messages: Vec<Message>,
    /// The request body was a JSON array of messages (a batch, legal in 2025-03-26 only).
    pub client_batch: bool,
    /// JSON-RPC messages in a JSON response body, once unpacked for analysis.
    pub response_messages: Vec<Message>,
    /// The same, packed while the session is in progress.
    pub(crate) response_packed: super::packed::PackedMessages,
    /// The events, once unpacked for analysis (see [`Stream::unpack_events`]).
    pub events: Vec<EventRec>,
    /// Events as they arrive, packed until the session is analysed.
    pub(crate) packed: super::packed::PackedEvents,
    /// Events that arrived after its session held as many as the cap allows: counted, not
    /// held, so nothing that rests on their absence is concluded.
    pub events_unheld: u64,
    /// Bytes of this exchange are missing from the capture.
    pub gap: bool,
    /// How many, when known.
    pub gap_bytes: u64,
    /// Of `gap_bytes`, those the capture's snap length cut (recorded short, not lost).
    pub snaplen_bytes: u64,
    /// Bytes of this exchange that TCP saw retransmitted with other content (the first copy
    /// was kept): what rests on them rests on one of two versions.
    pub inconsistent_bytes: u64,
    /// A transport-mode header the client sent (echoing the server's).
    pub transport_mode_sent: Option<String>,
    pub comments: u64,
    pub last_retry: Option<u64>,
    /// The source recorded no body for it (HAR holes, access logs), or its content coding
    /// could not be undone (`body_not_decoded`): what it carried is not known.
    pub body_unknown: bool,
    pub body_not_decoded: bool,
    /// The source records the response's `Mcp-Session-Id` (an access log may not).
    pub session_header_known: bool,
    /// The source records the request's `MCP-Protocol-Version` (an access log may not).
    pub version_header_known: bool,
    /// The source does not record how the response ended (a log that writes `200` for a
    /// stream the client dropped), and its times are exact to this many nanoseconds.
    pub ending_unknown: Option<i64>,
    /// The source did not record when it ended, only when its request was sent (`ended` is
    /// that).
    pub end_time_unknown: bool,
    /// Events in brief, filled when the session is finalized (the events themselves may then be
    /// dropped to keep memory flat).
    pub summary: EventSummary,
    /// Where a JSON response body's bytes are kept.
    pub response_data: Option<PayloadRef>,
    /// Events of this resume whose IDs a stream of another session carried first.
    pub foreign_events: Vec<ForeignEvent>,
}

/// A client's new session, on the connection of its last: which, and when it initialized.
#[derive(Clone, Debug, PartialEq)]
pub struct Reinitialized {
    pub session: SessionIdx,
    pub session_id: String,
    pub at: Mark,
}

/// An event a resume was replayed whose ID (random by construction) another session's stream
/// carried first: the same event when the bytes are the same too.
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignEvent {
    /// Its position among the stream's events.
    pub event: u32,
    pub minted_in_session: String,
    /// Where that session's stream carried it.
    pub first: Mark,
    pub first_exchange: ExchangeId,
    pub data: Option<PayloadRef>,
}

/// What is kept of a stream's events once the session is finalized.
#[derive(Clone, Debug, Default)]
pub struct EventSummary {
    pub count: usize,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
}

/// JSON-RPC message counts of a session.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub events: usize,
    pub requests: usize,
    pub responses: usize,
    pub errors: usize,
    pub notifications: usize,
}

/// A long ID as the reports shorten it, `2665…92a9`: its first and last four characters (IDs of
/// 14 characters or fewer whole).
pub fn short_id(id: &str) -> String {
    if id.chars().count() <= 14 {
        return id.to_string();
    }
    let head: String = id.chars().take(4).collect();
    let tail: Vec<char> = id.chars().rev().take(4).collect();
    format!("{head}…{}", tail.into_iter().rev().collect::<String>())
}

/// `S1`, `S2`, ...: how reports name session `idx`.
pub fn session_label(idx: SessionIdx) -> String {
    label("S", idx)
}

/// `prefix` and `idx + 1` in decimal, without the formatting machinery: reports name every
/// stream and session so, and `format!` cost several times the rest of it.
fn label(prefix: &str, idx: usize) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = (idx as u64).wrapping_add(1);
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut out = String::with_capacity(prefix.len() + digits.len() - at);
    out.push_str(prefix);
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
    out
}

/// A vantage point: an input, and the server endpoint a session's exchanges reached there. Two
/// hops in one capture (a proxy's listening address, its upstream) are two vantage points of one
/// input, told apart by their TCP endpoints, never by a client's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Vantage {
    pub input: InputId,
    pub server: SocketAddr,
}

/// One vantage point of a logical session: an observation of it in one input at one server
/// endpoint (a hop of a proxy, a replica), and what it saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VantagePoint {
    /// The observation's own session record (folded into the logical session's).
    pub session: SessionIdx,
    pub input: InputId,
    pub server: SocketAddr,
    pub streams: usize,
    pub events: usize,
    pub start: Mark,
    pub end: Mark,
    /// The connections that carried its streams, each once: what `--write-pcap` copies the
    /// logical session's frames from at this vantage point.
    pub conns: Vec<mcpf_model::ConnId>,
}

impl VantagePoint {
    pub fn of(s: &Session) -> VantagePoint {
        let Vantage { input, server } = s.vantage();
        VantagePoint {
            session: s.idx,
            input,
            server,
            streams: s.streams.len(),
            events: s.streams.iter().map(|st| st.events.len()).sum(),
            start: s.start,
            end: s.end,
            conns: s.connections(),
        }
    }
}

impl Session {
    /// The connections that carried its streams, each once, in order.
    pub fn connections(&self) -> Vec<mcpf_model::ConnId> {
        let mut conns: Vec<_> = self.streams.iter().map(|st| st.exchange.conn).collect();
        conns.sort_unstable();
        conns.dedup();
        conns
    }
}

/// `post:s4`, `get:s2`, ...: how reports name stream `idx` of a session.
pub fn stream_label(transport: StreamTransport, idx: StreamIdx) -> String {
    label(
        match transport {
            StreamTransport::Post => "post:s",
            StreamTransport::Get => "get:s",
            StreamTransport::LegacySse => "legacy-sse:s",
        },
        idx,
    )
}

impl Stream {
    /// A stream of `exchange` opened at `opened`, of which nothing else is known yet.
    pub fn new(
        exchange: ExchangeId,
        transport: StreamTransport,
        opened: Mark,
        client: SocketAddr,
        server: SocketAddr,
    ) -> Stream {
        Stream {
            idx: 0,
            transport,
            exchange,
            input: opened.frame.input,
            method: String::new(),
            target: String::new(),
            client,
            server,
            opened,
            status: None,
            response_mark: None,
            upstream: None,
            content_type: None,
            event_stream: false,
            ended: None,
            outcome: None,
            closed_by: None,
            session_id_sent: None,
            session_id_received: None,
            accept_sse: false,
            client_batch: false,
            protocol_version_header: None,
            host: None,
            transport_mode: None,
            resume: None,
            client_messages: Vec::new(),
            response_messages: Vec::new(),
            response_packed: Default::default(),
            events: Vec::new(),
            packed: Default::default(),
            events_unheld: 0,
            gap: false,
            gap_bytes: 0,
            snaplen_bytes: 0,
            inconsistent_bytes: 0,
            transport_mode_sent: None,
            comments: 0,
            last_retry: None,
            body_unknown: false,
            body_not_decoded: false,
            session_header_known: true,
            version_header_known: true,
            ending_unknown: None,
            end_time_unknown: false,
            summary: EventSummary::default(),
            response_data: None,
            foreign_events: Vec::new(),
        }
    }

    pub fn label(&self) -> String {
        stream_label(self.transport, self.idx)
    }

    /// The stream ended other than by its own framing: the client, a reset, the server closing
    /// early, or the capture.
    pub fn interrupted(&self) -> bool {
        !matches!(self.outcome, Some(Outcome::Complete))
    }

    /// Every byte missing from it was cut by the capture's snap length: the wire carried them,
    /// the capture only did not record them.
    pub fn cut_by_snaplen_only(&self) -> bool {
        self.gap_bytes > 0 && self.snaplen_bytes == self.gap_bytes
    }

    /// The client gave up on it: closed or reset the connection (or, in HTTP/2, reset the
    /// stream) before the response ended.
    pub fn abandoned_by_client(&self) -> bool {
        self.closed_by == Some(Direction::ClientToServer)
            && matches!(
                self.outcome,
                Some(Outcome::ClosedEarly | Outcome::Reset | Outcome::StreamReset) | None
            )
    }

    /// Moves the packed events into `events`, where the analysis reads them.
    pub(crate) fn unpack_events(&mut self) {
        if !self.packed.is_empty() {
            let packed = std::mem::take(&mut self.packed).unpack();
            // Moved, not copied: a second vector of every event would double the peak.
            if self.events.is_empty() {
                self.events = packed;
            } else {
                self.events.extend(packed);
            }
        }
        if !self.response_packed.is_empty() {
            let packed = std::mem::take(&mut self.response_packed);
            self.response_messages.extend(packed.unpack());
        }
    }

    /// Events received so far, packed or not.
    pub(crate) fn event_count(&self) -> usize {
        self.events.len() + self.packed.len()
    }

    /// Last event ID delivered on this stream (explicit IDs only).
    pub fn last_delivered_id(&self) -> Option<&str> {
        self.events
            .iter()
            .rev()
            .find_map(|e| e.id.as_deref().filter(|id| !id.is_empty()))
    }

    /// The exchange carried an `initialize` request.
    pub fn is_initialize(&self) -> bool {
        self.requests()
            .any(|m| m.method.as_deref() == Some("initialize"))
    }

    /// JSON-RPC requests this exchange carried (the client's).
    pub fn requests(&self) -> impl Iterator<Item = &Message> {
        self.client_messages
            .iter()
            .filter(|m| m.kind == crate::jsonrpc::Kind::Request)
    }

    /// The IDs of the requests the client sent on it.
    pub fn request_ids(&self) -> impl Iterator<Item = &crate::jsonrpc::RequestId> {
        self.requests().filter_map(|m| m.id.as_ref())
    }
}

/// A fallback from streamable POST responses to an SSE GET channel.
#[derive(Clone, Debug)]
pub struct Fallback {
    pub mark: Mark,
    pub from: String,
    pub to: String,
    /// Why: `initialize answered 405`, `POST abandoned after 1.5 s with 0 bytes`...
    pub trigger: String,
    /// The stalled request, if one.
    pub request_id: Option<RequestId>,
    pub abandoned_stream: Option<StreamIdx>,
    pub to_stream: StreamIdx,
    /// Messages of the abandoned request later arrived on the new stream.
    pub confirmed: bool,
    /// The input does not record how the POST ended: it is taken as abandoned because its
    /// logged end and the GET's start coincide within the input's time resolution.
    pub inferred: bool,
    /// Frames that show it.
    pub frames: Vec<Mark>,
}

/// A non-capture source whose exchanges were matched to a capture's.
#[derive(Clone, Debug)]
pub struct MergedSource {
    pub input: InputId,
    pub matched: usize,
    /// Exchanges of the source the capture did not have, added with the offset applied.
    pub added: usize,
    /// Seconds added to the source's times to bring them onto the capture's clock.
    pub offset_s: f64,
}

/// How event IDs are formed in a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventIdScheme {
    Integer,
    Namespaced,
    Opaque,
    None,
}

impl EventIdScheme {
    pub fn name(self) -> &'static str {
        match self {
            EventIdScheme::Integer => "integer",
            EventIdScheme::Namespaced => "namespaced",
            EventIdScheme::Opaque => "opaque",
            EventIdScheme::None => "none",
        }
    }
}

/// What the inputs did not record of a session, or a cap left out. The findings that need it
/// are "not determinable" for the session, never silently absent; which they are is the detect
/// stage's to say (each kind's `KindInfo::requires` names the [`Need`]s it rests on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lack {
    /// Bodies the input did not record (no body or SSE events), or whose content coding could
    /// not be undone: `missing` exchanges of `exchanges`, `not_decoded` of them not decoded.
    Bodies {
        missing: usize,
        not_decoded: usize,
        exchanges: usize,
    },
    /// Events past the session's cap (`--max-session-events`) were counted, not kept.
    Events { unheld: u64 },
    /// Exchanges past the session's cap (`--max-session-exchanges`) were counted, not kept.
    Exchanges { unheld: u64 },
    /// The input did not record the responses' `Mcp-Session-Id`.
    ResponseSessionId,
    /// The input does not record how responses ended, and the POST `post` (logged as complete)
    /// ended within `within_ns` of the start of the GET `get`, but so did other exchanges of
    /// the session: the times cannot tell a POST dropped for the GET from one that had ended.
    ResponseEnds {
        post: String,
        within_ns: i64,
        get: String,
    },
}

/// What a finding kind can rest on, which an input may lack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// What the messages said: bodies and SSE events.
    Bodies,
    /// Every event: the kinds that conclude from an event's absence.
    EveryEvent,
    /// The `Mcp-Session-Id` of the responses.
    ResponseSessionId,
    /// How each response ended (a log may write 200 for a stream the client dropped).
    ResponseEnds,
}

impl Lack {
    /// What a finding that needs this cannot rest on.
    pub fn need(&self) -> Need {
        match self {
            Lack::Bodies { .. } => Need::Bodies,
            // An exchange not kept may hold the answer or the event whose absence a finding
            // would conclude from.
            Lack::Events { .. } | Lack::Exchanges { .. } => Need::EveryEvent,
            Lack::ResponseSessionId => Need::ResponseSessionId,
            Lack::ResponseEnds { .. } => Need::ResponseEnds,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Session {
    pub idx: SessionIdx,
    pub session_id: Option<String>,
    pub server: SocketAddr,
    pub path: String,
    pub client_ip: IpAddr,
    pub transport: Transport,
    /// No `Mcp-Session-Id`: exchanges grouped by client and initialize boundaries.
    pub stateless: bool,
    pub protocol_version: Option<String>,
    /// The revision it is judged by (set when it is finalized).
    pub revision: crate::revision::Revision,
    pub client_info: Option<String>,
    pub server_info: Option<String>,
    pub initialize_seen: bool,
    pub initializes: Vec<Mark>,
    pub start: Mark,
    pub end: Mark,
    pub streams: Vec<Stream>,
    pub fallbacks: Vec<Fallback>,
    pub deleted: Option<Mark>,
    /// When the record this one continues was deleted (a DELETE answered 2xx): requests naming
    /// the session since must be answered 404.
    pub deleted_before: Option<Mark>,
    /// 404 answers to requests carrying the session ID: the server forgot the session.
    pub forgotten: Vec<Mark>,
    pub inputs: Vec<InputId>,
    /// The legacy transport's POST endpoint (path and query).
    pub legacy_endpoint: Option<String>,
    pub transport_mode_header: Option<String>,
    pub event_id_scheme: EventIdScheme,
    /// What the scheme was read from: `events`, or `last_event_id` headers when the input has
    /// no events (an access log).
    pub event_id_scheme_from: &'static str,
    /// What the inputs did not record of it, or a cap left out: the findings that need it are
    /// not determinable for it.
    pub lacks: Vec<Lack>,
    /// Other sessions with the same ID observed at another endpoint (proxy legs).
    pub same_session_as: Vec<SessionIdx>,
    /// Every vantage point this logical session was observed at, this record's own first, when
    /// there is more than one (both legs of a proxy, replicas, several inputs): the other
    /// observations were folded into this record (set by the detector stage).
    pub vantage_points: Vec<VantagePoint>,
    /// The record this one continues: the same session named again after it ended (DELETE or
    /// 404) and was handed on. One session, two records: counted once.
    pub continues: Option<SessionIdx>,
    /// The session its client left for this one: its `initialize` came on a TCP connection that
    /// had carried that session's exchanges and no other's.
    pub reinitialized_from: Option<Reinitialized>,
    /// A session without an ID at a server (address, `Host` and endpoint) that minted IDs: when
    /// it first did, in the capture's time. Its requests lack the header the server asks for.
    /// Judged only on a capture (a log has no bodies to show an `initialize`, nor the server's
    /// address).
    pub server_mints_ids: Option<Mark>,
    pub counts: Counts,
    /// Analysed, detected and (unless events are asked for) compacted.
    pub finalized: bool,
    /// Over by evidence (deleted, with nothing open): a later
    /// exchange naming it starts a new session record.
    pub(crate) over: bool,
    /// Its exchanges still open, and since when none is (capture time).
    pub(crate) open: u32,
    pub(crate) quiet_since: mcpf_model::Timestamp,
    /// Where its payload bytes are read from (set when it is finalized).
    pub payloads: Payloads,
    /// Sources merged into this session (a log or HAR of the same traffic as a capture): how
    /// many exchanges matched and the clock offset applied to that source.
    pub merged_sources: Vec<MergedSource>,
    /// Every mark of it comes from one capture file, whose frame numbers say what came after
    /// what even when its clock stepped back (set when it is finalized).
    pub frame_order: bool,
    /// Events its streams hold (packed or not): checked against the cap on each event.
    pub(crate) events_held: u64,
    /// Exchanges that came once it held as many as the cap allows: counted, not held.
    pub exchanges_unheld: u64,
}

/// What a session leaves behind once it is analysed and its streams and events are dropped:
/// who, where, when and how, for the report's tables, filters and links between observations.
#[derive(Clone, Debug)]
pub struct SessionHead {
    pub idx: SessionIdx,
    pub session_id: Option<String>,
    pub server: SocketAddr,
    pub path: String,
    pub client_ip: IpAddr,
    pub transport: Transport,
    pub stateless: bool,
    pub protocol_version: Option<String>,
    pub revision: crate::revision::Revision,
    pub client_info: Option<String>,
    pub start: Mark,
    pub end: Mark,
    /// When it first fell back from POST responses to an SSE GET stream.
    pub fell_back: Option<Mark>,
    pub event_id_scheme: EventIdScheme,
    /// See [`Session::lacks`].
    pub lacks: Vec<Lack>,
    /// See [`Session::continues`].
    pub continues: Option<SessionIdx>,
}

impl SessionHead {
    /// `S1`, `S2`, ...
    pub fn label(&self) -> String {
        session_label(self.idx)
    }
}

/// Where a mark stands in a session's order of events: see [`Session::seq`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seq(Option<mcpf_model::Timestamp>, FrameRef);

impl Session {
    /// When the session was first deleted (a DELETE answered 2xx), in this record or the one it
    /// continues.
    pub fn first_deletion(&self) -> Option<Mark> {
        [self.deleted, self.deleted_before]
            .into_iter()
            .flatten()
            .min_by_key(|d| d.time)
    }

    /// What decides "after" in the session: the frame number when it all comes from one
    /// capture (a clock that stepped back does not reorder what was captured), else the time,
    /// ties broken by frame. Times are only shown.
    pub fn seq(&self, m: Mark) -> Seq {
        Seq((!self.frame_order).then_some(m.time), m.frame)
    }

    pub fn label(&self) -> String {
        session_label(self.idx)
    }

    /// What outlives the session's records.
    /// Where its own exchanges were seen (a source merged into it, such as a log of the same
    /// traffic, is not its vantage point).
    pub fn vantage(&self) -> Vantage {
        Vantage {
            input: self.start.frame.input,
            server: self.server,
        }
    }

    pub fn head(&self) -> SessionHead {
        SessionHead {
            idx: self.idx,
            session_id: self.session_id.clone(),
            server: self.server,
            path: self.path.clone(),
            client_ip: self.client_ip,
            transport: self.transport,
            stateless: self.stateless,
            protocol_version: self.protocol_version.clone(),
            revision: self.revision.clone(),
            client_info: self.client_info.clone(),
            start: self.start,
            end: self.end,
            fell_back: self.fallbacks.first().map(|f| f.mark),
            event_id_scheme: self.event_id_scheme,
            lacks: self.lacks.clone(),
            continues: self.continues,
        }
    }

    /// Some event of it was counted and not held (past the cap): what would rest on the
    /// absence of an event is not concluded.
    pub fn has_unheld_events(&self) -> bool {
        self.streams.iter().any(|st| st.events_unheld > 0)
    }

    /// Fills the counts and the per-stream event summaries from the events.
    pub fn summarize(&mut self) {
        let mut c = Counts::default();
        for st in &mut self.streams {
            st.summary = EventSummary {
                count: st.events.len() + st.events_unheld as usize,
                first_id: st
                    .events
                    .iter()
                    .find_map(|e| e.id.as_deref().map(str::to_string)),
                last_id: st.last_delivered_id().map(str::to_string),
            };
            c.events += st.events.len() + st.events_unheld as usize;
            let all = st
                .client_messages
                .iter()
                .chain(st.response_messages.iter())
                .chain(st.events.iter().flat_map(|e| e.messages.iter()));
            for m in all {
                match m.kind {
                    crate::jsonrpc::Kind::Request => c.requests += 1,
                    crate::jsonrpc::Kind::Response => c.responses += 1,
                    crate::jsonrpc::Kind::Error => c.errors += 1,
                    crate::jsonrpc::Kind::Notification => c.notifications += 1,
                    crate::jsonrpc::Kind::Malformed => {}
                }
            }
        }
        self.counts = c;
    }

    /// Drops what only analysis needed: events and response bodies. Summaries stay.
    pub fn compact(&mut self) {
        for st in &mut self.streams {
            st.events = Vec::new();
            st.response_messages = Vec::new();
            st.client_messages
                .retain(|m| m.kind == crate::jsonrpc::Kind::Request || m.method.is_some());
            st.client_messages.shrink_to_fit();
        }
        self.streams.shrink_to_fit();
    }

    /// Streams in the order they were opened.
    pub fn stream(&self, idx: StreamIdx) -> &Stream {
        &self.streams[idx]
    }

    /// Whether a fallback happened before `mark` and after the last `initialize` before it.
    pub fn fallback_before(&self, mark: Mark) -> Option<&Fallback> {
        let at = self.seq(mark);
        let last_init = self
            .initializes
            .iter()
            .map(|m| self.seq(*m))
            .filter(|m| *m <= at)
            .max();
        self.fallbacks
            .iter()
            .filter(|f| self.seq(f.mark) <= at && last_init.is_none_or(|i| self.seq(f.mark) >= i))
            .min_by_key(|f| self.seq(f.mark))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_as_formatted() {
        let mut idx: Vec<usize> = (0..1200).collect();
        idx.extend([
            9_999,
            99_999,
            123_456_788,
            u32::MAX as usize,
            usize::MAX - 1,
        ]);
        for i in idx {
            assert_eq!(session_label(i), format!("S{}", i + 1));
            for t in [
                StreamTransport::Post,
                StreamTransport::Get,
                StreamTransport::LegacySse,
            ] {
                assert_eq!(stream_label(t, i), format!("{}:s{}", t.name(), i + 1));
            }
        }
    }
}
