//! Filing streams under sessions: by `Mcp-Session-Id`, by the legacy transport's endpoint, by
//! TCP connection for servers that mint no session ID; orphans (responses whose request was not
//! seen) under the session their response names or their connection carried.

use std::net::{IpAddr, SocketAddr};

use mcpf_model::{ConnId, InputId, Mark};

use super::{Builder, Filing, Identity, RejectedInitialize, UNHELD, UnheldRequest};
use crate::jsonrpc::Kind;
use crate::model::{
    self, EventIdScheme, Fallback, Session, SessionIdx, Stream, StreamTransport, Transport,
};

/// Who a new session record is: what the exchange that opens it carries.
pub(super) struct Opening<'a> {
    pub(super) session_id: Option<String>,
    pub(super) server: SocketAddr,
    pub(super) path: &'a str,
    /// The address the first exchange came from: shown, never used to tie exchanges.
    pub(super) client_ip: IpAddr,
    pub(super) transport: Transport,
    pub(super) mark: Mark,
    pub(super) input: InputId,
}

impl<'a> Opening<'a> {
    /// A Streamable HTTP session opened by `stream`.
    pub(super) fn of(stream: &'a Stream, session_id: Option<String>) -> Opening<'a> {
        Opening {
            session_id,
            server: stream.server,
            path: &stream.target,
            client_ip: stream.client.ip(),
            transport: Transport::StreamableHttp,
            mark: stream.opened,
            input: stream.input,
        }
    }
}

impl Builder {
    pub(super) fn new_session(&mut self, o: Opening<'_>) -> SessionIdx {
        let idx = self.sessions.len();
        self.active.insert(idx);
        if let Some(id) = &o.session_id {
            self.by_sid.entry(id.clone()).or_default().push(idx);
        }
        self.sessions.push(Some(Box::new(Session {
            idx,
            stateless: o.session_id.is_none() && o.transport == Transport::StreamableHttp,
            session_id: o.session_id.clone(),
            server: o.server,
            path: o.path.split('?').next().unwrap_or("").to_string(),
            client_ip: o.client_ip,
            transport: o.transport,
            protocol_version: None,
            revision: crate::revision::Revision::assumed(false),
            client_info: None,
            server_info: None,
            initialize_seen: false,
            initializes: Vec::new(),
            start: o.mark,
            end: o.mark,
            streams: Vec::new(),
            fallbacks: Vec::new(),
            deleted: None,
            forgotten: Vec::new(),
            inputs: vec![o.input],
            legacy_endpoint: None,
            transport_mode_header: None,
            event_id_scheme: EventIdScheme::None,
            event_id_scheme_from: "events",
            lacks: Vec::new(),
            same_session_as: Vec::new(),
            vantage_points: Vec::new(),
            reinitialized_from: None,
            server_mints_ids: None,
            deleted_before: None,
            continues: None,
            merged_sources: Vec::new(),
            frame_order: false,
            events_held: 0,
            exchanges_unheld: 0,
            counts: model::Counts::default(),
            finalized: false,
            over: false,
            open: 0,
            quiet_since: o.mark.time,
            payloads: Default::default(),
        })));
        if let Some(id) = o.session_id
            && o.transport == Transport::StreamableHttp
        {
            self.by_id.insert((o.server, id), idx);
        }
        idx
    }

