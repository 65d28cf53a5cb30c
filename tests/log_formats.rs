//! Access logs and HAR files as operators and browsers write them: the real log of the seed
//! incident, its keys renamed the way `log_format`s in the wild name them, must give the
//! analysis the original gives; a log that writes 200 for a dropped stream still shows the
//! fallback; a HAR entry that recorded no response is unknown, never unanswered.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

const SEED_LOG: &str = "samples/seed-incident.nginx.jsonl";

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("mcp-forensics")
}

fn analyze(path: &Path) -> Value {
    let out = Command::new(bin())
        .args(["analyze", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: not JSON ({e}): {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Adds fields to a rewritten record from the original one.
type Edit<'a> = &'a dyn Fn(&Map<String, Value>, &mut Map<String, Value>);

/// Each line with its keys renamed by `rename` (a key mapped to None is dropped) and, when
/// `edit` says so, fields added.
fn rewrite(name: &str, rename: &dyn Fn(&str) -> Option<String>, edit: Edit<'_>) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("log-formats-{name}.jsonl"));
    let mut out = String::new();
    for line in std::fs::read_to_string(SEED_LOG).unwrap().lines() {
        let rec: Map<String, Value> = serde_json::from_str(line).unwrap();
        let mut new = Map::new();
        for (k, v) in &rec {
            if let Some(k) = rename(k) {
                new.insert(k, v.clone());
            }
        }
        edit(&rec, &mut new);
        out.push_str(&serde_json::to_string(&new).unwrap());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    path
}

/// What an analysis concluded: sessions, and each finding's kind, severity and request IDs.
fn conclusions(doc: &Value) -> (u64, Vec<String>) {
    let findings = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f["kind"], f["severity"], f["evidence"]["request_id"]
            )
        })
        .collect();
    (doc["summary"]["sessions"].as_u64().unwrap(), findings)
}

fn original() -> (u64, Vec<String>) {
    let doc = analyze(Path::new(SEED_LOG));
    let c = conclusions(&doc);
    assert!(!c.1.is_empty(), "the seed log shows the incident");
    c
}

fn read_as(doc: &Value) -> &Map<String, Value> {
    doc["inputs"][0]["read_as"].as_object().unwrap()
}

#[test]
fn keys_named_by_meaning_give_the_same_analysis() {
    let named = |k: &str| {
        Some(
            match k {
                "msec" => "timestamp",
                "time_iso8601" => return None,
                "request_method" => "method",
                "request_uri" => "uri",
                "request_time" => "duration",
                "http_mcp_session_id" => "mcp_session_id",
                "sent_http_mcp_session_id" => "resp_mcp_session_id",
                "http_last_event_id" => "LastEventId",
                "http_accept" => "Accept",
                "sent_http_content_type" => "resp_content_type",
                "http_mcp_protocol_version" => "mcp-protocol-version",
                other => other,
            }
            .to_string(),
        )
    };
    let path = rewrite("named", &named, &|_, _| {});
    let doc = analyze(&path);
    assert_eq!(conclusions(&doc), original());
    let read = read_as(&doc);
    assert_eq!(read["uri"], "request_uri");
    assert_eq!(read["mcp_session_id"], "http_mcp_session_id");
    assert_eq!(read["resp_mcp_session_id"], "sent_http_mcp_session_id");
    assert_eq!(read["LastEventId"], "http_last_event_id");
}

#[test]
fn a_request_line_and_a_client_address_give_the_same_analysis() {
    let line_only = |k: &str| match k {
        "request_method" | "request_uri" | "server_protocol" | "remote_addr" | "remote_port" => {
            None
        }
        "msec" => Some("@timestamp".to_string()),
        other => Some(other.to_string()),
    };
    let add = |rec: &Map<String, Value>, new: &mut Map<String, Value>| {
        let s = |k: &str| rec[k].as_str().unwrap().to_string();
        let line = format!(
            "{} {} {}",
            s("request_method"),
            s("request_uri"),
            s("server_protocol")
        );
        new.insert("req".into(), line.into());
        let client = format!("{}:{}", s("remote_addr"), s("remote_port"));
        new.insert("client".into(), client.into());
    };
    let path = rewrite("request-line", &line_only, &add);
    let doc = analyze(&path);
    assert_eq!(conclusions(&doc), original());
    let read = read_as(&doc);
    assert_eq!(read["req"], "request");
    assert_eq!(read["client"], "remote_addr:remote_port");
}

#[test]
fn an_unreadable_log_gets_a_ready_log_map_and_no_capture_advice() {
    let path = rewrite(
        "unreadable",
        &|k| match k {
            "status" => Some("outcome".into()),
            "msec" | "time_iso8601" => None,
            other => Some(other.to_string()),
        },
        &|_, _| {},
    );
    let out = Command::new(bin())
        .arg("analyze")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--log-map 'time=?,method=request_method,path=request_uri,status=?"),
        "{err}"
    );
    assert!(!err.contains("tcpdump"), "{err}");
}

/// The log with every `499` written as `200`, the way Caddy logs a stream the client dropped.
fn as_caddy_would(name: &str, log: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("log-formats-{name}.jsonl"));
    let text = std::fs::read_to_string(log).unwrap();
    std::fs::write(
        &path,
        text.replace("\"status\":\"499\"", "\"status\":\"200\""),
    )
    .unwrap();
    path
}

