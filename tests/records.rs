//! Exchange records (docs/records.md): `extract` then `analyze` on the record file gives the
//! report the inputs themselves give, byte for byte (findings, evidence, frame references naming
//! the original inputs, counts, limits), on every committed sample and on the multi-input sets
//! (both proxy legs and the proxy's log, replicas, two vantage points, TLS with keys, a HAR
//! beside a capture). A damaged or cut record file gives what can still be trusted and says
//! what was lost; what cannot be analysed together is refused with a clear error.

#[path = "support/samples.rs"]
mod samples;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bin(args: &[&str]) -> Output {
    Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpf-records-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The TLS key log a sample is decrypted with, when it has one.
fn keys_of(name: &str) -> Option<String> {
    let stem = name
        .trim_end_matches(".pcapng")
        .trim_end_matches(".pcap")
        .trim_end_matches("-dsb")
        .replace("-client-leg", "")
        .replace("-server-leg", "");
    let keys = format!("samples/{stem}.keys");
    root().join(&keys).exists().then_some(keys)
}

/// Extracts `inputs` (with `extra` options) into a record file, analyses it, and asserts the
/// report and exit code equal those of `analyze` on the inputs.
fn same_report(label: &str, inputs: &[&str], extra: &[&str], threads: &str) {
    let records = tmp(&format!("{label}.records.ndjson"));
    let records = records.to_str().unwrap();
    let mut ex = vec!["extract", "-q", "--threads", threads, "-o", records];
    ex.extend(extra);
    ex.extend(inputs);
    let out = bin(&ex);
    assert!(
        out.status.success() || out.status.code() == Some(3),
        "{label}: extract failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut raw = vec!["analyze", "-f", "json", "-q", "--threads", threads];
    raw.extend(extra.iter().filter(|a| **a != "--show-secrets"));
    raw.extend(inputs);
    let from_inputs = bin(&raw);
    let from_records = bin(&["analyze", "-f", "json", "-q", "--threads", threads, records]);
    assert_eq!(
        from_records.status.code(),
        from_inputs.status.code(),
        "{label}: exit code"
    );
    let (a, b) = (
        String::from_utf8(from_records.stdout).unwrap(),
        String::from_utf8(from_inputs.stdout).unwrap(),
    );
    if a != b {
        let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
        panic!("{label}: the report from records differs from the inputs' at line {line:?}");
    }
    std::fs::remove_file(records).unwrap();
}

#[test]
fn every_sample_gives_the_same_report_from_its_records() {
    for name in samples::names() {
        let path = format!("samples/{name}");
        let keys = keys_of(&name);
        let extra: Vec<&str> = match &keys {
            Some(k) => vec!["-k", k.as_str()],
            None => vec![],
        };
        same_report(&name, &[&path], &extra, "1");
    }
}

#[test]
fn multi_input_sets_give_the_same_report_at_any_threads() {
    let sets: &[(&str, &[&str], &[&str])] = &[
        (
            "seed-legs-and-log",
            &[
                "samples/seed-incident-client-leg.pcap",
                "samples/seed-incident-server-leg.pcap",
                "samples/seed-incident.nginx.jsonl",
            ],
            &[],
        ),
        (
            "replicas",
            &[
                "samples/replicas-shared-store-client-leg.pcap",
                "samples/replicas-shared-store-server-leg.pcap",
                "samples/replicas-shared-store.nginx.jsonl",
            ],
            &[],
        ),
        (
            "concurrent-behind-nginx",
            &[
                "samples/concurrent-nginx-client-leg.pcap",
                "samples/concurrent-nginx-server-leg.pcap",
                "samples/concurrent-nginx.nginx.jsonl",
            ],
            &[],
        ),
        (
            "skewed-clocks",
            &[
                "samples/seed-incident-skew-client-leg.pcap",
                "samples/seed-incident-skew-server-leg.pcap",
            ],
            &[],
        ),
        (
            "tls-legs",
            &[
                "samples/seed-incident-tls-client-leg.pcap",
                "samples/seed-incident-tls-server-leg.pcap",
            ],
            &["-k", "samples/seed-incident-tls.keys"],
        ),
        (
            "har-beside-capture",
            &[
                "samples/seed-incident.mitmproxy.har",
                "samples/seed-incident-lo.pcap",
            ],
            &[],
        ),
        (
            "examined-whole",
            &["samples/late-mcp.pcap", "samples/not-mcp.pcap"],
            &["--examine-all"],
        ),
    ];
    for (label, inputs, extra) in sets {
        for threads in ["1", "3"] {
            same_report(&format!("{label}-t{threads}"), inputs, extra, threads);
        }
    }
}

/// Extracts each input of `inputs` alone, analyses the record files together, and asserts the
/// report equals that of one run over the inputs.
fn same_report_apart(label: &str, inputs: &[&str], extra: &[&str]) -> String {
    let mut records = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let path = tmp(&format!("{label}-{i}.records.ndjson"));
        let path = path.to_str().unwrap().to_string();
        let mut ex = vec!["extract", "-q", "-o", &path];
        ex.extend(extra);
        ex.push(input);
        assert!(bin(&ex).status.success(), "{label}: extract {input}");
        records.push(path);
    }
    let mut apart = vec!["analyze", "-f", "json", "-q"];
    apart.extend(records.iter().map(String::as_str));
    let from_records = bin(&apart);
    let mut raw = vec!["analyze", "-f", "json", "-q"];
    raw.extend(extra);
    raw.extend(inputs);
    let from_inputs = bin(&raw);
    assert_eq!(
        from_records.status.code(),
        from_inputs.status.code(),
        "{label}"
    );
    let (a, b) = (
        String::from_utf8(from_records.stdout).unwrap(),
        String::from_utf8(from_inputs.stdout).unwrap(),
    );
    let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
    assert!(
        a == b,
        "{label}: records extracted apart differ at line {line:?}"
    );
    a
}

#[test]
fn inputs_extracted_apart_give_the_report_of_one_run_over_them() {
    let sets: &[(&str, &[&str], &[&str])] = &[
        (
            "apart-seed",
            &[
                "samples/seed-incident-client-leg.pcap",
                "samples/seed-incident-server-leg.pcap",
                "samples/seed-incident.nginx.jsonl",
            ],
            &[],
        ),
        (
            "apart-replicas",
            &[
                "samples/replicas-own-store-client-leg.pcap",
                "samples/replicas-own-store-server-leg.pcap",
                "samples/replicas-own-store.nginx.jsonl",
            ],
            &[],
        ),
        (
            "apart-concurrent",
            &[
                "samples/concurrent-nginx-client-leg.pcap",
                "samples/concurrent-nginx-server-leg.pcap",
                "samples/concurrent-nginx.nginx.jsonl",
            ],
            &[],
        ),
        (
            "apart-skew",
            &[
                "samples/seed-incident-skew-client-leg.pcap",
                "samples/seed-incident-skew-server-leg.pcap",
            ],
            &[],
        ),
        (
            "apart-tls",
            &[
                "samples/seed-incident-tls-client-leg.pcap",
                "samples/seed-incident-tls-server-leg.pcap",
            ],
            &["-k", "samples/seed-incident-tls.keys"],
        ),
        (
            "apart-har",
            &[
                "samples/seed-incident.mitmproxy.har",
                "samples/seed-incident-lo.pcap",
            ],
            &[],
        ),
    ];
    for (label, inputs, extra) in sets {
        let report = same_report_apart(label, inputs, extra);
        assert!(
            !report.contains("record file"),
            "{label}: no limit of the records"
        );
    }
}

#[test]
fn one_link_captured_twice_and_extracted_apart_is_said() {
    let inputs = [
        "samples/seed-incident-twice-a.pcap",
        "samples/seed-incident-twice-b.pcap",
    ];
    let mut records = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let path = tmp(&format!("twice-{i}.records.ndjson"));
        let path = path.to_str().unwrap().to_string();
        assert!(bin(&["extract", "-q", "-o", &path, input]).status.success());
        records.push(path);
    }
    let mut args = vec!["analyze", "-f", "json", "-q"];
    args.extend(records.iter().map(String::as_str));
    let report = json(&bin(&args));
    let limits = report["summary"]["limits"].to_string();
    assert!(
        limits.contains("if they are one link captured twice"),
        "{limits}"
    );
    // Extracted in one run, the copies are recognised as the capture run recognises them.
    same_report("twice-together", &inputs, &[], "1");
    // An input in two record files would be analysed twice: refused.
    let mut again = args.clone();
    again.push(&records[0]);
    let out = bin(&again);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("analysed twice"));
}

