//! Assembles the HTTP stage's events into whole exchanges: the model behind the `http` view and
//! the tests of this layer. (The MCP stage consumes the events directly and keeps far less.)

use std::collections::BTreeMap;
use std::net::SocketAddr;

use mcpf_model::{Anomaly, ConnId, Direction, FrameRef, Mark, Timestamp};

use super::sse::SseEvent;
use super::{ExchangeId, HttpEvent, HttpSink, Outcome, Request, ResponseEnd, ResponseHead};

#[derive(Debug)]
pub struct Exchange {
    pub id: ExchangeId,
    pub client: Option<SocketAddr>,
    pub server: Option<SocketAddr>,
    pub request: Option<Request>,
    pub response: Option<ResponseHead>,
    pub end: Option<ResponseEnd>,
    /// Set when the connection ended without a response.
    pub no_response: Option<(Outcome, Option<Direction>, Mark)>,
    pub events: Vec<SseEvent>,
}

impl Exchange {
    fn new(id: ExchangeId) -> Self {
        Exchange {
            id,
            client: None,
            server: None,
            request: None,
            response: None,
            end: None,
            no_response: None,
            events: Vec::new(),
        }
    }

    /// When the exchange began: its request's first byte, else its response's.
    pub fn start(&self) -> Option<Mark> {
        self.request
            .as_ref()
            .map(|r| r.first)
            .or(self.response.as_ref().map(|r| r.first))
    }

    /// Where the exchange goes in the view: by when it began (ties by connection and
    /// position).
    pub fn order(&self) -> Order {
        (self.start().map(|m| (m.time, m.frame)), self.id)
    }

    /// Nothing more can arrive for it: both its request and the end of its response (or the
    /// news that there is none) were seen. (A response can end before its request does.)
    fn is_finished(&self) -> bool {
        self.request.is_some() && (self.end.is_some() || self.no_response.is_some())
    }

    /// The response body is JSON (`application/json` or a `+json` type), as a JSON-RPC
    /// response body is.
    pub fn response_is_json(&self) -> bool {
        self.response
            .as_ref()
            .and_then(|h| h.headers.media_type())
            .is_some_and(|m| m == "application/json" || m.ends_with("+json"))
    }
}

/// The order of the `http` view's exchanges: when each began, then its ID.
pub type Order = (Option<(Timestamp, FrameRef)>, ExchangeId);

/// Collects every exchange (and the anomalies) of a run. [`Collector::streaming`] hands out
/// each exchange as soon as it is finished instead, so that a consumer holds only the exchanges
/// still open.
#[derive(Debug, Default)]
pub struct Collector {
    exchanges: BTreeMap<ExchangeId, Exchange>,
    pub anomalies: Vec<Anomaly>,
    streaming: bool,
    finished: Vec<Exchange>,
}

impl Collector {
    fn entry(&mut self, id: ExchangeId) -> &mut Exchange {
        self.exchanges
            .entry(id)
            .or_insert_with(|| Exchange::new(id))
    }

    /// A collector that moves each exchange, once finished, to [`Collector::take_finished`].
    pub fn streaming() -> Self {
        Collector {
            streaming: true,
            ..Collector::default()
        }
    }

    /// The exchanges finished since the last call, in no particular order.
    pub fn take_finished(&mut self) -> std::vec::Drain<'_, Exchange> {
        self.finished.drain(..)
    }

    fn finish_if_done(&mut self, id: ExchangeId) {
        if self.streaming && self.exchanges.get(&id).is_some_and(Exchange::is_finished) {
            self.finished.extend(self.exchanges.remove(&id));
        }
    }

    /// The connection ended: every exchange left on it is as complete as it will be.
    fn finish_connection(&mut self, conn: ConnId) {
        if !self.streaming {
            return;
        }
        let first = ExchangeId { conn, index: 0 };
        let ids: Vec<ExchangeId> = self
            .exchanges
            .range(first..)
            .take_while(|(id, _)| id.conn == conn)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.finished.extend(self.exchanges.remove(&id));
        }
    }

    /// The exchanges (those not yet handed out, when streaming) in the view's order.
    pub fn into_exchanges(self) -> Vec<Exchange> {
        let mut v: Vec<Exchange> = self.exchanges.into_values().collect();
        v.extend(self.finished);
        v.sort_by_key(Exchange::order);
        v
    }
}

