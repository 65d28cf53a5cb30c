//! Two cores: packets, TCP and HTTP on one thread, the MCP stage and the detectors on another.
//!
//! [`Forwarder`] is the HTTP sink of the first thread: it copies each event into a batch and
//! hands full batches over a bounded channel; [`replay`] feeds them, in order, to the real sink
//! on the second thread. The second thread sees exactly the events a single-threaded run
//! delivers, so the output is identical.

use std::net::SocketAddr;
use std::sync::mpsc;

use super::sse::SseEvent;
use super::{
    ConnKind, ExchangeId, HttpEvent, HttpSink, Outcome, Request, ResponseEnd, ResponseHead,
};
use crate::capture::tcp::{ConnId, Direction};
use crate::model::Mark;

/// Events per batch, and batches in flight.
const BATCH_EVENTS: usize = 1024;
const IN_FLIGHT: usize = 4;

/// An HTTP event that owns its data.
pub enum OwnedEvent {
    Request(Box<Request>),
    ResponseHead(Box<ResponseHead>),
    /// Inline: most events are SSE events, and a box each is an allocation freed on the other
    /// thread.
    SseEvent(ExchangeId, SseEvent),
    ResponseEnd(Box<ResponseEnd>),
    NoResponse {
        exchange: ExchangeId,
        outcome: Outcome,
        closed_by: Option<Direction>,
        mark: Mark,
    },
    Anomaly {
        conn: ConnId,
        dir: Direction,
        mark: Mark,
        what: String,
    },
    ConnectionStart {
        conn: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        mark: Mark,
    },
    ConnectionEnd {
        conn: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        kind: ConnKind,
        mark: Mark,
    },
}

impl OwnedEvent {
    fn from_event(event: HttpEvent<'_>) -> OwnedEvent {
        match event {
            HttpEvent::Request(r) => OwnedEvent::Request(Box::new(r.clone())),
            HttpEvent::ResponseHead(h) => OwnedEvent::ResponseHead(Box::new(h.clone())),
            HttpEvent::SseEvent { exchange, event } => {
                OwnedEvent::SseEvent(exchange, event.clone())
            }
            HttpEvent::ResponseEnd(e) => OwnedEvent::ResponseEnd(Box::new(e.clone())),
            HttpEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                mark,
            } => OwnedEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                mark,
            },
            HttpEvent::Anomaly {
                conn,
                dir,
                mark,
                what,
            } => OwnedEvent::Anomaly {
                conn,
                dir,
                mark,
                what,
            },
            HttpEvent::ConnectionStart {
                conn,
                client,
                server,
                mark,
            } => OwnedEvent::ConnectionStart {
                conn,
                client,
                server,
                mark,
            },
            HttpEvent::ConnectionEnd {
                conn,
                client,
                server,
                kind,
                mark,
            } => OwnedEvent::ConnectionEnd {
                conn,
                client,
                server,
                kind,
                mark,
            },
        }
    }

    fn as_event(&self) -> HttpEvent<'_> {
        match self {
            OwnedEvent::Request(r) => HttpEvent::Request(r),
            OwnedEvent::ResponseHead(h) => HttpEvent::ResponseHead(h),
            OwnedEvent::SseEvent(exchange, event) => HttpEvent::SseEvent {
                exchange: *exchange,
                event,
            },
            OwnedEvent::ResponseEnd(e) => HttpEvent::ResponseEnd(e),
            OwnedEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                mark,
            } => HttpEvent::NoResponse {
                exchange: *exchange,
                outcome: *outcome,
                closed_by: *closed_by,
                mark: *mark,
            },
            OwnedEvent::Anomaly {
                conn,
                dir,
                mark,
                what,
            } => HttpEvent::Anomaly {
                conn: *conn,
                dir: *dir,
                mark: *mark,
                what: what.clone(),
            },
            OwnedEvent::ConnectionStart {
                conn,
                client,
                server,
                mark,
            } => HttpEvent::ConnectionStart {
                conn: *conn,
                client: *client,
                server: *server,
                mark: *mark,
            },
            OwnedEvent::ConnectionEnd {
                conn,
                client,
                server,
                kind,
                mark,
            } => HttpEvent::ConnectionEnd {
                conn: *conn,
                client: *client,
                server: *server,
                kind: *kind,
                mark: *mark,
            },
        }
    }
}

/// The first thread's HTTP sink.
pub struct Forwarder {
    batch: Vec<OwnedEvent>,
    tx: mpsc::SyncSender<Vec<OwnedEvent>>,
    closed: bool,
}

impl Forwarder {
    /// Hands any partial batch over.
    pub fn flush(&mut self) {
        if self.batch.is_empty() || self.closed {
            return;
        }
        let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_EVENTS));
        if self.tx.send(full).is_err() {
            // The consumer is gone (it only stops by panicking): nothing more to send.
            self.closed = true;
        }
    }
}

impl HttpSink for Forwarder {
    fn on_http(&mut self, event: HttpEvent<'_>) {
        self.batch.push(OwnedEvent::from_event(event));
        if self.batch.len() >= BATCH_EVENTS {
            self.flush();
        }
    }

    fn on_sse_event(&mut self, exchange: ExchangeId, event: SseEvent) {
        self.batch.push(OwnedEvent::SseEvent(exchange, event));
        if self.batch.len() >= BATCH_EVENTS {
            self.flush();
        }
    }
}

/// A forwarder and the receiving end for the second thread.
pub fn channel() -> (Forwarder, mpsc::Receiver<Vec<OwnedEvent>>) {
    let (tx, rx) = mpsc::sync_channel(IN_FLIGHT);
    (
        Forwarder {
            batch: Vec::with_capacity(BATCH_EVENTS),
            tx,
            closed: false,
        },
        rx,
    )
}

/// The second thread's loop: every batch, in order, into `sink`.
pub fn replay(rx: mpsc::Receiver<Vec<OwnedEvent>>, sink: &mut impl HttpSink) {
    for batch in rx {
        for e in &batch {
            sink.on_http(e.as_event());
        }
    }
}
