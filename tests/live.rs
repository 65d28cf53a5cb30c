//! A live pipe (`tcpdump -w - | mcp-forensics analyze -`) stopped by a signal: the input ends
//! where it is and the report of what was read is written, with a note that it was cut short.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `analyze ARGS -` reading the seed capture from a pipe kept open (the capture still
/// "running"): the child, and the pipe's end to close or keep.
fn on_a_live_pipe(args: &[&str]) -> (std::process::Child, std::process::ChildStdin) {
    on_a_live_pipe_of("seed-incident-client-leg.pcap", args)
}

/// The same with another sample of `samples/`.
fn on_a_live_pipe_of(
    sample: &str,
    args: &[&str],
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("COLUMNS", "100")
        .arg("analyze")
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(format!("{}/samples/{sample}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&bytes).unwrap();
    stdin.flush().unwrap();
    (child, stdin)
}

/// Sends `signal` to the analyzer alone while its pipe is still open.
fn stopped_by(signal: &str, args: &[&str]) -> (String, String, Option<i32>) {
    let (child, stdin) = on_a_live_pipe(args);
    // 34 KiB in a pipe is read at once; the wait is for the process to be running at all.
    std::thread::sleep(Duration::from_secs(2));
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code(),
    )
}

#[test]
fn sigint_on_a_live_pipe_ends_the_input_and_reports_what_was_read() {
    let (stdout, stderr, code) = stopped_by("-INT", &[]);
    assert_eq!(code, Some(1), "the findings' exit code: {stderr}");
    assert!(stderr.contains("stopping: the inputs end here"), "{stderr}");
    assert!(
        stdout.contains("note: reading was stopped by a signal"),
        "{stdout}"
    );
    assert!(stdout.contains(" S1 CRITICAL "), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("at or above --fail-on high"),
        "{stdout}"
    );
}

#[test]
fn sigterm_does_the_same_for_the_json_report() {
    let (stdout, stderr, code) = stopped_by("-TERM", &["--format", "json"]);
    assert_eq!(code, Some(1), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let limits = doc["summary"]["limits"].as_array().unwrap();
    assert!(
        limits.iter().any(|l| l
            .as_str()
            .unwrap()
            .starts_with("reading was stopped by a signal")),
        "{limits:?}"
    );
    let kinds: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"cross_namespace_replay"), "{kinds:?}");
}

/// NDJSON streams: the seed session ends by evidence (its DELETE answered), so its record and
/// findings are on the pipe while the capture is still running; the inputs and the summary come
/// once the input ends.
#[test]
fn ndjson_writes_a_session_as_soon_as_it_ends() {
    use std::io::BufRead;
    let (mut child, stdin) = on_a_live_pipe(&["--format", "ndjson"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Before the input ends: the session and its findings, nothing of the end.
    let mut early = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
        let rec: serde_json::Value = serde_json::from_str(&line).unwrap();
        let done = rec["type"] == "finding" && rec["kind"] == "unanswered_request";
        early.push(rec);
        if done {
            break;
        }
    }
    let types: Vec<&str> = early.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session"), "{types:?}");
    assert!(
        early.iter().any(|r| r["kind"] == "cross_namespace_replay"),
        "{types:?}"
    );
    assert!(!types.contains(&"summary") && !types.contains(&"input"));
    // The capture ends: the rest follows, the summary last.
    drop(stdin);
    let rest: Vec<String> = rx.iter().collect();
    reader.join().unwrap();
    child.wait().unwrap();
    let last: serde_json::Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(last["type"], "summary");
    assert!(rest.iter().any(|l| l.starts_with("{\"type\":\"input\"")));
}

/// A FIFO (or `/dev/stdin`, or `<(tcpdump -w -)`) is a stream like standard input: read once
/// (what was looked at to tell its format is read again), and ended by a signal with the report
/// of what was read.
#[test]
fn a_fifo_is_read_as_it_comes_and_ends_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("live.pcap");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("COLUMNS", "100")
        .arg("analyze")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the write end waits for the analyzer to open the read end.
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/seed-incident-client-leg.pcap"
    ))
    .unwrap();
    writer.write_all(&bytes).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    drop(writer);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" S1 CRITICAL "), "{stdout}");
    assert!(
        stdout.contains("note: reading was stopped by a signal"),
        "{stdout}"
    );
}

