//! A message in progress on one direction of a connection, and the event that reports it when
//! it ends: the request itself, or the end of a response (its head was reported when read).
//!
//! How it ended is its outcome: complete by its framing, cut by a gap, or cut short when the
//! connection closed or was reset; a message whose start the capture lacks never ends complete.

use std::net::SocketAddr;

use super::{Connection, HttpSink, State, di};
use crate::body::{ChunkedDecoder, Framing};
use crate::payload::Payload;
use crate::{ExchangeId, Headers, HttpEvent, Outcome, Request, ResponseEnd};
use mcpf_model::{Direction, Mark};

/// What a message's start line said.
#[derive(Debug)]
pub(super) enum Start {
    Request {
        method: String,
        target: String,
        version: u8,
    },
    Response,
}

/// A message being read: its start, its framing, and the payload its body goes to.
#[derive(Debug)]
pub(super) struct Message {
    pub(super) start: Start,
    /// A request's fields (a response's are handed to its head when it is read).
    pub(super) headers: Headers,
    pub(super) exchange: ExchangeId,
    pub(super) framing: Framing,
    pub(super) remaining: u64,
    pub(super) chunked: Option<ChunkedDecoder>,
    pub(super) payload: Payload,
    /// Body bytes after a gap are not kept (they would be joined across the hole).
    pub(super) holed: bool,
    pub(super) gap: bool,
    /// A gap of it was bytes lost, not only bytes the snap length cut.
    pub(super) lost: bool,
    pub(super) first: Mark,
    pub(super) last: Mark,
    /// Stream offset of its first byte (its start line).
    pub(super) offset: u64,
    /// Its head was not cut by a gap.
    pub(super) head_complete: bool,
}

impl Connection {
    /// A head was read: its body (if any) follows.
    pub(super) fn begin_body(&mut self, dir: Direction, mut msg: Message) {
        let half = self.half(dir);
        msg.offset = half.head_offset;
        msg.gap = std::mem::take(&mut half.after_gap);
        half.gap_since_head = false;
        half.msg = Some(Box::new(msg));
        half.state = State::Body;
    }

    /// Ends the message of `dir`, emitting it (a request) or its end (a response).
    pub(super) fn end_message(
        &mut self,
        dir: Direction,
        outcome: Outcome,
        closed_by: Option<Direction>,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let (client, server) = (self.client, self.server);
        let half = self.half(dir);
        if matches!(half.state, State::Body) {
            half.state = State::Start;
        }
        let Some(mut msg) = half.msg.take() else {
            return;
        };
        half.framed_end = outcome == Outcome::Complete;
        // A message cut short ended when its connection was given up (`mark`), not at its last
        // byte: a client that closes 1.5 s after the last event waited those 1.5 s.
        if matches!(outcome, Outcome::ClosedEarly | Outcome::Reset) && mark > msg.last {
            msg.last = mark;
        }
        let complete = outcome == Outcome::Complete && !msg.holed;
        let notes = msg
            .payload
            .finish(complete, mark, &mut self.out_events, &mut self.counts);
        for problem in notes {
            self.anomaly(problem, dir, mark, sink);
        }
        let end = self.pos[di(dir)] + self.step_used[di(dir)];
        self.settle_inconsistent(dir, &mut msg, end);
        let exchange = msg.exchange;
        for event in self.take_events() {
            sink.on_http(HttpEvent::SseEvent { exchange, event });
        }
        let outcome = if msg.gap && outcome == Outcome::Complete {
            Outcome::Gap
        } else {
            outcome
        };
        msg.payload.body.chunked = msg.chunked.is_some() || msg.framing == Framing::Chunked;
        sink.on_http(msg.into_event(outcome, closed_by, client, server));
    }
}

impl Message {
    /// What reports the finished message: the request, or the end of the response.
    fn into_event(
        self,
        outcome: Outcome,
        closed_by: Option<Direction>,
        client: SocketAddr,
        server: SocketAddr,
    ) -> HttpEvent {
        match self.start {
            Start::Request {
                method,
                target,
                version,
            } => HttpEvent::Request(Box::new(Request {
                exchange: self.exchange,
                client,
                server,
                method,
                target,
                version,
                headers: self.headers,
                body: self.payload.body,
                first: self.first,
                last: self.last,
                outcome,
                head_complete: self.head_complete,
            })),
            Start::Response => HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                exchange: self.exchange,
                body: self.payload.body,
                last: self.last,
                outcome,
                closed_by,
                sse: self.payload.sse.map(|s| s.stats),
                when_unknown: false,
            })),
        }
    }
}

pub(super) fn new_message(
    start: Start,
    headers: Headers,
    exchange: ExchangeId,
    framing: Framing,
    first: Mark,
    head_end: Mark,
) -> Message {
    let payload = Payload::new(&headers);
    let remaining = match framing {
        Framing::Length(n) => n,
        _ => 0,
    };
    Message {
        start,
        headers,
        exchange,
        framing,
        remaining,
        chunked: None,
        payload,
        holed: false,
        lost: false,
        gap: false,
        first,
        last: head_end,
        offset: 0,
        head_complete: true,
    }
}
