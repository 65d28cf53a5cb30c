//! The seed incident's client leg as cloud mirroring, overlays and switches deliver it (issue 28;
//! samples/make/tunnels.sh): wrapped in each tunnel, the report is the plain leg's, findings and
//! sessions to the frame, and the frames of the tunnel are counted; with every frame twice (a
//! SPAN port), the same findings at the first copies' frames, and the second copies counted as
//! removed.

use std::collections::BTreeMap;
use std::io::Cursor;

use assert_cmd::Command;
use mcpf_capture::reader::CaptureReader;
use mcpf_capture::writer::PcapWriter;
use serde_json::Value;

const PLAIN: &str = "samples/seed-incident-client-leg.pcap";

/// Each tunnelled copy of the plain leg and how its note names the tunnel.
const TUNNELS: &[(&str, &str)] = &[
    ("vxlan", "VXLAN (UDP port 4789)"),
    ("geneve", "Geneve (UDP port 6081)"),
    ("gre", "GRE"),
    ("erspan2", "ERSPAN type II"),
    ("erspan3", "ERSPAN type III"),
    ("ipip", "IP in IP (IPv4 inside, protocol 4)"),
    ("mpls", "MPLS label stacks"),
];

struct Run {
    code: i32,
    doc: Value,
    stderr: String,
}

fn analyze(args: &[&str]) -> Run {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["analyze", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Run {
        code: out.status.code().expect("exited"),
        doc: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        stderr,
    }
}

fn sample(kind: &str) -> String {
    format!("samples/seed-incident-{kind}.pcap")
}

/// What must not depend on how the packets reached the capture.
fn same_as_plain(plain: &Run, run: &Run, what: &str) {
    assert_eq!(run.code, plain.code, "{what}: exit status");
    assert!(
        !plain.doc["findings"].as_array().unwrap().is_empty(),
        "the plain leg has findings to compare"
    );
    assert_eq!(
        run.doc["findings"], plain.doc["findings"],
        "{what}: findings"
    );
    assert!(
        without_sources(&run.doc) == without_sources(&plain.doc),
        "{what}: sessions differ"
    );
    for key in ["sessions", "findings", "mcp_exchanges", "http_exchanges"] {
        assert_eq!(
            run.doc["summary"][key], plain.doc["summary"][key],
            "{what}: summary.{key}"
        );
    }
}

/// The sessions of a report, less the paths of the inputs they were read from.
fn without_sources(doc: &Value) -> Value {
    let mut sessions = doc["sessions"].clone();
    for s in sessions.as_array_mut().expect("sessions") {
        s.as_object_mut().unwrap().remove("sources");
    }
    sessions
}

#[test]
fn every_tunnel_gives_the_plain_legs_report() {
    let plain = analyze(&[PLAIN]);
    assert_eq!(plain.doc["inputs"][0]["warnings"], serde_json::json!([]));
    let packets = plain.doc["inputs"][0]["packets"].as_u64().unwrap();
    for (kind, name) in TUNNELS {
        let path = sample(kind);
        let run = analyze(&[&path]);
        same_as_plain(&plain, &run, kind);
        let note = format!(
            "{packets} frames were unwrapped from {name}: analysed by the addresses inside the tunnel"
        );
        assert_eq!(
            run.doc["inputs"][0]["warnings"],
            serde_json::json!([note]),
            "{kind}"
        );
        assert!(run.stderr.contains(&note), "{kind}: {}", run.stderr);
        let packets_ledger = &run.doc["inputs"][0]["accounting"]["packets"];
        assert_eq!(
            packets_ledger["analysed"], packets,
            "{kind}: every frame analysed"
        );
    }
}

/// The frames of a pcap: (time, bytes).
fn frames(path: &str) -> Vec<(mcpf_model::Timestamp, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let mut r = CaptureReader::open(Box::new(Cursor::new(bytes)), 0).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push((f.time, f.data.to_vec()));
    }
    out
}

/// `value` with every frame number (a `frame`, the items of `frames`, the numbers of a
/// `frame.number in {…}` filter) renumbered by `map`.
fn renumbered(value: &Value, map: &BTreeMap<u64, u64>) -> Value {
    let to = |n: &Value| Value::from(map[&n.as_u64().expect("a frame number")]);
    match value {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("frame", Value::Number(_)) => to(v),
                        ("frames", Value::Array(a)) => Value::Array(a.iter().map(to).collect()),
                        ("filter", Value::String(s)) => Value::from(renumbered_filter(s, map)),
                        _ => renumbered(v, map),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| renumbered(v, map)).collect()),
        other => other.clone(),
    }
}

