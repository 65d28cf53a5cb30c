//! What each HTTP event adds: a request opens a stream (or is found not to be MCP), a
//! response head says where the stream belongs, SSE events are packed, the end closes it.
//!
//! Traffic is MCP only on MCP evidence: a request naming an `Mcp-Session-Id` or an
//! `MCP-Protocol-Version`, calling an MCP method, or posting to a legacy endpoint; a response
//! minting a session ID or answering `initialize`; an event stream opening with the legacy
//! `endpoint` event or carrying MCP messages. Other JSON-RPC and other SSE feeds are counted as
//! what they are.

use std::hash::{Hash, Hasher};
use std::net::SocketAddr;

use mcpf_http::{ExchangeId, Headers, Outcome};
use mcpf_model::{ConnId, Mark};

use super::sessions::stream_proves_mcp;
use super::{Builder, Filing, Pending, RejectedInitialize, UNHELD, UnheldRequest, carriers};
use crate::jsonrpc::{self, Kind};
use crate::model::{
    self, Attribution, EventRec, Namespace, RareEvent, SessionIdx, Stream, StreamTransport,
};
use crate::packed;

/// What a request itself says about being MCP.
enum Says {
    /// It names a session.
    Session(String),
    /// It posts to the endpoint of a legacy session.
    Legacy(SessionIdx),
    /// MCP by its method or headers, without a session.
    Mcp,
    /// A GET for an event stream: its events will tell.
    EventStream,
    /// JSON-RPC, or a body the source did not record: its response will tell.
    Unproven,
    /// Cut before it named a session, MCP by this method: its response may name one.
    Cut(Box<str>),
    NotMcp,
}

impl Builder {
    pub(super) fn on_request(
        &mut self,
        r: &mcpf_http::Request,
        mut messages: Vec<jsonrpc::Message>,
    ) {
        self.stats.exchanges_total += 1;
        // A body cut short (a snap length, a loss) is not malformed: what its first bytes show
        // of the message is kept, and the rest is not known.
        if r.body.gap_bytes > 0 && messages.iter().all(|m| m.kind == Kind::Malformed) {
            messages = jsonrpc::Message::cut(&r.body.data).into_iter().collect();
        }
        if r.version == mcpf_http::HTTP2_VERSION {
            self.multiplexed.insert(r.exchange.conn);
        }
        self.note_time(r.first.time);
        let legacy = self.legacy.get(&(r.server, r.target.clone())).copied();
        let cut = legacy
            .is_none()
            .then(|| Self::cut_mcp_method(r, &messages))
            .flatten();
        let says = match cut {
            Some(method) => Says::Cut(method),
            None => what_request_says(r, &messages, legacy),
        };
        if let Says::NotMcp = says {
            self.not_mcp_request(r, &messages);
            return;
        }
        let messages = super::prepared::read_now(r, messages);
        let mut stream = request_stream(r, messages);
        if let Some(Filing::Pending(orphan, Pending::Orphan)) = self.take_filing(r.exchange) {
            adopt_orphan(&mut stream, *orphan);
        }
        self.file_request(r, stream, says);
    }

    /// The method that shows a request cut before it named a session to be MCP: by what is
    /// left of its body (a message parsed whole, or the first bytes of one).
    fn cut_mcp_method(r: &mcpf_http::Request, messages: &[jsonrpc::Message]) -> Option<Box<str>> {
        if r.head_complete || r.headers.has("mcp-session-id") {
            return None;
        }
        match messages.iter().find(|m| m.is_mcp_evidence()) {
            Some(m) => m.method.as_deref().map(Into::into),
            None => crate::prefix::method_in_prefix(&r.body.data)
                .filter(|m| jsonrpc::is_mcp_method(m))
                .map(Into::into),
        }
    }

    /// A cut MCP request nothing filed under a session: counted, with its method.
    pub(super) fn note_cut(&mut self, conn: ConnId, method: &str) {
        self.carried_mcp.insert(conn);
        const METHODS_KEPT: usize = 8;
        self.stats.requests_cut += 1;
        let seen = &mut self.stats.requests_cut_methods;
        if seen.len() < METHODS_KEPT && !seen.iter().any(|m| m == method) {
            seen.push(method.to_string());
        }
    }

