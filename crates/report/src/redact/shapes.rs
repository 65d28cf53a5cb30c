//! Tokens recognised by their shape wherever they are, whatever names them: vendor keys with a
//! known prefix, AWS access key IDs (and the secret access key written next to one), JWTs and
//! `Bearer <token>`.

use super::{Hit, is_token_byte, run};

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
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
    // GitLab personal access tokens.
    (b"glpat-", 20, is_token_byte),
    (b"xoxb-", 10, is_token_byte),
    (b"xoxp-", 10, is_token_byte),
    (b"xoxa-", 10, is_token_byte),
    (b"xoxr-", 10, is_token_byte),
    (b"xoxs-", 10, is_token_byte),
    // Stripe secret and restricted keys (the publishable `pk_` ones are public).
    (b"sk_live_", 16, is_alnum),
    (b"sk_test_", 16, is_alnum),
    (b"rk_live_", 16, is_alnum),
    (b"rk_test_", 16, is_alnum),
    // Google API keys: `AIza` and 35 more.
    (b"AIza", 30, is_token_byte),
];

/// Whether a byte and the next may begin a token of a known shape (the first two bytes of
/// every matcher below).
pub(super) const fn may_start(c: u8, next: u8) -> bool {
    match c {
        b's' | b'r' => next == b'k',
        b'A' => matches!(next, b'K' | b'S' | b'I'),
        b'e' => matches!(next, b'y' | b'w'),
        b'b' | b'B' => matches!(next, b'e' | b'E'),
        b'g' => matches!(next, b'h' | b'i' | b'l'),
        b'x' => next == b'o',
        _ => false,
    }
}

/// The token of a known shape starting a word at `i`, if one does (`task-…` holds no `sk-`).
pub(super) fn token_at(b: &[u8], i: usize) -> Option<Hit> {
    let specific = match b[i] {
        b's' => sk_key(b, i),
        b'A' => aws_key(b, i),
        b'e' => jwt(b, i),
        b'b' | b'B' => bearer(b, i),
        _ => None,
    };
    specific.or_else(|| prefixed(b, i))
}

fn prefixed(b: &[u8], i: usize) -> Option<Hit> {
    PREFIXED.iter().find_map(|&(prefix, min, allowed)| {
        if !b[i..].starts_with(prefix) {
            return None;
        }
        let body = run(b, i + prefix.len(), allowed);
        (body >= min).then(|| Hit::shape(prefix.len(), prefix.len() + body))
    })
}

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
    Some(Hit::shape(keep, 3 + body))
}

/// AWS access key IDs: `AKIA` or `ASIA` and 16 upper-case letters or digits.
pub(super) fn aws_key(b: &[u8], i: usize) -> Option<Hit> {
    if !(b[i..].starts_with(b"AKIA") || b[i..].starts_with(b"ASIA")) {
        return None;
    }
    let body = run(b, i + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
    (body == 16 && !b.get(i + 20).is_some_and(|&c| is_token_byte(c))).then(|| Hit::shape(4, 20))
}

/// How far after an access key ID its secret access key is looked for: a JSON member or a
/// config line apart (`"aws_access_key_id":"AKIA…","aws_secret_access_key":"…"`).
const AWS_SECRET_NEAR: usize = 96;

/// Characters of an AWS secret access key (base64).
fn is_aws_secret_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'/' || c == b'+'
}

/// The secret access key written soon after an access key ID ending at `from`: a word of
/// exactly 40 base64 characters mixing upper case, lower case and digits (a SHA-1 in hex is
/// 40 characters too, but never mixes cases). Its start and the hit.
pub(super) fn aws_secret_near(b: &[u8], from: usize) -> Option<(usize, Hit)> {
    let end = b.len().min(from + AWS_SECRET_NEAR);
    (from..end).find_map(|j| {
        let starts = j == 0 || !(is_aws_secret_byte(b[j - 1]) || b[j - 1] == b'=');
        if !starts || run(b, j, is_aws_secret_byte) != 40 {
            return None;
        }
        let word = &b[j..j + 40];
        let mixed = word.iter().any(u8::is_ascii_uppercase)
            && word.iter().any(u8::is_ascii_lowercase)
            && word.iter().any(u8::is_ascii_digit);
        let ends = !b
            .get(j + 40)
            .is_some_and(|&c| is_token_byte(c) || c == b'=');
        (mixed && ends).then(|| (j, Hit::named(0, 40, 40)))
    })
}

