//! What each HTTP event adds: a request opens a stream (or is found not to be MCP), a
//! response head says where the stream belongs, SSE events are packed, the end closes it.

use std::hash::{Hash, Hasher};
use std::net::SocketAddr;

use mcpf_http::{ExchangeId, Headers, Outcome};
use mcpf_model::Mark;

use super::{Builder, Filing, Pending, RejectedInitialize};
use crate::jsonrpc::{self, Kind};
use crate::model::{self, Attribution, EventRec, Namespace, Stream, StreamTransport};
use crate::packed;

impl Builder {
    pub(super) fn on_request(&mut self, r: &mcpf_http::Request) {
        self.stats.exchanges_total += 1;
        let messages = if r.body.data.is_empty() {
            Vec::new()
        } else {
            jsonrpc::parse_payload(&r.body.data)
        };
        let legacy = self.legacy.get(&(r.server, r.target.clone())).copied();
        if !speaks_mcp(r, &messages, legacy.is_some()) {
            // A response that already arrived for it was kept as an orphan: drop it.
            if let Some(Filing::Pending(_, Pending::Orphan)) = self.open.get(&r.exchange) {
                self.open.remove(&r.exchange);
            }
            self.not_mcp.insert(r.exchange);
            return;
        }
        self.stats.exchanges_mcp += 1;
        let mut stream = request_stream(r, messages);
        if let Some(Filing::Pending(orphan, Pending::Orphan)) = self.open.remove(&r.exchange) {
            adopt_orphan(&mut stream, *orphan);
        }
        if let Some(filing) = self.file_request(r, stream, legacy) {
            self.open.insert(r.exchange, filing);
        }
    }

    /// Where a request's stream goes: the legacy session whose endpoint it posts to, the session
    /// it names, or pending until its response (or first event) says.
    fn file_request(
        &mut self,
        r: &mcpf_http::Request,
        mut stream: Stream,
        legacy: Option<model::SessionIdx>,
    ) -> Option<Filing> {
        if let Some(session) = legacy {
            stream.transport = StreamTransport::Post;
            let (session, pos) = self.attach(session, stream);
            return Some(Filing::Session(session, pos));
        }
        if let Some(id) = stream.session_id_sent.clone() {
            let (ip, input) = (r.client.ip(), stream.input);
            let session = self.session_for_id(r.server, &id, ip, &r.target, r.first, input);
            let (session, pos) = self.attach(session, stream);
            // After attach: a DELETE of a session already finalized ends its continuation.
            if r.method.eq_ignore_ascii_case("DELETE")
                && let Some(s) = self.live_mut(session)
            {
                s.deleted = Some(r.first);
            }
            return Some(Filing::Session(session, pos));
        }
        let pending = if stream
            .requests()
            .any(|m| m.method.as_deref() == Some("initialize"))
        {
            Pending::Initialize
        } else if r.method.eq_ignore_ascii_case("GET") {
            Pending::Get
        } else if r.method.eq_ignore_ascii_case("POST") {
            Pending::Stateless
        } else {
            return None;
        };
        Some(Filing::Pending(Box::new(stream), pending))
    }

    pub(super) fn on_response_head(&mut self, h: &mcpf_http::ResponseHead) {
        self.stats.responses += 1;
        let received = h.headers.get("mcp-session-id").map(str::to_string);
        let mode = transport_mode(&h.headers);
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
        let sent = stream.session_id_sent.is_some();
        match self.open.remove(&h.exchange) {
            Some(Filing::Pending(stream, Pending::Stateless))
                if received.is_some() && stream.body_unknown =>
            {
                // Only an initialize is answered with a new session ID: the request whose body
                // the source did not record opened this session.
                let id = received.as_deref().unwrap_or_default();
                self.file_under_id(h.exchange, *stream, id);
            }
            Some(Filing::Pending(stream, Pending::Initialize)) => {
                self.file_initialize(h.exchange, *stream, h.status, received.as_deref());
            }
            Some(Filing::Session(session, pos)) => {
                if let Some(s) = self.live_mut(session) {
                    if mode.is_some() {
                        s.transport_mode_header = mode;
                    }
                    if h.status == 404 && sent {
                        s.forgotten.push(h.first);
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

    /// Files a stream under the session `id` names at its server.
    fn file_under_id(&mut self, exchange: ExchangeId, stream: Stream, id: &str) {
        let server = self.server_of(&stream);
        let (ip, input) = (stream.client.ip(), stream.input);
        let session = self.session_for_id(server, id, ip, &stream.target, stream.opened, input);
        let (session, pos) = self.attach(session, stream);
        self.open.insert(exchange, Filing::Session(session, pos));
    }

    /// An initialize was answered: it opens the session its response names, or a stateless
    /// one; refused (4xx), the client may fall back to the legacy transport.
    fn file_initialize(
        &mut self,
        exchange: ExchangeId,
        stream: Stream,
        status: u16,
        received: Option<&str>,
    ) {
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
        if let Some(id) = received {
            return self.file_under_id(exchange, stream, id);
        }
        let s = self.new_stateless_session(&stream);
        let (session, pos) = self.attach(s, stream);
        self.open.insert(exchange, Filing::Session(session, pos));
    }

    pub(super) fn on_event(&mut self, exchange: ExchangeId, ev: &mcpf_http::sse::SseEvent) {
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

    pub(super) fn on_end(
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
        let initialized = self
            .stream_mut(exchange)
            .and_then(|stream| record_end(stream, outcome, closed_by, mark, body, sse));
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

fn event_stream_accepted(h: &Headers) -> bool {
    h.get_all("accept")
        .any(|v| v.to_ascii_lowercase().contains("text/event-stream"))
}

fn hash_data(data: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    data.hash(&mut h);
    h.finish()
}

/// Whether a request speaks MCP: it names a session, carries JSON-RPC, opens an event stream,
/// posts to a legacy endpoint, or (a source without bodies) is a POST whose Accept names event
/// streams, as the spec makes every MCP POST do.
fn speaks_mcp(r: &mcpf_http::Request, messages: &[jsonrpc::Message], legacy: bool) -> bool {
    let accept_sse = event_stream_accepted(&r.headers);
    let is_post = r.method.eq_ignore_ascii_case("POST");
    r.headers.has("mcp-session-id")
        || messages.iter().any(|m| m.kind != Kind::Malformed)
        || (r.method.eq_ignore_ascii_case("GET") && accept_sse)
        || legacy
        || (is_post && r.body.unknown && accept_sse)
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
    stream.protocol_version_header = header("mcp-protocol-version");
    stream.resume = header("last-event-id").map(|l| model::Resume {
        last_event_id: l,
        ..Default::default()
    });
    stream.client_messages = messages;
    stream.gap = r.outcome == Outcome::Gap;
    stream.gap_bytes = r.body.gap_bytes;
    stream.transport_mode_sent = transport_mode(&r.headers);
    stream.body_unknown = r.body.unknown;
    stream
}

/// The response came first (the request's end was held up, e.g. by a gap): keep what was
/// learned from it.
fn adopt_orphan(stream: &mut Stream, o: Stream) {
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

/// A transport-mode header (a server's token that the client echoes to resume safely).
fn transport_mode(headers: &Headers) -> Option<String> {
    headers
        .0
        .iter()
        .find(|(n, _)| n.to_ascii_lowercase().contains("transport-mode"))
        .map(|(_, v)| v.clone())
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
    initialized
}
