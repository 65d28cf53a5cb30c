//! Header fields in access logs. nginx and Envoy log a header as a key of its own (nginx
//! `http_*` and `sent_http_*` variables, Envoy `%REQ(X)%` / `%RESP(X)%` under keys such as
//! `req_mcp_session_id`); Caddy and mapped logs keep objects of name → value or values. What a
//! log names is all that is known of its headers, so the names are noted for the capabilities.

use serde_json::{Map, Value};

use mcpf_http::Headers;
use mcpf_model::LogFlavor;

use super::Facts;
use super::fields::str_of;

/// Headers named by keys (nginx `http_*`, `sent_http_*`; Envoy `req_*`, `resp_*`, ...); their
/// names are noted in `facts` whether or not the line has a value for them.
pub(super) fn keyed_headers(
    obj: &Map<String, Value>,
    flavor: LogFlavor,
    facts: &mut Facts,
) -> (Headers, Headers) {
    let mut out = Logged::default();
    for (k, v) in obj {
        if let Some((side, name)) = header_of_key(k, flavor) {
            out.add(facts, side, name, v);
        }
    }
    out.finish()
}

/// Headers logged under keys of their own, request and response.
#[derive(Default)]
pub(super) struct Logged {
    req: Vec<(String, String)>,
    resp: Vec<(String, String)>,
}

impl Logged {
    /// The values of header `name` on `side`; the name is noted as logged even when the line
    /// has no value for it.
    pub(super) fn add(&mut self, facts: &mut Facts, side: Side, name: String, v: &Value) {
        let (names, headers) = match side {
            Side::Request => (&mut facts.req_header_names, &mut self.req),
            Side::Response => (&mut facts.resp_header_names, &mut self.resp),
        };
        for value in header_values(v) {
            headers.push((name.clone(), value));
        }
        names.insert(name);
    }

    pub(super) fn finish(self) -> (Headers, Headers) {
        (Headers(self.req), Headers(self.resp))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Request,
    Response,
}

/// Header names whose bare (or `x-` prefixed) key is read as a request header.
pub(super) const KNOWN_HEADERS: &[&str] = &[
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "accept",
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "user-agent",
    "authorization",
    "cookie",
    "set-cookie",
    "host",
    "origin",
    "cache-control",
    "connection",
    "x-accel-buffering",
    "x-forwarded-for",
    "x-request-id",
];

fn known_header(name: &str) -> Option<String> {
    if KNOWN_HEADERS.contains(&name) {
        return Some(name.to_string());
    }
    // `x-mcp-session-id` and the like: a key named after the MCP header.
    let bare = name.strip_prefix("x-")?;
    (bare.starts_with("mcp-") || bare == "last-event-id")
        .then(|| KNOWN_HEADERS.contains(&bare).then(|| bare.to_string()))
        .flatten()
}

/// Which header a log key names, if any.
pub(super) fn header_of_key(key: &str, flavor: LogFlavor) -> Option<(Side, String)> {
    let k = key.to_ascii_lowercase().replace('_', "-");
    if flavor == LogFlavor::Nginx {
        if let Some(h) = k.strip_prefix("sent-http-") {
            return Some((Side::Response, h.to_string()));
        }
        // upstream_http_* is what the upstream sent nginx, not what the client got.
        if k.starts_with("upstream-http-") {
            return None;
        }
        if let Some(h) = k.strip_prefix("http-") {
            return Some((Side::Request, h.to_string()));
        }
        return match k.as_str() {
            "content-type" | "content-length" => Some((Side::Request, k)),
            _ => None,
        };
    }
    for (prefix, side) in [
        ("req-header-", Side::Request),
        ("request-header-", Side::Request),
        ("resp-header-", Side::Response),
        ("response-header-", Side::Response),
        ("req-", Side::Request),
        ("resp-", Side::Response),
    ] {
        if let Some(h) = k.strip_prefix(prefix) {
            return Some((side, h.to_string()));
        }
    }
    for (prefix, side) in [("request-", Side::Request), ("response-", Side::Response)] {
        if let Some(h) = k.strip_prefix(prefix).and_then(known_header) {
            return Some((side, h));
        }
    }
    match k.as_str() {
        // Envoy's default JSON keys that hold request headers.
        "user-agent" => return Some((Side::Request, k)),
        "x-forwarded-for" => return Some((Side::Request, k)),
        "request-id" => return Some((Side::Request, "x-request-id".into())),
        _ => {}
    }
    if let Some(h) = known_header(&k) {
        return Some((Side::Request, h));
    }
    // A key spelled like a header (Envoy keys never hold a dash).
    (key.contains('-') && !key.starts_with(':')).then_some((Side::Request, k))
}

/// Values of a logged header: empty, `-` and null mean the header was not sent.
pub(super) fn header_values(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().flat_map(header_values).collect(),
        Value::Null => Vec::new(),
        other => match str_of(other) {
            Some(s) if !s.is_empty() && s != "-" => vec![s],
            _ => Vec::new(),
        },
    }
}

/// A map of header name → value or array of values (Caddy's `request.headers`).
pub(super) fn header_map(v: Option<&Value>) -> Headers {
    let mut out = Vec::new();
    if let Some(obj) = v.and_then(Value::as_object) {
        for (name, v) in obj {
            for value in header_values(v) {
                out.push((name.clone(), value));
            }
        }
    }
    Headers(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_keys() {
        use LogFlavor::*;
        assert_eq!(
            header_of_key("http_mcp_session_id", Nginx),
            Some((Side::Request, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("sent_http_content_type", Nginx),
            Some((Side::Response, "content-type".into()))
        );
        assert_eq!(
            header_of_key("upstream_http_x_accel_buffering", Nginx),
            None
        );
        assert_eq!(header_of_key("request_time", Nginx), None);
        assert_eq!(
            header_of_key("content_type", Nginx),
            Some((Side::Request, "content-type".into()))
        );
        assert_eq!(
            header_of_key("req_mcp_session_id", Envoy),
            Some((Side::Request, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("resp_mcp_session_id", Envoy),
            Some((Side::Response, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("x-mcp-session-id", Envoy),
            Some((Side::Request, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("response_mcp_session_id", Envoy),
            Some((Side::Response, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("last_event_id", Envoy),
            Some((Side::Request, "last-event-id".into()))
        );
        assert_eq!(header_of_key("response_code", Envoy), None);
        assert_eq!(
            header_of_key("request_id", Envoy),
            Some((Side::Request, "x-request-id".into()))
        );
        assert_eq!(header_of_key("duration", Envoy), None);
    }
}
