//! Assembles the HTTP stage's events into whole exchanges: the model behind the `http` view and
//! the tests of this layer. (The MCP stage consumes the events directly and keeps far less.)

use std::collections::BTreeMap;
use std::net::SocketAddr;

use mcpf_model::{ConnId, Direction, Mark};

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

    /// The response body is JSON (`application/json` or a `+json` type), as a JSON-RPC
    /// response body is.
    pub fn response_is_json(&self) -> bool {
        self.response
            .as_ref()
            .and_then(|h| h.headers.media_type())
            .is_some_and(|m| m == "application/json" || m.ends_with("+json"))
    }
}

/// Collects every exchange (and the anomalies) of a run.
#[derive(Debug, Default)]
pub struct Collector {
    exchanges: BTreeMap<ExchangeId, Exchange>,
    pub anomalies: Vec<(ExchangeAnomaly, String)>,
}

#[derive(Debug, Clone, Copy)]
pub struct ExchangeAnomaly {
    pub conn: ConnId,
    pub dir: Direction,
    pub mark: Mark,
}

impl Collector {
    fn entry(&mut self, id: ExchangeId) -> &mut Exchange {
        self.exchanges
            .entry(id)
            .or_insert_with(|| Exchange::new(id))
    }

    /// The exchanges in the order they began (ties by connection and position).
    pub fn into_exchanges(self) -> Vec<Exchange> {
        let mut v: Vec<Exchange> = self.exchanges.into_values().collect();
        v.sort_by_key(|e| (e.start().map(|m| (m.time, m.frame)), e.id));
        v
    }
}

impl HttpSink for Collector {
    fn on_http(&mut self, event: HttpEvent) {
        match event {
            HttpEvent::Request(r) => {
                let e = self.entry(r.exchange);
                e.client = Some(r.client);
                e.server = Some(r.server);
                e.request = Some(*r);
            }
            HttpEvent::ResponseHead(h) => {
                let id = h.exchange;
                self.entry(id).response = Some(*h);
            }
            HttpEvent::SseEvent { exchange, event } => self.entry(exchange).events.push(event),
            HttpEvent::ResponseEnd(end) => {
                let id = end.exchange;
                self.entry(id).end = Some(*end);
            }
            HttpEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                mark,
            } => {
                self.entry(exchange).no_response = Some((outcome, closed_by, mark));
            }
            HttpEvent::Anomaly {
                conn,
                dir,
                mark,
                what,
            } => self
                .anomalies
                .push((ExchangeAnomaly { conn, dir, mark }, what)),
            HttpEvent::ConnectionStart { .. } | HttpEvent::ConnectionEnd { .. } => {}
        }
    }
}
