//! Credentials found by where they are rather than by their shape: the value of a parameter or
//! a JSON member whose name announces a credential ([`secret_name`]), and the password of a
//! URL's userinfo (`https://user:password@host`).
//!
//! Each matcher is tried at the byte that joins a name to its value (`=`, the `:` of a JSON
//! member) or ends the userinfo (`@`) and reads backwards from there, so a scan stops only at
//! those bytes.

use super::name::{secret_member_name, secret_name};
use super::{Found, Hit, run};

/// Bytes of a name: a parameter, a header, a JSON member.
fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')
}

/// Longest name read backwards from a `=` or `:`.
const MAX_NAME: usize = 128;

/// Bytes of a parameter's value: up to a separator (`&`, `#`, `;`), whitespace, a quote, or
/// markup (`<`, `>`), which is where a URL in JSON, HTML or prose ends.
fn is_value_byte(c: u8) -> bool {
    !(c.is_ascii_whitespace() || b"&#\"'\\<>;".contains(&c) || c.is_ascii_control())
}

/// Length of the run of bytes before `at`, not before `lo`, that satisfy `f`; counted up to
/// one more than [`MAX_NAME`], which is all a caller needs to know (a name too long).
fn back_run(b: &[u8], at: usize, lo: usize, f: impl Fn(u8) -> bool) -> usize {
    b[lo..at]
        .iter()
        .rev()
        .take(MAX_NAME + 1)
        .take_while(|&&c| f(c))
        .count()
}

fn chars(b: &[u8]) -> usize {
    String::from_utf8_lossy(b).chars().count()
}

/// A value redacted already, by this rule (`[redacted, 3 chars]`) or by a shape's
/// (`sk-ant-…[redacted, 32 chars]`): redacting again would change what the first pass wrote.
fn already_redacted(v: &[u8]) -> bool {
    const MARK: &[u8] = b"[redacted";
    v.starts_with(MARK)
        || memchr::memmem::find(v, "…[redacted".as_bytes())
            .is_some_and(|at| at <= 16 && v[..at].iter().all(|&c| super::is_token_byte(c)))
}

/// Whether the first byte of a value could begin a parameter's value (the pair test of the
/// scan).
pub(super) const fn may_start_value(c: u8) -> bool {
    !(c.is_ascii_whitespace()
        || c.is_ascii_control()
        || matches!(c, b'&' | b'#' | b'"' | b'\'' | b'\\' | b'<' | b'>' | b';'))
}

/// `name=value` at the `=` at `i`: a query, fragment or path parameter (`?access_key=`,
/// `#access_token=`, `;jsessionid=`), a form field, `NAME=value` in text.
pub(super) fn assignment(b: &[u8], i: usize, lo: usize) -> Option<Hit> {
    let name = back_run(b, i, lo, is_name_byte);
    if name == 0 || name > MAX_NAME || !secret_name(&b[i - name..i]) {
        return None;
    }
    let value = run(b, i + 1, is_value_byte);
    let v = &b[i + 1..i + 1 + value];
    (value > 0 && !already_redacted(v)).then(|| Hit::named(1, 1 + value, chars(v)))
}

/// Authentication schemes kept before a redacted credential: they say what kind it was.
const SCHEMES: &[&[u8]] = &[
    b"basic",
    b"bearer",
    b"digest",
    b"dpop",
    b"negotiate",
    b"ntlm",
    b"token",
    b"aws4-hmac-sha256",
];

/// Length of a known scheme and the spaces after it at the start of `v`, or 0.
pub(super) fn scheme_len(v: &[u8]) -> usize {
    let word = v.iter().take_while(|&&c| c != b' ').count();
    let spaces = run(v, word, |c| c == b' ');
    let known = SCHEMES.iter().any(|s| v[..word].eq_ignore_ascii_case(s));
    if known && spaces > 0 && word + spaces < v.len() {
        word + spaces
    } else {
        0
    }
}

