//! What a connection's first bytes say before any parser reads them: the protocol they begin,
//! and for HTTP/1.x the first request's head. Asked by the early classification (the engine's),
//! which decides from it whether the rest of the connection is worth the HTTP stage's work;
//! sans-IO and allocation-free, so that asking costs little on connections that turn out to be
//! something else.

use crate::conn::{PREFACE_START, is_tls_record_start};

/// Bytes of the first request head looked at: a head longer than this is left to the parser.
pub const MAX_SNIFF_HEAD: usize = 16 << 10;
/// Header fields read of the first request; a head with more is left to the parser.
const MAX_FIELDS: usize = 64;

/// What the early classification set aside, by its first bytes, as not MCP: counts for the
/// report (`summary.http.set_aside`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SetAside {
    /// Connections set aside, by the reason (a rule of docs/classification.md) ...
    pub connections: u64,
    pub tls_without_keys: u64,
    pub not_http: u64,
    pub request_not_mcp: u64,
    pub jsonrpc_not_mcp: u64,
    pub json_not_jsonrpc: u64,
    /// ... and their bytes not examined (those after the verdict, in both directions; the
    /// bytes of a connection resumed later count up to where it resumed).
    pub bytes_not_examined: u64,
    /// Connections set aside that showed a sign of MCP later (or whose server did): examined
    /// from the window of their last bytes on, ...
    pub resumed: u64,
    /// ... of them, those that had more bytes since they were set aside than their window
    /// kept, examined from the first request line kept on ...
    pub resumed_with_loss: u64,
    /// ... and the bytes before it, not examined (the server's answers to requests not
    /// examined included): what a late-identified connection lost.
    pub resumed_bytes_not_kept: u64,
    /// Connections set aside without a window of their last bytes: the windows of the
    /// connections set aside already held all the bytes allowed together.
    pub windows_not_kept: u64,
    /// Connections examined whole because the servers known to carry MCP were already as many
    /// as are remembered: the classification stops setting aside rather than guess.
    pub examined_past_server_cap: u64,
    /// Connections examined whole because the first requests arriving in pieces already held
    /// all the bytes allowed together.
    pub examined_past_sniff_budget: u64,
}

impl SetAside {
    /// Adds another run part's counts. Every field is named, so a new counter cannot be left
    /// out.
    pub fn merge(&mut self, other: &SetAside) {
        let SetAside {
            connections,
            tls_without_keys,
            not_http,
            request_not_mcp,
            jsonrpc_not_mcp,
            json_not_jsonrpc,
            bytes_not_examined,
            resumed,
            resumed_with_loss,
            resumed_bytes_not_kept,
            windows_not_kept,
            examined_past_server_cap,
            examined_past_sniff_budget,
        } = other;
        for (to, from) in [
            (&mut self.connections, connections),
            (&mut self.tls_without_keys, tls_without_keys),
            (&mut self.not_http, not_http),
            (&mut self.request_not_mcp, request_not_mcp),
            (&mut self.jsonrpc_not_mcp, jsonrpc_not_mcp),
            (&mut self.json_not_jsonrpc, json_not_jsonrpc),
            (&mut self.bytes_not_examined, bytes_not_examined),
            (&mut self.resumed, resumed),
            (&mut self.resumed_with_loss, resumed_with_loss),
            (&mut self.resumed_bytes_not_kept, resumed_bytes_not_kept),
            (&mut self.windows_not_kept, windows_not_kept),
            (&mut self.examined_past_server_cap, examined_past_server_cap),
            (
                &mut self.examined_past_sniff_budget,
                examined_past_sniff_budget,
            ),
        ] {
            *to += from;
        }
    }
}

/// What a connection's first client bytes begin.
#[derive(Debug, PartialEq, Eq)]
pub enum FirstBytes {
    /// Not enough yet to tell.
    NeedMore,
    /// A TLS record (a ClientHello).
    Tls,
    /// The HTTP/2 connection preface (prior knowledge).
    Http2,
    /// Bytes no HTTP/1.x request line begins with: binary, or text that is not a request line.
    NotHttp,
    /// An HTTP/1.x request whose head is whole.
    Request(FirstRequest),
    /// HTTP/1.x by its start, but its head is not readable here (too long, too many fields,
    /// malformed): the parser will say.
    Unsure,
}

