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
        // --all: the timelines of healthy sessions too, where the secrets are.
        vec!["analyze", "--all", path],
        vec!["analyze", "--all", "--all-events", path],
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

// Issue 29, class 5 ("Secrets printed by default"): every shape of secret planted in every
// place a report can show, on one capture, one HAR and one access log, searched for in every
// format of every command, `report` of a saved document included.

/// What every planted secret holds and no output may: `Qz7k` (or `QZ7K` where a shape allows
/// upper case only), then the plant's number, so a leak names its plant.
const MARK: &str = "qz7k";

/// Names that announce a credential: the documented list and the shapes of issue 29.
const NAMES: &[&str] = &[
    "access_token",
    "access_key",
    "authorization",
    "auth-key",
    "passphrase",
    "subscription-key",
    "client_key",
    "password",
    "api_key",
    "token",
    "code",
    "X-Amz-Signature",
];

/// Headers whose value is a credential of any shape.
const HEADERS: &[&str] = &[
    "Authorization",
    "Proxy-Authorization",
    "Cookie",
    "Set-Cookie",
    "Cookie2",
    "Set-Cookie2",
    "X-Session-Cookie",
    "X-Api-Key",
    "X-Upstream-Token",
    "Ocp-Apim-Subscription-Key",
];

/// The plants of one input: each secret made once, with the place it went.
#[derive(Default)]
struct Garden {
    places: Vec<String>,
}

impl Garden {
    fn mark(&mut self, place: String) -> String {
        self.places.push(place);
        format!("Qz7k{:03}vP", self.places.len() - 1)
    }

    /// A value of no particular shape, for a place whose name makes it a credential.
    fn value(&mut self, place: String) -> String {
        format!("{}-x9", self.mark(place))
    }

    /// One token of every shape the redactor knows by its shape, for a place of free text.
    fn shapes(&mut self, place: &str) -> Vec<String> {
        let mut m = |shape: &str| self.mark(format!("{shape} in {place}"));
        let jwt_header = base64_url(br#"{ "alg": "HS256", "typ": "JWT" }"#);
        let aws_id = m("AKIA").to_ascii_uppercase();
        vec![
            format!("sk-ant-api03-{}abcdefghijklmnop", m("sk-ant-")),
            format!("sk_live_{}abcdefgh12", m("sk_live_")),
            format!("rk_test_{}abcdefgh12", m("rk_test_")),
            format!("AIzaSy{}-abcdefghijklmnopqrstu", m("AIza")),
            format!("glpat-{}abcdefghijklmn", m("glpat-")),
            format!("ghp_{}abcdefghijABCDEFGHIJ", m("ghp_")),
            format!("github_pat_11{}_abcdefghijklmnop", m("github_pat_")),
            format!("xoxb-1234-{}abcdef", m("xoxb-")),
            format!("{jwt_header}.eyJzdWIiOiJ4In0.{}c2lnbmF0dXJl", m("JWT")),
            format!("Bearer {}-opaque", m("Bearer")),
            // An AWS key pair: the ID by its shape, the secret by being next to it.
            format!(
                "AKIA{aws_id}ABCDEFG {}/K7MDENG/bPxRfiCYEXAMPLEKEYabcd",
                m("AWS secret")
            ),
            format!("https://alice:{}@example.com/x", m("userinfo")),
        ]
    }

    /// The number of the plant `text` leaks, if any.
    fn leaks<'a>(&'a self, text: &str) -> Vec<&'a str> {
        let lower = text.to_ascii_lowercase();
        lower
            .match_indices(MARK)
            .filter_map(|(at, _)| lower.get(at + 4..at + 7)?.parse::<usize>().ok())
            .map(|n| self.places[n].as_str())
            .collect()
    }
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `name=value` for every credential name, joined by `&`.
fn params(g: &mut Garden, place: &str) -> String {
    NAMES
        .iter()
        .map(|n| format!("{n}={}", g.value(format!("{n} in {place}"))))
        .collect::<Vec<_>>()
        .join("&")
}

