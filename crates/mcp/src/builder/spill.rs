//! Quiet sessions on disk. A session with nothing open is not over (silence never ends one),
//! but a client that never sends `DELETE` leaves it quiet until the end of the capture; a day
//! of such clients would hold every one in memory. A session quiet for a while is written to
//! the run's spill file in the compact form below and read back the moment an exchange names
//! it again, or when the inputs end. What is spilled is what an unanalysed session holds; the
//! fields analysis fills are empty then.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use mcpf_http::{ExchangeId, Outcome};
use mcpf_model::{ConnId, Direction, FrameRef, Mark, Timestamp};

use crate::model::{
    self, EventIdScheme, Fallback, ForeignEvent, Resume, Session, Stream, StreamTransport,
    Transport,
};
use crate::packed::{
    PackedEvents, PackedMessages, Reader, put_i64, put_message, put_opt_str, put_request_id,
    put_str, put_u64, read_message, read_request_id,
};
use crate::payloads::PayloadRef;

/// A quiet, unanalysed session as bytes.
pub(super) fn encode(s: &Session) -> Vec<u8> {
    debug_assert!(!s.finalized && s.lacks.is_empty() && s.merged_sources.is_empty());
    let w = &mut Vec::with_capacity(4096);
    put_u64(w, s.idx as u64);
    flags(
        w,
        &[
            s.stateless,
            s.initialize_seen,
            s.over,
            s.transport == Transport::LegacySse,
        ],
    );
    for t in [
        &s.session_id,
        &s.protocol_version,
        &s.client_info,
        &s.server_info,
        &s.legacy_endpoint,
        &s.transport_mode_header,
    ] {
        opt_str(w, t.as_deref());
    }
    put_str(w, &s.path);
    addr(w, s.server);
    ip(w, s.client_ip);
    marks(w, &s.initializes);
    mark(w, s.start);
    mark(w, s.end);
    opt_mark(w, s.deleted);
    opt_mark(w, s.deleted_before);
    marks(w, &s.forgotten);
    put_u64(w, s.inputs.len() as u64);
    for i in &s.inputs {
        put_u64(w, u64::from(*i));
    }
    put_u64(w, u64::from(s.open));
    put_u64(w, s.exchanges_unheld);
    put_u64(w, s.continues.map_or(0, |c| c as u64 + 1));
    match &s.reinitialized_from {
        Some(r) => {
            w.push(1);
            put_u64(w, r.session as u64);
            put_str(w, &r.session_id);
            mark(w, r.at);
        }
        None => w.push(0),
    }
    put_u64(w, s.fallbacks.len() as u64);
    for f in &s.fallbacks {
        fallback(w, f);
    }
    put_u64(w, s.streams.len() as u64);
    for st in &s.streams {
        stream(w, st);
    }
    std::mem::take(w)
}

/// The session [`encode`] wrote; `None` if the bytes are not such a session.
pub(super) fn decode(bytes: &[u8]) -> Option<Session> {
    let r = &mut Reader::new(bytes);
    let idx = usize::try_from(r.u64()?).ok()?;
    let [stateless, initialize_seen, over, legacy] = read_flags(r)?;
    let mut texts: [Option<String>; 6] = Default::default();
    for t in &mut texts {
        *t = read_opt_str(r)?;
    }
    let [
        session_id,
        protocol_version,
        client_info,
        server_info,
        legacy_endpoint,
        transport_mode_header,
    ] = texts;
    let path = r.str()?.to_string();
    let server = read_addr(r)?;
    let client_ip = read_ip(r)?;
    let initializes = read_marks(r)?;
    let start = read_mark(r)?;
    let end = read_mark(r)?;
    let deleted = read_opt_mark(r)?;
    let deleted_before = read_opt_mark(r)?;
    let forgotten = read_marks(r)?;
    let inputs = (0..r.u64()?)
        .map(|_| r.u64().and_then(|i| u32::try_from(i).ok()))
        .collect::<Option<Vec<_>>>()?;
    let open = u32::try_from(r.u64()?).ok()?;
    let exchanges_unheld = r.u64()?;
    let continues = r.u64()?.checked_sub(1).map(|c| c as usize);
    let reinitialized_from = match r.byte()? {
        0 => None,
        1 => Some(model::Reinitialized {
            session: usize::try_from(r.u64()?).ok()?,
            session_id: r.str()?.to_string(),
            at: read_mark(r)?,
        }),
        _ => return None,
    };
    let fallbacks = (0..r.u64()?)
        .map(|_| read_fallback(r))
        .collect::<Option<Vec<_>>>()?;
    let streams = (0..r.u64()?)
        .map(|_| read_stream(r))
        .collect::<Option<Vec<_>>>()?;
    let events_held = streams.iter().map(|st| st.event_count() as u64).sum();
    Some(Session {
        idx,
        session_id,
        server,
        path,
        client_ip,
        transport: if legacy {
            Transport::LegacySse
        } else {
            Transport::StreamableHttp
        },
        stateless,
        protocol_version,
        // Set when the session is finalized, which a spilled one is not yet.
        revision: crate::revision::Revision::assumed(false),
        client_info,
        server_info,
        initialize_seen,
        initializes,
        start,
        end,
        streams,
        fallbacks,
        deleted,
        deleted_before,
        reinitialized_from,
        // Set when it is finalized, after it is read back.
        server_mints_ids: None,
        forgotten,
        inputs,
        legacy_endpoint,
        transport_mode_header,
        event_id_scheme: EventIdScheme::None,
        event_id_scheme_from: "events",
        lacks: Vec::new(),
        same_session_as: Vec::new(),
        vantage_points: Vec::new(),
        continues,
        counts: model::Counts::default(),
        finalized: false,
        merged_sources: Vec::new(),
        frame_order: false,
        events_held,
        exchanges_unheld,
        over,
        open,
        quiet_since: Timestamp::default(),
        payloads: Default::default(),
    })
}