    /// Nothing more of `exchange` is filed; a response that already arrived for it (kept as an
    /// orphan) is dropped.
    fn ignore(&mut self, exchange: ExchangeId) {
        if let Some(Filing::Pending(_, Pending::Orphan)) = self.open.get(&exchange) {
            self.take_filing(exchange);
        }
        self.not_mcp.insert(exchange);
    }

    /// A request with no MCP evidence: counted, and its response will not be an orphan.
    fn not_mcp_request(&mut self, r: &mcpf_http::Request, messages: &[jsonrpc::Message]) {
        if messages.iter().any(|m| m.kind != Kind::Malformed) {
            self.stats.jsonrpc_not_mcp += 1;
        }
        self.ignore(r.exchange);
    }

    /// Where a request's stream goes: the legacy session whose endpoint it posts to, the session
    /// it names, or pending until its response (or first events) say.
    fn file_request(&mut self, r: &mcpf_http::Request, mut stream: Stream, says: Says) {
        let says = match says {
            Says::Mcp | Says::Cut(_) => match self.legacy_of_target(&stream) {
                Some(session) => Says::Legacy(session),
                None => says,
            },
            other => other,
        };
        let pending = match says {
            Says::Legacy(session) => {
                self.note_mcp();
                stream.transport = StreamTransport::Post;
                self.file_open(session, stream);
                return self.claim_rejected(session, r.exchange.conn);
            }
            Says::Session(id) => {
                self.note_mcp();
                let resume = stream.resume.as_ref().map(|x| x.last_event_id.clone());
                let session = self.session_for_id(&stream, &id);
                self.file_open(session, stream);
                let Some(session) = self.open_session(r.exchange) else {
                    return;
                };
                if let Some(lei) = resume {
                    self.claim_unattributed(session, &lei);
                }
                return;
            }
            Says::Mcp if stream.is_initialize() => Pending::Initialize,
            Says::Mcp => Pending::Sessionless,
            Says::EventStream => Pending::Get,
            Says::Unproven => Pending::Unproven,
            Says::Cut(method) => Pending::Cut(method),
            Says::NotMcp => return,
        };
        if matches!(pending, Pending::Initialize | Pending::Sessionless) {
            self.note_mcp();
        }
        self.open_filing(r.exchange, Filing::Pending(Box::new(stream), pending));
    }

    /// The session of an exchange filed open.
    fn open_session(&self, id: ExchangeId) -> Option<SessionIdx> {
        match self.open.get(&id)? {
            Filing::Session(s, _) | Filing::Unheld(s, _) => Some(*s),
            Filing::Pending(..) => None,
        }
    }

