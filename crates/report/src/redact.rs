//! Credential redaction for reports that get pasted into incident channels.
//!
//! On by default in every format of every command (`--show-secrets` turns it off). Two layers,
//! one rule set:
//!
//! - [`Redactor::text`] is the one function that finds secrets in free text: credential query
//!   parameters (`?token=…`, `&X-Amz-Signature=…`, wherever a URL appears: request targets,
//!   legacy `endpoint` events, SSE data, JSON-RPC text), bearer tokens, and tokens recognisable
//!   by their shape (`sk-…`, `ghp_…`, `github_pat_…`, `xoxb-…`, `AKIA…`, JWTs).
//!   [`Redactor::header`] adds what only the header name tells (an `Authorization` or `Cookie`
//!   value of any shape). Reporters call these before laying out a cell, so a truncated cell
//!   cannot show half a token.
//! - [`Redacting`] wraps every command's standard output and applies [`Redactor::text`] to all
//!   that passes, so an output path that forgets to call the redactor still cannot print a
//!   secret. It is idempotent over the first layer: a redacted secret is not found again.
//!   Text already found free of secrets (a session record, scanned on the renderer's thread)
//!   goes through [`CleanWrite::write_clean`], which passes it on without scanning it again
//!   wherever that gives the same bytes.
//!
//! A redaction keeps the evidence readable: the token's recognisable prefix (`sk-ant-`, `ghp_`,
//! `eyJ`, `Bearer `, the parameter's name) and the secret's length stay, e.g.
//! `sk-ant-…[redacted, 108 chars]`. The `session_id` of a legacy SSE endpoint is not a secret
//! (it is the session identity the report shows) and is kept.

use std::borrow::Cow;
use std::io::{self, Write};

/// Headers whose value is a credential whatever its shape.
fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    // An idempotency key is evidence (`retry_without_idempotency_key`) and a challenge
    // (`WWW-Authenticate`) says how to authenticate: neither is a credential.
    if n == "idempotency-key" || n.ends_with("authenticate") {
        return false;
    }
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie" | "x-api-key"
    ) || [
        "token",
        "secret",
        "password",
        "key",
        "auth",
        "signature",
        "credential",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// Query parameters whose value is a credential. `session_id` is not one.
fn is_secret_param(name: &[u8]) -> bool {
    let n = String::from_utf8_lossy(name).to_ascii_lowercase();
    matches!(
        n.as_str(),
        "key" | "code" | "auth" | "sig" | "pass" | "pwd" | "jwt" | "apikey"
    ) || [
        "token",
        "secret",
        "signature",
        "password",
        "passwd",
        "credential",
        "api_key",
        "api-key",
        "auth_",
        "private",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// The replacement of a secret of `len` characters, after its kept prefix.
fn marker(len: usize) -> String {
    format!("[redacted, {len} chars]")
}

#[derive(Clone, Copy, Debug)]
pub struct Redactor {
    enabled: bool,
}

impl Redactor {
    pub fn new(enabled: bool) -> Self {
        Redactor { enabled }
    }

    /// A header value as it may be shown. The authentication scheme (`Bearer`, `Basic`) is kept:
    /// it tells the analyst what kind of credential was there.
    pub(crate) fn header(&self, name: &str, value: &str) -> String {
        if !self.enabled {
            return value.to_string();
        }
        if !is_secret_header(name) {
            return self.text(value).into_owned();
        }
        if let Some((scheme, credential)) = value.split_once(' ')
            && !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            let credential = credential.trim_start();
            return format!("{scheme} {}", marker(credential.chars().count()));
        }
        marker(value.chars().count())
    }

    /// A request target with credential query parameters redacted.
    pub(crate) fn target<'a>(&self, target: &'a str) -> Cow<'a, str> {
        self.text(target)
    }

    /// Free text (targets, bodies, SSE data, summaries) with every secret it holds redacted.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.enabled {
            return Cow::Borrowed(text);
        }
        match redact_bytes(text.as_bytes()) {
            // Only ASCII runs were replaced, by UTF-8 text: still UTF-8.
            Some(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
            None => Cow::Borrowed(text),
        }
    }

    /// Whether redaction leaves `text` as it is (always, when it is off).
    pub(crate) fn leaves_alone(&self, text: &[u8]) -> bool {
        !self.enabled || redact_bytes(text).is_none()
    }

    /// A table cell: redacted first, then sanitised and shortened to `max` characters, so the
    /// cut never leaves part of a secret behind.
    pub(crate) fn cell(&self, text: &str, max: usize) -> String {
        crate::sanitize::terminal_truncated(&self.text(text), max)
    }
}