fn renumbered_filter(filter: &str, map: &BTreeMap<u64, u64>) -> String {
    let list = filter
        .strip_prefix("frame.number in {")
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or_else(|| panic!("a filter of frame numbers: {filter}"));
    let numbers: Vec<String> = list
        .split(", ")
        .map(|n| map[&n.parse::<u64>().unwrap()].to_string())
        .collect();
    format!("frame.number in {{{}}}", numbers.join(", "))
}

#[test]
fn a_span_ports_second_copies_are_removed_and_counted() {
    let plain = analyze(&[PLAIN]);
    let span = sample("span-dup");
    // Where each plain frame's first copy is in the SPAN capture: the first frame with its bytes.
    let originals = frames(PLAIN);
    let copies = frames(&span);
    assert_eq!(copies.len(), 2 * originals.len(), "every frame twice");
    let mut map = BTreeMap::new();
    for (i, (_, bytes)) in originals.iter().enumerate() {
        let at = copies.iter().position(|(_, b)| b == bytes).unwrap();
        map.insert(i as u64 + 1, at as u64 + 1);
    }
    let run = analyze(&[&span]);
    assert_eq!(run.code, plain.code);
    assert_eq!(
        run.doc["findings"],
        renumbered(&plain.doc["findings"], &map),
        "the plain leg's findings, at the first copies' frames"
    );
    assert_eq!(
        run.doc["summary"]["sessions"],
        plain.doc["summary"]["sessions"]
    );
    assert_eq!(
        run.doc["summary"]["mcp_exchanges"],
        plain.doc["summary"]["mcp_exchanges"]
    );
    let n = originals.len();
    let input = &run.doc["inputs"][0];
    let warnings = input["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let note = warnings[0].as_str().unwrap();
    assert!(
        note.starts_with(&format!("{n} duplicate frames removed (SPAN copies")),
        "{note}"
    );
    assert_eq!(input["accounting"]["packets"]["skipped"]["duplicate"], n);
    assert_eq!(input["accounting"]["packets"]["analysed"], n);

    // Kept, the copies are retransmissions of the same bytes to reassembly: the same findings
    // (the first copies cited), and nothing said of duplicates.
    let kept = analyze(&["--keep-duplicates", &span]);
    assert_eq!(kept.doc["findings"], run.doc["findings"]);
    assert_eq!(kept.doc["inputs"][0]["warnings"], serde_json::json!([]));
    assert_eq!(
        kept.doc["inputs"][0]["accounting"]["packets"]["analysed"],
        2 * n
    );
}

/// `path`'s frames with the outer UDP destination port (an untagged Ethernet frame, IPv4
/// without options) changed from `from` to `to`, written to `out`.
fn udp_port_moved(path: &str, from: u16, to: u16, out: &std::path::Path) {
    let mut w = PcapWriter::new(Vec::new(), 1, 262_144, false, false).unwrap();
    for (time, mut bytes) in frames(path) {
        assert_eq!(&bytes[36..38], &from.to_be_bytes());
        bytes[36..38].copy_from_slice(&to.to_be_bytes());
        let len = bytes.len() as u32;
        w.packet(time, &bytes, len).unwrap();
    }
    std::fs::write(out, w.into_inner()).unwrap();
}

#[test]
fn vxlan_and_geneve_on_other_ports_are_read_when_the_user_says() {
    let dir = std::env::temp_dir().join(format!("mcpf-tunnels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = analyze(&[PLAIN]);
    for (kind, from, arg) in [
        ("vxlan", 4789, "udp:8472=vxlan"),
        ("geneve", 6081, "UDP:7000=Geneve"),
    ] {
        let to: u16 = arg[4..arg.find('=').unwrap()].parse().unwrap();
        let moved = dir.join(format!("{kind}-{to}.pcap"));
        udp_port_moved(&sample(kind), from, to, &moved);
        let moved = moved.to_str().unwrap();
        let unread = analyze(&[moved]);
        assert_eq!(
            unread.doc["summary"]["sessions"], 0,
            "{kind} on {to}, not said"
        );
        let run = analyze(&["--tunnel", arg, moved]);
        same_as_plain(&plain, &run, arg);
        let note = run.doc["inputs"][0]["warnings"][0].as_str().unwrap();
        assert!(note.contains(&format!("(UDP port {to})")), "{note}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tunnel_option_that_names_no_tunnel_is_refused() {
    for bad in ["udp:8472=gre", "tcp:8472=vxlan", "udp:0=vxlan", "8472"] {
        let run = analyze(&["--tunnel", bad, PLAIN]);
        assert_eq!(run.code, 2, "{bad}");
        assert!(
            run.stderr
                .contains("expected udp:PORT=vxlan or udp:PORT=geneve"),
            "{bad}: {}",
            run.stderr
        );
    }
}