/// A request target with a credential in each place a URL has: the query, a path parameter, the
/// fragment, and a shape in an ordinary parameter.
fn planted_target(g: &mut Garden, path: &str, place: &str) -> String {
    let jsession = g.value(format!("jsessionid in the path of {place}"));
    let query = params(g, &format!("the query of {place}"));
    let fragment = params(g, &format!("the fragment of {place}"));
    let shape = format!(
        "sk_live_{}abcdefgh12",
        g.mark(format!("sk_live_ in a query value of {place}"))
    );
    format!("{path};jsessionid={jsession}?{query}&q={shape}#{fragment}")
}

/// Every credential header and every credential name as a header, each with its own value.
fn planted_headers(g: &mut Garden, place: &str) -> Vec<(String, String)> {
    let names = HEADERS.iter().chain(NAMES.iter().filter(|n| **n != "code"));
    names
        .map(|h| (h.to_string(), g.value(format!("header {h} in {place}"))))
        .collect()
}

fn header_lines(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect()
}

/// A JSON object with a member for every credential name, a nested body quoted in a string,
/// and every shape under an ordinary name.
fn planted_members(g: &mut Garden, place: &str) -> String {
    let mut members: Vec<String> = NAMES
        .iter()
        .map(|n| format!(r#""{n}":"{}""#, g.value(format!("member {n} in {place}"))))
        .collect();
    let quoted = g.value(format!("a member of JSON quoted in {place}"));
    members.push(format!(r#""config":"{{\"password\": \"{quoted}\"}}""#));
    let aws = g.value(format!("aws_secret_access_key in {place}"));
    members.push(format!(r#""aws_secret_access_key":"{aws}""#));
    for (k, s) in g.shapes(place).iter().enumerate() {
        members.push(format!(r#""note{k}":"{s}""#));
    }
    format!("{{{}}}", members.join(","))
}

/// The capture: a Streamable HTTP session (credentials in the target, the request and response
/// headers, the tool call's arguments, the SSE result and an error message), a legacy SSE
/// session (in `GET /sse`, the `endpoint` event and so every POST), a request through a proxy
/// with a userinfo in its target, and the same on HTTP/2 (HPACK never-indexed literals).
fn planted_capture(g: &mut Garden, path: &std::path::Path) {
    let mut frames = Vec::new();
    planted_streamable(g, &mut frames);
    planted_legacy(g, &mut frames);
    planted_proxy(g, &mut frames);
    planted_h2(g, &mut frames);
    write_pcap(path, &frames);
}

fn write_pcap(path: &std::path::Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::new(Vec::new(), linktype::RAW, 0, false, false).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let framed = link_frame(linktype::RAW, f, &[]);
        let time = Timestamp::from_secs_nanos(1_790_000_000, i as u32 * 1_000_000);
        w.packet(time, &framed, framed.len() as u32).unwrap();
    }
    std::fs::write(path, w.into_inner()).unwrap();
}

fn planted_streamable(g: &mut Garden, frames: &mut Vec<Vec<u8>>) {
    let session = "Mcp-Session-Id: planted-7\r\n";
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"plant","version":"1"}}}"#;
    let init_result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"srv","version":"1"}}}"#;
    let mut conn = Conn::open(43000, frames);
    let target = planted_target(g, "/mcp", "an HTTP/1.1 request target");
    let headers = header_lines(&planted_headers(g, "an HTTP/1.1 request"));
    conn.send(true, &post(&target, &headers, init), frames);
    let event = sse_event(init_result);
    let answer_headers = header_lines(&planted_headers(g, "an HTTP/1.1 response"));
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{session}{answer_headers}Content-Length: {}\r\n\r\n{event}",
        event.len()
    );
    conn.send(false, response.as_bytes(), frames);
    let arguments = planted_members(g, "tool call arguments");
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"deploy","arguments":{arguments}}}}}"#
    );
    let structured = planted_members(g, "an SSE result's structured content");
    let text = g.shapes("an SSE result's text").join(" and ");
    let result = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"text","text":"{text}"}}],"structuredContent":{structured}}}}}"#
    );
    let message = g.shapes("a JSON-RPC error message").join(", ");
    let error =
        format!(r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":-32000,"message":"{message}"}}}}"#);
    let call_err =
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"push","arguments":{}}}"#;
    for (request, answer) in [(call.as_str(), result), (call_err, error)] {
        conn.send(true, &post("/mcp", session, request), frames);
        let event = sse_event(&answer);
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{event}",
            event.len()
        );
        conn.send(false, response.as_bytes(), frames);
    }
    conn.close(frames);
}

