//! The call profile (`--profile`, and `profile` in JSON and NDJSON): calls per method counted
//! against what the clients of the real samples wrote down, latencies against the request and
//! answer times the report itself gives, and every way a call fails on a HAR built for it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn analyze(args: &[&str]) -> (String, Option<i32>) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .arg("analyze")
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (String::from_utf8(out.stdout).unwrap(), out.status.code())
}

fn json_of(args: &[&str]) -> Value {
    let mut all = vec!["-f", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&analyze(&all).0).unwrap()
}

/// Requests with an ID by method, as the client of a sample wrote them down.
fn truth_requests(requests: &Value) -> BTreeMap<String, u64> {
    let mut by = BTreeMap::new();
    for r in requests.as_array().unwrap() {
        if r["jsonrpc"]["id"].is_null() {
            continue;
        }
        *by.entry(r["jsonrpc"]["method"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    by
}

/// The profile's calls by method (a tool's row counted under `tools/call`).
fn profiled(doc: &Value) -> BTreeMap<String, u64> {
    let mut by = BTreeMap::new();
    for row in doc["profile"].as_array().unwrap() {
        let method = row["method"].as_str().unwrap();
        let method = method.split(' ').next().unwrap().to_string();
        *by.entry(method).or_default() += row["calls"].as_u64().unwrap();
    }
    by
}

#[test]
fn calls_are_those_the_clients_wrote_down() {
    let healthy: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("samples/python-sdk-healthy.truth.json")).unwrap(),
    )
    .unwrap();
    let doc = json_of(&["samples/python-sdk-healthy.pcap"]);
    assert_eq!(profiled(&doc), truth_requests(&healthy["http_requests"]));
    assert!(
        doc["profile"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["errors"] == 0 && r["no_answer_seen"] == 0),
        "{:#}",
        doc["profile"]
    );
    let seed: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("samples/seed-incident.truth.json")).unwrap(),
    )
    .unwrap();
    let doc = json_of(&["samples/seed-incident-client-leg.pcap"]);
    assert_eq!(
        profiled(&doc),
        truth_requests(&seed["client"]["http_requests"])
    );
    // The request the incident left hanging is the one without an answer.
    let rows = doc["profile"].as_array().unwrap();
    let reindex = rows
        .iter()
        .find(|r| r["method"] == "tools/call reindex")
        .unwrap();
    assert_eq!(
        (
            reindex["calls"].as_u64(),
            reindex["no_answer_seen"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert!(reindex["latency"].is_null());
    // Both legs: the logical session is counted once, at its own vantage point.
    let both = json_of(&[
        "samples/seed-incident-client-leg.pcap",
        "samples/seed-incident-server-leg.pcap",
    ]);
    assert_eq!(profiled(&both), profiled(&doc));
}

/// Each request's latency, from the report's own streams and events: the request's time to
/// the first answer after it.
fn latencies_from_events(doc: &Value) -> Vec<f64> {
    let t = |v: &Value| chrono_like(v.as_str().unwrap());
    let mut out = Vec::new();
    for s in doc["sessions"].as_array().unwrap() {
        for st in s["streams"].as_array().unwrap() {
            for id in st["requests"].as_array().unwrap() {
                let opened = t(&st["opened"]);
                let answer = doc["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["session"] == s["key"] || e["session"] == s["id"])
                    .filter(|e| {
                        e["jsonrpc"].as_array().is_some_and(|m| {
                            m.iter().any(|m| m["kind"] == "response" && m["id"] == *id)
                        })
                    })
                    .map(|e| t(&e["time"]))
                    .filter(|&at| at >= opened)
                    .fold(f64::INFINITY, f64::min);
                if answer.is_finite() {
                    out.push(((answer - opened) * 1e6).round() / 1e3);
                }
            }
        }
    }
    out
}

/// Seconds since midnight of an RFC 3339 UTC time with microseconds (the report's own).
fn chrono_like(text: &str) -> f64 {
    let clock = text.split('T').nth(1).unwrap().trim_end_matches('Z');
    let mut parts = clock.split(':');
    let h: f64 = parts.next().unwrap().parse().unwrap();
    let m: f64 = parts.next().unwrap().parse().unwrap();
    let s: f64 = parts.next().unwrap().parse().unwrap();
    h * 3600.0 + m * 60.0 + s
}

#[test]
fn latencies_are_from_each_request_to_its_first_answer() {
    for sample in [
        "samples/python-sdk-healthy.pcap",
        "samples/seed-incident-client-leg.pcap",
        "samples/python-sdk-resume-many.pcap",
    ] {
        let doc = json_of(&["-e", sample]);
        let mut expected = latencies_from_events(&doc);
        expected.sort_by(f64::total_cmp);
        let rows = doc["profile"].as_array().unwrap();
        let answered: u64 = rows
            .iter()
            .filter_map(|r| r["latency"]["answered"].as_u64())
            .sum();
        assert_eq!(answered as usize, expected.len(), "{sample}");
        let max = rows
            .iter()
            .filter_map(|r| r["latency"]["max_ms"].as_f64())
            .fold(0.0, f64::max);
        assert!(
            (max - expected.last().unwrap()).abs() < 0.002,
            "{sample}: {max} against {expected:?}"
        );
        for r in rows.iter().filter(|r| !r["latency"].is_null()) {
            let l = &r["latency"];
            let ordered = [&l["p50_ms"], &l["p95_ms"], &l["p99_ms"], &l["max_ms"]]
                .map(|v| v.as_f64().unwrap());
            assert!(ordered.windows(2).all(|w| w[0] <= w[1]), "{sample}: {l}");
            assert_eq!(l["approximate"], false);
        }
    }
}

fn entry(at_ms: u64, body: Value, status: u16, answer: Option<Value>) -> Value {
    let started = format!("2026-12-01T10:00:{:02}.{:03}Z", at_ms / 1000, at_ms % 1000);
    let content = match &answer {
        Some(a) => json!({"mimeType": "application/json", "text": a.to_string()}),
        None => json!({"mimeType": "text/plain", "text": "upstream failed"}),
    };
    json!({
        "startedDateTime": started,
        "time": 250,
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:8931/mcp",
            "httpVersion": "HTTP/1.1",
            "headers": [
                {"name": "Content-Type", "value": "application/json"},
                {"name": "Accept", "value": "application/json, text/event-stream"},
                {"name": "Mcp-Session-Id", "value": "5e55-10n"}
            ],
            "postData": {"mimeType": "application/json", "text": body.to_string()}
        },
        "response": {
            "status": status,
            "httpVersion": "HTTP/1.1",
            "headers": [
                {"name": "Content-Type", "value": content["mimeType"]},
                {"name": "Mcp-Session-Id", "value": "5e55-10n"}
            ],
            "content": content
        },
        "timings": {"send": 0, "wait": 250, "receive": 0},
        "serverIPAddress": "127.0.0.1"
    })
}

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

/// A HAR of one session whose calls fail in every way a profile counts.
fn failing_har() -> Value {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let init_ok = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}});
    let ok = |id: u64| json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "done"}]}});
    let tool_error = |id: u64| json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "disk full"}], "isError": true}});
    let rpc_error = |id: u64, code: i64| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "failed"}});
    let entries = vec![
        entry(0, init, 200, Some(init_ok)),
        entry(1000, call(2, "reindex"), 200, Some(ok(2))),
        entry(2000, call(3, "reindex"), 200, Some(tool_error(3))),
        entry(3000, call(4, "reindex"), 200, Some(rpc_error(4, -32603))),
        entry(4000, call(5, "reindex"), 502, None),
        entry(5000, call(6, "lookup"), 200, Some(rpc_error(6, -32602))),
    ];
    json!({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}})
}

