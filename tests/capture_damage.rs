//! Damaged captures end to end (issue 12): a corrupt record or block in the middle is stepped
//! over and what follows it is analysed as if it were not there; a cut gzip stream is read up
//! to its cut; every byte of every capture, whole or damaged, is in one bucket of its input's
//! accounting; what was lost is said on standard error and in the exit status (3).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

mod support;

use assert_cmd::Command;
use serde_json::Value;

struct Run {
    doc: Value,
    code: i32,
    stderr: String,
}

fn analyze(path: &Path) -> Run {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {stderr}", path.display()));
    Run {
        doc,
        code: out.status.code().unwrap_or(-1),
        stderr,
    }
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
}

/// The bytes of a capture as the reader sees them: decompressed when gzip, up to a cut.
fn decompressed(bytes: &[u8]) -> Vec<u8> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes.to_vec();
    }
    let mut out = Vec::new();
    let mut d = flate2::read::MultiGzDecoder::new(bytes);
    let mut buf = [0u8; 4096];
    while let Ok(n) = d.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Every ledger of the run balances, and the one capture's bytes total its (decompressed) size.
fn check_accounting(run: &Run, file: &[u8], name: &str) {
    let inputs = run.doc["inputs"].as_array().expect("inputs");
    assert_eq!(inputs.len(), 1, "{name}");
    let a = &inputs[0]["accounting"];
    support::assert_ledgers_balance(&run.doc, name);
    assert_eq!(
        a["bytes"]["total"].as_u64().unwrap(),
        decompressed(file).len() as u64,
        "{name}: bytes.total is the file's size, decompressed"
    );
    assert_eq!(
        a["packets"]["analysed"].as_u64().unwrap()
            + a["packets"]["skipped"]
                .as_object()
                .map_or(0, |m| m.values().map(|v| v.as_u64().unwrap()).sum()),
        inputs[0]["packets"].as_u64().unwrap(),
        "{name}: every frame read is analysed or skipped"
    );
}

/// The sessions of a report, without the input paths they name.
fn sessions(run: &Run) -> Value {
    let mut sessions = run.doc["sessions"].clone();
    for s in sessions.as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("sources");
    }
    sessions
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Offsets at which the records of a little-endian microsecond pcap start.
fn pcap_records(bytes: &[u8]) -> Vec<usize> {
    assert_eq!(
        &bytes[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian pcap"
    );
    let mut at = 24;
    let mut offsets = Vec::new();
    while at + 16 <= bytes.len() {
        offsets.push(at);
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
    }
    offsets
}

/// Offsets at which the blocks of a little-endian pcapng start.
fn pcapng_blocks(bytes: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut offsets = Vec::new();
    while at + 12 <= bytes.len() {
        offsets.push(at);
        at += u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    offsets
}

/// Garbage that is no record: a header claiming 3 GB, then bytes that do not line up.
fn garbage() -> Vec<u8> {
    let mut g = Vec::new();
    for v in [7u32, 0, 3_000_000_000, 3_000_000_000] {
        g.extend_from_slice(&v.to_le_bytes());
    }
    g.extend((0..45u32).map(|i| (i * 37 % 251) as u8));
    g
}

fn spliced(bytes: &[u8], at: usize, insert: &[u8]) -> Vec<u8> {
    [&bytes[..at], insert, &bytes[at..]].concat()
}

#[test]
fn every_sample_capture_has_balanced_accounting_of_its_whole_file() {
    let mut seen = 0;
    for entry in std::fs::read_dir(sample("")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let is_capture = [".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"]
            .iter()
            .any(|ext| name.ends_with(ext));
        if !is_capture {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let run = analyze(&path);
        check_accounting(&run, &bytes, &name);
        assert!(
            run.doc["inputs"][0]["accounting"]["bytes"]["lost"]
                .as_object()
                .unwrap()
                .is_empty(),
            "{name}: a whole sample loses nothing reading it"
        );
        assert_ne!(run.code, 3, "{name}: {}", run.stderr);
        seen += 1;
    }
    assert!(seen >= 20, "only {seen} sample captures found");
}

#[test]
fn corrupt_pcap_record_in_the_middle_changes_nothing_but_says_so_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample("python-sdk-healthy.pcap")).unwrap();
    let whole = analyze(&sample("python-sdk-healthy.pcap"));
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let records = pcap_records(&bytes);
    let at = records[records.len() / 2];
    let damaged = spliced(&bytes, at, &garbage());
    let path = write(dir.path(), "damaged.pcap", &damaged);
    let run = analyze(&path);
    check_accounting(&run, &damaged, "damaged.pcap");
    // The MCP exchanges after the corrupt record are all found: the same sessions, the same
    // findings, the same frame numbers.
    assert!(!whole.doc["sessions"].as_array().unwrap().is_empty());
    assert!(sessions(&run) == sessions(&whole), "{}", run.stderr);
    assert!(run.doc["findings"] == whole.doc["findings"]);
    let lost = &run.doc["inputs"][0]["accounting"]["bytes"]["lost"];
    assert_eq!(lost["corrupt_record"], garbage().len() as u64);
    let warning = format!(
        "warning: corrupt pcap record at byte {at}: {} bytes skipped",
        garbage().len()
    );
    assert!(run.stderr.contains(&warning), "{warning} in {}", run.stderr);
    assert!(
        run.doc["inputs"][0]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("corrupt pcap record at byte")),
        "the warning is in the JSON inputs entry too"
    );
    assert_eq!(run.code, 3, "data lost, nothing found: {}", run.stderr);
}

