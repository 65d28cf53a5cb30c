//! Unit-level tests of every detector on hand-built sessions.
//!
//! A small DSL drives the engine's session stage (the MCP builder and the finalizer a run of the
//! binary uses) with synthetic HTTP events (one TCP connection per exchange, time and frame
//! numbers increasing with every event); each session is kept as it is finalized, and `finish()`
//! gives the findings in their final order. Each finding kind has at least one positive case (kind,
//! severity, evidence, frames and `caused_by` where the issue describes a chain) and at least one
//! negative case that must not raise it; the verdicts, stateless and legacy sessions, DELETE /
//! 404 bookkeeping and namespace attribution are checked on the same footing.

use std::net::{IpAddr, SocketAddr};

use mcpf_detect::FindingKind::{self, *};
use mcpf_detect::{Confidence, Finding, Severity, verdict};
use mcpf_http::sse::SseEvent;
use mcpf_http::{
    Body, ConnKind, ExchangeId, Headers, HttpEvent, HttpSink, Outcome, Request, ResponseEnd,
    ResponseHead,
};
use std::sync::{Arc, Mutex};

use mcpf_detect::Detector;
use mcpf_engine::{SessionStage, Settings};
use mcpf_mcp::model::{
    Attribution, EventIdScheme, Lack, Namespace, Session, StreamTransport, Transport,
};
use mcpf_model::{ConnId, Direction};
use mcpf_model::{FrameRef, Mark, Timestamp};
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------------------
// The DSL: a client talking to one server
// ------------------------------------------------------------------------------------------------

const SERVER: &str = "10.0.0.2:9123";
const CLIENT_IP: &str = "10.0.0.1";
/// 2026-09-21T...: any fixed capture time will do; nothing reads the clock.
const T0_SECS: i64 = 1_790_000_000;

/// How an exchange ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    /// The response ended by its own framing.
    Complete,
    /// The client reset the connection.
    ClientRst,
    /// The client closed the connection (FIN) before the response ended.
    ClientClose,
    /// The server closed the connection before the response ended.
    ServerClose,
    /// Still open when the capture ended.
    CaptureEnd,
    /// Bytes of the response are missing from the capture.
    Gap(u64),
    /// Complete, but TCP retransmitted this many of its bytes with other content.
    TwoVersions(u64),
    /// The server reset the HTTP/2 stream (RST_STREAM).
    ServerStreamReset,
    /// The server refused the HTTP/2 stream (above its GOAWAY's last stream).
    Refused,
}

/// An open exchange.
#[derive(Debug, Clone)]
struct Ex {
    id: ExchangeId,
    client: SocketAddr,
    /// When the request was sent.
    opened: Mark,
    headed: bool,
    events: u32,
    last_id: String,
}

struct Capture {
    /// The engine's session stage: the builder finalizes each session when it is over and
    /// hands it to the detectors, as in a run of the binary.
    b: SessionStage,
    /// The sessions as they were finalized (their events still held).
    finalized: Arc<Mutex<Vec<Session>>>,
    frame: u64,
    nanos: i64,
    next_conn: u64,
    client_ip: IpAddr,
    server: SocketAddr,
    /// The `Mcp-Session-Id` the client holds (sent on every request but `initialize`).
    sid: Option<String>,
    /// Where the client POSTs (`/mcp`, or the legacy endpoint).
    target: String,
    /// Exchanges end without ending their connection (HTTP keep-alive).
    keep_alive: bool,
    /// The revision `initialize` asks for and its result names.
    version: &'static str,
    /// Initialized: the client names the revision in `MCP-Protocol-Version` from then on, as a
    /// correct client does (unless `no_version_header`).
    negotiated: bool,
    no_version_header: bool,
    /// The input its frames belong to (another leg of the same traffic is another input).
    input: u32,
    /// Requests' heads are cut (by a snap length) after the headers they are given.
    heads_cut: bool,
    /// The HTTP version of the messages (`mcpf_http::HTTP2_VERSION`: streams of HTTP/2).
    http_version: u8,
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

impl Capture {
    fn new() -> Capture {
        Capture::with(&Settings::default())
    }

    fn with(settings: &Settings) -> Capture {
        let finalized = Arc::new(Mutex::new(Vec::new()));
        let sink = finalized.clone();
        let sources = vec![mcpf_model::SourceFormat::Capture; 3];
        let b =
            SessionStage::without_records(settings, sources).with_tap(Box::new(move |s, _, _| {
                sink.lock().unwrap().push(s.clone())
            }));
        Capture {
            b,
            finalized,
            frame: 0,
            nanos: 0,
            next_conn: 1,
            client_ip: CLIENT_IP.parse().unwrap(),
            server: SERVER.parse().unwrap(),
            sid: None,
            target: "/mcp".into(),
            keep_alive: false,
            version: "2025-06-18",
            negotiated: false,
            no_version_header: false,
            input: 0,
            heads_cut: false,
            http_version: 1,
        }
    }

    /// The next frame, 10 ms after the previous one.
    fn tick(&mut self) -> Mark {
        self.frame += 1;
        self.nanos += 10_000_000;
        Mark {
            time: Timestamp::from_secs_nanos(T0_SECS, 0).add_nanos(self.nanos),
            frame: FrameRef::new(self.input, self.frame),
        }
    }

    fn wait(&mut self, secs: f64) {
        self.nanos += (secs * 1e9) as i64;
    }

    /// Later exchanges come from another client host.
    fn client(&mut self, ip: &str) {
        self.client_ip = ip.parse().unwrap();
    }

    /// Opens a connection and sends a complete request on it.
    fn request(&mut self, method: &str, target: &str, hs: Vec<(String, String)>, body: &str) -> Ex {
        let n = self.next_conn;
        self.next_conn += 1;
        let conn = ConnId::tcp(n);
        let client = SocketAddr::new(self.client_ip, 40_000 + n as u16);
        let mark = self.tick();
        self.b.on_http(HttpEvent::ConnectionStart {
            conn,
            client,
            server: self.server,
            mark,
        });
        self.send(
            ExchangeId { conn, index: 0 },
            client,
            method,
            target,
            hs,
            body,
        )
    }

    /// A complete request of exchange `exchange`.
    fn send(
        &mut self,
        exchange: ExchangeId,
        client: SocketAddr,
        method: &str,
        target: &str,
        hs: Vec<(String, String)>,
        body: &str,
    ) -> Ex {
        let first = self.tick();
        let req = Request {
            exchange,
            client,
            server: self.server,
            method: method.into(),
            target: target.into(),
            version: self.http_version,
            headers: Headers(hs),
            body: Body {
                data: body.as_bytes().to_vec(),
                wire_bytes: body.len() as u64,
                decoded_bytes: body.len() as u64,
                ..Body::default()
            },
            first,
            last: first,
            outcome: Outcome::Complete,
            head_complete: !self.heads_cut,
        };
        self.b.on_http(HttpEvent::Request(Box::new(req)));
        Ex {
            id: exchange,
            client,
            opened: first,
            headed: false,
            events: 0,
            last_id: String::new(),
        }
    }

    /// Headers of a Streamable HTTP request: the session ID when the client holds one.
    fn mcp_headers(&self, accept: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut hs = headers(&[("Content-Type", "application/json"), ("Accept", accept)]);
        if let Some(sid) = &self.sid {
            hs.push(("Mcp-Session-Id".into(), sid.clone()));
        }
        if self.negotiated && !self.no_version_header {
            hs.push(("MCP-Protocol-Version".into(), self.version.into()));
        }
        hs.extend(headers(extra));
        hs
    }

    fn respond(&mut self, ex: &mut Ex, status: u16, hs: &[(&str, &str)]) -> Mark {
        let first = self.tick();
        let hs = Headers(headers(hs));
        let event_stream = hs.media_type().as_deref() == Some("text/event-stream");
        self.b
            .on_http(HttpEvent::ResponseHead(Box::new(ResponseHead {
                exchange: ex.id,
                status,
                reason: String::new(),
                version: self.http_version,
                headers: hs,
                interim: Vec::new(),
                first,
                event_stream,
                head_complete: true,
                upstream: None,
            })));
        ex.headed = true;
        first
    }

    /// `200 text/event-stream`, re-affirming the session ID the client holds.
    fn sse_ok(&mut self, ex: &mut Ex) -> Mark {
        let sid = self.sid.clone();
        let mut hs = vec![("Content-Type", "text/event-stream")];
        if let Some(sid) = sid.as_deref() {
            hs.push(("Mcp-Session-Id", sid));
        }
        self.respond(ex, 200, &hs)
    }

    fn typed_event(
        &mut self,
        ex: &mut Ex,
        id: Option<&str>,
        event: &str,
        data: &str,
        after_gap: bool,
    ) -> Mark {
        self.sse_event(ex, id, event, data, after_gap, None)
    }

    /// One SSE event of exchange `ex` (`retry`: its reconnection time field).
    fn sse_event(
        &mut self,
        ex: &mut Ex,
        id: Option<&str>,
        event: &str,
        data: &str,
        after_gap: bool,
        retry: Option<u64>,
    ) -> Mark {
        let mark = self.tick();
        if let Some(id) = id {
            ex.last_id = id.to_string();
        }
        let ev = SseEvent {
            index: ex.events,
            id: id.map(Into::into),
            last_event_id: ex.last_id.as_str().into(),
            event: event.to_string().into(),
            data: data.into(),
            retry,
            priming: id.is_some() && data.is_empty(),
            dispatched: !data.is_empty(),
            mark,
            after_gap,
            truncated: false,
            estimated: false,
        };
        ex.events += 1;
        self.b.on_http(HttpEvent::SseEvent {
            exchange: ex.id,
            event: ev,
        });
        mark
    }

    fn event(&mut self, ex: &mut Ex, id: &str, data: &str) -> Mark {
        self.typed_event(ex, Some(id), "message", data, false)
    }

    /// A priming event (ID, empty data) that also sets the reconnection time.
    fn retry_event(&mut self, ex: &mut Ex, id: &str, retry_ms: u64) -> Mark {
        self.sse_event(ex, Some(id), "message", "", false, Some(retry_ms))
    }

    /// Events `(id, data)` in order; returns their marks.
    fn events(&mut self, ex: &mut Ex, list: &[(&str, String)]) -> Vec<Mark> {
        list.iter().map(|(id, d)| self.event(ex, id, d)).collect()
    }

    /// Ends the exchange (and its connection); returns the mark of the end.
    fn end(&mut self, ex: Ex, cut: Cut) -> Mark {
        self.end_with_body(ex, cut, "")
    }

    fn end_with_body(&mut self, ex: Ex, cut: Cut, body: &str) -> Mark {
        let mark = self.tick();
        let (outcome, closed_by, gap_bytes) = match cut {
            Cut::Complete => (Outcome::Complete, None, 0),
            Cut::ClientRst => (Outcome::Reset, Some(Direction::ClientToServer), 0),
            Cut::ClientClose => (Outcome::ClosedEarly, Some(Direction::ClientToServer), 0),
            Cut::ServerClose => (Outcome::ClosedEarly, Some(Direction::ServerToClient), 0),
            Cut::CaptureEnd => (Outcome::CutByCaptureEnd, None, 0),
            Cut::Gap(n) => (Outcome::Gap, None, n),
            Cut::TwoVersions(_) => (Outcome::Complete, None, 0),
            Cut::ServerStreamReset => (Outcome::StreamReset, Some(Direction::ServerToClient), 0),
            Cut::Refused => (Outcome::Refused, Some(Direction::ServerToClient), 0),
        };
        let inconsistent_bytes = match cut {
            Cut::TwoVersions(n) => n,
            _ => 0,
        };
        if ex.headed {
            self.b.on_http(HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                exchange: ex.id,
                body: Body {
                    data: body.as_bytes().to_vec(),
                    wire_bytes: body.len() as u64 + gap_bytes,
                    decoded_bytes: body.len() as u64,
                    gap_bytes,
                    inconsistent_bytes,
                    ..Body::default()
                },
                last: mark,
                outcome,
                closed_by,
                sse: None,
                when_unknown: false,
            })));
        } else {
            self.b.on_http(HttpEvent::NoResponse {
                exchange: ex.id,
                outcome,
                closed_by,
                mark,
                unknown: false,
                when_unknown: false,
                gap_bytes: 0,
                snaplen_bytes: 0,
            });
        }
        if !self.keep_alive {
            self.close_connection(ex.id, ex.client, mark);
        }
        mark
    }

    fn close_connection(&mut self, id: ExchangeId, client: SocketAddr, mark: Mark) {
        self.b.on_http(HttpEvent::ConnectionEnd {
            conn: id.conn,
            client,
            server: self.server,
            kind: ConnKind::Http,
            mark,
            packets: 0,
            frame_bytes: 0,
        });
    }

    /// The next request on the connection of `prev` (kept alive).
    fn request_after(
        &mut self,
        prev: &Ex,
        method: &str,
        target: &str,
        hs: Vec<(String, String)>,
        body: &str,
    ) -> Ex {
        let exchange = ExchangeId {
            conn: prev.id.conn,
            index: prev.id.index + 1,
        };
        self.send(exchange, prev.client, method, target, hs, body)
    }

    /// POST `initialize`, answered in JSON (with `Mcp-Session-Id` when `sid` is given). The
    /// client holds the new session ID afterwards.
    fn initialize(&mut self, id: Value, sid: Option<&str>) -> Mark {
        self.sid = None;
        self.negotiated = false;
        let hs = self.mcp_headers("application/json, text/event-stream", &[]);
        let target = self.target.clone();
        let body = rpc(
            id.clone(),
            "initialize",
            json!({
                "protocolVersion": self.version,
                "capabilities": {},
                "clientInfo": {"name": "test-client", "version": "1.0"}
            }),
        );
        let mut ex = self.request("POST", &target, hs, &body);
        let opened = ex.opened;
        let mut rh = vec![("Content-Type", "application/json")];
        if let Some(sid) = sid {
            rh.push(("Mcp-Session-Id", sid));
        }
        self.respond(&mut ex, 200, &rh);
        self.end_with_body(ex, Cut::Complete, &init_result(id, self.version));
        self.sid = sid.map(str::to_string);
        self.negotiated = true;
        opened
    }

    /// POST `notifications/initialized`, answered 202.
    fn initialized(&mut self) {
        let hs = self.mcp_headers("application/json, text/event-stream", &[]);
        let target = self.target.clone();
        let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let mut ex = self.request("POST", &target, hs, &body);
        self.respond(&mut ex, 202, &[]);
        self.end(ex, Cut::Complete);
    }

    /// A POST request, not (yet) answered.
    fn post_request(&mut self, id: Value, method: &str, params: Value) -> Ex {
        let hs = self.mcp_headers("application/json, text/event-stream", &[]);
        let target = self.target.clone();
        self.request("POST", &target, hs, &rpc(id, method, params))
    }

    /// `tools/call` `id` of `beta` (progress token `token`) that the client gives up on after 3 s
    /// without a byte of answer: what makes it fall back.
    fn abandoned_beta(&mut self, id: Value, token: &str) {
        let ex = self.post_request(id, "tools/call", call("beta", json!({}), Some(token)));
        self.wait(3.0);
        self.end(ex, Cut::ClientRst);
    }

    /// A POST request answered `status` in JSON with no body.
    fn post_answered(&mut self, id: Value, method: &str, params: Value, status: u16) {
        let mut ex = self.post_request(id, method, params);
        self.respond(&mut ex, status, &[("Content-Type", "application/json")]);
        self.end(ex, Cut::Complete);
    }

    /// A DELETE of the session answered `status`; returns when it was answered.
    fn delete(&mut self, status: u16) -> Mark {
        let hs = self.mcp_headers("application/json", &[]);
        let target = self.target.clone();
        let mut d = self.request("DELETE", &target, hs, "");
        let answered = self.respond(&mut d, status, &[]);
        self.end(d, Cut::Complete);
        answered
    }

    /// A POST request answered `200 text/event-stream`; events follow.
    fn post(&mut self, id: Value, method: &str, params: Value) -> Ex {
        let mut ex = self.post_request(id, method, params);
        self.sse_ok(&mut ex);
        ex
    }

    /// `tools/list` with `id`, answered in JSON with no tools.
    fn tools_list(&mut self, id: u64) -> Mark {
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}).to_string();
        self.post_json(json!(id), "tools/list", json!({}), &answer)
    }

    /// A POST answered in full with a JSON body.
    fn post_json(&mut self, id: Value, method: &str, params: Value, answer: &str) -> Mark {
        let mut ex = self.post_request(id, method, params);
        let opened = ex.opened;
        self.respond(&mut ex, 200, &[("Content-Type", "application/json")]);
        self.end_with_body(ex, Cut::Complete, answer);
        opened
    }

    /// A GET `text/event-stream` (with `Last-Event-ID` when given), not (yet) answered.
    fn get_request(&mut self, lei: Option<&str>, extra: &[(&str, &str)]) -> Ex {
        let mut hs = self.mcp_headers("text/event-stream", extra);
        hs.retain(|(n, _)| n != "Content-Type");
        if let Some(lei) = lei {
            hs.push(("Last-Event-ID".into(), lei.into()));
        }
        let target = self.target.clone();
        self.request("GET", &target, hs, "")
    }

    /// A GET answered `200 text/event-stream` with the session ID.
    fn get(&mut self, lei: Option<&str>) -> Ex {
        let mut ex = self.get_request(lei, &[]);
        self.sse_ok(&mut ex);
        ex
    }

    /// Ends the capture; the findings in their final order, the sessions by index.
    fn finish(self) -> Run {
        let analysed = self.b.finish().unwrap();
        let mut sessions = std::mem::take(&mut *self.finalized.lock().unwrap());
        sessions.sort_by_key(|s| s.idx);
        Run {
            sessions,
            findings: analysed.findings,
        }
    }
}

fn rpc(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn init_result(id: Value, version: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "test-server", "version": "2.0"}
        }
    })
    .to_string()
}

