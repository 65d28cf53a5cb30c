//! `analyze --tls-keylog`: the TLS connections of a capture are decrypted and read as HTTP; what
//! cannot be is counted with its reason; the key log never reaches any output.

use assert_cmd::Command;

fn run(args: &[&str]) -> (String, String, i32) {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("SSLKEYLOGFILE")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap(),
    )
}

const PCAP: &str = "samples/tls-nginx-curl.pcap";
const KEYS: &str = "samples/tls-nginx-curl.keys";

fn summary(stdout: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(stdout).unwrap();
    doc["summary"].clone()
}

#[test]
fn a_key_log_turns_tls_connections_into_http_exchanges() {
    // curl fetched /mcp seven times; six suites are decrypted, AES-CBC is not (yet).
    let (out, err, _) = run(&["analyze", "--format", "json", "--tls-keylog", KEYS, PCAP]);
    let s = summary(&out);
    assert_eq!(s["http_exchanges"], 6, "{err}");
    let limits: Vec<&str> = s["limits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        limits.contains(
            &"TLS: 6 of 7 connections decrypted with the key log; not decrypted: 1 (cipher suite 0xC009 is not one this build decrypts)"
        ),
        "{limits:?}"
    );
    // Without it: nothing is read as HTTP, as before.
    let (out, _, _) = run(&["analyze", "--format", "json", PCAP]);
    assert!(out.is_empty() || summary(&out)["http_exchanges"] == 0);
    // SSLKEYLOGFILE does the same as the flag.
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SSLKEYLOGFILE", KEYS)
        .args(["analyze", "--format", "json", PCAP])
        .output()
        .unwrap();
    assert_eq!(
        summary(&String::from_utf8(out.stdout).unwrap())["http_exchanges"],
        6
    );
}

#[test]
fn the_key_log_is_never_echoed() {
    let keys = std::fs::read_to_string(format!("{}/{KEYS}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let secrets: Vec<&str> = keys
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert!(secrets.len() >= 6);
    for args in [
        vec!["analyze", "--tls-keylog", KEYS, PCAP],
        vec![
            "analyze",
            "--format",
            "json",
            "--events",
            "--tls-keylog",
            KEYS,
            PCAP,
        ],
        vec![
            "analyze",
            "--tls-keylog",
            KEYS,
            "samples/seed-incident-client-leg.pcap",
        ],
    ] {
        let (out, err, _) = run(&args);
        for s in &secrets {
            assert!(
                !out.contains(s) && !err.contains(s),
                "{args:?} echoed a secret"
            );
        }
    }
    // A file that is not a key log: named, with what is wrong, and nothing of its content.
    let (_, err, code) = run(&["analyze", "--tls-keylog", PCAP, PCAP]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--tls-keylog samples/tls-nginx-curl.pcap: no secret in it"),
        "{err}"
    );
    let (_, err, code) = run(&["analyze", "--tls-keylog", "samples/none.keys", PCAP]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--tls-keylog samples/none.keys: cannot read it"),
        "{err}"
    );
}
