//! The one rule saying whether a name announces a credential, wherever the name is: a header
//! (`X-Upstream-Token`), a query, fragment or path parameter (`?access_key=`, `#access_token=`,
//! `;jsessionid=`), a form field or `NAME=value` in text, a JSON member (`"password": …`).
//!
//! A name is split into words at separators (`-`, `_`, `.`, …) and at camelCase humps
//! (`subscriptionKey` → `subscription`, `Key`), compared without case. It is a credential's name
//! when
//!
//! - a word holds `token`, `secret`, `passw` (password, passwd), `passphrase`, `credential`,
//!   `signature`, `cookie`, `jwt`, `apikey`, `verifier` (PKCE's `code_verifier`), or a servlet
//!   or PHP session cookie's name (`jsessionid`, `phpsessid`);
//! - a word holds `auth` (`Authorization`, `auth-key`, `oauth`), but not as `author` or
//!   `authority` (HTTP/2's `:authority`);
//! - a word is `pass`, `pwd` or `sig` (`db_pass`, Azure's `?sig=`);
//! - a word ends with `key` after another word, or is a compound ending with it (`access_key`,
//!   `client_key`, `X-Api-Key`, `accesskey`);
//! - the whole name is `code` (an OAuth authorization code; JSON-RPC's error `code` is a number,
//!   and only string values are taken from JSON members), or `key` (`?key=`, the API key of
//!   Google's and many other APIs) but as a JSON member's name (below).
//!
//! Never a credential's name, whatever it holds:
//!
//! - a name whose last word is `id` or `ids`: an identifier is evidence, not a credential
//!   (`Mcp-Session-Id`, the legacy endpoint's `session_id` and `sessionId`, `Last-Event-ID`,
//!   `key_id`);
//! - a JSON member named just `key` ([`secret_member_name`]): the report's own session labels
//!   are `"key": "S1"`, and a bare key in tool arguments is a map or cache key (a credential
//!   there is still found by its shape: `AIza…`, `sk-…`);
//! - `Idempotency-Key` (evidence of a retried call), MCP's `progressToken` (it joins progress
//!   notifications to their request), counts of tokens (`max_tokens`, `totalTokens`), and
//!   challenges (`WWW-Authenticate`, which says how to authenticate).

/// Word parts that make a word a credential's name wherever they are in it.
const ANYWHERE: &[&[u8]] = &[
    b"secret",
    b"passw",
    b"passphrase",
    b"credential",
    b"signature",
    b"cookie",
    b"jwt",
    b"apikey",
    b"verifier",
    b"jsession",
    b"sessid",
];

/// Short words that name a credential only as a whole word: inside a longer one they are
/// something else (`bypass`, `signal`).
const WHOLE: &[&[u8]] = &[b"pass", b"pwd", b"sig"];

/// Whether `name` announces a credential (see the module doc).
pub(crate) fn secret_name(name: &[u8]) -> bool {
    if !has_letters_of_a_credential(name) {
        return false;
    }
    remembered(name, decide)
}

/// Whether a JSON member's `name` announces a credential: the rule of [`secret_name`], but a
/// member named just `key` (see the module doc).
pub(crate) fn secret_member_name(name: &[u8]) -> bool {
    !name.eq_ignore_ascii_case(b"key") && secret_name(name)
}

fn decide(name: &[u8]) -> bool {
    if never_secret(name) {
        return false;
    }
    if name.eq_ignore_ascii_case(b"code") || name.eq_ignore_ascii_case(b"key") {
        return true;
    }
    Words::new(name)
        .enumerate()
        .any(|(n, w)| secret_word(w, n > 0))
}

/// Names remembered per thread, direct-mapped by a hash of their bytes: a report names the
/// same few dozen members thousands of times, and the rule costs hundreds of instructions a
/// name. Only the name's exact bytes answer from the table.
const REMEMBERED: usize = 256;
const REMEMBERED_LEN: usize = 32;

#[derive(Clone, Copy)]
struct Remembered {
    len: u8,
    bytes: [u8; REMEMBERED_LEN],
    secret: bool,
}

thread_local! {
    static NAMES: std::cell::RefCell<[Remembered; REMEMBERED]> = const {
        std::cell::RefCell::new(
            [Remembered { len: 0, bytes: [0; REMEMBERED_LEN], secret: false }; REMEMBERED],
        )
    };
}

