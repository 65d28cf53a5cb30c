//! Credential redaction for reports that get pasted into incident channels.
//!
//! On by default in every format of every command (`--show-secrets` turns it off). Two layers,
//! one rule set:
//!
//! - [`Redactor::text`] is the one function that finds secrets in free text. By where they are
//!   ([`places`]): the value of every name that announces a credential, by one rule for names
//!   ([`name::secret_name`]) wherever the name is: a query, fragment or path parameter
//!   (`?access_key=…`, `#access_token=…`, `;jsessionid=…`, in request targets, legacy
//!   `endpoint` events, SSE data, JSON-RPC text), `NAME=value` in text, a JSON member's string
//!   value (`"password": "…"`, also in a body quoted inside a JSON string), and the password of
//!   a URL's userinfo (`//user:…@`). By their shape ([`shapes`]): `sk-…`, `sk_live_…`, `ghp_…`,
//!   `github_pat_…`, `glpat-…`, `xoxb-…`, `AIza…`, `AKIA…` and the secret access key next to
//!   it, JWTs (their header JSON with or without spaces), `Bearer <token>`.
//!   [`Redactor::header`] adds what only the header name tells (an `Authorization`, `Cookie2`
//!   or `X-Session-Cookie` value of any shape), by the same rule for names. Reporters call these
//!   before laying out a cell, so a truncated cell cannot show half a token.
//! - [`Redacting`] wraps every command's standard output and applies [`Redactor::text`] to all
//!   that passes, so an output path that forgets to call the redactor still cannot print a
//!   secret. It is idempotent over the first layer: a redacted secret is not found again.
//!   Text already found free of secrets (a session record, scanned on the renderer's thread)
//!   goes through [`CleanWrite::write_clean`], which passes it on without scanning it again
//!   wherever that gives the same bytes.
//!
//! A redaction keeps the evidence readable: the token's recognisable prefix (`sk-ant-`, `ghp_`,
//! `eyJ`, `Bearer `, the parameter's name) and the secret's length stay, e.g.
//! `sk-ant-…[redacted, 108 chars]`. Identifiers are evidence, not credentials, and are kept:
//! the `session_id` of a legacy SSE endpoint, `Mcp-Session-Id`, `Last-Event-ID`, request and
//! event IDs, `progressToken` (see [`name`]).

use std::borrow::Cow;
use std::io::{self, Write};

mod name;
mod places;
mod shapes;

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

    /// Whether it redacts anything (off with `--show-secrets`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A header value as it may be shown: all of it when the name announces a credential
    /// ([`name::secret_name`], the rule of every place), but a known authentication scheme
    /// (`Bearer`, `Basic`), which tells the analyst what kind of credential was there.
    pub fn header(&self, name: &str, value: &str) -> String {
        if !self.enabled {
            return value.to_string();
        }
        if !name::secret_name(name.as_bytes()) {
            return self.text(value).into_owned();
        }
        let scheme = places::scheme_len(value.as_bytes());
        format!(
            "{}{}",
            &value[..scheme],
            marker(value[scheme..].chars().count())
        )
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
        match redact_bytes(text.as_bytes(), true).0 {
            // Only ASCII runs were replaced, by UTF-8 text: still UTF-8.
            Some(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
            None => Cow::Borrowed(text),
        }
    }

    /// Bytes (a saved report read back) with every secret they hold redacted.
    pub(crate) fn bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        match self.enabled {
            true => redact_bytes(bytes, true)
                .0
                .map_or(Cow::Borrowed(bytes), Cow::Owned),
            false => Cow::Borrowed(bytes),
        }
    }

    /// Whether redaction leaves `text` as it is (always, when it is off).
    pub(crate) fn leaves_alone(&self, text: &[u8]) -> bool {
        !self.enabled || redact_bytes(text, true).0.is_none()
    }

    /// A table cell: redacted first, then sanitised and shortened to `max` characters, so the
    /// cut never leaves part of a secret behind.
    pub(crate) fn cell(&self, text: &str, max: usize) -> String {
        crate::sanitize::terminal_truncated(&self.text(text), max)
    }
}