    /// A new record for a session that was over (finalized, or deleted and done) and is named
    /// again: the identity is the old one's, or what the new exchange carries.
    fn continuation(&mut self, old: SessionIdx, stream: &Stream) -> SessionIdx {
        let (mut opening, legacy, version, stateless) = match self.live(old) {
            Some(o) => (
                Opening {
                    session_id: o.session_id.clone(),
                    server: o.server,
                    path: &stream.target,
                    client_ip: o.client_ip,
                    transport: o.transport,
                    mark: stream.opened,
                    input: stream.input,
                },
                o.legacy_endpoint.clone(),
                o.protocol_version.clone(),
                o.stateless,
            ),
            None => self.continuation_of_retired(old, stream),
        };
        let path = self.live(old).map(|o| o.path.clone());
        // An initialize that mints the ID again starts a session of its own, deleted or not.
        let deleted = match self.live(old) {
            _ if stream.is_initialize() => None,
            Some(o) => o.first_deletion(),
            None => self.retired.get(&old).and_then(|i| i.deleted),
        };
        if let Some(p) = path.as_deref() {
            opening.path = p;
        }
        let (transport, server, id) = (
            opening.transport,
            opening.server,
            opening.session_id.clone(),
        );
        let new = self.new_session(opening);
        if let Some(s) = self.live_mut(new) {
            s.legacy_endpoint = legacy;
            s.protocol_version = version;
            s.stateless = stateless;
            s.continues = Some(old);
            s.deleted_before = deleted;
        }
        for v in self
            .by_id
            .values_mut()
            .chain(self.sessionless.values_mut())
            .chain(self.legacy.values_mut())
            .chain(self.by_conn.values_mut())
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

    /// The identity of a session already handed to the callback: what was kept of it, and what
    /// the exchange that names it again carries.
    fn continuation_of_retired<'a>(
        &self,
        old: SessionIdx,
        stream: &'a Stream,
    ) -> (Opening<'a>, Option<String>, Option<String>, bool) {
        let o = self.retired.get(&old).copied().unwrap_or(Identity {
            transport: Transport::StreamableHttp,
            stateless: stream.session_id_sent.is_none(),
            deleted: None,
        });
        // A legacy session is continued by a POST to its endpoint, which names it.
        let (id, legacy) = match o.transport {
            Transport::LegacySse => (
                Some(legacy_session_id(&stream.target)),
                Some(stream.target.clone()),
            ),
            // An orphan (its request not captured) names it only in its response.
            Transport::StreamableHttp => (
                stream
                    .session_id_sent
                    .clone()
                    .or_else(|| stream.session_id_received.clone()),
                None,
            ),
        };
        let mut opening = Opening::of(stream, id);
        opening.transport = o.transport;
        (
            opening,
            legacy,
            stream.protocol_version_header.clone(),
            o.stateless,
        )
    }

    /// The session `id` names at `server`, made on first sight.
    pub(super) fn session_for_id(&mut self, stream: &Stream, id: &str) -> SessionIdx {
        if let Some(&idx) = self.by_id.get(&(stream.server, id.to_string())) {
            return idx;
        }
        self.new_session(Opening::of(stream, Some(id.to_string())))
    }

