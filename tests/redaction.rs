//! No credential reaches any output by default (issue 12, "Secrets printed"): every command in
//! every format, on a capture that carries each kind of secret in each place a peer puts one;
//! `--show-secrets` shows them (so the check can fail); and redaction never changes a finding.

use std::net::SocketAddr;

use assert_cmd::Command;
use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_model::Timestamp;
use serde_json::Value;

const SK_ANT: &str = "sk-ant-api03-QmFzZTY0U2VjcmV0S2V5Rm9yVGVzdHM";
const SK_PROJ: &str = "sk-proj-T3BlbkFJc2VjcmV0a2V5Zm9ydGVzdHM";
const GHP: &str = "ghp_R3JlYXRHaXRIdWJUb2tlbkZvclRlc3Rz01";
const GH_PAT: &str = "github_pat_11AAAAAAA0TestSecretValue_abcdefghijklmnop";
const GHS: &str = "ghs_U2VydmVyVG9rZW5Gb3JUZXN0c0FiY2Rl";
const SLACK: &str = "xoxb-123456789012-abcdefSLACKsecret";
const AWS: &str = "AKIAZXCVBNMASDFGHJKL";
const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0LXVzZXIifQ.c2lnbmF0dXJlLXRlc3Q";
const BEARER: &str = "opaque-bearer-Secret-0099887766";
const COOKIE: &str = "cookie-session-secret-4471";
const SET_COOKIE: &str = "set-cookie-secret-8812";
const API_KEY: &str = "x-api-key-secret-5530";
const HEADER_TOKEN: &str = "upstream-token-secret-9021";
const SSE_QUERY: &str = "legacy-sse-query-secret-1177";
const ENDPOINT_QUERY: &str = "endpoint-query-secret-3366";
const AMZ_SIG: &str = "f00dfacecafebeef0123456789abcdef";
/// The legacy session's ID: the session's identity, shown, never redacted.
const SESSION_ID: &str = "5e55101d0000aaaa";

const ALL: &[&str] = &[
    SK_ANT,
    SK_PROJ,
    GHP,
    GH_PAT,
    GHS,
    SLACK,
    AWS,
    JWT,
    BEARER,
    COOKIE,
    SET_COOKIE,
    API_KEY,
    HEADER_TOKEN,
    SSE_QUERY,
    ENDPOINT_QUERY,
    AMZ_SIG,
];

/// One TCP connection whose segments are written in the order the test asks.
struct Conn {
    c: SocketAddr,
    s: SocketAddr,
    cs: u32,
    ss: u32,
}

fn flags(syn: bool, ack: bool, fin: bool) -> TcpFlags {
    TcpFlags {
        syn,
        ack,
        fin,
        rst: false,
    }
}

impl Conn {
    fn open(port: u16, frames: &mut Vec<Vec<u8>>) -> Conn {
        let c: SocketAddr = format!("10.0.0.1:{port}").parse().unwrap();
        let s: SocketAddr = "10.0.0.2:3000".parse().unwrap();
        let (cs, ss) = (1000u32, 9000u32);
        frames.push(ip_packet(
            &SegmentSpec::new(c, s, cs, 0, b"").flags(flags(true, false, false)),
        ));
        frames.push(ip_packet(
            &SegmentSpec::new(s, c, ss, cs + 1, b"").flags(flags(true, true, false)),
        ));
        Conn {
            c,
            s,
            cs: cs + 1,
            ss: ss + 1,
        }
    }

    fn send(&mut self, to_server: bool, bytes: &[u8], frames: &mut Vec<Vec<u8>>) {
        if to_server {
            frames.push(ip_packet(&SegmentSpec::new(
                self.c, self.s, self.cs, self.ss, bytes,
            )));
            self.cs += bytes.len() as u32;
        } else {
            frames.push(ip_packet(&SegmentSpec::new(
                self.s, self.c, self.ss, self.cs, bytes,
            )));
            self.ss += bytes.len() as u32;
        }
    }

    fn close(self, frames: &mut Vec<Vec<u8>>) {
        frames.push(ip_packet(
            &SegmentSpec::new(self.c, self.s, self.cs, self.ss, b"")
                .flags(flags(false, true, true)),
        ));
        frames.push(ip_packet(
            &SegmentSpec::new(self.s, self.c, self.ss, self.cs + 1, b"")
                .flags(flags(false, true, true)),
        ));
    }
}