fn stream(w: &mut Vec<u8>, st: &Stream) {
    debug_assert!(st.events.is_empty() && st.response_messages.is_empty());
    put_u64(w, st.idx as u64);
    w.push(match st.transport {
        StreamTransport::Post => 0,
        StreamTransport::Get => 1,
        StreamTransport::LegacySse => 2,
    });
    put_u64(w, st.exchange.conn.number());
    put_u64(w, u64::from(st.exchange.index));
    put_u64(w, u64::from(st.input));
    put_str(w, &st.method);
    put_str(w, &st.target);
    addr(w, st.client);
    addr(w, st.server);
    mark(w, st.opened);
    put_u64(w, st.status.map_or(0, |c| u64::from(c) + 1));
    opt_mark(w, st.response_mark);
    opt_mark(w, st.ended);
    w.push(st.outcome.map_or(0, outcome_code));
    w.push(match st.closed_by {
        None => 0,
        Some(Direction::ClientToServer) => 1,
        Some(Direction::ServerToClient) => 2,
    });
    for t in [
        &st.content_type,
        &st.session_id_sent,
        &st.session_id_received,
        &st.protocol_version_header,
        &st.transport_mode,
        &st.transport_mode_sent,
        &st.upstream,
        &st.host,
    ] {
        opt_str(w, t.as_deref());
    }
    flags(
        w,
        &[
            st.event_stream,
            st.accept_sse,
            st.gap,
            st.body_unknown,
            st.session_header_known,
            st.resume.is_some(),
            st.body_not_decoded,
            st.end_time_unknown,
            st.client_batch,
        ],
    );
    if let Some(resume) = &st.resume {
        put_str(w, &resume.last_event_id);
    }
    put_u64(w, st.gap_bytes);
    put_u64(w, st.snaplen_bytes);
    put_u64(w, st.inconsistent_bytes);
    put_u64(w, st.comments);
    put_u64(w, st.events_unheld);
    put_u64(w, st.last_retry.map_or(0, |r| r + 1));
    put_u64(w, st.client_messages.len() as u64);
    for m in &st.client_messages {
        put_message(w, m);
    }
    st.response_packed.encode(w);
    st.packed.encode(w);
    payload(w, st.response_data);
    put_u64(w, st.foreign_events.len() as u64);
    for f in &st.foreign_events {
        put_u64(w, u64::from(f.event));
        put_str(w, &f.minted_in_session);
        mark(w, f.first);
        put_u64(w, f.first_exchange.conn.number());
        put_u64(w, u64::from(f.first_exchange.index));
        payload(w, f.data);
    }
}

