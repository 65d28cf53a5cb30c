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
    // curl fetched /mcp seven times, one suite each: all are decrypted.
    let (out, err, _) = run(&["analyze", "--format", "json", "--tls-keylog", KEYS, PCAP]);
    let s = summary(&out);
    assert_eq!(s["http_exchanges"], 7, "{err}");
    let limits: Vec<&str> = s["limits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        limits.contains(&"TLS: 7 of 7 connections decrypted with the key log"),
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
        7
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

/// The official TypeScript SDK client over HTTPS through nginx to the SDK server
/// (`samples/make/ts-sdk-tls.sh`): decrypted with the client's key log, the TLS leg holds the
/// session the client says it had, with every request it sent, exactly as the plaintext leg
/// behind nginx does; the two legs tie, and healthy traffic gets no finding.
#[test]
fn an_sdk_session_over_tls_is_the_same_as_its_plaintext_leg() {
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/samples/ts-sdk-tls.truth.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let keys = "samples/ts-sdk-tls.keys";
    let tls_leg = "samples/ts-sdk-tls-client-leg.pcap";
    let clear_leg = "samples/ts-sdk-tls-server-leg.pcap";
    let doc = |args: &[&str]| -> serde_json::Value {
        let (out, err, _) = run(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"))
    };
    let sessions = |d: &serde_json::Value| -> Vec<String> {
        d["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap().to_string())
            .collect()
    };
    let decrypted = doc(&["analyze", "--format", "json", "--tls-keylog", keys, tls_leg]);
    let clear = doc(&["analyze", "--format", "json", clear_leg]);
    let want: Vec<String> = truth["client_sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(sessions(&decrypted), want);
    assert_eq!(sessions(&clear), want);
    for d in [&decrypted, &clear] {
        assert_eq!(d["summary"]["mcp_exchanges"], truth["client_requests"]);
        assert!(
            d["findings"].as_array().unwrap().is_empty(),
            "{}",
            d["findings"]
        );
    }
    let both = doc(&[
        "analyze",
        "--format",
        "json",
        "--tls-keylog",
        keys,
        tls_leg,
        clear_leg,
    ]);
    let sessions = both["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "the two legs are one session");
    let points = sessions[0]["vantage_points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "seen at both legs: {points:?}");
    assert!(
        both["findings"].as_array().unwrap().is_empty(),
        "{}",
        both["findings"]
    );
    // Without the key log the TLS leg holds no session.
    let (_, _, code) = run(&["analyze", tls_leg]);
    assert_eq!(code, 5);
}

/// A pcapng whose Decryption Secrets Block holds the key log (`editcap --inject-secrets`) is
/// decrypted with no flag, and the secrets it carries reach no output either.
#[test]
fn the_key_log_inside_a_pcapng_is_used_and_never_echoed() {
    let dsb = "samples/tls-nginx-curl-dsb.pcapng";
    let (out, err, _) = run(&["analyze", "--format", "json", "--events", dsb]);
    assert_eq!(summary(&out)["http_exchanges"], 7, "{err}");
    let keys = std::fs::read_to_string(format!("{}/{KEYS}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    for secret in keys.lines().filter_map(|l| l.split_whitespace().nth(2)) {
        assert!(!out.contains(secret) && !err.contains(secret));
    }
    let (table, _, _) = run(&["analyze", dsb]);
    assert!(
        table.contains("TLS: 7 of 7 connections decrypted"),
        "{table}"
    );
}

/// `http` reads decrypted TLS as `analyze` does: with the key log, or the one inside a pcapng.
#[test]
fn the_http_view_decrypts_too() {
    for args in [
        vec!["http", "--format", "json", "--tls-keylog", KEYS, PCAP],
        vec![
            "http",
            "--format",
            "json",
            "samples/tls-nginx-curl-dsb.pcapng",
        ],
    ] {
        let (out, err, code) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["exchanges"].as_array().unwrap().len(), 7, "{args:?}");
        assert!(
            err.contains("note: TLS: 7 of 7 connections decrypted"),
            "{err}"
        );
    }
    let (out, _, _) = run(&["http", "--format", "json", PCAP]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(doc["exchanges"].as_array().unwrap().is_empty());
}

/// Each finding's kind and severity, in the report's order.
fn findings(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_seed_incident_over_tls_gives_the_findings_of_its_plaintext_leg() {
    // seed-client --HTTPS--> the buffering nginx --HTTP--> seed-server: the decrypted client leg
    // must tell the incident as the server leg, and as the plaintext seed incident, do.
    let leg = "samples/seed-incident-tls-client-leg.pcap";
    let keys = "samples/seed-incident-tls.keys";
    let (out, err, code) = run(&["analyze", "--format", "json", "--tls-keylog", keys, leg]);
    assert_eq!(code, 1, "findings above --fail-on: {err}");
    let tls: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (out, _, _) = run(&[
        "analyze",
        "--format",
        "json",
        "samples/seed-incident-tls-server-leg.pcap",
    ]);
    let plain: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(findings(&tls), findings(&plain));
    let kinds: Vec<String> = findings(&tls).into_iter().map(|(k, _)| k).collect();
    for k in [
        "cross_namespace_replay",
        "unsafe_resumption_after_fallback",
        "duplicate_response",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{k} missing: {kinds:?}");
    }
    assert_eq!(
        tls["sessions"][0]["session_id"],
        plain["sessions"][0]["session_id"]
    );
    // Without its key log: the connections are counted as TLS, nothing is invented.
    let (out, err, code) = run(&["analyze", leg]);
    assert_eq!(code, 5, "{out}");
    assert!(err.contains("4 TLS connections"), "{err}");
}

/// The key log of `samples/tls-resumption.pcap` without the lines of these client randoms.
fn keys_without(randoms: &[&str], name: &str) -> std::path::PathBuf {
    let all = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/tls-resumption.keys"
    ))
    .unwrap();
    let kept: String = all
        .lines()
        .filter(|l| !randoms.iter().any(|r| l.contains(r)))
        .map(|l| format!("{l}\n"))
        .collect();
    let path = std::env::temp_dir().join(format!("mcpf-{name}-{}.keys", std::process::id()));
    std::fs::write(&path, kept).unwrap();
    path
}

#[test]
fn resumed_sessions_and_mac_then_encrypt_records_are_decrypted_and_a_missing_resumed_secret_is_named()
 {
    // Five connections: TLS 1.3 and its PSK resumption, TLS 1.2 and its ticket resumption, TLS
    // 1.2 AES-128-CBC-SHA with MAC-then-encrypt (s_client -no_etm). All decrypt with their log.
    let pcap = "samples/tls-resumption.pcap";
    let (out, err, _) = run(&[
        "analyze",
        "--format",
        "json",
        "--tls-keylog",
        "samples/tls-resumption.keys",
        pcap,
    ]);
    let s = summary(&out);
    assert_eq!(s["http_exchanges"], 5, "{err}");
    assert_eq!(s["tls_not_decrypted"].as_array().unwrap().len(), 0);
    // Without the secrets of the two resumed connections (streams 1 and 3).
    let resumed = [
        "a5dd5d54a5edd9793091d4d8571b0b1a32d9d4227f11391d43436e3529a5ed2d",
        "997e5f8109cfb5af18a1c05cd020986a1af7bf72df459294866e78ffc8a364a6",
    ];
    let keys = keys_without(&resumed, "resumed");
    let (out, _, _) = run(&[
        "analyze",
        "--format",
        "json",
        "--tls-keylog",
        keys.to_str().unwrap(),
        pcap,
    ]);
    let _ = std::fs::remove_file(&keys);
    let s = summary(&out);
    assert_eq!(s["http_exchanges"], 3);
    let listed = s["tls_not_decrypted"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    for l in listed {
        assert!(
            l["reason"]
                .as_str()
                .unwrap()
                .starts_with("a resumed session"),
            "{l}"
        );
    }
    // A full handshake's missing secret is no resumption.
    let keys = keys_without(
        &["feb657a4bafcbf3b14b95a04b87495533182505ff8ff95e9f4fdb1ed36887ad3"],
        "full",
    );
    let (out, _, _) = run(&[
        "analyze",
        "--format",
        "json",
        "--tls-keylog",
        keys.to_str().unwrap(),
        pcap,
    ]);
    let _ = std::fs::remove_file(&keys);
    let listed = summary(&out)["tls_not_decrypted"].clone();
    assert_eq!(
        listed[0]["reason"],
        "no secret in the key log for this connection's client random"
    );
}
