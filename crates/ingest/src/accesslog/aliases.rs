//! nginx logs whose keys the operator named. A `log_format ... escape=json` is free-form: its
//! values are nginx variables, its keys whatever the operator chose, usually the variable's name
//! (`request_method`, `$request_uri`), what it means (`method`, `uri`, `duration`), or a
//! header's name in some case (`mcp_session_id`, `Mcp-Session-Id`, `McpSessionId`). The first
//! record decides, by name and by value, which key holds which variable; every line is then
//! read with its keys renamed to the variables' own names, and the renames are reported so a
//! person can check them.

use serde_json::{Map, Value};

use super::fields::{parse_status, str_of};
use super::headers::KNOWN_HEADERS;
use super::times::parse_time;

/// Keys of a log renamed to the nginx variables they hold, as decided from its first record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Aliases {
    /// (key in the log, variable name it is read as), in the log's key order.
    renames: Vec<(String, String)>,
    /// A key holding `ip:port` (`"$remote_addr:$remote_port"`), split when read.
    client: Option<String>,
}

/// What a key could hold, by its name: the variables it is a usual name of.
const NAMES: &[(&str, &[&str])] = &[
    ("msec", &["msec"]),
    (
        "time_iso8601",
        &[
            "time_iso8601",
            "time",
            "timestamp",
            "ts",
            "date",
            "datetime",
            "time_local",
            "request_end",
            "end_time",
        ],
    ),
    ("request", &["request", "request_line"]),
    (
        "request_method",
        &[
            "request_method",
            "method",
            "verb",
            "http_method",
            "req_method",
        ],
    ),
    (
        "request_uri",
        &[
            "request_uri",
            "uri",
            "path",
            "url",
            "request_path",
            "target",
        ],
    ),
    ("args", &["args", "query", "query_string", "request_query"]),
    (
        "status",
        &[
            "status",
            "status_code",
            "response_status",
            "response_code",
            "code",
        ],
    ),
    (
        "request_time",
        &[
            "request_time",
            "duration",
            "rt",
            "latency",
            "response_time",
            "elapsed",
        ],
    ),
    (
        "remote_addr",
        &["remote_addr", "client_ip", "remote_ip", "client_addr", "ip"],
    ),
    ("remote_port", &["remote_port", "client_port"]),
    (
        "connection",
        &["connection", "connection_id", "conn", "conn_id"],
    ),
    ("connection_requests", &["connection_requests"]),
    ("request_completion", &["request_completion", "completion"]),
    (
        "upstream_response_time",
        &["upstream_response_time", "urt", "upstream_time"],
    ),
    (
        "upstream_addr",
        &["upstream_addr", "upstream", "upstream_host"],
    ),
    ("upstream_status", &["upstream_status"]),
    ("upstream_header_time", &["upstream_header_time", "uht"]),
    (
        "body_bytes_sent",
        &[
            "body_bytes_sent",
            "bytes",
            "body_bytes",
            "response_size",
            "size",
        ],
    ),
    (
        "server_protocol",
        &[
            "server_protocol",
            "protocol",
            "request_proto",
            "http_version",
        ],
    ),
    ("host", &["host", "vhost", "server_name"]),
];

/// A key as names are compared: lower case, `_` for `-`, no leading `$` or `@`, camelCase
/// split (`McpSessionId` → `mcp_session_id`).
pub(super) fn normalized(key: &str) -> String {
    let key = key.trim_start_matches(['$', '@']);
    let mut out = String::with_capacity(key.len() + 4);
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(match c {
            '-' | '.' | ' ' => '_',
            c => c.to_ascii_lowercase(),
        });
    }
    out
}

impl Aliases {
    /// Decides from the first record which of its keys hold which nginx variables; `None` when
    /// it holds no time, no method and target (or request line) or no status.
    pub(super) fn infer(obj: &Map<String, Value>) -> Option<Aliases> {
        let (a, taken) = Aliases::placed(obj);
        a.complete(&taken).then_some(a)
    }

    /// What can be placed of a record, complete or not, and the variables placed.
    fn placed(obj: &Map<String, Value>) -> (Aliases, Vec<&'static str>) {
        let mut a = Aliases::default();
        let mut taken: Vec<&'static str> = Vec::new();
        for (key, value) in obj {
            let norm = normalized(key);
            let by_name = variable_by_name(&norm, value).filter(|v| !taken.contains(v));
            match by_name {
                Some(v) => {
                    taken.push(v);
                    a.rename(key, v);
                }
                None => {
                    if let Some(h) = header_variable(key, &norm) {
                        a.rename(key, &h);
                    } else if norm == "client" && value.as_str().is_some_and(is_host_port) {
                        a.client = Some(key.clone());
                    }
                }
            }
        }
        a.by_value(obj, &mut taken);
        (a, taken)
    }

