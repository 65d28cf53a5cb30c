//! The one recogniser of an HTTP/1.x request line, for every stage that has to tell one: the
//! capture stage deciding which side of a connection is the client from its first bytes, the
//! HTTP stage finding the next message after lost bytes, the ingest reading an access log's
//! `$request` field.
//!
//! RFC 9112 §3: `request-line = method SP request-target SP HTTP-version`. A method is a token
//! (RFC 9110 §9); the recogniser takes the shape every registered method has, 3 to 24 upper-case
//! letters, `-` or `_` (`GET`, `M-SEARCH`, `BASELINE-CONTROL`), so that bytes which merely start
//! with a capital letter are not taken for a request.

/// A request line's three parts, as the bytes of the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLine<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    /// `HTTP/1.1`, `HTTP/2.0` (a proxy's log of an HTTP/2 request), …
    pub version: &'a [u8],
}

impl RequestLine<'_> {
    /// `HTTP/1.0` or `HTTP/1.1`: a line an HTTP/1.x connection carries.
    pub fn is_http1(&self) -> bool {
        self.version.len() == 8
            && self.version.starts_with(b"HTTP/1.")
            && self.version[7].is_ascii_digit()
    }
}

/// Whether `token` has the shape of a request method.
pub fn is_method(token: &[u8]) -> bool {
    (3..=24).contains(&token.len())
        && token
            .iter()
            .all(|b| b.is_ascii_uppercase() || *b == b'-' || *b == b'_')
}

/// A whole request line (its line end taken off): `METHOD SP target SP HTTP/x.y`, the target
/// without spaces.
pub fn parse(line: &[u8]) -> Option<RequestLine<'_>> {
    let sp1 = line.iter().position(|&b| b == b' ')?;
    let method = &line[..sp1];
    if !is_method(method) {
        return None;
    }
    let rest = &line[sp1 + 1..];
    let sp2 = rest.iter().rposition(|&b| b == b' ')?;
    let (target, version) = (&rest[..sp2], &rest[sp2 + 1..]);
    let version_ok = version.len() > 5 && version.starts_with(b"HTTP/");
    (!target.is_empty() && !target.contains(&b' ') && version_ok).then_some(RequestLine {
        method,
        target,
        version,
    })
}

/// Whether `data` (the first bytes of a message, perhaps not a whole line) begins as a request
/// line does: a method, a space, and the start of a target (`/`, `*`, an absolute URI, or
/// CONNECT's authority). Looked at before the whole line is there.
pub fn begins_request(data: &[u8]) -> bool {
    let method_len = data
        .iter()
        .take(25)
        .take_while(|b| b.is_ascii_uppercase() || **b == b'-' || **b == b'_')
        .count();
    if !is_method(&data[..method_len]) {
        return false;
    }
    match (data.get(method_len), data.get(method_len + 1)) {
        (Some(b' '), Some(b'/' | b'*' | b'h' | b'H')) => true,
        // CONNECT host:port (RFC 9112 §3.2.3) starts with a letter or a digit.
        (Some(b' '), Some(c)) => c.is_ascii_alphanumeric() && &data[..method_len] == b"CONNECT",
        (Some(b' '), None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_whole_and_begun() {
        for (line, whole, begun) in [
            (&b"POST /mcp HTTP/1.1"[..], true, true),
            (b"M-SEARCH * HTTP/1.1", true, true),
            (b"CONNECT example.com:443 HTTP/1.1", true, true),
            (b"GET http://a/ HTTP/1.0", true, true),
            (b"POST /mcp HTTP/2.0", true, true),
            (b"GET ", false, true),
            (b"GET", false, false),
            (b"get / HTTP/1.1", false, false),
            (b"GE / HTTP/1.1", false, false),
            (b"ABCDEFGHIJKLMNOPQRSTUVWXY / HTTP/1.1", false, false),
            (b"GET /a b HTTP/1.1", false, true),
            (b"GET / HTTP", false, true),
            (b"FOO example", false, false),
            (b"\x16\x03\x01\x02\x00", false, false),
            (b"HTTP/1.1 200 OK", false, false),
        ] {
            let text = String::from_utf8_lossy(line);
            assert_eq!(parse(line).is_some(), whole, "{text}");
            assert_eq!(begins_request(line), begun, "{text}");
        }
        assert!(parse(b"POST /mcp HTTP/1.1").unwrap().is_http1());
        assert!(!parse(b"POST /mcp HTTP/2.0").unwrap().is_http1());
    }
}