fn extract_seed(name: &str) -> String {
    let records = tmp(name);
    let records = records.to_str().unwrap().to_string();
    let out = bin(&[
        "extract",
        "-q",
        "-o",
        &records,
        "samples/seed-incident-lo.pcap",
    ]);
    assert!(out.status.success());
    records
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_cut_record_file_gives_what_it_holds_and_says_so() {
    let records = extract_seed("whole.records.ndjson");
    let text = std::fs::read_to_string(&records).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Cut in the middle of its events, halfway through a line.
    let keep = lines.len() / 2;
    let mut cut = lines[..keep].join("\n");
    cut.push('\n');
    cut.push_str(&lines[keep][..lines[keep].len() / 2]);
    let cut_path = tmp("cut.records.ndjson");
    std::fs::write(&cut_path, cut).unwrap();
    let report = json(&bin(&[
        "analyze",
        "-f",
        "json",
        "-q",
        cut_path.to_str().unwrap(),
    ]));
    let limits = report["summary"]["limits"].to_string();
    assert!(
        limits.contains(&format!("could not be read past line {}", keep + 1)),
        "{limits}"
    );
    assert_eq!(report["inputs"][0]["path"], "samples/seed-incident-lo.pcap");
    assert!(report["summary"]["sessions"].as_u64().unwrap() >= 1);
    // Cut at a line's end: no damaged line, but no end line either.
    let clean_cut = tmp("clean-cut.records.ndjson");
    std::fs::write(&clean_cut, lines[..keep].join("\n") + "\n").unwrap();
    let report = json(&bin(&[
        "analyze",
        "-f",
        "json",
        "-q",
        clean_cut.to_str().unwrap(),
    ]));
    let limits = report["summary"]["limits"].to_string();
    assert!(limits.contains("the file was cut"), "{limits}");
}

#[test]
fn what_cannot_be_read_together_is_refused_by_name() {
    let records = extract_seed("refuse.records.ndjson");
    let out = bin(&["analyze", "-q", &records, "samples/http-basic.pcap"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("record files are analysed on their own"),
        "{err}"
    );
    // A file of another layout version is refused, not misread.
    let text = std::fs::read_to_string(&records).unwrap();
    let other = text.replacen("\"version\":1,", "\"version\":99,", 1);
    let other_path = tmp("v99.records.ndjson");
    std::fs::write(&other_path, other).unwrap();
    let out = bin(&["analyze", "-q", other_path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(err.contains("layout version 99"), "{err}");
}

#[test]
fn extract_names_its_file_after_the_first_input_in_a_directory() {
    let dir = tmp("dir");
    let out = bin(&[
        "extract",
        "-q",
        "-o",
        dir.to_str().unwrap(),
        "samples/http-basic.pcap",
    ]);
    assert!(out.status.success());
    let written = dir.join("http-basic.pcap.records.ndjson");
    let first = std::fs::read_to_string(&written).unwrap();
    let header: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(header["record"], "header");
    assert_eq!(header["format"], "mcp-forensics-records");
    assert_eq!(header["inputs"][0]["path"], "samples/http-basic.pcap");
    assert!(Path::new(&written).exists());
}
