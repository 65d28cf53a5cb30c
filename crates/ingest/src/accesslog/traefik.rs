//! Traefik's JSON access logs (`accessLog.format: json`). Traefik logs when a request starts
//! (`StartUTC`, nanoseconds) and how long it took (`Duration`, nanoseconds); `DownstreamStatus`
//! is what the client got (`OriginStatus` what the service sent Traefik). Headers kept by
//! `accessLog.fields.headers` are keys of their own: `request_<Name>` for the request,
//! `downstream_<Name>` for the response the client got (`origin_<Name>`, what the service sent,
//! is not what the client saw).

use serde_json::{Map, Value};

use mcpf_http::Headers;
use mcpf_model::Timestamp;

use super::fields::{addr, as_u64, logged, parse_status, socket_addr, version_of};
use super::headers::{Logged, Side};
use super::times::{DurationUnit, parse_duration, parse_time};
use super::{Facts, Rec, RecordError, conn_by_client, status_ending};

/// Whether a record's keys are Traefik's (with its start, or with only the line's time when the
/// operator dropped `StartUTC` and `StartLocal`).
pub(super) fn recognised(keys: &[String]) -> bool {
    let has = |k: &str| keys.iter().any(|x| x == k);
    has("RequestMethod")
        && (has("DownstreamStatus") || has("OriginStatus"))
        && (has("StartUTC") || has("StartLocal") || has("Duration") || has("time"))
}

pub(super) fn record(
    obj: &Map<String, Value>,
    line: u64,
    facts: &mut Facts,
) -> Result<Rec, RecordError> {
    let s = |k: &str| logged(obj.get(k));
    let (start, end) = times(obj, facts)?;
    let method = s("RequestMethod").ok_or(RecordError::Missing("RequestMethod"))?;
    let target = s("RequestPath").ok_or(RecordError::Missing("RequestPath"))?;
    let status = ["DownstreamStatus", "OriginStatus"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(parse_status))
        .ok_or(RecordError::Missing("DownstreamStatus"))?;
    let (req_headers, resp_headers) = prefixed_headers(obj, facts);
    let client = s("ClientAddr")
        .as_deref()
        .and_then(socket_addr)
        .or_else(|| addr(s("ClientHost").as_deref(), s("ClientPort").as_deref()));
    let conn_key = conn_by_client(client, facts);
    Ok(Rec {
        line,
        start,
        end,
        head: start,
        method,
        target,
        version: version_of(s("RequestProtocol").as_deref()),
        status,
        req_headers,
        resp_headers,
        client,
        server: None,
        conn_key,
        conn_first: false,
        req_bytes: obj.get("RequestContentSize").and_then(as_u64),
        resp_bytes: obj.get("DownstreamContentSize").and_then(as_u64),
        ending: status_ending(status),
        note: None,
        upstream: s("ServiceAddr").or_else(|| s("ServiceURL")),
    })
}

/// `(start, end)`: `StartUTC` plus `Duration`, else the line's `time` (written when the request
/// ended, in whole seconds by default) minus it.
fn times(
    obj: &Map<String, Value>,
    facts: &mut Facts,
) -> Result<(Timestamp, Timestamp), RecordError> {
    let duration = obj
        .get("Duration")
        .and_then(|v| parse_duration(v, DurationUnit::Nanos));
    facts.note_duration(duration);
    let d = duration.unwrap_or(0);
    if let Some(start) = ["StartUTC", "StartLocal"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(parse_time))
    {
        facts.start_logged = true;
        return Ok((start, start.add_nanos(d)));
    }
    let end = obj
        .get("time")
        .and_then(parse_time)
        .ok_or(RecordError::Missing("StartUTC"))?;
    if end.subsec_nanos() == 0 {
        facts.coarse_times = true;
    }
    Ok((end.add_nanos(-d), end))
}

/// `request_<Name>` and `downstream_<Name>` keys; their names are noted as logged.
fn prefixed_headers(obj: &Map<String, Value>, facts: &mut Facts) -> (Headers, Headers) {
    let mut out = Logged::default();
    for (k, v) in obj {
        let (side, name) = if let Some(n) = k.strip_prefix("request_") {
            (Side::Request, n)
        } else if let Some(n) = k.strip_prefix("downstream_") {
            (Side::Response, n)
        } else {
            continue;
        };
        out.add(facts, side, name.to_ascii_lowercase(), v);
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_as_traefik_writes_it() {
        let rec = json!({
            "ClientAddr": "127.0.0.1:51234", "ClientHost": "127.0.0.1", "ClientPort": "51234",
            "DownstreamContentSize": 285, "DownstreamStatus": 200, "Duration": 2_500_000,
            "OriginStatus": 200, "RequestMethod": "POST", "RequestPath": "/mcp",
            "RequestProtocol": "HTTP/1.1", "StartUTC": "2026-12-01T16:00:00.123456789Z",
            "request_Mcp-Session-Id": "abc", "downstream_Mcp-Session-Id": "abc",
            "downstream_Content-Type": "text/event-stream", "origin_X-Accel-Buffering": "no",
            "level": "info", "msg": "", "time": "2026-12-01T16:00:00Z"
        });
        let obj = rec.as_object().unwrap();
        assert!(recognised(&obj.keys().cloned().collect::<Vec<_>>()));
        let mut facts = Facts::new();
        let r = record(obj, 1, &mut facts).unwrap();
        assert_eq!(r.end.0 - r.start.0, 2_500_000);
        assert_eq!(r.client.unwrap().port(), 51234);
        assert!(r.req_headers.has("mcp-session-id"));
        assert!(r.resp_headers.has("content-type"));
        assert!(
            !r.resp_headers.has("x-accel-buffering"),
            "origin_ is not what the client got"
        );
    }
}
