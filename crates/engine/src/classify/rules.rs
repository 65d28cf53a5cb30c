//! The rules that decide, from a connection's first client bytes, whether it is examined or set
//! aside (docs/classification.md says them in words). A connection is set aside only when its
//! first request could not be MCP by what the MCP stage itself goes by (`what_request_says` in
//! the builder): no MCP header, no event stream asked for, no MCP method in its body.

use mcpf_http::sniff::{self, Body, FirstBytes, FirstRequest, Method};
use mcpf_mcp::jsonrpc::{BodySays, body_says};

use super::body::Skip;

/// Body bytes of the first request read to judge it: a longer body is left to the parser.
pub(super) const MAX_SNIFF_BODY: u64 = 64 << 10;
/// Client bytes looked at before the verdict, head and body together.
pub(super) const MAX_SNIFF: usize = sniff::MAX_SNIFF_HEAD + MAX_SNIFF_BODY as usize;

/// Why a connection was set aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reason {
    /// TLS, and the run had no secret to decrypt anything with when it began.
    TlsWithoutKeys,
    /// Its first bytes begin no HTTP request (nor TLS, nor HTTP/2).
    NotHttp,
    /// Its first request cannot be MCP by its method, media type or missing body.
    RequestNotMcp,
    /// Its first request is JSON-RPC calling methods MCP does not have.
    JsonRpcNotMcp,
    /// Its first request posts JSON that is not JSON-RPC.
    JsonNotJsonRpc,
}

/// What the first bytes decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    NeedMore,
    /// Examined whole; `mcp`: the request showed MCP itself, so its server carries MCP.
    Examine {
        mcp: bool,
    },
    SetAside(Reason),
}

/// The verdict on `first`, a connection's first client bytes; `secrets`: the run has a TLS
/// secret (a key log, or one a capture carried) as these bytes come.
#[cfg(test)]
pub(super) fn verdict(first: &[u8], secrets: bool) -> Verdict {
    judge(first, secrets).0
}

/// The verdict on `first`, and where the first request's body is at their end (what of it is
/// still to come, to be skipped).
pub(super) fn judge(first: &[u8], secrets: bool) -> (Verdict, Skip) {
    let examine = Verdict::Examine { mcp: false };
    let verdict = match sniff::first_bytes(first) {
        FirstBytes::NeedMore if first.len() >= MAX_SNIFF => examine,
        FirstBytes::NeedMore => Verdict::NeedMore,
        FirstBytes::Tls if secrets => examine,
        FirstBytes::Tls => Verdict::SetAside(Reason::TlsWithoutKeys),
        FirstBytes::NotHttp => Verdict::SetAside(Reason::NotHttp),
        FirstBytes::Http2 | FirstBytes::Unsure => examine,
        FirstBytes::Request(r) => {
            let body = &first[r.head_len..];
            let mut skip = match r.body {
                Body::Length(n) => Skip::Length(n),
                Body::Chunked => Skip::chunked(),
                Body::None => Skip::Done,
            };
            let used = skip.skip(body);
            let verdict = match request_verdict(&r, body) {
                // More than one request in the first bytes (pipelined): the next one was handed
                // on with the first, before anything could search it. Examined.
                Verdict::SetAside(_) if skip == Skip::Done && used < body.len() => examine,
                v => v,
            };
            return (verdict, skip);
        }
    };
    (verdict, Skip::Done)
}

