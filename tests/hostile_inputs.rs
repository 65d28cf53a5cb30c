//! Hostile inputs of issue 29 that are not captures of traffic: key logs and saved reports
//! that are not what they claim, and key logs large enough that a copy per thread would not
//! fit. Each runs under an address-space limit and a timeout (`support/limited.rs`).

#[path = "support/limited.rs"]
mod limited;

use std::io::Write;

use limited::run;

const SAMPLE: &str = "samples/seed-incident-client-leg.pcap";

/// `/dev/zero` given as a key log or as a saved report: refused at once, naming the file, not
/// read to the end of memory.
#[test]
fn an_endless_file_of_zeros_is_refused_at_once() {
    let started = std::time::Instant::now();
    let keylog = run(&["analyze", "--tls-keylog", "/dev/zero", SAMPLE]);
    assert_eq!(keylog.status.code(), Some(2));
    let err = String::from_utf8_lossy(&keylog.stderr);
    assert!(
        err.contains("/dev/zero") && err.contains("not an NSS key log"),
        "{err}"
    );
    let report = run(&["report", "/dev/zero"]);
    assert_eq!(report.status.code(), Some(2));
    let err = String::from_utf8_lossy(&report.stderr);
    assert!(
        err.contains("/dev/zero") && err.contains("not a JSON report"),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

/// A key log of 2 million lines (350 MB) is read once and shared by every thread and shard:
/// under a 3 GiB address space, where eight copies of it (one per HTTP shard) do not fit,
/// the capture is analysed with two threads and with one.
#[test]
fn a_big_key_log_is_shared_by_every_shard() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.keys");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let secret = "ab".repeat(48);
    for i in 0..2_000_000u64 {
        writeln!(w, "CLIENT_RANDOM {i:064x} {secret}").unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let keys = path.to_str().unwrap();
    for threads in ["1", "2"] {
        let out = run(&[
            "analyze",
            "--threads",
            threads,
            "--format",
            "json",
            "--tls-keylog",
            keys,
            SAMPLE,
        ]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(
            doc["sessions"].as_array().unwrap().len(),
            1,
            "threads {threads}"
        );
    }
}

#[path = "../bench/stress/wire.rs"]
#[allow(dead_code)]
mod wire;

/// A session whose calls carry the IDs (request, answer) as JSON text; `None`: no answer.
fn calls_with_ids(path: &std::path::Path, ids: &[(&str, Option<&str>)]) {
    use wire::*;
    let session = session_id(1);
    let mut cap = Capture::pcap(std::fs::File::create(path).unwrap(), 262_144).unwrap();
    let mut c = Conn::local(1);
    c.handshake(&mut cap).unwrap();
    open_session(&mut cap, &mut c, &session).unwrap();
    for (k, (asked, answered)) in ids.iter().enumerate() {
        let call = tools_call(2).replace(r#""id":2"#, &format!(r#""id":{asked}"#));
        let body = post("/mcp", Some(&session), &[], call.as_bytes());
        c.client_send(&mut cap, &body).unwrap();
        let events = match answered {
            Some(id) => {
                let result = tools_call_result(2).replace(r#""id":2"#, &format!(r#""id":{id}"#));
                vec![sse_event(&format!("{k}-1"), &result)]
            }
            None => Vec::new(),
        };
        c.server_send(&mut cap, &sse_response(&session, &events))
            .unwrap();
    }
    c.close(&mut cap).unwrap();
}

/// IDs a double cannot hold are kept as sent: 2^64 answered and 2^64+1 not are two requests,
/// one answered; `-0` answered as `0` is answered (the same number); `1e400` is printed as
/// sent, never as `null`.
#[test]
fn request_ids_keep_their_identity_past_what_a_double_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.pcap");
    calls_with_ids(
        &path,
        &[
            ("18446744073709551616", Some("18446744073709551616")),
            ("18446744073709551617", None),
            ("-0", Some("0")),
            ("1e400", Some("1e400")),
        ],
    );
    let out = run(&["analyze", "--format", "json", path.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let above: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert_eq!(above.len(), 1, "{above:#?}");
    assert_eq!(above[0]["kind"], "unanswered_request");
    let text = above[0].to_string();
    assert!(
        text.contains(r#"{"number":"18446744073709551617"}"#),
        "{text}"
    );
    assert!(
        !text.contains("e+19") && !text.contains("18446744073709551616"),
        "{text}"
    );
    let table = run(&["analyze", path.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("request 18446744073709551617 tools/call"),
        "{table}"
    );
    assert!(
        table.contains("#1e400") && !table.contains("null"),
        "{table}"
    );
}
