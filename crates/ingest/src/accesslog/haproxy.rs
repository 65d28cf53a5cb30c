//! HAProxy JSON access logs. HAProxy has no JSON format of its own before 2.7's `%{+json}o`:
//! operators write a `log-format` of JSON by hand, so its keys are theirs. What is HAProxy's is
//! the meaning of its values: the time is when the request was accepted (`%Ts.%ms`, `%tr`), the
//! timers are milliseconds (`%Ta` active, `%Tt` total, `%Tr` to the response head, `-1` when
//! there was none), and the termination state (`%ts`) says who ended the exchange and when: `C`
//! the client, `S` the server, then `R`/`Q`/`C`/`H` before the response head, `D`/`L` during the
//! body (`CH` is what nginx logs as 499). Captured headers are logged under the operator's keys
//! (`mcp_session_id`, `res_mcp_session_id`), `-` when absent.

use serde_json::{Map, Value};

use mcpf_http::{Headers, Outcome};
use mcpf_model::{Direction, Timestamp};

use super::aliases::{header_variable, normalized};
use super::fields::{addr, as_u64, logged, parse_status, version_of};
use super::haproxy_timers::{self, Origin, Timers};
use super::headers::{Logged, Side};
use super::times::parse_time;
use super::{Ending, Facts, Rec, RecordError, conn_by_client, status_ending};

/// Whether a record's keys are those of an HAProxy log: a termination state, a frontend and a
/// backend, or HAProxy's own timer codes (`Tt`, `%Ta`).
pub(super) fn recognised(keys: &[String]) -> bool {
    let norms: Vec<String> = keys.iter().map(|k| normalized(k)).collect();
    let has = |names: &[&str]| norms.iter().any(|n| names.contains(&n.as_str()));
    let codes = keys.iter().any(|k| {
        matches!(
            k.trim_start_matches('%'),
            "Tt" | "Ta" | "Tw" | "Tc" | "TR" | "Tr" | "Th" | "Ti"
        )
    });
    has(STATE)
        || codes
        || (has(&["frontend_name", "frontend", "fe"]) && has(&["backend_name", "backend", "be"]))
}

const START: &[&str] = &["request_date", "tr_date", "request_time"];
const ACCEPT: &[&str] = &[
    "timestamp",
    "accept_date",
    "accept_time",
    "date",
    "time",
    "ts",
];
const METHOD: &[&str] = &["http_method", "method", "hm"];
const TARGET: &[&str] = &["http_uri", "uri", "path", "url", "hu", "hp"];
const REQUEST_LINE: &[&str] = &["http_request", "request", "r"];
const VERSION: &[&str] = &["http_version", "version", "hv"];
const STATUS: &[&str] = &["status_code", "status", "st"];
const STATE: &[&str] = &["termination_state", "term_state", "termination", "tsc"];

/// Keys read as fields, never as captured headers (`http_method` is the method, not a header).
fn is_field(norm: &str) -> bool {
    [
        START,
        ACCEPT,
        METHOD,
        TARGET,
        REQUEST_LINE,
        VERSION,
        STATUS,
        STATE,
    ]
    .iter()
    .any(|names| names.contains(&norm))
}

/// A captured header's side and name, from the operator's key.
fn captured(key: &str) -> Option<(Side, String)> {
    let norm = normalized(key);
    if is_field(&norm) || haproxy_timers::is_timer(key) {
        return None;
    }
    let var = header_variable(key, &norm)?;
    match var.strip_prefix("sent_http_") {
        Some(n) => Some((Side::Response, n.replace('_', "-"))),
        None => Some((Side::Request, var.strip_prefix("http_")?.replace('_', "-"))),
    }
}

