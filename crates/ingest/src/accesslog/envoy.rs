//! Envoy `json_format` access logs. Envoy logs `start_time` and a `duration` in
//! milliseconds; `%RESPONSE_FLAGS%` say how an exchange ended (a downstream or upstream
//! termination, a timeout, a reset), and are also reported as an anomaly.

use serde_json::{Map, Value};

use mcpf_http::Outcome;
use mcpf_model::{Direction, DurationEstimate, LogFlavor, Timestamp};

use super::fields::{as_u64, logged, parse_status, socket_addr, str_of, version_of};
use super::headers::keyed_headers;
use super::times::{DurationUnit, head_time, parse_duration, parse_time};
use super::{Ending, Facts, Rec, RecordError};

pub(super) fn record(
    obj: &Map<String, Value>,
    line: u64,
    facts: &mut Facts,
) -> Result<Rec, RecordError> {
    let (mut req_headers, resp_headers) = keyed_headers(obj, LogFlavor::Envoy, facts);
    let s = |k: &str| logged(obj.get(k));
    let (start, end) = times(obj, facts)?;
    let method = s("method")
        .or(s(":method"))
        .ok_or(RecordError::Missing("method"))?;
    let target = s("path")
        .or(s(":path"))
        .or(s("x-envoy-original-path"))
        .ok_or(RecordError::Missing("path"))?;
    let status = obj
        .get("response_code")
        .and_then(parse_status)
        .ok_or(RecordError::Missing("response_code"))?;
    let header_time = facts.header_time(obj.get("response_duration"), DurationUnit::Millis);
    if let Some(a) = s("authority")
        && !req_headers.has("host")
    {
        req_headers.0.push(("host".into(), a));
    }
    let logged_flags = obj
        .get("response_flags")
        .map(|v| str_of(v).unwrap_or_default());
    if logged_flags.is_some() {
        facts.ending_logged = true;
    }
    let flags = flags(logged_flags.as_deref().unwrap_or(""));
    let conn_key = s("connection_id");
    facts.all_conns &= conn_key.is_some();
    Ok(Rec {
        line,
        start,
        end,
        head: head_time(start, end, header_time),
        method,
        target,
        version: version_of(s("protocol").as_deref()),
        status,
        req_headers,
        resp_headers,
        client: s("downstream_remote_address").and_then(|a| socket_addr(&a)),
        server: s("downstream_local_address").and_then(|a| socket_addr(&a)),
        conn_key,
        conn_first: false,
        req_bytes: obj.get("bytes_received").and_then(as_u64),
        resp_bytes: obj.get("bytes_sent").and_then(as_u64),
        ending: ending(&flags, status),
        note: note(&flags),
        upstream: s("upstream_host"),
    })
}

/// `(start, end)`: from `start_time` plus the duration, else from an end time minus it.
fn times(
    obj: &Map<String, Value>,
    facts: &mut Facts,
) -> Result<(Timestamp, Timestamp), RecordError> {
    let duration = duration(obj, facts);
    if let Some(start) = obj.get("start_time").and_then(parse_time) {
        facts.start_logged = true;
        return Ok((start, start.add_nanos(duration.unwrap_or(0))));
    }
    let end = ["end_time", "timestamp", "time", "@timestamp"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(parse_time))
        .ok_or(RecordError::Missing("start_time"))?;
    Ok((end.add_nanos(-duration.unwrap_or(0)), end))
}

/// `%DURATION%`, else `%RESPONSE_DURATION%` plus `%RESPONSE_TX_DURATION%` (from the request's
/// start to the response's last byte, an estimate that misses nothing the client waited for
/// after it).
fn duration(obj: &Map<String, Value>, facts: &mut Facts) -> Option<i64> {
    let ms = |k: &str| {
        obj.get(k)
            .and_then(|v| parse_duration(v, DurationUnit::Millis))
    };
    let phases = || Some(ms("response_duration")? + ms("response_tx_duration")?);
    let exact = ms("duration");
    let duration = exact.or_else(phases);
    if exact.is_none() && duration.is_some() {
        facts.estimated(DurationEstimate::EnvoyPhases);
    }
    facts.note_duration(duration);
    duration
}

