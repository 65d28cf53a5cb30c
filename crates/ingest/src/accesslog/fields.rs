//! Values of log fields other than times and headers: strings, counts, statuses, protocols
//! and addresses, written as JSON strings or numbers depending on the server and its config.

use std::net::{IpAddr, SocketAddr};

use serde_json::{Map, Value};

pub(super) fn str_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A field's text; empty and `-` mean it was not logged.
pub(super) fn logged(v: Option<&Value>) -> Option<String> {
    v.and_then(str_of).filter(|s| !s.is_empty() && s != "-")
}

pub(super) fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The field `field` of `obj`, as a key or as a dotted path into nested objects.
pub(super) fn lookup<'v>(obj: &'v Map<String, Value>, field: &str) -> Option<&'v Value> {
    if let Some(v) = obj.get(field) {
        return Some(v);
    }
    let mut parts = field.split('.');
    let mut cur = obj.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_object()?.get(p)?;
    }
    Some(cur)
}

pub(super) fn parse_status(v: &Value) -> Option<u16> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn version_of(proto: Option<&str>) -> u8 {
    match proto.map(str::trim) {
        Some(p) if p.eq_ignore_ascii_case("HTTP/1.0") => 0,
        _ => 1,
    }
}

pub(super) fn parse_ip(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_start_matches('[').trim_end_matches(']');
    s.parse().ok()
}

pub(super) fn addr(ip: Option<&str>, port: Option<&str>) -> Option<SocketAddr> {
    let ip = parse_ip(ip?)?;
    let port = port.and_then(|p| p.trim().parse().ok()).unwrap_or(0);
    Some(SocketAddr::new(ip, port))
}

/// `ip:port`, `[v6]:port` (Envoy addresses), or a bare IP.
pub(super) fn socket_addr(s: &str) -> Option<SocketAddr> {
    let s = s.trim();
    s.parse()
        .ok()
        .or_else(|| parse_ip(s).map(|ip| SocketAddr::new(ip, 0)))
}