/// Characters of a token: base64url.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Length of the run of bytes from `at` that satisfy `f`.
fn run(bytes: &[u8], at: usize, f: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(at..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| f(b)).count())
}

/// A match: `keep` bytes from the matcher's position shown, then `len - keep` bytes replaced.
struct Hit {
    keep: usize,
    len: usize,
    /// The length stated: the secret's, which is `len` minus what is only context (`Bearer `,
    /// `token=`).
    secret: usize,
    /// Whether an ellipsis joins the kept prefix to the marker: a token's own prefix
    /// (`sk-ant-…[redacted…`) does, a name or a scheme (`token=[redacted…`) does not.
    ellipsis: bool,
    /// How far before the matcher's position the kept prefix starts (a userinfo's colon, found
    /// from its `@`).
    back: usize,
}

impl Hit {
    /// A token of a known shape, `keep` bytes of it shown.
    fn shape(keep: usize, len: usize) -> Hit {
        Hit {
            keep,
            len,
            secret: len,
            ellipsis: true,
            back: 0,
        }
    }

    /// A secret after `keep` bytes of context (a name, a scheme): `secret` characters.
    fn named(keep: usize, len: usize, secret: usize) -> Hit {
        Hit {
            keep,
            len,
            secret,
            ellipsis: false,
            back: 0,
        }
    }
}

/// What a matcher found at a position.
enum Found {
    Hit(Hit),
    Miss,
    /// A credential's name whose value is not over when the text ends: in a stream, the text
    /// from this position waits for what follows.
    Partial(usize),
}

impl From<Option<Hit>> for Found {
    fn from(hit: Option<Hit>) -> Found {
        hit.map_or(Found::Miss, Found::Hit)
    }
}

/// Whether a byte and the next may begin a secret: a name joined to its value (`=`, `:` not
/// starting `://`) and each shape's first two bytes (`sk`, `AK`, `ey`, `be`, `gh`, …).
/// Indexed by the pair read as a little-endian `u16`, so the scan costs a load a byte and
/// rejects most letters (`s`, `e` of every JSON key) without calling a matcher.
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
        b'=' => places::may_start_value(next),
        // A JSON member's value: a quote, perhaps escaped, perhaps after spaces.
        b':' => matches!(next, b'"' | b'\\' | b' ' | b'\t' | b'\r' | b'\n'),
        b'@' => next.is_ascii_alphanumeric() || next == b'[',
        _ => shapes::may_start(c, next),
    }
}

fn pair_may_start(b: &[u8], i: usize) -> bool {
    MAY_START[usize::from(u16::from_le_bytes([b[i], b[i + 1]]))] != 0
}

/// A name's `=` or `:` and a userinfo's `@` are tried anywhere; a token only at the start of a
/// word.
fn starts_here(b: &[u8], i: usize) -> bool {
    matches!(b[i], b'=' | b':' | b'@') || i == 0 || !is_token_byte(b[i - 1])
}

/// What the matchers find at `i`; names are not read back before `lo`, where the text not yet
/// copied to the output begins.
fn found_at(b: &[u8], i: usize, lo: usize, complete: bool) -> Found {
    match b[i] {
        b'=' => places::assignment(b, i, lo).into(),
        b':' => places::member(b, i, lo, complete),
        b'@' => places::userinfo(b, i, lo).into(),
        _ => shapes::token_at(b, i).into(),
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

/// The output being built: the text copied up to `copied`, secrets replaced.
struct Out<'a> {
    b: &'a [u8],
    out: Option<Vec<u8>>,
    copied: usize,
}

impl Out<'_> {
    /// Replaces the secret of `hit`, matched at `at`; returns where the scan goes on.
    fn replace(&mut self, at: usize, hit: &Hit) -> usize {
        let at = at - hit.back;
        let b = self.b;
        let o = self
            .out
            .get_or_insert_with(|| Vec::with_capacity(b.len() + 32));
        o.extend_from_slice(&b[self.copied..at + hit.keep]);
        if hit.ellipsis {
            o.extend_from_slice("…".as_bytes());
        }
        o.extend_from_slice(marker(hit.secret).as_bytes());
        self.copied = at + hit.len;
        self.copied
    }

    /// The redacted text up to `end` (`None` when nothing was replaced) and `end`.
    fn finish(self, end: usize) -> (Option<Vec<u8>>, usize) {
        let out = self.out.map(|mut o| {
            o.extend_from_slice(&self.b[self.copied..end]);
            o
        });
        (out, end)
    }
}

