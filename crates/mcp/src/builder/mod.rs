//! The session builder: the state it keeps while exchanges are open, its construction, and
//! the HTTP events it takes. Filing exchanges under sessions is in [`sessions`], what each
//! HTTP event adds to its stream in [`exchanges`], and when a session is over in [`lifetime`].
//!
//! Who a client is and which session an exchange belongs to are decided by what the wire proves:
//! the `Mcp-Session-Id` a request names or a response mints, the legacy transport's endpoint
//! URL, the TCP connection an exchange shares with one already filed, the `Last-Event-ID` of a
//! resume that names an event a stream delivered. Never by a client's address: behind a proxy
//! every client has the proxy's. What nothing ties to a session stays unattributed, and is
//! counted.

mod carriers;
mod exchanges;
mod flush;
mod lifetime;
mod prepared;

pub use prepared::{Prepared, prepare};
mod sessions;
mod spill;
mod unattributed;

use std::collections::{BTreeSet, VecDeque};
use std::net::SocketAddr;

use rustc_hash::FxHashMap as HashMap;

use mcpf_http::{ExchangeId, HttpEvent};
use mcpf_model::{ConnId, InputId, Mark, SourceFormat, WireMap};

use crate::model::{Session, SessionIdx, Stream, Transport};
use crate::payloads::{PayloadRef, PayloadWriter};

/// Where an exchange is filed while it is open.
#[derive(Debug)]
enum Filing {
    /// Filed under a session, at this position of its stream list.
    Session(SessionIdx, usize),
    /// Not yet known: see [`Pending`].
    Pending(Box<Stream>, Pending),
    /// Of a session that held as many exchanges as the cap allows: counted, not held.
    Unheld(SessionIdx, UnheldRequest),
}

/// What is kept of a request not held: what its answer can still say of the session (a
/// `DELETE` answered 2xx ended it, a request naming it answered 404 found it forgotten).
#[derive(Clone, Copy, Debug)]
struct UnheldRequest {
    delete: bool,
    named_session: bool,
}

/// The position [`Builder::attach`] gives a stream it counted and did not hold.
const UNHELD: usize = usize::MAX;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pending {
    /// An `initialize` without a session ID: its response names the session, or none (a
    /// server without sessions).
    Initialize,
    /// A GET without a session ID: MCP if its stream opens with an `endpoint` event (the
    /// legacy transport) or carries MCP messages; any other event stream is not MCP.
    Get,
    /// MCP requests without a session ID: a response may still name one; else they are
    /// sessionless exchanges of their connection.
    Sessionless,
    /// JSON-RPC without MCP methods or headers (or a body the source did not record): MCP only
    /// if the response proves it.
    Unproven,
    /// A response (or events) whose request was not seen: the capture started late, or a gap
    /// took the request.
    Orphan,
    /// A request whose head the snap length cut before it named a session, MCP by the method
    /// its first bytes show: filed if its response names the session, else counted.
    Cut(Box<str>),
}

/// An initialize answered 4xx: the client may now fall back to the legacy transport.
#[derive(Debug, Clone)]
struct RejectedInitialize {
    stream: Box<Stream>,
    status: u16,
}

/// Frames and captured bytes of one input's connections that carried no MCP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotCarried {
    pub not_http: (u64, u64),
    pub not_mcp: (u64, u64),
}

/// What the MCP stage saw of the HTTP traffic, MCP or not.
#[derive(Debug, Clone, Default)]
pub struct McpStats {
    pub exchanges_total: u64,
    /// Exchanges whose response head arrived (MCP or not).
    pub responses: u64,
    pub exchanges_mcp: u64,
    /// Exchanges carrying JSON-RPC without any MCP evidence (another JSON-RPC API).
    pub jsonrpc_not_mcp: u64,
    /// Event streams without any MCP evidence (another SSE feed).
    pub event_streams_not_mcp: u64,
    /// MCP exchanges that nothing on the wire tied to a session, and the first few of them.
    pub unattributed: u64,
    pub unattributed_examples: Vec<String>,
    /// Why payload bytes could not be kept in a temporary file (the I/O error), when they could
    /// not: comparisons that need them then decide nothing.
    pub payload_error: Option<String>,
    /// Quiet sessions written to disk that could not be read back (the spill file failed).
    pub sessions_lost: u64,
    /// Events that arrived once their session held as many as the cap allows, and the streams
    /// they arrived on: counted, not held.
    pub events_unheld: u64,
    pub streams_capped: u64,
    /// The cap they reached.
    pub max_session_events: u64,
    /// Exchanges that came once their session held as many as the cap allows (their events
    /// among `events_unheld`), the sessions they came to, and the cap.
    pub exchanges_unheld: u64,
    pub sessions_capped: u64,
    pub max_session_exchanges: u64,
    /// Server ports of HTTP that carried no MCP.
    pub non_mcp_ports: Vec<u16>,
    /// MCP requests whose head was cut (by the snap length) before it named a session: MCP by
    /// the method their first bytes show, too little to file under any session. Counted, and the
    /// methods seen (the first few).
    pub requests_cut: u64,
    pub requests_cut_methods: Vec<String>,
    /// Event IDs not indexed for comparison across sessions because the index was full.
    pub event_ids_not_indexed: u64,
    /// Servers (address and endpoint) seen minting session IDs past the cap on how many are
    /// remembered: requests to them without one are not judged.
    pub minting_servers_not_kept: u64,
    /// Frames (and their captured bytes) of connections that carried no HTTP, or HTTP but no
    /// MCP, by input: the input's accounting moves them from analysed to `not_http`/`not_mcp`.
    pub carried_nothing: std::collections::BTreeMap<InputId, NotCarried>,
}

