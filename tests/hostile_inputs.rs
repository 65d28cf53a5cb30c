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