fn remembered(name: &[u8], decide: fn(&[u8]) -> bool) -> bool {
    if name.is_empty() || name.len() > REMEMBERED_LEN {
        return decide(name);
    }
    let slot = name
        .iter()
        .fold(name.len() as u32, |h, &c| h.rotate_left(5) ^ u32::from(c))
        .wrapping_mul(0x9e37_79b1) as usize
        >> 24;
    NAMES.with(|t| {
        let mut t = t.borrow_mut();
        let r = &mut t[slot % REMEMBERED];
        if usize::from(r.len) == name.len() && &r.bytes[..name.len()] == name {
            return r.secret;
        }
        let secret = decide(name);
        r.len = name.len() as u8;
        r.bytes[..name.len()].copy_from_slice(name);
        r.secret = secret;
        secret
    })
}

/// The letters of `word`, one bit each, without case.
const fn letters(word: &[u8]) -> u32 {
    let mut mask = 0;
    let mut i = 0;
    while i < word.len() {
        mask |= letter(word[i]);
        i += 1;
    }
    mask
}

const fn letter(c: u8) -> u32 {
    match c.to_ascii_lowercase() {
        c @ b'a'..=b'z' => 1 << (c - b'a'),
        _ => 0,
    }
}

/// The letters each part of the rule needs: a name lacking all of one part's letters for every
/// part is no credential's. The JSON member rule asks this of every string member of every
/// report, most of which (`time`, `stream`, `method`, `session_id`) fail it at once.
const NEEDS: &[u32] = &[
    letters(b"token"),
    letters(b"secret"),
    letters(b"passw"),
    letters(b"credential"),
    letters(b"signature"),
    letters(b"cookie"),
    letters(b"jwt"),
    letters(b"verifier"),
    letters(b"jsession"),
    letters(b"sessid"),
    letters(b"pass"),
    letters(b"pwd"),
    letters(b"sig"),
    letters(b"auth"),
    letters(b"key"),
    letters(b"code"),
];

/// [`letter`] of every byte, looked up: this is asked of every name of every report.
static LETTERS: [u32; 256] = {
    let mut t = [0; 256];
    let mut c = 0;
    while c < t.len() {
        t[c] = letter(c as u8);
        c += 1;
    }
    t
};

fn has_letters_of_a_credential(name: &[u8]) -> bool {
    let have = name.iter().fold(0, |m, &c| m | LETTERS[usize::from(c)]);
    NEEDS.iter().any(|need| need & !have == 0)
}

/// The names the module doc lists as never a credential's.
fn never_secret(name: &[u8]) -> bool {
    let last = Words::new(name).last().unwrap_or_default();
    last.eq_ignore_ascii_case(b"id")
        || last.eq_ignore_ascii_case(b"ids")
        || squashed_eq(name, b"idempotencykey")
        || squashed_eq(name, b"progresstoken")
        || ends_with_ci(name, b"authenticate")
}

/// Whether one word of a name announces a credential; `qualified` when a word came before it.
/// Digits that end a word are a version, not part of it (`Cookie2`, `api_key2`).
fn secret_word(w: &[u8], qualified: bool) -> bool {
    let w = &w[..w.len() - w.iter().rev().take_while(|c| c.is_ascii_digit()).count()];
    (contains_ci(w, b"token") && !ends_with_ci(w, b"tokens"))
        || ANYWHERE.iter().any(|part| contains_ci(w, part))
        || WHOLE.iter().any(|whole| w.eq_ignore_ascii_case(whole))
        || auth_word(w)
        || (ends_with_ci(w, b"key") && (qualified || w.len() > 3))
}

/// `auth` anywhere in a word (`authkey`, `authorization`, `oauth`, `upstreamauth`), but not as
/// `author`, `authors`, `authority`.
fn auth_word(w: &[u8]) -> bool {
    (0..w.len().saturating_sub(3)).any(|at| {
        let rest = &w[at..];
        let authorises = starts_with_ci(rest, b"authoriz") || starts_with_ci(rest, b"authoris");
        starts_with_ci(rest, b"auth") && (authorises || !starts_with_ci(rest, b"author"))
    })
}

fn starts_with_ci(w: &[u8], part: &[u8]) -> bool {
    w.get(..part.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(part))
}

fn ends_with_ci(w: &[u8], part: &[u8]) -> bool {
    w.len() >= part.len() && w[w.len() - part.len()..].eq_ignore_ascii_case(part)
}

fn contains_ci(w: &[u8], part: &[u8]) -> bool {
    w.windows(part.len()).any(|x| x.eq_ignore_ascii_case(part))
}