fn kinds(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_dropped_post_logged_200_still_shows_the_fallback() {
    let doc = analyze(&as_caddy_would("no-499", SEED_LOG));
    let fallbacks: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "sse_fallback")
        .collect();
    assert_eq!(fallbacks.len(), 1, "{:?}", kinds(&doc));
    assert_eq!(fallbacks[0]["evidence"]["inferred_from_times"], true);
    assert!(kinds(&doc).contains(&"unsafe_resumption_after_fallback".to_string()));
    // The original, with its 499, is found without inference.
    let plain = analyze(Path::new(SEED_LOG));
    let f = &plain["findings"][0];
    assert_eq!(
        (f["kind"].as_str(), &f["evidence"]["inferred_from_times"]),
        (Some("sse_fallback"), &Value::Bool(false))
    );
}

#[test]
fn healthy_sessions_logged_without_499_get_no_inferred_fallback() {
    // 52 healthy SDK sessions and the one seed session, through one nginx.
    let doc = analyze(&as_caddy_would(
        "concurrent-no-499",
        "samples/concurrent-nginx.nginx.jsonl",
    ));
    let fallbacks = kinds(&doc).iter().filter(|k| *k == "sse_fallback").count();
    assert_eq!(fallbacks, 1, "{:?}", kinds(&doc));
}

const HAR: &str = "samples/mitmproxy-python-sdk.har";

/// The HAR with the response of its `tools/call` 3 (entry 4) replaced by `response` (None:
/// removed).
fn har_with(name: &str, response: Option<Value>) -> PathBuf {
    let mut h: Value = serde_json::from_str(&std::fs::read_to_string(HAR).unwrap()).unwrap();
    let entry = &mut h["log"]["entries"][3];
    assert!(
        entry["request"]["postData"]["text"]
            .as_str()
            .unwrap()
            .contains("\"id\":3")
    );
    let obj = entry.as_object_mut().unwrap();
    match response {
        Some(r) => obj.insert("response".into(), r),
        None => obj.remove("response"),
    };
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("har-{name}.har"));
    std::fs::write(&path, serde_json::to_string(&h).unwrap()).unwrap();
    path
}