#[test]
fn errors_are_counted_by_jsonrpc_code_is_error_and_http_status() {
    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("failing.har");
    std::fs::write(&har, failing_har().to_string()).unwrap();
    let path = har.to_str().unwrap();
    let doc = json_of(&[path]);
    let rows = doc["profile"].as_array().unwrap();
    let reindex = rows
        .iter()
        .find(|r| r["method"] == "tools/call reindex")
        .unwrap_or_else(|| panic!("{:#}", doc["profile"]));
    assert_eq!(reindex["calls"], 4);
    assert_eq!(reindex["errors"], 3);
    assert_eq!(reindex["tool_errors"], 1);
    assert_eq!(
        reindex["jsonrpc_errors"],
        json!([{"code": -32603, "count": 1}])
    );
    assert_eq!(reindex["http_errors"], json!([{"status": 502, "count": 1}]));
    // The 502 answered it: not counted as without an answer.
    assert_eq!(reindex["no_answer_seen"], 0);
    assert_eq!(reindex["latency"]["answered"], 3);
    let lookup = rows
        .iter()
        .find(|r| r["method"] == "tools/call lookup")
        .unwrap();
    assert_eq!(
        lookup["jsonrpc_errors"],
        json!([{"code": -32602, "count": 1}])
    );

    // The table's section says the same in one row per method, fitted to the width.
    let (table, _) = analyze(&["--profile", "--color", "never", "--no-pager", path]);
    let section: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("CALL PROFILE"))
        .take_while(|l| !l.is_empty())
        .collect();
    let row = section
        .iter()
        .find(|l| l.contains("tools/call reindex"))
        .unwrap_or_else(|| panic!("{}", section.join("\n")));
    for want in ["3: -32603×1 isError×1 HTTP 502×1", "250 ms"] {
        assert!(row.contains(want), "{want:?} not in {row}");
    }
    assert!(section[0].contains("127.0.0.1:8931 /mcp"), "{section:?}");
    // Without --profile the table has no such section; NDJSON has the rows as records.
    assert!(
        !analyze(&["--color", "never", path])
            .0
            .contains("CALL PROFILE")
    );
    let (ndjson, _) = analyze(&["-f", "ndjson", path]);
    let records: Vec<Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "profile")
        .collect();
    assert_eq!(records.len(), rows.len());
    for width in ["60", "80", "100"] {
        let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
            .args(["analyze", "--profile", "--color", "never", path])
            .env("COLUMNS", width)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let w: usize = width.parse().unwrap();
        assert!(
            text.lines().all(|l| l.chars().count() <= w),
            "wider than {width}:\n{text}"
        );
    }
}
