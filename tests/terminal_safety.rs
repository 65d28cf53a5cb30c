//! Strings from a capture never reach a terminal raw, and credentials never reach any output.
//!
//! The capture is crafted: escape sequences (CSI colours, an OSC title change), a bidi override
//! and a bearer token in the places a hostile peer controls — header values, the tool name, the
//! client name, the session ID, SSE data.

use std::net::SocketAddr;

use assert_cmd::Command;
use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_model::Timestamp;

const TOKEN: &str = "sk-live-CRAFTED-SECRET-0123456789";

/// Writes one TCP connection carrying `messages` (true = client to server) to a pcap file.
fn write_conversation(
    path: &std::path::Path,
    client_port: u16,
    messages: &[(bool, Vec<u8>)],
    out: &mut Vec<Vec<u8>>,
) {
    let c: SocketAddr = format!("10.0.0.1:{client_port}").parse().unwrap();
    let s: SocketAddr = "10.0.0.2:3000".parse().unwrap();
    let (mut cs, mut ss) = (1000u32, 9000u32);
    let flags = |syn, ack, fin| TcpFlags {
        syn,
        ack,
        fin,
        rst: false,
    };
    out.push(ip_packet(
        &SegmentSpec::new(c, s, cs, 0, b"").flags(flags(true, false, false)),
    ));
    out.push(ip_packet(
        &SegmentSpec::new(s, c, ss, cs + 1, b"").flags(flags(true, true, false)),
    ));
    cs += 1;
    ss += 1;
    for (to_server, bytes) in messages {
        if *to_server {
            out.push(ip_packet(&SegmentSpec::new(c, s, cs, ss, bytes)));
            cs += bytes.len() as u32;
        } else {
            out.push(ip_packet(&SegmentSpec::new(s, c, ss, cs, bytes)));
            ss += bytes.len() as u32;
        }
    }
    out.push(ip_packet(
        &SegmentSpec::new(c, s, cs, ss, b"").flags(flags(false, true, true)),
    ));
    out.push(ip_packet(
        &SegmentSpec::new(s, c, ss, cs + 1, b"").flags(flags(false, true, true)),
    ));
    let _ = path;
}

fn post(body: &str, session: Option<&str>) -> Vec<u8> {
    let sid = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nUser-Agent: \x1b[31mred-agent\x1b[0m\r\nAuthorization: Bearer {TOKEN}\r\n{sid}Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn sse_response(session: &str, data: &str) -> Vec<u8> {
    let event = format!("id: 1\nevent: message\ndata: {data}\n\n");
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: {session}\r\nX-Note: \x1b]0;pwned\x07\r\nContent-Length: {}\r\n\r\n{event}",
        event.len()
    )
    .into_bytes()
}

fn crafted_capture(name: &str) -> tempfile_path::TempPath {
    let session = "evil\x1b[2Jsession\u{202e}";
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"\u001b]0;owned\u0007client","version":"1"}}}"#;
    let init_result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"srv\u202eevil","version":"1"}}}"#;
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"\u001b]0;pwned\u0007reindex\u202e<script>alert(1)</script><img src=x onerror=alert(2)>","arguments":{{"note":"Bearer {TOKEN}"}}}}}}"#
    );
    let mut frames = Vec::new();
    write_conversation(
        std::path::Path::new(""),
        40000,
        &[
            (true, post(init, None)),
            (false, sse_response(session, init_result)),
        ],
        &mut frames,
    );
    // The tools/call is never answered: a finding whose summary carries the tool name.
    write_conversation(
        std::path::Path::new(""),
        40001,
        &[(true, post(&call, Some(session)))],
        &mut frames,
    );
    let file = tempfile_path::TempPath::new(&format!("{name}.pcap"));
    let mut w = PcapWriter::new(Vec::new(), linktype::RAW, 0, false, false).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let framed = link_frame(linktype::RAW, f, &[]);
        w.packet(
            Timestamp::from_secs_nanos(1_790_000_000 + i as i64, 0),
            &framed,
            framed.len() as u32,
        )
        .unwrap();
    }
    std::fs::write(&file.0, w.into_inner()).unwrap();
    file
}