    pub(super) fn on_response_head(&mut self, h: &mcpf_http::ResponseHead) {
        self.stats.responses += 1;
        if h.version == mcpf_http::HTTP2_VERSION {
            self.multiplexed.insert(h.exchange.conn);
        }
        if self.not_mcp.contains(&h.exchange) {
            return;
        }
        if let Some(&Filing::Unheld(s, request)) = self.open.get(&h.exchange) {
            return self.unheld_answered(s, request, h);
        }
        if self.stream_mut(h.exchange).is_none() {
            let orphan = self.orphan(h.exchange, h.first);
            self.open_filing(
                h.exchange,
                Filing::Pending(Box::new(orphan), Pending::Orphan),
            );
        }
        let received = h.headers.get("mcp-session-id").map(str::to_string);
        let mode = transport_mode(&h.headers);
        let Some(stream) = self.stream_mut(h.exchange) else {
            return;
        };
        stream.status = Some(h.status);
        stream.response_mark = Some(h.first);
        stream.content_type = h.headers.media_type();
        stream.event_stream = h.event_stream;
        stream.upstream = h.upstream.clone();
        stream.session_id_received = received.clone();
        stream.transport_mode = mode.clone();
        let sent = stream.session_id_sent.is_some();
        if received.is_some() && !sent {
            let endpoint = minting_key(stream);
            self.note_minting(endpoint, h.first);
        }
        match self.take_filing(h.exchange) {
            Some(Filing::Pending(
                stream,
                Pending::Sessionless | Pending::Unproven | Pending::Cut(_),
            )) if received.is_some() => {
                // Only an initialize is answered with a new session ID: the request (whose
                // body the source may not have recorded) opened this session.
                self.note_mcp();
                let id = received.as_deref().unwrap_or_default();
                let session = self.session_for_id(&stream, id);
                self.file_open(session, *stream);
            }
            Some(Filing::Pending(stream, Pending::Initialize)) => {
                self.file_initialize(*stream, h.status, received.as_deref());
            }
            Some(Filing::Pending(stream, Pending::Sessionless)) => {
                self.file_sessionless_open(*stream);
            }
            Some(Filing::Session(session, pos)) => {
                if let Some(s) = self.live_mut(session) {
                    if mode.is_some() {
                        s.transport_mode_header = mode;
                    }
                    if h.status == 404 && sent {
                        s.forgotten.push(h.first);
                    }
                    // Deleted once a DELETE is answered 2xx, then: a server may refuse it (405),
                    // and the session then goes on; a request it served while the DELETE was in
                    // flight was served before.
                    if let Some(st) = s.streams.get(pos)
                        && (200..300).contains(&h.status)
                        && st.method.eq_ignore_ascii_case("DELETE")
                    {
                        s.deleted = Some(h.first);
                    }
                }
                self.open_filing(h.exchange, Filing::Session(session, pos));
            }
            Some(other) => self.open_filing(h.exchange, other),
            None => {}
        }
    }

    /// An exchange past its session's cap was answered: what the answer says of the session
    /// (deleted, forgotten) still holds.
    fn unheld_answered(&mut self, s: SessionIdx, r: UnheldRequest, h: &mcpf_http::ResponseHead) {
        if let Some(s) = self.live_mut(s) {
            if h.status == 404 && r.named_session {
                s.forgotten.push(h.first);
            }
            if r.delete && (200..300).contains(&h.status) {
                s.deleted = Some(h.first);
            }
        }
    }

    /// An initialize was answered: it opens the session its response names, or a sessionless
    /// one; refused (4xx), the client may fall back to the legacy transport over the same
    /// connection.
    fn file_initialize(&mut self, stream: Stream, status: u16, received: Option<&str>) {
        if (400..500).contains(&status) {
            let conn = stream.exchange.conn;
            self.rejected.insert(
                conn,
                RejectedInitialize {
                    stream: Box::new(stream),
                    status,
                },
            );
            return;
        }
        match received {
            Some(id) => {
                let left = self.left_for_new(stream.exchange.conn);
                let at = stream.opened;
                let session = self.session_for_id(&stream, id);
                self.file_open(session, stream);
                self.note_reinitialized(left, session, at);
            }
            None => self.file_sessionless_open(stream),
        }
    }

    /// A session initialized on the connection of `left`, another session: its client's last.
    fn note_reinitialized(&mut self, left: Option<SessionIdx>, session: SessionIdx, at: Mark) {
        let Some(old) = left.filter(|&o| o != session) else {
            return;
        };
        let Some(old_id) = self.live(old).and_then(|o| o.session_id.clone()) else {
            return;
        };
        if let Some(s) = self.live_mut(session)
            && s.session_id.as_deref() != Some(old_id.as_str())
            && s.reinitialized_from.is_none()
        {
            s.reinitialized_from = Some(model::Reinitialized {
                session: old,
                session_id: old_id,
                at,
            });
        }
    }

