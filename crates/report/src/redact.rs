//! Credential redaction for reports that get pasted into incident channels.
//!
//! On by default in every format (`--show-secrets` turns it off): values of credential-bearing
//! headers, credential-looking query parameters, and bearer tokens anywhere in free text.

/// Replacement text for a removed secret.
const REDACTED: &str = "[redacted]";

/// Headers whose value is a credential.
fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization"
            | "proxy-authorization"
            | "cookie"
            | "set-cookie"
            | "x-api-key"
            | "api-key"
            | "apikey"
    ) || n.contains("token")
        || n.contains("secret")
        || n.contains("password")
        || n.contains("api-key")
        || n.contains("apikey")
        || n.ends_with("-auth")
        || n.starts_with("x-auth")
}

/// Query parameters whose value is a credential.
fn is_secret_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "key"
            | "code"
            | "auth"
            | "sig"
            | "signature"
            | "password"
            | "pass"
            | "pwd"
            | "jwt"
            | "session_token"
    ) || n.contains("token")
        || n.contains("secret")
        || n.contains("api_key")
        || n.contains("apikey")
        || n.contains("api-key")
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
        if is_secret_header(name) {
            let lower = name.to_ascii_lowercase();
            if lower.ends_with("authorization")
                && let Some((scheme, _)) = value.split_once(' ')
                && !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
            {
                return format!("{scheme} {REDACTED}");
            }
            return REDACTED.to_string();
        }
        self.text(value).into_owned()
    }

    /// A request target with credential query parameters removed.
    pub(crate) fn target(&self, target: &str) -> String {
        if !self.enabled {
            return target.to_string();
        }
        let Some((path, query)) = target.split_once('?') else {
            return target.to_string();
        };
        let params: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_param(k) => format!("{k}={REDACTED}"),
                _ => pair.to_string(),
            })
            .collect();
        format!("{path}?{}", params.join("&"))
    }

    /// Free text (bodies, summaries): bearer tokens are removed wherever they appear.
    pub(crate) fn text<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if !self.enabled
            || !text
                .as_bytes()
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"bearer "))
        {
            return std::borrow::Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(pos) = find_ci(rest, "bearer ") {
            let (before, after) = rest.split_at(pos + 7);
            out.push_str(before);
            let token_len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || "-._~+/=".contains(c)))
                .unwrap_or(after.len());
            if token_len > 0 {
                out.push_str(REDACTED);
            }
            rest = &after[token_len..];
        }
        out.push_str(rest);
        std::borrow::Cow::Owned(out)
    }
}

fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_credential_headers_keeping_the_scheme() {
        let r = Redactor::new(true);
        assert_eq!(
            r.header("Authorization", "Bearer abc.def"),
            "Bearer [redacted]"
        );
        assert_eq!(r.header("cookie", "sid=1"), "[redacted]");
        assert_eq!(r.header("X-API-Key", "k"), "[redacted]");
        assert_eq!(r.header("X-Upstream-Token", "t"), "[redacted]");
        assert_eq!(r.header("Mcp-Session-Id", "abc"), "abc");
        assert_eq!(
            Redactor::new(false).header("Authorization", "Bearer x"),
            "Bearer x"
        );
    }

    #[test]
    fn redacts_query_tokens_and_bearer_text() {
        let r = Redactor::new(true);
        assert_eq!(
            r.target("/sse?access_token=abc&session_id=42"),
            "/sse?access_token=[redacted]&session_id=42"
        );
        assert_eq!(r.target("/mcp"), "/mcp");
        assert_eq!(
            r.text("header was authorization: Bearer sk-123_x, next"),
            "header was authorization: Bearer [redacted], next"
        );
    }
}