fn planted_legacy(g: &mut Garden, frames: &mut Vec<Vec<u8>>) {
    let get = planted_target(g, "/sse", "the legacy GET /sse");
    let endpoint = format!(
        "/messages?session_id={SESSION_ID}&{}",
        params(g, "the legacy endpoint event")
    );
    let mut sse = Conn::open(44000, frames);
    let head =
        format!("GET {get} HTTP/1.1\r\nHost: mcp.example\r\nAccept: text/event-stream\r\n\r\n");
    sse.send(true, head.as_bytes(), frames);
    let opened = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\nevent: endpoint\ndata: {endpoint}\n\n"
    );
    sse.send(false, opened.as_bytes(), frames);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"legacy-plant","version":"1"}}}"#;
    let members = planted_members(g, "a legacy SSE message");
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":"2024-11-05","capabilities":{{}},"serverInfo":{{"name":"srv","version":"1"}},"_plant":{members}}}}}"#
    );
    let mut p = Conn::open(44001, frames);
    p.send(true, &post(&endpoint, "", init), frames);
    p.send(
        false,
        b"HTTP/1.1 202 Accepted\r\nContent-Length: 8\r\n\r\nAccepted",
        frames,
    );
    p.close(frames);
    sse.send(false, sse_event(&answer).as_bytes(), frames);
    sse.close(frames);
}

/// A request in absolute form, as to a proxy, with a userinfo.
fn planted_proxy(g: &mut Garden, frames: &mut Vec<Vec<u8>>) {
    let password = g.value("the userinfo of a request target".into());
    let mut c = Conn::open(45000, frames);
    let request = format!(
        "GET http://alice:{password}@mcp.example/health HTTP/1.1\r\nHost: mcp.example\r\n\r\n"
    );
    c.send(true, request.as_bytes(), frames);
    c.send(
        false,
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        frames,
    );
    c.close(frames);
}

/// An HTTP/2 frame.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// A header block of never-indexed literals (RFC 7541 §6.2.3), the way a client marks a
/// credential so that no proxy keeps it in a table.
fn hpack_never_indexed(fields: &[(String, String)]) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &str) {
        assert!(s.len() < 127, "one-byte lengths only");
        out.push(s.len() as u8);
        out.extend(s.as_bytes());
    }
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x10);
        string(&mut out, &name.to_ascii_lowercase());
        string(&mut out, value);
    }
    out
}

/// Credentials named from HPACK's static table (`authorization` is entry 23, `cookie` 32), one
/// of them entered in the dynamic table (RFC 7541 §6.2.1, §6.2.3).
fn hpack_table_fields(g: &mut Garden) -> Vec<u8> {
    let mut out = Vec::new();
    for (first, place) in [
        // Never indexed, the name's index 23 past a 4-bit prefix: 15, then 8.
        (
            &[0x1f, 0x08][..],
            "authorization named by HPACK's static table",
        ),
        // With incremental indexing, the name's index 32 in a 6-bit prefix.
        (&[0x60][..], "cookie entered in HPACK's dynamic table"),
    ] {
        let value = g.value(place.into());
        out.extend(first);
        out.push(value.len() as u8);
        out.extend(value.as_bytes());
    }
    out
}

/// An HTTP/2 connection (prior knowledge) carrying credential headers and a planted body.
fn planted_h2(g: &mut Garden, frames: &mut Vec<Vec<u8>>) {
    let mut c = Conn::open(46000, frames);
    let settings = h2_frame(4, 0, 0, &[]);
    let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    preface.extend(&settings);
    c.send(true, &preface, frames);
    c.send(false, &settings, frames);
    let mut fields: Vec<(String, String)> = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "mcp.example"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    let password = g.value("the query of an HTTP/2 :path".into());
    fields.push((":path".into(), format!("/mcp?password={password}")));
    fields.push(("content-type".into(), "application/json".into()));
    fields.push((
        "accept".into(),
        "application/json, text/event-stream".into(),
    ));
    fields.extend(planted_headers(g, "an HTTP/2 request"));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"h2-plant","version":"1"}},"_plant":{}}}}}"#,
        planted_members(g, "an HTTP/2 request body")
    );
    let mut block = hpack_never_indexed(&fields);
    block.extend(hpack_table_fields(g));
    let mut request = h2_frame(1, 0x4, 1, &block);
    request.extend(h2_frame(0, 0x1, 1, body.as_bytes()));
    c.send(true, &request, frames);
    // A second request naming the cookie by its dynamic table entry (62, the first).
    let mut again = hpack_never_indexed(&fields[..3]);
    again.extend(hpack_never_indexed(&[(":path".into(), "/mcp".into())]));
    again.push(0x80 | 62);
    c.send(true, &h2_frame(1, 0x4 | 0x1, 3, &again), frames);
    let mut head = vec![(":status".to_string(), "200".to_string())];
    head.push(("content-type".into(), "application/json".into()));
    head.extend(planted_headers(g, "an HTTP/2 response"));
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"srv","version":"1"}}}"#;
    let mut answer = h2_frame(1, 0x4, 1, &hpack_never_indexed(&head));
    answer.extend(h2_frame(0, 0x1, 1, result.as_bytes()));
    c.send(false, &answer, frames);
    c.close(frames);
}