fn post(target: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {target} HTTP/1.1\r\nHost: mcp.example\r\n{headers}Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn sse_event(data: &str) -> String {
    format!("event: message\ndata: {data}\n\n")
}

/// A streamable HTTP session: credentials in request and response headers and in the target,
/// secrets in tool arguments, an SSE result and a JSON-RPC error message.
fn streamable(frames: &mut Vec<Vec<u8>>) {
    let headers = format!(
        "Authorization: Bearer {BEARER}\r\nCookie: sid={COOKIE}\r\nX-Api-Key: {API_KEY}\r\nX-Upstream-Token: {HEADER_TOKEN}\r\n"
    );
    let session = "Mcp-Session-Id: streamable-7\r\n";
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"redaction-test","version":"1"}}}"#;
    let init_result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"srv","version":"1"}}}"#;
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"deploy","arguments":{{"openai":"{SK_PROJ}","github":"{GH_PAT}","aws":"{AWS}","note":"use Bearer {BEARER} here"}}}}}}"#
    );
    let result = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"text","text":"key {SK_ANT} and {JWT}, fetch https://s3.example/o?X-Amz-Signature={AMZ_SIG}&v=1"}}]}}}}"#
    );
    let call_err =
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"push","arguments":{}}}"#;
    let error = format!(
        r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":-32000,"message":"push refused for token {GHP} (slack {SLACK})"}}}}"#
    );
    let mut conn = Conn::open(41000, frames);
    conn.send(
        true,
        &post(&format!("/mcp?api_key={API_KEY}"), &headers, init),
        frames,
    );
    let event = sse_event(init_result);
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{session}Set-Cookie: auth={SET_COOKIE}; HttpOnly\r\nContent-Length: {}\r\n\r\n{event}",
        event.len()
    );
    conn.send(false, response.as_bytes(), frames);
    for (request, answer) in [(call.as_str(), result), (call_err, error)] {
        conn.send(
            true,
            &post("/mcp", &format!("{headers}{session}"), request),
            frames,
        );
        let event = sse_event(&answer);
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{event}",
            event.len()
        );
        conn.send(false, response.as_bytes(), frames);
    }
    conn.close(frames);
}

/// A legacy SSE session: a token in the `GET /sse` URL, in the `endpoint` event and so in every
/// POST URL; secrets in the SSE answers, one of them an error message.
fn legacy(frames: &mut Vec<Vec<u8>>) {
    let messages = format!("/messages?session_id={SESSION_ID}&token={ENDPOINT_QUERY}");
    let mut sse = Conn::open(42000, frames);
    sse.send(
        true,
        format!(
            "GET /sse?token={SSE_QUERY} HTTP/1.1\r\nHost: mcp.example\r\nAccept: text/event-stream\r\n\r\n"
        )
        .as_bytes(),
        frames,
    );
    sse.send(
        false,
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\nevent: endpoint\ndata: {messages}\n\n"
        )
        .as_bytes(),
        frames,
    );
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"legacy-test","version":"1"}}}"#;
    let init_result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"srv","version":"1"}}}"#;
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"slack","arguments":{{"token":"{SLACK}"}}}}}}"#
    );
    let error = format!(
        r#"{{"jsonrpc":"2.0","id":2,"error":{{"code":-32001,"message":"{GHS} expired; was sent as Bearer {JWT}"}}}}"#
    );
    for (port, request, answer) in [
        (42001, init, init_result.to_string()),
        (42002, &call, error),
    ] {
        let mut p = Conn::open(port, frames);
        p.send(true, &post(&messages, "", request), frames);
        p.send(
            false,
            b"HTTP/1.1 202 Accepted\r\nContent-Length: 8\r\n\r\nAccepted",
            frames,
        );
        p.close(frames);
        sse.send(false, sse_event(&answer).as_bytes(), frames);
    }
    sse.close(frames);
}