/// `tools/call` params, with a progress token when given.
fn call(tool: &str, args: Value, token: Option<&str>) -> Value {
    let mut p = json!({"name": tool, "arguments": args});
    if let Some(t) = token {
        p["_meta"] = json!({"progressToken": t});
    }
    p
}

fn result(id: Value, text: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"content": [{"type": "text", "text": text}]}
    })
    .to_string()
}

fn progress(token: &str, n: u64) -> String {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": n, "total": 10}
    })
    .to_string()
}

fn log(text: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": text}
    })
    .to_string()
}

// ------------------------------------------------------------------------------------------------
// Reading the results
// ------------------------------------------------------------------------------------------------

struct Run {
    sessions: Vec<Session>,
    findings: Vec<Finding>,
}

impl Run {
    fn kinds(&self) -> Vec<FindingKind> {
        self.findings.iter().map(|f| f.kind).collect()
    }

    fn all(&self, kind: FindingKind) -> Vec<&Finding> {
        self.findings.iter().filter(|f| f.kind == kind).collect()
    }

    /// The one finding of `kind`.
    fn one(&self, kind: FindingKind) -> &Finding {
        let all = self.all(kind);
        assert_eq!(
            all.len(),
            1,
            "one {kind} wanted; findings: {:#?}",
            self.kinds()
        );
        all[0]
    }

    /// The `rule` of each finding of `kind`.
    fn rules(&self, kind: FindingKind) -> Vec<String> {
        self.all(kind)
            .iter()
            .map(|f| ev(&f.evidence)["rule"].as_str().unwrap().to_string())
            .collect()
    }

    fn absent(&self, kind: FindingKind) {
        assert!(
            self.all(kind).is_empty(),
            "{kind} must not be raised: {:#?}",
            self.all(kind)
                .iter()
                .map(|f| (&f.summary, &f.evidence))
                .collect::<Vec<_>>()
        );
    }

    /// Position of the one finding of `kind` in the ordered list (what `caused_by` holds).
    fn pos(&self, kind: FindingKind) -> usize {
        let f = self.one(kind);
        self.findings
            .iter()
            .position(|x| std::ptr::eq(x, f))
            .unwrap()
    }

    fn nothing_above_info(&self) {
        let loud: Vec<_> = self
            .findings
            .iter()
            .filter(|f| f.severity != Severity::Info)
            .map(|f| (f.kind, &f.summary))
            .collect();
        assert!(loud.is_empty(), "findings above info: {loud:#?}");
    }

    fn verdict(&self, session: usize) -> verdict::Verdict {
        verdict::resumption(&self.sessions[session], &self.findings)
    }

    fn session(&self) -> &Session {
        assert_eq!(self.sessions.len(), 1, "one session wanted");
        &self.sessions[0]
    }
}

/// A finding's evidence as the JSON report writes it.
fn ev(e: &mcpf_detect::Evidence) -> Value {
    serde_json::to_value(e).unwrap()
}

fn frames(f: &Finding) -> Vec<u64> {
    f.frames.iter().map(|m| m.frame.frame).collect()
}

fn frames_of(marks: &[Mark]) -> Vec<u64> {
    let mut v: Vec<u64> = marks.iter().map(|m| m.frame.frame).collect();
    v.sort_unstable();
    v.dedup();
    v
}

// ------------------------------------------------------------------------------------------------
// The seed incident, hand-built
// ------------------------------------------------------------------------------------------------

/// Marks of the seed incident the assertions cite.
struct Seed {
    /// s4: the stalled POST tools/call #3.
    stalled_sent: Mark,
    stalled_abandoned: Mark,
    /// s3's event 3 (the answer to #2).
    post_answer: Mark,
    /// s5: the fallback GET and its events.
    fallback_opened: Mark,
    fallback_events: Vec<Mark>,
    /// s6: the resume and the replayed event.
    resume_opened: Mark,
    replayed: Mark,
}

/// The seed note's incident with small numbers: `initialize` (s1), `notifications/initialized`
/// (s2), a `tools/call` #2 answered on its POST stream as events 1–3 (s3), a `tools/call` #3
/// whose POST response a buffering proxy holds back until the client gives up (s4), the GET
/// fallback carrying #3's progress as events 1–2 of a second counter (s5), a network drop, and a
/// resume with `Last-Event-ID: 2` that the server looks up in the POST counter: it replays event
/// 3 of s3 (the answer to #2, again) and never the rest of the GET stream (s6).
fn seed_incident(c: &mut Capture) -> Seed {
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut s3 = c.post(
        json!(2),
        "tools/call",
        call("alpha", json!({"q": "a"}), Some("tok-2")),
    );
    let m = c.events(
        &mut s3,
        &[
            ("1", progress("tok-2", 1)),
            ("2", progress("tok-2", 2)),
            ("3", result(json!(2), "alpha done")),
        ],
    );
    let post_answer = m[2];
    c.end(s3, Cut::Complete);
    let s4 = c.post_request(
        json!(3),
        "tools/call",
        call("beta", json!({"q": "b"}), Some("tok-3")),
    );
    let stalled_sent = s4.opened;
    c.wait(5.0);
    let stalled_abandoned = c.end(s4, Cut::ClientClose);
    let mut s5 = c.get(None);
    let fallback_opened = s5.opened;
    let fallback_events = c.events(
        &mut s5,
        &[("1", progress("tok-3", 1)), ("2", progress("tok-3", 2))],
    );
    c.wait(1.0);
    c.end(s5, Cut::ClientRst);
    let mut s6 = c.get(Some("2"));
    let resume_opened = s6.opened;
    let replayed = c.event(&mut s6, "3", &result(json!(2), "alpha done"));
    c.wait(3.0);
    c.end(s6, Cut::CaptureEnd);
    Seed {
        stalled_sent,
        stalled_abandoned,
        post_answer,
        fallback_opened,
        fallback_events,
        resume_opened,
        replayed,
    }
}

#[test]
fn seed_incident_raises_the_whole_chain_in_order() {
    let mut c = Capture::new();
    let m = seed_incident(&mut c);
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.session_id.as_deref(), Some("sess-A"));
    assert_eq!(s.event_id_scheme, EventIdScheme::Integer);
    assert_eq!(s.streams.len(), 6);

    let wanted = [
        SseFallback,
        EventIdReset,
        UnsafeResumptionAfterFallback,
        CrossNamespaceReplay,
        DuplicateResponse,
        SkippedEvents,
        UnansweredRequest,
    ];
    let got = run.kinds();
    assert_eq!(got, wanted, "exactly these findings, in this order");

    // sse_fallback
    let fb = run.one(SseFallback);
    assert_eq!(fb.severity, Severity::Info);
    assert_eq!(ev(&fb.evidence)["from"], "post:s4");
    assert_eq!(ev(&fb.evidence)["to"], "get:s5");
    assert_eq!(ev(&fb.evidence)["from_transport"], "post");
    assert_eq!(ev(&fb.evidence)["to_transport"], "get");
    assert_eq!(ev(&fb.evidence)["request_id"], json!(3));
    assert_eq!(
        ev(&fb.evidence)["confirmed_by_messages_on_new_stream"],
        true
    );
    let trigger = ev(&fb.evidence)["trigger"].as_str().unwrap().to_string();
    assert!(
        trigger.contains("tools/call #3") && trigger.contains("abandoned"),
        "{trigger}"
    );
    assert!(trigger.contains("no response bytes"), "{trigger}");
    assert_eq!(
        frames(fb),
        frames_of(&[m.stalled_sent, m.stalled_abandoned, m.fallback_opened])
    );
    assert!(fb.caused_by.is_empty());

    // event_id_reset, fallback case: the GET counter restarted at 1 below the 3 seen on s3
    let reset = run.one(EventIdReset);
    assert_eq!(reset.severity, Severity::High);
    assert_eq!(ev(&reset.evidence)["last_event_id"], Value::Null);
    assert_eq!(ev(&reset.evidence)["first_event_id"], "1");
    assert_eq!(ev(&reset.evidence)["highest_before"], "3");
    assert_eq!(ev(&reset.evidence)["highest_seen_on"], "post:s3");
    // The fallback it followed; it states the split counter once: the IDs both counters
    // minted (no separate collision), and the resume that crossed them.
    assert_eq!(reset.caused_by, vec![run.pos(SseFallback)]);
    assert_eq!(ev(&reset.evidence)["ids_minted_twice"], 2);
    assert_eq!(ev(&reset.evidence)["crossed_by"], json!(["get:s6"]));
    let shown = frames(reset);
    for m in [m.fallback_opened, m.fallback_events[0]] {
        assert!(shown.contains(&m.frame.frame), "{shown:?}");
    }

    // unsafe_resumption_after_fallback
    let unsafe_ = run.one(UnsafeResumptionAfterFallback);
    assert_eq!(unsafe_.severity, Severity::High);
    assert_eq!(ev(&unsafe_.evidence)["last_event_id"], "2");
    assert_eq!(ev(&unsafe_.evidence)["event_id_scheme"], "integer");
    assert_eq!(ev(&unsafe_.evidence)["resume_stream"], "get:s6");
    assert_eq!(ev(&unsafe_.evidence)["fallback"]["to"], "get:s5");
    assert_eq!(unsafe_.caused_by, vec![run.pos(SseFallback)]);
    assert_eq!(
        frames(unsafe_),
        frames_of(&[m.fallback_opened, m.resume_opened])
    );

    // cross_namespace_replay
    let replay = run.one(CrossNamespaceReplay);
    assert_eq!(replay.severity, Severity::Critical);
    let e = ev(&replay.evidence);
    assert_eq!(e["last_event_id"], "2");
    assert_eq!(e["observed_in"], "get:s5");
    assert_eq!(e["replayed_from"], "post:s3");
    assert_eq!(e["replayed_event_ids"], json!(["3"]));
    assert_eq!(e["how"], Attribution::IdenticalEvent.describe());
    assert_eq!(e["attribution"], "identical_event");
    assert_eq!(
        e["also_minted_by"],
        json!(["post:s3"]),
        "ID 2 was delivered on both counters: the ambiguity is evidence"
    );
    let mut causes = replay.caused_by.clone();
    causes.sort();
    let mut want = vec![
        run.pos(UnsafeResumptionAfterFallback),
        run.pos(EventIdReset),
    ];
    want.sort();
    assert_eq!(causes, want);
    assert_eq!(replay.time, m.replayed);
    assert_eq!(
        frames(replay),
        frames_of(&[
            m.resume_opened,
            m.replayed,
            m.fallback_events[1],
            m.post_answer
        ])
    );

    // duplicate_response
    let dup = run.one(DuplicateResponse);
    assert_eq!(dup.severity, Severity::High);
    assert_eq!(ev(&dup.evidence)["request_id"], json!(2));
    assert_eq!(ev(&dup.evidence)["first"]["stream"], "post:s3");
    assert_eq!(ev(&dup.evidence)["first"]["event_id"], "3");
    assert_eq!(
        ev(&dup.evidence)["first"]["frame"],
        m.post_answer.frame.frame
    );
    assert_eq!(ev(&dup.evidence)["duplicate"]["stream"], "get:s6");
    assert_eq!(ev(&dup.evidence)["duplicate"]["event_id"], "3");
    assert_eq!(
        ev(&dup.evidence)["duplicate"]["frame"],
        m.replayed.frame.frame
    );
    assert_eq!(ev(&dup.evidence)["same_payload"], true);
    assert_eq!(dup.caused_by, vec![run.pos(CrossNamespaceReplay)]);
    assert_eq!(frames(dup), frames_of(&[m.post_answer, m.replayed]));

    // skipped_events after the replay: nothing later shows where the GET range ends
    let skipped = run.one(SkippedEvents);
    assert_eq!(skipped.severity, Severity::High);
    assert_eq!(ev(&skipped.evidence)["namespace"], "get:s5");
    assert_eq!(ev(&skipped.evidence)["from"], "3");
    assert_eq!(ev(&skipped.evidence)["to"], Value::Null);
    assert_eq!(ev(&skipped.evidence)["count"], Value::Null);
    assert_eq!(ev(&skipped.evidence)["after"], "2");
    assert_eq!(skipped.caused_by, vec![run.pos(CrossNamespaceReplay)]);

    // unanswered_request: the wait that never ended
    let hang = run.one(UnansweredRequest);
    assert_eq!(hang.severity, Severity::High);
    assert_eq!(ev(&hang.evidence)["request_id"], json!(3));
    assert_eq!(ev(&hang.evidence)["method"], "tools/call");
    assert_eq!(ev(&hang.evidence)["tool"], "beta");
    assert_eq!(ev(&hang.evidence)["session_went_on"], true);
    assert_eq!(ev(&hang.evidence)["last_progress"]["stream"], "get:s5");
    assert_eq!(ev(&hang.evidence)["last_progress"]["event_id"], "2");
    let waited = ev(&hang.evidence)["waited_s"].as_f64().unwrap();
    let expected = s.end.time.seconds_since(m.stalled_sent.time);
    assert!((waited - expected).abs() < 0.002, "{waited} vs {expected}");
    assert!(waited > 9.0, "{waited}");
    assert_eq!(hang.caused_by, vec![run.pos(SkippedEvents)]);
    assert_eq!(hang.time, s.end);

    for f in &run.findings {
        assert_eq!(f.confidence, Confidence::Normal, "{}", f.kind);
        assert_eq!(f.session, 0);
    }

    let v = run.verdict(0);
    assert_eq!(v.verdict, "unsafe");
    assert_eq!(v.resumes, 1);
    let reason = v.reason.unwrap();
    assert!(reason.starts_with("cross_namespace_replay: "), "{reason}");
}

// ------------------------------------------------------------------------------------------------
// capture_gap
// ------------------------------------------------------------------------------------------------

#[test]
fn capture_gap_is_low_and_reduces_the_confidence_of_what_rests_on_it() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    let opened = g.opened;
    let m1 = c.events(&mut g, &[("1", log("a")), ("2", log("b"))]);
    let after = c.typed_event(&mut g, Some("5"), "message", &log("e"), true);
    c.end(g, Cut::Gap(900));
    let run = c.finish();

    let gap = run.one(CaptureGap);
    assert_eq!(gap.severity, Severity::Low);
    assert_eq!(ev(&gap.evidence)["stream"], "get:s3");
    assert_eq!(ev(&gap.evidence)["bytes"], 900);
    assert_eq!(ev(&gap.evidence)["events_dropped_at_gap"], 1);
    assert_eq!(gap.time, after);
    assert_eq!(frames(gap), frames_of(&[opened, after]));
    assert_eq!(gap.confidence, Confidence::Normal);

    // The jump 2 → 5 is probably the capture's doing: it says so.
    let skipped = run.one(SkippedEvents);
    assert_eq!(ev(&skipped.evidence)["namespace"], "get:s3");
    assert_eq!(ev(&skipped.evidence)["from"], "3");
    assert_eq!(ev(&skipped.evidence)["to"], "4");
    assert_eq!(ev(&skipped.evidence)["count"], 2);
    assert_eq!(skipped.caused_by, vec![run.pos(CaptureGap)]);
    assert_eq!(skipped.confidence, Confidence::Reduced);
    assert!(
        skipped
            .confidence_note
            .as_deref()
            .is_some_and(|n| n.contains("get:s3")),
        "{:?}",
        skipped.confidence_note
    );
    assert_eq!(frames(skipped), frames_of(&[m1[1], after]));
}

#[test]
fn bytes_retransmitted_with_other_content_reduce_the_confidence_of_what_rests_on_them() {
    // Issue 11: a retransmission that disagrees with the first copy leaves two versions of the
    // bytes; findings on the exchange that carried them say so.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("1", log("a")), ("2", log("b")), ("5", log("e"))]);
    c.end(g, Cut::TwoVersions(17));
    let run = c.finish();
    let skipped = run.one(SkippedEvents);
    assert_eq!(skipped.confidence, Confidence::Reduced);
    let note = skipped.confidence_note.as_deref().unwrap_or_default();
    assert!(
        note.contains("retransmitted") && note.contains("get:s3"),
        "{note}"
    );
}

#[test]
fn a_clean_capture_has_no_capture_gap_and_full_confidence() {
    let mut c = Capture::new();
    seed_incident(&mut c);
    let run = c.finish();
    run.absent(CaptureGap);
    assert!(
        run.findings
            .iter()
            .all(|f| f.confidence == Confidence::Normal && f.confidence_note.is_none())
    );
}

// ------------------------------------------------------------------------------------------------
// sse_fallback
// ------------------------------------------------------------------------------------------------

#[test]
fn a_refused_initialize_is_not_tied_to_a_legacy_session_by_address() {
    // The refused initialize and the legacy session share nothing but the client's address:
    // no fallback is claimed, and the refused exchange stays with its own connection.
    let mut c = Capture::new();
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let body = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
    );
    let mut refused = c.request("POST", "/mcp", hs, &body);
    c.respond(&mut refused, 405, &[("Content-Length", "0")]);
    c.end(refused, Cut::Complete);
    let mut sse = c.request(
        "GET",
        "/sse",
        headers(&[("Accept", "text/event-stream")]),
        "",
    );
    c.respond(&mut sse, 200, &[("Content-Type", "text/event-stream")]);
    c.typed_event(&mut sse, None, "endpoint", "/messages?sessionId=L1", false);
    let mut init = c.request(
        "POST",
        "/messages?sessionId=L1",
        headers(&[("Content-Type", "application/json")]),
        &body,
    );
    c.respond(&mut init, 202, &[]);
    c.end(init, Cut::Complete);
    c.end(sse, Cut::CaptureEnd);
    let run = c.finish();
    assert_eq!(run.sessions.len(), 2);
    assert!(run.sessions.iter().all(|s| s.fallbacks.is_empty()));
    run.absent(SseFallback);
}

