//! Bodies as a HAR keeps them: a request's `postData.text` and a response's `content.text`,
//! base64 when `encoding` says so. A body the exporter did not keep is unknown, not empty,
//! unless the entry shows there was none.

use base64::Engine;
use serde_json::{Map, Value};

use mcpf_http::{Body, Headers};

use super::as_i64;

/// A response body as the file has it.
pub(super) enum Content {
    Known(Vec<u8>),
    Unknown,
}

/// The request's `postData.text`; absent means unknown unless the request evidently had none.
pub(super) fn request_body(req: &Map<String, Value>, method: &str, headers: &Headers) -> Body {
    let post = req.get("postData").and_then(Value::as_object);
    let body_size = req.get("bodySize").and_then(as_i64);
    match post.and_then(|p| p.get("text")).and_then(Value::as_str) {
        Some(text) => {
            let (data, decode_error) = decode_text(text, is_base64(post));
            Body {
                wire_bytes: body_size
                    .filter(|n| *n >= 0)
                    .map(|n| n as u64)
                    .unwrap_or(data.len() as u64),
                decoded_bytes: data.len() as u64,
                content_encoding: headers.get("content-encoding").map(str::to_string),
                chunked: headers.has_token("transfer-encoding", "chunked"),
                decode_error,
                data,
                ..Body::default()
            }
        }
        None => {
            let bodiless = matches!(method, "GET" | "HEAD" | "OPTIONS" | "TRACE")
                && body_size.is_none_or(|n| n <= 0);
            Body {
                wire_bytes: body_size.filter(|n| *n > 0).map(|n| n as u64).unwrap_or(0),
                unknown: !(body_size == Some(0) || bodiless),
                ..Body::default()
            }
        }
    }
}

/// The response's `content`: the body, why its text could not be decoded, and whether the
/// text was there but empty. `size` is `content.size`, `wire_size` the response's `bodySize`.
pub(super) fn response_content(
    content: Option<&Map<String, Value>>,
    status: u16,
    event_stream: bool,
    size: Option<u64>,
    wire_size: Option<u64>,
    declared: Option<u64>,
) -> (Content, Option<String>, bool) {
    match content.and_then(|c| c.get("text")).and_then(Value::as_str) {
        Some(t) => {
            let (data, err) = decode_text(t, is_base64(content));
            if err.is_some() {
                (Content::Unknown, err, false)
            } else {
                (Content::Known(data), None, t.is_empty())
            }
        }
        // No text: an empty body when the sizes say so (not for event streams, which
        // exporters leave empty when they did not keep them).
        None if !event_stream
            && size.unwrap_or(0) == 0
            && wire_size.unwrap_or(0) == 0
            && (size.is_some() || wire_size.is_some()) =>
        {
            (Content::Known(Vec::new()), None, false)
        }
        // The head says there is no body: `Content-Length: 0`, or a status that has none.
        None if no_body_status(status) || (!event_stream && declared == Some(0)) => {
            (Content::Known(Vec::new()), None, false)
        }
        None => (Content::Unknown, None, false),
    }
}

/// A status whose response has no body (RFC 9110 §6.4.1).
pub(super) fn no_body_status(status: u16) -> bool {
    matches!(status, 204 | 304) || (100..200).contains(&status)
}

/// Whether `postData` or `content` says its text is base64.
fn is_base64(obj: Option<&Map<String, Value>>) -> bool {
    obj.and_then(|o| o.get("encoding"))
        .and_then(Value::as_str)
        .is_some_and(|e| e.eq_ignore_ascii_case("base64"))
}

fn decode_text(text: &str, base64: bool) -> (Vec<u8>, Option<String>) {
    if !base64 {
        return (text.as_bytes().to_vec(), None);
    }
    let cleaned: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
        Ok(b) => (b, None),
        Err(e) => (
            Vec::new(),
            Some(format!("content.text is not valid base64: {e}")),
        ),
    }
}
