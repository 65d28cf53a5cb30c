//! Early classification (docs/classification.md): connections set aside as not MCP change
//! nothing of what the report says of MCP. Every capture sample, a real capture whose MCP
//! sessions ride on connections that began with a download (one within the window kept, one
//! past it), and a generated mostly-not-MCP capture are analysed with and without
//! `--examine-all`, and their sessions, findings, timelines and call profiles compared.

#[path = "support/samples.rs"]
mod samples;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn analyze(args: &[&str]) -> Value {
    let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .args(["analyze", "-f", "json", "-q"])
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}\n{text}"))
}

/// What a report says of MCP: everything but the counts of HTTP and of what was set aside.
const MCP_KEYS: [&str; 4] = ["sessions", "findings", "timeline", "profile"];

/// Analyses `args` both ways, asserts that they say the same of MCP, and returns the
/// classified report.
fn same_both_ways(args: &[&str]) -> Value {
    let classified = analyze(args);
    let mut all = args.to_vec();
    all.push("--examine-all");
    let whole = analyze(&all);
    for key in MCP_KEYS {
        assert!(
            classified[key] == whole[key],
            "{args:?}: `{key}` differs with --examine-all"
        );
    }
    let s = (&classified["summary"], &whole["summary"]);
    for key in ["sessions", "findings", "mcp_exchanges", "mcp_unattributed"] {
        assert_eq!(s.0[key], s.1[key], "{args:?}: summary.{key}");
    }
    assert_eq!(s.1["http"]["set_aside"]["connections"], 0);
    classified
}

/// The generator `cargo test` built with the tests (examples are built with them), beside
/// them in the target directory.
fn gen_capture() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile.join("examples").join("gen_capture")
}

fn set_aside(doc: &Value, key: &str) -> u64 {
    doc["summary"]["http"]["set_aside"][key].as_u64().unwrap()
}

#[test]
fn every_capture_sample_says_the_same_of_mcp_classified_or_not() {
    let mut set_aside_somewhere = 0;
    for path in samples::paths() {
        if !(path.ends_with(".pcap") || path.ends_with(".pcapng")) {
            continue;
        }
        let mut args = vec![path.as_str()];
        let keys = path
            .replace("-client-leg", "")
            .replace("-server-leg", "")
            .replace(".pcapng", ".keys")
            .replace(".pcap", ".keys");
        if root().join(&keys).exists() {
            args.extend(["--tls-keylog", keys.as_str()]);
        }
        let doc = same_both_ways(&args);
        set_aside_somewhere += set_aside(&doc, "connections");
    }
    // The samples hold downloads, health checks, TLS without keys and other APIs (12 such
    // connections in not-mcp.pcap, 4 in late-mcp.pcap): a rule that set nothing aside would
    // pass the comparison above without testing it.
    assert!(set_aside_somewhere >= 16, "{set_aside_somewhere}");
}

#[test]
fn sessions_on_connections_that_began_with_a_download_are_analysed() {
    let doc = same_both_ways(&["samples/late-mcp.pcap"]);
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("samples/late-mcp.truth.json")).unwrap(),
    )
    .unwrap();
    let late = truth["sessions_on_download_connections"]
        .as_array()
        .unwrap();
    assert_eq!(late.len(), 2);
    // Both were set aside by their download and resumed by the initialize that followed it:
    // the 16 KiB one whole, the 1 MiB one past its window, its loss counted and said.
    assert_eq!(set_aside(&doc, "resumed"), 2);
    assert_eq!(set_aside(&doc, "resumed_with_loss"), 1);
    let lost = set_aside(&doc, "resumed_bytes_not_kept");
    assert!((1 << 20..(1 << 20) + 4096).contains(&lost), "{lost}");
    let limits = doc["summary"]["limits"].to_string();
    assert!(
        limits.contains("1 connections set aside as not MCP") && limits.contains(&lost.to_string()),
        "{limits}"
    );
    // Every session the clients opened is there, those two included, and nothing is wrong.
    assert_eq!(doc["summary"]["sessions"], truth["session_count"]);
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    for s in late {
        let id = s["session_id"].as_str().unwrap();
        assert!(ids.contains(&id), "{id} not among {ids:?}");
    }
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0);
}

#[test]
fn a_mostly_not_mcp_capture_says_what_its_mcp_alone_says() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed.pcap");
    let alone = dir.path().join("alone.pcap");
    let generator = Command::new(gen_capture())
        .args(["--size", "16MiB", "--noise-share", "0.96", "--seed", "3"])
        .arg("--out")
        .arg(&mixed)
        .arg("--mcp-out")
        .arg(&alone)
        .current_dir(root())
        .status()
        .unwrap();
    assert!(generator.success());
    let (mixed, alone) = (mixed.to_str().unwrap(), alone.to_str().unwrap());
    let doc = same_both_ways(&[mixed]);
    let only = analyze(&[alone]);
    assert_eq!(doc["summary"]["sessions"], only["summary"]["sessions"]);
    assert_eq!(doc["findings"], only["findings"]);
    // What the generator says it made to be set aside, reason by reason and byte for byte.
    let counts: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{mixed}.counts.json")).unwrap())
            .unwrap();
    let noise = &counts["noise"]["set_aside"];
    for key in [
        "connections",
        "tls_without_keys",
        "request_not_mcp",
        "jsonrpc_not_mcp",
        "json_not_jsonrpc",
        "bytes_not_examined",
    ] {
        let found = set_aside(&doc, key) - set_aside(&only, key);
        assert_eq!(found, noise[key].as_u64().unwrap(), "set_aside.{key}");
    }
}
