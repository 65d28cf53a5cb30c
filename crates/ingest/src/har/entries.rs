//! One HAR entry (`log.entries[i]`) read into an [`Entry`]: its request, its response when the
//! status is not 0, its times, the server it went to and the connection it names. An entry that
//! cannot be read is skipped with an [`EntryError`] that says why.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use serde_json::{Map, Value};

use mcpf_http::{Body, Headers};
use mcpf_model::Timestamp;

use super::bodies::{Content, no_body_status, request_body, response_content};
use super::headers::{headers, http_version, media_type};
use super::timings::{Times, times};
use super::url::{host_ip, parse_ip, port, split_url};
use super::{as_i64, byte_size};

/// Why an entry cannot be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum EntryError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("no {0}")]
    Missing(&'static str),
    #[error("request without a {0}")]
    RequestWithout(&'static str),
    #[error("startedDateTime {0:?} is not an ISO 8601 date-time")]
    Started(String),
    #[error("status {0} out of range")]
    Status(i64),
}

pub(super) struct Resp {
    pub(super) status: u16,
    pub(super) reason: String,
    pub(super) version: u8,
    pub(super) headers: Headers,
    pub(super) content: Content,
    /// `content.text` was present but empty.
    pub(super) empty_text: bool,
    pub(super) decode_error: Option<String>,
    /// A string of the response (its text, an event of `_eventSourceMessages`) was cut.
    pub(super) text_cut: bool,
    /// Bytes on the wire (`bodySize`), when given.
    pub(super) wire_size: Option<u64>,
    /// Decoded size (`content.size`), when given.
    pub(super) size: Option<u64>,
    pub(super) event_stream: bool,
    /// The body recorded is all its `Content-Length` declares (or a status that has none): the
    /// response was whole, whatever failure the entry records after it (Chromium reports a
    /// body the page cancelled, even an empty one, as `net::ERR_ABORTED`).
    pub(super) whole: bool,
}

pub(super) struct Entry {
    pub(super) number: u64,
    pub(super) req_first: Timestamp,
    pub(super) req_last: Timestamp,
    pub(super) head: Timestamp,
    pub(super) end: Timestamp,
    /// The entry does not record when its response ended (see [`Times::end_unknown`]).
    pub(super) end_unknown: bool,
    pub(super) method: String,
    pub(super) target: String,
    pub(super) version: u8,
    pub(super) req_headers: Headers,
    pub(super) req_body: Body,
    pub(super) server: SocketAddr,
    pub(super) server_known: bool,
    pub(super) connection: Option<String>,
    pub(super) response: Option<Resp>,
    /// The entry records no response: no `response` object, or status 0 (a browser exports a
    /// request still in flight so). Without an `_error` saying it failed, how it ended is
    /// unknown.
    pub(super) response_missing: bool,
    pub(super) error: Option<String>,
    pub(super) messages: Option<Vec<Value>>,
}

impl Entry {
    /// Marks what strings cut at [`super::cut::MAX_STRING`] shortened: the request's or the
    /// response's text, or the response's `_eventSourceMessages`. What they carried is not all
    /// known, so nothing is concluded from what they seem to lack.
    pub(super) fn mark_cut(&mut self, cuts: &[super::cut::Cut]) {
        let why = format!(
            "the HAR text was cut at {} MiB",
            super::cut::MAX_STRING >> 20
        );
        for c in cuts {
            let path: Vec<&str> = c.path.iter().map(String::as_str).collect();
            match path.get(3..) {
                Some(["request", "postData", "text"]) => {
                    self.req_body.truncated = true;
                    self.req_body.not_decoded = true;
                    self.req_body.decode_error = Some(why.clone());
                }
                Some(["response", ..]) => {
                    if let Some(r) = self.response.as_mut() {
                        r.text_cut = true;
                        r.decode_error.get_or_insert_with(|| why.clone());
                    }
                }
                _ => {}
            }
        }
    }
}

/// One entry, or why it cannot be read.
pub(super) fn entry(number: u64, v: &Value, http2: &mut u64) -> Result<Entry, EntryError> {
    let obj = v.as_object().ok_or(EntryError::NotAnObject)?;
    let started = started(obj)?;
    let req = obj
        .get("request")
        .and_then(Value::as_object)
        .ok_or(EntryError::Missing("request object"))?;
    let method = req
        .get("method")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .ok_or(EntryError::RequestWithout("method"))?
        .to_string();
    let url = req
        .get("url")
        .and_then(Value::as_str)
        .ok_or(EntryError::RequestWithout("url"))?;
    let (scheme, authority, target) = split_url(url);
    let Times {
        req_first,
        req_last,
        head,
        end,
        end_unknown,
    } = times(obj, started);

    let req_version = req.get("httpVersion").and_then(Value::as_str).unwrap_or("");
    let (version, is_h2) = http_version(req_version);
    if is_h2 {
        *http2 += 1;
    }
    let req_headers = headers(req.get("headers"));
    let req_body = request_body(req, &method, &req_headers);

    let server_ip = server_ip(obj, authority);
    let server = SocketAddr::new(
        server_ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        port(scheme, authority),
    );

    let resp = obj.get("response").and_then(Value::as_object);
    // Chrome's DevTools export writes `_error`, Playwright's recorder `_failureText`.
    let error = ["_error", "_failureText"]
        .iter()
        .find_map(|k| obj.get(*k).or_else(|| resp.and_then(|r| r.get(*k))))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let response = match resp {
        Some(r) => response(r, req_version)?,
        None => None,
    };
    let messages = obj
        .get("_eventSourceMessages")
        .or_else(|| resp.and_then(|r| r.get("_eventSourceMessages")))
        .and_then(Value::as_array)
        .cloned();

    Ok(Entry {
        number,
        req_first,
        req_last,
        head,
        end,
        end_unknown,
        method,
        target,
        version,
        req_headers,
        req_body,
        server,
        server_known: server_ip.is_some(),
        connection: connection(obj),
        response_missing: response.is_none(),
        response,
        error,
        messages,
    })
}

fn started(obj: &Map<String, Value>) -> Result<Timestamp, EntryError> {
    let started = obj
        .get("startedDateTime")
        .and_then(Value::as_str)
        .ok_or(EntryError::Missing("startedDateTime"))?;
    Timestamp::parse_rfc3339(started).ok_or_else(|| EntryError::Started(started.to_string()))
}

/// `serverIPAddress`, else the IP address the URL names.
fn server_ip(obj: &Map<String, Value>, authority: &str) -> Option<IpAddr> {
    obj.get("serverIPAddress")
        .and_then(Value::as_str)
        .and_then(parse_ip)
        .or_else(|| host_ip(authority))
}

/// The `connection` the entry names, if any: a non-empty string or a number.
fn connection(obj: &Map<String, Value>) -> Option<String> {
    obj.get("connection").and_then(|c| match c {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// The `response` object, or None when its status is 0 (no response was received).
fn response(r: &Map<String, Value>, req_version: &str) -> Result<Option<Resp>, EntryError> {
    let status = r.get("status").and_then(as_i64).unwrap_or(0);
    if status <= 0 {
        return Ok(None);
    }
    let status = u16::try_from(status).map_err(|_| EntryError::Status(status))?;
    let headers = headers(r.get("headers"));
    let content = r.get("content").and_then(Value::as_object);
    let mime = content
        .and_then(|c| c.get("mimeType"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let event_stream = media_type(&headers, mime) == "text/event-stream";
    let size = byte_size(content.and_then(|c| c.get("size")));
    let wire_size = byte_size(r.get("bodySize"));
    let declared = headers
        .get("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (content, decode_error, empty_text) =
        response_content(content, status, event_stream, size, wire_size, declared);
    let whole = match &content {
        Content::Known(b) if b.is_empty() && no_body_status(status) => true,
        Content::Known(b) => !headers.has("content-encoding") && declared == Some(b.len() as u64),
        Content::Unknown => false,
    };
    let (version, _) = http_version(
        r.get("httpVersion")
            .and_then(Value::as_str)
            .unwrap_or(req_version),
    );
    Ok(Some(Resp {
        status,
        reason: r
            .get("statusText")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        version,
        headers,
        content,
        empty_text,
        decode_error,
        text_cut: false,
        wire_size,
        size,
        event_stream,
        whole,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Entry {
        let mut http2 = 0;
        entry(1, &v, &mut http2).unwrap_or_else(|e| panic!("{e}"))
    }

    fn with_response(response: Value) -> Value {
        json!({"startedDateTime": "2026-12-01T18:35:26.391Z", "time": 5.0,
               "request": {"method": "POST", "url": "http://127.0.0.1:8080/mcp", "headers": []},
               "response": response, "timings": {"send": 0, "wait": 5, "receive": -1}})
    }

    #[test]
    fn playwright_failure_text_is_the_error() {
        let e = read(with_response(
            json!({"status": -1, "headers": [], "_failureText": "net::ERR_ABORTED"}),
        ));
        assert!(e.response.is_none());
        assert_eq!(e.error.as_deref(), Some("net::ERR_ABORTED"));
    }

    #[test]
    fn a_body_as_long_as_its_content_length_is_whole_whatever_failed_after() {
        let empty = read(with_response(
            json!({"status": 202, "_failureText": "net::ERR_ABORTED",
            "headers": [{"name": "Content-Length", "value": "0"}], "content": {"size": -1, "mimeType": "application/json"}}),
        ));
        let r = empty.response.unwrap();
        assert!(r.whole && matches!(&r.content, Content::Known(b) if b.is_empty()));
        let cut = read(with_response(
            json!({"status": 200, "_failureText": "net::ERR_ABORTED",
            "headers": [{"name": "Content-Length", "value": "10"}], "content": {"text": "{\"a\":", "mimeType": "application/json"}}),
        ));
        assert!(!cut.response.unwrap().whole, "5 of 10 bytes");
        let stream = read(with_response(
            json!({"status": 200, "_failureText": "net::ERR_ABORTED",
            "headers": [{"name": "Content-Type", "value": "text/event-stream"}], "content": {"size": -1}}),
        ));
        let r = stream.response.unwrap();
        assert!(!r.whole && matches!(r.content, Content::Unknown));
        assert!(stream.end_unknown);
    }
}