#[test]
fn sse_fallback_at_connect_initialize_refused_then_legacy_transport() {
    let mut c = Capture::new();
    // Streamable HTTP first: the server answers 405.
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let body = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
    );
    // The client keeps its connection: what proves the fallback is the same client is that the
    // legacy POSTs come on the connection whose initialize was refused.
    c.keep_alive = true;
    let mut refused = c.request("POST", "/mcp", hs, &body);
    let refused_sent = refused.opened;
    let refused_at = c.respond(&mut refused, 405, &[("Content-Length", "0")]);
    let kept = refused.clone();
    c.end(refused, Cut::Complete);
    c.keep_alive = false;
    // Then the 2024-11-05 transport.
    let mut sse = c.request(
        "GET",
        "/sse",
        headers(&[("Accept", "text/event-stream")]),
        "",
    );
    let legacy_opened = sse.opened;
    c.respond(&mut sse, 200, &[("Content-Type", "text/event-stream")]);
    c.typed_event(&mut sse, None, "endpoint", "/messages?sessionId=L1", false);
    c.target = "/messages?sessionId=L1".into();
    let mut init = c.request_after(
        &kept,
        "POST",
        "/messages?sessionId=L1",
        headers(&[("Content-Type", "application/json")]),
        &body,
    );
    c.respond(&mut init, 202, &[]);
    c.end(init, Cut::Complete);
    c.typed_event(
        &mut sse,
        None,
        "message",
        &init_result(json!(1), "2024-11-05"),
        false,
    );
    c.end(sse, Cut::CaptureEnd);
    let run = c.finish();

    let s = run.session();
    assert_eq!(s.transport, Transport::LegacySse);
    assert_eq!(s.fallbacks.len(), 1);
    let fb = run.one(SseFallback);
    assert_eq!(fb.severity, Severity::Info);
    assert_eq!(ev(&fb.evidence)["from"], "post:s1");
    assert_eq!(ev(&fb.evidence)["to"], "legacy-sse:s2");
    assert_eq!(ev(&fb.evidence)["from_transport"], "streamable-http");
    assert_eq!(ev(&fb.evidence)["to_transport"], "legacy-sse");
    assert_eq!(ev(&fb.evidence)["trigger"], "POST initialize answered 405");
    assert_eq!(ev(&fb.evidence)["request_id"], json!(1));
    assert_eq!(frames(fb), frames_of(&[refused_at, legacy_opened]));
    assert!(refused_sent < refused_at);
    // The refused initialize was never processed: no reuse of ID 1, nothing unanswered.
    run.absent(RequestIdReused);
    run.absent(UnansweredRequest);
    run.nothing_above_info();
}

#[test]
fn a_refused_initialize_not_followed_by_the_legacy_transport_is_no_fallback() {
    let mut c = Capture::new();
    let hs = c.mcp_headers("application/json", &[]);
    let body = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-06-18"}),
    );
    let mut refused = c.request("POST", "/mcp", hs, &body);
    c.respond(&mut refused, 405, &[]);
    c.end(refused, Cut::Complete);
    let run = c.finish();
    run.absent(SseFallback);
    assert!(run.sessions.iter().all(|s| s.fallbacks.is_empty()));
}

#[test]
fn the_standalone_get_after_initialized_is_not_a_fallback() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.event(&mut g, "1", &log("hello"));
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), None));
    c.event(&mut p, "2", &result(json!(2), "ok"));
    c.end(p, Cut::Complete);
    c.end(g, Cut::CaptureEnd);
    let run = c.finish();
    run.absent(SseFallback);
    assert!(run.session().fallbacks.is_empty());
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
    let v = run.verdict(0);
    assert_eq!(v.verdict, "not_attempted");
    assert_eq!(v.reason, None);
}

#[test]
fn a_get_with_last_event_id_right_after_a_cut_stream_is_a_resume_not_a_fallback() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("1", progress("t", 1))]);
    c.end(p, Cut::ClientRst);
    let mut r = c.get(Some("1"));
    c.events(&mut r, &[("2", result(json!(2), "ok"))]);
    c.end(r, Cut::Complete);
    let run = c.finish();
    let s = run.session();
    run.absent(SseFallback);
    assert!(s.fallbacks.is_empty());
    let resume = s.streams[3].resume.as_ref().unwrap();
    assert_eq!(resume.last_event_id, "1");
    assert_eq!(resume.continues, Some(2));
    assert!(resume.also_seen_on.is_empty());
    run.nothing_above_info();
    assert_eq!(run.verdict(0).verdict, "safe");
}

#[test]

fn a_resumed_post_does_not_make_a_later_get_a_fallback() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("1", progress("t", 1))]);
    c.end(p, Cut::ClientRst);
    // The client resumes the POST stream and gets its answer...
    let mut r = c.get(Some("1"));
    c.events(&mut r, &[("2", result(json!(2), "ok"))]);
    c.end(r, Cut::Complete);
    // ...then (re)opens the standalone GET stream, as SDK clients do, and later resumes it.
    let mut g = c.get(None);
    c.events(&mut g, &[("3", log("hello"))]);
    c.end(g, Cut::ServerClose);
    let mut r = c.get(Some("3"));
    c.events(&mut r, &[("4", log("again"))]);
    c.end(r, Cut::CaptureEnd);
    let run = c.finish();
    run.absent(SseFallback);
    assert!(run.session().fallbacks.is_empty());
    // The consequence today: a high unsafe_resumption_after_fallback and an unsafe verdict.
    run.absent(UnsafeResumptionAfterFallback);
    assert_eq!(run.verdict(0).verdict, "safe");
}

// ------------------------------------------------------------------------------------------------
// unsafe_resumption_after_fallback
// ------------------------------------------------------------------------------------------------

/// A fallback (POST #3 abandoned, GET opened), a drop of the GET, and a resume: with `ids` for
/// the event IDs of s3 (the POST stream of #2), s5 (the GET) and s6 (the resume).
fn fallback_then_resume(
    c: &mut Capture,
    post_ids: [&str; 2],
    get_ids: [&str; 2],
    resume_id: &str,
    resume_headers: &[(&str, &str)],
    get_headers: &[(&str, &str)],
) {
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut s3 = c.post(
        json!(2),
        "tools/call",
        call("alpha", json!({}), Some("tok-2")),
    );
    c.events(
        &mut s3,
        &[
            (post_ids[0], progress("tok-2", 1)),
            (post_ids[1], result(json!(2), "alpha")),
        ],
    );
    c.end(s3, Cut::Complete);
    c.abandoned_beta(json!(3), "tok-3");
    let mut s5 = c.get_request(None, &[]);
    let sid = c.sid.clone().unwrap();
    let mut hs = vec![
        ("Content-Type", "text/event-stream"),
        ("Mcp-Session-Id", sid.as_str()),
    ];
    hs.extend_from_slice(get_headers);
    c.respond(&mut s5, 200, &hs);
    c.events(
        &mut s5,
        &[
            (get_ids[0], progress("tok-3", 1)),
            (get_ids[1], progress("tok-3", 2)),
        ],
    );
    c.end(s5, Cut::ServerClose);
    let mut s6 = c.get_request(Some(get_ids[1]), resume_headers);
    c.respond(&mut s6, 200, &hs);
    c.events(&mut s6, &[(resume_id, result(json!(3), "beta"))]);
    c.end(s6, Cut::Complete);
}

#[test]
fn namespaced_ids_after_a_fallback_make_the_resume_safe() {
    let mut c = Capture::new();
    fallback_then_resume(
        &mut c,
        ["post:1", "post:2"],
        ["get:1", "get:2"],
        "get:3",
        &[],
        &[],
    );
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.event_id_scheme, EventIdScheme::Namespaced);
    assert_eq!(s.fallbacks.len(), 1);
    run.one(SseFallback);
    run.absent(UnsafeResumptionAfterFallback);
    run.absent(CrossNamespaceReplay);
    run.absent(EventIdReset);
    run.nothing_above_info();
    let v = run.verdict(0);
    assert_eq!(v.verdict, "safe");
    assert!(v.reason.unwrap().contains("event IDs name their stream"));
}

#[test]
fn an_echoed_transport_mode_token_makes_the_resume_safe() {
    let mut c = Capture::new();
    fallback_then_resume(
        &mut c,
        ["1", "2"],
        ["3", "4"],
        "5",
        &[("Mcp-Transport-Mode", "sse")],
        &[("Mcp-Transport-Mode", "sse")],
    );
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.transport_mode_header.as_deref(), Some("sse"));
    assert_eq!(s.streams[5].transport_mode_sent.as_deref(), Some("sse"));
    run.one(SseFallback);
    run.absent(UnsafeResumptionAfterFallback);
    run.nothing_above_info();
    assert_eq!(run.verdict(0).verdict, "safe");
}

#[test]

fn an_echoed_transport_mode_that_differs_from_where_the_last_event_was_seen_is_unsafe() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let post_mode = [
        ("Content-Type", "text/event-stream"),
        ("Mcp-Session-Id", "sess-A"),
        ("Mcp-Transport-Mode", "post"),
    ];
    let sse_mode = [
        ("Content-Type", "text/event-stream"),
        ("Mcp-Session-Id", "sess-A"),
        ("Mcp-Transport-Mode", "sse"),
    ];
    let mut s3 = c.post_request(json!(2), "tools/call", call("alpha", json!({}), None));
    c.respond(&mut s3, 200, &post_mode);
    c.events(&mut s3, &[("1", log("a")), ("2", result(json!(2), "a"))]);
    c.end(s3, Cut::Complete);
    c.abandoned_beta(json!(3), "tok");
    let mut s5 = c.get_request(None, &[]);
    c.respond(&mut s5, 200, &sse_mode);
    c.events(
        &mut s5,
        &[("1", progress("tok", 1)), ("2", progress("tok", 2))],
    );
    c.end(s5, Cut::ServerClose);
    // Last-Event-ID 2 was seen in "sse" mode; the client echoes "post" and the server, which
    // resolved it in its POST counter, says "post".
    let mut s6 = c.get_request(Some("2"), &[("Mcp-Transport-Mode", "post")]);
    c.respond(&mut s6, 200, &post_mode);
    c.events(&mut s6, &[("3", log("c"))]);
    c.end(s6, Cut::CaptureEnd);
    let run = c.finish();
    assert_eq!(
        run.session().streams[4].transport_mode.as_deref(),
        Some("sse")
    );
    let u = run.one(UnsafeResumptionAfterFallback);
    assert_eq!(ev(&u.evidence)["last_event_id"], "2");
}

#[test]
fn plain_integer_ids_after_a_fallback_make_the_resume_unsafe_even_when_nothing_broke() {
    // One shared counter: nothing visibly breaks, but the decision boundary still applies.
    let mut c = Capture::new();
    fallback_then_resume(&mut c, ["1", "2"], ["3", "4"], "5", &[], &[]);
    let run = c.finish();
    let u = run.one(UnsafeResumptionAfterFallback);
    assert_eq!(u.severity, Severity::High);
    assert_eq!(ev(&u.evidence)["last_event_id"], "4");
    assert_eq!(ev(&u.evidence)["event_id_scheme"], "integer");
    assert_eq!(ev(&u.evidence)["transport_mode_header"], Value::Null);
    assert_eq!(u.caused_by, vec![run.pos(SseFallback)]);
    for k in [
        CrossNamespaceReplay,
        EventIdReset,
        ResumeGap,
        DuplicateResponse,
        SkippedEvents,
        UnansweredRequest,
    ] {
        run.absent(k);
    }
    let v = run.verdict(0);
    assert_eq!(v.verdict, "unsafe");
    assert!(
        v.reason
            .unwrap()
            .starts_with("unsafe_resumption_after_fallback: ")
    );
}

#[test]
fn a_resume_after_a_reinitialize_is_past_the_fallback_boundary() {
    let mut c = Capture::new();
    fallback_then_resume(&mut c, ["1", "2"], ["3", "4"], "5", &[], &[]);
    // The client re-initializes; the server re-attaches the same session ID.
    c.initialize(json!(10), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("6", log("a")), ("7", log("b"))]);
    c.end(g, Cut::ServerClose);
    let mut r = c.get(Some("7"));
    c.events(&mut r, &[("8", log("c"))]);
    c.end(r, Cut::CaptureEnd);
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.initializes.len(), 2);
    // Only the first resume (before the re-initialize) is unsafe.
    let u = run.one(UnsafeResumptionAfterFallback);
    assert_eq!(ev(&u.evidence)["last_event_id"], "4");
}

#[test]
fn a_resume_without_any_fallback_is_not_unsafe_resumption_after_fallback() {
    let mut c = Capture::new();
    correct_same_namespace_resume(&mut c);
    let run = c.finish();
    run.absent(UnsafeResumptionAfterFallback);
}

// ------------------------------------------------------------------------------------------------
// cross_namespace_replay
// ------------------------------------------------------------------------------------------------

/// A POST stream cut after event 2, resumed on a GET that replays 3 and 4 of the same counter.
fn correct_same_namespace_resume(c: &mut Capture) {
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("1", progress("t", 1)), ("2", progress("t", 2))]);
    c.end(p, Cut::ClientRst);
    let mut r = c.get(Some("2"));
    c.events(
        &mut r,
        &[("3", progress("t", 3)), ("4", result(json!(2), "ok"))],
    );
    c.end(r, Cut::Complete);
}

#[test]
fn a_correct_same_namespace_resume_is_no_cross_namespace_replay() {
    let mut c = Capture::new();
    correct_same_namespace_resume(&mut c);
    let run = c.finish();
    let s = run.session();
    for e in &s.streams[3].events {
        assert_eq!(e.namespace, Namespace::Stream(2), "{:?}", e.id);
    }
    run.absent(CrossNamespaceReplay);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
    let v = run.verdict(0);
    assert_eq!(v.verdict, "safe");
    assert!(v.reason.unwrap().contains("no fallback"));
}

#[test]
fn cross_namespace_replay_by_namespaced_id_token() {
    // IDs name their stream, but the server answers a resume of `sse:2` with `post:` events.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("sse:1", log("a")), ("sse:2", log("b"))]);
    c.end(g, Cut::ServerClose);
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("post:1", progress("t", 1))]);
    c.end(p, Cut::ClientRst);
    let mut r = c.get(Some("sse:2"));
    let opened = r.opened;
    let replayed = c.events(
        &mut r,
        &[("post:2", progress("t", 2)), ("post:3", log("c"))],
    );
    c.end(r, Cut::CaptureEnd);
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.event_id_scheme, EventIdScheme::Namespaced);
    let x = run.one(CrossNamespaceReplay);
    assert_eq!(x.severity, Severity::Critical);
    assert_eq!(ev(&x.evidence)["last_event_id"], "sse:2");
    assert_eq!(ev(&x.evidence)["observed_in"], "get:s3");
    assert_eq!(ev(&x.evidence)["replayed_from"], "post:s4");
    assert_eq!(
        ev(&x.evidence)["replayed_event_ids"],
        json!(["post:2", "post:3"])
    );
    assert_eq!(ev(&x.evidence)["how"], Attribution::IdToken.describe());
    assert_eq!(x.time, replayed[0]);
    assert!(frames(x).contains(&opened.frame.frame));
    // No fallback here: nothing to chain to, and the namespaced scheme is not the problem.
    assert!(x.caused_by.is_empty());
    run.absent(UnsafeResumptionAfterFallback);
    let skipped = run.one(SkippedEvents);
    assert_eq!(ev(&skipped.evidence)["namespace"], "get:s3");
    assert_eq!(ev(&skipped.evidence)["from"], "3");
    assert_eq!(skipped.caused_by, vec![run.pos(CrossNamespaceReplay)]);
    assert_eq!(run.verdict(0).verdict, "unsafe");
}

#[test]

fn resuming_the_same_post_stream_twice_is_no_cross_namespace_replay() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("1", progress("t", 1)), ("2", progress("t", 2))]);
    c.end(p, Cut::ClientRst);
    let mut r1 = c.get(Some("2"));
    c.events(&mut r1, &[("3", progress("t", 3))]);
    c.end(r1, Cut::ClientRst);
    let mut r2 = c.get(Some("3"));
    c.events(
        &mut r2,
        &[("4", progress("t", 4)), ("5", result(json!(2), "ok"))],
    );
    c.end(r2, Cut::Complete);
    let run = c.finish();
    let s = run.session();
    // Every replayed event was minted by the POST stream (s3).
    for st in &s.streams[3..] {
        for e in &st.events {
            assert_eq!(e.namespace, Namespace::Stream(2), "{:?}", e.id);
        }
    }
    run.absent(CrossNamespaceReplay);
    run.absent(SkippedEvents);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
    assert_eq!(run.verdict(0).verdict, "safe");
}

// ------------------------------------------------------------------------------------------------
// event_id_reset
// ------------------------------------------------------------------------------------------------

/// The standalone GET delivers 4 and 5, drops, and the client resumes with `Last-Event-ID: 5`;
/// the resume delivers `resumed`.
fn standalone_resume(c: &mut Capture, resumed: &[&str]) -> (Mark, Vec<Mark>) {
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("4", log("d")), ("5", log("e"))]);
    c.end(g, Cut::ClientRst);
    let mut r = c.get(Some("5"));
    let opened = r.opened;
    let list: Vec<(&str, String)> = resumed
        .iter()
        .map(|id| (*id, log(&format!("event {id}"))))
        .collect();
    let marks = c.events(&mut r, &list);
    c.end(r, Cut::CaptureEnd);
    (opened, marks)
}

#[test]
fn event_id_reset_on_a_resume_that_starts_below_last_event_id() {
    let mut c = Capture::new();
    let (opened, marks) = standalone_resume(&mut c, &["2", "3"]);
    let run = c.finish();
    let r = run.one(EventIdReset);
    assert_eq!(r.severity, Severity::High);
    assert_eq!(ev(&r.evidence)["last_event_id"], "5");
    assert_eq!(ev(&r.evidence)["first_event_id"], "2");
    assert_eq!(ev(&r.evidence)["highest_before"], "5");
    assert_eq!(ev(&r.evidence)["stream"], "get:s4");
    assert_eq!(frames(r), frames_of(&[opened, marks[0]]));
    assert!(r.caused_by.is_empty(), "no fallback, no cause to cite");
    run.absent(ResumeGap);
    run.absent(UnsafeResumptionAfterFallback);
    let v = run.verdict(0);
    assert_eq!(v.verdict, "unsafe");
    assert!(v.reason.unwrap().starts_with("event_id_reset: "));
}