    pub(super) fn on_event(
        &mut self,
        exchange: ExchangeId,
        ev: &mcpf_http::sse::SseEvent,
        mut rec: EventRec,
    ) {
        if self.not_mcp.contains(&exchange) {
            return;
        }
        if self.past_event_cap(exchange, rec.after_gap) {
            return;
        }
        rec.set_data(self.payloads.append(ev.data.as_bytes()));
        match self.open.get_mut(&exchange) {
            Some(Filing::Pending(stream, Pending::Get)) => {
                let endpoint = rec.rare.as_ref().and_then(|r| r.endpoint.clone());
                stream.packed.push(rec);
                self.resolve_get(exchange, endpoint.as_deref());
            }
            Some(Filing::Pending(stream, _)) => stream.packed.push(rec),
            Some(Filing::Unheld(..)) => {}
            Some(&mut Filing::Session(s, pos)) => {
                if self.flush.is_some() {
                    self.touch(s, rec.mark.time);
                    self.flush_quiet(rec.mark.time);
                }
                // Noted before the stream takes the event, at the position it takes.
                self.note_carrier(s, pos, &rec);
                if let Some(session) = self.live_mut(s) {
                    session.events_held += 1;
                    if let Some(stream) = session.streams.get_mut(pos) {
                        stream.gap |= rec.after_gap;
                        stream.packed.push(rec);
                    }
                }
            }
            None => {
                let mut orphan = self.orphan(exchange, rec.mark);
                orphan.event_stream = true;
                orphan.packed.push(rec);
                self.open_filing(exchange, Filing::Pending(Box::new(orphan), Pending::Orphan));
            }
        }
    }

    /// Files the next event of stream `pos` of session `s` in the index of IDs carried across
    /// sessions; a resume's event another session carried first is noted on the stream.
    fn note_carrier(&mut self, s: SessionIdx, pos: usize, rec: &EventRec) {
        let Some(id) = rec
            .id
            .as_deref()
            .filter(|id| carriers::unique_by_construction(id))
        else {
            return;
        };
        let Some(session) = self.sessions.get(s).and_then(|x| x.as_deref()) else {
            return;
        };
        let (Some(sid), Some(stream)) = (session.session_id.as_deref(), session.streams.get(pos))
        else {
            return;
        };
        let arrival = carriers::Arrival {
            id,
            session: s,
            session_id: sid,
            input: stream.input,
            exchange: stream.exchange,
            mark: rec.mark,
            data: rec.data(),
            event: u32::try_from(stream.packed.len()).unwrap_or(u32::MAX),
            on_resume: stream.resume.is_some(),
        };
        let foreign = self.carriers.arrive(&arrival);
        self.stats.event_ids_not_indexed = self.carriers.not_indexed;
        if let Some(f) = foreign
            && let Some(stream) = self.live_mut(s).and_then(|x| x.streams.get_mut(pos))
        {
            stream.foreign_events.push(f);
        }
    }

    /// An event of a session (or of a stream not yet filed under one) that already holds as
    /// many as the cap allows: counted on its stream instead of held.
    fn past_event_cap(&mut self, exchange: ExchangeId, after_gap: bool) -> bool {
        let held = match self.open.get(&exchange) {
            Some(Filing::Pending(stream, _)) => stream.packed.len() as u64,
            Some(&Filing::Session(s, _)) => self.live(s).map_or(0, |s| s.events_held),
            Some(Filing::Unheld(..)) => 0,
            None => 0,
        };
        let cap = self.max_session_events.0;
        if held < cap {
            return false;
        }
        let Some(stream) = self.stream_mut(exchange) else {
            return false;
        };
        stream.gap |= after_gap;
        stream.events_unheld += 1;
        let first = stream.events_unheld == 1;
        self.stats.events_unheld += 1;
        self.stats.streams_capped += u64::from(first);
        self.stats.max_session_events = cap;
        true
    }

