//! HTTP/2 end to end, on real captures of the official Python SDK client (6 sessions sharing one
//! HTTP/2 connection) through Debian's nginx: over TLS with its key log, and in clear with prior
//! knowledge. nginx speaks HTTP/1.1 to the SDK server, so the server leg is the plaintext
//! equivalent of both: each HTTP/2 leg must give its sessions exactly as the server leg does.

use std::collections::BTreeMap;

use assert_cmd::Command;
use serde_json::Value;

const TLS: &str = "samples/python-sdk-h2-tls.pcap";
const KEYS: &str = "samples/python-sdk-h2-tls.keys";
const H2C: &str = "samples/python-sdk-h2c.pcap";
const SERVER_LEG: &str = "samples/python-sdk-h2-server-leg.pcap";
const TRUTH: &str = "samples/python-sdk-h2.truth.json";

fn run(args: &[&str]) -> (String, String, i32) {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("SSLKEYLOGFILE")
        .env("COLUMNS", "100")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap(),
    )
}

fn analyze(args: &[&str]) -> Value {
    let mut all = vec!["analyze", "--format", "json"];
    all.extend_from_slice(args);
    let (out, err, code) = run(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn truth() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/python-sdk-h2.truth.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect(TRUTH)).unwrap()
}

/// Per session ID, what each of its streams was: a line per stream, sorted.
fn streams_by_session(doc: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for s in doc["sessions"].as_array().unwrap() {
        let mut lines: Vec<String> = s["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|st| {
                format!(
                    "{} {} {} events={} {} by={} {}",
                    st["transport"],
                    st["method"],
                    st["status"],
                    st["events"],
                    st["outcome"],
                    st["closed_by"],
                    st["methods"]
                )
            })
            .collect();
        lines.sort();
        out.insert(s["session_id"].as_str().unwrap().to_string(), lines);
    }
    out
}

fn check_leg(doc: &Value, leg: &str) {
    let truth = truth();
    let want: Vec<&str> = truth[leg]["sessions"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    let got = streams_by_session(doc);
    let mut got_ids: Vec<&str> = got.keys().map(String::as_str).collect();
    let mut want_ids = want.clone();
    got_ids.sort_unstable();
    want_ids.sort_unstable();
    assert_eq!(got_ids, want_ids, "{leg}: the sessions the clients had");
    assert_eq!(
        doc["summary"]["http_exchanges"], truth[leg]["requests"],
        "{leg}: one exchange per HTTP/2 stream, one stream per request the clients sent"
    );
    assert_eq!(
        doc["findings"].as_array().unwrap().len(),
        0,
        "{leg}: healthy traffic"
    );
    let server = streams_by_session(&analyze(&[SERVER_LEG]));
    for id in want {
        assert_eq!(
            got[id], server[id],
            "{leg}: session {id} as the server leg has it"
        );
    }
}

#[test]
fn six_sessions_on_one_tls_http2_connection_are_those_of_the_plaintext_leg() {
    let doc = analyze(&["--tls-keylog", KEYS, TLS]);
    assert_eq!(doc["summary"]["connections"], 1);
    assert_eq!(doc["summary"]["http"]["connections_http2"], 1);
    check_leg(&doc, "tls");
}

#[test]
fn six_sessions_on_one_cleartext_http2_connection_are_those_of_the_plaintext_leg() {
    let doc = analyze(&[H2C]);
    check_leg(&doc, "h2c");
}

#[test]
fn without_its_key_log_the_tls_leg_is_counted_and_nothing_is_invented() {
    let (out, err, code) = run(&["analyze", TLS]);
    assert_eq!(code, 5, "{out}{err}");
    assert!(err.contains("1 TLS connection"), "{err}");
    assert!(
        !out.contains("MCP session") || out.contains("no MCP session"),
        "{out}"
    );
}

#[test]
fn the_key_log_reaches_no_output() {
    let keys = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/python-sdk-h2-tls.keys"
    ))
    .unwrap();
    let secrets: Vec<&str> = keys
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert!(!secrets.is_empty());
    for format in ["table", "json", "markdown", "html"] {
        let (out, err, _) = run(&["analyze", "--format", format, "--tls-keylog", KEYS, TLS]);
        for s in &secrets {
            assert!(
                !out.contains(s) && !err.contains(s),
                "{format}: a secret was printed"
            );
        }
    }
}