#[test]
fn no_event_id_reset_when_ids_keep_increasing() {
    // A fallback whose GET continues one shared counter, and a resume at Last-Event-ID + 1.
    let mut c = Capture::new();
    fallback_then_resume(&mut c, ["1", "2"], ["3", "4"], "5", &[], &[]);
    let run = c.finish();
    run.one(SseFallback);
    run.absent(EventIdReset);

    let mut c = Capture::new();
    standalone_resume(&mut c, &["6", "7"]);
    let run = c.finish();
    run.absent(EventIdReset);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

#[test]
fn a_fallback_reset_does_not_by_itself_make_the_verdict_unsafe_without_a_resume() {
    // The GET counter restarts after the fallback (event_id_reset, fallback case) but the client
    // never resumes: verdict not_attempted, with the reason a resume would have been unsafe.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut s3 = c.post(json!(2), "tools/call", call("alpha", json!({}), None));
    c.events(&mut s3, &[("7", result(json!(2), "a"))]);
    c.end(s3, Cut::Complete);
    let s4 = c.post_request(json!(3), "tools/call", call("beta", json!({}), Some("tok")));
    c.wait(2.0);
    c.end(s4, Cut::ClientClose);
    let mut g = c.get(None);
    c.events(
        &mut g,
        &[("1", progress("tok", 1)), ("2", result(json!(3), "b"))],
    );
    c.end(g, Cut::CaptureEnd);
    let run = c.finish();
    let r = run.one(EventIdReset);
    assert_eq!(ev(&r.evidence)["last_event_id"], Value::Null);
    assert_eq!(ev(&r.evidence)["first_event_id"], "1");
    assert_eq!(ev(&r.evidence)["highest_before"], "7");
    assert_eq!(r.caused_by, vec![run.pos(SseFallback)]);
    let v = run.verdict(0);
    assert_eq!(v.verdict, "not_attempted");
    assert_eq!(v.resumes, 0);
    let reason = v.reason.unwrap();
    assert!(
        reason.contains("would have been unsafe") && reason.contains("integer"),
        "{reason}"
    );
}

// ------------------------------------------------------------------------------------------------
// resume_gap
// ------------------------------------------------------------------------------------------------

#[test]
fn resume_gap_when_the_first_resumed_id_jumps() {
    let mut c = Capture::new();
    let (opened, marks) = standalone_resume(&mut c, &["9", "10"]);
    let run = c.finish();
    let g = run.one(ResumeGap);
    assert_eq!(g.severity, Severity::High);
    assert_eq!(ev(&g.evidence)["last_event_id"], "5");
    assert_eq!(ev(&g.evidence)["first_event_id"], "9");
    assert_eq!(ev(&g.evidence)["missing"], 3);
    assert_eq!(g.time, marks[0]);
    assert_eq!(frames(g), frames_of(&[opened, marks[0]]));
    assert!(g.caused_by.is_empty());
    run.absent(EventIdReset);
    let v = run.verdict(0);
    assert_eq!(v.verdict, "unsafe");
    assert!(v.reason.unwrap().starts_with("resume_gap: "));
}

#[test]
fn no_resume_gap_when_the_resume_starts_at_the_successor() {
    let mut c = Capture::new();
    standalone_resume(&mut c, &["6"]);
    let run = c.finish();
    run.absent(ResumeGap);
}

#[test]
fn resume_gap_after_a_fallback_is_caused_by_the_unsafe_resumption() {
    let mut c = Capture::new();
    fallback_then_resume(&mut c, ["1", "2"], ["3", "4"], "9", &[], &[]);
    let run = c.finish();
    let g = run.one(ResumeGap);
    assert_eq!(ev(&g.evidence)["last_event_id"], "4");
    assert_eq!(ev(&g.evidence)["first_event_id"], "9");
    assert_eq!(g.caused_by, vec![run.pos(UnsafeResumptionAfterFallback)]);
}

// ------------------------------------------------------------------------------------------------
// session_not_reaffirmed
// ------------------------------------------------------------------------------------------------

#[test]
fn session_not_reaffirmed_when_a_resume_is_answered_without_the_session_id() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("1", log("a"))]);
    c.end(g, Cut::ClientRst);
    let mut r = c.get_request(Some("1"), &[]);
    let opened = r.opened;
    let head = c.respond(&mut r, 200, &[("Content-Type", "text/event-stream")]);
    c.events(&mut r, &[("2", log("b"))]);
    c.end(r, Cut::CaptureEnd);
    let run = c.finish();
    let f = run.one(SessionNotReaffirmed);
    assert_eq!(f.severity, Severity::Medium);
    assert_eq!(ev(&f.evidence)["session_id"], "sess-A");
    assert_eq!(ev(&f.evidence)["stream"], "get:s4");
    assert_eq!(f.time, head);
    assert_eq!(frames(f), frames_of(&[opened, head]));
    run.absent(SessionIdChanged);
    let v = run.verdict(0);
    assert_eq!(v.verdict, "unsafe");
    assert!(v.reason.unwrap().starts_with("session_not_reaffirmed: "));
}

#[test]
fn no_session_not_reaffirmed_when_the_resume_names_the_session_or_is_refused() {
    let mut c = Capture::new();
    standalone_resume(&mut c, &["6"]);
    let run = c.finish();
    run.absent(SessionNotReaffirmed);

    // A resume refused with 400 and no session header: not an accepted resume.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("1", log("a"))]);
    c.end(g, Cut::ClientRst);
    let mut r = c.get_request(Some("1"), &[]);
    c.respond(&mut r, 400, &[("Content-Type", "application/json")]);
    c.end(r, Cut::Complete);
    let run = c.finish();
    run.absent(SessionNotReaffirmed);
}

// ------------------------------------------------------------------------------------------------
// session_id_changed
// ------------------------------------------------------------------------------------------------

#[test]
fn session_id_changed_when_a_response_names_another_session() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post_request(json!(2), "tools/call", call("alpha", json!({}), None));
    let opened = p.opened;
    let head = c.respond(
        &mut p,
        200,
        &[
            ("Content-Type", "text/event-stream"),
            ("Mcp-Session-Id", "sess-B"),
        ],
    );
    c.events(&mut p, &[("1", result(json!(2), "ok"))]);
    c.end(p, Cut::Complete);
    let run = c.finish();
    let f = run.one(SessionIdChanged);
    assert_eq!(f.severity, Severity::High);
    assert_eq!(ev(&f.evidence)["sent"], "sess-A");
    assert_eq!(ev(&f.evidence)["received"], "sess-B");
    assert_eq!(ev(&f.evidence)["stream"], "post:s3");
    assert_eq!(f.time, head);
    assert_eq!(frames(f), frames_of(&[opened, head]));
}

#[test]
fn no_session_id_changed_when_the_server_keeps_the_id() {
    // The initialize sends none and receives one: that is how a session starts.
    let mut c = Capture::new();
    seed_incident(&mut c);
    let run = c.finish();
    run.absent(SessionIdChanged);
    run.absent(SessionNotReaffirmed);
}

// ------------------------------------------------------------------------------------------------
// duplicate_response
// ------------------------------------------------------------------------------------------------

#[test]
fn duplicate_response_on_another_stream_without_a_replay() {
    // The server answers #2 on its POST stream and broadcasts another answer on the GET stream.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), None));
    let first = c.event(&mut p, "1", &result(json!(2), "ok"));
    c.end(p, Cut::Complete);
    let dup = c.event(&mut g, "2", &result(json!(2), "ok, again"));
    c.end(g, Cut::CaptureEnd);
    let run = c.finish();
    let d = run.one(DuplicateResponse);
    assert_eq!(d.severity, Severity::High);
    assert_eq!(ev(&d.evidence)["request_id"], json!(2));
    assert_eq!(ev(&d.evidence)["first"]["stream"], "post:s4");
    assert_eq!(ev(&d.evidence)["first"]["event_id"], "1");
    assert_eq!(ev(&d.evidence)["duplicate"]["stream"], "get:s3");
    assert_eq!(ev(&d.evidence)["duplicate"]["event_id"], "2");
    assert_eq!(ev(&d.evidence)["same_payload"], false);
    assert_eq!(d.time, dup);
    assert_eq!(frames(d), frames_of(&[first, dup]));
    assert!(d.caused_by.is_empty());
}

#[test]
fn a_legit_replay_with_the_same_event_id_on_the_resumed_stream_is_no_duplicate() {
    // The capture saw event 2 (the answer) arrive as the connection broke; the client had not
    // processed it and resumes from 1: the server replays 2, the same event on the same stream.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(
        &mut p,
        &[("1", progress("t", 1)), ("2", result(json!(2), "ok"))],
    );
    c.end(p, Cut::ClientRst);
    let mut r = c.get(Some("1"));
    c.events(&mut r, &[("2", result(json!(2), "ok"))]);
    c.end(r, Cut::Complete);
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.streams[3].resume.as_ref().unwrap().continues, Some(2));
    assert_eq!(s.streams[3].events[0].namespace, Namespace::Stream(2));
    assert_eq!(
        s.streams[3].events[0].attribution,
        Attribution::IdenticalEvent
    );
    run.absent(DuplicateResponse);
    run.absent(CrossNamespaceReplay);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

// ------------------------------------------------------------------------------------------------
// request_id_reused
// ------------------------------------------------------------------------------------------------

#[test]
fn request_id_reused_within_a_session() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let first = c.post_json(
        json!(5),
        "tools/call",
        call("alpha", json!({}), None),
        &result(json!(5), "a"),
    );
    let second = c.tools_list(5);
    let run = c.finish();
    let f = run.one(RequestIdReused);
    assert_eq!(f.severity, Severity::Medium);
    assert_eq!(ev(&f.evidence)["request_id"], json!(5));
    assert_eq!(ev(&f.evidence)["first"]["stream"], "post:s3");
    assert_eq!(ev(&f.evidence)["first"]["method"], "tools/call");
    assert_eq!(ev(&f.evidence)["first"]["frame"], first.frame.frame);
    assert_eq!(ev(&f.evidence)["second"]["stream"], "post:s4");
    assert_eq!(ev(&f.evidence)["second"]["method"], "tools/list");
    assert_eq!(ev(&f.evidence)["second"]["frame"], second.frame.frame);
    assert_eq!(ev(&f.evidence)["first_in_flight"], false);
    assert_eq!(f.time, second);
    assert_eq!(frames(f), frames_of(&[first, second]));
    // Each request got its own answer: no duplicate, nothing unanswered.
    run.absent(DuplicateResponse);
    run.absent(UnansweredRequest);
}

#[test]
fn request_ids_1_and_string_1_are_different() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    c.post_json(
        json!("1"),
        "tools/call",
        call("alpha", json!({}), None),
        &result(json!("1"), "a"),
    );
    let run = c.finish();
    run.absent(RequestIdReused);
    run.absent(DuplicateResponse);
    run.absent(UnansweredRequest);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

// ------------------------------------------------------------------------------------------------
// Judged by the negotiated revision (docs/revisions.md): each gate, both sides of it
// ------------------------------------------------------------------------------------------------

/// A session of revision `version` whose client POSTs a batch of two requests.
fn batch_at(version: &'static str) -> Run {
    let mut c = Capture::new();
    c.version = version;
    c.initialize(json!(1), Some("sess-B"));
    c.initialized();
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let body = format!(
        "[{},{}]",
        rpc(json!(2), "tools/list", json!({})),
        rpc(json!(3), "ping", json!({}))
    );
    let mut ex = c.request("POST", "/mcp", hs, &body);
    c.respond(&mut ex, 200, &[("Content-Type", "application/json")]);
    let answers = format!(
        "[{},{}]",
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}),
        json!({"jsonrpc": "2.0", "id": 3, "result": {}})
    );
    c.end_with_body(ex, Cut::Complete, &answers);
    c.finish()
}

#[test]
fn a_batched_post_is_legal_in_2025_03_26_only() {
    batch_at("2025-03-26").absent(RevisionViolation);
    for version in ["2025-06-18", "2025-11-25"] {
        let run = batch_at(version);
        let f = run.one(RevisionViolation);
        assert_eq!(ev(&f.evidence)["rule"], "batch", "{version}");
        assert_eq!(ev(&f.evidence)["revision"], version);
        assert_eq!(ev(&f.evidence)["revision_from"], "initialize");
        assert_eq!(f.severity, Severity::Medium);
    }
}

/// Requests of revision `version` (named by their header alone, as 2026-07-28 has no
/// `initialize`): a call answered with a minted session ID, a second one with the same ID once
/// the first was answered, then a GET with `Last-Event-ID` answered with a replay.
fn stateless_server_at(version: &'static str) -> Run {
    let mut c = Capture::new();
    c.keep_alive = true;
    let hs = |c: &Capture| {
        let mut h = c.mcp_headers("application/json, text/event-stream", &[]);
        h.push(("MCP-Protocol-Version".into(), version.into()));
        h
    };
    for _ in 0..2 {
        let h = hs(&c);
        let mut ex = c.request("POST", "/mcp", h, &rpc(json!(1), "tools/list", json!({})));
        c.respond(
            &mut ex,
            200,
            &[
                ("Content-Type", "application/json"),
                ("Mcp-Session-Id", "minted"),
            ],
        );
        c.end_with_body(
            ex,
            Cut::Complete,
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}).to_string(),
        );
    }
    let mut h = hs(&c);
    h.retain(|(n, _)| n != "Content-Type");
    h.push(("Last-Event-ID".into(), "7".into()));
    let mut ex = c.request("GET", "/mcp", h, "");
    c.respond(&mut ex, 200, &[("Content-Type", "text/event-stream")]);
    c.event(&mut ex, "8", &log("replayed"));
    c.end(ex, Cut::Complete);
    c.finish()
}

#[test]
fn under_2026_07_28_minted_sessions_and_honoured_resumes_are_violations() {
    let run = stateless_server_at("2026-07-28");
    let rules = run.rules(RevisionViolation);
    assert!(rules.iter().any(|r| r == "session_id_minted"), "{rules:?}");
    assert!(
        rules.iter().any(|r| r == "last_event_id_honoured"),
        "{rules:?}"
    );
    assert!(
        run.all(RevisionViolation)
            .iter()
            .all(|f| ev(&f.evidence)["revision_from"] == "header")
    );
    // The same ID again after its answer: legal from 2026-07-28.
    run.absent(RequestIdReused);
    let older = stateless_server_at("2025-11-25");
    older.absent(RevisionViolation);
    assert_eq!(
        ev(&older.one(RequestIdReused).evidence)["first_in_flight"],
        false
    );
}

#[test]
fn nothing_naming_the_revision_means_2025_03_26() {
    let mut c = Capture::new();
    c.sid = Some("sess-C".into());
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let mut ex = c.request("POST", "/mcp", hs, &rpc(json!(4), "tools/list", json!({})));
    c.respond(&mut ex, 200, &[("Content-Type", "application/json")]);
    c.end_with_body(
        ex,
        Cut::Complete,
        &json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": []}}).to_string(),
    );
    let run = c.finish();
    let rev = &run.session().revision;
    assert_eq!((&*rev.date, rev.from.name()), ("2025-03-26", "default"));
}

// ------------------------------------------------------------------------------------------------
// event_id_collision, response_on_standalone_stream, cursor_dropped
// ------------------------------------------------------------------------------------------------

/// Two calls, each answered on its own POST stream whose events carry `ids`.
fn two_streams_with_ids(ids: [[&str; 2]; 2]) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-E"));
    c.initialized();
    for (n, pair) in ids.iter().enumerate() {
        let id = 2 + n as u64;
        let mut p = c.post(json!(id), "tools/call", call("alpha", json!({}), Some("t")));
        c.events(
            &mut p,
            &[
                (pair[0], progress("t", 1)),
                (pair[1], result(json!(id), "ok")),
            ],
        );
        c.end(p, Cut::Complete);
    }
    c.finish()
}

#[test]
fn one_event_id_minted_on_two_streams_is_a_collision() {
    let run = two_streams_with_ids([["1", "2"], ["1", "2"]]);
    let f = run.one(EventIdCollision);
    assert_eq!(f.severity, Severity::Medium);
    assert_eq!(ev(&f.evidence)["event_id"], "1");
    assert_eq!(ev(&f.evidence)["streams"], json!(["post:s3", "post:s4"]));
    assert_eq!(ev(&f.evidence)["colliding_ids"], 2);
    two_streams_with_ids([["a-1", "a-2"], ["b-1", "b-2"]]).absent(EventIdCollision);
    // The same ID twice on one stream is not across streams.
    two_streams_with_ids([["1", "1"], ["3", "4"]]).absent(EventIdCollision);
}

#[test]
fn the_seed_incidents_two_counters_are_stated_once_by_the_reset_the_client_saw() {
    let mut c = Capture::new();
    seed_incident(&mut c);
    let run = c.finish();
    run.absent(EventIdCollision);
    assert_eq!(run.one(EventIdReset).severity, Severity::High);
    run.absent(ResponseOnStandaloneStream);
    run.absent(CursorDropped);
}

#[test]
fn a_split_counter_no_resume_crossed_is_a_latent_defect() {
    // The seed's fallback and its second counter, and no resume: medium, not the incident.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("1", progress("t", 1)), ("2", progress("t", 2))]);
    c.wait(1.5);
    c.end(p, Cut::ClientRst);
    let mut g = c.get(None);
    c.events(
        &mut g,
        &[("1", progress("t", 3)), ("2", result(json!(2), "done"))],
    );
    c.end(g, Cut::Complete);
    let run = c.finish();
    run.absent(EventIdCollision);
    let reset = run.one(EventIdReset);
    assert_eq!(reset.severity, Severity::Medium, "{}", reset.summary);
    assert_eq!(ev(&reset.evidence)["ids_minted_twice"], 2);
    assert_eq!(ev(&reset.evidence)["crossed_by"], json!([]));
    assert!(
        reset.summary.contains("no resume crossed them"),
        "{}",
        reset.summary
    );
}