/// What the first request's head says, for the classification's rules.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FirstRequest {
    /// Bytes of the head, its blank line included: the body starts after them.
    pub head_len: usize,
    pub method: Method,
    /// It carries `Mcp-Session-Id` or `MCP-Protocol-Version`: MCP by its headers.
    pub mcp_header: bool,
    /// Its `Accept` names `text/event-stream`.
    pub accepts_event_stream: bool,
    /// It asks for another protocol (`Upgrade`: h2c, WebSocket).
    pub upgrade: bool,
    /// Its `Content-Type` names a media type no MCP message is sent as (not JSON, an event
    /// stream or plain text).
    pub content_cannot_be_mcp: bool,
    pub body: Body,
}

/// The request methods the rules tell apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Method {
    Get,
    #[default]
    Post,
    Delete,
    Options,
    Other,
}

/// How the first request's body is framed (RFC 9112 §6.3, for a request).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Body {
    #[default]
    None,
    Length(u64),
    Chunked,
}

/// What `data`, a connection's first client bytes, begin. `data` may stop anywhere.
pub fn first_bytes(data: &[u8]) -> FirstBytes {
    if data.is_empty() {
        return FirstBytes::NeedMore;
    }
    if is_tls_record_start(data) {
        return FirstBytes::Tls;
    }
    // A handshake record's first byte alone: its second tells.
    if data == [0x16] {
        return FirstBytes::NeedMore;
    }
    let preface = data.len().min(PREFACE_START.len());
    if data[..preface] == PREFACE_START[..preface] {
        return match preface == PREFACE_START.len() {
            true => FirstBytes::Http2,
            false => FirstBytes::NeedMore,
        };
    }
    if !starts_like_a_request_line(data) {
        return FirstBytes::NotHttp;
    }
    read_head(data)
}

/// Whether `data` may begin a request line: a method token (RFC 9110 §9.1: token characters)
/// of 1 to 32 of them, then a space; bytes that stop before the space may still be one.
fn starts_like_a_request_line(data: &[u8]) -> bool {
    const MAX_METHOD: usize = 32;
    for (i, &b) in data.iter().take(MAX_METHOD + 1).enumerate() {
        match b {
            b' ' => return i > 0,
            b if is_tchar(b) => {}
            _ => return false,
        }
    }
    data.len() <= MAX_METHOD
}

