//! Standard input and FIFOs are recognised by content as a file is (a capture, a HAR file, a
//! JSON or text access log, gzip or not) and give the same report as the file given by path.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn analyze(args: &[&str], input: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-forensics"));
    cmd.current_dir(ROOT)
        .args(["analyze", "--format", "json"])
        .args(args)
        .arg(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// `analyze ARGS -` with `chunks` written to its standard input, `pause` between them.
fn piped(args: &[&str], chunks: &[&[u8]], pause: Duration) -> Output {
    let mut child = analyze(args, "-").stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for (i, chunk) in chunks.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(pause);
        }
        stdin.write_all(chunk).unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// The report with every string naming `path` renamed `-`: the only difference allowed.
fn report(out: &Output, path: &str) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {stderr}\n{}", String::from_utf8_lossy(&out.stdout)));
    rename(&mut doc, path);
    doc
}

fn rename(v: &mut Value, path: &str) {
    match v {
        Value::String(s) if s == path => *s = "-".into(),
        Value::Array(a) => a.iter_mut().for_each(|v| rename(v, path)),
        Value::Object(o) => o.values_mut().for_each(|v| rename(v, path)),
        _ => {}
    }
}

/// The file by path and its bytes on standard input (as one write, and in small pieces with
/// pauses, as a live pipe gives them) give the same report and exit status.
fn same_as_by_path(args: &[&str], path: &str) {
    let by_path = analyze(args, path).output().unwrap();
    let expected = report(&by_path, path);
    assert!(
        expected["sessions"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{path}: a sample with sessions"
    );
    let bytes = read(path);
    let whole = piped(args, &[&bytes], Duration::ZERO);
    assert_eq!(whole.status.code(), by_path.status.code(), "{path}");
    assert_eq!(report(&whole, path), expected, "{path} on standard input");
    // The head is looked at in what has come so far: 3 bytes, then a line's worth, then the rest.
    let (a, rest) = bytes.split_at(3);
    let (b, c) = rest.split_at(rest.len().min(300));
    let pieces = piped(args, &[a, b, c], Duration::from_millis(150));
    assert_eq!(report(&pieces, path), expected, "{path} in pieces");
}

/// A file named from the repository's root (or an absolute path).
fn read(path: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(ROOT).join(path)).unwrap()
}

fn gzipped(path: &str) -> String {
    let name = std::path::Path::new(path).file_name().unwrap();
    let out = format!(
        "{}/streamed-{}.gz",
        env!("CARGO_TARGET_TMPDIR"),
        name.to_string_lossy()
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&read(path)).unwrap();
    std::fs::write(&out, gz.finish().unwrap()).unwrap();
    out
}

#[test]
fn a_pcap_on_standard_input() {
    same_as_by_path(&[], "samples/python-sdk-healthy.pcap");
}

#[test]
fn a_pcapng_on_standard_input() {
    same_as_by_path(&[], "samples/python-sdk-healthy.pcapng");
}

#[test]
fn a_gzipped_pcap_on_standard_input() {
    same_as_by_path(&[], &gzipped("samples/seed-incident-client-leg.pcap"));
}

#[test]
fn a_har_on_standard_input() {
    same_as_by_path(&[], "samples/mitmproxy-python-sdk.har");
}

#[test]
fn an_nginx_json_log_on_standard_input() {
    same_as_by_path(&[], "samples/seed-incident.nginx.jsonl");
}

#[test]
fn a_gzipped_nginx_json_log_on_standard_input() {
    same_as_by_path(&[], &gzipped("samples/seed-incident.nginx.jsonl"));
}

#[test]
fn haproxy_and_caddy_logs_on_standard_input() {
    same_as_by_path(&[], "samples/haproxy-seed.jsonl");
    same_as_by_path(&[], "samples/caddy-seed.jsonl");
}

#[test]
fn a_text_log_with_log_format_on_standard_input() {
    let format = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_mcp_session_id" "$sent_http_mcp_session_id" "$http_last_event_id" "$sent_http_content_type" $request_time"#;
    same_as_by_path(
        &["--log-format", format],
        "samples/nginx-formats-seed.combined-mcp.log",
    );
}

#[test]
fn garbage_on_standard_input_is_an_unreadable_input() {
    let out = piped(
        &[],
        &[b"\x05\x7e\x99 this is no capture, no HAR, no log"],
        Duration::ZERO,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("mcp-forensics: -: starts with 05 7e 99")
            && stderr.contains("not a packet capture (pcap, pcapng), a HAR file or a JSON Lines"),
        "{stderr}"
    );
}

#[test]
fn empty_standard_input_is_said_to_be_empty() {
    let out = piped(&[], &[], Duration::ZERO);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("-: is empty"), "{stderr}");
}

/// A HAR through a FIFO is read whole once (it cannot be read twice, as a HAR file is).
#[test]
fn a_har_and_a_log_through_a_fifo() {
    for path in [
        "samples/mitmproxy-python-sdk.har",
        "samples/seed-incident.nginx.jsonl",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("input");
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let fifo = fifo.to_str().unwrap();
        let child = analyze(&[], fifo).spawn().unwrap();
        // Opening the write end waits for the analyzer to open the read end.
        let mut writer = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
        writer.write_all(&read(path)).unwrap();
        drop(writer);
        let out = child.wait_with_output().unwrap();
        let by_path = analyze(&[], path).output().unwrap();
        assert_eq!(out.status.code(), by_path.status.code(), "{path}");
        assert_eq!(
            report(&out, fifo),
            report(&by_path, path),
            "{path} through a FIFO"
        );
    }
}
