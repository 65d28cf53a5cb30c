//! Log records assembled into exchanges and connections: sorted by start, given connection
//! ids, and pushed onto the input's timeline (which emits them as soon as no later record can
//! precede them) as a `Request` at the start, a `ResponseHead` at
//! the (estimated) first byte and a `ResponseEnd` at the end, or a `NoResponse`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use mcpf_http::{
    Body, ExchangeId, HttpEvent, HttpSink, Outcome, Request, ResponseEnd, ResponseHead,
};
use mcpf_model::Timestamp;
use mcpf_model::{Anomaly, AnomalyKind, Capabilities, FrameRef, InputId, LogFlavor, Mark};

use super::capabilities::{capabilities, lacks};
use super::{Ending, Facts, Rec};
use crate::connections::{Connections, Ends, push_starts};
use crate::timeline::Timeline;

const UNSPECIFIED: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// Emits the events of a whole log into `sink` and returns its capabilities. Each
/// connection's start and end are known from the records before any exchange's events, so the
/// events before the next record's start can leave at once: only exchanges in flight are held.
pub(super) fn assemble(
    mut records: Vec<Rec>,
    facts: &Facts,
    flavor: LogFlavor,
    input: InputId,
    sink: &mut impl HttpSink,
) -> Capabilities {
    records.sort_by_key(|r| (r.start, r.line));

    // Connections: by the logged connection (a new one when the log says a request is the
    // first of its connection again), else one per request.
    let mut conns = Connections::new(input);
    let ids: Vec<ExchangeId> = records
        .iter()
        .map(|r| conns.exchange(r.conn_key.as_deref(), r.conn_first))
        .collect();

    let mut caps = capabilities(flavor, facts, !records.is_empty());
    let mut timeline = Timeline::default();
    let addresses = |r: &Rec| {
        (
            r.client.unwrap_or(UNSPECIFIED),
            r.server.unwrap_or(UNSPECIFIED),
        )
    };
    let mark = |r: &Rec, time| Mark {
        time,
        frame: FrameRef::new(input, r.line),
    };
    push_starts(
        &mut timeline,
        records.iter().zip(&ids).map(|(r, id)| {
            let (client, server) = addresses(r);
            (id.conn, client, server, mark(r, r.start))
        }),
    );
    let mut ends = Ends::default();
    for (r, id) in records.iter().zip(&ids) {
        let (client, server) = addresses(r);
        ends.note(id.conn, client, server, mark(r, r.end));
    }
    ends.push(&mut timeline);
    let mut exchanges = Exchanges {
        timeline: &mut timeline,
        caps: &mut caps,
        input,
        may_be_streams: 0,
    };
    let next_starts: Vec<Timestamp> = records.iter().skip(1).map(|r| r.start).collect();
    let mut next_starts = next_starts.into_iter();
    for (r, id) in records.into_iter().zip(ids) {
        exchanges.record(r, id);
        let next = next_starts.next().unwrap_or(Timestamp(i64::MAX));
        exchanges.timeline.flush_before(next, sink);
    }
    let may_be_streams = exchanges.may_be_streams;
    timeline.emit(sink);
    lacks(&mut caps, facts, flavor, may_be_streams);
    caps
}

/// Pushes the events of records, in start order.
struct Exchanges<'a> {
    timeline: &'a mut Timeline,
    caps: &'a mut Capabilities,
    input: InputId,
    /// Responses that are, or may be (no Content-Type known), event streams.
    may_be_streams: u64,
}