/// Which of a record's keys are read as what, for a person to check: the operator named them.
pub(super) fn read_as(obj: &Map<String, Value>) -> Vec<(String, String)> {
    let key = |names: &[&str]| {
        obj.keys()
            .find(|k| names.contains(&normalized(k).as_str()))
            .cloned()
    };
    [
        (key(START).or_else(|| key(ACCEPT)), "request start (%tr)"),
        (key(METHOD), "method (%HM)"),
        (key(TARGET), "target (%HU)"),
        (key(STATUS), "status (%ST)"),
        (key(STATE), "termination state (%ts)"),
    ]
    .into_iter()
    .filter_map(|(k, what)| Some((k?, what.to_string())))
    .chain(
        obj.keys()
            .filter_map(|k| Some((k.clone(), haproxy_timers::read_as(k)?))),
    )
    .chain(obj.keys().filter_map(|k| {
        let (side, name) = captured(k)?;
        let side = if side == Side::Response {
            "response"
        } else {
            "request"
        };
        Some((k.clone(), format!("{side} header {name}")))
    }))
    .collect()
}

/// A record's keys, normalized once (a record is looked up a dozen times), with their values.
struct Keys<'v>(Vec<(String, &'v Value)>);

impl<'v> Keys<'v> {
    fn of(obj: &'v Map<String, Value>) -> Self {
        Keys(obj.iter().map(|(k, v)| (normalized(k), v)).collect())
    }

    /// The value of the first key whose normalized name is one of `names`.
    fn field(&self, names: &[&str]) -> Option<&'v Value> {
        self.0
            .iter()
            .find(|(k, _)| names.contains(&k.as_str()))
            .map(|&(_, v)| v)
    }

    fn text(&self, names: &[&str]) -> Option<String> {
        logged(self.field(names))
    }

    /// A date: a key of `names` whose value is a time this century (a timer under a date's
    /// name, `request_time: 12`, is not one).
    fn time(&self, names: &[&str]) -> Option<Timestamp> {
        const Y2001: i64 = 1_000_000_000 * 1_000_000_000;
        self.0
            .iter()
            .filter(|(k, _)| names.contains(&k.as_str()))
            .find_map(|&(_, v)| parse_time(v).filter(|t| t.0 >= Y2001))
    }
}

pub(super) fn record(
    obj: &Map<String, Value>,
    line: u64,
    facts: &mut Facts,
) -> Result<Rec, RecordError> {
    // `%tr` is when this request began; `%Ts` is when its connection was accepted, which on a
    // keep-alive connection may be long before.
    let keys = Keys::of(obj);
    let (start, origin) = keys
        .time(START)
        .map(|t| (t, Origin::Request))
        .or_else(|| keys.time(ACCEPT).map(|t| (t, Origin::Accept)))
        .ok_or(RecordError::Missing("request time (%tr, or %Ts.%ms)"))?;
    facts.start_logged = true;
    let (method, target, proto) = request(&keys)?;
    let status = keys
        .field(STATUS)
        .and_then(parse_status)
        .ok_or(RecordError::Missing("status (%ST)"))?;
    let timers = Timers::of(obj);
    let span = timers.span(origin);
    facts.note_duration(span.end);
    if let Some(how) = span.estimate {
        facts.estimated(how);
    }
    if timers.head_measured() {
        facts.head_measured = true;
    }
    let end = start.add_nanos(span.end.unwrap_or(0));
    let head = span.head.map_or(start, |t| start.add_nanos(t)).min(end);
    let state = keys.text(STATE);
    if state.is_some() {
        facts.ending_logged = true;
    }
    let (req_headers, resp_headers) = captured_headers(obj, facts);
    let client = addr(
        keys.text(&["client_ip", "ci", "src", "remote_addr"])
            .as_deref(),
        keys.text(&["client_port", "cp", "src_port", "remote_port"])
            .as_deref(),
    );
    let conn_key = conn_by_client(client, facts);
    Ok(Rec {
        line,
        start,
        end,
        head,
        method,
        target,
        version: version_of(proto.as_deref()),
        status,
        req_headers,
        resp_headers,
        client,
        server: None,
        conn_key,
        conn_first: false,
        req_bytes: keys
            .field(&["bytes_uploaded", "bytes_in", "u"])
            .and_then(as_u64),
        resp_bytes: keys
            .field(&["bytes_read", "bytes_out", "b"])
            .and_then(as_u64),
        ending: ending(status, state.as_deref()),
        note: None,
        upstream: upstream(&keys),
    })
}