/// Exchanges found not to be MCP, by connection (a connection ending forgets its own at once).
#[derive(Default)]
struct NotMcp(HashMap<ConnId, Vec<u32>>);

impl NotMcp {
    fn insert(&mut self, id: ExchangeId) {
        let v = self.0.entry(id.conn).or_default();
        if !v.contains(&id.index) {
            v.push(id.index);
        }
    }

    fn contains(&self, id: &ExchangeId) -> bool {
        self.0.get(&id.conn).is_some_and(|v| v.contains(&id.index))
    }

    fn remove(&mut self, id: &ExchangeId) -> bool {
        let Some(v) = self.0.get_mut(&id.conn) else {
            return false;
        };
        let before = v.len();
        v.retain(|&i| i != id.index);
        before != v.len()
    }

    fn forget(&mut self, conn: ConnId) {
        self.0.remove(&conn);
    }
}

/// What is kept of a session handed to the callback, for a later exchange that continues it
/// under a new record: the rest of its identity (ID, server, endpoint) that exchange carries.
#[derive(Clone, Copy, Debug)]
struct Identity {
    transport: Transport,
    stateless: bool,
    /// When it was deleted, if it was.
    deleted: Option<Mark>,
}

/// Events held per session by default: a session of 100,000 tool calls, each answered on an
/// SSE stream with a few progress notifications, holds well under it; at the cap the session's
/// events take about 600 MB while it is analysed.
pub const MAX_SESSION_EVENTS: u64 = 2_000_000;

/// A server as a request names it: address, `Host`, endpoint path.
pub(super) type MintingKey = (std::net::SocketAddr, String, String);

/// Servers (address and endpoint) remembered as minting session IDs: a capture holds a few; a
/// hostile one holds a new path per request.
pub const MAX_MINTING_SERVERS: usize = 65_536;

/// Exchanges held per session by default: each takes about a kilobyte while the session is
/// analysed, so a session at the cap holds about 200 MB of them. A session of 1,000 tool calls
/// an hour would take more than a week to reach it.
pub const MAX_SESSION_EXCHANGES: u64 = 200_000;

#[derive(Clone, Copy, Debug)]
struct ExchangeCap(u64);

impl Default for ExchangeCap {
    fn default() -> Self {
        ExchangeCap(MAX_SESSION_EXCHANGES)
    }
}

#[derive(Clone, Copy, Debug)]
struct EventCap(u64);

impl Default for EventCap {
    fn default() -> Self {
        EventCap(MAX_SESSION_EVENTS)
    }
}

/// What the builder calls with each finalized session.
pub type SessionCallback = Box<dyn FnMut(Box<Session>) + Send>;