/// Whitespace between a JSON member's name, its colon and its value.
fn is_json_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// A JSON string quote as it stands in this text: `"`, or `\"` inside a JSON string (a
/// request body in `http --format json`), `\\\"` a level further. `k` backslashes.
fn quote_at(b: &[u8], at: usize, k: usize) -> Option<bool> {
    let want = (0..=k).map(|n| if n < k { b'\\' } else { b'"' });
    for (n, c) in want.enumerate() {
        match b.get(at + n) {
            None => return None,
            Some(&got) if got != c => return Some(false),
            Some(_) => {}
        }
    }
    Some(true)
}

/// Where the string value opened before `from` ends: the first `"` after exactly `k`
/// backslashes, or after `k` and whole escaped pairs of the outer levels (`\\\\\"` ends a
/// value at `k = 1`: an escaped backslash, then the quote).
fn string_end(b: &[u8], from: usize, k: usize) -> Option<usize> {
    let mut at = from;
    while let Some(q) = memchr::memchr(b'"', &b[at..]).map(|q| at + q) {
        let r = back_run(b, q, from, |c| c == b'\\');
        if r >= k && (r - k).is_multiple_of(2 * k + 2) {
            return Some(q - k);
        }
        at = q + 1;
    }
    None
}

/// `"name": "value"` at the `:` at `i`, with a credential's name: the string value goes
/// (a known scheme before it stays), the name stays. Values that are not strings are kept:
/// JSON-RPC's numeric error `code`, a count. `complete` says no text follows `b` (else a
/// member that `b` ends in is [`Found::Partial`]).
pub(super) fn member(b: &[u8], i: usize, lo: usize, complete: bool) -> Found {
    // Numbers, objects, arrays, `true`: most members are seen not to be strings at once.
    let open = i + 1 + run(b, i + 1, is_json_space);
    if b.get(open).is_some_and(|&c| c != b'"' && c != b'\\') {
        return Found::Miss;
    }
    let gap = back_run(b, i, lo, is_json_space);
    let Some(close) = (i - gap)
        .checked_sub(1)
        .filter(|&c| c >= lo && b[c] == b'"')
    else {
        return Found::Miss;
    };
    let k = back_run(b, close, lo, |c| c == b'\\');
    let name_end = close - k;
    let name = back_run(b, name_end, lo, is_name_byte);
    let ns = name_end - name;
    if !matches!(k, 0 | 1 | 3 | 7) || name == 0 || name > MAX_NAME {
        return Found::Miss;
    }
    // The opening quote, unless the text begins with the name (a stream cut after the quote).
    let start = ns.saturating_sub(k + 1).max(lo);
    if ns > lo && (ns < lo + k + 1 || quote_at(b, ns - k - 1, k) != Some(true)) {
        return Found::Miss;
    }
    // The value's quote before the name: most members are not credentials.
    let quoted = quote_at(b, open, k);
    if quoted == Some(false) || !secret_member_name(&b[ns..name_end]) {
        return Found::Miss;
    }
    match quoted {
        None if !complete => return Found::Partial(start),
        Some(true) => {}
        _ => return Found::Miss,
    }
    let vs = open + k + 1;
    let ve = match string_end(b, vs, k) {
        Some(end) => end,
        None if complete => b.len(),
        None => return Found::Partial(start),
    };
    let v = &b[vs..ve];
    if v.is_empty() || already_redacted(v) {
        return Found::Miss;
    }
    let scheme = scheme_len(v);
    Found::Hit(Hit::named(vs - i + scheme, ve - i, chars(&v[scheme..])))
}