    /// A sessionless GET stream proves what it is by its events: the legacy transport's
    /// `endpoint` first, or MCP messages (a server without sessions); until then it waits.
    fn resolve_get(&mut self, exchange: ExchangeId, endpoint: Option<&str>) {
        let proven = match self.open.get(&exchange) {
            Some(Filing::Pending(stream, Pending::Get)) => stream.packed.mcp_evidence,
            _ => false,
        };
        if !proven {
            return;
        }
        let Some(Filing::Pending(stream, _)) = self.take_filing(exchange) else {
            return;
        };
        self.note_mcp();
        // A request that named no session (its head cut, often) whose response did: the
        // server's header is the evidence.
        if let Some(id) = stream.session_id_received.clone() {
            let session = self.session_for_id(&stream, &id);
            return self.file_open(session, *stream);
        }
        match endpoint {
            Some(uri) if stream.packed.len() == 1 => self.file_legacy(*stream, uri),
            _ => self.file_sessionless_open(*stream),
        }
    }

    pub(super) fn on_end(
        &mut self,
        exchange: ExchangeId,
        outcome: Outcome,
        closed_by: Option<mcpf_model::Direction>,
        mark: Mark,
        (body, messages): ReadBody<'_>,
        sse: Option<&mcpf_http::sse::SseStats>,
    ) {
        self.note_time(mark.time);
        if self.not_mcp.remove(&exchange) {
            return;
        }
        let is_json = |st: &Stream| {
            st.content_type
                .as_deref()
                .is_some_and(|c| c == "application/json" || c.ends_with("+json"))
        };
        let kept = match (self.stream_mut(exchange), body) {
            (Some(st), Some(b)) if is_json(st) && !b.data.is_empty() => {
                self.payloads.append(&b.data)
            }
            _ => None,
        };
        let initialized = self.stream_mut(exchange).and_then(|stream| {
            stream.response_data = stream.response_data.or(kept);
            record_end(stream, outcome, closed_by, mark, body, sse, messages)
        });
        match self.take_filing(exchange) {
            Some(Filing::Session(s, pos)) => self.session_exchange_ended(s, pos, mark, initialized),
            Some(Filing::Unheld(s, _)) => self.session_exchange_ended(s, UNHELD, mark, None),
            Some(Filing::Pending(stream, Pending::Orphan)) => {
                // Wait: the request may still come (it is emitted when it ends); filed when
                // the connection ends.
                self.open_filing(exchange, Filing::Pending(stream, Pending::Orphan));
            }
            Some(Filing::Pending(stream, pending)) => self.pending_ended(*stream, pending),
            None => {}
        }
    }

    /// An exchange of a session ended: the session's end and what its initialize answer said.
    fn session_exchange_ended(
        &mut self,
        s: SessionIdx,
        pos: usize,
        mark: Mark,
        initialized: Option<Initialized>,
    ) {
        self.touch(s, mark.time);
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
        self.end_if_over(s);
    }

    /// An exchange ended before anything filed it under a session.
    fn pending_ended(&mut self, stream: Stream, pending: Pending) {
        match pending {
            // Never answered, or answered without a session: the client gets one only if
            // something follows; it stays with the connection's sessionless exchanges.
            Pending::Initialize | Pending::Sessionless => self.file_sessionless(stream),
            Pending::Get => {
                self.stats.event_streams_not_mcp += 1;
            }
            Pending::Unproven if stream_proves_mcp(&stream) => {
                self.note_mcp();
                self.file_sessionless(stream);
            }
            Pending::Unproven => self.note_not_mcp(&stream),
            Pending::Cut(method) => self.note_cut(stream.exchange.conn, &method),
            Pending::Orphan => {}
        }
    }

    /// An exchange proved to be MCP.
    pub(super) fn note_mcp(&mut self) {
        self.stats.exchanges_mcp += 1;
    }

    /// An exchange whose request or response was seen and proved nothing: counted as what it
    /// is.
    pub(super) fn note_not_mcp(&mut self, stream: &Stream) {
        if stream.event_stream || stream.event_count() > 0 {
            self.stats.event_streams_not_mcp += 1;
        } else if stream.response_packed.jsonrpc
            || stream
                .client_messages
                .iter()
                .any(|m| m.kind != Kind::Malformed)
        {
            self.stats.jsonrpc_not_mcp += 1;
        }
    }