/// A file removed when the test ends.
mod tempfile_path {
    pub struct TempPath(pub std::path::PathBuf);
    impl TempPath {
        pub fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("mcpf-test-{}-{name}", std::process::id()));
            TempPath(dir)
        }
    }
    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn run(args: &[&str]) -> String {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).expect("output is UTF-8")
}

fn assert_terminal_safe(text: &str, what: &str) {
    for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
        assert!(
            !text.contains(bad),
            "{what}: raw {:?} reached the output:\n{text}",
            bad
        );
    }
}

#[test]
fn escape_sequences_from_the_capture_are_shown_escaped() {
    let file = crafted_capture("escapes");
    let path = file.0.to_str().unwrap();
    for args in [
        vec!["analyze", "--color", "never", path],
        vec!["analyze", "--color", "never", "--all-events", path],
        vec!["http", path],
        vec!["flows", path],
    ] {
        let text = run(&args);
        assert_terminal_safe(&text, &args.join(" "));
    }
    let analyze = run(&["analyze", "--color", "never", path]);
    assert!(
        analyze.contains("\\e]0;pwned\\x07reindex\\u{202e}"),
        "{analyze}"
    );
}

#[test]
fn colour_is_the_only_escape_and_only_when_asked() {
    let file = crafted_capture("colour");
    let path = file.0.to_str().unwrap();
    // Piped (as in this test), --color auto gives none.
    assert!(!run(&["analyze", path]).contains('\u{1b}'));
    let forced = run(&["analyze", "--color", "always", path]);
    assert!(forced.contains("\u{1b}[1;31mHIGH"), "severity coloured");
    // The capture's own escapes are still escaped when colour is on.
    assert!(!forced.contains("\u{1b}]0;pwned"));
}

#[test]
fn bearer_tokens_never_reach_any_output() {
    let file = crafted_capture("tokens");
    let path = file.0.to_str().unwrap();
    for args in [
        vec!["analyze", path],
        vec!["analyze", "--format", "json", "--events", path],
        vec!["analyze", "--format", "ndjson", "--events", path],
        vec!["analyze", "--format", "markdown", path],
        vec!["analyze", "--format", "html", path],
        vec!["http", path],
        vec!["http", "--format", "json", path],
        vec![
            "analyze",
            "--format",
            "json",
            "samples/python-sdk-healthy.pcap",
        ],
        vec!["analyze", "--all-events", "samples/python-sdk-healthy.pcap"],
        vec![
            "http",
            "--format",
            "json",
            "samples/python-sdk-healthy.pcap",
        ],
    ] {
        let text = run(&args);
        assert!(!text.contains(TOKEN), "{}: token leaked", args.join(" "));
        assert!(
            !text.contains("mcpf-secret-token-DO-NOT-LEAK"),
            "{}: token leaked",
            args.join(" ")
        );
    }
    let shown = run(&["http", "--format", "json", "--show-secrets", path]);
    assert!(shown.contains(TOKEN), "--show-secrets shows it");
}

/// Markdown and HTML go into documents and browsers: capture text there is text, never markup,
/// and the escapes and bidi overrides are shown as the terminal report shows them.
#[test]
fn capture_text_in_markdown_and_html_is_text() {
    let file = crafted_capture("markup");
    let path = file.0.to_str().unwrap();
    let md = run(&["analyze", "--format", "markdown", path]);
    let html = run(&["analyze", "--format", "html", path]);
    assert!(md.contains("never answered"), "{md}");
    for (what, text) in [("markdown", &md), ("html", &html)] {
        assert_terminal_safe(text, what);
        assert!(!text.contains("<img"), "{what}: markup from the capture");
        assert!(
            text.contains("&lt;script&gt;alert(1)"),
            "{what}: shown as text"
        );
    }
    assert!(!md.contains("<script"), "markdown: markup from the capture");
    assert_eq!(
        html.matches("<script").count(),
        1,
        "html: the page's own script only"
    );
}