/// The verdict on a first request whose head is `r` and whose body begins `body`.
fn request_verdict(r: &FirstRequest, body: &[u8]) -> Verdict {
    let examine = Verdict::Examine { mcp: false };
    if r.mcp_header {
        return Verdict::Examine { mcp: true };
    }
    // A POST's own body first: an `initialize` asks for an event stream too, and what its
    // method says (its server carries MCP) must not be lost to that.
    if let (Method::Post, Body::Length(n)) = (r.method, r.body)
        && n <= MAX_SNIFF_BODY
        && !r.content_cannot_be_mcp
    {
        if (body.len() as u64) < n {
            return Verdict::NeedMore;
        }
        if body_says(&body[..n as usize]) == BodySays::Mcp {
            return Verdict::Examine { mcp: true };
        }
    }
    // An event stream (MCP's GET, or the legacy transport's), another protocol by `Upgrade`
    // (h2c carries MCP too), a CORS preflight (the request it clears follows on the same
    // connection): each is examined.
    if r.accepts_event_stream || r.upgrade || r.method == Method::Options {
        return examine;
    }
    if r.content_cannot_be_mcp || r.method != Method::Post {
        return Verdict::SetAside(Reason::RequestNotMcp);
    }
    match r.body {
        Body::None | Body::Length(0) => Verdict::SetAside(Reason::RequestNotMcp),
        Body::Chunked => examine,
        Body::Length(n) if n > MAX_SNIFF_BODY => examine,
        Body::Length(n) if (body.len() as u64) < n => Verdict::NeedMore,
        Body::Length(n) => match body_says(&body[..n as usize]) {
            BodySays::Mcp => Verdict::Examine { mcp: true },
            BodySays::Maybe => examine,
            BodySays::JsonRpcNotMcp => Verdict::SetAside(Reason::JsonRpcNotMcp),
            BodySays::NotJsonRpc => Verdict::SetAside(Reason::JsonNotJsonRpc),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(headers: &str, body: &str) -> Vec<u8> {
        let len = body.len();
        format!("POST /x HTTP/1.1\r\nHost: h\r\n{headers}Content-Length: {len}\r\n\r\n{body}")
            .into_bytes()
    }

    const EXAMINE: Verdict = Verdict::Examine { mcp: false };
    const MCP: Verdict = Verdict::Examine { mcp: true };

    #[test]
    fn mcp_requests_of_every_transport_are_examined() {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        assert_eq!(verdict(&post("", init), false), MCP);
        let named = post(
            "Mcp-Session-Id: abc\r\n",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        );
        assert_eq!(verdict(&named, false), MCP);
        let get = b"GET /mcp HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n";
        assert_eq!(verdict(get, false), EXAMINE);
        // What a spec-conforming client sends: the method still tells the server is MCP's.
        let accepts = "Accept: application/json, text/event-stream\r\n";
        assert_eq!(verdict(&post(accepts, init), false), MCP);
        // A second request behind the first in the same bytes is examined with it.
        let mut two = b"GET /.well-known/x HTTP/1.1\r\n\r\n".to_vec();
        two.extend_from_slice(&post("", init));
        assert_eq!(verdict(&two, false), EXAMINE);
        // A client answering a server's request on the legacy transport: no method, no header.
        let answer = post(
            "Content-Type: application/json\r\n",
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
        );
        assert_eq!(verdict(&answer, false), EXAMINE);
        let preflight = b"OPTIONS /mcp HTTP/1.1\r\nAccess-Control-Request-Method: POST\r\n\r\n";
        assert_eq!(verdict(preflight, false), EXAMINE);
        assert_eq!(verdict(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false), EXAMINE);
        assert_eq!(verdict(b"\x16\x03\x01\x00\x05", true), EXAMINE);
    }

    #[test]
    fn what_cannot_be_mcp_is_set_aside() {
        let aside = Verdict::SetAside;
        assert_eq!(
            verdict(b"GET /file.bin HTTP/1.1\r\n\r\n", false),
            aside(Reason::RequestNotMcp)
        );
        let upload = post("Content-Type: application/octet-stream\r\n", "0123");
        assert_eq!(verdict(&upload, false), aside(Reason::RequestNotMcp));
        let eth = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
        assert_eq!(verdict(&post("", eth), false), aside(Reason::JsonRpcNotMcp));
        let rest = post("Content-Type: application/json\r\n", r#"{"name":"x"}"#);
        assert_eq!(verdict(&rest, false), aside(Reason::JsonNotJsonRpc));
        assert_eq!(
            verdict(b"\x16\x03\x01\x00\x05", false),
            aside(Reason::TlsWithoutKeys)
        );
        assert_eq!(
            verdict(b"\x00\x00\x00\x2b\x01", false),
            aside(Reason::NotHttp)
        );
    }

    #[test]
    fn waits_for_the_whole_head_and_body_within_bounds() {
        let init = post("", r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#);
        for cut in [1, 10, init.len() - 1] {
            assert_eq!(verdict(&init[..cut], false), Verdict::NeedMore, "{cut}");
        }
        let big = format!(
            "POST /x HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_SNIFF_BODY + 1
        );
        assert_eq!(verdict(big.as_bytes(), false), EXAMINE);
        let chunked = b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n";
        assert_eq!(verdict(chunked, false), EXAMINE);
    }
}