/// The standalone GET carries the answer to `tools/list` 2 (fresh, with its own ID), or the
/// answer comes on a GET resuming the request's POST stream.
fn answer_on_a_get(resuming_the_post: bool) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-R"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/list", json!({}));
    c.event(&mut p, "p-1", "");
    c.end(p, Cut::ServerClose);
    let mut g = c.get(resuming_the_post.then_some("p-1"));
    c.event(
        &mut g,
        "g-1",
        &json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}).to_string(),
    );
    c.end(g, Cut::Complete);
    c.finish()
}

#[test]
fn an_answer_belongs_on_its_request_stream_not_the_standalone_one() {
    let run = answer_on_a_get(false);
    let f = run.one(ResponseOnStandaloneStream);
    assert_eq!(ev(&f.evidence)["request_id"], json!(2));
    assert_eq!(ev(&f.evidence)["event_id"], "g-1");
    run.absent(UnansweredRequest);
    answer_on_a_get(true).absent(ResponseOnStandaloneStream);
}

/// A standalone GET delivering `ids` ends as `cut`; a second GET follows, with `lei`.
fn get_reconnect(ids: &[&str], cut: Cut, lei: Option<&str>) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-G"));
    c.initialized();
    let mut g = c.get(None);
    let list: Vec<(&str, String)> = ids.iter().map(|i| (*i, log("tick"))).collect();
    c.events(&mut g, &list);
    c.end(g, cut);
    c.wait(1.0);
    let mut again = c.get(lei);
    c.event(&mut again, "g-9", &log("after"));
    c.end(again, Cut::Complete);
    c.finish()
}

#[test]
fn a_reconnect_that_forgets_the_last_event_id_drops_the_cursor() {
    let run = get_reconnect(&["g-1", "g-2"], Cut::ServerClose, None);
    let f = run.one(CursorDropped);
    assert_eq!(ev(&f.evidence)["last_seen_event_id"], "g-2");
    assert_eq!(ev(&f.evidence)["lost_stream"], "get:s3");
    assert_eq!(ev(&f.evidence)["stream"], "get:s4");
    get_reconnect(&["g-1", "g-2"], Cut::ServerClose, Some("g-2")).absent(CursorDropped);
    get_reconnect(&["g-1", "g-2"], Cut::ClientClose, None).absent(CursorDropped);
    // An empty id field reset the cursor: nothing to send.
    get_reconnect(&["g-1", ""], Cut::ServerClose, None).absent(CursorDropped);
}

#[test]
fn a_resume_of_a_post_stream_is_no_standalone_stream_whose_cursor_could_drop() {
    // A POST stream cut after its first event, resumed by GET with its ID, which completes
    // with the answer; then the client opens its standalone GET, rightly without an ID.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-P"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.event(&mut p, "p-1", &progress("t", 1));
    c.end(p, Cut::ServerClose);
    let mut r = c.get(Some("p-1"));
    c.event(&mut r, "p-2", &result(json!(2), "ok"));
    c.end(r, Cut::Complete);
    let mut g = c.get(None);
    c.event(&mut g, "g-1", &log("tick"));
    c.end(g, Cut::Complete);
    let run = c.finish();
    run.absent(CursorDropped);
    run.nothing_above_info();
}

/// typescript-sdk #2499: the standalone GET open, a call's POST stream cut after `p-2`, its
/// resume cut before any event (`resume_events` are delivered first when given), then GETs
/// without Last-Event-ID answered `statuses`; `answered`: the call's answer comes later on
/// another request's stream.
fn resume_lost_then(resume_events: &[&str], statuses: &[u16], answered: bool) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-D"));
    c.initialized();
    let standalone = c.get(None);
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(
        &mut p,
        &[("p-1", progress("t", 1)), ("p-2", progress("t", 2))],
    );
    c.end(p, Cut::ServerClose);
    c.wait(0.5);
    let mut r = c.get(Some("p-2"));
    let list: Vec<(&str, String)> = resume_events
        .iter()
        .map(|i| (*i, progress("t", 3)))
        .collect();
    c.events(&mut r, &list);
    c.end(r, Cut::ServerClose);
    for status in statuses {
        c.wait(0.5);
        let mut g = c.get_request(None, &[]);
        c.respond(&mut g, *status, &[("content-type", "application/json")]);
        c.end_with_body(
            g,
            Cut::Complete,
            r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32000,"message":"Conflict"}}"#,
        );
    }
    c.wait(5.0);
    let mut q = c.post(json!(3), "tools/call", call("echo", json!({}), None));
    let mut answers = vec![("q-1", result(json!(3), "echo"))];
    if answered {
        answers.push(("q-2", result(json!(2), "late")));
    }
    c.events(&mut q, &answers);
    c.end(q, Cut::Complete);
    c.end(standalone, Cut::Complete);
    c.delete(200);
    c.finish()
}

#[test]
fn a_resume_lost_before_any_event_then_a_get_without_its_cursor_drops_it() {
    let run = resume_lost_then(&[], &[409, 409], false);
    let f = run.one(CursorDropped);
    assert_eq!(f.severity, Severity::High, "{}", f.summary);
    let e = ev(&f.evidence);
    assert_eq!(e["last_seen_event_id"], "p-2", "the cursor it resumed from");
    assert_eq!(e["lost_stream"], "get:s5");
    assert_eq!(e["resumed_stream"], "post:s4");
    assert_eq!(e["stream"], "get:s6");
    assert_eq!(e["attempts"], 2);
    assert_eq!(e["statuses"], json!([409, 409]));
    assert_eq!(e["unanswered"], json!(["2"]));
    let u = run.one(UnansweredRequest);
    assert_eq!(u.caused_by, vec![f.handle], "{}", u.summary);
    // A resume that delivered an ID first: that ID is the cursor dropped.
    let run = resume_lost_then(&["p-3"], &[409], false);
    assert_eq!(
        ev(&run.one(CursorDropped).evidence)["last_seen_event_id"],
        "p-3"
    );
    // The answer reached the client later: the loss cost no answer, a latent defect.
    let run = resume_lost_then(&[], &[409], true);
    assert_eq!(run.one(CursorDropped).severity, Severity::Medium);
}

#[test]
fn a_get_after_a_lost_resume_is_no_reconnect_without_proof() {
    // The resume delivered the answer: nothing to reconnect for.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-N"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.event(&mut p, "p-1", &progress("t", 1));
    c.end(p, Cut::ServerClose);
    let mut r = c.get(Some("p-1"));
    c.event(&mut r, "p-2", &result(json!(2), "ok"));
    c.end(r, Cut::ServerClose);
    let mut g = c.get(None);
    c.event(&mut g, "g-1", &log("tick"));
    c.end(g, Cut::Complete);
    c.finish().absent(CursorDropped);
    // No standalone stream open and no 409: the GET may be the standalone stream's first
    // opening, not a reconnect.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-O"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.event(&mut p, "p-1", &progress("t", 1));
    c.end(p, Cut::ServerClose);
    let r = c.get(Some("p-1"));
    c.end(r, Cut::ServerClose);
    let mut g = c.get(None);
    c.event(&mut g, "g-1", &log("tick"));
    c.end(g, Cut::Complete);
    c.finish().absent(CursorDropped);
}

/// A call whose stream primes with `retry: 2000`, is ended as `cut`, and is resumed `after` s later.
fn resumed_after(cut: Cut, after: f64) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-T"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.retry_event(&mut p, "p-0", 2000);
    c.event(&mut p, "p-1", &progress("t", 1));
    c.end(p, cut);
    c.wait(after);
    let mut g = c.get(Some("p-1"));
    c.event(&mut g, "p-2", &result(json!(2), "ok"));
    c.end(g, Cut::Complete);
    c.finish()
}

/// SSE polling: the server ends a call's stream after a `retry:` (a complete response, no
/// answer yet) and the capture ends before the client's resume: the answer may come on the
/// resume, so the call is pending, not unanswered. Without the `retry:` a response that ended by
/// its own framing says the answer will not come.
#[test]
fn a_call_whose_stream_the_server_ended_after_retry_is_pending_until_the_resume() {
    let polled = |retry: bool| {
        let mut c = Capture::new();
        c.initialize(json!(1), Some("sess-P"));
        c.initialized();
        let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
        if retry {
            c.retry_event(&mut p, "p-0", 1500);
        }
        c.event(&mut p, "p-1", &progress("t", 1));
        c.end(p, Cut::Complete);
        c.wait(0.5);
        c.finish()
    };
    let run = polled(true);
    run.absent(UnansweredRequest);
    run.one(PendingAtCaptureEnd);
    polled(false).one(UnansweredRequest);
}

#[test]
fn a_reconnect_sooner_than_retry_does_not_honour_it() {
    let run = resumed_after(Cut::ServerClose, 0.5);
    let f = run.one(RetryNotHonoured);
    assert_eq!(f.severity, Severity::Low);
    assert_eq!(ev(&f.evidence)["retry_ms"], 2000);
    assert_eq!(ev(&f.evidence)["stream"], "post:s3");
    let waited = ev(&f.evidence)["waited_ms"].as_f64().unwrap();
    assert!((500.0..600.0).contains(&waited), "{waited}");
    resumed_after(Cut::ServerClose, 2.5).absent(RetryNotHonoured);
    // The client ended the stream itself: its reconnect is no reconnection after a loss.
    resumed_after(Cut::ClientClose, 0.5).absent(RetryNotHonoured);
}

/// A session whose `notifications/initialized` is answered `initialized`, and whose GET for an
/// event stream is answered `get` with `content_type`.
fn statuses(initialized: u16, get: u16, content_type: &str) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-S"));
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let mut ex = c.request("POST", "/mcp", hs, &body);
    c.respond(&mut ex, initialized, &[]);
    c.end(ex, Cut::Complete);
    let mut g = c.get_request(None, &[]);
    c.respond(&mut g, get, &[("Content-Type", content_type)]);
    c.end(g, Cut::Complete);
    c.finish()
}

#[test]
fn statuses_the_transport_does_not_allow_are_violations() {
    statuses(202, 200, "text/event-stream").absent(StatusCodeViolation);
    statuses(202, 405, "text/plain").absent(StatusCodeViolation);
    let rules = |run: &Run| run.rules(StatusCodeViolation);
    assert_eq!(
        rules(&statuses(200, 200, "text/event-stream")),
        ["notification_not_202"]
    );
    let run = statuses(202, 200, "application/json");
    assert_eq!(rules(&run), ["get_not_event_stream"]);
    assert_eq!(run.one(StatusCodeViolation).severity, Severity::Low);
    // A refusal is no violation of these rules.
    statuses(400, 500, "application/json").absent(StatusCodeViolation);
    // 2026-07-28: a GET answered at all, not 405.
    let run = stateless_server_at("2026-07-28");
    assert!(
        rules(&run).contains(&"not_405_in_2026".to_string()),
        "{:?}",
        rules(&run)
    );
    assert!(!rules(&stateless_server_at("2025-11-25")).contains(&"not_405_in_2026".to_string()));
}

// ------------------------------------------------------------------------------------------------
// Replicas: one session at two server addresses of one input
// ------------------------------------------------------------------------------------------------

/// The session's stream at one replica delivers event `r1-5`; the resume with that ID goes to
/// `replica` (the same server, or another one behind the balancer).
/// The sessions of a capture, each observation of one ID a session of its own, numbered.
fn numbered(c: Capture) -> Vec<Session> {
    let mut run = c.finish();
    for (i, s) in run.sessions.iter_mut().enumerate() {
        s.idx = i;
    }
    run.sessions
}

/// The kinds found when `sessions` are one group (the observations of one session).
fn grouped_kinds(sessions: &[Session]) -> Vec<FindingKind> {
    let mut d = Detector::new();
    let refs: Vec<&Session> = sessions.iter().collect();
    d.group(&refs);
    let (findings, _) = d.finish();
    findings.iter().map(|f| f.kind).collect()
}

fn resume_at(replica: &str) -> Vec<Session> {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-X"));
    c.initialized();
    let mut g = c.get(None);
    c.event(&mut g, "r1-5", &log("tick"));
    c.end(g, Cut::ServerClose);
    c.server = replica.parse().unwrap();
    let mut r = c.get(Some("r1-5"));
    c.event(&mut r, "r2-1", &log("other store"));
    c.end(r, Cut::Complete);
    numbered(c)
}

#[test]
fn a_resume_served_by_another_replica_crossed_namespaces() {
    let sessions = resume_at("10.0.0.3:9123");
    assert_eq!(sessions.len(), 2, "one session at each address");
    let mut d = Detector::new();
    let refs: Vec<&Session> = sessions.iter().collect();
    let results = d.group(&refs);
    let (findings, _) = d.finish();
    let f = findings
        .iter()
        .find(|f| f.kind == CrossNamespaceReplay)
        .expect("a crossed namespace");
    // One logical session: stated on its first observation, seen at the replica that served
    // the resume.
    assert_eq!(f.session, sessions[0].idx, "stated once, on the session");
    assert_eq!(
        f.vantage.server.to_string(),
        "10.0.0.3:9123",
        "seen where served"
    );
    assert_eq!(results[1].folded_into, Some(sessions[0].idx));
    assert!(results[1].findings.is_empty());
    assert_eq!(ev(&f.evidence)["resume_upstream"], "10.0.0.3:9123");
    assert_eq!(ev(&f.evidence)["minting_upstreams"], json!([SERVER]));
    assert_eq!(ev(&f.evidence)["minted_in_session"], sessions[0].label());
    assert_eq!(results[0].verdict.verdict, "unsafe");
    // The same replica: the resume is its own session's, nothing crossed.
    let same = resume_at(SERVER);
    assert_eq!(same.len(), 1);
    let mut d = Detector::new();
    d.group(&[&same[0]]);
    assert!(d.findings().iter().all(|f| f.kind != CrossNamespaceReplay));
}

/// A call posted to the first replica, its stream closed by the server after event 5 (SSE
/// polling); the resume served by `replica`. `shared`: that replica answers the call, which only
/// the first one received (their event store is one); else it answers with its own event.
fn polled_resume_at(replica: &str, shared: bool) -> Vec<Session> {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-Y"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.retry_event(&mut p, "4", 1000);
    c.event(&mut p, "5", &progress("t", 1));
    c.end(p, Cut::ServerClose);
    c.server = replica.parse().unwrap();
    let mut r = c.get(Some("5"));
    match shared {
        true => c.event(&mut r, "6", &result(json!(2), "ok")),
        false => c.event(&mut r, "1", &log("other store")),
    };
    c.end(r, Cut::Complete);
    numbered(c)
}

/// Replicas that share one event store: the resume served by the other replica answers the call
/// only the first received. Nothing crossed, and the call is answered for the session (the first
/// replica's own observation lacks the answer, another vantage point holds it).
#[test]
fn a_resume_answered_from_a_shared_store_crossed_nothing() {
    let sessions = polled_resume_at("10.0.0.3:9123", true);
    assert_eq!(sessions.len(), 2);
    let kinds = grouped_kinds(&sessions);
    assert!(!kinds.contains(&CrossNamespaceReplay), "{kinds:?}");
    assert!(!kinds.contains(&UnansweredRequest), "{kinds:?}");
    // Its own store: the call's answer never came, and the resume crossed.
    let kinds = grouped_kinds(&polled_resume_at("10.0.0.3:9123", false));
    assert!(kinds.contains(&CrossNamespaceReplay), "{kinds:?}");
}

/// Replicas whose counters collide: A (`10.0.0.3:9123`) answers call 2 on a stream whose IDs
/// are 1 to 4; B answers call 3 with IDs 1 and 2 and closes the stream unanswered (SSE
/// polling); the client's resume with `Last-Event-ID: 2` goes to A, which has its own 2
/// (mid-way through its answered stream). `a_cut_too`: A's stream also ends unanswered at 2, so
/// that either replica's 2 may be the client's.
fn colliding_replicas(a_cut_too: bool) -> Vec<Session> {
    const A: &str = "10.0.0.3:9123";
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-C"));
    c.initialized();
    let b = c.server;
    c.server = A.parse().unwrap();
    let mut pa = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("a")));
    c.event(&mut pa, "1", &progress("a", 1));
    c.event(&mut pa, "2", &progress("a", 2));
    if a_cut_too {
        c.end(pa, Cut::ServerClose);
    } else {
        c.event(&mut pa, "3", &progress("a", 3));
        c.event(&mut pa, "4", &result(json!(2), "a"));
        c.end(pa, Cut::Complete);
    }
    c.server = b;
    let mut pb = c.post(json!(3), "tools/call", call("beta", json!({}), Some("b")));
    c.retry_event(&mut pb, "1", 1000);
    c.event(&mut pb, "2", &progress("b", 1));
    c.end(pb, Cut::ServerClose);
    c.server = A.parse().unwrap();
    let mut r = c.get(Some("2"));
    c.event(&mut r, "3", &progress("a", 3));
    c.event(&mut r, "4", &result(json!(2), "a"));
    c.end(r, Cut::Complete);
    numbered(c)
}

/// Each replica minted ID 2; the client's is B's, the last event of B's unanswered stream (A's
/// own 2 was followed by more IDs and its call's answer). A replayed its own stream: a crossed
/// namespace with A's replay named, and B's call unanswered because of it.
#[test]
fn a_resume_to_a_replica_whose_counter_collides_replays_its_own_stream() {
    let sessions = colliding_replicas(false);
    assert_eq!(sessions.len(), 2, "one observation per replica");
    let mut d = Detector::new();
    let refs: Vec<&Session> = sessions.iter().collect();
    let results = d.group(&refs);
    let (findings, _) = d.finish();
    let crossed: Vec<_> = findings
        .iter()
        .filter(|f| f.kind == CrossNamespaceReplay)
        .collect();
    assert_eq!(crossed.len(), 1, "{findings:#?}");
    let e = ev(&crossed[0].evidence);
    assert_eq!(e["last_event_id"], "2");
    assert_eq!(e["replayed_event_ids"], json!(["3", "4"]));
    assert!(e["replayed_from"].is_string(), "{e}");
    assert!(
        crossed[0].summary.contains("request 2"),
        "{}",
        crossed[0].summary
    );
    let unanswered: Vec<_> = findings
        .iter()
        .filter(|f| f.kind == UnansweredRequest && f.severity >= Severity::Medium)
        .collect();
    assert!(
        unanswered
            .iter()
            .all(|u| u.caused_by.contains(&crossed[0].handle)),
        "{unanswered:#?}"
    );
    assert!(results.iter().any(|o| o.verdict.verdict == "unsafe"));
}