fn read_stream(r: &mut Reader) -> Option<Stream> {
    let idx = usize::try_from(r.u64()?).ok()?;
    let transport = match r.byte()? {
        0 => StreamTransport::Post,
        1 => StreamTransport::Get,
        2 => StreamTransport::LegacySse,
        _ => return None,
    };
    let exchange = ExchangeId {
        conn: ConnId::from_number(r.u64()?),
        index: u32::try_from(r.u64()?).ok()?,
    };
    let input = u32::try_from(r.u64()?).ok()?;
    let method = r.str()?.to_string();
    let target = r.str()?.to_string();
    let client = read_addr(r)?;
    let server = read_addr(r)?;
    let opened = read_mark(r)?;
    let mut st = Stream::new(exchange, transport, opened, client, server);
    (st.idx, st.input, st.method, st.target) = (idx, input, method, target);
    st.status = match r.u64()? {
        0 => None,
        c => Some(u16::try_from(c - 1).ok()?),
    };
    st.response_mark = read_opt_mark(r)?;
    st.ended = read_opt_mark(r)?;
    st.outcome = outcome_of(r.byte()?)?;
    st.closed_by = match r.byte()? {
        0 => None,
        1 => Some(Direction::ClientToServer),
        2 => Some(Direction::ServerToClient),
        _ => return None,
    };
    let mut texts: [Option<String>; 8] = Default::default();
    for t in &mut texts {
        *t = read_opt_str(r)?;
    }
    [
        st.content_type,
        st.session_id_sent,
        st.session_id_received,
        st.protocol_version_header,
        st.transport_mode,
        st.transport_mode_sent,
        st.upstream,
        st.host,
    ] = texts;
    let [
        event_stream,
        accept_sse,
        gap,
        body_unknown,
        header_known,
        resumes,
        not_decoded,
        end_time_unknown,
        client_batch,
    ] = read_flags(r)?;
    (st.body_not_decoded, st.end_time_unknown) = (not_decoded, end_time_unknown);
    st.client_batch = client_batch;
    (st.event_stream, st.accept_sse, st.gap) = (event_stream, accept_sse, gap);
    (st.body_unknown, st.session_header_known) = (body_unknown, header_known);
    if resumes {
        st.resume = Some(Box::new(Resume {
            last_event_id: r.str()?.to_string(),
            ..Default::default()
        }));
    }
    st.gap_bytes = r.u64()?;
    st.snaplen_bytes = r.u64()?;
    st.inconsistent_bytes = r.u64()?;
    st.comments = r.u64()?;
    st.events_unheld = r.u64()?;
    st.last_retry = r.u64()?.checked_sub(1);
    st.client_messages = (0..r.u64()?)
        .map(|_| read_message(r))
        .collect::<Option<Vec<_>>>()?;
    st.response_packed = PackedMessages::decode(r)?;
    st.packed = PackedEvents::decode(r)?;
    st.response_data = read_payload(r)?;
    st.foreign_events = (0..r.u64()?)
        .map(|_| read_foreign(r))
        .collect::<Option<Vec<_>>>()?;
    Some(st)
}

fn read_foreign(r: &mut Reader) -> Option<ForeignEvent> {
    Some(ForeignEvent {
        event: u32::try_from(r.u64()?).ok()?,
        minted_in_session: r.str()?.to_string(),
        first: read_mark(r)?,
        first_exchange: ExchangeId {
            conn: ConnId::from_number(r.u64()?),
            index: u32::try_from(r.u64()?).ok()?,
        },
        data: read_payload(r)?,
    })
}

fn fallback(w: &mut Vec<u8>, f: &Fallback) {
    mark(w, f.mark);
    for t in [&f.from, &f.to, &f.trigger] {
        put_str(w, t);
    }
    put_request_id(w, f.request_id.as_ref());
    put_u64(w, f.abandoned_stream.map_or(0, |i| i as u64 + 1));
    put_u64(w, f.to_stream as u64);
    w.push(u8::from(f.confirmed));
    marks(w, &f.frames);
}

fn read_fallback(r: &mut Reader) -> Option<Fallback> {
    Some(Fallback {
        mark: read_mark(r)?,
        from: r.str()?.to_string(),
        to: r.str()?.to_string(),
        trigger: r.str()?.to_string(),
        request_id: read_request_id(r)?,
        abandoned_stream: r
            .u64()?
            .checked_sub(1)
            .and_then(|i| usize::try_from(i).ok()),
        to_stream: usize::try_from(r.u64()?).ok()?,
        confirmed: r.byte()? != 0,
        // Inferred fallbacks are found by analysis, after a session is last spilled.
        inferred: false,
        frames: read_marks(r)?,
    })
}

fn outcome_code(o: Outcome) -> u8 {
    match o {
        Outcome::Complete => 1,
        Outcome::CutByCaptureEnd => 2,
        Outcome::ClosedEarly => 3,
        Outcome::Reset => 4,
        Outcome::Gap => 5,
        Outcome::Idle => 6,
        Outcome::StreamReset => 7,
        Outcome::Refused => 8,
        Outcome::NotExamined => 9,
    }
}