/// The server that served it: `%si:%sp`, else `%s` (its name).
fn upstream(keys: &Keys<'_>) -> Option<String> {
    let ip = keys.text(&["server_ip", "si"]);
    let port = keys.text(&["server_port", "sp"]);
    match (ip, port) {
        (Some(ip), Some(port)) => Some(format!("{ip}:{port}")),
        (Some(ip), None) => Some(ip),
        _ => keys
            .text(&["server_name", "server", "s"])
            .filter(|s| s != "<NOSRV>"),
    }
}

/// `%HM` and `%HU` (and `%HV`), or the parts of the `%r` request line.
fn request(keys: &Keys<'_>) -> Result<(String, String, Option<String>), RecordError> {
    let line = keys.text(REQUEST_LINE).unwrap_or_default();
    let mut parts = line.split_whitespace();
    let (lm, lt, lp) = (parts.next(), parts.next(), parts.next());
    let method = keys
        .text(METHOD)
        .or(lm.map(str::to_string))
        .ok_or(RecordError::Missing("method (%HM or %r)"))?;
    let target = keys
        .text(TARGET)
        .or(lt.map(str::to_string))
        .ok_or(RecordError::Missing("target (%HU or %r)"))?;
    let proto = keys.text(VERSION).or(lp.map(str::to_string));
    Ok((method, target, proto))
}

/// The headers the operator captured, under their keys (`mcp_session_id`, `res_…`).
fn captured_headers(obj: &Map<String, Value>, facts: &mut Facts) -> (Headers, Headers) {
    let mut out = Logged::default();
    for (k, v) in obj {
        if let Some((side, name)) = captured(k) {
            out.add(facts, side, name, v);
        }
    }
    out.finish()
}

/// How the termination state says the exchange ended; without one, by the status.
fn ending(status: u16, state: Option<&str>) -> Ending {
    let mut chars = state.unwrap_or("").chars();
    let (who, when) = (chars.next(), chars.next());
    let by = match who {
        Some('C') => Some(Direction::ClientToServer),
        Some('S') => Some(Direction::ServerToClient),
        _ => None,
    };
    match (by, when) {
        (Some(d), Some('R' | 'Q' | 'C' | 'H')) => Ending::NoResponse(Outcome::ClosedEarly, Some(d)),
        (Some(d), Some('D' | 'L')) => Ending::Cut(Outcome::ClosedEarly, Some(d)),
        _ => status_ending(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_client_abort_before_the_response_head_is_no_response() {
        assert_eq!(
            ending(400, Some("CH")),
            Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(
            ending(200, Some("CD")),
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(ending(200, Some("--")), Ending::Complete);
    }

    #[test]
    fn a_record_starts_at_the_accept_and_ends_after_the_active_time() {
        let rec = obj(json!({
            "timestamp": 1796143073.043, "client_ip": "127.0.0.1", "client_port": 54084,
            "frontend_name": "fe", "backend_name": "be", "http_method": "POST",
            "http_uri": "/mcp", "http_version": "HTTP/1.1", "status_code": 400,
            "termination_state": "CH", "time_request": 0, "time_wait": 0, "time_connect": 0,
            "time_response": -1, "time_active": 1521, "time_total": 1521,
            "mcp_session_id": "abc", "res_mcp_session_id": "-"
        }));
        assert!(recognised(&rec.keys().cloned().collect::<Vec<_>>()));
        let mut facts = Facts::new();
        let r = record(&rec, 3, &mut facts).unwrap();
        assert_eq!((r.end.0 - r.start.0) / 1_000_000, 1521);
        assert_eq!(r.head, r.start, "no response head: none measured");
        assert!(r.req_headers.has("mcp-session-id"));
        assert!(!r.resp_headers.has("mcp-session-id"), "`-` is not sent");
        assert!(facts.resp_header_names.contains("mcp-session-id"));
        assert_eq!(r.client.unwrap().port(), 54084);
    }
}