#[test]
fn progress_always_writes_plain_lines_when_standard_error_is_no_terminal() {
    let (child, stdin) = on_a_live_pipe(&["--progress", "always", "-f", "json"]);
    // The capture goes on for three seconds: progress lines are written meanwhile.
    std::thread::sleep(Duration::from_secs(3));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("mcp-forensics: progress: "))
        .collect();
    assert!(!lines.is_empty(), "{stderr}");
    assert!(
        lines
            .iter()
            .all(|l| !l.contains('\r') && !l.contains('\u{1b}')),
        "plain lines: {lines:?}"
    );
    assert!(serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok());
}

/// `analyze --format ndjson - | head -1`: NDJSON written as sessions end stops at the first
/// write after the reader went away, and the program ends quietly, as every other format does.
#[test]
fn ndjson_written_live_ends_quietly_on_a_closed_pipe() {
    use std::io::BufRead;
    let capture = std::fs::File::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/concurrent-nginx-client-leg.pcap"
    ))
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
        .args(["analyze", "--format", "ndjson", "--events", "-"])
        .stdin(capture)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.starts_with("{\"type\":\"session\""), "{first}");
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
}

/// The lines of a child's standard output as they come.
fn lines_of(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<serde_json::Value> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    rx
}

/// The seed incident with a two-hour backoff before the resume: with `--live-flush 60` the
/// session, quiet for two hours, is reported as it stood (the fallback and the reset counter,
/// no replay yet) while the pipe is still open and before the session ends; its final record
/// then has the replay.
#[test]
fn live_flush_reports_a_quiet_session_as_it_stands_before_it_ends() {
    let (mut child, stdin) = on_a_live_pipe_of(
        "seed-incident-backoff-2h.pcap",
        &["--format", "ndjson", "--live-flush", "60"],
    );
    let rx = lines_of(&mut child);
    let mut before = Vec::new();
    let interim = loop {
        let rec = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("an interim record while the pipe is open");
        if rec["type"] == "interim" {
            break rec;
        }
        before.push(rec);
    };
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(interim["session"], "S1");
    let kinds: Vec<&str> = interim["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"sse_fallback"), "{kinds:?}");
    assert!(!kinds.contains(&"cross_namespace_replay"), "{kinds:?}");
    assert!(
        interim["findings"][0]["id"]
            .as_str()
            .unwrap()
            .starts_with("S1~")
    );
    // The session ends by evidence (its DELETE) while the pipe is still open.
    let session = loop {
        let rec = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("its record");
        if rec["type"] == "session" {
            break rec;
        }
    };
    assert_eq!(session["key"], "S1");
    drop(stdin);
    let rest: Vec<serde_json::Value> = rx.iter().collect();
    child.wait().unwrap();
    assert!(
        rest.iter()
            .any(|r| r["type"] == "finding" && r["kind"] == "cross_namespace_replay")
    );
}

/// A session that goes on after its interim report and falls quiet again is reported again;
/// a file, written once at the end, refuses the option.
#[test]
fn live_flush_reports_again_after_more_traffic_and_needs_a_live_ndjson_run() {
    let (mut child, stdin) = on_a_live_pipe_of(
        "python-sdk-resume-many.pcap",
        &["--format", "ndjson", "--live-flush", "0.5"],
    );
    let rx = lines_of(&mut child);
    drop(stdin);
    let records: Vec<serde_json::Value> = rx.iter().collect();
    child.wait().unwrap();
    let mut by_session: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for r in records.iter().filter(|r| r["type"] == "interim") {
        by_session
            .entry(r["session"].as_str().unwrap().to_string())
            .or_default()
            .push(r["quiet_since"].as_str().unwrap().to_string());
    }
    let again = by_session.values().filter(|v| v.len() > 1).count();
    assert!(again > 0, "{by_session:?}");
    for times in by_session.values() {
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    }
    // Healthy: nothing above info, interim or final.
    assert!(records.iter().all(|r| {
        let f = if r["type"] == "interim" {
            r["findings"].as_array().unwrap().clone()
        } else {
            vec![r.clone()]
        };
        f.iter()
            .all(|f| f["severity"].is_null() || f["severity"] == "info")
    }));
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "analyze",
            "--live-flush",
            "60",
            "samples/seed-incident-client-leg.pcap",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--live-flush"));
}