/// The anomaly that response flags are: cut by the client (`DC`) or else by the server side.
fn note(flags: &[String]) -> Option<(Direction, String)> {
    if flags.is_empty() {
        return None;
    }
    let dir = if flags.iter().any(|f| f == "DC") {
        Direction::ClientToServer
    } else {
        Direction::ServerToClient
    };
    let named: Vec<String> = flags
        .iter()
        .map(|f| match flag_meaning(f) {
            Some(m) => format!("{f} ({m})"),
            None => f.clone(),
        })
        .collect();
    Some((dir, format!("Envoy response flags {}", named.join(", "))))
}

/// Envoy `%RESPONSE_FLAGS%`: `-`, `DC`, `UC,URX`, or long names (`%RESPONSE_FLAGS_LONG%`).
fn flags(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty() && *f != "-")
        .map(|f| {
            match f {
                "DownstreamConnectionTermination" => "DC",
                "UpstreamConnectionTermination" => "UC",
                "UpstreamRequestTimeout" => "UT",
                "StreamIdleTimeout" => "SI",
                "LocalReset" => "LR",
                "UpstreamRemoteReset" => "UR",
                "DurationTimeout" => "DT",
                "UpstreamMaxStreamDurationReached" => "UMSDR",
                "NoRouteFound" => "NR",
                "UpstreamConnectionFailure" => "UF",
                "NoHealthyUpstream" => "UH",
                other => other,
            }
            .to_string()
        })
        .collect()
}

fn flag_meaning(f: &str) -> Option<&'static str> {
    Some(match f {
        "DC" => "downstream connection termination",
        "UC" => "upstream connection termination",
        "UT" => "upstream request timeout",
        "SI" => "stream idle timeout",
        "LR" => "connection local reset",
        "UR" => "upstream remote reset",
        "DT" => "max duration reached",
        "UMSDR" => "upstream max stream duration reached",
        "UF" => "upstream connection failure",
        "UH" => "no healthy upstream",
        "UO" => "upstream overflow",
        "URX" => "upstream retry limit exceeded",
        "NR" => "no route",
        "RL" => "rate limited",
        "DPE" => "downstream protocol error",
        "UPE" => "upstream protocol error",
        _ => return None,
    })
}

/// How Envoy's flags and response code end the exchange as the client saw it.
fn ending(flags: &[String], status: u16) -> Ending {
    let has = |f: &str| flags.iter().any(|x| x == f);
    if has("DC") {
        return if status == 0 {
            Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        } else {
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        };
    }
    let server_cut = ["UC", "SI", "LR", "UR", "DT", "UMSDR"]
        .iter()
        .any(|f| has(f));
    if status == 0 {
        return Ending::NoResponse(
            Outcome::ClosedEarly,
            server_cut.then_some(Direction::ServerToClient),
        );
    }
    // A status Envoy generated itself (503, 504, 408) reached the client whole.
    if server_cut && status < 400 {
        return Ending::Cut(Outcome::ClosedEarly, Some(Direction::ServerToClient));
    }
    Ending::Complete
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envoy_endings() {
        let f = |s: &str| flags(s);
        assert_eq!(
            ending(&f("DC"), 0),
            Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(
            ending(&f("DC"), 200),
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(
            ending(&f("DownstreamConnectionTermination"), 200),
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(ending(&f("UC"), 503), Ending::Complete);
        assert_eq!(
            ending(&f("UC"), 200),
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ServerToClient))
        );
        assert_eq!(ending(&f("UT"), 504), Ending::Complete);
        assert_eq!(ending(&f("-"), 200), Ending::Complete);
    }
}