/// The text with every secret redacted (`None` when there is none) and how much of it that
/// covers: all of it when the text is `complete`, else up to a credential's name whose value
/// may go on past the end (see [`Found::Partial`]).
fn redact_bytes(b: &[u8], complete: bool) -> (Option<Vec<u8>>, usize) {
    redact_with(b, complete, candidate)
}

/// [`redact_bytes`] with the scan for candidates given (the tests compare [`candidate`] with
/// trying every position).
fn redact_with(
    b: &[u8],
    complete: bool,
    candidate: fn(&[u8], usize) -> Option<usize>,
) -> (Option<Vec<u8>>, usize) {
    let mut out = Out {
        b,
        out: None,
        copied: 0,
    };
    let mut from = 0;
    // The secret access key written soon after an AWS access key ID, once one is found.
    let mut aws_secret: Option<(usize, Hit)> = None;
    loop {
        let next = candidate(b, from);
        if let Some((j, hit)) = aws_secret.take_if(|(j, _)| next.is_none_or(|i| i >= *j)) {
            if j >= out.copied {
                from = out.replace(j, &hit);
            }
            continue;
        }
        let Some(i) = next else { break };
        match found_at(b, i, out.copied, complete) {
            Found::Hit(hit) => {
                from = out.replace(i, &hit);
                if b[i] == b'A' && shapes::aws_key(b, i).is_some() {
                    aws_secret = shapes::aws_secret_near(b, from);
                }
            }
            Found::Miss => from = i + 1,
            Found::Partial(start) => return out.finish(start),
        }
    }
    out.finish(b.len())
}

/// Output buffered before it is redacted and passed on, unless a safe cut is found sooner.
const REDACT_CHUNK: usize = 64 << 10;

/// Output held at most while no byte that ends every secret comes (a base64 body, a long run of
/// escaped control bytes), or while a JSON member named like a credential waits for the end of
/// its value. Past it the text is cut between two runs of token bytes, which splits no token
/// of a known shape (they are made of such bytes) and no query value that holds none; only a
/// bearer token or query value with a `/`, `+`, `%` at the cut, or a credential member's value
/// longer than this, could be split.
const REDACT_HOLD: usize = 4 << 20;

/// Bytes that end every secret the rules find but a JSON member's string value, which a
/// quote may open as well as close: a cut after one splits no other secret, and the member a
/// cut would split is held back ([`places::member_tail`], [`Found::Partial`]).
fn ends_every_secret(b: u8) -> bool {
    matches!(b, b'\n' | b'"' | b'\\' | b'\'' | b'<' | b'>')
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
    /// How long `pending` grows before a cut is tried again: a chunk more than what the last
    /// one held back, so a member waiting for its value is not scanned again at every write.
    retry_at: usize,
}

impl<W: Write> Redacting<W> {
    pub fn new(inner: W, redactor: Redactor) -> Self {
        Redacting {
            inner,
            redactor,
            pending: Vec::new(),
            safe: None,
            retry_at: REDACT_CHUNK,
        }
    }