    /// An MCP exchange nothing ties to a session.
    pub(super) fn note_unattributed(&mut self, exchange: ExchangeId) {
        self.carried_mcp.insert(exchange.conn);
        self.stats.unattributed += 1;
        if self.stats.unattributed_examples.len() < 10 {
            self.stats.unattributed_examples.push(exchange.to_string());
        }
    }

    /// A stream record for an exchange whose request was not seen.
    pub(super) fn orphan(&self, exchange: ExchangeId, mark: Mark) -> Stream {
        let unknown: SocketAddr = SocketAddr::from(([0, 0, 0, 0], 0));
        let (client, server) = self
            .endpoints
            .get(&exchange.conn)
            .copied()
            .unwrap_or((unknown, unknown));
        Stream::new(exchange, StreamTransport::Get, mark, client, server)
    }
}

/// What a request's headers, method and body say of it.
fn what_request_says(
    r: &mcpf_http::Request,
    messages: &[jsonrpc::Message],
    legacy: Option<SessionIdx>,
) -> Says {
    if let Some(id) = r.headers.get("mcp-session-id") {
        return Says::Session(id.to_string());
    }
    if let Some(session) = legacy {
        return Says::Legacy(session);
    }
    if r.headers.has("mcp-protocol-version") || messages.iter().any(|m| m.is_mcp_evidence()) {
        return Says::Mcp;
    }
    let accept_sse = event_stream_accepted(&r.headers);
    if r.method.eq_ignore_ascii_case("GET") && accept_sse {
        return Says::EventStream;
    }
    let jsonrpc = messages.iter().any(|m| m.kind != Kind::Malformed);
    // A source without bodies (an access log) still shows a POST that may be MCP by its Accept
    // header, which the spec makes name both JSON and event streams, or by nothing when it did
    // not log Accept (absent is then not "no"): its response decides, by a session ID minted
    // in it say.
    let unseen_post = r.method.eq_ignore_ascii_case("POST")
        && r.body.unknown
        && (accept_sse || !r.headers.has("accept"));
    if jsonrpc || unseen_post {
        return Says::Unproven;
    }
    Says::NotMcp
}

/// The stream an MCP request opens.
fn request_stream(r: &mcpf_http::Request, messages: Vec<jsonrpc::Message>) -> Stream {
    let transport = if r.method.eq_ignore_ascii_case("GET") {
        StreamTransport::Get
    } else {
        StreamTransport::Post
    };
    let header = |name: &str| r.headers.get(name).map(str::to_string);
    let mut stream = Stream::new(r.exchange, transport, r.first, r.client, r.server);
    stream.method = r.method.clone();
    stream.target = r.target.clone();
    stream.session_id_sent = header("mcp-session-id");
    stream.accept_sse = event_stream_accepted(&r.headers);
    stream.client_batch = r.body.data.trim_ascii_start().first() == Some(&b'[');
    stream.protocol_version_header = header("mcp-protocol-version");
    stream.host = header("host");
    stream.resume = header("last-event-id").map(|l| {
        Box::new(model::Resume {
            last_event_id: l,
            ..Default::default()
        })
    });
    stream.client_messages = messages;
    stream.gap = r.outcome == Outcome::Gap;
    stream.gap_bytes = r.body.gap_bytes;
    stream.snaplen_bytes = r.body.snaplen_bytes;
    stream.inconsistent_bytes = r.body.inconsistent_bytes;
    stream.transport_mode_sent = transport_mode(&r.headers);
    stream.body_unknown = r.body.unknown;
    stream
}

/// The response came first (the request's end was held up, e.g. by a gap): keep what was
/// learned from it.
fn adopt_orphan(stream: &mut Stream, o: Stream) {
    stream.status = o.status;
    stream.response_mark = o.response_mark;
    stream.upstream = o.upstream;
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
    stream.snaplen_bytes += o.snaplen_bytes;
    stream.inconsistent_bytes += o.inconsistent_bytes;
}