    /// A `--log-map` for a record that cannot be read as it is: each key the map needs, from
    /// what could be placed, `?` where nothing could.
    pub(super) fn suggested_map(obj: &Map<String, Value>) -> String {
        let (a, _) = Aliases::placed(obj);
        let key_of = |var: &str| {
            a.renames
                .iter()
                .find(|(_, v)| v == var)
                .map(|(k, _)| k.clone())
        };
        let mut parts = Vec::new();
        for (map_key, vars) in [
            ("time", &["msec", "time_iso8601"][..]),
            ("method", &["request_method"]),
            ("path", &["request_uri"]),
            ("status", &["status"]),
            ("duration", &["request_time"]),
            ("req.Mcp-Session-Id", &["http_mcp_session_id"]),
            ("resp.Mcp-Session-Id", &["sent_http_mcp_session_id"]),
            ("req.Last-Event-ID", &["http_last_event_id"]),
            ("client", &["remote_addr"]),
        ] {
            let found = vars.iter().find_map(|v| key_of(v));
            let optional = !matches!(map_key, "time" | "method" | "path" | "status");
            match found {
                Some(k) => parts.push(format!("{map_key}={k}")),
                None if optional => {}
                None => parts.push(format!("{map_key}=?")),
            }
        }
        parts.join(",")
    }

    fn rename(&mut self, key: &str, var: &str) {
        self.renames.push((key.to_string(), var.to_string()));
    }

    /// Fields not found by name, found by their value: a request line, a method, a path, a
    /// time.
    fn by_value(&mut self, obj: &Map<String, Value>, taken: &mut Vec<&'static str>) {
        let free = |a: &Aliases, k: &str| !a.renames.iter().any(|(x, _)| x == k);
        for (key, value) in obj {
            if !free(self, key) {
                continue;
            }
            let text = value.as_str().unwrap_or("");
            let var: Option<&'static str> = if is_request_line(text) {
                Some("request")
            } else if is_method(text) {
                Some("request_method")
            } else if text.starts_with('/') && !text.starts_with("//") {
                Some("request_uri")
            } else if is_time_value(value) {
                Some("time_iso8601")
            } else {
                None
            };
            if let Some(v) = var.filter(|v| !taken.contains(v) && !self.has_time_for(v)) {
                taken.push(v);
                self.rename(key, v);
            }
        }
    }

    /// A time found by value is not wanted when one was found by name.
    fn has_time_for(&self, var: &str) -> bool {
        var == "time_iso8601" && self.renames.iter().any(|(_, v)| v == "msec")
    }

    /// It names what every record needs.
    fn complete(&self, taken: &[&str]) -> bool {
        let has = |v: &str| taken.contains(&v);
        let time = has("msec") || has("time_iso8601");
        let request = has("request") || (has("request_method") && has("request_uri"));
        time && request && has("status")
    }

    /// Renames that are not already the variable's own name: what a person should check.
    pub(super) fn guessed(&self) -> Vec<(String, String)> {
        self.renames
            .iter()
            .filter(|(k, v)| k != v)
            .cloned()
            .chain(
                self.client
                    .iter()
                    .map(|k| (k.clone(), "remote_addr:remote_port".to_string())),
            )
            .collect()
    }

    /// The record with its keys renamed to the variables they hold.
    pub(super) fn apply(&self, obj: &Map<String, Value>) -> Map<String, Value> {
        let mut out = Map::with_capacity(obj.len() + 1);
        for (k, v) in obj {
            let name = self
                .renames
                .iter()
                .find(|(x, _)| x == k)
                .map_or(k.as_str(), |(_, var)| var.as_str());
            out.insert(name.to_string(), v.clone());
        }
        // `$uri` and `$args` logged apart: the target is both (a legacy endpoint's session is in
        // its query).
        if let (Some(Value::String(uri)), Some(Value::String(args))) =
            (out.get("request_uri"), out.get("args"))
            && !uri.contains('?')
            && !args.is_empty()
            && args != "-"
        {
            let target = format!("{uri}?{args}");
            out.insert("request_uri".into(), target.into());
        }
        if let Some((ip, port)) = self
            .client
            .as_ref()
            .and_then(|k| obj.get(k))
            .and_then(Value::as_str)
            .and_then(|s| s.rsplit_once(':'))
        {
            out.entry("remote_addr").or_insert_with(|| ip.into());
            out.entry("remote_port").or_insert_with(|| port.into());
        }
        out
    }
}

/// The variable a key names, if its value fits it.
fn variable_by_name(norm: &str, value: &Value) -> Option<&'static str> {
    let (var, _) = NAMES.iter().find(|(_, names)| names.contains(&norm))?;
    let text = str_of(value).unwrap_or_default();
    let fits = match *var {
        "msec" | "time_iso8601" => parse_time(value).is_some(),
        "request" => is_request_line(&text),
        "request_method" => is_method(&text),
        "request_uri" => text.starts_with('/') || text.contains("://"),
        "status" => parse_status(value).is_some_and(|s| (100..600).contains(&s) || s == 0),
        _ => true,
    };
    fits.then_some(*var)
}

