//! One session seen at several vantage points (issue 28): both legs of a proxy in one capture
//! are compared hop by hop, as two files of them are. The seed incident's two legs are merged
//! here by time into one file, as `tcpdump -i any` on the proxy host writes them.

use std::io::Cursor;

use assert_cmd::Command;
use mcpf_capture::reader::CaptureReader;
use mcpf_capture::writer::PcapWriter;
use mcpf_model::Timestamp;
use serde_json::Value;

/// The frames of a pcap: (time, link type, bytes, original length).
fn frames(path: &str) -> Vec<(Timestamp, i32, Vec<u8>, u32)> {
    let bytes = std::fs::read(path).unwrap();
    let mut r = CaptureReader::open(Box::new(Cursor::new(bytes)), 0).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push((f.time, f.linktype, f.data.to_vec(), f.orig_len));
    }
    out
}

/// The two legs in one pcap, by time (ties: the client leg first), as mergecap writes them.
fn merged(dir: &std::path::Path) -> String {
    let mut all = frames("samples/seed-incident-client-leg.pcap");
    all.extend(frames("samples/seed-incident-server-leg.pcap"));
    all.sort_by_key(|f| f.0);
    let link = all[0].1;
    assert!(
        all.iter().all(|f| f.1 == link),
        "one link type in both legs"
    );
    let mut w = PcapWriter::new(Vec::new(), link, 262_144, false, false).unwrap();
    for (time, _, data, len) in &all {
        w.packet(*time, data, *len).unwrap();
    }
    let path = dir.join("both-legs.pcap");
    std::fs::write(&path, w.into_inner()).unwrap();
    path.to_string_lossy().into_owned()
}

fn analyze(files: &[&str]) -> Value {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "--format", "json"])
        .args(files)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn of_kind<'a>(doc: &'a Value, kind: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

#[test]
fn both_legs_in_one_capture_are_compared_hop_by_hop() {
    let dir = tempfile::tempdir().unwrap();
    let file = merged(dir.path());
    let one = analyze(&[&file]);
    let two = analyze(&[
        "samples/seed-incident-client-leg.pcap",
        "samples/seed-incident-server-leg.pcap",
    ]);
    let (lost_one, lost_two) = (
        of_kind(&one, "lost_in_transit"),
        of_kind(&two, "lost_in_transit"),
    );
    assert_eq!(lost_one.len(), 1, "{lost_one:#?}");
    assert_eq!(lost_two.len(), 1);
    let (e1, e2) = (&lost_one[0]["evidence"], &lost_two[0]["evidence"]);
    // The same 17 events the proxy held, seen at the upstream hop and never at the client's.
    assert_eq!(e1["events"], e2["events"]);
    assert_eq!(e1["event_ids"], e2["event_ids"]);
    assert_eq!(e1["events"], 17);
    // Both hops are of the one input, told apart by their server endpoints; one clock.
    assert_eq!(e1["seen_in"]["input"], 0);
    assert_eq!(e1["missing_from"]["input"], 0);
    assert_ne!(e1["seen_in"]["session"], e1["missing_from"]["session"]);
    assert_eq!(e1["clock_offset_s"]["estimate"], 0.0);
    // On the client leg's session (the one whose events never came), the cause of its fallback.
    let client = &lost_one[0]["session"];
    let fallback = of_kind(&one, "sse_fallback")
        .into_iter()
        .find(|f| &f["session"] == client)
        .expect("the client leg fell back");
    assert_eq!(
        fallback["caused_by"],
        serde_json::json!([lost_one[0]["id"]])
    );
}

#[test]
fn one_leg_alone_has_no_hop_to_compare() {
    let doc = analyze(&["samples/seed-incident-client-leg.pcap"]);
    assert!(of_kind(&doc, "lost_in_transit").is_empty());
}

/// The findings of a report above info.
fn above_info(doc: &Value) -> Vec<&Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect()
}