fn outcome_of(code: u8) -> Option<Option<Outcome>> {
    Some(Some(match code {
        0 => return Some(None),
        1 => Outcome::Complete,
        2 => Outcome::CutByCaptureEnd,
        3 => Outcome::ClosedEarly,
        4 => Outcome::Reset,
        5 => Outcome::Gap,
        6 => Outcome::Idle,
        7 => Outcome::StreamReset,
        8 => Outcome::Refused,
        9 => Outcome::NotExamined,
        _ => return None,
    }))
}

fn flags<const N: usize>(w: &mut Vec<u8>, bits: &[bool; N]) {
    let mut v = 0u64;
    for (i, b) in bits.iter().enumerate() {
        v |= u64::from(*b) << i;
    }
    put_u64(w, v);
}

fn read_flags<const N: usize>(r: &mut Reader) -> Option<[bool; N]> {
    let v = r.u64()?;
    Some(std::array::from_fn(|i| v & (1 << i) != 0))
}

fn opt_str(w: &mut Vec<u8>, t: Option<&str>) {
    w.push(u8::from(t.is_some()));
    put_opt_str(w, t);
}

fn read_opt_str(r: &mut Reader) -> Option<Option<String>> {
    let present = r.byte()? != 0;
    Some(r.opt_str(present)?.map(str::to_string))
}

fn mark(w: &mut Vec<u8>, m: Mark) {
    put_i64(w, m.time.0);
    put_u64(w, u64::from(m.frame.input));
    put_u64(w, m.frame.frame);
}

fn read_mark(r: &mut Reader) -> Option<Mark> {
    let time = Timestamp(r.i64()?);
    let input = u32::try_from(r.u64()?).ok()?;
    Some(Mark {
        time,
        frame: FrameRef::new(input, r.u64()?),
    })
}

fn opt_mark(w: &mut Vec<u8>, m: Option<Mark>) {
    w.push(u8::from(m.is_some()));
    if let Some(m) = m {
        mark(w, m);
    }
}

fn read_opt_mark(r: &mut Reader) -> Option<Option<Mark>> {
    match r.byte()? {
        0 => Some(None),
        _ => read_mark(r).map(Some),
    }
}

fn marks(w: &mut Vec<u8>, ms: &[Mark]) {
    put_u64(w, ms.len() as u64);
    for m in ms {
        mark(w, *m);
    }
}

fn read_marks(r: &mut Reader) -> Option<Vec<Mark>> {
    (0..r.u64()?).map(|_| read_mark(r)).collect()
}

fn payload(w: &mut Vec<u8>, p: Option<PayloadRef>) {
    match p {
        Some(p) => {
            put_u64(w, p.offset + 1);
            put_u64(w, u64::from(p.len));
        }
        None => put_u64(w, 0),
    }
}

fn read_payload(r: &mut Reader) -> Option<Option<PayloadRef>> {
    match r.u64()? {
        0 => Some(None),
        at => Some(Some(PayloadRef {
            offset: at - 1,
            len: u32::try_from(r.u64()?).ok()?,
        })),
    }
}

fn ip(w: &mut Vec<u8>, a: IpAddr) {
    match a {
        IpAddr::V4(v4) => {
            w.push(4);
            w.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            w.push(6);
            w.extend_from_slice(&v6.octets());
        }
    }
}

fn read_ip(r: &mut Reader) -> Option<IpAddr> {
    match r.byte()? {
        4 => {
            let o: [u8; 4] = r.take(4)?.try_into().ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(o)))
        }
        6 => {
            let o: [u8; 16] = r.take(16)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(o)))
        }
        _ => None,
    }
}

fn addr(w: &mut Vec<u8>, a: SocketAddr) {
    ip(w, a.ip());
    put_u64(w, u64::from(a.port()));
}