/// When A's own stream also ended unanswered at ID 2, the client's 2 may be either replica's:
/// the resume's own placement stands, and nothing is claimed to have crossed.
#[test]
fn a_resume_either_replica_could_have_named_is_not_called_crossed() {
    let kinds = grouped_kinds(&colliding_replicas(true));
    assert!(!kinds.contains(&CrossNamespaceReplay), "{kinds:?}");
}

// ------------------------------------------------------------------------------------------------
// lost_in_transit: two legs of one session
// ------------------------------------------------------------------------------------------------

/// One leg of a session whose `tools/call` 2 the client gives up on after 1.5 s: on the server
/// leg its stream carries two progress events, on the client leg nothing came. Then
/// `tools/list` 3 is answered on both.
fn leg(input: u32, server_side: bool) -> Session {
    let mut c = Capture::new();
    c.input = input;
    c.initialize(json!(1), Some("sess-L"));
    c.initialized();
    let mut p = c.post_request(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    if server_side {
        c.sse_ok(&mut p);
        c.events(&mut p, &[("1", progress("t", 1)), ("2", progress("t", 2))]);
    }
    c.wait(1.5);
    c.end(p, Cut::ClientClose);
    c.tools_list(3);
    let mut run = c.finish();
    run.sessions.pop().unwrap()
}

#[test]
fn events_the_server_leg_saw_and_the_client_leg_never_got_were_lost_in_transit() {
    let (client, mut server) = (leg(0, false), leg(1, true));
    server.idx = 1;
    let mut d = Detector::new().with_inputs(vec!["client.pcap".into(), "server.pcap".into()]);
    d.group(&[&client, &server]);
    let (findings, _) = d.finish();
    let lost: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.kind == LostInTransit)
        .collect();
    assert_eq!(
        lost.len(),
        1,
        "{:?}",
        findings.iter().map(|f| f.kind.name()).collect::<Vec<_>>()
    );
    let f = lost[0];
    assert_eq!(f.session, client.idx, "on the client's session");
    assert_eq!(ev(&f.evidence)["events"], 2);
    assert_eq!(ev(&f.evidence)["seen_in"]["input_path"], "server.pcap");
    assert_eq!(ev(&f.evidence)["missing_from"]["input_path"], "client.pcap");
    // The client's unanswered request names the hop as why.
    let u = findings
        .iter()
        .find(|x| x.kind == UnansweredRequest && x.session == client.idx)
        .unwrap();
    assert_eq!(
        ev(&u.evidence)["cause"]["kind"],
        LostInTransit.name(),
        "{}",
        u.summary
    );
    assert!(
        u.summary
            .contains("the hop between server.pcap and client.pcap"),
        "{}",
        u.summary
    );
    assert!(u.caused_by.contains(&f.handle));
    // One observation alone, or two legs that agree: nothing lost.
    let mut alone = Detector::new().with_inputs(vec!["client.pcap".into()]);
    alone.group(&[&client]);
    assert!(alone.findings().iter().all(|f| f.kind != LostInTransit));
    let mut same = Detector::new().with_inputs(vec!["a".into(), "b".into(), "c".into()]);
    // Another capture of the server leg (input 2): the same events.
    let mut twin = leg(2, true);
    twin.idx = 2;
    same.group(&[&server, &twin]);
    assert!(same.findings().iter().all(|f| f.kind != LostInTransit));
}

// ------------------------------------------------------------------------------------------------
// skipped_events
// ------------------------------------------------------------------------------------------------

#[test]
fn skipped_events_inside_a_stream_41_then_48() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    let m = c.events(
        &mut g,
        &[("40", log("a")), ("41", log("b")), ("48", log("c"))],
    );
    c.end(g, Cut::CaptureEnd);
    let run = c.finish();
    let f = run.one(SkippedEvents);
    assert_eq!(f.severity, Severity::High);
    assert_eq!(ev(&f.evidence)["namespace"], "get:s3");
    assert_eq!(ev(&f.evidence)["from"], "42");
    assert_eq!(ev(&f.evidence)["to"], "47");
    assert_eq!(ev(&f.evidence)["count"], 6);
    assert_eq!(f.time, m[2]);
    assert_eq!(frames(f), frames_of(&[m[1], m[2]]));
    assert!(f.caused_by.is_empty());
    assert_eq!(f.confidence, Confidence::Normal);
}

#[test]
fn a_shared_counter_interleaved_across_two_post_streams_is_no_skip() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut a = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("ta")));
    let mut b = c.post(json!(3), "tools/call", call("beta", json!({}), Some("tb")));
    c.event(&mut a, "1", &progress("ta", 1));
    c.event(&mut b, "2", &progress("tb", 1));
    c.event(&mut a, "3", &progress("ta", 2));
    c.event(&mut b, "4", &progress("tb", 2));
    c.event(&mut a, "5", &result(json!(2), "a"));
    c.event(&mut b, "6", &result(json!(3), "b"));
    c.end(a, Cut::Complete);
    c.end(b, Cut::Complete);
    let run = c.finish();
    run.absent(SkippedEvents);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

/// A server whose event store replays session-wide (uuid IDs): a resume of the cut stream A
/// replays B's last events, then delivers A's remaining events and result under IDs never
/// seen before. The replay of B is a finding; A's events were delivered, not skipped.
#[test]
fn a_resume_that_delivers_the_rest_of_its_stream_under_fresh_ids_skips_nothing() {
    let uuid = |n: u32| format!("9b2f{n:04x}-6c1e-4e8a-9d3b-2f41c7a85e{n:02x}");
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut a = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("a")));
    let mut b = c.post(json!(3), "tools/call", call("beta", json!({}), Some("b")));
    c.events(&mut a, &[(&uuid(1), progress("a", 1))]);
    let b_events: Vec<(String, String)> = (1..=4)
        .map(|n| (uuid(10 + n), progress("b", u64::from(n))))
        .chain([(uuid(15), result(json!(3), "beta done"))])
        .collect();
    let listed: Vec<(&str, String)> = b_events
        .iter()
        .map(|(i, d)| (i.as_str(), d.clone()))
        .collect();
    c.events(&mut b, &listed);
    c.end(b, Cut::Complete);
    c.end(a, Cut::ClientRst);
    let mut r = c.get(Some(&uuid(1)));
    let mut resumed: Vec<(&str, String)> = listed[2..].to_vec();
    let (a2, a3) = (uuid(2), uuid(3));
    resumed.push((&a2, progress("a", 2)));
    resumed.push((&a3, result(json!(2), "alpha done")));
    c.events(&mut r, &resumed);
    c.end(r, Cut::Complete);
    let run = c.finish();
    assert_eq!(run.session().event_id_scheme, EventIdScheme::Opaque);
    run.one(CrossNamespaceReplay);
    run.absent(SkippedEvents);
    run.absent(UnansweredRequest);
}

#[test]
fn skipped_events_after_a_replay_end_where_a_later_event_of_that_namespace_shows() {
    // As the seed incident, then a second resume that finally delivers the GET stream's event 6
    // (the answer to #3): the skipped range of get:s5 is 3–5.
    let mut c = Capture::new();
    seed_incident(&mut c);
    let mut r2 = c.get(Some("3"));
    c.events(&mut r2, &[("6", result(json!(3), "beta done"))]);
    c.end(r2, Cut::Complete);
    let run = c.finish();
    let s = run.session();
    assert_eq!(
        s.streams[6].events[0].namespace,
        Namespace::Stream(4),
        "the answer to #3 belongs to the GET stream that carried its progress"
    );
    assert_eq!(
        s.streams[6].events[0].attribution,
        Attribution::RequestStream
    );
    let skipped: Vec<_> = run
        .all(SkippedEvents)
        .into_iter()
        .filter(|f| ev(&f.evidence)["namespace"] == "get:s5")
        .collect();
    assert_eq!(skipped.len(), 1, "{:?}", run.kinds());
    assert_eq!(ev(&skipped[0].evidence)["from"], "3");
    assert_eq!(ev(&skipped[0].evidence)["to"], "5");
    assert_eq!(ev(&skipped[0].evidence)["count"], 3);
    // #3 was answered in the end.
    run.absent(UnansweredRequest);
}

// ------------------------------------------------------------------------------------------------
// unanswered_request
// ------------------------------------------------------------------------------------------------

#[test]
fn unanswered_request_is_high_when_the_client_gave_up() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    let sent = p.opened;
    c.events(&mut p, &[("1", progress("t", 1))]);
    c.wait(30.0);
    c.end(p, Cut::ClientRst);
    let run = c.finish();
    let f = run.one(UnansweredRequest);
    assert_eq!(f.severity, Severity::High);
    assert_eq!(ev(&f.evidence)["request_id"], json!(2));
    assert_eq!(ev(&f.evidence)["method"], "tools/call");
    assert_eq!(ev(&f.evidence)["client_gave_up"], true);
    assert_eq!(ev(&f.evidence)["sent"]["stream"], "post:s3");
    assert_eq!(ev(&f.evidence)["last_progress"]["event_id"], "1");
    let waited = ev(&f.evidence)["waited_s"].as_f64().unwrap();
    assert!((30.0..30.1).contains(&waited), "{waited}");
    let s = run.session();
    assert_eq!(f.time, s.end);
    assert_eq!(frames(f), frames_of(&[sent, s.end]));
}

#[test]
fn exchanges_past_the_session_cap_are_counted_and_conclude_no_absence() {
    let cap = Settings {
        max_session_exchanges: 4,
        ..Settings::default()
    };
    let mut c = Capture::with(&cap);
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let p = c.post(json!(2), "tools/call", call("alpha", json!({}), None));
    c.tools_list(3);
    // Past the cap: not held, but the DELETE's 200 still ends the session.
    c.tools_list(4);
    c.tools_list(5);
    c.end(p, Cut::ServerClose);
    c.delete(200);
    let run = c.finish();
    // The call's answer may be in an exchange not kept: not concluded unanswered.
    run.absent(UnansweredRequest);
    let s = run.session();
    assert_eq!(s.streams.len(), 4);
    assert_eq!(s.exchanges_unheld, 3);
    assert!(s.deleted.is_some());
    assert!(
        s.lacks.contains(&Lack::Exchanges { unheld: 3 }),
        "{:?}",
        s.lacks
    );
}

/// A call left without an answer (its stream ended as `cut` says) while a later request of the
/// session was answered.
fn call_beside_an_answered_one(cut: Cut) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let p = c.post(json!(2), "tools/call", call("alpha", json!({}), None));
    c.wait(1.0);
    c.tools_list(3);
    c.end(p, cut);
    c.finish()
}

#[test]
fn unanswered_request_is_high_when_the_session_went_on() {
    let run = call_beside_an_answered_one(Cut::ServerClose);
    let f = run.one(UnansweredRequest);
    assert_eq!(f.severity, Severity::High);
    assert_eq!(ev(&f.evidence)["request_id"], json!(2));
    assert_eq!(ev(&f.evidence)["session_went_on"], true);
}

#[test]
fn a_request_whose_stream_is_open_at_capture_end_is_pending_even_if_the_session_went_on() {
    // A long tool call beside quick ones: the capture stopped, not the server.
    let run = call_beside_an_answered_one(Cut::CaptureEnd);
    run.absent(UnansweredRequest);
    let f = run.one(PendingAtCaptureEnd);
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(ev(&f.evidence)["still_open_at_capture_end"], true);
    assert_eq!(ev(&f.evidence)["cause"]["kind"], PendingAtCaptureEnd.name());
    run.nothing_above_info();
}

/// Each way a request is left without its answer, named on the finding's line.
#[test]
fn an_unanswered_request_says_why() {
    for (cut, kind, words) in [
        (
            Cut::ServerClose,
            "server_closed",
            "the server closed post:s3 without answering",
        ),
        (
            Cut::ClientRst,
            "connection_reset",
            "the client reset the connection of post:s3",
        ),
        (
            Cut::ClientClose,
            "client_gave_up",
            "the client gave up on post:s3 after",
        ),
        (
            Cut::Complete,
            "never_answered",
            "the server never answered on post:s3",
        ),
        (
            Cut::ServerStreamReset,
            "stream_reset",
            "the server reset the HTTP/2 stream of post:s3",
        ),
        (
            Cut::Refused,
            "stream_refused",
            "the server refused the HTTP/2 stream of post:s3",
        ),
    ] {
        let run = call_beside_an_answered_one(cut);
        let f = run.one(UnansweredRequest);
        assert_eq!(
            ev(&f.evidence)["cause"]["kind"],
            kind,
            "{cut:?}: {}",
            f.summary
        );
        assert_eq!(ev(&f.evidence)["cause"]["stream"], "post:s3");
        assert!(f.summary.contains(words), "{cut:?}: {}", f.summary);
    }
}

#[test]
fn a_request_answered_202_has_that_for_its_cause() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post_request(json!(2), "tools/call", call("alpha", json!({}), None));
    c.respond(&mut p, 202, &[]);
    c.end(p, Cut::Complete);
    c.tools_list(3);
    let run = c.finish();
    let f = run.one(UnansweredRequest);
    assert_eq!(
        ev(&f.evidence)["cause"]["kind"],
        "accepted_without_answer",
        "{}",
        f.summary
    );
    assert!(f.summary.contains("202 Accepted"), "{}", f.summary);
}

#[test]
fn a_request_still_young_at_capture_end_is_info() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("1", progress("t", 1))]);
    c.wait(0.5);
    c.end(p, Cut::CaptureEnd);
    let run = c.finish();
    run.absent(UnansweredRequest);
    let f = run.one(PendingAtCaptureEnd);
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(ev(&f.evidence)["client_gave_up"], false);
    assert_eq!(ev(&f.evidence)["session_went_on"], false);
    assert!(f.summary.contains("still pending"), "{}", f.summary);
    run.nothing_above_info();
}

#[test]
fn answered_cancelled_and_refused_requests_are_not_unanswered() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    // Answered.
    c.tools_list(2);
    // Cancelled by the client.
    let p = c.post(json!(3), "tools/call", call("slow", json!({}), None));
    c.wait(1.0);
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let body =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
            .to_string();
    let mut cancel = c.request("POST", "/mcp", hs, &body);
    c.respond(&mut cancel, 202, &[]);
    c.end(cancel, Cut::Complete);
    c.end(p, Cut::ClientClose);
    // Refused at the HTTP level.
    let mut refused = c.post_request(json!(4), "tools/call", call("x", json!({}), None));
    c.respond(&mut refused, 400, &[("Content-Type", "text/plain")]);
    c.end(refused, Cut::Complete);
    let run = c.finish();
    run.absent(UnansweredRequest);
}

// ------------------------------------------------------------------------------------------------
// retry_without_idempotency_key
// ------------------------------------------------------------------------------------------------

/// The seed incident, then the client re-sends the `tools/call` that hung.
fn seed_then_retry(c: &mut Capture, key: Option<&str>) -> Mark {
    seed_incident(c);
    let mut params = call("beta", json!({"q": "b"}), None);
    if let Some(k) = key {
        params["_meta"] = json!({"idempotencyKey": k});
    }
    let mut p = c.post(json!(4), "tools/call", params);
    let sent = p.opened;
    c.events(&mut p, &[("4", result(json!(4), "beta done"))]);
    c.end(p, Cut::Complete);
    sent
}

#[test]
fn retry_without_idempotency_key_after_an_unsafe_resumption() {
    let mut c = Capture::new();
    let retry = seed_then_retry(&mut c, None);
    let run = c.finish();
    let f = run.one(RetryWithoutIdempotencyKey);
    assert_eq!(f.severity, Severity::Medium);
    assert_eq!(ev(&f.evidence)["request_ids"], json!([3, 4]));
    assert_eq!(ev(&f.evidence)["tool"], "beta");
    assert_eq!(ev(&f.evidence)["first"]["stream"], "post:s4");
    assert_eq!(ev(&f.evidence)["retry"]["stream"], "post:s7");
    assert_eq!(ev(&f.evidence)["retry"]["frame"], retry.frame.frame);
    assert_eq!(f.time, retry);
    assert_eq!(f.caused_by, vec![run.pos(UnsafeResumptionAfterFallback)]);
}

#[test]
fn a_retry_in_a_new_session_is_not_the_first_sessions_finding() {
    // Issue 11: a finding belongs to one session and cites evidence of that session only. A
    // call re-sent after the client started a new session cites the old session's call: it
    // is not a finding of either.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let p = c.post(
        json!(2),
        "tools/call",
        call("deploy", json!({"env": "prod"}), None),
    );
    c.wait(10.0);
    c.end(p, Cut::ClientRst);
    c.initialize(json!(1), Some("sess-B"));
    c.initialized();
    let mut p = c.post(
        json!(2),
        "tools/call",
        call("deploy", json!({"env": "prod"}), None),
    );
    c.events(&mut p, &[("1", result(json!(2), "deployed"))]);
    c.end(p, Cut::Complete);
    let run = c.finish();
    assert_eq!(run.sessions.len(), 2);
    run.absent(RetryWithoutIdempotencyKey);
    // Same ID in two sessions is not a reuse.
    run.absent(RequestIdReused);
}