/// The HAR sample with credentials in the URL, the headers, the cookies, the request body and
/// the event stream of its first entry.
fn planted_har(g: &mut Garden, path: &std::path::Path) {
    let text = std::fs::read_to_string("samples/mitmproxy-python-sdk.har").unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let entry = &mut doc["log"]["entries"][0];
    let target = planted_target(g, "/mcp", "a HAR URL");
    let password = g.value("the userinfo of a HAR URL".into());
    entry["request"]["url"] = Value::from(format!("http://bob:{password}@127.0.0.1:3100{target}"));
    for (side, place) in [("request", "a HAR request"), ("response", "a HAR response")] {
        let headers = entry[side]["headers"].as_array_mut().unwrap();
        for (name, value) in planted_headers(g, place) {
            headers.push(serde_json::json!({ "name": name, "value": value }));
        }
    }
    let cookie = g.value("a HAR cookie".into());
    entry["request"]["cookies"] = serde_json::json!([{ "name": "sid", "value": cookie }]);
    let body = entry["request"]["postData"]["text"].as_str().unwrap();
    let members = planted_members(g, "a HAR request body");
    let body = body.replacen(
        "\"params\":{",
        &format!("\"params\":{{\"_plant\":{members},"),
        1,
    );
    entry["request"]["postData"]["text"] = Value::from(body);
    let events = entry["response"]["content"]["text"].as_str().unwrap();
    let shapes = g.shapes("a HAR event stream").join(" ");
    let events = events.replace("mcpf-har-python", &format!("mcpf-har-python {shapes}"));
    entry["response"]["content"]["text"] = Value::from(events);
    std::fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// The nginx log sample with credentials in every request URI and in logged headers.
fn planted_log(g: &mut Garden, path: &std::path::Path) {
    let text = std::fs::read_to_string("samples/seed-incident.nginx.jsonl").unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(k, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let uri = v["request_uri"].as_str().unwrap().to_string();
            let place = format!("log line {}", k + 1);
            v["request_uri"] = Value::from(planted_target(g, &uri, &place));
            // A 499 (the client went away) has no response: its response headers are not
            // shown. `authorization` as a name and `Authorization` as a header are one field.
            let answered = v["status"] != "499";
            let mut fields = std::collections::BTreeSet::new();
            for name in HEADERS.iter().chain(NAMES.iter().filter(|n| **n != "code")) {
                let response = name.starts_with("Set-");
                let field = name.to_ascii_lowercase().replace('-', "_");
                if (response && !answered) || !fields.insert(field.clone()) {
                    continue;
                }
                let side = if response { "sent_http_" } else { "http_" };
                v[format!("{side}{field}")] =
                    Value::from(g.value(format!("header {name} in {place}")));
            }
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Every command and format that prints what an input holds, and `report` of the documents
/// `analyze` saved (as written, and written with `--show-secrets`).
fn every_output(input: &str, dir: &std::path::Path, show: bool) -> Vec<(String, String)> {
    let mut runs: Vec<Vec<String>> = Vec::new();
    let analyze = [
        &["--format", "table"][..],
        &["--format", "table", "--all-events"],
        &["--format", "json", "--events"],
        &["--format", "ndjson", "--events"],
        &["--format", "markdown"],
        &["--format", "html"],
    ];
    for extra in analyze {
        runs.push(
            [&["analyze"][..], extra]
                .concat()
                .iter()
                .map(|s| s.to_string())
                .collect(),
        );
    }
    for format in ["table", "json"] {
        runs.push(vec!["http".into(), "--format".into(), format.into()]);
        runs.push(vec!["flows".into(), "--format".into(), format.into()]);
    }
    let mut outputs = Vec::new();
    for mut args in runs {
        if show && args[0] != "flows" {
            args.insert(1, "--show-secrets".into());
        }
        args.push(input.to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        outputs.push((args.join(" "), run(&args)));
    }
    // `report` redacts what it prints whatever the document it reads holds.
    for (k, saved) in [
        &["--format", "json"][..],
        &["--format", "ndjson", "--events", "--show-secrets"],
    ]
    .iter()
    .enumerate()
    {
        let file = dir.join(format!("saved-{k}.json"));
        let mut args = vec!["analyze"];
        args.extend_from_slice(saved);
        args.push(input);
        let out = Command::cargo_bin("mcp-forensics")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        std::fs::write(&file, out.stdout).unwrap();
        for format in ["table", "markdown", "html"] {
            let path = file.to_str().unwrap();
            let args = ["report", "--format", format, path];
            outputs.push((args.join(" "), run(&args)));
        }
    }
    outputs
}

/// Writes an input to a path, its secrets planted in the garden.
type Plant = fn(&mut Garden, &std::path::Path);

/// What a HAR holds that no command reads, as a browser sends none of it as the request
/// target: the URL's fragment and userinfo; and its parsed `cookies` (the `Cookie` header is
/// read).
const HAR_UNREAD: &[&str] = &[
    "fragment of a HAR URL",
    "userinfo of a HAR URL",
    "a HAR cookie",
];

#[test]
fn every_secret_shape_in_every_place_reaches_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let inputs: [(&str, Plant); 3] = [
        ("planted.pcap", planted_capture),
        ("planted.har", planted_har),
        ("planted.jsonl", planted_log),
    ];
    for (name, plant) in inputs {
        let mut garden = Garden::default();
        let path = dir.path().join(name);
        plant(&mut garden, &path);
        let input = path.to_str().unwrap();
        for (args, text) in every_output(input, dir.path(), false) {
            let leaks = garden.leaks(&text);
            let at = text.to_ascii_lowercase().find(MARK).unwrap_or(0);
            let around = text.get(at.saturating_sub(120)..(at + 60).min(text.len()));
            assert!(
                leaks.is_empty(),
                "{args}: leaks {leaks:?}, as in {around:?}"
            );
        }
        // The plants reach the outputs (else the search above proves nothing).
        let shown: std::collections::BTreeSet<&str> = every_output(input, dir.path(), true)
            .iter()
            .flat_map(|(_, text)| garden.leaks(text))
            .collect();
        let hidden: Vec<&str> = garden
            .places
            .iter()
            .map(String::as_str)
            .filter(|p| !shown.contains(p) && !HAR_UNREAD.iter().any(|u| p.contains(u)))
            .collect();
        assert!(hidden.is_empty(), "{name}: never shown {hidden:?}");
    }
}

mod redactor_properties {
    //! The redactor itself, over many generated names, values, shapes and surroundings: a
    //! credential's value never survives, in free text, in a header, through the redacting
    //! writer cut anywhere; and evidence (IDs, methods, tool names) is never touched.

    use std::io::Write;

    use mcpf_engine::report::redact::{Redacting, Redactor};
    use proptest::prelude::*;

    /// Names that announce a credential, built from the rule's words with affixes.
    fn credential_name() -> impl Strategy<Value = String> {
        let core = prop::sample::select(vec![
            "token",
            "access_token",
            "secret",
            "password",
            "passphrase",
            "credential",
            "signature",
            "cookie",
            "Cookie2",
            "api_key",
            "apiKey",
            "access_key",
            "client_key",
            "subscription-key",
            "auth",
            "Auth-Key",
            "authorization",
            "jsessionid",
            "PHPSESSID",
            "code_verifier",
            "X-Amz-Signature",
        ]);
        let prefix = prop::sample::select(vec!["", "x-", "X_", "upstream", "Client-"]);
        let suffix = prop::sample::select(vec!["", "2", "-v2", "_value"]);
        (prefix, core, suffix).prop_map(|(p, c, s)| format!("{p}{c}{s}"))
    }

    /// A value: `Zq` (never in the surroundings) and characters a URL or a JSON string holds.
    fn value() -> impl Strategy<Value = String> {
        "[A-Za-z0-9._~+/%-]{6,30}".prop_map(|v| format!("Zq{v}"))
    }

    /// Text around a secret: lower-case words and punctuation, never `Zq`.
    fn around() -> impl Strategy<Value = String> {
        "[a-z ,.{}\\[\\]\n]{0,20}"
    }

    /// Every place a name meets its value in text.
    fn place(name: &str, value: &str, k: usize) -> String {
        match k % 8 {
            0 => format!("GET /p?{name}={value} HTTP/1.1"),
            1 => format!("/p?a=1&{name}={value}&b=2"),
            2 => format!("https://h/cb#{name}={value}&state=x"),
            3 => format!("/app;{name}={value}?x=1"),
            4 => format!(r#"{{"{name}": "{value}", "n": 1}}"#),
            5 => format!(r#""text":"{{\"{name}\":\"{value}\"}}""#),
            6 => format!(" {name}={value} "),
            _ => format!("http://user:{value}@host/{name}"),
        }
    }

    /// A writer whose bytes the test reads after the redacting writer is dropped.
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `text` through the redacting writer in two writes cut at `cut`, after a chunk's worth
    /// of filler so that the first write is passed on before the second comes.
    fn streamed(text: &str, cut: usize) -> String {
        let filler = " ".repeat(64 << 10);
        let text = format!("{filler}{text}");
        let cut = (filler.len() + cut).min(text.len());
        let cut = (0..=cut)
            .rev()
            .find(|&c| text.is_char_boundary(c))
            .unwrap_or(0);
        let shared = Shared::default();
        let mut out = Redacting::new(shared.clone(), Redactor::new(true));
        out.write_all(&text.as_bytes()[..cut]).unwrap();
        out.write_all(&text.as_bytes()[cut..]).unwrap();
        drop(out);
        let bytes = shared.0.borrow();
        String::from_utf8(bytes[filler.len()..].to_vec()).unwrap()
    }

    /// Tokens of every shape, their body from `body`; the part a redaction may keep first.
    fn shaped(body: &str, k: usize) -> (String, usize) {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let upper = body.to_ascii_uppercase();
        let shapes = [
            (format!("sk-ant-api03-{body}"), 7),
            (format!("sk-proj-{body}"), 8),
            (format!("sk_live_{body}"), 8),
            (format!("rk_live_{body}"), 8),
            // Google's keys are 35 characters after `AIza`.
            (format!("AIzaSy{body}abcdefgh"), 4),
            (format!("glpat-{body}"), 6),
            (format!("ghp_{body}"), 4),
            (format!("github_pat_{body}"), 11),
            (format!("xoxb-{body}"), 5),
            (format!("AKIA{}", &upper[..16]), 4),
            (format!("Bearer {body}"), 7),
            (
                format!(
                    "{}.{}.{body}",
                    b64.encode(br#"{ "alg": "RS256" }"#),
                    b64.encode(br#"{"sub": "x"}"#)
                ),
                3,
            ),
        ];
        shapes[k % shapes.len()].clone()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn a_credential_name_hides_its_value_in_every_place(
            name in credential_name(),
            value in value(),
            k in 0usize..8,
            before in around(),
            after in around(),
            cut in 0usize..200,
        ) {
            // A userinfo holds no `/` (RFC 3986 §3.2.1): a URL writes it `%2F`.
            let value = if k == 7 { value.replace('/', "%2F") } else { value };
            let text = format!("{before}{}{after}", place(&name, &value, k));
            let out = Redactor::new(true).text(&text).into_owned();
            prop_assert!(!out.contains(&value), "{text:?} -> {out:?}");
            prop_assert!(out.contains("[redacted, "), "{out:?}");
            prop_assert_eq!(streamed(&text, cut), out);
            let header = Redactor::new(true).header(&name, &value);
            prop_assert!(!header.contains(&value), "{}: {}", name, header);
        }

        #[test]
        fn a_token_of_a_known_shape_is_hidden_wherever_it_is(
            body in "[A-Za-z0-9]{24,40}",
            k in 0usize..12,
            before in around(),
            after in around(),
            quoted in any::<bool>(),
            cut in 0usize..120,
        ) {
            let (token, _) = shaped(&body, k);
            let token = if quoted { format!("\"{token}\"") } else { token };
            let text = format!("{before} {token} {after}");
            let out = Redactor::new(true).text(&text).into_owned();
            // The part after what is kept: 16 characters of the body no output holds.
            let secret = if k % 12 == 9 { body[4..16].to_ascii_uppercase() } else { body[..16].to_string() };
            prop_assert!(!out.contains(&secret), "{text:?} -> {out:?}");
            prop_assert_eq!(streamed(&text, cut), out);
        }

        #[test]
        fn evidence_is_never_redacted(
            id in 0u64..1_000_000,
            method in prop::sample::select(vec!["initialize", "tools/call", "tools/list", "notifications/progress", "resources/read"]),
            tool in "[a-z][a-z_]{0,15}",
            // A token that is itself shaped like a secret (`sk-aAa0aAA0aaAaaAAA`) is hidden
            // wherever it is, evidence or not: not what this property is about.
            token in "[A-Za-z0-9-]{1,24}".prop_filter("shaped like a secret", |t| {
                Redactor::new(true).text(t) == t.as_str()
            }),
            session in "[0-9a-f]{8,32}",
            event in "[0-9]{1,6}(-[0-9]{1,4})?",
            key in "S[0-9]{1,4}",
        ) {
            let r = Redactor::new(true);
            for text in [
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"name":"{tool}","_meta":{{"progressToken":"{token}"}}}}}}"#),
                format!(r#"{{"key": "{key}", "session_id": "{session}", "mcp_session_id": "{session}", "event_id": "{event}", "progress_token": "{token}", "request_id": {id}}}"#),
                format!("/messages?session_id={session}&sessionId={session}"),
                format!("id: {event}\nevent: message\ndata: {{\"method\":\"{method}\"}}"),
            ] {
                prop_assert_eq!(r.text(&text).into_owned(), text);
            }
            for (name, value) in [("Mcp-Session-Id", &session), ("Last-Event-ID", &event), ("Idempotency-Key", &token)] {
                prop_assert_eq!(&r.header(name, value), value);
            }
        }
    }
}

#[test]
fn records_hold_no_secret_unless_asked_and_give_the_same_findings() {
    let file = capture("records");
    let path = file.0.to_str().unwrap();
    let dir = std::env::temp_dir().join(format!("mcpf-redaction-rec-{}", std::process::id()));
    let records = dir.join("redacted.ndjson");
    let shown = dir.join("shown.ndjson");
    let (records, shown) = (records.to_str().unwrap(), shown.to_str().unwrap());
    run(&["extract", "-q", "-o", records, path]);
    run(&["extract", "-q", "--show-secrets", "-o", shown, path]);
    let text = std::fs::read_to_string(records).unwrap();
    assert!(
        leaked(&text).is_empty(),
        "records leaked {:?}",
        leaked(&text)
    );
    let raw = std::fs::read_to_string(shown).unwrap();
    assert_eq!(
        leaked(&raw).len(),
        ALL.len(),
        "--show-secrets keeps them all"
    );
    // Redacted records give the report the capture gives (itself redacted), but for the length
    // a redaction counts where the report's sentence puts text right after a value the records
    // had redacted already (`…&token=[redacted, 26 chars])` against the capture's `…&token=`
    // value read up to and with the parenthesis, 27 chars: docs/records.md).
    let from_records = run(&["analyze", "-f", "json", "-q", records]);
    let from_capture = run(&["analyze", "-f", "json", "-q", path]);
    assert_eq!(lengths_aside(&from_records), lengths_aside(&from_capture));
    assert!(from_records.contains("[redacted, "));
    let _ = std::fs::remove_dir_all(dir);
}

/// A report with every redaction's length and a parenthesis right after it taken out.
fn lengths_aside(report: &str) -> String {
    let mut out = String::with_capacity(report.len());
    let mut rest = report;
    while let Some(at) = rest.find("[redacted, ") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail
            .find(" chars]")
            .map_or(tail.len(), |e| e + " chars]".len());
        out.push_str("[redacted]");
        rest = tail[end..].strip_prefix(')').unwrap_or(&tail[end..]);
    }
    out.push_str(rest);
    out
}
