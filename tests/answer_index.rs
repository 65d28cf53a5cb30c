//! The per-session index of requests and answers (issue 12, linear time): thousands of
//! `tools/call`s over a few keep-alive connections and batches of thousands, each with answers
//! missing, duplicated or its ID reused at known places, analysed by the built binary. The
//! findings must name exactly those requests: the index is right, not only fast. The big
//! versions are timed by bench/stress/run.sh (`many_calls`, `batch`, `duplicates`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

// Shared with the stress generators; this file uses only part of it.
#[allow(dead_code)]
#[path = "../bench/stress/wire.rs"]
mod wire;

use wire::*;

/// Where each request of a generated session stands.
#[derive(Clone, Copy, Default)]
struct Shape {
    /// Every `missing`-th call is refused an answer (202, no body).
    missing: u64,
    /// Every `duplicated`-th call is answered twice, as two events of its stream.
    duplicated: u64,
    /// Every `reused`-th call is sent again with the ID of the call before it (answered).
    reused: u64,
    /// The clock steps back an hour after the request of this call, before its answer.
    step_back_after: Option<u64>,
}

const CALLS: u64 = 5_000;
const CONNECTIONS: u64 = 4;

/// `n` `tools/call`s (IDs 2..n+2) of one session, round-robin over `CONNECTIONS` keep-alive
/// connections, shaped by `shape`.
fn calls(name: &str, n: u64, shape: Shape) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("answer-index-{name}.pcap"));
    let mut cap = Capture::pcap(std::fs::File::create(&path).unwrap(), 262_144).unwrap();
    let mut conns: Vec<Conn> = (0..CONNECTIONS).map(|k| Conn::local(k + 1)).collect();
    for c in &mut conns {
        c.handshake(&mut cap).unwrap();
    }
    open_session(&mut cap, &mut conns[0], SESSION).unwrap();
    let every = |k: u64, i: u64| k > 0 && i.is_multiple_of(k);
    for i in 1..=n {
        let c = &mut conns[(i % CONNECTIONS) as usize];
        let id = if every(shape.reused, i) { i } else { i + 1 };
        let req = post("/mcp", Some(SESSION), &[], tools_call(id).as_bytes());
        c.client_send(&mut cap, &req).unwrap();
        if shape.step_back_after == Some(i) {
            // Between a request and its answer: the answer is stamped an hour before it.
            cap.now_us -= 3_600_000_000;
        }
        let result = tools_call_result(id);
        let answer = if every(shape.missing, i) {
            accepted(SESSION)
        } else if every(shape.duplicated, i) {
            let evs = [
                sse_event(&format!("{i}-1"), &result),
                sse_event(&format!("{i}-2"), &result),
            ];
            sse_response(SESSION, &evs)
        } else {
            json_response(SESSION, result.as_bytes(), "")
        };
        c.server_send(&mut cap, &answer).unwrap();
    }
    for c in &mut conns {
        c.close(&mut cap).unwrap();
    }
    path
}

/// One POST of a batch of `n` `tools/call`s (IDs 2..n+2), answered by one JSON batch holding
/// every answer but those `missing` lets out, and those `duplicated` picks twice.
fn batch(name: &str, n: u64, missing: u64, duplicated: u64) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("answer-index-{name}.pcap"));
    let mut cap = Capture::pcap(std::fs::File::create(&path).unwrap(), 262_144).unwrap();
    let mut c = Conn::local(1);
    c.handshake(&mut cap).unwrap();
    // 2025-03-26, the one revision with batches.
    open_session_at(&mut cap, &mut c, SESSION, "2025-03-26").unwrap();
    let ids = 2..2 + n;
    let reqs: Vec<String> = ids.clone().map(tools_call).collect();
    let mut answers: Vec<String> = ids
        .clone()
        .filter(|id| missing == 0 || id % missing != 0)
        .map(tools_call_result)
        .collect();
    answers.extend(
        ids.filter(|id| duplicated > 0 && id % duplicated == 0)
            .map(tools_call_result),
    );
    let body = format!("[{}]", reqs.join(","));
    c.client_send(&mut cap, &post("/mcp", Some(SESSION), &[], body.as_bytes()))
        .unwrap();
    let body = format!("[{}]", answers.join(","));
    c.server_send(&mut cap, &json_response(SESSION, body.as_bytes(), ""))
        .unwrap();
    c.close(&mut cap).unwrap();
    path
}