/// The kinds of a report's findings, sorted, duplicates kept.
fn kinds(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// `base` with the hop's finding added, sorted.
fn with_hop(base: &[String]) -> Vec<String> {
    let mut out = base.to_vec();
    out.push("lost_in_transit".into());
    out.sort();
    out
}

/// The one incident given as one file of both legs (`-i any`, `-i lo`, two interfaces), as two
/// files (with a skewed clock), as two files and the proxy's log, or as one link captured twice:
/// one session record, each finding once, nothing added but the hop's own finding where the
/// upstream hop is in the inputs.
#[test]
fn the_same_incident_from_any_set_of_vantage_points_states_each_finding_once() {
    let run = |files: &[&str]| -> (Vec<String>, usize) {
        let doc = analyze(files);
        let sessions = doc["sessions"].as_array().unwrap().len();
        (kinds(&doc), sessions)
    };
    // The run of make/seed-incident-vantage.sh, seen at the client leg only.
    let (client, _) = run(&["samples/seed-incident-twice-a.pcap"]);
    assert!(client.contains(&"cross_namespace_replay".to_string()));
    let cases: [(&[&str], Vec<String>); 5] = [
        (&["samples/seed-incident-any.pcap"], with_hop(&client)),
        (&["samples/seed-incident-lo.pcap"], with_hop(&client)),
        (
            &["samples/seed-incident-two-ifaces.pcapng"],
            with_hop(&client),
        ),
        (
            &[
                "samples/seed-incident-skew-client-leg.pcap",
                "samples/seed-incident-skew-server-leg.pcap",
            ],
            with_hop(&client),
        ),
        (
            &[
                "samples/seed-incident-twice-a.pcap",
                "samples/seed-incident-twice-b.pcap",
            ],
            client.clone(),
        ),
    ];
    for (files, want) in cases {
        let (got, sessions) = run(files);
        assert_eq!(sessions, 1, "one logical session: {files:?}");
        assert_eq!(got, want, "{files:?}");
    }
    // The original seed legs, with and without the proxy's log.
    let (leg, _) = run(&["samples/seed-incident-client-leg.pcap"]);
    for files in [
        &[
            "samples/seed-incident-client-leg.pcap",
            "samples/seed-incident-server-leg.pcap",
        ][..],
        &[
            "samples/seed-incident-server-leg.pcap",
            "samples/seed-incident-client-leg.pcap",
            "samples/seed-incident.nginx.jsonl",
        ][..],
    ] {
        let (got, sessions) = run(files);
        assert_eq!(sessions, 1, "{files:?}");
        assert_eq!(got, with_hop(&leg), "{files:?}");
    }
}

/// A healthy session through nginx with both legs in one capture: one record seen at two
/// vantage points, nothing above info.
#[test]
fn a_healthy_session_at_two_vantage_points_has_no_finding() {
    let doc = analyze(&["samples/python-sdk-healthy-nginx-any.pcap"]);
    let sessions = doc["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["vantage_points"].as_array().unwrap().len(), 2);
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"] == "info"),
        "{:?}",
        kinds(&doc)
    );
    // Adding that healthy session's capture to the incident's adds no finding to it.
    let alone = analyze(&["samples/seed-incident-client-leg.pcap"]);
    let both = analyze(&[
        "samples/seed-incident-client-leg.pcap",
        "samples/python-sdk-healthy-nginx-any.pcap",
    ]);
    assert_eq!(kinds(&both), kinds(&alone));
}

/// Two replicas with their own event stores (samples/make/replicas.sh), the resume routed to
/// the replica that did not mint the client's `Last-Event-ID`. Each vantage point alone finds
/// the crossed namespace: the client leg by the events it got, the server leg (both replicas'
/// upstream connections) by which replica's stream the ID ended. Together they state each
/// finding once, the server leg's sight of the crossing beside the client's; the log adds
/// nothing. With one shared store, no vantage point finds anything above info.
#[test]
fn replicas_are_one_session_whose_crossed_resume_is_stated_once() {
    let leg = |v: &str, l: &str| format!("samples/replicas-{v}-{l}-leg.pcap");
    let log = |v: &str| format!("samples/replicas-{v}.nginx.jsonl");
    let (client, server) = (leg("own-store", "client"), leg("own-store", "server"));
    let alone = analyze(&[&server]);
    assert_eq!(
        of_kind(&alone, "cross_namespace_replay").len(),
        1,
        "{:?}",
        kinds(&alone)
    );
    let client_only = analyze(&[&client]);
    for files in [
        vec![client.clone(), server.clone()],
        vec![client.clone(), server.clone(), log("own-store")],
    ] {
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let doc = analyze(&files);
        assert_eq!(kinds(&doc), kinds(&client_only), "{files:?}");
        let crossed = of_kind(&doc, "cross_namespace_replay");
        let seen: Vec<&Value> = crossed[0]["seen_at"].as_array().unwrap().iter().collect();
        assert_eq!(seen.len(), 1, "the server leg's sight: {:#?}", crossed[0]);
        assert_eq!(seen[0]["input"], 1);
    }
    for files in [
        vec![leg("shared-store", "client")],
        vec![leg("shared-store", "server")],
        vec![
            leg("shared-store", "client"),
            leg("shared-store", "server"),
            log("shared-store"),
        ],
    ] {
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let doc = analyze(&files);
        let above = above_info(&doc);
        assert!(above.is_empty(), "{files:?}: {above:#?}");
    }
}

/// Twelve SDK sessions through nginx with upstream keep-alive, both legs in one capture
/// (samples/make/keepalive-nginx.sh): one upstream connection carries requests of up to ten
/// sessions, and every client is nginx on the server leg. Each session is one record seen at
/// both hops, its requests counted as the client and the server logged them (none taken from
/// another session that shared its upstream connection), and nothing is above info; the
/// access log alone finds the same sessions.
#[test]
fn sessions_sharing_upstream_keepalive_connections_stay_apart_and_healthy() {
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string("samples/keepalive-nginx.truth.json").unwrap(),
    )
    .unwrap();
    assert!(
        truth["connection_count"]["most_sessions_on_one_server_leg_connection"].as_u64() > Some(1)
    );
    let doc = analyze(&["samples/keepalive-nginx-lo.pcap"]);
    let sessions = doc["sessions"].as_array().unwrap();
    let want = truth["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), want.len());
    for t in want {
        let s = sessions
            .iter()
            .find(|s| s["session_id"] == t["session_id"])
            .unwrap_or_else(|| panic!("{} missing", t["session_id"]));
        let points = s["vantage_points"].as_array().unwrap();
        let servers: Vec<&Value> = points.iter().map(|p| &p["server"]).collect();
        assert_eq!(
            servers,
            [
                &Value::from("127.0.0.1:18721"),
                &Value::from("127.0.0.1:18722")
            ],
            "{}",
            t["session_id"]
        );
        // Each hop carried every request of the session, and none of another's.
        for p in points {
            assert_eq!(
                p["streams"], t["http_request_count"],
                "{}: {p}",
                t["session_id"]
            );
        }
    }
    let above = above_info(&doc);
    assert!(above.is_empty(), "{above:#?}");
    let log = analyze(&["samples/keepalive-nginx.nginx.jsonl"]);
    assert_eq!(log["sessions"].as_array().unwrap().len(), want.len());
    assert!(
        log["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"] == "info")
    );
}