#[test]
fn retry_without_idempotency_key_after_a_reinitialize_in_the_same_session() {
    // The client re-attaches with a new initialize naming the session it holds, then re-sends
    // the call it was left without an answer to.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let p = c.post(
        json!(2),
        "tools/call",
        call("deploy", json!({"env": "prod"}), None),
    );
    let first = p.opened;
    c.wait(10.0);
    c.end(p, Cut::ClientRst);
    // The session ID the client holds goes with it (`post` sends it).
    let mut again = c.post(
        json!(3),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
    );
    c.event(&mut again, "9", &init_result(json!(3), "2025-06-18"));
    c.end(again, Cut::Complete);
    let mut p = c.post(
        json!(4),
        "tools/call",
        call("deploy", json!({"env": "prod"}), None),
    );
    let retry = p.opened;
    c.events(&mut p, &[("10", result(json!(4), "deployed"))]);
    c.end(p, Cut::Complete);
    let run = c.finish();
    assert_eq!(run.sessions.len(), 1);
    let f = run.one(RetryWithoutIdempotencyKey);
    assert_eq!(ev(&f.evidence)["request_ids"], json!([2, 4]));
    assert_eq!(ev(&f.evidence)["tool"], "deploy");
    assert_eq!(ev(&f.evidence)["first"]["session"], "S1");
    assert_eq!(ev(&f.evidence)["retry"]["session"], "S1");
    assert_eq!(f.time, retry);
    assert_eq!(f.frames, vec![first, retry]);
    assert!(f.caused_by.is_empty());
}

#[test]
fn a_retry_of_other_arguments_or_of_an_answered_call_is_no_finding() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    // Answered, then cut: the client had its answer.
    let mut p = c.post(
        json!(2),
        "tools/call",
        call("deploy", json!({"env": "prod"}), None),
    );
    c.events(&mut p, &[("1", result(json!(2), "deployed"))]);
    c.end(p, Cut::ClientRst);
    // Cut without an answer, but re-sent with other arguments.
    let p = c.post(
        json!(3),
        "tools/call",
        call("deploy", json!({"env": "staging"}), None),
    );
    c.end(p, Cut::ClientRst);
    let r = c.get(Some("1"));
    c.end(r, Cut::Complete);
    let mut p = c.post(
        json!(4),
        "tools/call",
        call("deploy", json!({"env": "prod"}), None),
    );
    c.events(&mut p, &[("2", result(json!(4), "deployed"))]);
    c.end(p, Cut::Complete);
    let run = c.finish();
    run.absent(RetryWithoutIdempotencyKey);
}

#[test]
fn an_idempotency_key_means_no_retry_finding() {
    let mut c = Capture::new();
    seed_then_retry(&mut c, Some("k-123"));
    let run = c.finish();
    run.absent(RetryWithoutIdempotencyKey);
}

#[test]

fn a_call_answered_before_the_reinitialize_is_not_retried_by_a_later_identical_call() {
    let mut c = Capture::new();
    let answer = |id: i64| result(json!(id), "sunny");
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    c.post_json(
        json!(2),
        "tools/call",
        call("weather", json!({"city": "Paris"}), None),
        &answer(2),
    );
    c.wait(60.0);
    c.initialize(json!(1), Some("sess-B"));
    c.initialized();
    c.post_json(
        json!(2),
        "tools/call",
        call("weather", json!({"city": "Paris"}), None),
        &answer(2),
    );
    let run = c.finish();
    assert_eq!(run.sessions.len(), 2);
    run.absent(RetryWithoutIdempotencyKey);
}

#[test]
fn a_repeated_call_without_unsafe_resumption_or_reinitialize_is_no_retry() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    for id in 2..4 {
        c.post_json(
            json!(id),
            "tools/call",
            call("read", json!({"path": "/etc/motd"}), None),
            &result(json!(id), "hi"),
        );
    }
    let run = c.finish();
    run.absent(RetryWithoutIdempotencyKey);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

// ------------------------------------------------------------------------------------------------
// Verdicts
// ------------------------------------------------------------------------------------------------

#[test]
fn verdict_unknown_when_last_event_id_was_never_delivered() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut r = c.get(Some("99"));
    c.events(&mut r, &[("100", log("a"))]);
    c.end(r, Cut::CaptureEnd);
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.streams[2].resume.as_ref().unwrap().continues, None);
    assert_eq!(s.streams[2].events[0].namespace, Namespace::Unknown);
    assert_eq!(s.streams[2].events[0].attribution, Attribution::Unknown);
    let v = run.verdict(0);
    assert_eq!(v.verdict, "unknown");
    assert_eq!(v.resumes, 1);
    assert!(v.reason.unwrap().contains("99"));
    run.absent(CrossNamespaceReplay);
}

#[test]
fn verdict_not_attempted_without_resumes() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    c.tools_list(2);
    let run = c.finish();
    let v = run.verdict(0);
    assert_eq!(v.verdict, "not_attempted");
    assert_eq!(v.resumes, 0);
    assert_eq!(v.reason, None);
}

// ------------------------------------------------------------------------------------------------
// Sessions: stateless, DELETE and 404, legacy transport
// ------------------------------------------------------------------------------------------------

#[test]
fn sessionless_exchanges_are_grouped_by_connection_never_by_address() {
    // Issue 11: nothing above TCP is keyed by client address; behind a proxy every client has
    // the proxy's. Without a session ID only the connection ties exchanges together.
    let tools = |id: i64| json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}).to_string();
    let mut c = Capture::new();
    c.keep_alive = true;
    // Two clients behind one address, each on its own kept-alive connection, interleaved.
    let mut a = c.post_request(json!(1), "tools/list", json!({}));
    c.respond(&mut a, 200, &[("Content-Type", "application/json")]);
    let a_kept = a.clone();
    c.end_with_body(a, Cut::Complete, &tools(1));
    let mut b = c.post_request(json!(1), "tools/list", json!({}));
    c.respond(&mut b, 200, &[("Content-Type", "application/json")]);
    let b_kept = b.clone();
    c.end_with_body(b, Cut::Complete, &tools(1));
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let mut a2 = c.request_after(
        &a_kept,
        "POST",
        "/mcp",
        hs.clone(),
        &rpc(json!(2), "tools/list", json!({})),
    );
    c.respond(&mut a2, 200, &[("Content-Type", "application/json")]);
    c.end_with_body(a2, Cut::Complete, &tools(2));
    let mut b2 = c.request_after(
        &b_kept,
        "POST",
        "/mcp",
        hs,
        &rpc(json!(2), "tools/list", json!({})),
    );
    c.respond(&mut b2, 200, &[("Content-Type", "application/json")]);
    c.end_with_body(b2, Cut::Complete, &tools(2));
    let run = c.finish();
    assert_eq!(run.sessions.len(), 2, "one session per connection");
    for s in &run.sessions {
        assert!(s.stateless, "{}", s.label());
        assert_eq!(s.session_id, None);
        assert_eq!(s.streams.len(), 2, "{}", s.label());
        let conns: std::collections::BTreeSet<_> =
            s.streams.iter().map(|st| st.exchange.conn).collect();
        assert_eq!(conns.len(), 1, "{}: one connection", s.label());
    }
    // IDs 1 and 2 repeat across the clients, never within one.
    run.absent(RequestIdReused);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

#[test]
fn sessionless_exchanges_on_separate_connections_are_separate() {
    let tools = |id: i64| json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}).to_string();
    let mut c = Capture::new();
    c.post_json(json!(1), "tools/list", json!({}), &tools(1));
    c.post_json(json!(1), "tools/list", json!({}), &tools(1));
    let run = c.finish();
    assert_eq!(run.sessions.len(), 2);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

#[test]
fn json_rpc_that_is_not_mcp_makes_no_session() {
    // Another JSON-RPC API over HTTP, and an SSE feed with event IDs resumed by its client:
    // counted as what they are, never as MCP sessions.
    let mut c = Capture::new();
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}).to_string();
    let mut e = c.request(
        "POST",
        "/rpc",
        headers(&[("Content-Type", "application/json")]),
        &body,
    );
    c.respond(&mut e, 200, &[("Content-Type", "application/json")]);
    c.end_with_body(
        e,
        Cut::Complete,
        r#"{"jsonrpc":"2.0","id":1,"result":"0x10"}"#,
    );
    let mut g = c.request(
        "GET",
        "/prices",
        headers(&[("Accept", "text/event-stream")]),
        "",
    );
    c.respond(&mut g, 200, &[("Content-Type", "text/event-stream")]);
    c.event(&mut g, "41", r#"{"symbol":"ACME","price":12.5}"#);
    c.end(g, Cut::ServerClose);
    let mut r = c.request(
        "GET",
        "/prices",
        headers(&[("Accept", "text/event-stream"), ("Last-Event-ID", "41")]),
        "",
    );
    c.respond(&mut r, 200, &[("Content-Type", "text/event-stream")]);
    c.event(&mut r, "42", r#"{"symbol":"ACME","price":12.6}"#);
    c.end(r, Cut::Complete);
    let stats = c.b.finish().unwrap().mcp;
    let sessions = c.finalized.lock().unwrap();
    assert!(sessions.is_empty(), "{} sessions", sessions.len());
    assert_eq!(stats.exchanges_mcp, 0);
    assert_eq!(stats.jsonrpc_not_mcp, 1);
    assert_eq!(stats.event_streams_not_mcp, 2);
}

#[test]
fn delete_and_forgotten_sessions_are_recorded() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    // The server forgot the session: 404 to a request carrying its ID.
    let mut p = c.post_request(json!(2), "tools/list", json!({}));
    let not_found = c.respond(&mut p, 404, &[("Content-Type", "text/plain")]);
    c.end(p, Cut::Complete);
    // The client re-initializes and later ends the new session.
    c.initialize(json!(1), Some("sess-B"));
    c.initialized();
    // Deleted when the server answered the DELETE.
    let deleted = c.delete(200);
    let run = c.finish();
    assert_eq!(run.sessions.len(), 2);
    let a = &run.sessions[0];
    let b = &run.sessions[1];
    assert_eq!(a.session_id.as_deref(), Some("sess-A"));
    assert_eq!(a.forgotten, vec![not_found]);
    assert_eq!(a.deleted, None);
    assert_eq!(b.session_id.as_deref(), Some("sess-B"));
    assert_eq!(b.deleted, Some(deleted));
    assert!(b.forgotten.is_empty());
    // The refused request is not unanswered, and #1 in two sessions is no reuse.
    run.absent(UnansweredRequest);
    run.absent(RequestIdReused);
}

#[test]
fn the_legacy_transport_files_posts_to_its_endpoint_under_the_session() {
    let mut c = Capture::new();
    let mut sse = c.request(
        "GET",
        "/sse",
        headers(&[("Accept", "text/event-stream")]),
        "",
    );
    c.respond(&mut sse, 200, &[("Content-Type", "text/event-stream")]);
    c.typed_event(
        &mut sse,
        None,
        "endpoint",
        "/messages/?session_id=9f3c",
        false,
    );
    c.target = "/messages/?session_id=9f3c".into();
    let legacy_post = |c: &mut Capture, body: String| {
        let mut p = c.request(
            "POST",
            "/messages/?session_id=9f3c",
            headers(&[("Content-Type", "application/json")]),
            &body,
        );
        c.respond(&mut p, 202, &[]);
        c.end(p, Cut::Complete);
    };
    legacy_post(
        &mut c,
        rpc(
            json!(0),
            "initialize",
            json!({"protocolVersion": "2024-11-05", "clientInfo": {"name": "old", "version": "0.1"}}),
        ),
    );
    c.typed_event(
        &mut sse,
        None,
        "message",
        &init_result(json!(0), "2024-11-05"),
        false,
    );
    legacy_post(
        &mut c,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    legacy_post(
        &mut c,
        rpc(json!(1), "tools/call", call("alpha", json!({}), None)),
    );
    c.typed_event(&mut sse, None, "message", &result(json!(1), "ok"), false);
    c.end(sse, Cut::CaptureEnd);
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.transport, Transport::LegacySse);
    assert!(!s.stateless);
    assert_eq!(s.session_id.as_deref(), Some("9f3c"));
    assert_eq!(
        s.legacy_endpoint.as_deref(),
        Some("/messages/?session_id=9f3c")
    );
    assert_eq!(s.protocol_version.as_deref(), Some("2024-11-05"));
    assert_eq!(s.client_info.as_deref(), Some("old 0.1"));
    assert_eq!(s.server_info.as_deref(), Some("test-server 2.0"));
    assert_eq!(s.streams.len(), 4);
    assert_eq!(s.streams[0].transport, StreamTransport::LegacySse);
    assert_eq!(s.streams[0].label(), "legacy-sse:s1");
    for st in &s.streams[1..] {
        assert_eq!(st.transport, StreamTransport::Post);
        assert_eq!(st.target, "/messages/?session_id=9f3c");
        assert_eq!(st.status, Some(202));
    }
    assert_eq!(s.event_id_scheme, EventIdScheme::None);
    // Answers arrive on the SSE stream: nothing is unanswered, no fallback (nothing was refused).
    assert!(s.fallbacks.is_empty());
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

// ------------------------------------------------------------------------------------------------
// Namespace attribution
// ------------------------------------------------------------------------------------------------

#[test]
fn attribution_own_and_identical_event() {
    let mut c = Capture::new();
    seed_incident(&mut c);
    let run = c.finish();
    let s = run.session();
    for st in &s.streams[..5] {
        for e in &st.events {
            assert_eq!(e.namespace, Namespace::Stream(st.idx));
            assert_eq!(e.attribution, Attribution::Own);
        }
    }
    let replayed = &s.streams[5].events[0];
    assert_eq!(replayed.namespace, Namespace::Stream(2));
    assert_eq!(replayed.attribution, Attribution::IdenticalEvent);
    let resume = s.streams[5].resume.as_ref().unwrap();
    assert_eq!(resume.continues, Some(4));
    assert_eq!(resume.also_seen_on, vec![2]);
}

#[test]
fn attribution_by_id_token() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("sse:1", log("a"))]);
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("post:1", progress("t", 1))]);
    c.end(p, Cut::ClientRst);
    let mut r = c.get(Some("post:1"));
    c.events(
        &mut r,
        &[
            ("post:2", progress("t", 2)),
            ("post:3", result(json!(2), "ok")),
        ],
    );
    c.end(r, Cut::Complete);
    c.events(&mut g, &[("sse:2", log("b"))]);
    c.end(g, Cut::CaptureEnd);
    let run = c.finish();
    let s = run.session();
    assert_eq!(s.event_id_scheme, EventIdScheme::Namespaced);
    for e in &s.streams[4].events {
        assert_eq!(e.namespace, Namespace::Stream(3), "{:?}", e.id);
        assert_eq!(e.attribution, Attribution::IdToken, "{:?}", e.id);
    }
    assert!(
        s.streams[2]
            .events
            .iter()
            .all(|e| e.attribution == Attribution::Own)
    );
    run.nothing_above_info();
    assert_eq!(run.verdict(0).verdict, "safe");
}

#[test]
fn attribution_by_request_stream_then_counter_continuity() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), Some("t")));
    c.events(&mut p, &[("1", progress("t", 1))]);
    c.end(p, Cut::ClientRst);
    let mut r = c.get(Some("1"));
    c.events(
        &mut r,
        &[
            ("2", log("no request: counter")),
            ("3", result(json!(2), "ok")),
            ("4", log("prev")),
        ],
    );
    c.end(r, Cut::Complete);
    let run = c.finish();
    let s = run.session();
    let ev = &s.streams[3].events;
    let got: Vec<(Namespace, Attribution)> =
        ev.iter().map(|e| (e.namespace, e.attribution)).collect();
    assert_eq!(
        got,
        vec![
            (Namespace::Stream(2), Attribution::CounterContinuity),
            (Namespace::Stream(2), Attribution::RequestStream),
            (Namespace::Stream(2), Attribution::CounterContinuity),
        ]
    );
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

/// Opaque IDs (the Python SDK's uuid store): the standalone GET delivers `g-a`, is cut, and its
/// resume primes afresh and goes on with IDs never seen; `also`: it also replays the call's
/// `p-a`, delivered earlier on the call's stream.
fn opaque_resume(also: bool) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-U"));
    c.initialized();
    let mut g = c.get(None);
    c.events(&mut g, &[("g-a", log("a"))]);
    let mut p = c.post(json!(2), "tools/call", call("alpha", json!({}), None));
    c.events(
        &mut p,
        &[("p-a", log("work")), ("p-b", result(json!(2), "ok"))],
    );
    c.end(p, Cut::Complete);
    c.end(g, Cut::ServerClose);
    let mut r = c.get(Some("g-a"));
    if also {
        c.events(&mut r, &[("p-a", log("work"))]);
    }
    c.event(&mut r, "r-prime", "");
    c.events(&mut r, &[("r-new-1", log("b")), ("r-new-2", log("c"))]);
    c.end(r, Cut::CaptureEnd);
    c.finish()
}

#[test]
fn new_ids_on_a_resume_are_the_resumed_streams_when_nothing_says_otherwise() {
    let run = opaque_resume(false);
    let got: Vec<(Namespace, Attribution)> = run.session().streams[4]
        .events
        .iter()
        .map(|e| (e.namespace, e.attribution))
        .collect();
    assert_eq!(
        got,
        vec![
            (Namespace::Stream(2), Attribution::PrimingOfResume),
            (Namespace::Stream(2), Attribution::ResumedStream),
            (Namespace::Stream(2), Attribution::ResumedStream),
        ]
    );
    run.nothing_above_info();
    // It replayed an event of the call's stream, not of the one it named: the server went on
    // in the stream it replayed (and the replay crossed namespaces).
    let run = opaque_resume(true);
    let got: Vec<(Namespace, Attribution)> = run.session().streams[4]
        .events
        .iter()
        .map(|e| (e.namespace, e.attribution))
        .collect();
    assert_eq!(got[0], (Namespace::Stream(3), Attribution::IdenticalEvent));
    assert_eq!(got[1].1, Attribution::PrimingOfResume);
    assert_eq!(
        got[1].0,
        Namespace::Stream(3),
        "the replayed stream's priming"
    );
    assert_eq!(got[2], (Namespace::Stream(3), Attribution::ResumedStream));
    assert_eq!(
        run.one(CrossNamespaceReplay).summary.matches("p-a").count(),
        1
    );
}