fn analyze(path: &PathBuf) -> Value {
    let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .args(["analyze", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn count(doc: &Value, k: &str) -> u64 {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["counts"][k].as_u64().unwrap())
        .sum()
}

/// The request IDs the findings of `kind` name, and how many findings there are.
fn ids_of(doc: &Value, kind: &str) -> (BTreeSet<u64>, usize) {
    let of: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect();
    let ids = of
        .iter()
        .map(|f| f["evidence"]["request_id"].as_u64().unwrap())
        .collect();
    (ids, of.len())
}

fn kinds(doc: &Value) -> BTreeSet<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn thousands_of_calls_over_keep_alive_connections_are_all_answered() {
    let doc = analyze(&calls("healthy", CALLS, Shape::default()));
    assert_eq!(doc["summary"]["sessions"], 1);
    assert_eq!(count(&doc, "requests"), CALLS + 1);
    assert_eq!(count(&doc, "responses"), CALLS + 1);
    assert_eq!(kinds(&doc), BTreeSet::new());
}

#[test]
fn the_calls_left_unanswered_and_those_answered_twice_are_named() {
    let shape = Shape {
        missing: 97,
        duplicated: 89,
        ..Shape::default()
    };
    let doc = analyze(&calls("missing-dup", CALLS, shape));
    let (unanswered, n) = ids_of(&doc, "unanswered_request");
    let expected: BTreeSet<u64> = (1..=CALLS).filter(|i| i % 97 == 0).map(|i| i + 1).collect();
    assert_eq!(unanswered, expected);
    assert_eq!(n, expected.len());
    let (dups, n) = ids_of(&doc, "duplicate_response");
    let expected: BTreeSet<u64> = (1..=CALLS)
        .filter(|i| i % 89 == 0 && i % 97 != 0)
        .map(|i| i + 1)
        .collect();
    assert_eq!(dups, expected);
    assert_eq!(n, expected.len());
    let all: BTreeSet<String> = ["duplicate_response", "unanswered_request"]
        .map(String::from)
        .into();
    assert_eq!(kinds(&doc), all);
}

#[test]
fn a_reused_id_is_reported_once_per_reuse_and_each_request_has_its_answer() {
    let shape = Shape {
        reused: 500,
        ..Shape::default()
    };
    let doc = analyze(&calls("reused", CALLS, shape));
    let (reused, n) = ids_of(&doc, "request_id_reused");
    let expected: BTreeSet<u64> = (1..=CALLS).filter(|i| i % 500 == 0).collect();
    assert_eq!(reused, expected);
    assert_eq!(n, expected.len());
    for f in doc["findings"].as_array().unwrap() {
        assert_eq!(f["evidence"]["first_in_flight"], false, "{f}");
    }
    // Each of the two requests with one ID got its own answer: nothing unanswered, no
    // duplicate.
    let reused: BTreeSet<String> = ["request_id_reused".to_string()].into();
    assert_eq!(kinds(&doc), reused);
}

#[test]
fn a_clock_stepping_back_changes_no_finding() {
    let shape = Shape {
        missing: 97,
        duplicated: 89,
        ..Shape::default()
    };
    let steady = analyze(&calls("steady", CALLS, shape));
    for after in [1, CALLS / 2, CALLS - 1] {
        let shape = Shape {
            step_back_after: Some(after),
            ..shape
        };
        let doc = analyze(&calls(&format!("step-back-{after}"), CALLS, shape));
        for kind in ["unanswered_request", "duplicate_response"] {
            assert_eq!(
                ids_of(&doc, kind),
                ids_of(&steady, kind),
                "{kind}, step after {after}"
            );
        }
        assert_eq!(kinds(&doc), kinds(&steady), "step after {after}");
    }
    let healthy = Shape {
        step_back_after: Some(CALLS / 2),
        ..Shape::default()
    };
    assert_eq!(
        kinds(&analyze(&calls("step-back-healthy", 200, healthy))),
        BTreeSet::new()
    );
}

#[test]
fn a_batch_answered_by_a_batch_with_answers_missing_and_repeated() {
    let doc = analyze(&batch("batch", CALLS, 0, 0));
    assert_eq!(count(&doc, "requests"), CALLS + 1);
    assert_eq!(count(&doc, "responses"), CALLS + 1);
    assert_eq!(kinds(&doc), BTreeSet::new());

    let doc = analyze(&batch("batch-missing-dup", CALLS, 101, 7));
    let (unanswered, n) = ids_of(&doc, "unanswered_request");
    // Those also picked twice are answered once, by the copy.
    let expected: BTreeSet<u64> = (2..2 + CALLS)
        .filter(|id| id % 101 == 0 && id % 7 != 0)
        .collect();
    assert_eq!(unanswered, expected);
    assert_eq!(n, expected.len());
    let (dups, n) = ids_of(&doc, "duplicate_response");
    let expected: BTreeSet<u64> = (2..2 + CALLS)
        .filter(|id| id % 7 == 0 && id % 101 != 0)
        .collect();
    assert_eq!(dups, expected);
    assert_eq!(n, expected.len());
    // The copy carries the same bytes as the first answer.
    for f in doc["findings"].as_array().unwrap() {
        if f["kind"] == "duplicate_response" {
            assert_eq!(f["evidence"]["same_payload"], true, "{f}");
        }
    }
}
