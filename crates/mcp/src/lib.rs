//! The MCP stage: HTTP exchanges in, MCP sessions out.
//!
//! [`Builder`] is an [`HttpSink`]: it files every exchange that speaks MCP under its session
//! (Streamable HTTP by `Mcp-Session-Id`, legacy HTTP+SSE by the endpoint URI, stateless servers by
//! client and `initialize` boundaries), keeps each SSE event as a compact record, and at the end
//! [`analysis`] works out fallbacks, resumes and the namespace of every event.

pub mod analysis;
pub mod ids;
pub mod jsonrpc;
pub mod model;
pub mod packed;

use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};

use mcpf_http::{ExchangeId, Headers, HttpEvent, HttpSink, Outcome};
use mcpf_model::{ConnId, InputId, Mark, SourceFormat};

use crate::jsonrpc::{Kind, Message, RequestId};
use model::{
    Attribution, EventIdScheme, EventRec, Fallback, Namespace, Session, SessionIdx, Stream,
    StreamTransport, Transport,
};

/// Where an exchange is filed while it is open.
#[derive(Debug)]
enum Filing {
    /// Filed under a session, at this position of its stream list.
    Session(SessionIdx, usize),
    /// Not yet known (an `initialize` awaiting its response, a GET awaiting its first event).
    Pending(Box<Stream>, Pending),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Initialize,
    /// A GET without a session ID: legacy if its first event is `endpoint`.
    Get,
    /// JSON-RPC without a session ID: a stateless server.
    Stateless,
    /// A response (or events) whose request was not seen: the capture started late, or a gap
    /// took the request.
    Orphan,
}

/// An initialize answered 4xx: the client may now fall back to the legacy transport.
#[derive(Debug, Clone)]
struct RejectedInitialize {
    stream: Box<Stream>,
    status: u16,
}

/// Anomaly in the HTTP bytes, kept for the report.
#[derive(Debug, Clone)]
pub struct HttpAnomaly {
    pub conn: ConnId,
    pub mark: Mark,
    pub what: String,
}

/// Counters about what was not MCP.
#[derive(Debug, Clone, Default)]
pub struct McpStats {
    pub exchanges_total: u64,
    /// Exchanges whose response head arrived (MCP or not).
    pub responses: u64,
    pub exchanges_mcp: u64,
    /// Server ports of HTTP that carried no MCP.
    pub non_mcp_ports: Vec<u16>,
}

/// What is kept of a session handed to the callback, for a later exchange that continues it
/// under a new record: the rest of its identity (ID, server, endpoint) that exchange carries.
#[derive(Clone, Copy, Debug)]
struct Identity {
    transport: Transport,
    stateless: bool,
}

/// What the builder calls with each finalized session.
pub type SessionCallback = Box<dyn FnMut(Box<Session>) + Send>;

#[derive(Default)]
pub struct Builder {
    /// Sessions by index; a session handed to the session callback is dropped (`None`) and only
    /// its identity stays in `retired`, so memory follows the sessions in progress.
    pub sessions: mcpf_model::PagedVec<Option<Box<Session>>>,
    retired: HashMap<SessionIdx, Identity>,
    by_id: HashMap<(SocketAddr, String), SessionIdx>,
    stateless: HashMap<(IpAddr, SocketAddr), SessionIdx>,
    legacy: HashMap<(SocketAddr, String), SessionIdx>,
    open: HashMap<ExchangeId, Filing>,
    rejected: HashMap<(IpAddr, SocketAddr), RejectedInitialize>,
    /// Endpoints of open connections.
    endpoints: HashMap<ConnId, (SocketAddr, SocketAddr)>,
    /// Exchanges whose request was seen and is not MCP: their responses are not orphans.
    not_mcp: rustc_hash::FxHashSet<ExchangeId>,
    /// The session a client last used at a server, for exchanges that name none.
    last_session: HashMap<(IpAddr, SocketAddr), SessionIdx>,
    /// The format of each input, by index: exchanges of a HAR file or access log are matched
    /// with a capture of the same traffic before analysis.
    sources: Vec<SourceFormat>,
    /// What each non-capture input could record (HAR files, access logs).
    capabilities: HashMap<InputId, mcpf_model::Capabilities>,
    /// Finalize sessions as they end (deleted, or idle with nothing open) instead of all at the
    /// end: memory then follows the sessions in progress, not the capture's length.
    early_finalize: bool,
    /// Called with each session once it is analysed: the next stage (detectors) runs there and
    /// may compact the session.
    on_finalized: Option<SessionCallback>,
    /// Sessions not finalized yet.
    active: Vec<SessionIdx>,
    /// Latest capture time seen, and when idle sessions are next looked for.
    now: Option<mcpf_model::Timestamp>,
    next_idle_check: Option<mcpf_model::Timestamp>,
    /// Sessions by `Mcp-Session-Id`, to tie observations of one session at several endpoints.
    by_sid: HashMap<String, Vec<SessionIdx>>,
    pub anomalies: Vec<HttpAnomaly>,
    pub stats: McpStats,
}

