//! nginx `log_format ... escape=json` lines. nginx logs a request when it ends: `$msec` (or
//! `$time_iso8601`, `$time_local`) is the end and `$request_time` the duration. The request
//! is `$request_method` and `$request_uri`, or the `$request` line.

use serde_json::{Map, Value};

use mcpf_http::Outcome;
use mcpf_model::{Direction, DurationEstimate, LogFlavor, Timestamp};

use super::fields::{addr, logged, parse_status, str_of, version_of};
use super::headers::keyed_headers;
use super::times::{DurationUnit, head_time, parse_duration, parse_time};
use super::{Ending, Facts, Rec, RecordError};

pub(super) fn record(
    obj: &Map<String, Value>,
    line: u64,
    facts: &mut Facts,
) -> Result<Rec, RecordError> {
    let (mut req_headers, resp_headers) = keyed_headers(obj, LogFlavor::Nginx, facts);
    let s = |k: &str| logged(obj.get(k));
    let end = end_time(obj, facts)?;
    let (method, target, line_proto) = request(obj)?;
    let status = obj
        .get("status")
        .and_then(parse_status)
        .ok_or(RecordError::Missing("status"))?;
    let duration = duration(obj, facts);
    let start = end.add_nanos(-duration.unwrap_or(0));
    let header_time = facts.header_time(obj.get("upstream_header_time"), DurationUnit::Seconds);
    let version = version_of(s("server_protocol").or(line_proto).as_deref());
    let client = addr(s("remote_addr").as_deref(), s("remote_port").as_deref());
    let server = addr(s("server_addr").as_deref(), s("server_port").as_deref());
    if let Some(h) = s("host").or(s("http_host"))
        && !req_headers.has("host")
    {
        req_headers.0.push(("host".into(), h));
    }
    let conn_key = s("connection");
    facts.all_conns &= conn_key.is_some();
    let conn_first = s("connection_requests").as_deref() == Some("1");
    let completion = obj
        .get("request_completion")
        .map(|v| str_of(v).unwrap_or_default());
    if completion.is_some() {
        facts.ending_logged = true;
    }
    Ok(Rec {
        line,
        start,
        end,
        head: head_time(start, end, header_time),
        method,
        target,
        version,
        status,
        req_bytes: s("content_length")
            .or(s("http_content_length"))
            .and_then(|v| v.parse().ok()),
        resp_bytes: s("body_bytes_sent").and_then(|v| v.parse().ok()),
        req_headers,
        resp_headers,
        client,
        server,
        conn_key,
        conn_first,
        ending: ending(status, completion.as_deref()),
        note: None,
        // Retries list every upstream tried (`a, b`; `a : b` across internal redirects): the
        // last one answered.
        upstream: s("upstream_addr").and_then(|u| {
            let last = u.rsplit(", ").next()?.rsplit(" : ").next()?.trim();
            (!last.is_empty()).then(|| last.to_string())
        }),
    })
}

/// `$request_time`, else the upstream's `$upstream_response_time` (an estimate: it leaves out
/// reading the request and sending the response's last bytes).
fn duration(obj: &Map<String, Value>, facts: &mut Facts) -> Option<i64> {
    let seconds = |k: &str| {
        obj.get(k)
            .and_then(|v| parse_duration(v, DurationUnit::Seconds))
    };
    let exact = seconds("request_time");
    let duration = exact.or_else(|| seconds("upstream_response_time"));
    if exact.is_none() && duration.is_some() {
        facts.estimated(DurationEstimate::UpstreamOnly);
    }
    facts.note_duration(duration);
    duration
}

/// `(method, target, protocol)`: `$request_method` and `$request_uri` (or `$uri` and
/// `$args`), else the parts of the `$request` line.
fn request(obj: &Map<String, Value>) -> Result<(String, String, Option<String>), RecordError> {
    let s = |k: &str| logged(obj.get(k));
    let request_line = s("request");
    let mut parts = request_line.as_deref().unwrap_or("").split_whitespace();
    let (line_method, line_target, line_proto) = (parts.next(), parts.next(), parts.next());
    let method = s("request_method")
        .or(line_method.map(str::to_string))
        .ok_or(RecordError::Missing("request_method"))?;
    let target = s("request_uri")
        .or(line_target.map(str::to_string))
        .or_else(|| {
            s("uri").map(|u| match s("args") {
                Some(a) => format!("{u}?{a}"),
                None => u,
            })
        })
        .ok_or(RecordError::Missing("request_uri"))?;
    Ok((method, target, line_proto.map(str::to_string)))
}

/// `$msec`, else the first other time field; whole seconds are noted as coarse.
fn end_time(obj: &Map<String, Value>, facts: &mut Facts) -> Result<Timestamp, RecordError> {
    if let Some(t) = obj.get("msec").and_then(parse_time) {
        return Ok(t);
    }
    let t = [
        "time_iso8601",
        "time_local",
        "time",
        "timestamp",
        "@timestamp",
    ]
    .iter()
    .find_map(|k| obj.get(*k).and_then(parse_time))
    .ok_or(RecordError::Missing(
        "time (msec, time_iso8601 or time_local)",
    ))?;
    if t.subsec_nanos() == 0 {
        facts.coarse_times = true;
    }
    Ok(t)
}

/// How the exchange ended: by nginx's own statuses (499 client closed, 444 no response), else
/// by `$request_completion` (empty when the response was cut).
fn ending(status: u16, completion: Option<&str>) -> Ending {
    match status {
        499 => Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer)),
        444 => Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ServerToClient)),
        0 => Ending::NoResponse(Outcome::ClosedEarly, None),
        _ => match completion {
            Some("") => Ending::Cut(Outcome::ClosedEarly, None),
            _ => Ending::Complete,
        },
    }
}