#[test]
fn a_har_entry_without_a_response_is_unknown_never_unanswered() {
    let pending = serde_json::json!({"status": 0, "statusText": "", "httpVersion": "",
        "headers": [], "cookies": [], "content": {"size": 0, "mimeType": "x-unknown"},
        "redirectURL": "", "headersSize": -1, "bodySize": -1});
    for (name, response) in [("no-response", None), ("in-flight", Some(pending))] {
        let doc = analyze(&har_with(name, response));
        assert!(
            !kinds(&doc).contains(&"unanswered_request".to_string()),
            "{name}: {:?}",
            kinds(&doc)
        );
        let warnings = doc["inputs"][0]["warnings"].to_string();
        assert!(warnings.contains("entry 4"), "{name}: {warnings}");
        let undecided = doc["sessions"][0]["not_determinable"].to_string();
        assert!(
            undecided.contains("unanswered_request"),
            "{name}: {undecided}"
        );
    }
    // The same entry failing by the browser's own account is a request that got no answer.
    let aborted = serde_json::json!({"status": 0, "statusText": "", "httpVersion": "",
        "headers": [], "cookies": [], "content": {"size": 0, "mimeType": "x-unknown"},
        "redirectURL": "", "headersSize": -1, "bodySize": -1, "_error": "net::ERR_CONNECTION_RESET"});
    let doc = analyze(&har_with("failed", Some(aborted)));
    assert!(
        kinds(&doc).contains(&"unanswered_request".to_string()),
        "{:?}",
        kinds(&doc)
    );
}