/// Where a JSON member that `b` ends in may begin, when `b` ends at a quote that may open a
/// name, inside or after a credential's name's closing quote, after its colon, or inside or
/// after its value's opening quote: a stream is not cut there, so that the name and its value
/// are read together.
pub(super) fn member_tail(b: &[u8]) -> Option<usize> {
    let end = b.len() - back_run(b, b.len(), 0, is_json_space);
    let (quote, k) = trailing_quote(b, end);
    let before = quote - back_run(b, quote, 0, is_json_space);
    if before > 0 && b[before - 1] == b':' {
        // After the colon: the name's closing quote comes before it.
        let colon = before - 1;
        let close = colon - back_run(b, colon, 0, is_json_space);
        let (name_end, k) = trailing_quote(b, close);
        return (name_end < close)
            .then(|| credential_name_start(b, name_end, k))
            .flatten();
    }
    if quote == end {
        return None;
    }
    match back_run(b, quote, 0, is_name_byte) {
        // A quote that may open a name.
        0 => Some(quote),
        _ => credential_name_start(b, quote, k),
    }
}

/// The start of the quote (`"`, `\"`, or only its backslashes, cut before the `"`) that `b`
/// ends in before `end`, and its backslashes; `end` when there is none.
fn trailing_quote(b: &[u8], end: usize) -> (usize, usize) {
    let quote = usize::from(end > 0 && b[end - 1] == b'"');
    let k = back_run(b, end - quote, 0, |c| c == b'\\');
    (end - quote - k, k)
}

/// Where the member whose name ends at `name_end` begins (its opening quote of `k`
/// backslashes, or the start of `b`), when the name announces a credential.
fn credential_name_start(b: &[u8], name_end: usize, k: usize) -> Option<usize> {
    let name = back_run(b, name_end, 0, is_name_byte);
    let ns = name_end - name;
    let start = match ns {
        0 => 0,
        _ => ns
            .checked_sub(k + 1)
            .filter(|&q| quote_at(b, q, k) == Some(true))?,
    };
    (name > 0 && name <= MAX_NAME && secret_member_name(&b[ns..name_end])).then_some(start)
}

/// Bytes of a URL's userinfo (RFC 3986 §3.2.1: unreserved, percent-encoded, sub-delims).
fn is_userinfo_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&c)
}