#[test]
fn event_id_schemes_are_classified() {
    let scheme = |ids: &[&str]| {
        let mut c = Capture::new();
        c.initialize(json!(1), Some("sess-A"));
        c.initialized();
        let mut g = c.get(None);
        for id in ids {
            c.event(&mut g, id, &log("x"));
        }
        c.end(g, Cut::CaptureEnd);
        c.finish().session().event_id_scheme
    };
    assert_eq!(scheme(&["1", "2"]), EventIdScheme::Integer);
    assert_eq!(scheme(&["sse:1", "sse:2"]), EventIdScheme::Namespaced);
    assert_eq!(
        scheme(&["7c9e6679-7425-40de-944b-e07fc1f90ae7"]),
        EventIdScheme::Opaque
    );
    assert_eq!(scheme(&[]), EventIdScheme::None);
}

#[test]
fn a_session_resumed_after_two_hours_of_silence_is_the_same_session() {
    // Issue 11: silence is not an end. A client that comes back after 2 h is judged exactly as
    // one that comes back after 1 s: its exchanges join the session they name.
    let mut c = Capture::new();
    c.initialize(json!(0), Some("s-1"));
    c.initialized();
    c.post_json(
        json!(1),
        "tools/list",
        json!({}),
        &result(json!(1), "tools"),
    );
    c.wait(7200.0);
    // Another client's traffic moves the capture clock on meanwhile.
    c.client("10.0.0.9");
    c.sid = None;
    c.initialize(json!(0), Some("s-2"));
    c.client(CLIENT_IP);
    c.sid = Some("s-1".into());
    let mut ex = c.post(json!(2), "tools/call", call("echo", json!({}), Some("t")));
    c.events(
        &mut ex,
        &[("1", progress("t", 1)), ("2", result(json!(2), "done"))],
    );
    c.end(ex, Cut::Complete);
    let run = c.finish();
    let s1: Vec<&Session> = run
        .sessions
        .iter()
        .filter(|s| s.session_id.as_deref() == Some("s-1"))
        .collect();
    assert_eq!(s1.len(), 1, "one record for s-1");
    assert_eq!(s1[0].streams.len(), 4, "{:#?}", s1[0].streams);
    assert!(run.findings.is_empty(), "{:?}", run.kinds());
}

#[test]
fn a_deleted_session_named_again_continues_under_a_new_record() {
    // A session ends on evidence: after its DELETE (with nothing of it open) an exchange naming
    // it again is a new record.
    let mut c = Capture::new();
    c.initialize(json!(0), Some("s-1"));
    c.initialized();
    c.delete(200);
    c.post_json(
        json!(5),
        "tools/list",
        json!({}),
        &result(json!(5), "tools"),
    );
    let run = c.finish();
    let s1: Vec<&Session> = run
        .sessions
        .iter()
        .filter(|s| s.session_id.as_deref() == Some("s-1"))
        .collect();
    assert_eq!(s1.len(), 2, "{}", run.sessions.len());
    assert!(s1[0].deleted.is_some());
    assert_eq!(s1[1].streams.len(), 1);
    // One session in two records: the second says which it continues.
    assert_eq!((s1[0].continues, s1[1].continues), (None, Some(s1[0].idx)));
}

/// A session with its standalone GET stream open throughout, whose `tools/call` 2 is answered
/// `rejected`, then (when `then` is given) a `tools/call` 3 answered `then`; `delete_first` sends
/// a DELETE answered 200 before the call.
fn rejected_call(rejected: u16, then: Option<u16>, delete_first: bool) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-S"));
    let mut g = c.get_request(None, &[]);
    c.respond(&mut g, 200, &[("Content-Type", "text/event-stream")]);
    let add = || call("add", json!({}), None);
    if delete_first {
        c.delete(200);
    }
    c.post_answered(json!(2), "tools/call", add(), rejected);
    if let Some(status) = then {
        c.post_answered(json!(3), "tools/call", add(), status);
    }
    c.end(g, Cut::ClientClose);
    c.finish()
}

#[test]
fn a_404_is_session_not_found_only_while_the_session_goes_on() {
    // The GET stream open across the 404 shows the session alive, and so does the later 200.
    for then in [Some(200), None] {
        let run = rejected_call(404, then, false);
        let f = run.one(SessionNotFound);
        assert_eq!(f.severity, Severity::High);
        assert_eq!(ev(&f.evidence)["status"], 404);
        assert_eq!(ev(&f.evidence)["rejected"], 1);
    }
    let run = rejected_call(404, Some(200), false);
    assert_eq!(
        ev(&run.one(SessionNotFound).evidence)["client_reaction"]["what"],
        "kept_going"
    );
    // Deleted first: 404 is the right answer, the open stream notwithstanding.
    rejected_call(404, None, true).absent(SessionNotFound);
    rejected_call(200, Some(200), false).absent(SessionNotFound);
}

/// Without an open stream, only a later 2xx shows the session alive; a server that expired it
/// answers 404 to everything after.
#[test]
fn a_404_to_a_session_nothing_shows_alive_is_no_finding() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-S"));
    for id in [2, 3] {
        c.post_answered(json!(id), "tools/list", json!({}), 404);
    }
    c.finish().absent(SessionNotFound);
}

/// A session whose DELETE is answered `deleted`, then a `tools/list` answered `then`; with
/// `open_get` its standalone GET stream stays open across both (one session record), else the
/// call continues the record the DELETE ended.
fn after_delete(deleted: u16, then: u16, open_get: bool) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-S"));
    let g = open_get.then(|| {
        let mut g = c.get_request(None, &[]);
        c.respond(&mut g, 200, &[("Content-Type", "text/event-stream")]);
        g
    });
    c.delete(deleted);
    c.post_answered(json!(2), "tools/list", json!({}), then);
    if let Some(g) = g {
        c.end(g, Cut::ServerClose);
    }
    c.finish()
}

#[test]
fn a_deleted_session_must_be_answered_404() {
    let rules = |run: &Run| run.rules(StatusCodeViolation);
    for open_get in [true, false] {
        assert_eq!(
            rules(&after_delete(200, 200, open_get)),
            ["deleted_session_not_404"],
            "{open_get}"
        );
        assert!(
            rules(&after_delete(200, 404, open_get)).is_empty(),
            "{open_get}"
        );
        // A server may refuse the DELETE: the session then goes on.
        assert!(
            rules(&after_delete(405, 200, open_get)).is_empty(),
            "{open_get}"
        );
    }
}

/// A session negotiating `version` whose later requests send `header` as MCP-Protocol-Version
/// (None: no header).
fn version_header(version: &'static str, header: Option<&str>) -> Run {
    let mut c = Capture::new();
    c.version = version;
    c.initialize(json!(1), Some("sess-S"));
    c.no_version_header = true;
    let extra: Vec<(&str, &str)> = header
        .map(|h| ("MCP-Protocol-Version", h))
        .into_iter()
        .collect();
    let hs = c.mcp_headers("application/json, text/event-stream", &extra);
    let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let mut ex = c.request("POST", "/mcp", hs, &body);
    c.respond(&mut ex, 202, &[]);
    c.end(ex, Cut::Complete);
    c.finish()
}

#[test]
fn the_protocol_version_header_is_required_from_2025_06_18() {
    let rules = |run: &Run| run.rules(RevisionViolation);
    assert_eq!(
        rules(&version_header("2025-06-18", None)),
        ["protocol_version_header_missing"]
    );
    assert_eq!(
        rules(&version_header("2025-11-25", Some("2025-06-18"))),
        ["protocol_version_header_differs"]
    );
    assert!(rules(&version_header("2025-11-25", Some("2025-11-25"))).is_empty());
    // 2025-03-26 has no such header.
    assert!(rules(&version_header("2025-03-26", None)).is_empty());
}

/// Session A falls back (tools/call 3, `beta`, abandoned), resumes with integer IDs (unsafe) and
/// never gets 3 answered; then a new session B is initialized, on the connection of A's resume
/// when `same_conn`, and calls `tools/call` with the params `resend` (answered) or nothing.
fn reinitialized_after_unsafe_resume(same_conn: bool, resend: Option<Value>) -> Run {
    reinitialized_after_unsafe_resume_over(1, same_conn, resend)
}

fn reinitialized_after_unsafe_resume_over(
    version: u8,
    same_conn: bool,
    resend: Option<Value>,
) -> Run {
    let mut c = Capture::new();
    c.http_version = version;
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    c.abandoned_beta(json!(3), "tok-3");
    let sse = [
        ("Content-Type", "text/event-stream"),
        ("Mcp-Session-Id", "sess-A"),
    ];
    let mut s5 = c.get_request(None, &[]);
    c.respond(&mut s5, 200, &sse);
    c.events(
        &mut s5,
        &[("1", progress("tok-3", 1)), ("2", progress("tok-3", 2))],
    );
    c.end(s5, Cut::ServerClose);
    c.keep_alive = same_conn;
    let mut s6 = c.get_request(Some("2"), &[]);
    c.respond(&mut s6, 200, &sse);
    c.events(&mut s6, &[("3", progress("tok-3", 3))]);
    let kept = s6.clone();
    c.end(s6, Cut::Complete);
    c.keep_alive = false;
    c.wait(1.0);
    c.sid = None;
    c.negotiated = false;
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let body = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
    );
    let mut init = if same_conn {
        c.request_after(&kept, "POST", "/mcp", hs, &body)
    } else {
        c.request("POST", "/mcp", hs, &body)
    };
    c.respond(
        &mut init,
        200,
        &[
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", "sess-B"),
        ],
    );
    c.end_with_body(init, Cut::Complete, &init_result(json!(1), "2025-06-18"));
    c.sid = Some("sess-B".into());
    c.negotiated = true;
    c.initialized();
    if let Some(params) = resend {
        let mut p = c.post(json!(2), "tools/call", params);
        c.events(&mut p, &[("b-1", result(json!(2), "done"))]);
        c.end(p, Cut::Complete);
    }
    c.finish()
}

#[test]
fn a_new_session_that_never_resends_the_lost_call_is_a_resync_without_reconciliation() {
    let run = reinitialized_after_unsafe_resume(true, None);
    run.one(UnsafeResumptionAfterFallback);
    let f = run.one(ResyncWithoutReconciliation);
    assert_eq!(f.severity, Severity::Medium);
    assert_eq!(ev(&f.evidence)["request_id"], 3);
    assert_eq!(ev(&f.evidence)["tool"], "beta");
    assert_eq!(ev(&f.evidence)["session"], "sess-A");
    assert_eq!(f.labels.session_id.as_deref(), Some("sess-B"));
    assert_eq!(ev(&f.evidence)["resent"], false);
    // Another tool is no reconciliation of beta.
    let alpha = call("alpha", json!({}), None);
    reinitialized_after_unsafe_resume(true, Some(alpha)).one(ResyncWithoutReconciliation);
    // On another connection nothing ties B to A's client; nor on one HTTP/2 connection, which
    // multiplexes the streams of any number of clients.
    reinitialized_after_unsafe_resume(false, None).absent(ResyncWithoutReconciliation);
    reinitialized_after_unsafe_resume_over(mcpf_http::HTTP2_VERSION, true, None)
        .absent(ResyncWithoutReconciliation);
}

/// The lost beta had reported progress (it was running); re-sent with no idempotency key and
/// answered, it ran twice. With a key the server can recognise the repeat: reconciled.
#[test]
fn a_lost_call_that_had_begun_re_sent_without_a_key_ran_twice() {
    let again = call("beta", json!({}), None);
    let run = reinitialized_after_unsafe_resume(true, Some(again));
    let f = run.one(ResyncWithoutReconciliation);
    assert_eq!(ev(&f.evidence)["resent"], true);
    assert_eq!(ev(&f.evidence)["executions"]["second"]["request_id"], 2);
    assert_eq!(
        ev(&f.evidence)["executions"]["first"]["last_progress"]["progress"],
        3
    );
    assert!(f.summary.contains("ran twice"), "{}", f.summary);
    let mut keyed = call("beta", json!({}), None);
    keyed["_meta"] = json!({"idempotencyKey": "k-1"});
    reinitialized_after_unsafe_resume(true, Some(keyed)).absent(ResyncWithoutReconciliation);
}

/// A server that hands out one session ID again: after its 404 (it restarted), the client
/// initializes and gets the same ID back; what that new session is answered shows nothing of the
/// old one being alive.
#[test]
fn a_404_then_the_same_id_minted_again_is_no_session_not_found() {
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-S"));
    c.initialized();
    c.post_answered(json!(2), "tools/list", json!({}), 404);
    c.initialize(json!(1), Some("sess-S"));
    c.initialized();
    c.post_answered(json!(2), "tools/list", json!({}), 200);
    c.finish().absent(SessionNotFound);
}

/// After a session was minted, a `tools/list` without `Mcp-Session-Id` answered `status`; with
/// `minting` false the server never minted an ID (it runs without sessions).
fn request_without_session_header(minting: bool, status: u16) -> Run {
    let mut c = Capture::new();
    c.initialize(json!(1), minting.then_some("sess-A"));
    c.initialized();
    c.sid = None;
    let mut ex = c.post_request(json!(3), "tools/list", json!({}));
    c.respond(&mut ex, status, &[("Content-Type", "application/json")]);
    let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}).to_string();
    c.end_with_body(ex, Cut::Complete, &answer);
    c.finish()
}

#[test]
fn a_request_without_the_session_header_a_server_mints_is_answered_400() {
    let run = request_without_session_header(true, 200);
    assert_eq!(
        run.rules(StatusCodeViolation),
        ["session_header_missing_not_400"]
    );
    let f = run.one(StatusCodeViolation);
    assert_eq!(ev(&f.evidence)["status"], 200);
    assert_eq!(f.labels.session_id, None);
    let refused = request_without_session_header(true, 400);
    refused.absent(StatusCodeViolation);
    // A server that never minted one runs without sessions: nothing to ask for.
    request_without_session_header(false, 200).absent(StatusCodeViolation);
    // Another Host at the same address is another server: one that mints proves nothing of it.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    c.sid = None;
    let hs = c.mcp_headers(
        "application/json, text/event-stream",
        &[("Host", "other.example")],
    );
    let body = rpc(json!(3), "tools/list", json!({}));
    let mut ex = c.request("POST", "/mcp", hs, &body);
    c.respond(&mut ex, 200, &[("Content-Type", "application/json")]);
    let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}).to_string();
    c.end_with_body(ex, Cut::Complete, &answer);
    c.finish().absent(StatusCodeViolation);
}

#[test]
fn a_protocol_version_header_that_names_no_revision_is_answered_400() {
    let run = |value: &'static str, status: u16| {
        let mut c = Capture::new();
        c.initialize(json!(1), Some("sess-A"));
        c.initialized();
        c.version = value;
        let mut ex = c.post_request(json!(2), "tools/list", json!({}));
        c.respond(&mut ex, status, &[("Content-Type", "application/json")]);
        let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}).to_string();
        c.end_with_body(ex, Cut::Complete, &answer);
        c.finish()
    };
    let bad = run("latest", 200);
    assert_eq!(
        bad.rules(StatusCodeViolation),
        ["invalid_version_header_not_400"]
    );
    run("latest", 400).absent(StatusCodeViolation);
    // Another revision than the one negotiated is the client's fault (revision_violation),
    // and the server may support it.
    run("2025-03-26", 200).absent(StatusCodeViolation);
}

#[test]
fn a_get_that_named_no_session_is_filed_under_the_session_its_response_names() {
    // Its head was cut before its Mcp-Session-Id (a snap length), but the server's response
    // carried the session's ID: that is the evidence, not a new sessionless session.
    let mut c = Capture::new();
    c.initialize(json!(1), Some("sess-A"));
    c.initialized();
    let hs = headers(&[("Host", "127.0.0.1"), ("Accept", "text/event-stream")]);
    let target = c.target.clone();
    c.heads_cut = true;
    let mut g = c.request("GET", &target, hs, "");
    c.heads_cut = false;
    c.sse_ok(&mut g);
    c.event(&mut g, "7", &log("on the standalone stream"));
    c.end(g, Cut::Complete);
    let run = c.finish();
    assert_eq!(
        run.sessions.len(),
        1,
        "{:?}",
        run.sessions
            .iter()
            .map(|s| &s.session_id)
            .collect::<Vec<_>>()
    );
    let methods: Vec<&str> = run
        .session()
        .streams
        .iter()
        .map(|st| st.method.as_str())
        .collect();
    assert!(methods.contains(&"GET"), "{methods:?}");
}

/// Two stateless exchanges (the server mints no session ID) on one connection, both request ID 1.
fn stateless_exchanges_on_one_connection(http_version: u8) -> Run {
    let mut c = Capture::new();
    c.http_version = http_version;
    c.keep_alive = true;
    let hs = c.mcp_headers("application/json, text/event-stream", &[]);
    let body = rpc(json!(1), "tools/list", json!({}));
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}).to_string();
    let json = [("Content-Type", "application/json")];
    let mut a = c.request("POST", "/mcp", hs.clone(), &body);
    c.respond(&mut a, 200, &json);
    let kept = a.clone();
    c.end_with_body(a, Cut::Complete, &answer);
    let mut b = c.request_after(&kept, "POST", "/mcp", hs, &body);
    c.respond(&mut b, 200, &json);
    c.end_with_body(b, Cut::Complete, &answer);
    c.finish()
}

#[test]
fn stateless_exchanges_are_one_clients_on_an_http1_connection_and_nobodys_on_http2() {
    // HTTP/1.1 carries one exchange at a time: the connection is the client, and ID 1 twice
    // is a reuse. An HTTP/2 connection multiplexes any number of clients: nothing ties the
    // two, so nothing is reused.
    stateless_exchanges_on_one_connection(1).one(RequestIdReused);
    let run = stateless_exchanges_on_one_connection(mcpf_http::HTTP2_VERSION);
    run.absent(RequestIdReused);
    assert_eq!(run.sessions.len(), 2);
}