/// A file removed when the test ends.
struct TempPath(std::path::PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn capture(name: &str) -> TempPath {
    let mut frames = Vec::new();
    streamable(&mut frames);
    legacy(&mut frames);
    let path =
        std::env::temp_dir().join(format!("mcpf-redaction-{}-{name}.pcap", std::process::id()));
    if let Ok(keep) = std::env::var("MCPF_KEEP_CAPTURE") {
        let _ = keep;
    }
    let mut w = PcapWriter::new(Vec::new(), linktype::RAW, 0, false, false).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let framed = link_frame(linktype::RAW, f, &[]);
        let time = Timestamp::from_secs_nanos(1_790_000_000, i as u32 * 1_000_000);
        w.packet(time, &framed, framed.len() as u32).unwrap();
    }
    std::fs::write(&path, w.into_inner()).unwrap();
    TempPath(path)
}

/// Standard output and standard error together.
fn run(args: &[&str]) -> String {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    let mut text = String::from_utf8(out.stdout).expect("output is UTF-8");
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

/// Every command and format that prints what a capture holds.
fn runs(path: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["analyze", path],
        vec!["analyze", "--all-events", path],
        vec!["analyze", "--format", "json", path],
        vec!["analyze", "--format", "ndjson", path],
        vec!["analyze", "--format", "json", "--events", path],
        vec!["analyze", "--format", "ndjson", "--events", path],
        vec!["http", path],
        vec!["http", "--format", "json", path],
    ]
}

fn leaked<'a>(text: &str) -> Vec<&'a str> {
    ALL.iter().copied().filter(|s| text.contains(s)).collect()
}

#[test]
fn no_secret_in_any_output_unless_asked() {
    let file = capture("every-output");
    let path = file.0.to_str().unwrap();
    let mut shown = std::collections::BTreeSet::new();
    for args in runs(path) {
        let text = run(&args);
        assert!(
            leaked(&text).is_empty(),
            "{}: leaked {:?}\n{text}",
            args.join(" "),
            leaked(&text)
        );
        // Secrets must not leak in part either (a cut cell, a prefix kept too long).
        for s in ALL {
            assert!(
                !text.contains(&s[..s.len() - 6]),
                "{}: part of {s}",
                args.join(" ")
            );
        }
        let mut with = args.clone();
        with.insert(1, "--show-secrets");
        let text = run(&with);
        let seen = leaked(&text);
        assert!(!seen.is_empty(), "{}: shows nothing", with.join(" "));
        shown.extend(seen);
    }
    let missing: Vec<_> = ALL.iter().filter(|s| !shown.contains(*s)).collect();
    assert!(missing.is_empty(), "--show-secrets never shows {missing:?}");
    for args in [vec!["flows", path], vec!["flows", "--format", "json", path]] {
        assert!(leaked(&run(&args)).is_empty(), "{}", args.join(" "));
    }
}

#[test]
fn redaction_keeps_the_evidence_readable() {
    let file = capture("readable");
    let path = file.0.to_str().unwrap();
    let http = run(&["http", "--format", "json", path]);
    for kept in [
        format!("sk-ant-…[redacted, {} chars]", SK_ANT.len()),
        format!("sk-proj-…[redacted, {} chars]", SK_PROJ.len()),
        format!("ghp_…[redacted, {} chars]", GHP.len()),
        format!("github_pat_…[redacted, {} chars]", GH_PAT.len()),
        format!("xoxb-…[redacted, {} chars]", SLACK.len()),
        format!("AKIA…[redacted, {} chars]", AWS.len()),
        format!("eyJ…[redacted, {} chars]", JWT.len()),
        format!("Bearer [redacted, {} chars]", BEARER.len()),
        format!("X-Amz-Signature=[redacted, {} chars]", AMZ_SIG.len()),
        format!("/sse?token=[redacted, {} chars]", SSE_QUERY.len()),
    ] {
        assert!(http.contains(&kept), "http json lacks {kept:?}");
    }
    // The legacy session keeps its identity: the session_id of the endpoint is no secret.
    let analyze = run(&["analyze", "--format", "json", path]);
    assert!(analyze.contains(SESSION_ID), "the session ID is shown");
    assert!(
        analyze.contains(&format!(
            "session_id={SESSION_ID}&token=[redacted, {} chars]",
            ENDPOINT_QUERY.len()
        )),
        "the endpoint URL keeps its session_id"
    );
}

