//! Hostile and huge HTTP messages through the whole pipeline (a capture file written here, the
//! binary run on it): decompression bombs stop at the decoding budget, a head with too many
//! headers is still reported, and huge legitimate results are no finding.

use std::io::Write;
use std::net::SocketAddr;

use assert_cmd::Command;
use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::tcp::SeqNumber;
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_model::Timestamp;

/// TCP segments as large as an IPv4 packet holds (what the issue's bomb came in).
const SEGMENT: usize = 65_000;

/// One connection carrying `messages` (true = client to server), each in `SEGMENT`-sized
/// segments, written to a pcap file at `path`.
fn write_capture(path: &std::path::Path, messages: &[(bool, Vec<u8>)]) {
    let c: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let s: SocketAddr = "10.0.0.2:3000".parse().unwrap();
    let (mut cs, mut ss) = (1000u32, 9000u32);
    let flags = |syn, ack, fin| TcpFlags {
        syn,
        ack,
        fin,
        rst: false,
    };
    let mut frames = vec![
        ip_packet(&SegmentSpec::new(c, s, cs, 0, b"").flags(flags(true, false, false))),
        ip_packet(&SegmentSpec::new(s, c, ss, cs + 1, b"").flags(flags(true, true, false))),
    ];
    cs += 1;
    ss += 1;
    for (to_server, bytes) in messages {
        for seg in bytes.chunks(SEGMENT) {
            if *to_server {
                frames.push(ip_packet(&SegmentSpec::new(c, s, cs, ss, seg)));
                cs = (SeqNumber(cs) + seg.len() as u32).0;
            } else {
                frames.push(ip_packet(&SegmentSpec::new(s, c, ss, cs, seg)));
                ss = (SeqNumber(ss) + seg.len() as u32).0;
            }
        }
    }
    frames.push(ip_packet(
        &SegmentSpec::new(c, s, cs, ss, b"").flags(flags(false, true, true)),
    ));
    frames.push(ip_packet(
        &SegmentSpec::new(s, c, ss, cs + 1, b"").flags(flags(false, true, true)),
    ));
    let mut w = PcapWriter::new(Vec::new(), linktype::RAW, 0, false, false).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let framed = link_frame(linktype::RAW, f, &[]);
        let t = Timestamp::from_secs_nanos(1_790_000_000, 0).add_nanos(i as i64 * 1_000_000);
        w.packet(t, &framed, framed.len() as u32).unwrap();
    }
    std::fs::write(path, w.into_inner()).unwrap();
}

fn post(body: &[u8], extra_headers: &str) -> Vec<u8> {
    let mut m = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nMcp-Session-Id: s-1\r\nMCP-Protocol-Version: 2025-06-18\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{extra_headers}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    m.extend_from_slice(body);
    m
}

fn response(content_type: &str, encoding: Option<&str>, body: &[u8]) -> Vec<u8> {
    let enc = encoding
        .map(|e| format!("Content-Encoding: {e}\r\n"))
        .unwrap_or_default();
    let mut m = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nMcp-Session-Id: s-1\r\n{enc}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    m.extend_from_slice(body);
    m
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"screenshot","arguments":{}}}"#;

/// The start of a session, then `rest`.
fn session(rest: Vec<(bool, Vec<u8>)>) -> Vec<(bool, Vec<u8>)> {
    let mut m = vec![
        (true, post(INIT.as_bytes(), "")),
        (
            false,
            response("application/json", None, INIT_RESULT.as_bytes()),
        ),
    ];
    m.extend(rest);
    m
}

/// A file removed when the test ends, unless `MCPF_KEEP_INPUTS` names a folder to leave it in
/// (to measure the binary on it).
struct TempPath(std::path::PathBuf, bool);

impl TempPath {
    fn new(name: &str) -> Self {
        if let Some(dir) = std::env::var_os("MCPF_KEEP_INPUTS") {
            return TempPath(std::path::Path::new(&dir).join(name), true);
        }
        let p = std::env::temp_dir().join(format!("mcpf-hostile-{}-{name}", std::process::id()));
        TempPath(p, false)
    }
    fn as_str(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if !self.1 {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c < 3),
        "{args:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}\n{}",
            String::from_utf8_lossy(&out.stdout[..out.stdout.len().min(4000)])
        )
    })
}

/// `len` zero bytes compressed by `enc`.
fn compressed(enc: &str, data: &mut dyn FnMut(&mut dyn Write)) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w: Box<dyn Write + '_> = match enc {
            "gzip" => Box::new(flate2::write::GzEncoder::new(
                &mut out,
                flate2::Compression::best(),
            )),
            _ => Box::new(brotli::CompressorWriter::new(&mut out, 1 << 16, 5, 22)),
        };
        data(&mut *w);
    }
    out
}