/// `//user:password@` at the `@` at `i`: the password goes, the user stays. Tried at the `@`,
/// which is rare, rather than at the colon, which every time of day and port has.
pub(super) fn userinfo(b: &[u8], i: usize, lo: usize) -> Option<Hit> {
    // A host follows (and the pair scan looks for no other `@`).
    if !b
        .get(i + 1)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'[')
    {
        return None;
    }
    // Not bounded like a name: a password may be long, and the run stops at the previous `@`.
    let info = b[lo..i]
        .iter()
        .rev()
        .take_while(|&&c| is_userinfo_byte(c) || c == b':')
        .count();
    let us = i - info;
    if us < lo + 2 || &b[us - 2..us] != b"//" {
        return None;
    }
    let colon = us + memchr::memchr(b':', &b[us..i])?;
    let p = &b[colon + 1..i];
    if p.is_empty() || already_redacted(p) {
        return None;
    }
    let mut hit = Hit::named(1, 1 + p.len(), chars(p));
    hit.back = i - colon;
    Some(hit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(text: &str) -> String {
        super::super::Redactor::new(true).text(text).into_owned()
    }

    #[test]
    fn parameters_in_a_query_a_fragment_a_path_and_text() {
        for (text, want) in [
            (
                "/cb#access_token=abc&x=1",
                "/cb#access_token=[redacted, 3 chars]&x=1",
            ),
            (
                "/m?access_key=k1&authorization=k2",
                "/m?access_key=[redacted, 2 chars]&authorization=[redacted, 2 chars]",
            ),
            (
                "/m?auth-key=a&passphrase=b&subscription-key=c&client_key=d",
                "/m?auth-key=[redacted, 1 chars]&passphrase=[redacted, 1 chars]&subscription-key=[redacted, 1 chars]&client_key=[redacted, 1 chars]",
            ),
            (
                "/app;jsessionid=0AB12?x=1",
                "/app;jsessionid=[redacted, 9 chars]",
            ),
            (
                "export DB_PASSWORD=hunter22 now",
                "export DB_PASSWORD=[redacted, 8 chars] now",
            ),
            (
                "/messages?sessionId=9f1c&key=q7Hx2",
                "/messages?sessionId=9f1c&key=[redacted, 5 chars]",
            ),
            (
                r#"{"key": "S1", "api_key": "q7Hx2"}"#,
                r#"{"key": "S1", "api_key": "[redacted, 5 chars]"}"#,
            ),
        ] {
            assert_eq!(redacted(text), want, "{text}");
        }
    }

    #[test]
    fn json_members_at_every_level_of_quoting() {
        for (text, want) in [
            (
                r#"{"password": "hunter2", "n": 1}"#,
                r#"{"password": "[redacted, 7 chars]", "n": 1}"#,
            ),
            (
                r#"{"api_key":"k-1","code":-32000}"#,
                r#"{"api_key":"[redacted, 3 chars]","code":-32000}"#,
            ),
            (
                r#""text":"{\"password\":\"a\\\"b\",\"x\":1}""#,
                r#""text":"{\"password\":\"[redacted, 6 chars]\",\"x\":1}""#,
            ),
            (
                r#"{"http_authorization":"Bearer abc def"}"#,
                r#"{"http_authorization":"Bearer [redacted, 7 chars]"}"#,
            ),
            (
                r#"{"key":"S1","session_id":"abc","progressToken":"p-7"}"#,
                r#"{"key":"S1","session_id":"abc","progressToken":"p-7"}"#,
            ),
            (r#"{"token": {"a": 1}}"#, r#"{"token": {"a": 1}}"#),
            // A body cut inside the value: what there is goes.
            (
                r#"{"password":"hunt"#,
                r#"{"password":"[redacted, 4 chars]"#,
            ),
        ] {
            assert_eq!(redacted(text), want, "{text}");
        }
    }

    #[test]
    fn userinfo_passwords() {
        for (text, want) in [
            (
                "GET http://alice:s3cret@proxy.example/mcp",
                "GET http://alice:[redacted, 6 chars]@proxy.example/mcp",
            ),
            (
                "https://x-access-token:abc:def@github.com/o/r",
                "https://x-access-token:[redacted, 7 chars]@github.com/o/r",
            ),
            ("https://host:8443/mcp", "https://host:8443/mcp"),
            ("10:42:07 user:name", "10:42:07 user:name"),
            ("mail alice@example.com", "mail alice@example.com"),
        ] {
            assert_eq!(redacted(text), want, "{text}");
        }
    }

    #[test]
    fn a_member_cut_by_the_stream_is_partial() {
        let text = br#"{"a":1,"password": "hun"#;
        let colon = text.iter().rposition(|&c| c == b':').unwrap();
        assert!(matches!(member(text, colon, 0, false), Found::Partial(7)));
        let text = br#"{"a":1,"password": "#;
        assert!(matches!(member(text, colon, 0, false), Found::Partial(7)));
    }

    #[test]
    fn a_stream_is_not_cut_inside_a_credential_member() {
        for (text, held) in [
            (r#"{"a":1,""#, Some(7)),
            (r#"{"a":1,"password""#, Some(7)),
            (r#"{"a":1,"password":"#, Some(7)),
            (r#"{"t":"{\"password\""#, Some(7)),
            (r#"{"t":"{\"#, Some(7)),
            (r#"{"a":1,"password":""#, Some(7)),
            (r#"{"a":1,"password": \"#, Some(7)),
            (r#"{"t":"{\"password\":\""#, Some(7)),
            (r#"{"a":1,"note""#, None),
            (r#"{"a":1,"note":""#, None),
            (r#"{"a":1}"#, None),
        ] {
            assert_eq!(member_tail(text.as_bytes()), held, "{text}");
        }
    }
}