/// A transport-mode header (a server's token that the client echoes to resume safely).
fn transport_mode(headers: &Headers) -> Option<String> {
    const NAME: &[u8] = b"transport-mode";
    // Every request asks this of every header: compared in place, not lowercased into a copy.
    let names = |n: &str| {
        n.as_bytes()
            .windows(NAME.len())
            .any(|w| w.eq_ignore_ascii_case(NAME))
    };
    headers
        .0
        .iter()
        .find(|(n, _)| names(n))
        .map(|(_, v)| v.clone())
}

/// A response body, with its messages when they were read already.
pub(super) type ReadBody<'a> = (Option<&'a mcpf_http::Body>, Option<Vec<jsonrpc::Message>>);

/// The compact record of an SSE event.
pub(super) fn event_rec(ev: &mcpf_http::sse::SseEvent) -> EventRec {
    let endpoint = (ev.event == "endpoint").then(|| ev.data.trim().to_string());
    let messages = if endpoint.is_some() {
        Box::new([])
    } else {
        jsonrpc::parse_payload_str(&ev.data).into_boxed_slice()
    };
    EventRec {
        id: ev.id.as_deref().map(Box::from),
        mark: ev.mark,
        data_hash: hash_data(&ev.data),
        data_at: 0,
        messages,
        rare: RareEvent::boxed(
            (ev.event != "message").then(|| Box::from(&*ev.event)),
            endpoint.as_deref().map(Box::from),
            ev.retry.map(|r| u32::try_from(r).unwrap_or(u32::MAX)),
        ),
        index: ev.index,
        data_len: u32::try_from(ev.data.len()).unwrap_or(u32::MAX),
        namespace: Namespace::Unknown,
        attribution: Attribution::Unknown,
        priming: ev.priming,
        after_gap: ev.after_gap,
        estimated_time: ev.estimated,
    }
}

/// What an initialize response tells about its session: protocol version and server info.
type Initialized = (Option<String>, Option<String>);

/// Records how a stream ended, with its JSON response body; returns what the body says of the
/// session when it answers an initialize.
fn record_end(
    stream: &mut Stream,
    outcome: Outcome,
    closed_by: Option<mcpf_model::Direction>,
    mark: Mark,
    body: Option<&mcpf_http::Body>,
    sse: Option<&mcpf_http::sse::SseStats>,
    messages: Option<Vec<jsonrpc::Message>>,
) -> Option<Initialized> {
    let mut initialized = None;
    stream.packed.shrink_to_fit();
    stream.ended = Some(mark);
    stream.outcome = Some(outcome);
    stream.closed_by = closed_by;
    if outcome == Outcome::Gap {
        stream.gap = true;
    }
    if let Some(b) = body {
        stream.body_unknown |= b.unknown || b.not_decoded;
        stream.body_not_decoded |= b.not_decoded;
        stream.gap |= b.gap_bytes > 0;
        stream.gap_bytes += b.gap_bytes;
        stream.snaplen_bytes += b.snaplen_bytes;
        stream.inconsistent_bytes += b.inconsistent_bytes;
        let json = stream
            .content_type
            .as_deref()
            .is_some_and(|c| c == "application/json" || c.ends_with("+json"));
        if json && !b.data.is_empty() {
            let messages = messages.unwrap_or_else(|| jsonrpc::parse_payload(&b.data));
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
    initialized
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

impl Builder {
    /// A server minted a session ID at `endpoint`, at `at`.
    fn note_minting(&mut self, endpoint: super::MintingKey, at: Mark) {
        let full = self.minting.len() >= super::MAX_MINTING_SERVERS;
        if full && !self.minting.contains_key(&endpoint) {
            self.stats.minting_servers_not_kept += 1;
            return;
        }
        self.minting.entry(endpoint).or_insert(at);
    }
}

/// Which server a request asked: its address, `Host` and endpoint path.
pub(super) fn minting_key(stream: &Stream) -> super::MintingKey {
    let host = stream.host.clone().unwrap_or_default();
    (
        stream.server,
        host,
        endpoint_path(&stream.target).to_string(),
    )
}

/// The path a session's endpoint is known by: the request target without its query.
pub(super) fn endpoint_path(target: &str) -> &str {
    target.split('?').next().unwrap_or("")
}