impl HttpSink for Collector {
    fn on_http(&mut self, event: HttpEvent) {
        match event {
            HttpEvent::Request(r) => {
                let id = r.exchange;
                let e = self.entry(id);
                e.client = Some(r.client);
                e.server = Some(r.server);
                e.request = Some(*r);
                self.finish_if_done(id);
            }
            HttpEvent::ResponseHead(h) => {
                let id = h.exchange;
                self.entry(id).response = Some(*h);
            }
            HttpEvent::SseEvent { exchange, event } => self.entry(exchange).events.push(event),
            HttpEvent::ResponseEnd(end) => {
                let id = end.exchange;
                self.entry(id).end = Some(*end);
                self.finish_if_done(id);
            }
            HttpEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                mark,
                ..
            } => {
                self.entry(exchange).no_response = Some((outcome, closed_by, mark));
                self.finish_if_done(exchange);
            }
            HttpEvent::Anomaly(a) => self.anomalies.push(a),
            HttpEvent::ConnectionEnd { conn, .. } => self.finish_connection(conn),
            HttpEvent::ConnectionStart { .. } | HttpEvent::LateInconsistency { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Body, ConnKind, Headers};

    fn mark(frame: u64) -> Mark {
        Mark {
            time: Timestamp::from_secs_nanos(frame as i64, 0),
            frame: FrameRef::new(0, frame),
        }
    }

    fn id(conn: u64, index: u32) -> ExchangeId {
        ExchangeId {
            conn: ConnId::tcp(conn),
            index,
        }
    }

    fn addr() -> SocketAddr {
        "127.0.0.1:80".parse().unwrap()
    }

    fn request(exchange: ExchangeId, frame: u64) -> HttpEvent {
        HttpEvent::Request(Box::new(Request {
            exchange,
            client: addr(),
            server: addr(),
            method: "POST".into(),
            target: "/mcp".into(),
            version: 1,
            headers: Headers::default(),
            body: Body::default(),
            first: mark(frame),
            last: mark(frame),
            outcome: Outcome::Complete,
            head_complete: true,
        }))
    }

    fn no_response(exchange: ExchangeId, frame: u64) -> HttpEvent {
        HttpEvent::NoResponse {
            exchange,
            outcome: Outcome::Reset,
            closed_by: None,
            mark: mark(frame),
            unknown: false,
            when_unknown: false,
            gap_bytes: 0,
            snaplen_bytes: 0,
        }
    }

    fn finished(c: &mut Collector) -> Vec<ExchangeId> {
        let mut ids: Vec<ExchangeId> = c.take_finished().map(|e| e.id).collect();
        ids.sort();
        ids
    }

    #[test]
    fn streaming_hands_out_an_exchange_once_both_sides_are_done() {
        let mut c = Collector::streaming();
        c.on_http(request(id(0, 0), 1));
        assert!(finished(&mut c).is_empty(), "its response is still to come");
        // An answer that ended before its request did waits for the request.
        c.on_http(no_response(id(0, 1), 2));
        assert!(finished(&mut c).is_empty());
        c.on_http(no_response(id(0, 0), 3));
        assert_eq!(finished(&mut c), [id(0, 0)]);
        c.on_http(request(id(0, 1), 4));
        assert_eq!(finished(&mut c), [id(0, 1)]);
        c.on_http(request(id(1, 0), 5));
        c.on_http(request(id(2, 0), 6));
        c.on_http(HttpEvent::ConnectionEnd {
            conn: ConnId::tcp(1),
            client: addr(),
            server: addr(),
            kind: ConnKind::Http,
            mark: mark(7),
            packets: 0,
            frame_bytes: 0,
        });
        assert_eq!(finished(&mut c), [id(1, 0)], "only the ended connection's");
        let left: Vec<ExchangeId> = c.into_exchanges().iter().map(|e| e.id).collect();
        assert_eq!(left, [id(2, 0)]);
    }

    #[test]
    fn collecting_holds_every_exchange_to_the_end_in_order() {
        let mut c = Collector::default();
        c.on_http(request(id(1, 0), 2));
        c.on_http(no_response(id(1, 0), 3));
        c.on_http(request(id(0, 0), 1));
        assert!(finished(&mut c).is_empty());
        let all: Vec<ExchangeId> = c.into_exchanges().iter().map(|e| e.id).collect();
        assert_eq!(all, [id(0, 0), id(1, 0)]);
    }
}