#[derive(Default)]
pub struct Builder {
    /// Sessions by index; a session handed to the session callback is dropped (`None`) and only
    /// its identity stays in `retired`, so memory follows the sessions in progress.
    pub sessions: mcpf_model::PagedVec<Option<Box<Session>>>,
    retired: HashMap<SessionIdx, Identity>,
    /// Streamable HTTP sessions by server and `Mcp-Session-Id`.
    by_id: WireMap<(SocketAddr, String), SessionIdx>,
    /// Legacy (2024-11-05) sessions by server and POST endpoint.
    legacy: WireMap<(SocketAddr, String), SessionIdx>,
    /// The sessionless exchanges of each TCP connection (servers that mint no session ID).
    sessionless: HashMap<ConnId, SessionIdx>,
    /// The session a connection's exchanges were last filed under by evidence (the ID they
    /// named, the endpoint they posted to): where an orphan of that connection belongs.
    by_conn: HashMap<ConnId, SessionIdx>,
    /// Open connections that carried exchanges of more than one session: what comes on them
    /// next says nothing of which client it is (a pooled connection serves many).
    conn_shared: rustc_hash::FxHashSet<ConnId>,
    /// Open HTTP/2 connections: each stream of one may be any client's (an agent host's pooled
    /// connection multiplexes many sessions), so the connection ties no exchange to another.
    multiplexed: rustc_hash::FxHashSet<ConnId>,
    open: HashMap<ExchangeId, Filing>,
    /// Open orphans by connection, filed when their connection ends.
    orphans: HashMap<ConnId, Vec<ExchangeId>>,
    /// Open orphans whose response names a session: that session counts them as open, so it is
    /// not ended (and handed on) before they are filed into it.
    orphan_holds: HashMap<ExchangeId, SessionIdx>,
    /// Initializes refused 4xx, by connection: a legacy session that connection then opens or
    /// posts to is where the client fell back to.
    rejected: HashMap<ConnId, RejectedInitialize>,
    /// MCP streams nothing tied to a session yet.
    unattributed: unattributed::Pool,
    /// Endpoints of open connections.
    endpoints: HashMap<ConnId, (SocketAddr, SocketAddr)>,
    /// Exchanges whose request was seen and is not MCP: their responses are not orphans.
    not_mcp: NotMcp,
    /// Open connections an MCP exchange was filed from (into a session, or unattributed).
    carried_mcp: rustc_hash::FxHashSet<ConnId>,
    /// The format of each input, by index: exchanges of a HAR file or access log are matched
    /// with a capture of the same traffic before analysis.
    sources: Vec<SourceFormat>,
    /// What each non-capture input could record (HAR files, access logs).
    capabilities: HashMap<InputId, mcpf_model::Capabilities>,
    /// Finalize sessions as they end (deleted or forgotten, with nothing open) instead of all
    /// at the end: memory then follows the sessions in progress, not the capture's length.
    early_finalize: bool,
    /// Called with each session once it is analysed: the next stage (detectors) runs there and
    /// may compact the session.
    on_finalized: Option<SessionCallback>,
    /// Sessions not finalized yet, in the order they began.
    active: BTreeSet<SessionIdx>,
    /// Sessions by `Mcp-Session-Id`, to tie observations of one session at several endpoints.
    by_sid: WireMap<String, Vec<SessionIdx>>,
    /// Events a session holds at most (see [`Builder::with_max_session_events`]).
    max_session_events: EventCap,
    /// Exchanges a session holds at most (see [`Builder::with_max_session_exchanges`]).
    max_session_exchanges: ExchangeCap,
    /// The bytes of every event's data and JSON response body.
    payloads: PayloadWriter,
    /// Sessions written to disk while quiet, and where.
    spilled: HashMap<SessionIdx, PayloadRef>,
    spill_file: PayloadWriter,
    /// The open sessions' event IDs random by construction, by the stream that carried each first.
    carriers: carriers::Carriers,
    /// Where a server minted session IDs (address and endpoint path), with the first time: a
    /// request there without one lacks the header the server asks for.
    minting: HashMap<MintingKey, mcpf_model::Mark>,
    /// Sessions in the order they went quiet (nothing open), with when: spilled once quiet for
    /// long enough. An entry is stale when its session was active again since.
    quiet: VecDeque<(mcpf_model::Timestamp, SessionIdx)>,
    /// The latest capture time seen.
    now: mcpf_model::Timestamp,
    /// Interim reports of quiet sessions (`--live-flush`).
    flush: Option<flush::LiveFlush>,
    /// The anomalies of the HTTP stage (and of HAR files and logs), kept for the report up to
    /// a cap and counted by kind.
    pub anomalies: crate::Anomalies,
    pub stats: McpStats,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("sessions", &self.sessions.len())
            .finish()
    }
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Events one session holds at most, packed while it is in progress and as structs while it
    /// is analysed (about 50 and 300 bytes each). An event past the cap is counted on its
    /// stream, not held; findings that rest on the absence of an event are then not concluded
    /// for that session.
    pub fn with_max_session_events(mut self, cap: u64) -> Self {
        self.max_session_events = EventCap(cap);
        self
    }

    /// Exchanges one session holds at most: a later one is counted on the session, not held,
    /// and findings that rest on the absence of an answer or event are then not concluded for
    /// that session.
    pub fn with_max_session_exchanges(mut self, cap: u64) -> Self {
        self.max_session_exchanges = ExchangeCap(cap);
        self
    }

    /// Finalizes each session as soon as it is over by evidence: deleted, with nothing of it
    /// open. Silence never ends a session, nor does a 404 (another replica may still serve it).
    pub fn with_early_finalize(mut self, on: bool) -> Self {
        self.early_finalize = on;
        self
    }

    /// The format of each input, by index (inputs not named are captures).
    pub fn with_sources(mut self, sources: Vec<SourceFormat>) -> Self {
        self.sources = sources;
        self
    }

    /// Hands each session to `callback` as soon as it is finalized and analysed.
    pub fn with_session_callback(mut self, callback: SessionCallback) -> Self {
        self.on_finalized = Some(callback);
        self
    }

    /// Says what an input could record, so findings that need what it lacks are reported as not
    /// determinable instead of silently absent.
    pub fn set_capabilities(&mut self, input: InputId, caps: mcpf_model::Capabilities) {
        self.capabilities.insert(input, caps);
    }

    pub(super) fn live(&self, idx: SessionIdx) -> Option<&Session> {
        self.sessions.get(idx)?.as_deref()
    }

    pub(super) fn live_mut(&mut self, idx: SessionIdx) -> Option<&mut Session> {
        self.sessions.get_mut(idx)?.as_deref_mut()
    }

    /// Finalized, or over by evidence: a new exchange naming it starts a new record.
    pub(super) fn is_over(&self, idx: SessionIdx) -> bool {
        if self.spilled.contains_key(&idx) {
            return false;
        }
        self.live(idx).is_none_or(|s| s.finalized || s.over)
    }

    /// The input does not say when the exchange ended: its end is shown as such.
    fn end_time_unknown(&mut self, id: ExchangeId, unknown: bool) {
        if unknown && let Some(st) = self.stream_mut(id) {
            st.end_time_unknown = true;
        }
    }

    pub(super) fn stream_mut(&mut self, id: ExchangeId) -> Option<&mut Stream> {
        match self.open.get_mut(&id)? {
            Filing::Session(s, i) => self
                .sessions
                .get_mut(*s)?
                .as_deref_mut()?
                .streams
                .get_mut(*i),
            Filing::Pending(stream, _) => Some(stream),
            Filing::Unheld(..) => None,
        }
    }

    /// Files an open exchange; a session counts it as open.
    fn open_filing(&mut self, id: ExchangeId, filing: Filing) {
        if let Filing::Session(s, _) | Filing::Unheld(s, _) = filing
            && let Some(s) = self.live_mut(s)
        {
            s.open += 1;
        }
        if let Filing::Pending(stream, Pending::Orphan) = &filing {
            self.orphans.entry(id.conn).or_default().push(id);
            let named = stream.session_id_received.as_ref();
            let session = named.and_then(|n| self.by_id.get(&(stream.server, n.clone())));
            if let Some(&session) = session
                && let Some(s) = self.live_mut(session)
            {
                s.open += 1;
                self.orphan_holds.insert(id, session);
            }
        }
        self.open.insert(id, filing);
    }

    /// Takes an open exchange's filing; its session no longer counts it as open.
    fn take_filing(&mut self, id: ExchangeId) -> Option<Filing> {
        let filing = self.open.remove(&id)?;
        let now = self.now;
        let held = self.orphan_holds.remove(&id);
        if let Some(idx) = held.or(match filing {
            Filing::Session(idx, _) | Filing::Unheld(idx, _) => Some(idx),
            Filing::Pending(..) => None,
        }) && let Some(s) = self.live_mut(idx)
        {
            s.open = s.open.saturating_sub(1);
            if s.open == 0 && !s.finalized {
                s.quiet_since = now;
                self.quiet.push_back((now, idx));
            }
        }
        Some(filing)
    }

    /// Ends the build: every session is analysed; returns them all.
    pub fn finish(mut self) -> (Vec<Session>, crate::Anomalies, McpStats) {
        self.close_all();
        let sessions = self
            .sessions
            .into_vec()
            .into_iter()
            .flatten()
            .map(|s| *s)
            .collect();
        (sessions, self.anomalies, self.stats)
    }

    /// A connection ended: its orphans whose request never came are filed, and what was kept
    /// of it goes.
    /// Counts a connection that ended without carrying MCP under its input's `not_http` or
    /// `not_mcp`; one whose exchanges are still pending (filed at the end of input) counts as
    /// MCP only if one was filed by now, which is when its connection's frames are judged.
    fn account_connection(
        &mut self,
        conn: ConnId,
        kind: mcpf_http::ConnKind,
        input: InputId,
        (packets, bytes): (u64, u64),
    ) {
        let carried = self.carried_mcp.remove(&conn);
        if carried || packets == 0 {
            return;
        }
        let tally = self.stats.carried_nothing.entry(input).or_default();
        let slot = match kind {
            mcpf_http::ConnKind::Http | mcpf_http::ConnKind::Http2 => &mut tally.not_mcp,
            _ => &mut tally.not_http,
        };
        slot.0 += packets;
        slot.1 += bytes;
    }

    /// A message of `exchange` turned out, after it ended, to rest on bytes a retransmission
    /// contradicted: its stream is marked, open or filed in its connection's session (among
    /// the session's last streams, where an exchange that just ended is). Once the session is
    /// analysed it is too late; the anomaly still names both frames.
    fn late_inconsistency(&mut self, exchange: ExchangeId, bytes: u64) {
        const RECENT: usize = 64;
        if let Some(st) = self.stream_mut(exchange) {
            st.inconsistent_bytes += bytes;
            return;
        }
        let Some(&session) = self.by_conn.get(&exchange.conn) else {
            return;
        };
        if let Some(s) = self.live_mut(session).filter(|s| !s.finalized)
            && let Some(st) = s
                .streams
                .iter_mut()
                .rev()
                .take(RECENT)
                .find(|st| st.exchange == exchange)
        {
            st.inconsistent_bytes += bytes;
        }
    }

    fn on_connection_end(&mut self, conn: ConnId) {
        self.endpoints.remove(&conn);
        self.not_mcp.forget(conn);
        for id in self.orphans.remove(&conn).unwrap_or_default() {
            if let Some(Filing::Pending(stream, Pending::Orphan)) = self.take_filing(id) {
                self.file_orphan(*stream);
            }
        }
        if let Some(r) = self.rejected.remove(&conn) {
            // No legacy session followed on this connection: the refused initialize stays a
            // sessionless exchange of it.
            self.file_sessionless(*r.stream);
        }
        self.sessionless.remove(&conn);
        self.by_conn.remove(&conn);
        self.conn_shared.remove(&conn);
        self.multiplexed.remove(&conn);
    }
}

