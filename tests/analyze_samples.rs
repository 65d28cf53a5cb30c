//! `mcp-forensics analyze` end to end on the real captures under samples/: the findings each
//! sample must produce (and must not), their evidence, their causal chain, and the exit code.

use assert_cmd::Command;
use serde_json::Value;

fn analyze(args: &[&str]) -> (Value, i32) {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .arg("analyze")
        .arg("--format")
        .arg("json")
        .args(args)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (doc, out.status.code().unwrap_or(-1))
}

fn kinds(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

fn finding<'a>(doc: &'a Value, kind: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {:?}", kinds(doc)))
}

fn max_severity_rank(doc: &Value) -> usize {
    let order = ["critical", "high", "medium", "low", "info"];
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| order.iter().position(|s| *s == f["severity"]).unwrap())
        .min()
        .unwrap_or(order.len())
}

/// The seed incident, client leg: the fallback, the unsafe resumption, the cross-namespace
/// replay, the duplicate response, the skipped range and the unanswered request, in that order
/// and chained by caused_by.
#[test]
fn seed_incident_client_leg_tells_the_whole_story_in_order() {
    let (doc, code) = analyze(&["samples/seed-incident-client-leg.pcap"]);
    assert_eq!(code, 1, "high and critical findings exit 1");
    let wanted = [
        "sse_fallback",
        "unsafe_resumption_after_fallback",
        "cross_namespace_replay",
        "duplicate_response",
        "skipped_events",
        "unanswered_request",
    ];
    let got = kinds(&doc);
    let positions: Vec<usize> = wanted
        .iter()
        .map(|k| {
            got.iter()
                .position(|g| g == k)
                .unwrap_or_else(|| panic!("{k} missing from {got:?}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "order {got:?}");

    let id = |kind: &str| finding(&doc, kind)["id"].clone();
    let caused = |kind: &str| finding(&doc, kind)["caused_by"].clone();
    assert_eq!(
        caused("unsafe_resumption_after_fallback"),
        serde_json::json!([id("sse_fallback")])
    );
    // The split counter, stated once: the reset the client saw after the fallback, with the
    // IDs both counters minted and the resume that crossed them; no separate collision.
    let mut causes: Vec<String> = caused("cross_namespace_replay")
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    causes.sort();
    let mut want = vec![
        id("event_id_reset").as_str().unwrap().to_string(),
        id("unsafe_resumption_after_fallback")
            .as_str()
            .unwrap()
            .to_string(),
    ];
    want.sort();
    assert_eq!(causes, want);
    assert!(!got.iter().any(|k| k == "event_id_collision"), "{got:?}");
    let reset = finding(&doc, "event_id_reset");
    assert_eq!(reset["severity"], "high");
    assert_eq!(reset["evidence"]["ids_minted_twice"], 24);
    assert_eq!(
        reset["evidence"]["crossed_by"],
        serde_json::json!(["get:s17"])
    );
    assert_eq!(
        caused("duplicate_response"),
        serde_json::json!([id("cross_namespace_replay")])
    );
    assert_eq!(
        caused("skipped_events"),
        serde_json::json!([id("cross_namespace_replay")])
    );
    assert_eq!(
        caused("unanswered_request"),
        serde_json::json!([id("skipped_events")])
    );

    let fb = &finding(&doc, "sse_fallback")["evidence"];
    assert_eq!(fb["request_id"], 7);
    assert_eq!(fb["confirmed_by_messages_on_new_stream"], true);
    let unsafe_ = &finding(&doc, "unsafe_resumption_after_fallback")["evidence"];
    assert_eq!(unsafe_["last_event_id"], "41");
    assert_eq!(unsafe_["event_id_scheme"], "integer");
    let replay = finding(&doc, "cross_namespace_replay");
    assert_eq!(replay["severity"], "critical");
    let ev = &replay["evidence"];
    assert_eq!(ev["last_event_id"], "41");
    assert!(ev["observed_in"].as_str().unwrap().starts_with("get:"));
    assert!(ev["replayed_from"].as_str().unwrap().starts_with("post:"));
    assert_eq!(ev["replayed_event_ids"], serde_json::json!(["42"]));
    assert!(
        ev["also_minted_by"]
            .as_array()
            .unwrap()
            .contains(&ev["replayed_from"])
    );
    let dup = &finding(&doc, "duplicate_response")["evidence"];
    assert_eq!(dup["request_id"], 19, "request IDs keep their JSON type");
    assert_eq!(dup["first"]["event_id"], "42");
    assert_eq!(dup["duplicate"]["event_id"], "42");
    assert_eq!(dup["same_payload"], true);
    let skipped = &finding(&doc, "skipped_events")["evidence"];
    assert_eq!(skipped["namespace"], ev["observed_in"]);
    assert_eq!(skipped["from"], "42");
    assert_eq!(skipped["to"], Value::Null);
    let unanswered = finding(&doc, "unanswered_request");
    assert_eq!(unanswered["severity"], "high");
    assert_eq!(unanswered["evidence"]["request_id"], 7);
    assert_eq!(unanswered["evidence"]["method"], "tools/call");
    assert!(unanswered["evidence"]["waited_s"].as_f64().unwrap() > 10.0);

    // Evidence a person can check: frames (1-based), times, the exchange.
    assert_eq!(
        replay["frames"],
        serde_json::json!([114, 142, 148, 152]),
        "first delivery of 42, the 41 the client saw, the resume, the replay"
    );
    assert!(replay["time"].as_str().unwrap().ends_with('Z'));
    let session = &doc["sessions"][0];
    assert_eq!(session["resumption"]["verdict"], "unsafe");
    assert_eq!(session["event_id_scheme"], "integer");
    assert_eq!(session["protocol_version"], "2025-06-18");
    assert!(session["fell_back"].is_object());
}

/// The same incident seen from the server leg behind nginx tells the same story.
#[test]
fn seed_incident_server_leg_shows_the_same_replay() {
    let (doc, code) = analyze(&["samples/seed-incident-server-leg.pcap"]);
    assert_eq!(code, 1);
    let got = kinds(&doc);
    for k in [
        "sse_fallback",
        "unsafe_resumption_after_fallback",
        "cross_namespace_replay",
        "duplicate_response",
        "skipped_events",
        "unanswered_request",
    ] {
        assert!(got.iter().any(|g| g == k), "{k} missing from {got:?}");
    }
    // Upstream saw events until 0.85 s, then nginx closed when its client gave up at 1.5 s
    // (frame 64): the abandonment is dated by that FIN, not by the last event.
    let fb = finding(&doc, "sse_fallback");
    assert!(
        fb["summary"].as_str().unwrap().contains("after 1.5 s"),
        "{}",
        fb["summary"]
    );
    assert!(
        fb["frames"].as_array().unwrap().contains(&Value::from(64)),
        "{}",
        fb["frames"]
    );
}

/// Both legs together: one logical session seen at two vantage points, stated once on the leg
/// nearer the client (whichever input comes first), each finding once.
#[test]
fn both_legs_are_two_vantage_points_of_one_session() {
    for files in [
        [
            "samples/seed-incident-client-leg.pcap",
            "samples/seed-incident-server-leg.pcap",
        ],
        [
            "samples/seed-incident-server-leg.pcap",
            "samples/seed-incident-client-leg.pcap",
        ],
    ] {
        let (doc, _) = analyze(&files);
        let sessions = doc["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "{files:?}");
        let s = &sessions[0];
        assert!(
            s["server"].as_str().unwrap().ends_with(":8080"),
            "{files:?}"
        );
        let points = s["vantage_points"].as_array().unwrap();
        assert_eq!(points.len(), 2, "{files:?}");
        assert_eq!(points[0]["observation"], s["key"], "its own first");
        assert!(points[1]["server"].as_str().unwrap().ends_with(":9000"));
        let got = kinds(&doc);
        let mut once = got.clone();
        once.sort();
        once.dedup();
        assert_eq!(got.len(), once.len(), "each finding once: {got:?}");
        // The hop finding cites frames at both vantage points.
        let lost = finding(&doc, "lost_in_transit");
        let seen = lost["seen_at"].as_array().unwrap();
        assert_eq!(seen.len(), 1, "{lost}");
        assert_ne!(
            seen[0]["frame_refs"][0]["input"],
            lost["frame_refs"][0]["input"]
        );
        let inputs: Vec<&Value> = lost["display_filters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| &f["input"])
            .collect();
        assert_eq!(inputs.len(), 2, "a filter for each input: {lost}");
    }
}

/// Negative control: namespaced IDs make the same fallback and resume safe.
#[test]
fn namespaced_ids_are_safe() {
    let (doc, code) = analyze(&["samples/namespaced-ids-client-leg.pcap"]);
    assert_eq!(code, 0, "{:?}", kinds(&doc));
    assert!(
        max_severity_rank(&doc) >= 4,
        "nothing above info: {:?}",
        kinds(&doc)
    );
    assert_eq!(doc["sessions"][0]["resumption"]["verdict"], "safe");
    assert_eq!(doc["sessions"][0]["event_id_scheme"], "namespaced");
    assert_eq!(kinds(&doc), vec!["sse_fallback"]);
}

/// Negative control: a real TypeScript SDK resumption (event store, namespaced IDs).
#[test]
fn typescript_sdk_resumption_is_safe() {
    let (doc, code) = analyze(&["samples/ts-sdk-resumption.pcap"]);
    assert_eq!(code, 0, "{:?}", kinds(&doc));
    assert!(
        max_severity_rank(&doc) >= 4,
        "nothing above info: {:?}",
        kinds(&doc)
    );
    let s = &doc["sessions"][0];
    assert_eq!(s["resumption"]["verdict"], "safe");
    assert_eq!(s["event_id_scheme"], "namespaced");
    let resume = s["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|st| st["resume"].is_object())
        .expect("a resume stream");
    assert!(
        resume["resume"]["continues"]
            .as_str()
            .unwrap()
            .starts_with("post:")
    );
}

/// Negative control: a healthy official Python SDK session.
#[test]
fn python_sdk_healthy_session_has_no_finding() {
    for file in [
        "samples/python-sdk-healthy.pcap",
        "samples/python-sdk-healthy.pcapng",
        "samples/python-sdk-healthy-any.pcap",
    ] {
        let (doc, code) = analyze(&[file]);
        assert_eq!(code, 0, "{file}: {:?}", kinds(&doc));
        assert!(max_severity_rank(&doc) >= 4, "{file}: {:?}", kinds(&doc));
        let s = &doc["sessions"][0];
        assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{file}");
        assert_eq!(s["resumption"]["verdict"], "not_attempted");
        assert_eq!(s["protocol_version"], "2025-11-25");
        assert!(s["deleted"].is_string(), "DELETE ends the session");
    }
}

/// The legacy HTTP+SSE transport reached through the 4xx fallback at connect.
#[test]
fn legacy_transport_after_fallback_at_connect() {
    let (doc, code) = analyze(&["samples/legacy-sse-fallback.pcap"]);
    assert_eq!(code, 0, "{:?}", kinds(&doc));
    let s = &doc["sessions"][0];
    assert_eq!(s["transport"], "legacy-sse");
    let fb = &finding(&doc, "sse_fallback")["evidence"];
    assert_eq!(fb["to_transport"], "legacy-sse");
    assert!(fb["trigger"].as_str().unwrap().contains("405"));
    assert!(
        !kinds(&doc).contains(&"request_id_reused".to_string()),
        "a refused initialize does not count"
    );
}

/// The lossy capture: the two dropped segments are reported as capture gaps of their exact
/// sizes, findings resting on them say their confidence is reduced.
#[test]
fn lossy_capture_reports_gaps_and_reduced_confidence() {
    let (doc, _) = analyze(&["samples/lossy.pcap"]);
    assert_eq!(doc["summary"]["gap_bytes"], 97 + 198);
    let gaps: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "capture_gap")
        .collect();
    assert!(!gaps.is_empty());
    for f in doc["findings"].as_array().unwrap() {
        if f["kind"] != "capture_gap" && f["evidence"]["request_id"].is_number() {
            assert_eq!(f["confidence"], "reduced", "{f}");
        }
    }
}

#[test]
fn fail_on_and_filters_drive_the_exit_code() {
    let (_, code) = analyze(&[
        "--fail-on",
        "critical",
        "samples/seed-incident-client-leg.pcap",
    ]);
    assert_eq!(code, 1);
    // A --session that names no session is a mistake, said and exited 2 (issue 15); the report
    // written is empty.
    let (doc, code) = analyze(&["--session", "S9", "samples/seed-incident-client-leg.pcap"]);
    assert_eq!(code, 2, "--session S9 names nothing");
    assert!(doc["sessions"].as_array().unwrap().is_empty());
    let (doc, _) = analyze(&[
        "--min-severity",
        "critical",
        "samples/seed-incident-client-leg.pcap",
    ]);
    assert_eq!(kinds(&doc), vec!["cross_namespace_replay"]);
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "samples/does-not-exist.pcap"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("samples/does-not-exist.pcap: no such file"),
        "{err}"
    );
}

#[test]
fn events_flag_labels_every_event_with_its_namespace() {
    let (doc, _) = analyze(&["--events", "samples/seed-incident-client-leg.pcap"]);
    let events = doc["events"].as_array().unwrap();
    let replayed = events
        .iter()
        .find(|e| e["stream"] != e["namespace"] && e["namespace"] != "unknown")
        .expect("the replayed event");
    assert_eq!(replayed["id"], "42");
    assert!(replayed["namespace"].as_str().unwrap().starts_with("post:"));
    for e in events {
        for key in [
            "session",
            "stream",
            "transport",
            "namespace",
            "id",
            "time",
            "frame",
            "jsonrpc",
        ] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
    }
}

/// An access log alone still shows the fallback and the unsafe resumption, infers the integer
/// scheme from the logged Last-Event-ID, and says what it cannot determine.
#[test]
fn nginx_access_log_alone() {
    let (doc, code) = analyze(&["samples/seed-incident.nginx.jsonl"]);
    assert_eq!(code, 1);
    let got = kinds(&doc);
    assert_eq!(
        got,
        vec!["sse_fallback", "unsafe_resumption_after_fallback"]
    );
    let s = &doc["sessions"][0];
    assert_eq!(s["event_id_scheme"], "integer");
    assert_eq!(s["event_id_scheme_from"], "last_event_id");
    assert_eq!(s["resumption"]["verdict"], "unsafe");
    let nd: Vec<&str> = s["not_determinable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    for k in [
        "cross_namespace_replay",
        "duplicate_response",
        "skipped_events",
    ] {
        assert!(
            nd.contains(&k),
            "{k} must be reported as not determinable: {nd:?}"
        );
    }
    assert_eq!(doc["inputs"][0]["format"], "nginx-log");
}

/// The proxy's access log beside the capture of the same leg: exchanges matched, not counted
/// twice; the clock offset estimated and reported; both sources named.
#[test]
fn capture_and_access_log_of_the_same_leg_are_one_session() {
    let (doc, _) = analyze(&[
        "samples/seed-incident-client-leg.pcap",
        "samples/seed-incident.nginx.jsonl",
    ]);
    let sessions = doc["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert_eq!(s["sources"].as_array().unwrap().len(), 2);
    let merged = &s["merged_sources"][0];
    // Every line of the log, the initialize included (its request had no session ID yet; the
    // response's did).
    assert_eq!(merged["matched_exchanges"], 18);
    assert_eq!(merged["added_exchanges"], 0);
    assert_eq!(merged["input"], 1);
    assert_eq!(merged["path"], "samples/seed-incident.nginx.jsonl");
    assert!(merged["clock_offset_s"].as_f64().unwrap().abs() < 0.5);
    let got = kinds(&doc);
    assert_eq!(
        got.iter().filter(|k| *k == "sse_fallback").count(),
        1,
        "{got:?}"
    );
    assert_eq!(
        got.iter().filter(|k| *k == "request_id_reused").count(),
        0,
        "{got:?}"
    );
}

/// Both legs of the proxy and the proxy's own log: the log describes the client leg (its 499 is
/// the client's abandoned POST, which upstream answered 200), so it joins that leg's session,
/// whatever the order of the inputs.
#[test]
fn access_log_joins_the_leg_it_describes() {
    for files in [
        [
            "samples/seed-incident-server-leg.pcap",
            "samples/seed-incident-client-leg.pcap",
            "samples/seed-incident.nginx.jsonl",
        ],
        [
            "samples/seed-incident.nginx.jsonl",
            "samples/seed-incident-client-leg.pcap",
            "samples/seed-incident-server-leg.pcap",
        ],
    ] {
        let (doc, _) = analyze(&files);
        let sessions = doc["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "one logical session: {files:?}");
        let with_log: Vec<&Value> = sessions
            .iter()
            .filter(|s| !s["merged_sources"].as_array().unwrap().is_empty())
            .collect();
        assert_eq!(with_log.len(), 1, "{files:?}");
        assert!(
            with_log[0]["server"].as_str().unwrap().ends_with(":8080"),
            "{files:?}"
        );
        assert_eq!(with_log[0]["merged_sources"][0]["matched_exchanges"], 18);
        assert_eq!(with_log[0]["merged_sources"][0]["added_exchanges"], 0);
    }
}

/// A HAR written by mitmproxy in front of the official Python SDK: the same healthy session a
/// capture gives.
#[test]
fn mitmproxy_har_is_a_healthy_session() {
    let (doc, code) = analyze(&["samples/mitmproxy-python-sdk.har"]);
    assert_eq!(code, 0, "{:?}", kinds(&doc));
    assert!(max_severity_rank(&doc) >= 4, "{:?}", kinds(&doc));
    let s = &doc["sessions"][0];
    assert_eq!(s["protocol_version"], "2025-11-25");
    assert_eq!(s["resumption"]["verdict"], "not_attempted");
    assert_eq!(doc["inputs"][0]["format"], "har");
}

/// The arguments a truth file gives for reading `path` (a text log's `--log-format`).
fn truth_args(path: &str) -> Vec<String> {
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("samples/nginx-formats.truth.json").unwrap())
            .unwrap();
    truth["files"][path]["analyze_args"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Every input file under samples/ (captures, HAR files, logs), with the key log that opens it
/// when there is one (the longest `.keys` file whose name begins the sample's) and the options
/// its truth file gives.
fn every_sample() -> Vec<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir("samples")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let keys: Vec<&String> = names.iter().filter(|n| n.ends_with(".keys")).collect();
    let input = |n: &str| {
        [".pcap", ".pcapng", ".har", ".jsonl", ".log", ".gz"]
            .iter()
            .any(|ext| n.ends_with(ext))
    };
    names
        .iter()
        .filter(|n| input(n))
        .map(|n| {
            let key = keys
                .iter()
                .filter(|k| n.starts_with(k.trim_end_matches(".keys")))
                .max_by_key(|k| k.len());
            let mut args = truth_args(&format!("samples/{n}"));
            if let Some(k) = key {
                args.extend(["--tls-keylog".to_string(), format!("samples/{k}")]);
            }
            args.push(format!("samples/{n}"));
            args
        })
        .collect()
}

/// The threads are an implementation detail: the per-connection stages run in the same shards
/// whatever their number, and the session stage sees their events in wire order. Every sample,
/// and several together, gives byte-identical reports for 1, 2, 3 and 8 threads (with as many
/// workers, whatever the cores of the machine running the test), as JSON with the per-event
/// listing and as the terminal report.
#[test]
fn threads_do_not_change_the_report() {
    let run = |threads: &str, extra: &[&str], args: &[String]| {
        Command::cargo_bin("mcp-forensics")
            .unwrap()
            .arg("analyze")
            .args(["--threads", threads, "--workers", threads])
            .args(extra)
            .args(args)
            .output()
            .unwrap()
    };
    let mut cases = every_sample();
    assert!(cases.len() > 50, "samples not found: {}", cases.len());
    cases.push(
        [
            "samples/seed-incident-client-leg.pcap",
            "samples/seed-incident-server-leg.pcap",
            "samples/concurrent-nginx-client-leg.pcap",
            "samples/concurrent-nginx-server-leg.pcap",
            "samples/seed-incident.nginx.jsonl",
            "samples/seed-incident.mitmproxy.har",
        ]
        .map(String::from)
        .to_vec(),
    );
    for args in &cases {
        for extra in [&["--format", "json", "--events"][..], &[]] {
            let one = run("1", extra, args);
            assert!(!one.stdout.is_empty(), "{args:?} {extra:?}: empty report");
            for threads in ["2", "3", "8"] {
                let many = run(threads, extra, args);
                assert!(
                    one.stdout == many.stdout,
                    "{args:?} {extra:?}: --threads 1 and --threads {threads} disagree"
                );
                assert_eq!(one.status.code(), many.status.code());
            }
        }
    }
}

/// An input that cannot be read keeps its place: `inputs` lists every input in command-line
/// order, so every `input` index in the report resolves, and the run exits 4.
#[test]
fn unreadable_input_keeps_its_index() {
    let (doc, code) = analyze(&[
        "samples/does-not-exist.pcap",
        "samples/seed-incident-client-leg.pcap",
    ]);
    assert_eq!(code, 4);
    let inputs = doc["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0]["index"], 0);
    assert_eq!(inputs[0]["path"], "samples/does-not-exist.pcap");
    assert!(inputs[0]["error"].is_string(), "{}", inputs[0]);
    assert_eq!(inputs[1]["index"], 1);
    assert!(inputs[1]["error"].is_null());
    let f = &doc["findings"][0];
    assert_eq!(f["frame_refs"][0]["input"], 1);
    assert_eq!(
        inputs[f["frame_refs"][0]["input"].as_u64().unwrap() as usize]["path"],
        "samples/seed-incident-client-leg.pcap"
    );
}

/// The packets of a connection land where the stage that understood them says: HTTP that is
/// not MCP under `not_mcp`, MCP under analysed, and the ledger still adds up.
#[test]
fn packets_are_accounted_to_the_protocol_their_connection_carried() {
    let skipped = |doc: &Value, reason: &str| {
        doc["inputs"][0]["accounting"]["packets"]["skipped"][reason]
            .as_u64()
            .unwrap_or(0)
    };
    let (doc, _) = analyze(&["samples/not-mcp.pcap"]);
    let packets = &doc["inputs"][0]["accounting"]["packets"];
    let total = packets["total"].as_u64().unwrap();
    assert!(skipped(&doc, "not_mcp") * 10 > total * 9, "{packets}");
    let (doc, _) = analyze(&["samples/python-sdk-healthy.pcap"]);
    let packets = &doc["inputs"][0]["accounting"]["packets"];
    assert_eq!(skipped(&doc, "not_mcp"), 0, "{packets}");
    assert_eq!(packets["analysed"], packets["total"]);
    let (doc, _) = analyze(&["samples/legacy-sse-fallback.pcap"]);
    let packets = &doc["inputs"][0]["accounting"]["packets"];
    assert!(skipped(&doc, "not_http") > 0, "{packets}");
    assert_eq!(skipped(&doc, "not_mcp"), 0, "{packets}");
}
