//! Filing streams under sessions: by `Mcp-Session-Id`, by the legacy transport's endpoint, by
//! client and server for stateless servers; orphans (responses whose request was not seen)
//! under the session their response names.

use std::net::{IpAddr, SocketAddr};

use mcpf_http::ExchangeId;
use mcpf_model::{InputId, Mark};

use super::{Builder, Filing, Identity};
use crate::jsonrpc::Kind;
use crate::model::{
    self, EventIdScheme, Fallback, Session, SessionIdx, Stream, StreamTransport, Transport,
};

impl Builder {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new_session(
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

    pub(super) fn continuation(&mut self, old: SessionIdx, stream: &Stream) -> SessionIdx {
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

    pub(super) fn session_for_id(
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
    pub(super) fn attach(
        &mut self,
        session: SessionIdx,
        mut stream: Stream,
    ) -> (SessionIdx, usize) {
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

    /// Files an orphan: under the session its response names, else the client's last session
    /// at that server, else a stateless one.
    pub(super) fn file_orphan(&mut self, exchange: ExchangeId, stream: Stream) {
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

    /// A GET whose stream opened with an `endpoint` event: the 2024-11-05 transport.
    pub(super) fn file_legacy(&mut self, exchange: ExchangeId, mut stream: Stream, uri: &str) {
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
    pub(super) fn file_stateless(&mut self, exchange: ExchangeId, stream: Stream) {
        let server = self.server_of(&stream);
        let ip = stream.client.ip();
        let session = match self.stateless.get(&(ip, server)) {
            Some(&s) => s,
            None => self.new_stateless_session(&stream),
        };
        let (session, pos) = self.attach(session, stream);
        self.open.insert(exchange, Filing::Session(session, pos));
    }

    /// A new session without an ID, from now on the current stateless session of the stream's
    /// client at its server.
    pub(super) fn new_stateless_session(&mut self, stream: &Stream) -> SessionIdx {
        let server = self.server_of(stream);
        let ip = stream.client.ip();
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

    pub(super) fn server_of(&self, stream: &Stream) -> SocketAddr {
        stream.server
    }
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