impl Builder {
    fn on_response_end(
        &mut self,
        end: &mcpf_http::ResponseEnd,
        messages: Option<Vec<crate::jsonrpc::Message>>,
    ) {
        self.end_time_unknown(end.exchange, end.when_unknown);
        self.on_end(
            end.exchange,
            end.outcome,
            end.closed_by,
            end.last,
            (Some(&end.body), messages),
            end.sse.as_ref(),
        )
    }

    /// The events that carry no JSON-RPC.
    fn on_other(&mut self, event: HttpEvent) {
        match event {
            HttpEvent::Request(r) => {
                let messages = prepared::request_messages(&r);
                self.on_request(&r, messages)
            }
            HttpEvent::ResponseHead(h) => self.on_response_head(&h),
            HttpEvent::SseEvent { exchange, event } => {
                self.on_event(exchange, &event, exchanges::event_rec(&event))
            }
            HttpEvent::ResponseEnd(end) => self.on_response_end(&end, None),
            HttpEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                mark,
                unknown,
                when_unknown,
                gap_bytes,
                snaplen_bytes,
            } => {
                self.end_time_unknown(exchange, when_unknown);
                // Unknown, not absent: nothing may be concluded from what it seems to lack.
                let body = unknown.then(|| mcpf_http::Body {
                    unknown: true,
                    gap_bytes,
                    snaplen_bytes,
                    ..Default::default()
                });
                self.on_end(
                    exchange,
                    outcome,
                    closed_by,
                    mark,
                    (body.as_ref(), None),
                    None,
                )
            }
            HttpEvent::Anomaly(a) => self.anomalies.add(a),
            HttpEvent::LateInconsistency {
                exchange, bytes, ..
            } => self.late_inconsistency(exchange, bytes),
            HttpEvent::ConnectionStart {
                conn,
                client,
                server,
                ..
            } => {
                self.endpoints.insert(conn, (client, server));
            }
            HttpEvent::ConnectionEnd {
                conn,
                kind,
                mark,
                packets,
                frame_bytes,
                ..
            } => {
                self.on_connection_end(conn);
                self.account_connection(conn, kind, mark.frame.input, (packets, frame_bytes));
            }
        }
    }
}