/// The value of a base64url character.
fn b64url(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// Whether 8 base64url characters decode to the start of a JSON object: `{`, optional
/// whitespace, then `"` (a JWT header; `{"alg"` encodes as `eyJ`, `{ "alg"` as `eyA`,
/// `{\n  "alg"` as `ewo`).
fn json_object_start(chars: &[u8]) -> bool {
    let mut bits = 0u64;
    for &c in chars.iter().take(8) {
        let Some(v) = b64url(c) else { return false };
        bits = bits << 6 | u64::from(v);
    }
    let bytes = bits.to_be_bytes();
    let decoded = &bytes[2..8];
    decoded[0] == b'{'
        && decoded[1..]
            .iter()
            .find(|&&c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
            .is_none_or(|&c| c == b'"')
}

/// JWTs: three base64url parts, the first a JSON object; the signature may be empty.
fn jwt(b: &[u8], i: usize) -> Option<Hit> {
    let part = |at: usize| {
        run(b, at, |c| {
            c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
        })
    };
    let header = part(i);
    if header < 10 || b.get(i + header) != Some(&b'.') || !json_object_start(&b[i..i + 8]) {
        return None;
    }
    let payload = part(i + header + 1);
    let at = i + header + 1 + payload;
    if payload < 2 || b.get(at) != Some(&b'.') {
        return None;
    }
    Some(Hit::shape(3, header + 1 + payload + 1 + part(at + 1)))
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
    (spaces > 0 && token >= MIN_BEARER_TOKEN)
        .then(|| Hit::named(6 + spaces, 6 + spaces + token, token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64url_encode(bytes: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn a_jwt_header_may_hold_whitespace() {
        for header in [
            r#"{"alg":"HS256"}"#,
            r#"{ "alg": "HS256", "typ": "JWT" }"#,
            "{\n  \"alg\": \"RS256\"\n}",
            "{\r\n\t\"alg\": \"none\"}",
        ] {
            let token = format!(
                "{}.{}.",
                b64url_encode(header.as_bytes()),
                b64url_encode(b"{}")
            );
            let hit = jwt(token.as_bytes(), 0).unwrap_or_else(|| panic!("{header:?}"));
            assert_eq!(hit.len, token.len());
        }
        for plain in ["eyeballs-everywhere.ab.cd", "ewww-that-is-long.ab.cd"] {
            assert!(jwt(plain.as_bytes(), 0).is_none(), "{plain}");
        }
    }

    #[test]
    fn vendor_prefixes() {
        for (token, keep) in [
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", 8),
            ("rk_test_51H8abcdefghijklmnop", 8),
            ("glpat-xYz123ABCdef456GHIjk", 6),
            ("AIzaSyD-1234567890abcdefghijklmnopqrstu", 4),
        ] {
            let hit = token_at(token.as_bytes(), 0).unwrap_or_else(|| panic!("{token}"));
            assert_eq!((hit.keep, hit.len), (keep, token.len()), "{token}");
        }
        for plain in ["sk_live_short", "AIza", "glpat-x", "rk_live_"] {
            assert!(token_at(plain.as_bytes(), 0).is_none(), "{plain}");
        }
    }

    #[test]
    fn an_aws_secret_is_found_next_to_its_key_id() {
        let text =
            br#"{"id":"AKIAIOSFODNN7EXAMPLE","secret":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}"#;
        let (at, hit) = aws_secret_near(text, 28).unwrap();
        assert_eq!(
            &text[at..at + hit.len],
            b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        );
        // A SHA-1 in hex is 40 characters but never mixes cases.
        let sha = b"AKIAIOSFODNN7EXAMPLE da39a3ee5e6b4b0d3255bfef95601890afd80709";
        assert!(aws_secret_near(sha, 20).is_none());
    }
}
