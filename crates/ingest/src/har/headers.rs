//! HAR `headers` arrays and `httpVersion` strings. HAR files of HTTP/2 and HTTP/3 traffic are
//! read with HTTP/1.1 semantics, so their pseudo-headers are dropped.

use serde_json::Value;

use mcpf_http::Headers;

/// Header fields a sanitized export removes.
pub(super) const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "cookie", "set-cookie"];

/// HAR `headers` (`[{name, value}]`) in order; HTTP/2 pseudo-headers are dropped.
pub(super) fn headers(v: Option<&Value>) -> Headers {
    let mut out = Vec::new();
    for h in v.and_then(Value::as_array).into_iter().flatten() {
        let (Some(name), Some(value)) = (
            h.get("name").and_then(Value::as_str),
            h.get("value").and_then(Value::as_str),
        ) else {
            continue;
        };
        if name.starts_with(':') {
            continue;
        }
        out.push((name.to_string(), value.to_string()));
    }
    Headers(out)
}

/// `HTTP/1.0` → 0; anything else → 1, and whether it was HTTP/2 or /3.
pub(super) fn http_version(v: &str) -> (u8, bool) {
    let v = v.trim().to_ascii_uppercase();
    if v == "HTTP/1.0" {
        (0, false)
    } else {
        (
            1,
            v.starts_with("HTTP/2") || v.starts_with("HTTP/3") || v == "H2" || v == "H3",
        )
    }
}

/// The response's media type: by its Content-Type, else by `content.mimeType`.
pub(super) fn media_type(headers: &Headers, mime: &str) -> String {
    headers.media_type().unwrap_or_else(|| {
        mime.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    })
}