    /// Redacts and passes on `pending[..end]`, but, unless nothing follows it (`complete`), a
    /// JSON member named like a credential that it ends in: that waits for its value.
    fn pass(&mut self, end: usize, complete: bool) -> io::Result<()> {
        let end = match complete {
            true => end,
            false => places::member_tail(&self.pending[..end]).unwrap_or(end),
        };
        let (clean, end) = redact_bytes(&self.pending[..end], complete);
        match clean {
            Some(clean) => self.inner.write_all(&clean)?,
            None => self.inner.write_all(&self.pending[..end])?,
        }
        self.pending.drain(..end);
        self.safe = self
            .safe
            .and_then(|at| at.checked_sub(end))
            .filter(|&at| at > 0);
        self.retry_at = self.pending.len() + REDACT_CHUNK;
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
        if self.pending.len() >= self.retry_at {
            match self.safe {
                _ if self.pending.len() >= REDACT_HOLD => {
                    self.pass(forced_cut(&self.pending), true)?
                }
                Some(cut) => self.pass(cut, false)?,
                None => {}
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.pass(self.pending.len(), true)?;
        self.inner.flush()
    }
}

/// Bytes that neither begin nor continue a secret (spaces, brackets, commas): text held after
/// the last byte that ends every secret, when it is made of these, can be redacted apart from
/// what follows.
fn inert(b: &[u8]) -> bool {
    b.iter()
        .all(|&c| !(is_token_byte(c) || c == b'=' || c == b':'))
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
    /// and the rest of `text` are inert and neither the held text nor that part of `text` ends
    /// in a JSON member's name: no secret then crosses either end, a token at its start
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
            Some(at)
                if self.redactor.enabled
                    && inert(held)
                    && inert(&text[at + 1..])
                    && places::member_tail(&self.pending).is_none()
                    && places::member_tail(&text[..=at]).is_none() =>
            {
                self.pass(self.pending.len(), true)?;
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
            on(r#"{"u":"/m?api_key=abc"}"#),
            r#"{"u":"/m?api_key=[redacted, 3 chars]"}"#
        );
        // A bare `key` is a map key or the report's session label (see `name`).
        assert_eq!(on(r#"{"key": "S1"}"#), r#"{"key": "S1"}"#);
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

    #[test]
    fn a_stream_cut_anywhere_redacts_what_the_whole_text_does() {
        // Past the chunk size, so each second write is cut at its last byte that ends every
        // secret other than a member's value.
        let filler = "a".repeat(REDACT_CHUNK);
        let text = concat!(
            r#"{"text":"{\"password\": \"hunter2\",\"n\":1}","#,
            r#""api_key":"k-123","u":"http://al:pw@h/#access_token=t1;jsessionid=j1","#,
            "\"aws\":\"AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"}\n"
        );
        let whole = on(&format!("{filler}{text}"));
        for (k, _) in text.char_indices() {
            let mut out = Redacting::new(Vec::new(), Redactor::new(true));
            out.write_all(format!("{filler}{}", &text[..k]).as_bytes())
                .unwrap();
            out.write_all(&text.as_bytes()[k..]).unwrap();
            out.flush().unwrap();
            let got = String::from_utf8(std::mem::take(&mut out.inner)).unwrap();
            let got = got.strip_prefix(&filler).unwrap();
            assert_eq!(got, &whole[filler.len()..], "cut at {k}");
        }
        for secret in ["hunter2", "k-123", "pw@", "t1", "j1", "wJalrXUtnFEMI"] {
            assert!(!whole.contains(secret), "{secret} in {whole}");
        }
    }

    /// The scan before [`MAY_START`]: every `=` and `:`, every token letter at a word start,
    /// each tried with the matchers. The fast scan must find the same secrets.
    fn every_start(b: &[u8], from: usize) -> Option<usize> {
        (from..b.len()).find(|&i| match b[i] {
            b'=' | b':' | b'@' => true,
            c => b"sAebBgxr".contains(&c) && (i == 0 || !is_token_byte(b[i - 1])),
        })
    }

    fn reference(b: &[u8]) -> Option<Vec<u8>> {
        redact_with(b, true, every_start).0
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
            b":",
            b"://",
            b"@",
            b"password",
            b"api_key",
            b"\":\"",
            b"\\\"",
            b"#",
            b";jsessionid",
            b"sk_live_",
            b"AIza",
            b"glpat-",
            b"rk_test_",
            b"eyAiYWxnIjogIkhTMjU2In0",
            b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            b"AKIAIOSFODNN7EXAMPLE",
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
                redact_bytes(&text, true).0,
                reference(&text),
                "{}",
                String::from_utf8_lossy(&text)
            );
            redacted += usize::from(reference(&text).is_some());
        }
        // The pieces make secrets often enough for the comparison to test the matchers too.
        assert!(redacted > 4_000, "{redacted}");
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