fn zeros(len: usize) -> impl FnMut(&mut dyn Write) {
    move |w| {
        let z = vec![0u8; 1 << 20];
        for _ in 0..len >> 20 {
            w.write_all(&z).unwrap();
        }
    }
}

#[test]
fn decompression_bombs_stop_at_the_budget_and_the_message_is_reported() {
    for enc in ["br", "gzip"] {
        let bomb = compressed(
            enc,
            &mut zeros(if enc == "br" { 1 << 30 } else { 64 << 20 }),
        );
        let file = TempPath::new(&format!("bomb-{enc}.pcap"));
        write_capture(
            &file.0,
            &session(vec![
                (true, post(CALL.as_bytes(), "")),
                (false, response("application/json", Some(enc), &bomb)),
            ]),
        );
        let http = run_json(&["http", "--format", "json", file.as_str()]);
        let text = http.to_string();
        assert!(text.contains("decoding stopped at"), "{enc}: {text:.3000}");
        let report = run_json(&["analyze", "--format", "json", file.as_str()]);
        assert!(
            report["summary"]["http_anomalies"].as_u64() > Some(0),
            "{enc}: {report:#}"
        );
        let text = report.to_string();
        assert!(text.contains("tools/call"), "{enc}: the call is reported");
    }
}

#[test]
fn a_head_of_200_fields_is_reported_with_its_tools_call() {
    let pad: String = (0..200).map(|i| format!("X-Pad-{i}: {i}\r\n")).collect();
    let call = post(CALL.as_bytes(), &pad);
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
    let file = TempPath::new("headers-200.pcap");
    write_capture(
        &file.0,
        &session(vec![
            (true, call),
            (false, response("application/json", None, answer.as_bytes())),
        ]),
    );
    let http = run_json(&["http", "--format", "json", file.as_str()]).to_string();
    assert!(
        http.contains("past the first 128 dropped"),
        "the dropped fields are said: {http:.3000}"
    );
    let report = run_json(&["analyze", "--format", "json", "--events", file.as_str()]);
    let text = report.to_string();
    assert!(text.contains("\"tools/call\""), "{report:#}");
    assert!(text.contains("screenshot"), "the call's tool is reported");
}

/// A tools/call result carrying `len` bytes of base64 (a screenshot), with its `id` after it.
fn screenshot_result(len: usize) -> String {
    let b64 = "iVBORw0KGgoAAAANSUhEUgAA".repeat(len / 24 + 1);
    format!(
        r#"{{"jsonrpc":"2.0","result":{{"content":[{{"type":"image","mimeType":"image/png","data":"{}"}}]}},"id":2}}"#,
        &b64[..len]
    )
}

/// Every finding of `report` is `info`, and no request is unanswered.
fn assert_no_finding_above_info(report: &serde_json::Value, what: &str) {
    for f in report["findings"].as_array().unwrap() {
        assert_eq!(f["severity"], "info", "{what}: {f:#}");
        assert_ne!(f["kind"], "unanswered_request", "{what}: {f:#}");
    }
}

#[test]
fn huge_tool_results_are_no_finding() {
    let sse_event = |data: &str| format!("event: message\ndata: {data}\n\n").into_bytes();
    let cases = [
        (
            "sse-10mb",
            "text/event-stream",
            sse_event(&screenshot_result(10 << 20)),
        ),
        (
            "sse-20mb",
            "text/event-stream",
            sse_event(&screenshot_result(20 << 20)),
        ),
        (
            "json-20mb",
            "application/json",
            screenshot_result(20 << 20).into_bytes(),
        ),
    ];
    for (name, content_type, body) in cases {
        let file = TempPath::new(&format!("{name}.pcap"));
        write_capture(
            &file.0,
            &session(vec![
                (true, post(CALL.as_bytes(), "")),
                (false, response(content_type, None, &body)),
            ]),
        );
        let report = run_json(&["analyze", "--format", "json", file.as_str()]);
        assert_no_finding_above_info(&report, name);
        let text = report.to_string();
        assert!(text.contains("\"tools/call\""), "{name}: {report:#}");
    }
}

#[test]
fn a_deeply_nested_tools_call_is_still_a_tools_call() {
    let depth = 10_000;
    let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"screenshot","arguments":{{"deep":{nested}}}}}}}"#
    );
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
    let file = TempPath::new("nested.pcap");
    write_capture(
        &file.0,
        &session(vec![
            (true, post(call.as_bytes(), "")),
            (false, response("application/json", None, answer.as_bytes())),
        ]),
    );
    let report = run_json(&["analyze", "--format", "json", "--events", file.as_str()]);
    let text = report.to_string();
    assert!(text.contains("\"tools/call\""), "{report:#}");
    assert_no_finding_above_info(&report, "nested");
}