fn event_stream_accepted(h: &Headers) -> bool {
    h.get_all("accept")
        .any(|v| v.to_ascii_lowercase().contains("text/event-stream"))
}

fn hash_data(data: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    data.hash(&mut h);
    h.finish()
}

/// The session parameter of a legacy endpoint URI (`sessionId` in TypeScript, `session_id` in
/// Python), or the whole URI when there is none.
fn legacy_session_id(endpoint: &str) -> String {
    let query = endpoint.split_once('?').map(|(_, q)| q).unwrap_or("");
    query
        .split('&')
        .find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k.eq_ignore_ascii_case("sessionid") || k.eq_ignore_ascii_case("session_id"))
                .then(|| v.to_string())
        })
        .unwrap_or_else(|| endpoint.to_string())
}

/// Path and query of an endpoint URI that may be absolute.
fn path_and_query(uri: &str) -> String {
    if let Some(rest) = uri.split_once("://").map(|(_, r)| r) {
        return rest
            .find('/')
            .map(|i| rest[i..].to_string())
            .unwrap_or("/".into());
    }
    uri.to_string()
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

    /// Finalizes sessions as soon as they are over (see [`Builder::take_ready`]).
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

    fn live(&self, idx: SessionIdx) -> Option<&Session> {
        self.sessions.get(idx)?.as_deref()
    }

    fn live_mut(&mut self, idx: SessionIdx) -> Option<&mut Session> {
        self.sessions.get_mut(idx)?.as_deref_mut()
    }

    fn is_finalized(&self, idx: SessionIdx) -> bool {
        self.live(idx).is_none_or(|s| s.finalized)
    }

    fn finalize(&mut self, idx: SessionIdx) {
        let Some(s) = self.sessions.get_mut(idx).and_then(|s| s.as_deref_mut()) else {
            return;
        };
        if s.finalized {
            return;
        }
        for st in &mut s.streams {
            st.unpack_events();
            if let Some(caps) = self.capabilities.get(&st.input) {
                st.session_header_known = caps.knows_response_header("mcp-session-id");
            }
        }
        analysis::fill_initialize(s);
        analysis::analyse(s);
        s.finalized = true;
        if let Some(id) = &s.session_id {
            let others: Vec<SessionIdx> = self
                .by_sid
                .get(id)
                .map(|v| v.iter().copied().filter(|&o| o != idx).collect())
                .unwrap_or_default();
            if let Some(s) = self.live_mut(idx) {
                s.same_session_as = others;
            }
        }
        self.active.retain(|&a| a != idx);
        if let Some(cb) = self.on_finalized.as_mut()
            && let Some(slot) = self.sessions.get_mut(idx)
            && let Some(s) = slot.take()
        {
            self.retired.insert(
                idx,
                Identity {
                    transport: s.transport,
                    stateless: s.stateless,
                },
            );
            cb(s);
        }
    }

    /// Sessions with nothing open that were deleted, or have been silent this long (capture
    /// time), are over. 30 s covers the reconnection backoff of the official SDKs (1 s to 30 s):
    /// a resume comes sooner than that or not at all.
    const IDLE_NS: i64 = 30 * mcpf_model::Timestamp::NANOS_PER_SEC;

    fn check_idle(&mut self, now: mcpf_model::Timestamp) {
        if !self.early_finalize {
            return;
        }
        self.now = Some(self.now.map_or(now, |n| n.max(now)));
        let now = self.now.unwrap_or(now);
        match self.next_idle_check {
            Some(t) if now < t => return,
            _ => {}
        }
        self.next_idle_check = Some(now.add_nanos(mcpf_model::Timestamp::NANOS_PER_SEC));
        let mut open: rustc_hash::FxHashSet<SessionIdx> = rustc_hash::FxHashSet::default();
        for f in self.open.values() {
            if let Filing::Session(s, _) = f {
                open.insert(*s);
            }
        }
        let done: Vec<SessionIdx> = self
            .active
            .iter()
            .copied()
            .filter(|&i| {
                let Some(s) = self.live(i) else { return true };
                !open.contains(&i)
                    && (s.deleted.is_some() || now.0.saturating_sub(s.end.time.0) > Self::IDLE_NS)
            })
            .collect();
        for i in done {
            self.finalize(i);
        }
    }

    /// Says what an input could record, so findings that need what it lacks are reported as not
    /// determinable instead of silently absent.
    pub fn set_capabilities(&mut self, input: InputId, caps: mcpf_model::Capabilities) {
        self.capabilities.insert(input, caps);
    }

    #[allow(clippy::too_many_arguments)]
    fn new_session(
        &mut self,
        session_id: Option<String>,
        server: SocketAddr,
        path: &str,
        client_ip: IpAddr,
        transport: Transport,
        mark: Mark,
        input: InputId,
    ) -> SessionIdx {
        let idx = self.sessions.len();
        self.active.push(idx);
        if let Some(id) = &session_id {
            self.by_sid.entry(id.clone()).or_default().push(idx);
        }
        self.sessions.push(Some(Box::new(Session {
            idx,
            stateless: session_id.is_none() && transport == Transport::StreamableHttp,
            session_id: session_id.clone(),
            server,
            path: path.split('?').next().unwrap_or("").to_string(),
            client_ip,
            transport,
            protocol_version: None,
            client_info: None,
            server_info: None,
            initialize_seen: false,
            initializes: Vec::new(),
            start: mark,
            end: mark,
            streams: Vec::new(),
            fallbacks: Vec::new(),
            deleted: None,
            forgotten: Vec::new(),
            inputs: vec![input],
            legacy_endpoint: None,
            transport_mode_header: None,
            event_id_scheme: EventIdScheme::None,
            event_id_scheme_from: "events",
            not_determinable: Vec::new(),
            same_session_as: Vec::new(),
            merged_sources: Vec::new(),
            counts: model::Counts::default(),
            finalized: false,
        })));
        if let Some(id) = session_id {
            match transport {
                Transport::StreamableHttp => {
                    self.by_id.insert((server, id), idx);
                }
                Transport::LegacySse => {}
            }
        }
        idx
    }

    fn continuation(&mut self, old: SessionIdx, stream: &Stream) -> SessionIdx {
        let (id, server, path, ip, transport, legacy, version, stateless) = match self.live(old) {
            Some(o) => (
                o.session_id.clone(),
                o.server,
                o.path.clone(),
                o.client_ip,
                o.transport,
                o.legacy_endpoint.clone(),
                o.protocol_version.clone(),
                o.stateless,
            ),
            None => {
                let o = self.retired.get(&old).copied().unwrap_or(Identity {
                    transport: Transport::StreamableHttp,
                    stateless: stream.session_id_sent.is_none(),
                });
                // A legacy session is continued by a POST to its endpoint, which names it.
                let (id, legacy) = match o.transport {
                    Transport::LegacySse => (
                        Some(legacy_session_id(&stream.target)),
                        Some(stream.target.clone()),
                    ),
                    Transport::StreamableHttp => (stream.session_id_sent.clone(), None),
                };
                (
                    id,
                    stream.server,
                    stream.target.clone(),
                    stream.client.ip(),
                    o.transport,
                    legacy,
                    stream.protocol_version_header.clone(),
                    o.stateless,
                )
            }
        };
        let new = self.new_session(
            id.clone(),
            server,
            &path,
            ip,
            transport,
            stream.opened,
            stream.input,
        );
        if let Some(s) = self.live_mut(new) {
            s.legacy_endpoint = legacy.clone();
            s.protocol_version = version;
            s.stateless = stateless;
        }
        for v in self
            .by_id
            .values_mut()
            .chain(self.stateless.values_mut())
            .chain(self.legacy.values_mut())
        {
            if *v == old {
                *v = new;
            }
        }
        if let Some(id) = id
            && transport == Transport::StreamableHttp
        {
            self.by_id.insert((server, id), new);
        }
        new
    }

    fn session_for_id(
        &mut self,
        server: SocketAddr,
        id: &str,
        client: IpAddr,
        path: &str,
        mark: Mark,
        input: InputId,
    ) -> SessionIdx {
        if let Some(&idx) = self.by_id.get(&(server, id.to_string())) {
            return idx;
        }
        self.new_session(
            Some(id.to_string()),
            server,
            path,
            client,
            Transport::StreamableHttp,
            mark,
            input,
        )
    }

    /// Files a stream under a session; returns the session it went to and its position there. A
    /// session already finalized (it went idle or was deleted) is continued by a new session
    /// record with the same identity.
    fn attach(&mut self, session: SessionIdx, mut stream: Stream) -> (SessionIdx, usize) {
        let session = if self.is_finalized(session) {
            self.continuation(session, &stream)
        } else {
            session
        };
        self.last_session
            .insert((stream.client.ip(), stream.server), session);
        let Some(s) = self.live_mut(session) else {
            // Not reachable: a finalized session was continued above.
            return (session, usize::MAX);
        };
        if !s.inputs.contains(&stream.input) {
            s.inputs.push(stream.input);
        }
        if stream.opened < s.start {
            s.start = stream.opened;
        }
        if stream.opened > s.end {
            s.end = stream.opened;
        }
        for m in &stream.client_messages {
            if m.kind == Kind::Request && m.method.as_deref() == Some("initialize") {
                s.initialize_seen = true;
                s.initializes.push(stream.opened);
                if m.mcp.protocol_version.is_some() && s.protocol_version.is_none() {
                    s.protocol_version = m.mcp.protocol_version.clone();
                }
                if m.mcp.peer_info.is_some() {
                    s.client_info = m.mcp.peer_info.clone();
                }
            }
        }
        if s.protocol_version.is_none() {
            s.protocol_version = stream.protocol_version_header.clone();
        }
        stream.idx = s.streams.len();
        s.streams.push(stream);
        (session, s.streams.len() - 1)
    }

    fn stream_mut(&mut self, id: ExchangeId) -> Option<&mut Stream> {
        match self.open.get_mut(&id)? {
            Filing::Session(s, i) => self
                .sessions
                .get_mut(*s)?
                .as_deref_mut()?
                .streams
                .get_mut(*i),
            Filing::Pending(stream, _) => Some(stream),
        }
    }

    /// A stream record for an exchange whose request was not seen.
    fn orphan(&self, exchange: ExchangeId, mark: Mark) -> Stream {
        let unknown: SocketAddr = SocketAddr::from(([0, 0, 0, 0], 0));
        let (client, server) = self
            .endpoints
            .get(&exchange.conn)
            .copied()
            .unwrap_or((unknown, unknown));
        Stream {
            idx: 0,
            transport: StreamTransport::Get,
            exchange,
            input: mark.frame.input,
            method: String::new(),
            target: String::new(),
            client,
            server,
            opened: mark,
            status: None,
            response_mark: None,
            content_type: None,
            event_stream: false,
            ended: None,
            outcome: None,
            closed_by: None,
            session_id_sent: None,
            session_id_received: None,
            accept_sse: false,
            protocol_version_header: None,
            transport_mode: None,
            resume: None,
            client_messages: Vec::new(),
            response_messages: Vec::new(),
            response_packed: Default::default(),
            events: Vec::new(),
            gap: false,
            gap_bytes: 0,
            transport_mode_sent: None,
            comments: 0,
            last_retry: None,
            body_unknown: false,
            session_header_known: true,
            packed: Default::default(),
            summary: model::EventSummary::default(),
        }
    }

    /// Files an orphan: under the session its response names, else the client's last session
    /// at that server, else a stateless one.
    fn file_orphan(&mut self, exchange: ExchangeId, stream: Stream) {
        let speaks_mcp = stream.session_id_received.is_some()
            || stream.event_stream
            || stream.event_count() > 0
            || stream.response_packed.jsonrpc
            || stream
                .response_messages
                .iter()
                .any(|m| m.kind != Kind::Malformed);
        if !speaks_mcp {
            return;
        }
        let server = stream.server;
        let ip = stream.client.ip();
        let session = match &stream.session_id_received {
            Some(id) => Some(self.session_for_id(
                server,
                id,
                ip,
                &stream.target,
                stream.opened,
                stream.input,
            )),
            None => self.last_session.get(&(ip, server)).copied(),
        };
        match session {
            Some(s) => {
                let (s, pos) = self.attach(s, stream);
                self.open.insert(exchange, Filing::Session(s, pos));
            }
            None => self.file_stateless(exchange, stream),
        }
    }

    fn on_request(&mut self, r: &mcpf_http::Request) {
        self.stats.exchanges_total += 1;
        let messages = if r.body.data.is_empty() {
            Vec::new()
        } else {
            jsonrpc::parse_payload(&r.body.data)
        };
        let has_jsonrpc = messages.iter().any(|m| m.kind != Kind::Malformed);
        let sid = r.headers.get("mcp-session-id").map(str::to_string);
        let lei = r.headers.get("last-event-id").map(str::to_string);
        let accept_sse = event_stream_accepted(&r.headers);
        let is_get = r.method.eq_ignore_ascii_case("GET");
        let is_post = r.method.eq_ignore_ascii_case("POST");
        let is_delete = r.method.eq_ignore_ascii_case("DELETE");
        let path_query = r.target.clone();
        let legacy = self.legacy.get(&(r.server, path_query.clone())).copied();
        // A source without bodies (an access log) still shows an MCP POST by its Accept header,
        // which the spec makes name both JSON and event streams.
        let unseen_mcp_post = is_post && r.body.unknown && accept_sse;
        let mcp = sid.is_some()
            || has_jsonrpc
            || (is_get && accept_sse)
            || legacy.is_some()
            || unseen_mcp_post;
        if !mcp {
            // A response that already arrived for it was kept as an orphan: drop it.
            if let Some(Filing::Pending(_, Pending::Orphan)) = self.open.get(&r.exchange) {
                self.open.remove(&r.exchange);
            }
            self.not_mcp.insert(r.exchange);
            return;
        }
        self.stats.exchanges_mcp += 1;
        let stream = Stream {
            idx: 0,
            transport: if is_get {
                StreamTransport::Get
            } else {
                StreamTransport::Post
            },
            exchange: r.exchange,
            input: r.first.frame.input,
            method: r.method.clone(),
            target: r.target.clone(),
            client: r.client,
            server: r.server,
            opened: r.first,
            status: None,
            response_mark: None,
            content_type: None,
            event_stream: false,
            ended: None,
            outcome: None,
            closed_by: None,
            session_id_sent: sid.clone(),
            session_id_received: None,
            accept_sse,
            protocol_version_header: r.headers.get("mcp-protocol-version").map(str::to_string),
            transport_mode: None,
            resume: lei.map(|l| model::Resume {
                last_event_id: l,
                ..Default::default()
            }),
            client_messages: messages,
            response_messages: Vec::new(),
            response_packed: Default::default(),
            events: Vec::new(),
            gap: r.outcome == Outcome::Gap,
            gap_bytes: r.body.gap_bytes,
            transport_mode_sent: r
                .headers
                .0
                .iter()
                .find(|(n, _)| n.to_ascii_lowercase().contains("transport-mode"))
                .map(|(_, v)| v.clone()),
            comments: 0,
            last_retry: None,
            body_unknown: r.body.unknown,
            session_header_known: true,
            packed: Default::default(),
            summary: model::EventSummary::default(),
        };
        let mut stream = stream;
        if let Some(Filing::Pending(orphan, Pending::Orphan)) = self.open.remove(&r.exchange) {
            // The response came first (the request's end was held up, e.g. by a gap): keep what
            // was learned from it.
            let o = *orphan;
            stream.status = o.status;
            stream.response_mark = o.response_mark;
            stream.content_type = o.content_type;
            stream.event_stream = o.event_stream;
            stream.session_id_received = o.session_id_received;
            stream.transport_mode = o.transport_mode;
            stream.events = o.events;
            stream.packed = o.packed;
            stream.ended = o.ended;
            stream.outcome = o.outcome;
            stream.closed_by = o.closed_by;
            stream.response_messages = o.response_messages;
            stream.response_packed = o.response_packed;
            stream.gap |= o.gap_bytes > 0;
            stream.gap_bytes += o.gap_bytes;
        }
        let stream = stream;
        let input = stream.input;
        let ip = r.client.ip();
        let is_initialize = stream
            .requests()
            .any(|m| m.method.as_deref() == Some("initialize"));
        let filing = if let Some(session) = legacy {
            let mut stream = stream;
            stream.transport = StreamTransport::Post;
            let (session, pos) = self.attach(session, stream);
            Filing::Session(session, pos)
        } else if let Some(id) = &sid {
            let session = self.session_for_id(r.server, id, ip, &r.target, r.first, input);
            let (session, pos) = self.attach(session, stream);
            // After attach: a DELETE of a session already finalized ends its continuation.
            if is_delete && let Some(s) = self.live_mut(session) {
                s.deleted = Some(r.first);
            }
            Filing::Session(session, pos)
        } else if is_initialize {
            Filing::Pending(Box::new(stream), Pending::Initialize)
        } else if is_get {
            Filing::Pending(Box::new(stream), Pending::Get)
        } else if is_post {
            Filing::Pending(Box::new(stream), Pending::Stateless)
        } else {
            return;
        };
        self.open.insert(r.exchange, filing);
    }

    fn on_response_head(&mut self, h: &mcpf_http::ResponseHead) {
        self.stats.responses += 1;
        let received = h.headers.get("mcp-session-id").map(str::to_string);
        let mode = h
            .headers
            .0
            .iter()
            .find(|(n, _)| n.to_ascii_lowercase().contains("transport-mode"))
            .map(|(_, v)| v.clone());
        if self.not_mcp.contains(&h.exchange) {
            return;
        }
        if self.stream_mut(h.exchange).is_none() {
            let orphan = self.orphan(h.exchange, h.first);
            self.open.insert(
                h.exchange,
                Filing::Pending(Box::new(orphan), Pending::Orphan),
            );
        }
        let Some(stream) = self.stream_mut(h.exchange) else {
            return;
        };
        stream.status = Some(h.status);
        stream.response_mark = Some(h.first);
        stream.content_type = h.headers.media_type();
        stream.event_stream = h.event_stream;
        stream.session_id_received = received.clone();
        stream.transport_mode = mode.clone();
        let sent = stream.session_id_sent.clone();
        let (status, first) = (h.status, h.first);
        match self.open.remove(&h.exchange) {
            Some(Filing::Pending(stream, Pending::Stateless))
                if received.is_some() && stream.body_unknown =>
            {
                // Only an initialize is answered with a new session ID: the request whose body
                // the source did not record opened this session.
                let stream = *stream;
                let server = self.server_of(&stream);
                let (ip, input) = (stream.client.ip(), stream.input);
                let id = received.as_deref().unwrap_or_default();
                let session =
                    self.session_for_id(server, id, ip, &stream.target, stream.opened, input);
                let (session, pos) = self.attach(session, stream);
                self.open.insert(h.exchange, Filing::Session(session, pos));
            }
            Some(Filing::Pending(stream, Pending::Initialize)) => {
                let stream = *stream;
                if (400..500).contains(&status) {
                    // Streamable HTTP refused: a client may now try the legacy transport.
                    self.rejected.insert(
                        (stream.client.ip(), self.server_of(&stream)),
                        RejectedInitialize {
                            stream: Box::new(stream),
                            status,
                        },
                    );
                    return;
                }
                let server = self.server_of(&stream);
                let ip = stream.client.ip();
                let input = stream.input;
                let session = match &received {
                    Some(id) => {
                        self.session_for_id(server, id, ip, &stream.target, stream.opened, input)
                    }
                    None => {
                        let s = self.new_session(
                            None,
                            server,
                            &stream.target,
                            ip,
                            Transport::StreamableHttp,
                            stream.opened,
                            input,
                        );
                        self.stateless.insert((ip, server), s);
                        s
                    }
                };
                let (session, pos) = self.attach(session, stream);
                self.open.insert(h.exchange, Filing::Session(session, pos));
            }
            Some(Filing::Session(session, pos)) => {
                if let Some(s) = self.live_mut(session) {
                    if mode.is_some() {
                        s.transport_mode_header = mode;
                    }
                    if status == 404 && sent.is_some() {
                        s.forgotten.push(first);
                    }
                }
                self.open.insert(h.exchange, Filing::Session(session, pos));
            }
            Some(other) => {
                self.open.insert(h.exchange, other);
            }
            None => {}
        }
    }

    fn server_of(&self, stream: &Stream) -> SocketAddr {
        stream.server
    }

    fn on_event(&mut self, exchange: ExchangeId, ev: &mcpf_http::sse::SseEvent) {
        if self.not_mcp.contains(&exchange) {
            return;
        }
        let messages = jsonrpc::parse_payload_str(&ev.data);
        let endpoint = (ev.event == "endpoint").then(|| ev.data.trim().to_string());
        let rec = EventRec {
            id: ev.id.as_deref().map(Box::from),
            mark: ev.mark,
            data_hash: hash_data(&ev.data),
            messages: if endpoint.is_some() {
                Box::new([])
            } else {
                messages.into_boxed_slice()
            },
            event_type: (ev.event != "message").then(|| Box::from(&*ev.event)),
            endpoint: endpoint.as_deref().map(Box::from),
            index: ev.index,
            data_len: u32::try_from(ev.data.len()).unwrap_or(u32::MAX),
            retry: ev.retry.map(|r| u32::try_from(r).unwrap_or(u32::MAX)),
            namespace: Namespace::Unknown,
            attribution: Attribution::Unknown,
            priming: ev.priming,
            after_gap: ev.after_gap,
            estimated_time: ev.estimated,
        };
        match self.open.remove(&exchange) {
            Some(Filing::Pending(mut stream, Pending::Get)) if rec.index == 0 => {
                stream.packed.push(&rec);
                if let Some(uri) = endpoint {
                    self.file_legacy(exchange, *stream, &uri);
                } else {
                    self.file_stateless(exchange, *stream);
                }
            }
            Some(Filing::Pending(mut stream, kind)) => {
                stream.packed.push(&rec);
                self.open.insert(exchange, Filing::Pending(stream, kind));
            }
            Some(Filing::Session(s, pos)) => {
                if let Some(stream) = self.live_mut(s).and_then(|x| x.streams.get_mut(pos)) {
                    if rec.after_gap {
                        stream.gap = true;
                    }
                    stream.packed.push(&rec);
                }
                self.open.insert(exchange, Filing::Session(s, pos));
            }
            None => {
                let mut orphan = self.orphan(exchange, rec.mark);
                orphan.event_stream = true;
                orphan.packed.push(&rec);
                self.open
                    .insert(exchange, Filing::Pending(Box::new(orphan), Pending::Orphan));
            }
        }
    }

    /// A GET whose stream opened with an `endpoint` event: the 2024-11-05 transport.
    fn file_legacy(&mut self, exchange: ExchangeId, mut stream: Stream, uri: &str) {
        let server = self.server_of(&stream);
        let ip = stream.client.ip();
        let post_target = path_and_query(uri);
        let session = self.new_session(
            Some(legacy_session_id(uri)),
            server,
            &stream.target,
            ip,
            Transport::LegacySse,
            stream.opened,
            stream.input,
        );
        if let Some(s) = self.live_mut(session) {
            s.legacy_endpoint = Some(post_target.clone());
        }
        self.legacy.insert((server, post_target), session);
        stream.transport = StreamTransport::LegacySse;
        let opened = stream.opened;
        if let Some(rejected) = self.rejected.remove(&(ip, server)) {
            // The client tried Streamable HTTP first, was refused, and fell back: the fallback at
            // connect of the 2025-03-26 backwards-compatibility rules.
            let status = rejected.status;
            let request_id = rejected.stream.requests().next().and_then(|m| m.id.clone());
            let refused_mark = rejected
                .stream
                .response_mark
                .unwrap_or(rejected.stream.opened);
            let (session, refused) = self.attach(session, *rejected.stream);
            let (session, pos) = self.attach(session, stream);
            if let Some(s) = self.live_mut(session) {
                s.fallbacks.push(Fallback {
                    mark: opened,
                    from: "streamable-http".into(),
                    to: "legacy-sse".into(),
                    trigger: format!("POST initialize answered {status}"),
                    request_id,
                    abandoned_stream: Some(refused),
                    to_stream: pos,
                    confirmed: true,
                    frames: vec![refused_mark, opened],
                });
            }
            self.open.insert(exchange, Filing::Session(session, pos));
        } else {
            let (session, pos) = self.attach(session, stream);
            self.open.insert(exchange, Filing::Session(session, pos));
        }
    }

    /// A sessionless exchange: filed under the client's current stateless session.
    fn file_stateless(&mut self, exchange: ExchangeId, stream: Stream) {
        let server = self.server_of(&stream);
        let ip = stream.client.ip();
        let session = match self.stateless.get(&(ip, server)) {
            Some(&s) => s,
            None => {
                let s = self.new_session(
                    None,
                    server,
                    &stream.target,
                    ip,
                    Transport::StreamableHttp,
                    stream.opened,
                    stream.input,
                );
                self.stateless.insert((ip, server), s);
                s
            }
        };
        let (session, pos) = self.attach(session, stream);
        self.open.insert(exchange, Filing::Session(session, pos));
    }

    fn on_end(
        &mut self,
        exchange: ExchangeId,
        outcome: Outcome,
        closed_by: Option<mcpf_model::Direction>,
        mark: Mark,
        body: Option<&mcpf_http::Body>,
        sse: Option<&mcpf_http::sse::SseStats>,
    ) {
        if self.not_mcp.remove(&exchange) {
            return;
        }
        // What an initialize response tells about the session: protocol version, server info.
        let mut initialized: Option<(Option<String>, Option<String>)> = None;
        if let Some(stream) = self.stream_mut(exchange) {
            stream.packed.shrink_to_fit();
            stream.ended = Some(mark);
            stream.outcome = Some(outcome);
            stream.closed_by = closed_by;
            if outcome == Outcome::Gap {
                stream.gap = true;
            }
            if let Some(b) = body {
                stream.body_unknown |= b.unknown;
                stream.gap_bytes += b.gap_bytes;
                let json = stream
                    .content_type
                    .as_deref()
                    .is_some_and(|c| c == "application/json" || c.ends_with("+json"));
                if json && !b.data.is_empty() {
                    let messages = jsonrpc::parse_payload(&b.data);
                    initialized = messages
                        .iter()
                        .find(|m| m.kind == Kind::Response && m.mcp.protocol_version.is_some())
                        .map(|m| (m.mcp.protocol_version.clone(), m.mcp.peer_info.clone()));
                    stream.response_packed = packed::PackedMessages::pack(&messages);
                }
            }
            if let Some(st) = sse {
                stream.comments = st.comments;
                stream.last_retry = st.last_retry;
                if st.dropped_at_gaps > 0 {
                    stream.gap = true;
                }
            }
        }
        match self.open.remove(&exchange) {
            Some(Filing::Session(s, pos)) => {
                let Some(session) = self.live_mut(s) else {
                    return;
                };
                if mark > session.end {
                    session.end = mark;
                }
                if session.streams.get(pos).is_some()
                    && let Some((pv, info)) = initialized
                {
                    if session.protocol_version.is_none() {
                        session.protocol_version = pv;
                    }
                    if info.is_some() {
                        session.server_info = info;
                    }
                }
            }
            Some(Filing::Pending(stream, Pending::Initialize)) => {
                // Never answered: the client gets a session only if something follows; keep it
                // where a stateless session of this client would go.
                self.file_stateless(exchange, *stream);
                self.open.remove(&exchange);
            }
            Some(Filing::Pending(stream, Pending::Orphan)) => {
                // Wait: the request may still come (it is emitted when it ends); filed at finish.
                self.open
                    .insert(exchange, Filing::Pending(stream, Pending::Orphan));
            }
            Some(Filing::Pending(stream, _)) => {
                let has_jsonrpc = stream
                    .client_messages
                    .iter()
                    .any(|m| m.kind != Kind::Malformed);
                let event_stream = stream.event_stream || stream.event_count() > 0;
                if has_jsonrpc || event_stream {
                    self.file_stateless(exchange, *stream);
                    self.open.remove(&exchange);
                }
            }
            None => {}
        }
    }

    /// Ends the build: every session is analysed; returns them all.
    pub fn finish(mut self) -> (Vec<Session>, Vec<HttpAnomaly>, McpStats) {
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

    /// Ends the build: exchanges still open are filed, sources of the same traffic are merged,
    /// and every session not yet finalized is analysed and handed to the session callback.
    pub fn close_all(&mut self) {
        let open: Vec<ExchangeId> = {
            let mut v: Vec<ExchangeId> = self.open.keys().copied().collect();
            v.sort();
            v
        };
        for id in open {
            match self.open.remove(&id) {
                Some(Filing::Pending(stream, Pending::Orphan)) => self.file_orphan(id, *stream),
                Some(Filing::Pending(stream, _)) => self.file_stateless(id, *stream),
                _ => {}
            }
        }
        self.open.clear();
        let mut rejected: Vec<RejectedInitialize> =
            std::mem::take(&mut self.rejected).into_values().collect();
        rejected.sort_by_key(|r| r.stream.exchange);
        for r in rejected {
            let stream = *r.stream;
            let exchange = stream.exchange;
            self.file_stateless(exchange, stream);
            self.open.remove(&exchange);
        }
        if !self.early_finalize {
            // A HAR or log of the same traffic as a capture is matched before analysis.
            // Nothing was finalized yet (sessions are finalized early only without such sources).
            let mut sessions: Vec<Session> = std::mem::take(&mut self.sessions)
                .into_vec()
                .into_iter()
                .flatten()
                .map(|s| *s)
                .collect();
            for st in sessions.iter_mut().flat_map(|s| s.streams.iter_mut()) {
                st.unpack_events();
            }
            let sources = &self.sources;
            analysis::merge_sources(&mut sessions, |input| {
                sources.get(input as usize).is_some_and(|f| f.is_recorded())
            });
            self.by_sid.clear();
            for s in &sessions {
                if let Some(id) = &s.session_id {
                    self.by_sid.entry(id.clone()).or_default().push(s.idx);
                }
            }
            self.active = sessions
                .iter()
                .filter(|s| !s.finalized)
                .map(|s| s.idx)
                .collect();
            self.sessions = sessions
                .into_iter()
                .map(|s| Some(Box::new(s)))
                .collect::<Vec<_>>()
                .into();
        }
        let remaining: Vec<SessionIdx> = self.active.clone();
        for i in remaining {
            self.finalize(i);
        }
    }
}

impl HttpSink for Builder {
    fn on_http(&mut self, event: HttpEvent) {
        match event {
            HttpEvent::Request(r) => self.on_request(&r),
            HttpEvent::ResponseHead(h) => self.on_response_head(&h),
            HttpEvent::SseEvent { exchange, event } => self.on_event(exchange, &event),
            HttpEvent::ResponseEnd(end) => {
                self.on_end(
                    end.exchange,
                    end.outcome,
                    end.closed_by,
                    end.last,
                    Some(&end.body),
                    end.sse.as_ref(),
                );
                self.check_idle(end.last.time);
            }
            HttpEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                mark,
            } => {
                self.on_end(exchange, outcome, closed_by, mark, None, None);
                self.check_idle(mark.time);
            }
            HttpEvent::Anomaly {
                conn, mark, what, ..
            } => self.anomalies.push(HttpAnomaly { conn, mark, what }),
            HttpEvent::ConnectionStart {
                conn,
                client,
                server,
                ..
            } => {
                self.endpoints.insert(conn, (client, server));
            }
            HttpEvent::ConnectionEnd { conn, .. } => {
                self.endpoints.remove(&conn);
                self.not_mcp.retain(|id| id.conn != conn);
                // Orphans of this connection whose request never came are filed now.
                let orphans: Vec<ExchangeId> = self
                    .open
                    .iter()
                    .filter(|(id, f)| {
                        id.conn == conn && matches!(f, Filing::Pending(_, Pending::Orphan))
                    })
                    .map(|(id, _)| *id)
                    .collect();
                for id in orphans {
                    if let Some(Filing::Pending(stream, _)) = self.open.remove(&id) {
                        self.file_orphan(id, *stream);
                        self.open.remove(&id);
                    }
                }
            }
        }
    }
}

/// A request and where its answer came from, for detectors and the timeline.
#[derive(Clone, Debug)]
pub struct Answer<'a> {
    pub stream: usize,
    pub event: Option<usize>,
    pub message: &'a Message,
    pub mark: Mark,
}

/// Every JSON-RPC response or error to `id` in the session, in time order.
pub fn answers<'a>(session: &'a Session, id: &RequestId) -> Vec<Answer<'a>> {
    let mut out = Vec::new();
    for st in &session.streams {
        for m in &st.response_messages {
            if matches!(m.kind, Kind::Response | Kind::Error) && m.id.as_ref() == Some(id) {
                out.push(Answer {
                    stream: st.idx,
                    event: None,
                    message: m,
                    mark: st.ended.or(st.response_mark).unwrap_or(st.opened),
                });
            }
        }
        for (ei, ev) in st.events.iter().enumerate() {
            for m in &ev.messages {
                if matches!(m.kind, Kind::Response | Kind::Error) && m.id.as_ref() == Some(id) {
                    out.push(Answer {
                        stream: st.idx,
                        event: Some(ei),
                        message: m,
                        mark: ev.mark,
                    });
                }
            }
        }
    }
    out.sort_by_key(|a| a.mark);
    out
}
