//! The session builder: the state it keeps while exchanges are open, its construction, and
//! the HTTP events it takes. Filing exchanges under sessions is in [`sessions`], what each
//! HTTP event adds to its stream in [`exchanges`], and when a session is over in [`lifetime`].

mod exchanges;
mod lifetime;
mod sessions;

use std::net::{IpAddr, SocketAddr};

use rustc_hash::FxHashMap as HashMap;

use mcpf_http::{ExchangeId, HttpEvent, HttpSink};
use mcpf_model::{ConnId, InputId, Mark, SourceFormat};

use crate::model::{Session, SessionIdx, Stream, Transport};

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

    pub(super) fn is_finalized(&self, idx: SessionIdx) -> bool {
        self.live(idx).is_none_or(|s| s.finalized)
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
