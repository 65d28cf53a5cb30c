//! Reading event IDs: which ones are plain counters, which name the stream that minted them.
//!
//! The 2025-11-25 spec asks that IDs "encode sufficient information to identify the originating
//! stream"; servers do it in a few shapes, recognised here: `sse:42` / `post:41` (a transport
//! or stream token and a counter), the official TypeScript SDK's example store
//! `<stream-uuid>_<ms>_<random>` and `_GET_stream_<ms>_<random>`, and rmcp's
//! `<counter>/<http-request-id>`.

use super::model::EventIdScheme;

/// The decimal value of an all-digit ID.
pub fn integer(id: &str) -> Option<u64> {
    if id.is_empty() || id.len() > 19 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

/// An ID random by construction, which two independent minters never both mint: a uuid, or the
/// official TypeScript SDK example store's `<stream-uuid>_<ms>_<random>` / `_GET_stream_<ms>_<random>`.
pub fn random(id: &str) -> bool {
    is_uuid(id)
        || id.strip_prefix("_GET_stream_").is_some_and(ts_suffix)
        || (id.len() > 37
            && id.as_bytes()[36] == b'_'
            && is_uuid(&id[..36])
            && ts_suffix(&id[37..]))
}

/// The stream token an ID carries, when it carries one.
pub fn stream_token(id: &str) -> Option<&str> {
    // TypeScript SDK example store: `<uuid>_<13-digit ms>_<base36>`; the standalone stream uses
    // the literal `_GET_stream` as its stream ID.
    if let Some(rest) = id.strip_prefix("_GET_stream_")
        && ts_suffix(rest)
    {
        return Some("_GET_stream");
    }
    if id.len() > 37 && id.as_bytes()[36] == b'_' && is_uuid(&id[..36]) && ts_suffix(&id[37..]) {
        return Some(&id[..36]);
    }
    // `token:counter` or `token/counter`, the token starting with a letter or underscore.
    if let Some(pos) = id.rfind([':', '/']) {
        let (token, counter) = (&id[..pos], &id[pos + 1..]);
        if integer(counter).is_some()
            && token
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
        {
            return Some(token);
        }
        // rmcp: `<counter>/<http request id>`: the second number names the stream.
        if id.as_bytes()[pos] == b'/' && integer(token).is_some() && integer(counter).is_some() {
            return Some(counter);
        }
    }
    None
}

/// The counter part of a namespaced ID (`sse:42` → 42), or the value of an integer ID.
pub fn counter(id: &str) -> Option<u64> {
    if let Some(n) = integer(id) {
        return Some(n);
    }
    let pos = id.rfind([':', '/'])?;
    let (head, tail) = (&id[..pos], &id[pos + 1..]);
    if id.as_bytes()[pos] == b'/' && integer(head).is_some() {
        return integer(head);
    }
    integer(tail)
}

fn ts_suffix(s: &str) -> bool {
    let Some((ms, rand)) = s.split_once('_') else {
        return false;
    };
    ms.len() >= 10
        && ms.bytes().all(|b| b.is_ascii_digit())
        && !rand.is_empty()
        && rand.len() <= 16
        && rand.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Classifies the IDs a session used (empty IDs, which reset the cursor, are ignored).
pub(crate) fn classify<'a>(ids: impl Iterator<Item = &'a str>) -> EventIdScheme {
    let mut any = false;
    let mut all_integer = true;
    let mut all_namespaced = true;
    for id in ids.filter(|i| !i.is_empty()) {
        any = true;
        if integer(id).is_none() {
            all_integer = false;
        }
        if stream_token(id).is_none() {
            all_namespaced = false;
        }
    }
    match (any, all_integer, all_namespaced) {
        (false, _, _) => EventIdScheme::None,
        (true, true, _) => EventIdScheme::Integer,
        (true, false, true) => EventIdScheme::Namespaced,
        _ => EventIdScheme::Opaque,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_stream_tokens() {
        assert_eq!(stream_token("sse:42"), Some("sse"));
        assert_eq!(stream_token("post:41"), Some("post"));
        assert_eq!(
            stream_token("0f8fad5b-d9cb-469f-a165-70867728950e_1764500000123_k3j9x2ab"),
            Some("0f8fad5b-d9cb-469f-a165-70867728950e")
        );
        assert_eq!(
            stream_token("_GET_stream_1764500000123_abc"),
            Some("_GET_stream")
        );
        assert_eq!(stream_token("3/17"), Some("17"));
        assert_eq!(stream_token("41"), None);
        assert_eq!(stream_token("7c9e6679-7425-40de-944b-e07fc1f90ae7"), None);
    }

    #[test]
    fn reads_counters() {
        assert_eq!(counter("41"), Some(41));
        assert_eq!(counter("sse:42"), Some(42));
        assert_eq!(counter("3/17"), Some(3));
        assert_eq!(counter("abc"), None);
        assert_eq!(integer("007"), Some(7));
        assert_eq!(integer("-1"), None);
    }

    #[test]
    fn classifies_schemes() {
        assert_eq!(
            classify(["1", "2", "41"].into_iter()),
            EventIdScheme::Integer
        );
        assert_eq!(
            classify(["post:1", "sse:41"].into_iter()),
            EventIdScheme::Namespaced
        );
        assert_eq!(
            classify(["7c9e6679-7425-40de-944b-e07fc1f90ae7"].into_iter()),
            EventIdScheme::Opaque
        );
        assert_eq!(classify(["", ""].into_iter()), EventIdScheme::None);
        assert_eq!(classify(std::iter::empty()), EventIdScheme::None);
    }
}