/// `a` equals `b` except where a string of `a` is a redacted form of `b`'s.
fn same_but_redacted(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::String(x), Value::String(y)) if x != y => {
            assert!(x.contains("[redacted"), "{at}: {x:?} != {y:?}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: lengths");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                same_but_redacted(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (k, v) in x {
                same_but_redacted(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[test]
fn redaction_never_changes_a_finding() {
    let file = capture("findings");
    let mut inputs: Vec<String> = std::fs::read_dir("samples")
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| {
            [".pcap", ".pcapng", ".har", ".jsonl"]
                .iter()
                .any(|x| p.ends_with(x))
        })
        .collect();
    inputs.sort();
    inputs.push(file.0.display().to_string());
    let mut redacted_somewhere = false;
    for input in &inputs {
        let doc = |extra: &[&str]| -> Value {
            let mut args = vec!["analyze", "--format", "json"];
            args.extend_from_slice(extra);
            args.push(input);
            let out = Command::cargo_bin("mcp-forensics")
                .unwrap()
                .args(&args)
                .output()
                .unwrap();
            serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
        };
        let (redacted, shown) = (doc(&[]), doc(&["--show-secrets"]));
        same_but_redacted(&redacted["findings"], &shown["findings"], input);
        assert_eq!(redacted["summary"], shown["summary"], "{input}");
        redacted_somewhere |= redacted != shown;
    }
    assert!(redacted_somewhere, "some report was redacted");
}

/// The HAR sample with a secret added in the URL, a header and the SSE data.
fn har(name: &str) -> TempPath {
    let text = std::fs::read_to_string("samples/mitmproxy-python-sdk.har").unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let entry = &mut doc["log"]["entries"][0];
    let url = entry["request"]["url"].as_str().unwrap().to_string();
    entry["request"]["url"] = Value::from(format!("{url}?access_token={SSE_QUERY}"));
    let headers = entry["request"]["headers"].as_array_mut().unwrap();
    headers.push(serde_json::json!({ "name": "X-Api-Key", "value": API_KEY }));
    let body = entry["response"]["content"]["text"].as_str().unwrap();
    let body = body.replace("mcpf-har-python", &format!("mcpf-har-python {SK_ANT}"));
    entry["response"]["content"]["text"] = Value::from(body);
    let path =
        std::env::temp_dir().join(format!("mcpf-redaction-{}-{name}.har", std::process::id()));
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    TempPath(path)
}

#[test]
fn a_har_is_redacted_like_a_capture() {
    let file = har("har");
    let path = file.0.to_str().unwrap();
    let secrets = [
        SSE_QUERY,
        API_KEY,
        SK_ANT,
        "mcpf-har-token-DO-NOT-LEAK",
        "mcpf-har-cookie-DO-NOT-LEAK",
    ];
    let mut shown: std::collections::BTreeSet<&str> = Default::default();
    for args in runs(path) {
        let text = run(&args);
        for s in secrets {
            assert!(!text.contains(s), "{}: leaked {s}", args.join(" "));
        }
        let mut with = args.clone();
        with.insert(1, "--show-secrets");
        let text = run(&with);
        shown.extend(secrets.iter().filter(|s| text.contains(*s)));
    }
    assert_eq!(shown.len(), secrets.len(), "--show-secrets shows {shown:?}");
}

/// The nginx log sample with a token in the request URI and an Authorization header logged.
fn access_log(name: &str) -> TempPath {
    let text = std::fs::read_to_string("samples/seed-incident.nginx.jsonl").unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let uri = v["request_uri"].as_str().unwrap().to_string();
            v["request_uri"] = Value::from(format!("{uri}?access_token={SSE_QUERY}"));
            v["http_authorization"] = Value::from(format!("Bearer {JWT}"));
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    let path = std::env::temp_dir().join(format!(
        "mcpf-redaction-{}-{name}.jsonl",
        std::process::id()
    ));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    TempPath(path)
}

#[test]
fn an_access_log_is_redacted_like_a_capture() {
    let file = access_log("log");
    let path = file.0.to_str().unwrap();
    let mut shown = false;
    for args in runs(path) {
        let text = run(&args);
        assert!(!text.contains(SSE_QUERY), "{}: leaked", args.join(" "));
        assert!(!text.contains(JWT), "{}: leaked", args.join(" "));
        let mut with = args.clone();
        with.insert(1, "--show-secrets");
        shown |= run(&with).contains(SSE_QUERY);
    }
    assert!(shown, "--show-secrets shows the URI's token");
}
