//! `analyze --write-pcap DIR` (issue 31): a capture per session and per finding, read back by
//! tshark with the frames the report says they hold. Skipped, with a note, where tshark is not
//! installed (CI installs it).

use std::collections::BTreeSet;
use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

const CLIENT_LEG: &str = "samples/seed-incident-client-leg.pcap";
const SERVER_LEG: &str = "samples/seed-incident-server-leg.pcap";

fn tshark_missing() -> bool {
    let found = std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("note: tshark is not installed: the --write-pcap tests are skipped");
    }
    !found
}

/// `tshark -r file -T fields -e FIELD` (with a display filter when given), one value a frame.
fn tshark(file: &Path, field: &str, filter: Option<&str>) -> Vec<String> {
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r").arg(file).args(["-T", "fields", "-e", field]);
    if let Some(f) = filter {
        cmd.args(["-Y", f]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "tshark cannot read {}",
        file.display()
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs `analyze --format json` with `args`, returning the report and standard error.
fn analyze(args: &[&str]) -> (Value, String) {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c < 2), "{out:?}");
    let report = serde_json::from_slice(&out.stdout).unwrap();
    (report, String::from_utf8(out.stderr).unwrap())
}

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The distinct frames of `input` a finding cites, its own and other vantage points'.
fn cited(finding: &Value, input: u64) -> BTreeSet<u64> {
    let seen = finding["seen_at"].as_array().unwrap().iter();
    std::iter::once(finding)
        .chain(seen)
        .flat_map(|f| f["frame_refs"].as_array().unwrap())
        .filter(|r| r["input"] == input)
        .map(|r| r["frame"].as_u64().unwrap())
        .collect()
}

fn frame_filter(frames: &BTreeSet<u64>) -> String {
    let list: Vec<String> = frames.iter().map(u64::to_string).collect();
    format!("frame.number in {{{}}}", list.join(", "))
}

#[test]
fn a_session_holds_its_connections_and_a_finding_its_frames() {
    if tshark_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (report, stderr) = analyze(&["--write-pcap", d, "--write-pcap-per-finding", CLIENT_LEG]);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 7);
    let mut expected: BTreeSet<String> = findings
        .iter()
        .map(|f| format!("{}.pcap", f["id"].as_str().unwrap()))
        .collect();
    expected.insert("S1.pcap".into());
    assert_eq!(files(dir.path()), expected);
    // Every frame of the capture is one of S1's four connections (tcp.stream 0 to 3): their
    // handshakes, data, closes and the last ACKs after them.
    let original = Path::new(CLIENT_LEG);
    let all = tshark(original, "frame.time_epoch", None);
    let s1 = dir.path().join("S1.pcap");
    assert_eq!(tshark(&s1, "frame.time_epoch", None), all);
    let streams: BTreeSet<String> = tshark(&s1, "tcp.stream", None).into_iter().collect();
    assert_eq!(streams.len(), 4);
    let mut total = all.len();
    for f in findings {
        let frames = cited(f, 0);
        let path = dir
            .path()
            .join(format!("{}.pcap", f["id"].as_str().unwrap()));
        let times = tshark(&path, "frame.time_epoch", None);
        assert_eq!(times.len(), frames.len(), "{}", f["id"]);
        let want = tshark(original, "frame.time_epoch", Some(&frame_filter(&frames)));
        assert_eq!(times, want, "{}: the cited frames, in order", f["id"]);
        total += frames.len();
    }
    let summary = format!("wrote 8 pcaps ({total} frames) to {d}");
    assert!(stderr.contains(&summary), "{stderr}");
}

#[test]
fn several_captures_give_a_file_per_input() {
    if tshark_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (report, _) = analyze(&[
        "--write-pcap",
        d,
        "--write-pcap-per-finding",
        CLIENT_LEG,
        SERVER_LEG,
    ]);
    let written = files(dir.path());
    for s in report["sessions"].as_array().unwrap() {
        let key = s["key"].as_str().unwrap();
        // The session's own observation, and those folded into it at the other leg.
        for (input, leg) in [(1, CLIENT_LEG), (2, SERVER_LEG)] {
            let name = format!("{key}.I{input}.pcap");
            assert!(written.contains(&name), "{name} in {written:?}");
            let n = tshark(&dir.path().join(&name), "frame.number", None).len();
            assert_eq!(
                n,
                tshark(Path::new(leg), "frame.number", None).len(),
                "{name}"
            );
        }
    }
    for f in report["findings"].as_array().unwrap() {
        for input in [0, 1] {
            let frames = cited(f, input);
            let name = format!("{}.I{}.pcap", f["id"].as_str().unwrap(), input + 1);
            match frames.is_empty() {
                true => assert!(!written.contains(&name), "{name}"),
                false => {
                    let n = tshark(&dir.path().join(&name), "frame.number", None).len();
                    assert_eq!(n, frames.len(), "{name}");
                }
            }
        }
    }
    assert!(
        written
            .iter()
            .all(|n| n.contains(".I1.") || n.contains(".I2."))
    );
}

#[test]
fn a_log_alongside_has_no_file_and_is_said_once() {
    if tshark_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let log = "samples/seed-incident.nginx.jsonl";
    let (_, stderr) = analyze(&["--write-pcap", d, CLIENT_LEG, log]);
    // One capture: no input label in the names.
    assert_eq!(files(dir.path()), BTreeSet::from(["S1.pcap".to_string()]));
    assert_eq!(stderr.matches(log).count(), 1, "{stderr}");
    assert!(stderr.contains("wrote 1 pcap (162 frames)"), "{stderr}");
}

#[test]
fn standard_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "--write-pcap", dir.path().to_str().unwrap(), "-"])
        .pipe_stdin(CLIENT_LEG)
        .unwrap()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("cannot be read again"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(files(dir.path()).is_empty());
}