impl Exchanges<'_> {
    fn record(&mut self, r: Rec, id: ExchangeId) {
        let frame = FrameRef::new(self.input, r.line);
        let mark = |time: Timestamp| Mark { time, frame };
        let client = r.client.unwrap_or(UNSPECIFIED);
        let server = r.server.unwrap_or(UNSPECIFIED);
        self.caps.exchanges += 1;
        self.request(&r, id, frame, client, server);
        match r.ending {
            Ending::NoResponse(outcome, closed_by) => {
                self.timeline.push(
                    r.end,
                    HttpEvent::NoResponse {
                        exchange: id,
                        outcome,
                        closed_by,
                        mark: mark(r.end),
                        unknown: false,
                        when_unknown: false,
                        gap_bytes: 0,
                        snaplen_bytes: 0,
                    },
                );
            }
            Ending::Complete | Ending::Cut(..) => self.response(&r, id, frame),
        }
        if let Some((dir, what)) = r.note {
            self.timeline.push(
                r.end,
                HttpEvent::Anomaly(Anomaly {
                    kind: AnomalyKind::EnvoyResponseFlags,
                    conn: id.conn,
                    dir,
                    mark: mark(r.end),
                    detail: what,
                }),
            );
        }
    }

    /// The request, whose body is known only when the log says it was empty (or the method
    /// carries none).
    fn request(
        &mut self,
        r: &Rec,
        id: ExchangeId,
        frame: FrameRef,
        client: SocketAddr,
        server: SocketAddr,
    ) {
        let mark = Mark {
            time: r.start,
            frame,
        };
        let bodiless = matches!(r.method.as_str(), "GET" | "HEAD" | "OPTIONS" | "TRACE");
        let req_known = r.req_bytes == Some(0) || (bodiless && r.req_bytes.is_none_or(|n| n == 0));
        self.caps.request_bodies.add(req_known);
        self.timeline.push(
            r.start,
            HttpEvent::Request(Box::new(Request {
                exchange: id,
                client,
                server,
                method: r.method.clone(),
                target: r.target.clone(),
                version: r.version,
                headers: r.req_headers.clone(),
                body: Body {
                    wire_bytes: r.req_bytes.unwrap_or(0),
                    decoded_bytes: r.req_bytes.unwrap_or(0),
                    unknown: !req_known,
                    ..Body::default()
                },
                first: mark,
                last: mark,
                outcome: Outcome::Complete,
                head_complete: true,
            })),
        );
    }

    /// The response's head and end; a log keeps no body, so it is unknown unless logged as
    /// empty, and an event stream's events are unknown.
    fn response(&mut self, r: &Rec, id: ExchangeId, frame: FrameRef) {
        let mark = |time: Timestamp| Mark { time, frame };
        let event_stream = r.resp_headers.media_type().as_deref() == Some("text/event-stream");
        let ctype_known =
            r.resp_headers.has("content-type") || self.caps.response_headers.knows("content-type");
        if event_stream || !ctype_known {
            self.may_be_streams += 1;
            self.caps.sse_streams.add(false);
        }
        let resp_known = r.resp_bytes == Some(0) && !event_stream;
        self.caps.response_bodies.add(resp_known);
        self.timeline.push(
            r.head,
            HttpEvent::ResponseHead(Box::new(ResponseHead {
                exchange: id,
                status: r.status,
                reason: String::new(),
                version: r.version,
                headers: r.resp_headers.clone(),
                interim: Vec::new(),
                first: mark(r.head),
                event_stream,
                head_complete: true,
                upstream: r.upstream.clone(),
            })),
        );
        let (outcome, closed_by) = match r.ending {
            Ending::Cut(o, by) => (o, by),
            _ => (Outcome::Complete, None),
        };
        self.timeline.push(
            r.end,
            HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                exchange: id,
                body: Body {
                    wire_bytes: r.resp_bytes.unwrap_or(0),
                    decoded_bytes: r.resp_bytes.unwrap_or(0),
                    content_encoding: r.resp_headers.get("content-encoding").map(str::to_string),
                    chunked: r.resp_headers.has_token("transfer-encoding", "chunked"),
                    unknown: !resp_known,
                    ..Body::default()
                },
                last: mark(r.end),
                outcome,
                closed_by,
                sse: None,
                when_unknown: false,
            })),
        );
    }
}