#[test]
fn an_upgrade_to_h2c_keeps_its_exchange_and_the_event_stream_on_stream_1() {
    // curl offered `Upgrade: h2c` on every request; Hypercorn took it for the two without a
    // body (the standalone GET and the DELETE), whose responses came in HTTP/2 on stream 1.
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/samples/h2c-upgrade.truth.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let doc = analyze(&["samples/h2c-upgrade.pcap"]);
    assert_eq!(doc["summary"]["http"]["connections_http2"], 2);
    assert_eq!(doc["summary"]["http"]["connections_http"], 4);
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0);
    let sessions = doc["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["session_id"], truth["sessions"][0]);
    let streams = sessions[0]["streams"].as_array().unwrap();
    let requests = truth["requests"].as_array().unwrap();
    assert_eq!(streams.len(), requests.len());
    for (st, r) in streams.iter().zip(requests) {
        // The final status is the HTTP/2 one; the 101 was interim.
        let last = r["status_lines"].as_array().unwrap().last().unwrap();
        let status = last.as_str().unwrap().split(' ').nth(1).unwrap();
        assert_eq!(st["status"].to_string(), status, "{}", r["request"]);
    }
    let get = &streams[2];
    assert_eq!(get["transport"], "get");
    assert_eq!(
        get["events"].as_u64().unwrap() as usize,
        requests[2]["sse_data_lines"].as_array().unwrap().len()
    );
}

#[test]
fn a_key_log_without_the_connections_secret_names_it_and_why() {
    let path = std::env::temp_dir().join(format!("mcpf-h2-other-{}.keys", std::process::id()));
    let other = "CLIENT_RANDOM 00000000000000000000000000000000000000000000000000000000000000ff \
                 000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\n";
    std::fs::write(&path, other).unwrap();
    let keys = path.to_str().unwrap();
    let (out, err, code) = run(&[
        "analyze",
        "--format",
        "json",
        "--tls-keylog",
        keys,
        H2C,
        TLS,
    ]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let s = &doc["summary"];
    // The h2c input's sessions are analysed; the TLS one is counted as TLS, not as nothing.
    assert_eq!(s["sessions"], 6);
    assert_eq!(s["http"]["connections_tls"], 1);
    let listed = s["tls_not_decrypted"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["input"], 1);
    assert!(listed[0]["frame"].as_u64().unwrap() > 0);
    assert_eq!(
        listed[0]["reason"],
        "no secret in the key log for this connection's client random"
    );
}

#[test]
fn nginx_ending_its_connections_with_goaway_refuses_the_streams_above_its_last() {
    // keepalive_requests 8: after each GOAWAY (last stream 15) the SDK client had already
    // opened stream 17, its session's standalone GET; nginx never processed it and httpx2
    // failed the session instead of retrying. Each failed session is one whose GET the
    // server refused; the others have no such stream.
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/samples/python-sdk-h2-goaway.truth.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let doc = analyze(&["samples/python-sdk-h2-goaway.pcap"]);
    // tshark: 7 GOAWAY frames, 4 from nginx and 3 from the client (PROTOCOL_ERROR).
    assert_eq!(doc["summary"]["http"]["h2_goaways"], 7);
    let failed: Vec<&str> = truth["failed_sessions"]
        .as_object()
        .unwrap()
        .keys()
        .map(|tag| truth["sessions"][tag].as_str().unwrap())
        .collect();
    assert!(!failed.is_empty());
    for s in doc["sessions"].as_array().unwrap() {
        let refused = s["streams"]
            .as_array()
            .unwrap()
            .iter()
            .any(|st| st["outcome"] == "refused" && st["closed_by"] == "server");
        let id = s["session_id"].as_str().unwrap();
        assert_eq!(refused, failed.contains(&id), "session {id}");
    }
    // What failed were a notification and event streams, not requests: nothing went
    // unanswered, and no finding says otherwise.
    let above: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert!(above.is_empty(), "{above:#?}");
}
