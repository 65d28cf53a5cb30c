//! Every input a fuzz target ever failed on (crash, hang, memory past its limit), replayed
//! through the released binary so `cargo test` keeps it fixed without nightly. Inputs live
//! under `tests/fuzz-regressions/<target>/`, exactly as libFuzzer wrote them; the targets whose
//! input is not a file the binary reads are turned into one the way the target reads them.
//! A replay passes when the binary ends by itself in time, with a documented exit status, no
//! panic, and a JSON report whose accounting adds up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

mod support;

#[path = "../fuzz/src/conversation.rs"]
#[allow(dead_code)]
mod conversation;

/// What the binary gets for an input of `target`: a file to analyse, or nothing when the
/// target does not go through the binary (the SSE parser alone, replayed in-process).
fn as_input(target: &str, bytes: &[u8], dir: &Path) -> Option<PathBuf> {
    let converted = match target {
        "capture_file" => bytes.to_vec(),
        "frame_decode" => conversation::frames_pcap(bytes),
        "reassembly_http" => conversation::conversation_pcap(bytes),
        "har" | "access_log" => bytes.to_vec(),
        "sse" | "tls_records" => return None,
        other => panic!("unknown fuzz target directory {other}"),
    };
    let ext = match target {
        "har" => "har",
        "access_log" => "jsonl",
        _ => "pcap",
    };
    let path = dir.join(format!("input.{ext}"));
    std::fs::write(&path, converted).unwrap();
    Some(path)
}

fn replay_sse(bytes: &[u8]) {
    use mcpf_model::{FrameRef, Mark, Timestamp};
    let Some((&step, body)) = bytes.split_first() else {
        return;
    };
    let mark = Mark {
        time: Timestamp::from_secs_nanos(1_796_000_000, 0),
        frame: FrameRef::new(0, 1),
    };
    let mut parser = mcpf_http::sse::SseParser::new();
    let mut out = Vec::new();
    for piece in body.chunks(step.max(1) as usize) {
        parser.feed(piece, mark, &mut out);
        out.clear();
    }
    parser.finish();
}

/// The `tls_records` target's input, read in-process in bounded time.
fn replay_tls_records(name: &str, bytes: &[u8]) {
    let started = std::time::Instant::now();
    conversation::feed_tls_records(bytes);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{name}: {:?}",
        started.elapsed()
    );
}

fn replay(target: &str, file: &Path) {
    let name = file.display().to_string();
    let bytes = std::fs::read(file).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let Some(input) = as_input(target, &bytes, tmp.path()) else {
        match target {
            "tls_records" => replay_tls_records(&name, &bytes),
            _ => replay_sse(&bytes),
        }
        return;
    };
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "--format", "json"])
        .arg(&input)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    assert!(
        matches!(code, Some(0..=3)),
        "{name}: exit {code:?}: {stderr}"
    );
    if !out.stdout.is_empty() {
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{name}: not JSON ({e})"));
        support::assert_ledgers_balance(&doc, &name);
    }
}

#[test]
fn every_input_a_fuzz_target_failed_on_is_analysed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut replayed = 0;
    for target in std::fs::read_dir(&root).unwrap() {
        let target = target.unwrap().path();
        if !target.is_dir() {
            continue;
        }
        let tname = target.file_name().unwrap().to_string_lossy().into_owned();
        for file in std::fs::read_dir(&target).unwrap() {
            replay(&tname, &file.unwrap().path());
            replayed += 1;
        }
    }
    // The directory holds the hostile inputs of issue 12 as well: an empty one means the
    // inputs were lost, not that nothing ever failed.
    assert!(
        replayed > 0,
        "no regression inputs under {}",
        root.display()
    );
}
