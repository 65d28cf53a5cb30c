//! A whole head parsed (with `httparse`) into the request or response it starts.
//!
//! Control bytes a crafted or broken peer put in a head are replaced before parsing, and said;
//! fields past [`MAX_HEADERS`] are dropped, except those the pipeline reads. A request head opens
//! an exchange; a response head is reported at once (an event stream's events follow it as they
//! come), unless it is interim or switches the connection to HTTP/2.

use std::borrow::Cow;

use super::framing::{request_framing, response_framing};
use super::handoff::{decode_http2_settings, headers_upgrade_to_h2c};
use super::heads::{MAX_HEAD, MAX_HEADERS, never_dropped};
use super::message::{Message, Start, new_message};
use super::{Connection, HttpSink, State, message_kind};
use crate::body::Framing;
use crate::sse::SseParser;
use crate::{ExchangeId, Headers, HttpEvent, Outcome, ResponseHead};
use mcpf_model::{AnomalyKind, Direction, Mark};

impl Connection {
    /// Parses a complete head (`first` is where its first byte was captured, `mark` where its
    /// end was) and starts its message.
    pub(super) fn parse_head(
        &mut self,
        dir: Direction,
        head: &[u8],
        first: Mark,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let head = self.without_control_bytes(dir, head, mark, sink);
        let mut slots = header_slots(&head);
        match dir {
            Direction::ClientToServer => {
                let mut req = httparse::Request::new(&mut slots);
                let parsed = req.parse(&head);
                if self.head_parsed(dir, parsed, head.len(), mark, sink) {
                    self.request_head(&req, &head, first, mark, true, sink);
                }
            }
            Direction::ServerToClient => {
                let mut resp = httparse::Response::new(&mut slots);
                let parsed = resp.parse(&head);
                if self.head_parsed(dir, parsed, head.len(), mark, sink) {
                    self.response_head(&resp, &head, first, mark, true, sink);
                }
            }
        }
    }