/// `name` equals `squashed` once its separators are left out and case is ignored
/// (`Idempotency-Key`, `idempotency_key` and `idempotencyKey` are one name).
fn squashed_eq(name: &[u8], squashed: &[u8]) -> bool {
    let mut letters = name.iter().filter(|c| c.is_ascii_alphanumeric());
    squashed
        .iter()
        .all(|s| letters.next().is_some_and(|c| c.eq_ignore_ascii_case(s)))
        && letters.next().is_none()
}

/// The words of a name: runs of letters and digits, split where a lower-case letter or a digit
/// is followed by an upper-case one.
struct Words<'a> {
    rest: &'a [u8],
}

impl<'a> Words<'a> {
    fn new(name: &'a [u8]) -> Self {
        Words { rest: name }
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(u8::is_ascii_alphanumeric)?;
        let rest = &self.rest[start..];
        let len = (1..rest.len())
            .find(|&k| {
                !rest[k].is_ascii_alphanumeric()
                    || (rest[k].is_ascii_uppercase() && !rest[k - 1].is_ascii_uppercase())
            })
            .unwrap_or(rest.len());
        self.rest = &rest[len..];
        Some(&rest[..len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_letters_table_is_the_letters() {
        for c in 0..=u8::MAX {
            assert_eq!(LETTERS[usize::from(c)], letter(c), "{c}");
        }
    }

    #[test]
    fn words_split_at_separators_and_humps() {
        let words = |n: &str| -> Vec<String> {
            Words::new(n.as_bytes())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        };
        assert_eq!(
            words("Ocp-Apim-Subscription-Key"),
            ["Ocp", "Apim", "Subscription", "Key"]
        );
        assert_eq!(words("accessKeyId"), ["access", "Key", "Id"]);
        assert_eq!(words("X_API.key"), ["X", "API", "key"]);
        assert_eq!(words(":authority"), ["authority"]);
        assert_eq!(words("sha256Key"), ["sha256", "Key"]);
        assert!(words("--").is_empty());
    }

    #[test]
    fn credential_names_in_every_place() {
        for name in [
            // Headers.
            "Authorization",
            "Proxy-Authorization",
            "Cookie",
            "Set-Cookie",
            "Cookie2",
            "Set-Cookie2",
            "X-Session-Cookie",
            "X-Api-Key",
            "X-Upstream-Token",
            "X-Hub-Signature",
            "X-Amz-Security-Token",
            "Ocp-Apim-Subscription-Key",
            // Query, fragment and path parameters.
            "access_token",
            "token",
            "access_key",
            "authorization",
            "auth-key",
            "auth",
            "passphrase",
            "subscription-key",
            "client_key",
            "client_secret",
            "X-Amz-Credential",
            "X-Amz-Signature",
            "api_key2",
            "pass2",
            "sig",
            "code",
            "key",
            "Key",
            "code_verifier",
            "jsessionid",
            "PHPSESSID",
            "pwd",
            // JSON members.
            "password",
            "api_key",
            "apiKey",
            "accessKey",
            "aws_secret_access_key",
            "SecretAccessKey",
            "SessionToken",
            "db_pass",
            "oauth",
            "upstreamauthorization",
            "id_token",
            "refresh_token",
        ] {
            assert!(secret_name(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn a_member_named_key_is_not_a_credentials_name() {
        assert!(!secret_member_name(b"key") && !secret_member_name(b"KEY"));
        assert!(secret_member_name(b"api_key") && secret_member_name(b"password"));
        assert!(secret_name(b"key"));
    }

    #[test]
    fn evidence_names_are_not_credentials() {
        for name in [
            "Mcp-Session-Id",
            "session_id",
            "sessionId",
            "sessionid",
            "Last-Event-ID",
            "Idempotency-Key",
            "idempotency_key",
            "progressToken",
            "progress_token",
            "max_tokens",
            "maxTokens",
            "WWW-Authenticate",
            "Proxy-Authenticate",
            ":authority",
            "author",
            "key_id",
            "aws_access_key_id",
            "jsonrpc",
            "method",
            "name",
            "arguments",
            "protocolVersion",
            "Mcp-Protocol-Version",
            "Keep-Alive",
            "Content-Type",
            "bypass",
            "signal",
            "error_code",
            "",
        ] {
            assert!(!secret_name(name.as_bytes()), "{name}");
        }
    }
}