/// `http_<name>` for a request header, `sent_http_<name>` for a response header, from the key
/// forms operators use (`mcp_session_id`, `req_last_event_id`, `resp_mcp_session_id`,
/// `sent_http_content_type`).
pub(super) fn header_variable(key: &str, norm: &str) -> Option<String> {
    // Keys nginx logs are read natively: nothing to rename, nothing to check.
    if key == norm && matches!(norm, "content_type" | "content_length") {
        return None;
    }
    if norm.starts_with("http_")
        || norm.starts_with("sent_http_")
        || norm.starts_with("upstream_http_")
    {
        return Some(norm.to_string());
    }
    for (prefix, side) in [
        ("resp_", "sent_http_"),
        ("res_", "sent_http_"),
        ("response_", "sent_http_"),
        ("sent_", "sent_http_"),
        ("req_", "http_"),
        ("request_", "http_"),
        ("", "http_"),
    ] {
        if let Some(name) = norm.strip_prefix(prefix)
            && is_header_name(name)
        {
            return Some(format!("{side}{name}"));
        }
    }
    None
}

fn is_header_name(name: &str) -> bool {
    let dashed = name.replace('_', "-");
    KNOWN_HEADERS.contains(&dashed.as_str())
}

/// A time by its value alone: a date in text, or a number of seconds (or ms, µs, ns) since the
/// epoch past 2001, which no duration or count in a log reaches.
fn is_time_value(v: &Value) -> bool {
    match v {
        Value::String(s) => !s.is_empty() && s.parse::<f64>().is_err() && parse_time(v).is_some(),
        Value::Number(n) => n.as_f64().is_some_and(|f| f >= 1e9) && parse_time(v).is_some(),
        _ => false,
    }
}

/// A method a log field holds, told by value: only the methods HTTP defines, since any upper-case
/// word (a log level, `INFO`) has a method's shape.
fn is_method(s: &str) -> bool {
    matches!(
        s,
        "GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS" | "CONNECT" | "TRACE"
    )
}

/// `POST /mcp HTTP/1.1`, nginx's `$request` (`HTTP/2.0` for an HTTP/2 request).
fn is_request_line(s: &str) -> bool {
    mcpf_capture::request_line::parse(s.as_bytes()).is_some()
}

fn is_host_port(s: &str) -> bool {
    s.rsplit_once(':').is_some_and(|(ip, port)| {
        super::fields::parse_ip(ip).is_some() && port.parse::<u16>().is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn keys_named_by_meaning_are_read_as_the_variables() {
        let rec = obj(json!({
            "time": "2026-12-01T16:00:00+00:00", "method": "POST", "uri": "/mcp",
            "status": 200, "request_time": 0.25, "mcp_session_id": "abc",
            "resp_mcp_session_id": "abc", "LastEventId": "", "client": "127.0.0.1:5000"
        }));
        let a = Aliases::infer(&rec).expect("recognised");
        let read = a.apply(&rec);
        for k in [
            "time_iso8601",
            "request_method",
            "request_uri",
            "status",
            "request_time",
            "http_mcp_session_id",
            "sent_http_mcp_session_id",
            "http_last_event_id",
            "remote_addr",
            "remote_port",
        ] {
            assert!(read.contains_key(k), "{k} in {read:?}");
        }
        assert_eq!(read["remote_port"], "5000");
        assert!(a.guessed().contains(&("uri".into(), "request_uri".into())));
    }

    #[test]
    fn a_path_and_its_query_logged_apart_are_one_target() {
        let rec = obj(json!({
            "time": "2026-12-01T16:00:00+00:00", "method": "POST", "path": "/messages",
            "request_query": "sessionId=abc", "status": 202
        }));
        let read = Aliases::infer(&rec).unwrap().apply(&rec);
        assert_eq!(read["request_uri"], "/messages?sessionId=abc");
    }

    #[test]
    fn a_request_line_and_a_time_are_found_by_value() {
        let rec = obj(json!({
            "when": "01/Dec/2026:16:00:00 +0000", "line": "GET /mcp HTTP/1.1", "code": "200"
        }));
        let read = Aliases::infer(&rec).expect("recognised").apply(&rec);
        assert_eq!(read["request"], "GET /mcp HTTP/1.1");
        assert!(read.contains_key("time_iso8601"));
        assert!(read.contains_key("status"));
    }

    #[test]
    fn a_name_whose_value_does_not_fit_is_not_taken() {
        // "method" holds no method, "status" no status: nothing a record needs is there.
        let rec = obj(json!({"time": 1764604800, "method": "x", "uri": "/", "status": "ok"}));
        assert_eq!(Aliases::infer(&rec), None);
    }

    #[test]
    fn key_forms_normalize() {
        assert_eq!(normalized("McpSessionId"), "mcp_session_id");
        assert_eq!(normalized("mcp-session-id"), "mcp_session_id");
        assert_eq!(normalized("$request_uri"), "request_uri");
        assert_eq!(normalized("@timestamp"), "timestamp");
    }
}