/// Whether `data` begins with a whole HTTP/1.x request line (method, target, version).
pub fn is_request_line(data: &[u8]) -> bool {
    let Some(end) = memchr::memchr(b'\n', &data[..data.len().min(MAX_SNIFF_HEAD)]) else {
        return false;
    };
    let line = data[..end].strip_suffix(b"\r").unwrap_or(&data[..end]);
    let mut parts = line.split(|&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    let version = parts.next().unwrap_or_default();
    !method.is_empty()
        && method.iter().all(|&b| is_tchar(b))
        && !target.is_empty()
        && version.starts_with(b"HTTP/1.")
        && parts.next().is_none()
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn read_head(data: &[u8]) -> FirstBytes {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut req = httparse::Request::new(&mut fields);
    match req.parse(data) {
        // A head that ends past the bound is left to the parser, whatever segment carried it.
        Ok(httparse::Status::Complete(head_len)) if head_len > MAX_SNIFF_HEAD => FirstBytes::Unsure,
        Ok(httparse::Status::Complete(head_len)) => {
            FirstBytes::Request(first_request(&req, head_len))
        }
        Ok(httparse::Status::Partial) if data.len() < MAX_SNIFF_HEAD => FirstBytes::NeedMore,
        _ => FirstBytes::Unsure,
    }
}

fn first_request(req: &httparse::Request<'_, '_>, head_len: usize) -> FirstRequest {
    let method = match req.method.unwrap_or("") {
        "GET" | "HEAD" => Method::Get,
        "POST" => Method::Post,
        "DELETE" => Method::Delete,
        "OPTIONS" => Method::Options,
        _ => Method::Other,
    };
    let mut out = FirstRequest {
        head_len,
        method,
        ..FirstRequest::default()
    };
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("mcp-session-id")
            || name.eq_ignore_ascii_case("mcp-protocol-version")
        {
            out.mcp_header = true;
        } else if name.eq_ignore_ascii_case("accept") {
            out.accepts_event_stream |= contains_ignore_case(h.value, b"text/event-stream");
        } else if name.eq_ignore_ascii_case("upgrade") {
            out.upgrade = true;
        } else if name.eq_ignore_ascii_case("content-type") {
            let media = std::str::from_utf8(h.value).unwrap_or("").trim();
            out.content_cannot_be_mcp = !crate::payload::may_carry_mcp(media);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            out.body = Body::Chunked;
        } else if name.eq_ignore_ascii_case("content-length") && out.body != Body::Chunked {
            let length = std::str::from_utf8(h.value).ok();
            out.body = match length.and_then(|v| v.trim().parse().ok()) {
                Some(n) => Body::Length(n),
                // A length the parser will reject: its body is whatever it then makes of it.
                None => Body::Chunked,
            };
        }
    }
    out
}

fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(head: &str) -> FirstRequest {
        match first_bytes(head.as_bytes()) {
            FirstBytes::Request(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tells_tls_http2_and_what_is_not_http() {
        assert_eq!(first_bytes(b"\x16\x03\x01\x02\x00"), FirstBytes::Tls);
        assert_eq!(
            first_bytes(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
            FirstBytes::Http2
        );
        assert_eq!(first_bytes(b"PRI * HT"), FirstBytes::NeedMore);
        assert_eq!(
            first_bytes(b"\x00\x00\x00\x08\x04\xd2\x16\x2f"),
            FirstBytes::NotHttp
        );
        assert_eq!(first_bytes(b"SSH-2.0-OpenSSH_9.6\r\n"), FirstBytes::NotHttp);
        assert_eq!(first_bytes(b"GE"), FirstBytes::NeedMore);
        assert_eq!(
            first_bytes(b"GET / HTTP/1.1\r\nHost: a\r\n"),
            FirstBytes::NeedMore
        );
    }

    #[test]
    fn reads_what_the_rules_ask_of_the_first_head() {
        let text = "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n\
             accept: application/json, TEXT/EVENT-STREAM\r\nmcp-session-id: x\r\n\
             Content-Length: 42\r\n\r\n{";
        let r = request(text);
        assert_eq!(r.method, Method::Post);
        assert!(r.mcp_header && r.accepts_event_stream && !r.content_cannot_be_mcp);
        assert_eq!(r.body, Body::Length(42));
        assert_eq!(r.head_len, text.len() - 1);

        let r = request(
            "PUT /blob HTTP/1.1\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!(r.method, Method::Other);
        assert!(r.content_cannot_be_mcp && !r.mcp_header);
        assert_eq!(r.body, Body::Chunked);

        let r = request("GET /x HTTP/1.1\r\nUpgrade: h2c\r\n\r\n");
        assert!(r.upgrade && r.body == Body::None);
    }

    #[test]
    fn a_head_too_long_to_read_here_is_left_to_the_parser() {
        let mut head = b"GET / HTTP/1.1\r\n".to_vec();
        while head.len() < MAX_SNIFF_HEAD {
            head.extend_from_slice(b"X-Filler: 0123456789abcdef\r\n");
        }
        assert_eq!(first_bytes(&head), FirstBytes::Unsure);
        let many: String = (0..100).map(|i| format!("X-{i}: v\r\n")).collect();
        let head = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(first_bytes(head.as_bytes()), FirstBytes::Unsure);
    }
}