#[test]
fn garbage_between_pcapng_blocks_is_stepped_over() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample("python-sdk-healthy.pcapng")).unwrap();
    let whole = analyze(&sample("python-sdk-healthy.pcapng"));
    let blocks = pcapng_blocks(&bytes);
    let at = blocks[blocks.len() / 2];
    // 13 bytes: the blocks after it are no longer at a multiple of 4 from the start.
    let junk: Vec<u8> = (0..13u8).map(|i| i.wrapping_mul(91)).collect();
    let damaged = spliced(&bytes, at, &junk);
    let path = write(dir.path(), "damaged.pcapng", &damaged);
    let run = analyze(&path);
    check_accounting(&run, &damaged, "damaged.pcapng");
    assert!(sessions(&run) == sessions(&whole), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "corrupt pcapng block at byte {at}: 13 bytes skipped"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, 3);
}

#[test]
fn findings_outrank_lost_data_in_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample("seed-incident-client-leg.pcap")).unwrap();
    let records = pcap_records(&bytes);
    let damaged = spliced(&bytes, records[records.len() / 3], &garbage());
    let path = write(dir.path(), "seed.pcap", &damaged);
    let run = analyze(&path);
    check_accounting(&run, &damaged, "seed.pcap");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("corrupt pcap record"), "{}", run.stderr);
}

#[test]
fn small_cut_gzip_capture_is_analysed_up_to_its_cut() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample("python-sdk-healthy.pcap")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&bytes).unwrap();
    let mut compressed = gz.finish().unwrap();
    // Most of the file, cut inside the deflate stream: smaller than any read-ahead.
    compressed.truncate(compressed.len() * 9 / 10);
    assert!(compressed.len() < 64 << 10, "{}", compressed.len());
    let path = write(dir.path(), "cut.pcap.gz", &compressed);
    let run = analyze(&path);
    assert!(
        run.doc["inputs"][0]["error"].is_null(),
        "not rejected whole: {}",
        run.stderr
    );
    check_accounting(&run, &compressed, "cut.pcap.gz");
    assert_eq!(run.doc["inputs"][0]["format"], "pcap+gzip");
    assert!(
        !run.doc["sessions"].as_array().unwrap().is_empty(),
        "the sessions before the cut are found: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("warning: the gzip stream is cut or damaged at decompressed byte"),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
}

#[test]
fn truncated_pcap_exits_3_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample("python-sdk-healthy.pcap")).unwrap();
    let cut = &bytes[..bytes.len() - 5];
    let path = write(dir.path(), "cut.pcap", cut);
    let run = analyze(&path);
    check_accounting(&run, cut, "cut.pcap");
    let lost = &run.doc["inputs"][0]["accounting"]["bytes"]["lost"];
    assert!(lost["truncated"].as_u64().unwrap() > 0, "{lost}");
    assert!(
        run.stderr.contains("warning: the capture is truncated"),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, 3);
}

#[test]
fn idle_timeout_of_two_to_the_63_is_refused() {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "--idle-timeout", "9223372036854775808"])
        .arg(sample("python-sdk-healthy.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--idle-timeout"), "{err}");
}

#[test]
fn every_hostile_capture_has_balanced_accounting_of_its_whole_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions/capture_file");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let run = analyze(&path);
        check_accounting(&run, &bytes, &name);
        let lost = &run.doc["inputs"][0]["accounting"]["bytes"]["lost"];
        let read_lost = ["corrupt_record", "truncated"]
            .iter()
            .any(|k| lost[*k].as_u64().is_some_and(|n| n > 0));
        if read_lost {
            assert!(run.stderr.contains("warning:"), "{name}: {}", run.stderr);
            assert!(matches!(run.code, 1 | 3), "{name}: exit {}", run.code);
        }
        seen += 1;
    }
    assert!(seen > 0);
}
