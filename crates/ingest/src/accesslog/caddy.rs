//! Caddy's JSON access logs (`http.log.access`). Caddy logs `ts` when a request ends and
//! `duration` in seconds (or nanoseconds); the request is an object with its headers, and the
//! response headers are `resp_headers`. Caddy logs every header, so all are known.

use serde_json::{Map, Value};

use super::fields::{addr, as_u64, parse_status, str_of, version_of};
use super::headers::header_map;
use super::times::{DurationUnit, parse_duration, parse_time};
use super::{Facts, Rec, RecordError, conn_by_client, status_ending};

pub(super) fn record(
    obj: &Map<String, Value>,
    line: u64,
    facts: &mut Facts,
) -> Result<Rec, RecordError> {
    let req = obj
        .get("request")
        .and_then(Value::as_object)
        .ok_or(RecordError::Missing("request object"))?;
    let rs = |k: &str| req.get(k).and_then(str_of).filter(|s| !s.is_empty());
    let end = obj
        .get("ts")
        .and_then(parse_time)
        .ok_or(RecordError::Missing("ts"))?;
    let duration = obj.get("duration").and_then(duration);
    facts.note_duration(duration);
    let start = end.add_nanos(-duration.unwrap_or(0));
    let method = rs("method").ok_or(RecordError::Missing("request.method"))?;
    let target = rs("uri").ok_or(RecordError::Missing("request.uri"))?;
    let status = obj
        .get("status")
        .and_then(parse_status)
        .ok_or(RecordError::Missing("status"))?;
    let mut req_headers = header_map(req.get("headers"));
    if let Some(h) = rs("host")
        && !req_headers.has("host")
    {
        req_headers.0.insert(0, ("Host".into(), h));
    }
    let resp_headers = header_map(obj.get("resp_headers"));
    if req_headers
        .0
        .iter()
        .chain(resp_headers.0.iter())
        .any(|(_, v)| v == "REDACTED")
    {
        facts.redacted = true;
    }
    let client = addr(rs("remote_ip").as_deref(), rs("remote_port").as_deref());
    let conn_key = conn_by_client(client, facts);
    Ok(Rec {
        line,
        start,
        end,
        head: start,
        method,
        target,
        version: version_of(rs("proto").as_deref()),
        status,
        req_headers,
        resp_headers,
        client,
        server: None,
        conn_key,
        conn_first: false,
        req_bytes: obj.get("bytes_read").and_then(as_u64),
        resp_bytes: obj.get("size").and_then(as_u64),
        ending: status_ending(status),
        note: None,
        upstream: None,
    })
}

/// Caddy's `duration`: float seconds by default, integer nanoseconds with
/// `duration_format nanoseconds`, or a Go duration string.
fn duration(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) if n.is_u64() && n.as_u64().is_some_and(|x| x >= 1_000_000) => {
            n.as_u64().map(|x| x.min(i64::MAX as u64) as i64)
        }
        _ => parse_duration(v, DurationUnit::Seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations() {
        assert_eq!(duration(&json!(0.000024323)), Some(24_323));
        assert_eq!(duration(&json!(1_500_000_000u64)), Some(1_500_000_000));
    }
}