fn read_addr(r: &mut Reader) -> Option<SocketAddr> {
    let ip = read_ip(r)?;
    Some(SocketAddr::new(ip, u16::try_from(r.u64()?).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{RequestId, parse_payload};
    use crate::packed::PackedMessages;

    fn at(n: i64) -> Mark {
        Mark {
            time: Timestamp(1_700_000_000_000_000_000 + n),
            frame: FrameRef::new(1, n as u64),
        }
    }

    /// A stream with every field the builder fills set to something other than its default.
    fn stream(idx: usize) -> Stream {
        let exchange = ExchangeId {
            conn: ConnId::recorded(3, 9),
            index: 2,
        };
        let client: SocketAddr = "[::1]:41000".parse().unwrap();
        let server: SocketAddr = "10.0.0.2:8080".parse().unwrap();
        let mut st = Stream::new(exchange, StreamTransport::Get, at(5), client, server);
        st.idx = idx;
        st.method = "GET".into();
        st.target = "/mcp?x=1".into();
        st.status = Some(200);
        st.response_mark = Some(at(6));
        st.content_type = Some("text/event-stream".into());
        st.event_stream = true;
        st.ended = Some(at(9));
        st.outcome = Some(Outcome::Reset);
        st.closed_by = Some(Direction::ClientToServer);
        st.session_id_sent = Some("s-1".into());
        st.session_id_received = Some("s-1".into());
        st.accept_sse = true;
        st.protocol_version_header = Some("2025-11-25".into());
        st.transport_mode = Some("sse".into());
        st.transport_mode_sent = Some("sse".into());
        st.resume = Some(Box::new(Resume {
            last_event_id: "41".into(),
            ..Default::default()
        }));
        st.client_messages = parse_payload(
            br#"{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"x","arguments":{"a":1},"_meta":{"progressToken":"t"}}}"#,
        );
        st.response_packed =
            PackedMessages::pack(&parse_payload(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        st.gap = true;
        st.gap_bytes = 97;
        st.snaplen_bytes = 40;
        st.inconsistent_bytes = 12;
        st.comments = 3;
        st.last_retry = Some(0);
        st.body_unknown = true;
        st.session_header_known = false;
        st.response_data = Some(PayloadRef { offset: 0, len: 12 });
        st.foreign_events = vec![ForeignEvent {
            event: 3,
            minted_in_session: "s-0".into(),
            first: at(4),
            first_exchange: ExchangeId {
                conn: ConnId::from_number(7),
                index: 1,
            },
            data: Some(PayloadRef { offset: 12, len: 5 }),
        }];
        st
    }

    #[test]
    fn a_quiet_session_reads_back_as_it_was_written() {
        let mut s = Session {
            idx: 4,
            session_id: Some("s-1".into()),
            server: "10.0.0.2:8080".parse().unwrap(),
            path: "/mcp".into(),
            client_ip: "10.0.0.1".parse().unwrap(),
            transport: Transport::LegacySse,
            stateless: true,
            protocol_version: Some("2024-11-05".into()),
            revision: crate::revision::Revision::assumed(false),
            client_info: Some("c 1".into()),
            server_info: Some("s 2".into()),
            initialize_seen: true,
            initializes: vec![at(1), at(2)],
            start: at(1),
            end: at(9),
            streams: vec![stream(0), stream(1)],
            fallbacks: vec![Fallback {
                mark: at(3),
                from: "streamable-http".into(),
                to: "legacy-sse".into(),
                trigger: "POST initialize answered 405".into(),
                request_id: Some(RequestId::Number("1".into())),
                abandoned_stream: Some(0),
                to_stream: 1,
                confirmed: true,
                inferred: false,
                frames: vec![at(2), at(3)],
            }],
            deleted: Some(at(8)),
            deleted_before: Some(at(0)),
            forgotten: vec![at(7)],
            inputs: vec![0, 1],
            legacy_endpoint: Some("/messages?sessionId=s-1".into()),
            transport_mode_header: Some("sse".into()),
            event_id_scheme: EventIdScheme::None,
            event_id_scheme_from: "events",
            lacks: Vec::new(),
            same_session_as: Vec::new(),
            vantage_points: Vec::new(),
            continues: Some(2),
            reinitialized_from: Some(model::Reinitialized {
                session: 1,
                session_id: "s-0".into(),
                at: at(1),
            }),
            server_mints_ids: None,
            counts: model::Counts::default(),
            finalized: false,
            merged_sources: Vec::new(),
            frame_order: false,
            events_held: 0,
            exchanges_unheld: 0,
            over: true,
            open: 0,
            quiet_since: Timestamp::default(),
            payloads: Default::default(),
        };
        // Events as the builder packs them.
        let ev = crate::model::EventRec {
            id: Some("41".into()),
            mark: at(6),
            data_hash: 7,
            data_at: 13,
            messages: parse_payload(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#).into_boxed_slice(),
            rare: crate::model::RareEvent::boxed(None, None, Some(500)),
            index: 0,
            data_len: 2,
            namespace: crate::model::Namespace::Unknown,
            attribution: crate::model::Attribution::Unknown,
            priming: false,
            after_gap: true,
            estimated_time: false,
        };
        s.streams[1].packed.push(ev);
        s.events_held = 1;
        s.streams[1].events_unheld = 3;
        let back = decode(&encode(&s)).expect("decodes");
        assert_eq!(format!("{back:?}"), format!("{s:?}"));
        assert!(
            decode(&encode(&s)[..20]).is_none(),
            "a cut record is refused"
        );
    }
}
