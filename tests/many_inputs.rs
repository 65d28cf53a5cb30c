//! A directory of thousands of captures (a rotated capture, a fleet's files) is read under the
//! usual limit of 1,024 open files: inputs are opened in turn, and each costs a buffer sized by
//! what it holds (a 1 MiB buffer per open once made 3,000 small files take 107 s of mostly
//! system time; they take under a second).

use std::process::Command;

#[test]
fn three_thousand_files_under_a_limit_of_1024_open_files() {
    let dir = std::env::temp_dir().join(format!("mcpf-many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/http-basic.pcap");
    for i in 0..3000 {
        std::fs::copy(&sample, dir.join(format!("part{i:04}.pcap"))).unwrap();
    }
    let bin = assert_cmd::cargo::cargo_bin("mcp-forensics");
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 1024 && exec "$0" analyze -q -f json "$1""#)
        .arg(&bin)
        .arg(&dir)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let inputs = report["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 3000);
    assert!(
        inputs
            .iter()
            .all(|i| i["error"].is_null() && i["packets"] == 61),
        "every file read whole"
    );
    // Every file is the same traffic: one link captured 3,000 times, read once.
    assert_eq!(report["summary"]["connections"], 3);
    assert_eq!(out.status.code(), Some(5), "no MCP session in http-basic");
    std::fs::remove_dir_all(dir).unwrap();
}