    /// Files a stream under a session; returns the session it went to and its position there
    /// ([`UNHELD`] when the session holds as many exchanges as the cap allows: the stream is
    /// counted, not held). A session already over is continued by a new session record with the
    /// same identity.
    pub(super) fn attach(
        &mut self,
        session: SessionIdx,
        mut stream: Stream,
    ) -> (SessionIdx, usize) {
        self.restore(session);
        let session = if self.is_over(session) {
            self.continuation(session, &stream)
        } else {
            session
        };
        self.carried_mcp.insert(stream.exchange.conn);
        self.touch(session, stream.opened.time);
        let cap = self.max_session_exchanges.0;
        let Some(s) = self.live_mut(session) else {
            // Not reachable: a finalized session was continued above.
            return (session, UNHELD);
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
        if s.streams.len() as u64 >= cap {
            s.exchanges_unheld += 1;
            let first = s.exchanges_unheld == 1;
            self.stats.exchanges_unheld += 1;
            self.stats.sessions_capped += u64::from(first);
            self.stats.max_session_exchanges = cap;
            return (session, UNHELD);
        }
        note_initialize(s, &stream);
        s.events_held += stream.event_count() as u64;
        stream.idx = s.streams.len();
        grow_by_a_quarter(&mut s.streams);
        s.streams.push(stream);
        (session, s.streams.len() - 1)
    }

    /// Files a stream under `session`, open until its exchange ends; the connection now carries
    /// that session.
    pub(super) fn file_open(&mut self, session: SessionIdx, stream: Stream) {
        let (id, conn) = (stream.exchange, stream.exchange.conn);
        let request = UnheldRequest {
            delete: stream.method.eq_ignore_ascii_case("DELETE"),
            named_session: stream.session_id_sent.is_some(),
        };
        let (session, pos) = self.attach(session, stream);
        self.carries(conn, session);
        let filing = match pos {
            UNHELD => Filing::Unheld(session, request),
            pos => Filing::Session(session, pos),
        };
        self.open_filing(id, filing);
    }

    /// The connection now carries `session` (and, if it carried another before, is shared).
    fn carries(&mut self, conn: ConnId, session: SessionIdx) {
        if let Some(before) = self.by_conn.insert(conn, session)
            && before != session
            && self.live(before).map(|s| &s.session_id) != self.live(session).map(|s| &s.session_id)
        {
            self.conn_shared.insert(conn);
        }
    }

    /// The session whose exchanges alone a connection carried, when an `initialize` for a new
    /// session comes on it: the client left that session for the new one.
    pub(super) fn left_for_new(&self, conn: ConnId) -> Option<SessionIdx> {
        if self.multiplexed.contains(&conn) {
            return None;
        }
        self.by_conn
            .get(&conn)
            .copied()
            .filter(|_| !self.conn_shared.contains(&conn))
    }

    /// Files a stream whose exchange has ended.
    pub(super) fn file_ended(&mut self, session: SessionIdx, stream: Stream) {
        let conn = stream.exchange.conn;
        let (session, _) = self.attach(session, stream);
        self.carries(conn, session);
    }

    /// Files an orphan whose connection ended: under the session its response names, else the
    /// session its connection carried; with MCP evidence and nothing else, it waits unattributed
    /// for a resume that names one of its events.
    pub(super) fn file_orphan(&mut self, stream: Stream) {
        // An exchange whose request never came is counted here, once.
        self.stats.exchanges_total += 1;
        if let Some(id) = stream.session_id_received.clone() {
            let session = self.session_for_id(&stream, &id);
            self.note_mcp();
            return self.file_ended(session, stream);
        }
        if let Some(&session) = self
            .by_conn
            .get(&stream.exchange.conn)
            .filter(|_| !self.multiplexed.contains(&stream.exchange.conn))
        {
            self.note_mcp();
            return self.file_ended(session, stream);
        }
        if !stream_proves_mcp(&stream) {
            self.note_not_mcp(&stream);
            return;
        }
        self.note_mcp();
        let exchange = stream.exchange;
        self.carried_mcp.insert(exchange.conn);
        if !self.unattributed.hold(stream) {
            self.note_unattributed(exchange);
        }
    }

    /// A resume in `session` whose `Last-Event-ID` a held stream delivered: that stream was
    /// the session's.
    pub(super) fn claim_unattributed(&mut self, session: SessionIdx, last_event_id: &str) {
        for stream in self.unattributed.claim(last_event_id) {
            self.file_ended(session, stream);
        }
    }

    /// The legacy session an MCP POST names in its endpoint URI when the `endpoint` event that
    /// gave that URI is not in the capture (cut, or before it began): the URI is the session's
    /// as much as the event is, and the POSTs to it are grouped by it.
    pub(super) fn legacy_of_target(&mut self, stream: &Stream) -> Option<SessionIdx> {
        if stream.session_id_sent.is_some() || !stream.method.eq_ignore_ascii_case("POST") {
            return None;
        }
        let id = query_session_id(&stream.target)?;
        let mut opening = Opening::of(stream, Some(id));
        opening.transport = Transport::LegacySse;
        let session = self.new_session(opening);
        if let Some(s) = self.live_mut(session) {
            s.legacy_endpoint = Some(stream.target.clone());
        }
        self.legacy
            .insert((stream.server, stream.target.clone()), session);
        Some(session)
    }

    /// A GET whose stream opened with an `endpoint` event: the 2024-11-05 transport.
    pub(super) fn file_legacy(&mut self, mut stream: Stream, uri: &str) {
        let post_target = path_and_query(uri);
        let mut opening = Opening::of(&stream, Some(legacy_session_id(uri)));
        opening.transport = Transport::LegacySse;
        let session = self.new_session(opening);
        if let Some(s) = self.live_mut(session) {
            s.legacy_endpoint = Some(post_target.clone());
        }
        self.legacy.insert((stream.server, post_target), session);
        stream.transport = StreamTransport::LegacySse;
        let conn = stream.exchange.conn;
        let opened = stream.opened;
        let id = stream.exchange;
        let (session, pos) = self.attach(session, stream);
        self.carries(conn, session);
        self.open_filing(id, Filing::Session(session, pos));
        if let Some(rejected) = self.rejected.remove(&conn) {
            self.fallback_at_connect(session, rejected, pos, opened);
        }
    }

    /// A legacy session reached over a connection that had a Streamable HTTP initialize refused:
    /// the client tried Streamable HTTP first, was refused, and fell back (the 2025-03-26
    /// backwards-compatibility rules). The shared connection proves it was the same client.
    pub(super) fn fallback_at_connect(
        &mut self,
        session: SessionIdx,
        rejected: RejectedInitialize,
        sse_stream: usize,
        sse_opened: Mark,
    ) {
        let status = rejected.status;
        let request_id = rejected.stream.requests().next().and_then(|m| m.id.clone());
        let refused_mark = rejected
            .stream
            .response_mark
            .unwrap_or(rejected.stream.opened);
        let (session, refused) = self.attach(session, *rejected.stream);
        if let Some(s) = self.live_mut(session) {
            s.fallbacks.push(Fallback {
                mark: sse_opened,
                from: "streamable-http".into(),
                to: "legacy-sse".into(),
                trigger: format!("POST initialize answered {status}"),
                request_id,
                abandoned_stream: Some(refused),
                to_stream: sse_stream,
                confirmed: true,
                inferred: false,
                frames: vec![refused_mark, sse_opened],
            });
        }
    }

    /// A POST to a legacy endpoint on a connection whose Streamable HTTP initialize was
    /// refused: the session's SSE stream, opened on another connection, was the fallback.
    pub(super) fn claim_rejected(&mut self, session: SessionIdx, conn: ConnId) {
        let Some(rejected) = self.rejected.remove(&conn) else {
            return;
        };
        let sse = self.live(session).and_then(|s| {
            let has_fallback = s.fallbacks.iter().any(|f| f.to == "legacy-sse");
            let st = s
                .streams
                .iter()
                .find(|st| st.transport == StreamTransport::LegacySse)?;
            (!has_fallback && rejected.stream.opened <= st.opened).then_some((st.idx, st.opened))
        });
        match sse {
            Some((pos, opened)) => self.fallback_at_connect(session, rejected, pos, opened),
            None => self.file_sessionless(*rejected.stream),
        }
    }

    /// A sessionless exchange whose exchange has ended: filed under the sessionless session of
    /// its connection.
    pub(super) fn file_sessionless(&mut self, stream: Stream) {
        // An initialize whose answer the capture lost may have been answered with a session
        // ID: sessionless is not proved, and nothing else ties it.
        if stream.is_initialize() && stream.status.is_none() && stream.gap {
            return self.note_unattributed(stream.exchange);
        }
        let session = self.sessionless_session(&stream);
        self.file_ended(session, stream);
    }

    /// A sessionless exchange still open.
    pub(super) fn file_sessionless_open(&mut self, stream: Stream) {
        let session = self.sessionless_session(&stream);
        self.file_open(session, stream);
    }

    /// The session of the sessionless exchanges of the stream's connection, made on first
    /// sight: a server that mints no session ID leaves nothing but the connection to tie a
    /// client's exchanges (and on HTTP/2 not even that: each exchange is alone).
    fn sessionless_session(&mut self, stream: &Stream) -> SessionIdx {
        let conn = stream.exchange.conn;
        // On HTTP/2 the streams of one connection may be any client's: nothing ties them.
        if self.multiplexed.contains(&conn) {
            return self.new_session(Opening::of(stream, None));
        }
        if let Some(&s) = self.sessionless.get(&conn)
            && !self.is_over(s)
        {
            return s;
        }
        let s = self.new_session(Opening::of(stream, None));
        self.sessionless.insert(conn, s);
        s
    }
}

/// What an `initialize` in a stream tells about its session.
fn note_initialize(s: &mut Session, stream: &Stream) {
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
}

/// An orphan proves MCP by what its response says: a session ID, or MCP messages.
pub(super) fn stream_proves_mcp(stream: &Stream) -> bool {
    stream.session_id_received.is_some()
        || stream.response_messages.iter().any(|m| m.is_mcp_evidence())
        || stream.response_packed.mcp_evidence
        || stream.packed.mcp_evidence
}

/// The session parameter of a legacy endpoint URI (`sessionId` in TypeScript, `session_id` in
/// Python), or the whole URI when there is none.
pub(super) fn legacy_session_id(endpoint: &str) -> String {
    query_session_id(endpoint).unwrap_or_else(|| endpoint.to_string())
}

/// The session a legacy endpoint URI names in its query (`session_id` for the Python SDK,
/// `sessionId` for the TypeScript one).
pub(super) fn query_session_id(uri: &str) -> Option<String> {
    let query = uri.split_once('?').map(|(_, q)| q)?;
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.eq_ignore_ascii_case("sessionid") || k.eq_ignore_ascii_case("session_id"))
            .then(|| v.to_string())
    })
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

/// Makes room for one more stream in a session in progress, by a quarter of what it holds (at
/// least four) rather than by doubling: a `Stream` is over 800 bytes, the sessions in progress
/// hold most of the run's memory in them, and a doubled vector is on average a quarter empty
/// (a third just after it grew). Growing by a quarter still copies each stream only a few times
/// over a session's life.
fn grow_by_a_quarter(streams: &mut Vec<Stream>) {
    if streams.len() == streams.capacity() {
        streams.reserve_exact((streams.len() / 4).max(4));
    }
}