    /// The fields of a head (parsed from `head`) as [`kept_headers`] keeps them; the dropped
    /// ones are counted, with an anomaly.
    fn headers_of(
        &mut self,
        dir: Direction,
        raw: &[httparse::Header<'_>],
        head: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> Headers {
        let (headers, dropped) = kept_headers(raw, head);
        if dropped > 0 {
            self.counts.headers_dropped += dropped as u64;
            let what = format!(
                "{} head has {} header fields: {dropped} past the first {MAX_HEADERS} dropped \
                 (those that frame the message or name its session kept)",
                message_kind(dir),
                headers.0.len() + dropped
            );
            self.anomaly((AnomalyKind::HeaderFieldsDropped, what), dir, mark, sink);
        }
        headers
    }

    /// Starts the message of a request head parsed from `head` (`complete`: not cut by a gap).
    fn request_head(
        &mut self,
        req: &httparse::Request<'_, '_>,
        head: &[u8],
        first: Mark,
        mark: Mark,
        complete: bool,
        sink: &mut impl HttpSink,
    ) {
        let method = req.method.unwrap_or("").to_string();
        let target = req.path.unwrap_or("").to_string();
        let version = req.version.unwrap_or(1);
        let headers = self.headers_of(Direction::ClientToServer, req.headers, head, mark, sink);
        if headers.has_token("upgrade", "h2c") {
            self.h2c_settings = headers
                .get("http2-settings")
                .and_then(decode_http2_settings);
        }
        let (framing, problem) = request_framing(&headers);
        if let Some(p) = problem {
            self.anomaly(p, Direction::ClientToServer, mark, sink);
        }
        let index = self.request_index(&method, first);
        let exchange = ExchangeId {
            conn: self.id,
            index,
        };
        let start = Start::Request {
            method,
            target,
            version,
        };
        let mut msg = new_message(start, headers, exchange, framing, first, mark);
        msg.head_complete = complete;
        self.begin_body(Direction::ClientToServer, msg);
    }

    /// Reports a response head parsed from `head` (`complete`: not cut by a gap) and starts its
    /// message.
    fn response_head(
        &mut self,
        resp: &httparse::Response<'_, '_>,
        head: &[u8],
        first: Mark,
        mark: Mark,
        complete: bool,
        sink: &mut impl HttpSink,
    ) {
        let dir = Direction::ServerToClient;
        let status = resp.code.unwrap_or(0);
        let reason = resp.reason.unwrap_or("").to_string();
        let version = resp.version.unwrap_or(1);
        let headers = self.headers_of(dir, resp.headers, head, mark, sink);
        if (100..200).contains(&status) && status != 101 {
            // Interim response (100 Continue, 103 Early Hints): the final one follows.
            self.interim.push(status);
            return;
        }
        self.end_request_lost_in_gap(mark, sink);
        let (index, method) = self.response_index(first);
        let exchange = ExchangeId {
            conn: self.id,
            index,
        };
        if status == 101 && headers_upgrade_to_h2c(&headers) {
            self.upgrade_to_h2c(exchange);
            return;
        }
        let (framing, problem) = response_framing(&method, status, &headers);
        if let Some(p) = problem {
            self.anomaly(p, dir, mark, sink);
        }
        if framing == Framing::Tunnel {
            // Said, not only counted: JSON-RPC over a WebSocket is MCP this tool does not read.
            let to = headers.get("upgrade").unwrap_or(if status == 101 {
                "an unnamed protocol"
            } else {
                "a tunnel"
            });
            let what = format!(
                "{status} on {exchange}: the connection switched to {to}; what follows on it is not HTTP and is not read"
            );
            self.anomaly((AnomalyKind::ProtocolSwitched, what), dir, mark, sink);
        }
        let event_stream =
            (200..300).contains(&status) && headers.media_type_is("text/event-stream");
        let mut msg = new_message(Start::Response, headers, exchange, framing, first, mark);
        let response_head = ResponseHead {
            exchange,
            status,
            reason,
            version,
            // A response's end does not carry its headers: the head takes them.
            headers: std::mem::take(&mut msg.headers),
            interim: std::mem::take(&mut self.interim),
            first,
            event_stream,
            head_complete: complete,
            upstream: None,
        };
        sink.on_http(HttpEvent::ResponseHead(Box::new(response_head)));
        self.begin_response_body(msg, event_stream, mark, sink);
    }

    /// Reads the body of a response whose head was reported: an event stream's events one by
    /// one; after CONNECT 2xx or 101, none.
    fn begin_response_body(
        &mut self,
        mut msg: Message,
        event_stream: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let dir = Direction::ServerToClient;
        let framing = msg.framing;
        if event_stream {
            msg.payload.sse = Some(SseParser::new());
        }
        self.begin_body(dir, msg);
        if framing == Framing::Tunnel {
            // After CONNECT 2xx or 101 the bytes are another protocol.
            self.end_message(dir, Outcome::Complete, None, mark, sink);
            self.req.state = State::Opaque;
            self.resp.state = State::Opaque;
        }
    }

    /// Parses what a gap left of a head, its whole lines (`whole`), ended as a head ends; returns
    /// whether they held a start line, whose message is then started as not complete.
    pub(super) fn parse_cut_head(
        &mut self,
        dir: Direction,
        whole: &[u8],
        first: Mark,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> bool {
        let mut ended = whole.to_vec();
        ended.extend_from_slice(b"\r\n");
        let ended = self
            .without_control_bytes(dir, &ended, mark, sink)
            .into_owned();
        let mut slots = header_slots(&ended);
        match dir {
            Direction::ClientToServer => {
                let mut req = httparse::Request::new(&mut slots);
                let ok = matches!(req.parse(&ended), Ok(httparse::Status::Complete(_)));
                if ok {
                    self.request_head(&req, &ended, first, mark, false, sink);
                }
                ok
            }
            Direction::ServerToClient => {
                let mut resp = httparse::Response::new(&mut slots);
                let ok = matches!(resp.parse(&ended), Ok(httparse::Status::Complete(_)));
                if ok {
                    self.response_head(&resp, &ended, first, mark, false, sink);
                }
                ok
            }
        }
    }

    /// The head to parse: `head` itself, or a copy with its control bytes replaced by `?`.
    fn without_control_bytes<'h>(
        &mut self,
        dir: Direction,
        head: &'h [u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> Cow<'h, [u8]> {
        if !has_control_bytes(head) {
            return Cow::Borrowed(head);
        }
        // A crafted or broken peer put control bytes in the head: parse a copy with them
        // replaced, and say so (peers usually reject such messages, but they crossed the
        // wire and are evidence).
        let what = format!(
            "control characters in the {} head (shown as '?')",
            message_kind(dir)
        );
        self.anomaly(
            (AnomalyKind::ControlCharactersInHead, what),
            dir,
            mark,
            sink,
        );
        Cow::Owned(replace_control_bytes(head))
    }

    /// Whether httparse read a whole head; when not, says why and counts a malformed head as
    /// skipped.
    fn head_parsed(
        &mut self,
        dir: Direction,
        parsed: httparse::Result<usize>,
        head_len: usize,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> bool {
        let problem = match parsed {
            Ok(httparse::Status::Complete(_)) => return true,
            Ok(httparse::Status::Partial) => (
                AnomalyKind::IncompleteHead,
                format!("incomplete {} head", message_kind(dir)),
            ),
            Err(e) => {
                self.half(dir).skipped += head_len as u64;
                let what = format!("malformed {} head: {e}", message_kind(dir));
                (AnomalyKind::MalformedHead, what)
            }
        };
        self.anomaly(problem, dir, mark, sink);
        false
    }
}

/// Bytes RFC 9110 forbids in a field value (CTLs other than HTAB, and DEL), outside line ends.
fn is_forbidden(b: u8) -> bool {
    (b < 0x20 && b != b'\t' && b != b'\r' && b != b'\n') || b == 0x7f
}

fn has_control_bytes(head: &[u8]) -> bool {
    // A block at a time with no exit inside: the compiler then tests many bytes per instruction.
    head.chunks(64)
        .any(|block| block.iter().fold(false, |any, &b| any | is_forbidden(b)))
}

fn replace_control_bytes(head: &[u8]) -> Vec<u8> {
    head.iter()
        .map(|&b| if is_forbidden(b) { b'?' } else { b })
        .collect()
}

/// Room for every header line of `head`: a field takes a line, so the parser never runs out
/// of slots (it would reject the whole head), and a usual head of a dozen fields takes a dozen.
fn header_slots(head: &[u8]) -> Vec<httparse::Header<'_>> {
    let lines = memchr::memchr_iter(b'\n', head).count();
    vec![httparse::EMPTY_HEADER; lines.min(MAX_HEAD) + 1]
}

/// The fields of a head (parsed from `head`): the first [`MAX_HEADERS`], and past them those
/// the pipeline reads; returns how many were dropped.
fn kept_headers(raw: &[httparse::Header<'_>], head: &[u8]) -> (Headers, usize) {
    // One check of the whole head rather than one per value (most are a few bytes, where a
    // check costs more than the copy): a value is cut from the head at ASCII bytes (the colon,
    // white space, the line end), so it is valid UTF-8 when the head is.
    let text = simdutf8::basic::from_utf8(head).ok();
    let mut kept = Vec::with_capacity(raw.len().min(MAX_HEADERS));
    let mut dropped = 0;
    for h in raw.iter().filter(|h| !h.name.is_empty()) {
        if kept.len() < MAX_HEADERS || never_dropped(h.name.as_bytes()) {
            let value = match text.and_then(|t| text_of(t, head, h.value)) {
                Some(v) => v.to_owned(),
                None => value_text(h.value),
            };
            kept.push((h.name.to_string(), value));
        } else {
            dropped += 1;
        }
    }
    (Headers(kept), dropped)
}

/// `part`, a slice of `head` (httparse hands out slices of the buffer it parsed), read from
/// `text`, the same bytes checked as UTF-8.
fn text_of<'t>(text: &'t str, head: &[u8], part: &[u8]) -> Option<&'t str> {
    let at = (part.as_ptr() as usize).checked_sub(head.as_ptr() as usize)?;
    text.get(at..at.checked_add(part.len())?)
}

/// A value of a head that is not all UTF-8: checked alone, replaced where it is not.
fn value_text(value: &[u8]) -> String {
    match simdutf8::basic::from_utf8(value) {
        Ok(v) => v.to_owned(),
        Err(_) => String::from_utf8_lossy(value).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(head: &[u8]) -> Vec<(String, String)> {
        let mut slots = header_slots(head);
        let mut req = httparse::Request::new(&mut slots);
        assert!(req.parse(head).is_ok_and(|s| s.is_complete()));
        kept_headers(req.headers, head).0.0
    }

    #[test]
    fn values_are_read_from_the_head_checked_once_or_one_by_one() {
        let utf8 = "GET / HTTP/1.1\r\nHost: x\r\nX-Name: Zoë\r\n\r\n";
        assert_eq!(
            fields(utf8.as_bytes()),
            [("Host", "x"), ("X-Name", "Zoë")].map(|(n, v)| (n.into(), v.into()))
        );
        // A value that is not UTF-8 is replaced alone; the others are kept as sent.
        let mixed = b"GET / HTTP/1.1\r\nX-Bad: a\xffb\r\nX-Name: Zo\xc3\xab\r\n\r\n";
        assert_eq!(
            fields(mixed),
            [("X-Bad", "a\u{fffd}b"), ("X-Name", "Zoë")].map(|(n, v)| (n.into(), v.into()))
        );
    }
}
