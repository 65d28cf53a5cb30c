//! HTTP events with the JSON-RPC they carry already read: what the session stage takes.
//!
//! Reading a message's JSON-RPC depends on its bytes alone, so it is done where its HTTP was
//! parsed, on the thread of its connection's shard, and the session stage, which must see every
//! event in order on one thread, only files what it is handed. Run inline ([`Builder`]'s
//! [`HttpSink`]), the same reading is done just before the filing: the result is the same.

use mcpf_http::{HttpEvent, HttpSink};

use super::Builder;
use super::exchanges::event_rec;
use crate::jsonrpc::{self, Message};
use crate::model::EventRec;

/// An HTTP event, with its JSON-RPC messages read when it carries any.
pub struct Prepared(Carried);

enum Carried {
    Request(Box<mcpf_http::Request>, Vec<Message>),
    Event {
        exchange: mcpf_http::ExchangeId,
        event: mcpf_http::sse::SseEvent,
        rec: EventRec,
    },
    /// The body's messages, read when the body looks like JSON: the session stage reads them
    /// only if the response's type says JSON, and reads them itself if they were not.
    End(Box<mcpf_http::ResponseEnd>, Option<Vec<Message>>),
    Other(HttpEvent),
}

/// Reads the JSON-RPC an HTTP event carries.
pub fn prepare(event: HttpEvent) -> Prepared {
    Prepared(match event {
        HttpEvent::Request(r) => {
            let messages = request_messages(&r);
            Carried::Request(r, messages)
        }
        HttpEvent::SseEvent { exchange, event } => {
            let rec = event_rec(&event);
            Carried::Event {
                exchange,
                event,
                rec,
            }
        }
        HttpEvent::ResponseEnd(end) => {
            // Not read here when it cannot be JSON-RPC: read when an MCP stream records it.
            let data = &end.body.data;
            let messages = (looks_like_json(data) && !jsonrpc::cannot_be_jsonrpc(data))
                .then(|| jsonrpc::parse_payload(data));
            Carried::End(end, messages)
        }
        other => Carried::Other(other),
    })
}

/// A request's messages: none when it has no body; a stand-in when it cannot be JSON-RPC and was
/// not cut short (read once its request is known to be MCP, [`read_now`]).
pub(super) fn request_messages(r: &mcpf_http::Request) -> Vec<Message> {
    if r.body.data.is_empty() {
        Vec::new()
    } else if r.body.gap_bytes == 0 && jsonrpc::cannot_be_jsonrpc(&r.body.data) {
        vec![Message::not_read()]
    } else {
        jsonrpc::parse_payload(&r.body.data)
    }
}

/// The messages of a request going to an MCP session: read now if they were not.
pub(super) fn read_now(r: &mcpf_http::Request, messages: Vec<Message>) -> Vec<Message> {
    match messages.as_slice() {
        [m] if m.is_not_read() => jsonrpc::parse_payload(&r.body.data),
        _ => messages,
    }
}

/// A body whose first byte past white space opens a JSON object or array.
fn looks_like_json(body: &[u8]) -> bool {
    body.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'['))
}

impl Prepared {
    /// The bytes of bodies, events and headers it carries: what holding it costs.
    pub fn payload_bytes(&self) -> usize {
        match &self.0 {
            Carried::Request(r, m) => {
                HttpEvent::request_bytes(r) + m.len() * std::mem::size_of::<Message>()
            }
            Carried::Event { event, rec, .. } => {
                event.data.len()
                    + event.id.as_ref().map_or(0, |i| i.len())
                    + rec.messages.len() * std::mem::size_of::<Message>()
            }
            Carried::End(end, m) => {
                end.body.data.len()
                    + m.as_ref()
                        .map_or(0, |m| m.len() * std::mem::size_of::<Message>())
            }
            Carried::Other(ev) => ev.payload_bytes(),
        }
    }
}

impl Builder {
    /// Files an event whose JSON-RPC was read.
    pub fn on_prepared(&mut self, prepared: Prepared) {
        match prepared.0 {
            Carried::Request(r, messages) => self.on_request(&r, messages),
            Carried::Event {
                exchange,
                event,
                rec,
            } => self.on_event(exchange, &event, rec),
            Carried::End(end, messages) => self.on_response_end(&end, messages),
            Carried::Other(ev) => self.on_other(ev),
        }
    }
}

impl HttpSink for Builder {
    fn on_http(&mut self, event: HttpEvent) {
        self.on_prepared(prepare(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bodies_that_open_json_are_read_ahead() {
        assert!(looks_like_json(b" \r\n{\"jsonrpc\":\"2.0\"}"));
        assert!(looks_like_json(b"[{}]"));
        assert!(!looks_like_json(b""));
        assert!(!looks_like_json(b"<html>"));
        assert!(!looks_like_json(b"  "));
    }
}
