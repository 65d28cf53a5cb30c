//! `--events` on one stream of 200,000 SSE events (the `sse_events` stress input, issue 12):
//! every event is listed once, in time order, with its stream position and last event ID, in
//! both formats, and NDJSON keeps its record order. The events go through a spill file, never
//! all held in memory; that memory stays flat is bench/stress/run.sh's to show.

use std::path::PathBuf;
use std::process::Command;

use serde::Deserialize;

#[path = "../bench/stress/gen.rs"]
mod stress;

const EVENTS: u64 = 200_000;

/// The fields of an event record this test checks.
#[derive(Deserialize)]
struct Event {
    stream: String,
    index: u32,
    id: Option<String>,
    last_event_id: String,
    time: String,
    frame: u64,
}

#[derive(Deserialize)]
struct Doc {
    events: Vec<Event>,
}

fn capture() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("events-stream.pcap.gz");
    stress::generate("sse_events", EVENTS, &path).unwrap();
    path
}

fn analyze(format: &str, path: &PathBuf) -> Vec<u8> {
    let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .args(["analyze", "--events", "--format", format])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{format}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The initialize response's event, then the tool call's `e0`..`e{n-1}` and its result `end`,
/// each stream's positions counted from 0, times never going back.
fn check(format: &str, events: &[Event]) {
    assert_eq!(events.len() as u64, EVENTS + 2, "{format}: event count");
    let call = &events[1].stream;
    assert_ne!(
        &events[0].stream, call,
        "{format}: initialize's event first"
    );
    for (i, e) in events[1..].iter().enumerate() {
        assert_eq!(&e.stream, call, "{format}: event {i}");
        assert_eq!(e.index as usize, i, "{format}: event {i} position");
        let id = if i as u64 == EVENTS {
            "end".to_string()
        } else {
            format!("e{i}")
        };
        assert_eq!(e.id.as_deref(), Some(id.as_str()), "{format}: event {i} id");
        assert_eq!(e.last_event_id, id, "{format}: event {i} last event ID");
    }
    for w in events.windows(2) {
        assert!(
            (&w[0].time, w[0].frame) <= (&w[1].time, w[1].frame),
            "{format}: events out of time order at {} {}",
            w[1].stream,
            w[1].index
        );
    }
}

#[test]
fn two_hundred_thousand_events_in_one_stream_are_all_listed_in_order() {
    let path = capture();
    let doc: Doc = serde_json::from_slice(&analyze("json", &path)).unwrap();
    check("json", &doc.events);

    let ndjson = analyze("ndjson", &path);
    // One session: its records as it ends, then the profile, the inputs and the summary.
    let order = [
        "session", "finding", "timeline", "event", "profile", "input", "summary",
    ];
    let mut last = 0;
    let mut events = Vec::new();
    for line in ndjson.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        #[derive(Deserialize)]
        struct Type<'a> {
            #[serde(borrow, rename = "type")]
            kind: &'a str,
        }
        let kind = serde_json::from_slice::<Type>(line).unwrap().kind;
        let at = order.iter().position(|&k| k == kind).unwrap();
        assert!(at >= last, "a {kind} record after a {} record", order[last]);
        last = at;
        if kind == "event" {
            events.push(serde_json::from_slice::<Event>(line).unwrap());
        }
    }
    assert_eq!(order[last], "summary");
    check("ndjson", &events);
}
