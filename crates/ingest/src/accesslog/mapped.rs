//! Lines of any JSON log, read through a [`LogMap`] that names their fields. A map gives no
//! server address, and a connection only when it names one (or the client's port does).

use std::collections::BTreeSet;
use std::net::SocketAddr;

use serde_json::{Map, Value};

use mcpf_http::Headers;
use mcpf_model::Timestamp;

use super::fields::{logged, lookup, parse_ip, parse_status, socket_addr};
use super::headers::{header_map, header_values};
use super::logmap::LogMap;
use super::times::{parse_duration, parse_time};
use super::{Facts, Rec, RecordError, status_ending};

pub(super) fn record(
    obj: &Map<String, Value>,
    map: &LogMap,
    line: u64,
    facts: &mut Facts,
) -> Result<Rec, RecordError> {
    let s = |f: &Option<String>| logged(field(obj, f));
    let (start, end) = times(obj, map, facts)?;
    let method = s(&map.method).ok_or(RecordError::Missing("method"))?;
    let target = s(&map.path).ok_or(RecordError::Missing("path"))?;
    let status = field(obj, &map.status)
        .and_then(parse_status)
        .ok_or(RecordError::Missing("status"))?;
    let (req_headers, resp_headers) = headers(obj, map, facts);
    let client = s(&map.client)
        .and_then(|c| socket_addr(&c).or_else(|| parse_ip(&c).map(|ip| SocketAddr::new(ip, 0))));
    let conn_key = s(&map.connection);
    facts.all_conns &= conn_key.is_some();
    facts.all_servers = false;
    Ok(Rec {
        line,
        start,
        end,
        head: start,
        method,
        target,
        version: 1,
        status,
        req_headers,
        resp_headers,
        client,
        server: None,
        conn_key: conn_key.or_else(|| client.filter(|c| c.port() != 0).map(|c| c.to_string())),
        conn_first: false,
        req_bytes: None,
        resp_bytes: None,
        ending: status_ending(status),
        note: None,
        upstream: None,
    })
}

/// `(start, end)`: from the `start` field plus the duration, else from `time` minus it.
fn times(
    obj: &Map<String, Value>,
    map: &LogMap,
    facts: &mut Facts,
) -> Result<(Timestamp, Timestamp), RecordError> {
    let not_a_time = |f: &Option<String>| RecordError::NotATime(f.clone().unwrap_or_default());
    let duration = field(obj, &map.duration).and_then(|v| parse_duration(v, map.duration_unit));
    facts.note_duration(duration);
    match (field(obj, &map.start), field(obj, &map.time)) {
        (Some(v), _) if map.start.is_some() => {
            let start = parse_time(v).ok_or_else(|| not_a_time(&map.start))?;
            facts.start_logged = true;
            Ok((start, start.add_nanos(duration.unwrap_or(0))))
        }
        (_, Some(v)) => {
            let end = parse_time(v).ok_or_else(|| not_a_time(&map.time))?;
            Ok((end.add_nanos(-duration.unwrap_or(0)), end))
        }
        _ => Err(RecordError::Missing("time")),
    }
}

/// The headers the map names, one field each or an object of them; every name is noted in
/// `facts`, logged on this line or not.
fn headers(obj: &Map<String, Value>, map: &LogMap, facts: &mut Facts) -> (Headers, Headers) {
    let req = side(
        obj,
        &map.request_headers,
        &map.request_header_object,
        &mut facts.req_header_names,
    );
    let resp = side(
        obj,
        &map.response_headers,
        &map.response_header_object,
        &mut facts.resp_header_names,
    );
    (req, resp)
}

/// The headers of one side: `fields` are (header name, field) pairs, `object` a field holding
/// an object of them.
fn side(
    obj: &Map<String, Value>,
    fields: &[(String, String)],
    object: &Option<String>,
    names: &mut BTreeSet<String>,
) -> Headers {
    let mut out = Vec::new();
    for (name, f) in fields {
        names.insert(name.clone());
        for v in lookup(obj, f).map(header_values).unwrap_or_default() {
            out.push((name.clone(), v));
        }
    }
    if let Some(v) = field(obj, object) {
        let h = header_map(Some(v));
        names.extend(h.0.iter().map(|(n, _)| n.to_ascii_lowercase()));
        out.extend(h.0);
    }
    Headers(out)
}

/// The value of the field the map names, if it names one.
fn field<'v>(obj: &'v Map<String, Value>, name: &Option<String>) -> Option<&'v Value> {
    name.as_deref().and_then(|f| lookup(obj, f))
}