/// Characters of a token: base64url, and the `.` of a JWT.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Length of the run of bytes from `at` that satisfy `f`.
fn run(bytes: &[u8], at: usize, f: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(at..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| f(b)).count())
}

/// A match: `keep` bytes of prefix shown, then `len - keep` bytes replaced; `len` counts the
/// whole secret.
struct Hit {
    keep: usize,
    len: usize,
    /// The length stated: the secret's, which is `len` minus what is only context (`Bearer `,
    /// `token=`).
    secret: usize,
}

/// A token recognised by its prefix: the prefix, the minimum length of what follows, and the
/// bytes it may hold.
type Prefixed = (&'static [u8], usize, fn(u8) -> bool);

const PREFIXED: &[Prefixed] = &[
    (b"github_pat_", 20, is_token_byte),
    (b"ghp_", 20, is_alnum),
    (b"gho_", 20, is_alnum),
    (b"ghs_", 20, is_alnum),
    (b"ghu_", 20, is_alnum),
    (b"ghr_", 20, is_alnum),
    (b"xoxb-", 10, is_token_byte),
    (b"xoxp-", 10, is_token_byte),
    (b"xoxa-", 10, is_token_byte),
    (b"xoxr-", 10, is_token_byte),
    (b"xoxs-", 10, is_token_byte),
];

/// `sk-` keys (OpenAI, Anthropic): the vendor part (`sk-ant-`, `sk-proj-`) is kept.
fn sk_key(b: &[u8], i: usize) -> Option<Hit> {
    if !b[i..].starts_with(b"sk-") {
        return None;
    }
    let body = run(b, i + 3, is_token_byte);
    if body < 16 {
        return None;
    }
    let vendor = run(b, i + 3, |c| c.is_ascii_lowercase());
    let keep = if (2..=8).contains(&vendor) && b.get(i + 3 + vendor) == Some(&b'-') {
        3 + vendor + 1
    } else {
        3
    };
    Some(Hit {
        keep,
        len: 3 + body,
        secret: 3 + body,
    })
}

/// AWS access key IDs: `AKIA` or `ASIA` and 16 upper-case letters or digits.
fn aws_key(b: &[u8], i: usize) -> Option<Hit> {
    if !(b[i..].starts_with(b"AKIA") || b[i..].starts_with(b"ASIA")) {
        return None;
    }
    let body = run(b, i + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
    (body == 16 && !b.get(i + 20).is_some_and(|&c| is_token_byte(c))).then_some(Hit {
        keep: 4,
        len: 20,
        secret: 20,
    })
}

/// JWTs: three base64url parts, the first a JSON object (`eyJ`); the signature may be empty.
fn jwt(b: &[u8], i: usize) -> Option<Hit> {
    if !b[i..].starts_with(b"eyJ") {
        return None;
    }
    let part = |at: usize| {
        run(b, at, |c| {
            c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
        })
    };
    let header = part(i);
    if header < 10 || b.get(i + header) != Some(&b'.') {
        return None;
    }
    let payload = part(i + header + 1);
    let at = i + header + 1 + payload;
    if payload < 2 || b.get(at) != Some(&b'.') {
        return None;
    }
    let len = header + 1 + payload + 1 + part(at + 1);
    Some(Hit {
        keep: 3,
        len,
        secret: len,
    })
}

/// Characters after `Bearer ` before a run counts as a token rather than a word of prose.
const MIN_BEARER_TOKEN: usize = 8;

/// `Bearer <token>` (any case), the scheme kept.
fn bearer(b: &[u8], i: usize) -> Option<Hit> {
    if !b.get(i..i + 6)?.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let spaces = run(b, i + 6, |c| c == b' ' || c == b'\t');
    let token = run(b, i + 6 + spaces, |c| {
        c.is_ascii_alphanumeric() || b"-._~+/=".contains(&c)
    });
    (spaces > 0 && token >= MIN_BEARER_TOKEN).then_some(Hit {
        keep: 6 + spaces,
        len: 6 + spaces + token,
        secret: token,
    })
}

/// `?name=value` or `&name=value` with a credential's name: the value goes, the name stays.
fn query_param(b: &[u8], i: usize) -> Option<Hit> {
    let name = run(b, i + 1, |c| {
        c.is_ascii_alphanumeric() || b"-_.".contains(&c)
    });
    if name == 0 || b.get(i + 1 + name) != Some(&b'=') || !is_secret_param(&b[i + 1..i + 1 + name])
    {
        return None;
    }
    let at = i + 1 + name + 1;
    let value = run(b, at, |c| {
        !(c.is_ascii_whitespace() || b"&#\"'\\<>;".contains(&c) || c.is_ascii_control())
    });
    // An already redacted value is left as it is.
    if value == 0 || b[at..].starts_with(b"[redacted") {
        return None;
    }
    let keep = 1 + name + 1;
    Some(Hit {
        keep,
        len: keep + value,
        secret: String::from_utf8_lossy(&b[at..at + value]).chars().count(),
    })
}

/// Whether a byte and the next may begin a secret: each matcher's first two bytes (`sk`, `AK`,
/// `ey`, `be`, `gh`, `xo`, …; a query separator and a name's first byte). Indexed by the pair read
/// as a little-endian `u16`, so the scan costs a load a byte and rejects most token letters
/// (`s`, `e` of every JSON key) without calling a matcher.
static MAY_START: [u8; 1 << 16] = {
    let mut t = [0; 1 << 16];
    let mut i = 0;
    while i < t.len() {
        t[i] = may_start(i as u8, (i >> 8) as u8) as u8;
        i += 1;
    }
    t
};

const fn may_start(c: u8, next: u8) -> bool {
    match c {
        b'?' | b'&' => next.is_ascii_alphanumeric() || matches!(next, b'-' | b'_' | b'.'),
        b's' => next == b'k',
        b'A' => matches!(next, b'K' | b'S'),
        b'e' => next == b'y',
        b'b' | b'B' => matches!(next, b'e' | b'E'),
        b'g' => matches!(next, b'h' | b'i'),
        b'x' => next == b'o',
        _ => false,
    }
}

fn pair_may_start(b: &[u8], i: usize) -> bool {
    MAY_START[usize::from(u16::from_le_bytes([b[i], b[i + 1]]))] != 0
}

/// A query separator starts a parameter anywhere; a token only at the start of a word.
fn starts_here(b: &[u8], i: usize) -> bool {
    matches!(b[i], b'?' | b'&') || i == 0 || !is_token_byte(b[i - 1])
}

/// The token starting a word at `i`, if one does (`task-…` holds no `sk-` key).
fn token_at(b: &[u8], i: usize) -> Option<Hit> {
    match b[i] {
        b's' => sk_key(b, i),
        b'A' => aws_key(b, i),
        b'e' => jwt(b, i),
        b'b' | b'B' => bearer(b, i),
        _ => PREFIXED.iter().find_map(|&(prefix, min, allowed)| {
            if !b[i..].starts_with(prefix) {
                return None;
            }
            let body = run(b, i + prefix.len(), allowed);
            (body >= min).then_some(Hit {
                keep: prefix.len(),
                len: prefix.len() + body,
                secret: prefix.len() + body,
            })
        }),
    }
}

/// Pairs tested at once by [`candidate`], the pairs of one 8-byte word: most blocks of JSON
/// text hold none.
const BLOCK: usize = 7;

/// The first position from `from` where a secret may start. The pairs of a block are read from
/// one word and tested with one branch, since a candidate is rare once its second byte is
/// checked too.
fn candidate(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(word) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        let any = (0..BLOCK).fold(0, |any, k| {
            any | MAY_START[usize::from((x >> (8 * k)) as u16)]
        });
        if any != 0
            && let Some(k) = (i..i + BLOCK).find(|&k| pair_may_start(b, k) && starts_here(b, k))
        {
            return Some(k);
        }
        i += BLOCK;
    }
    // The last byte begins nothing: every secret is longer than one byte.
    (i..b.len().saturating_sub(1)).find(|&k| pair_may_start(b, k) && starts_here(b, k))
}

/// The bytes with every secret redacted, or `None` when there is none.
fn redact_bytes(b: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(i) = candidate(b, from) {
        let hit = match b[i] {
            b'?' | b'&' => query_param(b, i),
            _ => token_at(b, i),
        };
        let Some(hit) = hit else {
            from = i + 1;
            continue;
        };
        let o = out.get_or_insert_with(|| Vec::with_capacity(b.len() + 32));
        o.extend_from_slice(&b[copied..i + hit.keep]);
        if !matches!(b[i], b'?' | b'&' | b'b' | b'B') {
            o.extend_from_slice("…".as_bytes());
        }
        o.extend_from_slice(marker(hit.secret).as_bytes());
        from = i + hit.len;
        copied = from;
    }
    let mut o = out?;
    o.extend_from_slice(&b[copied..]);
    Some(o)
}

/// Output buffered before it is redacted and passed on, unless a safe cut is found sooner.
const REDACT_CHUNK: usize = 64 << 10;

/// Output held at most while no byte that ends every secret comes (a base64 body, a long run of
/// escaped control bytes). Past it the text is cut between two runs of token bytes, which
/// splits no token of a known shape (they are made of such bytes) and no query value that
/// holds none; only a bearer token or query value with a `/`, `+`, `%` at the cut could be split.
const REDACT_HOLD: usize = 4 << 20;

/// Bytes that end every secret the rules find: a cut after one splits none.
fn ends_every_secret(b: u8) -> bool {
    matches!(b, b'\n' | b'"' | b'\\' | b'\'' | b'<' | b'>' | b';' | b'#')
}

/// Where output held this long without a byte that ends every secret is cut: after the last
/// byte outside a token, or all of it when it is one run of token bytes.
fn forced_cut(pending: &[u8]) -> usize {
    pending
        .iter()
        .rposition(|&b| !(is_token_byte(b) || b == b'.'))
        .map_or(pending.len(), |at| at + 1)
}

/// A writer that redacts everything written through it (see the module doc). Text is held
/// until a byte no secret can span (`\n`, `"`, `\`...), so a secret split across two writes is
/// still found; at most [`REDACT_HOLD`] bytes are held.
pub struct Redacting<W: Write> {
    inner: W,
    redactor: Redactor,
    pending: Vec<u8>,
    /// Where `pending` may be cut: just after its last byte that ends every secret.
    safe: Option<usize>,
}

impl<W: Write> Redacting<W> {
    pub fn new(inner: W, redactor: Redactor) -> Self {
        Redacting {
            inner,
            redactor,
            pending: Vec::new(),
            safe: None,
        }
    }

    /// Redacts and passes on `pending[..end]`.
    fn pass(&mut self, end: usize) -> io::Result<()> {
        let chunk = &self.pending[..end];
        match redact_bytes(chunk) {
            Some(clean) => self.inner.write_all(&clean)?,
            None => self.inner.write_all(chunk)?,
        }
        self.pending.drain(..end);
        self.safe = self
            .safe
            .and_then(|at| at.checked_sub(end))
            .filter(|&at| at > 0);
        Ok(())
    }
}

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.redactor.enabled {
            return self.inner.write(buf);
        }
        // Only the new bytes are searched: a write costs its own length, never the held text's.
        if let Some(at) = buf.iter().rposition(|&b| ends_every_secret(b)) {
            self.safe = Some(self.pending.len() + at + 1);
        }
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= REDACT_CHUNK {
            match self.safe {
                Some(cut) => self.pass(cut)?,
                None if self.pending.len() >= REDACT_HOLD => {
                    self.pass(forced_cut(&self.pending))?
                }
                None => {}
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.pass(self.pending.len())?;
        self.inner.flush()
    }
}

/// Bytes that neither begin nor continue a secret (spaces, brackets, commas): text held after
/// the last byte that ends every secret, when it is made of these, can be redacted apart from
/// what follows.
fn inert(b: &[u8]) -> bool {
    b.iter()
        .all(|&c| !(is_token_byte(c) || c == b'?' || c == b'&'))
}

/// An output that can be handed text already found free of secrets, to pass on without
/// scanning it again.
pub trait CleanWrite: Write {
    /// Writes `text`, which redaction leaves as it is ([`Redactor::leaves_alone`]).
    fn write_clean(&mut self, text: &[u8]) -> io::Result<()> {
        self.write_all(text)
    }
}

impl CleanWrite for Vec<u8> {}

impl<W: Write> CleanWrite for Redacting<W> {
    /// Passes `text` on unscanned up to its last byte that ends every secret, when the held text
    /// and the rest of `text` are inert: no secret then crosses either end, a token at its start
    /// is at a word start as it would be in the stream, and a text without secrets redacted
    /// alone or in the stream comes out the same. Otherwise it is written as any text is.
    ///
    /// The bytes held afterwards are those after the last byte that ends every secret, as if
    /// `text` had been written; only fewer bytes before it are held, so later cuts at such
    /// bytes come sooner, which changes nothing, and a forced cut (past [`REDACT_HOLD`]) could
    /// come one write later only after a single write of megabytes without one.
    fn write_clean(&mut self, text: &[u8]) -> io::Result<()> {
        let held = &self.pending[self.safe.unwrap_or(0)..];
        match text.iter().rposition(|&b| ends_every_secret(b)) {
            Some(at) if self.redactor.enabled && inert(held) && inert(&text[at + 1..]) => {
                self.pass(self.pending.len())?;
                self.inner.write_all(&text[..=at])?;
                self.write_all(&text[at + 1..])
            }
            _ => self.write_all(text),
        }
    }
}

impl<W: Write> Drop for Redacting<W> {
    fn drop(&mut self) {
        // Like `BufWriter`: what was written is passed on; an error here has no one to go to.
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(text: &str) -> String {
        Redactor::new(true).text(text).into_owned()
    }

    #[test]
    fn redacts_credential_headers_keeping_the_scheme() {
        let r = Redactor::new(true);
        assert_eq!(
            r.header("Authorization", "Bearer abc.def"),
            "Bearer [redacted, 7 chars]"
        );
        assert_eq!(r.header("cookie", "sid=1"), "[redacted, 5 chars]");
        assert_eq!(r.header("X-API-Key", "k"), "[redacted, 1 chars]");
        assert_eq!(r.header("X-Upstream-Token", "t"), "[redacted, 1 chars]");
        assert_eq!(
            r.header("X-Hub-Signature", "sha1=ab"),
            "[redacted, 7 chars]"
        );
        assert_eq!(r.header("Mcp-Session-Id", "abc"), "abc");
        assert_eq!(r.header("Idempotency-Key", "k-1"), "k-1");
        assert_eq!(
            Redactor::new(false).header("Authorization", "Bearer x"),
            "Bearer x"
        );
    }

    #[test]
    fn redacts_query_secrets_keeping_the_name_and_the_session_id() {
        assert_eq!(
            on("/sse?access_token=abc&session_id=42"),
            "/sse?access_token=[redacted, 3 chars]&session_id=42"
        );
        assert_eq!(
            on("/messages?session_id=9f1c&token=s3cr3t"),
            "/messages?session_id=9f1c&token=[redacted, 6 chars]"
        );
        assert_eq!(
            on("https://b.s3/x?X-Amz-Credential=AK%2F1&X-Amz-Signature=ff00&v=1"),
            "https://b.s3/x?X-Amz-Credential=[redacted, 6 chars]&X-Amz-Signature=[redacted, 4 chars]&v=1"
        );
        assert_eq!(on("/mcp"), "/mcp");
        assert_eq!(
            on("/cb?code=xyz&state=1"),
            "/cb?code=[redacted, 3 chars]&state=1"
        );
        // In JSON text the value ends at the string's quote.
        assert_eq!(
            on(r#"{"u":"/m?key=abc"}"#),
            r#"{"u":"/m?key=[redacted, 3 chars]"}"#
        );
    }

    #[test]
    fn redacts_tokens_by_their_shape_keeping_a_prefix() {
        assert_eq!(
            on("key sk-ant-api03-abcdefghijklmnop_qr end"),
            "key sk-ant-…[redacted, 32 chars] end"
        );
        assert_eq!(
            on("sk-proj-ABCDEFGHIJKLMNOPQRST"),
            "sk-proj-…[redacted, 28 chars]"
        );
        assert_eq!(
            on("sk-ABCDEFGHIJKLMNOPQRST1234"),
            "sk-…[redacted, 27 chars]"
        );
        assert_eq!(
            on("\"ghp_0123456789abcdefghijABCDEFGHIJ\""),
            "\"ghp_…[redacted, 34 chars]\""
        );
        assert_eq!(
            on("github_pat_11ABCDEFG0123456789_abcdefghij"),
            "github_pat_…[redacted, 41 chars]"
        );
        assert_eq!(on("xoxb-1234-5678-abcdef"), "xoxb-…[redacted, 21 chars]");
        assert_eq!(
            on("id AKIAIOSFODNN7EXAMPLE."),
            "id AKIA…[redacted, 20 chars]."
        );
        assert_eq!(
            on("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln-_x"),
            "eyJ…[redacted, 44 chars]"
        );
        assert_eq!(
            on("header was authorization: Bearer sk-123_x, next"),
            "header was authorization: Bearer [redacted, 8 chars], next"
        );
    }

    #[test]
    fn leaves_ordinary_words_alone_and_is_idempotent() {
        for plain in [
            "task-list-of-many-many-items",
            "sk-learn",
            "AKIA is four letters",
            "eyJ short.x.y",
            "a bearer of news",
            "ghp_short",
            "/messages?session_id=abc&page=2",
        ] {
            assert_eq!(on(plain), plain);
        }
        let once = on("Bearer abc sk-ant-api03-abcdefghijklmnop /x?token=t eyJabcdefghijk.ab.cd");
        assert_eq!(on(&once), once);
    }

    #[test]
    fn the_writer_holds_a_run_without_a_safe_byte_only_so_long() {
        let mut out = Redacting::new(Vec::new(), Redactor::new(true));
        let blob = "QUJD+/".repeat(REDACT_HOLD / 6 + 1);
        out.write_all(blob.as_bytes()).unwrap();
        assert!(out.pending.len() < 8, "held {}", out.pending.len());
        out.flush().unwrap();
        assert_eq!(out.inner, blob.as_bytes());
    }

    #[test]
    fn the_writer_finds_secrets_split_across_writes() {
        let mut out = Redacting::new(Vec::new(), Redactor::new(true));
        // Past the chunk size, so the first write is passed on up to its last quote.
        let filler = "a".repeat(REDACT_CHUNK);
        out.write_all(format!("{filler}\"sk-ant-api03-abcdef").as_bytes())
            .unwrap();
        assert_eq!(out.inner.len(), filler.len() + 1);
        out.write_all(b"ghijklmnop\",\"u\":\"/sse?tok").unwrap();
        out.write_all(b"en=xyz\"}\n").unwrap();
        out.flush().unwrap();
        let text = String::from_utf8(std::mem::take(&mut out.inner)).unwrap();
        assert_eq!(
            text.strip_prefix(&filler).unwrap(),
            "\"sk-ant-…[redacted, 29 chars]\",\"u\":\"/sse?token=[redacted, 3 chars]\"}\n"
        );
        let mut shown = Redacting::new(Vec::new(), Redactor::new(false));
        shown.write_all(b"sk-ant-api03-abcdefghijklmnop").unwrap();
        shown.flush().unwrap();
        assert_eq!(shown.inner, b"sk-ant-api03-abcdefghijklmnop");
    }

    /// The scan before [`MAY_START`]: every token letter at a word start, every query separator,
    /// each tried with the matchers. The fast scan must find the same secrets.
    fn reference(b: &[u8]) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        let (mut copied, mut from, mut in_word) = (0, 0, false);
        while let Some(k) = b.get(from..).and_then(|rest| {
            rest.iter().enumerate().position(|(k, &c)| {
                let word = is_token_byte(c);
                let prev = if k == 0 {
                    in_word
                } else {
                    is_token_byte(rest[k - 1])
                };
                let token = b"sAebBgx".contains(&c);
                matches!(c, b'?' | b'&') || (token && word && !prev)
            })
        }) {
            let i = from + k;
            let hit = match b[i] {
                b'?' | b'&' => query_param(b, i),
                _ => token_at(b, i),
            };
            let Some(hit) = hit else {
                in_word = is_token_byte(b[i]);
                from = i + 1;
                continue;
            };
            let o = out.get_or_insert_with(Vec::new);
            o.extend_from_slice(&b[copied..i + hit.keep]);
            if !matches!(b[i], b'?' | b'&' | b'b' | b'B') {
                o.extend_from_slice("…".as_bytes());
            }
            o.extend_from_slice(marker(hit.secret).as_bytes());
            from = i + hit.len;
            copied = from;
            in_word = is_token_byte(b[from - 1]);
        }
        let mut o = out?;
        o.extend_from_slice(&b[copied..]);
        Some(o)
    }

    #[test]
    fn the_pair_scan_finds_what_trying_every_word_start_finds() {
        let pieces: &[&[u8]] = &[
            b"sk-",
            b"sk-ant-",
            b"ABCDEFGHIJKLMNOP",
            b"abcdefgh12345678",
            b"AKIA",
            b"ASIA",
            b"eyJ",
            b"eyJhbGciOiJIUzI1NiJ9",
            b".",
            b"Bearer ",
            b"bEaReR\t",
            b"bearer",
            b"ghp_",
            b"github_pat_",
            b"gho_",
            b"xoxb-",
            b"xox",
            b"?",
            b"&",
            b"token=",
            b"key=",
            b"session_id=",
            b"[redacted, 3 chars]",
            b"\"",
            b"\n",
            b" ",
            b"\t",
            b"-",
            b"_",
            b"s",
            b"e",
            b"A",
            b"b",
            b"g",
            b"x",
            b"k",
            b"y",
            b"=",
            b"/",
            b"\\",
            b"\xc3\xa9",
            b"task",
            b"x1",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut redacted = 0;
        for _ in 0..20_000 {
            let n = next() % 24;
            let text: Vec<u8> = (0..n)
                .flat_map(|_| {
                    pieces[(next() % pieces.len() as u64) as usize]
                        .iter()
                        .copied()
                })
                .collect();
            assert_eq!(
                redact_bytes(&text),
                reference(&text),
                "{}",
                String::from_utf8_lossy(&text)
            );
            redacted += usize::from(reference(&text).is_some());
        }
        // The pieces make secrets often enough for the comparison to test the matchers too.
        assert!(redacted > 2_000, "{redacted}");
    }

    /// Writes `parts` through a redacting writer, the odd ones with `write_clean`.
    fn through(parts: &[&str], clean: bool) -> String {
        let mut out = Redacting::new(Vec::new(), Redactor::new(true));
        for (k, part) in parts.iter().enumerate() {
            if clean && k % 2 == 1 {
                out.write_clean(part.as_bytes()).unwrap();
            } else {
                out.write_all(part.as_bytes()).unwrap();
            }
        }
        out.flush().unwrap();
        String::from_utf8(std::mem::take(&mut out.inner)).unwrap()
    }

    #[test]
    fn clean_text_passed_on_unscanned_leaves_the_stream_as_it_was() {
        let record = "{\n      \"target\": \"/mcp?page=2\",\n      \"x\": \"bench\"\n    }";
        assert!(Redactor::new(true).leaves_alone(record.as_bytes()));
        for parts in [
            // As the document lays records out: held spaces, a record, a separator.
            &[
                "{\"a\": \"Bearer abcdefghijk\",\n    ",
                record,
                ",\n    ",
                record,
                "\n  ]\n",
            ][..],
            // Held text that is not inert: written as any text, the token still found.
            &["\"Bearer", " abcdefghijkl\"\n", "x"],
            &["?token", "=abc\"\n", "\n"],
            // Clean text whose tail is not inert, or without a byte that ends a secret.
            &["\n", "\"x\"\nsk", "-ant-api03-abcdefghijklmnop\n"],
            &["\n ", "plain words", " sk-ant-api03-abcdefghijklmnop\n"],
        ] {
            assert_eq!(through(parts, true), through(parts, false), "{parts:?}");
        }
        let passed = through(&["\n    ", record, ",\n"], true);
        assert_eq!(passed, format!("\n    {record},\n"));
    }
}