/// RFC 3339 of a Unix time with nanoseconds, as Traefik writes `StartUTC`.
fn rfc3339(ns: i64) -> String {
    let (secs, sub) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{sub:09}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[test]
fn the_seed_incident_as_traefik_logs_it_gives_the_same_analysis() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("log-formats-traefik.jsonl");
    let mut out = String::new();
    for line in std::fs::read_to_string(SEED_LOG).unwrap().lines() {
        let r: Map<String, Value> = serde_json::from_str(line).unwrap();
        let s = |k: &str| r[k].as_str().unwrap().to_string();
        let secs = |k: &str| (s(k).parse::<f64>().unwrap() * 1e9).round() as i64;
        let end = secs("msec");
        let took = secs("request_time");
        let mut t = serde_json::json!({
            "ClientAddr": format!("{}:{}", s("remote_addr"), s("remote_port")),
            "DownstreamStatus": s("status").parse::<u16>().unwrap(),
            "Duration": took,
            "RequestMethod": s("request_method"),
            "RequestPath": s("request_uri"),
            "RequestProtocol": s("server_protocol"),
            "StartUTC": rfc3339(end - took),
            "level": "info", "msg": "", "time": rfc3339(end),
        });
        for (nginx, traefik) in [
            ("http_mcp_session_id", "request_Mcp-Session-Id"),
            ("http_last_event_id", "request_Last-Event-Id"),
            ("http_accept", "request_Accept"),
            ("sent_http_mcp_session_id", "downstream_Mcp-Session-Id"),
            ("sent_http_content_type", "downstream_Content-Type"),
        ] {
            if !s(nginx).is_empty() {
                t[traefik] = s(nginx).into();
            }
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    let doc = analyze(&path);
    assert_eq!(doc["inputs"][0]["format"], "traefik-log");
    assert_eq!(conclusions(&doc), original());
}

/// The seed log with the upstream of the resume (the GET carrying Last-Event-ID 41) replaced.
fn resumed_on(name: &str, upstream: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("log-formats-{name}.jsonl"));
    let mut out = String::new();
    for line in std::fs::read_to_string(SEED_LOG).unwrap().lines() {
        let mut r: Map<String, Value> = serde_json::from_str(line).unwrap();
        if r["http_last_event_id"] == "41" {
            r.insert("upstream_addr".into(), upstream.into());
        }
        out.push_str(&serde_json::to_string(&r).unwrap());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn a_resume_served_by_another_replica_crossed_namespaces() {
    let doc = analyze(&resumed_on("other-replica", "127.0.0.1:9001"));
    let crossed: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "cross_namespace_replay")
        .collect();
    assert_eq!(crossed.len(), 1, "{:?}", kinds(&doc));
    let e = &crossed[0]["evidence"];
    assert_eq!(e["resume_upstream"], "127.0.0.1:9001");
    assert_eq!(
        e["minting_upstreams"],
        serde_json::json!(["127.0.0.1:9000"])
    );
    assert_eq!(e["observed_in"], "get:s4");
    assert_eq!(doc["sessions"][0]["resumption"]["verdict"], "unsafe");
    // Served by the same replica as the streams, a log shows no crossing.
    let same = analyze(&resumed_on("same-replica", "127.0.0.1:9000"));
    assert!(!kinds(&same).contains(&"cross_namespace_replay".to_string()));
    // Refused by the other replica (404): nothing was replayed, so nothing crossed.
    let refused = analyze(&refused_on("other-replica-404", "127.0.0.1:9001"));
    assert!(
        !kinds(&refused).contains(&"cross_namespace_replay".to_string()),
        "{:?}",
        kinds(&refused)
    );
}

/// [`resumed_on`], the resume answered 404 by `upstream`.
fn refused_on(name: &str, upstream: &str) -> PathBuf {
    let path = resumed_on(name, upstream);
    let mut out = String::new();
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let mut r: Map<String, Value> = serde_json::from_str(line).unwrap();
        if r["http_last_event_id"] == "41" {
            let status = match r["status"] {
                Value::String(_) => Value::from("404"),
                _ => Value::from(404),
            };
            r.insert("status".into(), status);
        }
        out.push_str(&serde_json::to_string(&r).unwrap());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn a_text_log_in_a_combined_format_with_mcp_fields_gives_the_same_analysis() {
    let format = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $msec $request_time "$http_mcp_session_id" "$sent_http_mcp_session_id" "$http_last_event_id" "$sent_http_content_type""#;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("log-formats-combined.log");
    let mut out = String::new();
    for line in std::fs::read_to_string(SEED_LOG).unwrap().lines() {
        let r: Map<String, Value> = serde_json::from_str(line).unwrap();
        let s = |k: &str| r[k].as_str().unwrap().to_string();
        out.push_str(&format!(
            "{} - - [30/Nov/2026:04:36:05 +0000] \"{} {} {}\" {} {} \"-\" \"{}\" {} {} \"{}\" \"{}\" \"{}\" \"{}\"\n",
            s("remote_addr"),
            s("request_method"),
            s("request_uri"),
            s("server_protocol"),
            s("status"),
            s("body_bytes_sent"),
            s("http_user_agent"),
            s("msec"),
            s("request_time"),
            s("http_mcp_session_id"),
            s("sent_http_mcp_session_id"),
            s("http_last_event_id"),
            s("sent_http_content_type"),
        ));
    }
    std::fs::write(&path, out).unwrap();
    let run = Command::new(bin())
        .args(["analyze", "--format", "json", "--log-format", format])
        .arg(&path)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(conclusions(&doc), original());
    // A line that does not follow the format is skipped and named, not guessed at.
    std::fs::write(&path, "garbage\n").unwrap();
    let run = Command::new(bin())
        .args(["analyze", "--format", "json", "--log-format", "combined"])
        .arg(&path)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&run.stdout).unwrap_or(Value::Null);
    let warnings = doc["inputs"][0]["warnings"].to_string();
    assert!(
        warnings.contains("does not follow --log-format"),
        "{warnings}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_har_whose_timings_stop_at_sending_does_not_claim_how_long_the_client_waited() {
    // mitmproxy records the aborted POST of tools/call 7 with only its send time (0.3 ms); the
    // client waited 1.5 s.
    let doc = analyze(Path::new("samples/seed-incident.mitmproxy.har"));
    let fallback = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "sse_fallback")
        .expect("the fallback is found");
    let trigger = fallback["evidence"]["trigger"].as_str().unwrap();
    assert!(!trigger.contains("0.0 s"), "{trigger}");
    assert!(trigger.contains("does not say"), "{trigger}");
}

const HAPROXY_SEED: &str = "samples/haproxy-seed.jsonl";

/// HAProxy's log of the seed incident with its timer keys renamed by `rename` (None drops one).
fn haproxy_as(name: &str, rename: &dyn Fn(&str) -> Option<&'static str>) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("log-formats-haproxy-{name}.jsonl"));
    let mut out = String::new();
    for line in std::fs::read_to_string(HAPROXY_SEED).unwrap().lines() {
        let rec: Map<String, Value> = serde_json::from_str(line).unwrap();
        let mut new = Map::new();
        for (k, v) in rec {
            let key = if k.starts_with("time_") {
                rename(&k).map(str::to_string)
            } else {
                Some(k)
            };
            if let Some(key) = key {
                new.insert(key, v);
            }
        }
        out.push_str(&serde_json::to_string(&new).unwrap());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    path
}

/// The human report's timeline and findings: every time and every "after N s" it states.
fn story(path: &Path) -> String {
    let out = Command::new(bin())
        .args(["analyze", "--color", "never"])
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let at = text.find("INCIDENT").expect("an incident");
    text[at..].to_string()
}

#[test]
fn haproxy_timers_are_read_under_codes_names_and_unit_suffixes() {
    let original = story(Path::new(HAPROXY_SEED));
    assert!(original.contains("POST abandoned by the client after 1.5 s"));
    // HAProxy's own codes, and a total in a key that names its unit.
    let codes = haproxy_as("codes", &|k| match k {
        "time_active" => Some("Ta"),
        "time_response" => Some("Tr"),
        "time_request" => Some("TR"),
        "time_wait" => Some("Tw"),
        "time_connect" => Some("Tc"),
        "time_total" => Some("time_total_ms"),
        _ => None,
    });
    assert_eq!(story(&codes), original);
    let doc = analyze(&codes);
    assert_eq!(read_as(&doc)["Ta"], "timer %Ta in ms");
    assert_eq!(read_as(&doc)["TR"], "timer %TR in ms");
    assert_eq!(read_as(&doc)["Tr"], "timer %Tr in ms");
    // Only the total, from the request's start: the same story, said to be estimated.
    let total = haproxy_as("total", &|k| (k == "time_total").then_some("time_total_ms"));
    assert_eq!(story(&total), original);
    let warnings = analyze(&total)["inputs"][0]["warnings"].to_string();
    assert!(
        warnings.contains("18 requests ended exactly: estimated from HAProxy's total time (%Tt)"),
        "{warnings}"
    );
    // No timer at all: each end is its start, and the report says so.
    let none = haproxy_as("none", &|_| None);
    let warnings = analyze(&none)["inputs"][0]["warnings"].to_string();
    assert!(
        warnings.contains("no duration on the line, so each end is taken as its start"),
        "{warnings}"
    );
}

#[test]
fn traefik_without_its_start_fields_ends_at_the_line_time() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("log-formats-traefik-no-start.jsonl");
    let mut out = String::new();
    for line in std::fs::read_to_string("samples/traefik-seed.jsonl")
        .unwrap()
        .lines()
    {
        let mut r: Map<String, Value> = serde_json::from_str(line).unwrap();
        let start = r["StartUTC"].as_str().unwrap().to_string();
        let took = r["Duration"].as_i64().unwrap();
        let end_ns = i64::try_from(mcpf_time(&start)).unwrap() + took;
        r.remove("StartUTC");
        r.remove("StartLocal");
        r.insert("time".into(), rfc3339(end_ns).into());
        out.push_str(&serde_json::to_string(&r).unwrap());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    let doc = analyze(&path);
    assert_eq!(doc["inputs"][0]["format"], "traefik-log");
    let seed = analyze(Path::new("samples/traefik-seed.jsonl"));
    assert_eq!(conclusions(&doc), conclusions(&seed));
    assert_eq!(story(&path), story(Path::new("samples/traefik-seed.jsonl")));
}

/// Nanoseconds since the epoch of an RFC 3339 UTC time with nine fractional digits.
fn mcpf_time(s: &str) -> i128 {
    let (date, time) = s.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2];
    let frac: i64 = format!("{frac:0<9}")[..9].parse().unwrap();
    i128::from(secs) * 1_000_000_000 + i128::from(frac)
}

#[test]
fn nginx_without_request_time_ends_by_the_upstream_time_and_says_so() {
    let upstream_only = |k: &str| match k {
        "request_time" => Some("upstream_response_time".to_string()),
        "upstream_response_time" => None,
        other => Some(other.to_string()),
    };
    let path = rewrite("upstream-time", &upstream_only, &|_, _| {});
    let doc = analyze(&path);
    assert_eq!(conclusions(&doc), original());
    let warnings = doc["inputs"][0]["warnings"].to_string();
    assert!(
        warnings.contains("ended exactly: estimated from nginx's $upstream_response_time"),
        "{warnings}"
    );
}

/// Output of `analyze` (or `report`) with `args`.
fn output(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn log_lines_and_har_entries_are_called_so_in_every_format() {
    for (file, unit, many) in [
        ("samples/haproxy-seed.jsonl", "line", "lines"),
        ("samples/seed-incident.mitmproxy.har", "entry", "entries"),
    ] {
        let table = output(&["analyze", "--color", "never", file]);
        let findings = &table[table.find("INCIDENT").unwrap()..table.find("TIMELINE").unwrap()];
        assert!(
            findings.contains(&format!("  {many} ")),
            "{file}: {findings}"
        );
        assert!(!findings.contains(" frames "), "{file}: {findings}");
        let markdown = output(&["analyze", "--format", "markdown", file]);
        assert!(markdown.contains(&format!("| {many} ")), "{file}: markdown");
        assert!(
            markdown.contains(&format!("| {unit} 1 |")),
            "{file}: markdown timeline"
        );
        let html = output(&["analyze", "--format", "html", file]);
        assert!(
            html.contains(&format!("\"filter\">{many} ")),
            "{file}: html"
        );
        assert!(!html.contains("Wireshark: <code></code>"), "{file}: html");
        let doc = analyze(Path::new(file));
        assert_eq!(doc["inputs"][0]["unit"], unit, "{file}: json");
        let saved = std::env::temp_dir().join(format!("mcpf-units-{unit}.json"));
        std::fs::write(&saved, doc.to_string()).unwrap();
        let again = output(&["report", "--color", "never", saved.to_str().unwrap()]);
        assert!(again.contains(&format!("  {many} ")), "{file}: report");
        let _ = std::fs::remove_file(&saved);
    }
    // A capture keeps its frames.
    let table = output(&[
        "analyze",
        "--color",
        "never",
        "samples/seed-incident-client-leg.pcap",
    ]);
    assert!(table.contains("  frames "));
}

#[test]
fn the_output_files_extension_names_the_format_unless_format_does() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    for (name, starts) in [
        ("out.html", "<!DOCTYPE html>"),
        ("out.json", "{"),
        ("out.md", "# "),
        ("out.txt", "mcp-forensics "),
    ] {
        let path = dir.join(name);
        let out = Command::new(bin())
            .args(["analyze", "-q", "-o"])
            .arg(&path)
            .arg(SEED_LOG)
            .output()
            .unwrap();
        assert!(out.status.code().is_some_and(|c| c <= 1), "{name}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(starts),
            "{name}: {}",
            &text[..text.len().min(80)]
        );
    }
    // --format (or -f) says otherwise.
    let path = dir.join("forced.html");
    Command::new(bin())
        .args(["analyze", "-q", "-f", "json", "-o"])
        .arg(&path)
        .arg(SEED_LOG)
        .output()
        .unwrap();
    assert!(std::fs::read_to_string(&path).unwrap().starts_with('{'));
}
