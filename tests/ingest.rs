//! HAR files and JSON access logs as inputs: detection by content, the events they produce
//! (the same `HttpEvent`s as captures), what each format can and cannot support.
//!
//! Real samples: `samples/mitmproxy-python-sdk.har` (mitmproxy in front of the official Python
//! SDK, checked against the truth the client and server recorded), its Chrome-style sanitized
//! copy, and the nginx logs of the seed incident. Envoy and Caddy logs (not packaged for
//! Debian) and a DevTools-style HAR with `_eventSourceMessages` are hand-written fixtures
//! under `tests/fixtures/ingest/`, following those tools' documented formats.

use std::io::Write;

use assert_cmd::Command;
use mcpf_http::exchange::Collector;
use mcpf_model::Direction;
use support::Exchange;

mod support;
use mcpf_http::{ExchangeId, HttpEvent, HttpSink, Outcome};
use mcpf_ingest::{self as ingest, FormatChoice, LogMap};
use mcpf_model::Timestamp;
use mcpf_model::{Capabilities, ConnId, Durations, LogFlavor, NoteKind, SourceFormat, SourceLack};
use serde_json::Value;

const FIX: &str = "tests/fixtures/ingest";
const HAR: &str = "samples/mitmproxy-python-sdk.har";
const SANITIZED: &str = "samples/mitmproxy-python-sdk.sanitized.har";
const TRUTH: &str = "samples/mitmproxy-python-sdk.truth.json";
const NGINX: &str = "samples/seed-incident.nginx.jsonl";
const NGINX_NS: &str = "samples/namespaced-ids.nginx.jsonl";

/// What the sink saw, in order: (kind, exchange, time).
#[derive(Default)]
struct Recorder {
    collector: Collector,
    seen: Vec<(&'static str, Option<ExchangeId>, Timestamp)>,
    anomalies: Vec<String>,
}

impl HttpSink for Recorder {
    fn on_http(&mut self, event: HttpEvent) {
        let entry = match &event {
            HttpEvent::Request(r) => ("request", Some(r.exchange), r.first.time),
            HttpEvent::ResponseHead(h) => ("head", Some(h.exchange), h.first.time),
            HttpEvent::SseEvent { exchange, event } => ("sse", Some(*exchange), event.mark.time),
            HttpEvent::ResponseEnd(e) => ("end", Some(e.exchange), e.last.time),
            HttpEvent::NoResponse { exchange, mark, .. } => {
                ("no_response", Some(*exchange), mark.time)
            }
            HttpEvent::Anomaly(a) => {
                assert_eq!(a.kind, mcpf_model::AnomalyKind::EnvoyResponseFlags);
                self.anomalies.push(a.detail.clone());
                ("anomaly", None, a.mark.time)
            }
            HttpEvent::ConnectionStart { mark, .. } => ("conn_start", None, mark.time),
            HttpEvent::ConnectionEnd { mark, .. } => ("conn_end", None, mark.time),
            HttpEvent::LateInconsistency { .. } => panic!("a log has no retransmissions"),
        };
        self.seen.push(entry);
        self.collector.on_http(event);
    }
}

struct Read {
    report: mcpf_model::InputReport,
    caps: Capabilities,
    exchanges: Vec<Exchange>,
    seen: Vec<(&'static str, Option<ExchangeId>, Timestamp)>,
    anomalies: Vec<String>,
}

fn read(path: &str, map: Option<&LogMap>) -> Read {
    let format = ingest::resolve(path, FormatChoice::Auto, map.is_some())
        .unwrap_or_else(|e| panic!("{path}: {e} ({:?})", e.hint));
    let mut rec = Recorder::default();
    let (report, caps) = ingest::read(path, 0, format, map, &mut rec)
        .unwrap_or_else(|e| panic!("{path}: {e} ({:?})", e.hint));
    check_order(path, &rec.seen);
    Read {
        report,
        caps,
        exchanges: support::with_messages(rec.collector.into_exchanges()),
        seen: rec.seen,
        anomalies: rec.anomalies,
    }
}

/// Time order over the input, and request → head → events → end within each exchange.
fn check_order(path: &str, seen: &[(&'static str, Option<ExchangeId>, Timestamp)]) {
    for w in seen.windows(2) {
        assert!(w[0].2 <= w[1].2, "{path}: events out of time order: {w:?}");
    }
    let rank = |k: &str| match k {
        "request" => 0,
        "head" => 1,
        "sse" => 2,
        _ => 3,
    };
    let mut last: std::collections::HashMap<ExchangeId, u8> = Default::default();
    for (kind, id, _) in seen {
        if let Some(id) = id {
            assert!(
                id.conn >= ConnId::recorded(0, 0),
                "{path}: {id} is not a recorded connection"
            );
            let r = rank(kind);
            let prev = last.insert(*id, r).unwrap_or(0);
            assert!(r >= prev, "{path}: {kind} after a later phase on {id}");
        }
    }
}

fn truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string(TRUTH).unwrap()).unwrap()
}

fn header<'a>(h: &'a mcpf_http::Headers, name: &str) -> Option<&'a str> {
    h.get(name)
}

fn secs(t: Timestamp) -> f64 {
    t.0 as f64 / 1e9
}

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

// ---------------------------------------------------------------- detection

#[test]
fn detects_formats_by_content_not_name() {
    let cases: &[(&str, SourceFormat)] = &[
        ("samples/http-basic.pcap", SourceFormat::Capture),
        (HAR, SourceFormat::Har),
        (SANITIZED, SourceFormat::Har),
        (NGINX, SourceFormat::AccessLog(LogFlavor::Nginx)),
        (
            &format!("{FIX}/envoy.jsonl"),
            SourceFormat::AccessLog(LogFlavor::Envoy),
        ),
        (
            &format!("{FIX}/caddy.jsonl"),
            SourceFormat::AccessLog(LogFlavor::Caddy),
        ),
        (&format!("{FIX}/chrome-eventsource.har"), SourceFormat::Har),
    ];
    for (path, want) in cases {
        assert_eq!(ingest::detect(path).unwrap(), *want, "{path}");
    }
    // Misleading names change nothing.
    let dir = tempdir();
    let renamed = dir.join("capture.pcap");
    std::fs::copy(NGINX, &renamed).unwrap();
    assert_eq!(
        ingest::detect(renamed.to_str().unwrap()).unwrap(),
        SourceFormat::AccessLog(LogFlavor::Nginx)
    );
    // A gzip-compressed HAR, and a HAR on one line.
    let gz = dir.join("x.har.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(HAR).unwrap()).unwrap();
    enc.finish().unwrap();
    assert_eq!(
        ingest::detect(gz.to_str().unwrap()).unwrap(),
        SourceFormat::Har
    );
    let r = read(gz.to_str().unwrap(), None);
    assert_eq!(r.report.format.to_string(), "har+gzip");
    assert_eq!(r.exchanges.len(), 7);
    let one_line = dir.join("one-line.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(HAR).unwrap()).unwrap();
    std::fs::write(&one_line, serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(
        ingest::detect(one_line.to_str().unwrap()).unwrap(),
        SourceFormat::Har
    );
}

#[test]
fn unrecognised_json_names_what_was_expected_and_the_keys_found() {
    let path = format!("{FIX}/unrecognised.jsonl");
    let e = ingest::detect(&path).unwrap_err();
    assert!(e.message.contains("not an access log"), "{}", e.message);
    assert!(
        e.message.contains("nginx") && e.message.contains("Envoy") && e.message.contains("Caddy")
    );
    // Keys in file order, not sorted.
    assert!(
        e.message
            .contains("The first record has the keys: level, message, ts_ms, verb, route"),
        "{}",
        e.message
    );
    // A ready --log-map from the keys seen, the one it could not place marked.
    let hint = e.hint.unwrap();
    assert!(
        hint.contains("--log-map 'time=ts_ms,method=verb,path=route,status=?'"),
        "{hint}"
    );
    assert!(!hint.contains("tcpdump"), "{hint}");

    let dir = tempdir();
    let not_har = dir.join("pretty.json");
    std::fs::write(
        &not_har,
        "{\n  \"log\": {\"version\": \"1.2\"},\n  \"other\": 1\n}\n",
    )
    .unwrap();
    let e = ingest::detect(not_har.to_str().unwrap()).unwrap_err();
    assert!(e.message.contains("without \"entries\""), "{}", e.message);
    assert!(e.message.contains("log, other"), "{}", e.message);

    let array = dir.join("array.json");
    std::fs::write(&array, "[{\"a\":1}]").unwrap();
    assert!(
        ingest::detect(array.to_str().unwrap())
            .unwrap_err()
            .message
            .contains("JSON array")
    );

    let text = dir.join("notes.txt");
    std::fs::write(&text, "hello\n").unwrap();
    assert!(
        ingest::detect(text.to_str().unwrap())
            .unwrap_err()
            .message
            .contains("not a packet capture")
    );

    // Forcing the log format does not make an unknown log readable without a map.
    assert!(ingest::resolve(&path, FormatChoice::Log, false).is_err());
    assert!(ingest::resolve(HAR, FormatChoice::Log, false).is_err());
}

// ---------------------------------------------------------------- HAR

#[test]
fn mitmproxy_har_matches_the_truth_recorded_by_client_and_server() {
    let t = truth();
    let r = read(HAR, None);
    let reqs = t["http_requests"].as_array().unwrap();
    assert_eq!(
        r.exchanges.len() as u64,
        t["har_entry_count"].as_u64().unwrap()
    );
    assert_eq!(r.report.packets, r.exchanges.len() as u64);
    let session = t["session_id"].as_str().unwrap();
    // Each request the client sent is one exchange: found by method and JSON-RPC id/method (the
    // standalone GET and a concurrent POST may reach the proxy in either order).
    let key = |method: &str, rpc: Option<String>| format!("{method} {}", rpc.unwrap_or_default());
    let by_key: std::collections::HashMap<String, &Exchange> = r
        .exchanges
        .iter()
        .map(|e| {
            let m = e.request_messages.first();
            let rpc = m.map(|m| {
                m.id.as_ref()
                    .map(|id| id.to_value().to_string())
                    .unwrap_or_else(|| m.method.as_deref().unwrap_or_default().to_string())
            });
            (key(&e.request.as_ref().unwrap().method, rpc), e)
        })
        .collect();
    assert_eq!(by_key.len(), reqs.len());
    for want in reqs {
        let rpc = want.get("jsonrpc").map(|m| match m.get("id") {
            Some(id) => id.to_string(),
            None => m["method"].as_str().unwrap().to_string(),
        });
        let e = by_key[&key(want["method"].as_str().unwrap(), rpc)];
        let q = e.request.as_ref().unwrap();
        assert_eq!(q.method, want["method"].as_str().unwrap());
        assert_eq!(q.target, "/mcp");
        assert_eq!(
            header(&q.headers, "mcp-session-id"),
            want["mcp_session_id"].as_str()
        );
        assert_eq!(
            header(&q.headers, "authorization"),
            t["authorization_header_value"].as_str()
        );
        let h = e.response.as_ref().unwrap();
        assert_eq!(u64::from(h.status), want["status"].as_u64().unwrap());
        assert_eq!(header(&h.headers, "mcp-session-id"), Some(session));
        // Every SSE event the server minted for this request, in order, with the ids it minted.
        let ids: Vec<&str> = e
            .events
            .iter()
            .map(|ev| ev.id.as_deref().unwrap())
            .collect();
        let want_ids: Vec<&str> = want["sse_event_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(ids, want_ids, "request {}", want["seq"]);
        assert!(e.events.iter().all(|ev| ev.estimated));
        if let Some(m) = want.get("jsonrpc") {
            assert_eq!(
                e.request_messages[0].method.as_deref(),
                m["method"].as_str()
            );
            assert!(!q.body.unknown);
        }
        let end = e.end.as_ref().unwrap();
        assert_eq!(end.outcome, Outcome::Complete);
        assert!(!end.body.unknown, "request {}", want["seq"]);
        // Event times lie between the first byte and the end.
        for ev in &e.events {
            assert!(h.first.time <= ev.mark.time && ev.mark.time <= end.last.time);
        }
    }
    let priming: Vec<&str> = r
        .exchanges
        .iter()
        .flat_map(|e| e.events.iter().filter(|ev| ev.priming))
        .map(|ev| ev.id.as_deref().unwrap())
        .collect();
    let want_priming: Vec<&str> = t["priming_event_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(priming, want_priming);
    // The slow_count progress notifications arrive as JSON-RPC in events.
    let slow = by_key["POST 4"];
    let methods: Vec<Option<&str>> = slow
        .event_messages
        .iter()
        .flatten()
        .map(|m| m.method.as_deref())
        .collect();
    assert_eq!(
        methods
            .iter()
            .filter(|m| **m == Some("notifications/progress"))
            .count(),
        3
    );

    let c = &r.caps;
    assert_eq!(c.format, SourceFormat::Har);
    assert_eq!(
        c.producer.as_deref(),
        Some(&*format!(
            "mitmproxy {}",
            t["mitmproxy_version"].as_str().unwrap()
        ))
    );
    assert!(c.has_all_bodies() && c.has_all_sse_events());
    assert!(c.sse_times_estimated && !c.sanitized);
    assert!(c.knows_request_header("authorization") && c.knows_request_header("mcp-session-id"));
    assert!(c.server_addresses && !c.client_addresses && !c.connections);
    assert!(c.lacks.contains(&SourceLack::HarSseTimes));
    // Each entry is its own synthetic connection; marks cite entry numbers (file order).
    let frames: Vec<u64> = r
        .exchanges
        .iter()
        .map(|e| e.request.as_ref().unwrap().first.frame.frame)
        .collect();
    // mitmproxy writes entries as they complete: the standalone GET, closed last, is entry 7.
    let mut sorted = frames.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 2, 3, 4, 5, 6, 7]);
    let get = r
        .exchanges
        .iter()
        .find(|e| e.request.as_ref().unwrap().method == "GET")
        .unwrap();
    assert_eq!(get.request.as_ref().unwrap().first.frame.frame, 7);
    assert_eq!(r.seen.iter().filter(|s| s.0 == "conn_end").count(), 7);
    let server = r.exchanges[0].request.as_ref().unwrap().server;
    assert_eq!(server.to_string(), "127.0.0.1:3100");
}

#[test]
fn sanitized_har_leaves_holes_that_are_unknown_not_absent() {
    let r = read(SANITIZED, None);
    let c = &r.caps;
    assert!(c.sanitized);
    assert_eq!(c.producer.as_deref(), Some("WebInspector 537.36"));
    for h in ["authorization", "cookie", "set-cookie"] {
        assert!(
            !c.knows_request_header(h) && !c.knows_response_header(h),
            "{h}"
        );
    }
    assert!(c.knows_request_header("mcp-session-id"));
    assert_eq!((c.sse_streams.known, c.sse_streams.unknown), (4, 1));
    assert!(!c.has_all_sse_events());
    assert_eq!(c.response_bodies.unknown, 1);
    let slow = r
        .exchanges
        .iter()
        .find(|e| {
            e.request_messages
                .iter()
                .any(|m| m.method.as_deref() == Some("tools/call"))
                && e.events.is_empty()
        })
        .expect("the slow_count call, its body dropped");
    assert!(slow.end.as_ref().unwrap().body.unknown);
    assert!(slow.response.as_ref().unwrap().event_stream);
    assert!(
        slow.request
            .as_ref()
            .unwrap()
            .headers
            .get("authorization")
            .is_none()
    );
    assert!(
        c.lacks
            .contains(&SourceLack::HarCredentials { sanitized: true })
    );
    assert!(c.lacks.iter().any(|l| matches!(
        l,
        SourceLack::HarSseEvents {
            unknown: 1,
            total: 5,
            ..
        }
    )));
}

#[test]
fn har_with_event_source_messages_base64_connections_and_aborts() {
    let r = read(&format!("{FIX}/chrome-eventsource.har"), None);
    assert_eq!(r.exchanges.len(), 4);
    let [init, stream, call, aborted] = &r.exchanges[..] else {
        panic!()
    };
    // `connection` groups entries: 4242 carries the first and third.
    assert_eq!(init.id.conn, call.id.conn);
    assert_eq!((init.id.index, call.id.index), (0, 1));
    assert_ne!(init.id.conn, stream.id.conn);
    assert!(r.caps.connections);
    // Timings: request after blocked + connect, head after send + wait, end after receive.
    let q = init.request.as_ref().unwrap();
    let start = Timestamp::parse_rfc3339("2026-11-30T04:36:05Z").unwrap();
    assert_eq!(q.first.time, start.add_nanos(3_000_000));
    assert_eq!(q.last.time, start.add_nanos(4_000_000));
    assert_eq!(
        init.response.as_ref().unwrap().first.time,
        start.add_nanos(14_000_000)
    );
    assert_eq!(
        init.end.as_ref().unwrap().last.time,
        start.add_nanos(20_000_000)
    );
    // _eventSourceMessages: real times, not estimated; "" ids are no ids.
    assert!(stream.end.as_ref().unwrap().body.unknown);
    let times: Vec<f64> = stream.events.iter().map(|e| secs(e.mark.time)).collect();
    assert!(
        approx(times[0], 1_796_013_366.25) && approx(times[2], 1_796_013_368.75),
        "{times:?}"
    );
    assert!(stream.events.iter().all(|e| !e.estimated));
    let ids: Vec<(Option<&str>, &str)> = stream
        .events
        .iter()
        .map(|e| (e.id.as_deref(), &*e.last_event_id))
        .collect();
    assert_eq!(ids, [(Some("40"), "40"), (Some("41"), "41"), (None, "41")]);
    // base64 content decoded and parsed with the SSE parser; times estimated.
    assert_eq!(call.request.as_ref().unwrap().target, "/mcp?x=1");
    let ids: Vec<&str> = call
        .events
        .iter()
        .map(|e| e.id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["7", "8"]);
    assert!(call.events.iter().all(|e| e.estimated));
    assert_eq!(
        call.event_messages[1][0].kind,
        mcpf_mcp::jsonrpc::Kind::Response
    );
    // Status 0 with net::ERR_ABORTED: no response, the client gave up.
    let (outcome, by, mark) = aborted.no_response.unwrap();
    assert_eq!(
        (outcome, by),
        (Outcome::ClosedEarly, Some(Direction::ClientToServer))
    );
    assert_eq!(
        mark.time,
        Timestamp::parse_rfc3339("2026-11-30T04:36:08.5Z").unwrap()
    );
    assert!(aborted.response.is_none());
    assert_eq!(
        (r.caps.sse_streams.known, r.caps.sse_streams.unknown),
        (3, 0)
    );
}

#[test]
fn malformed_har_entries_are_skipped_and_counted() {
    let mut v: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{FIX}/chrome-eventsource.har")).unwrap(),
    )
    .unwrap();
    let entries = v["log"]["entries"].as_array_mut().unwrap();
    entries.insert(
        1,
        serde_json::json!({"startedDateTime": "yesterday", "request": {}}),
    );
    entries.push(serde_json::json!(42));
    let text = serde_json::to_string(&v).unwrap();
    let mut rec = Recorder::default();
    let (report, caps) = ingest::read_har_text("broken.har", &text, 3, &mut rec).unwrap();
    assert_eq!(report.skipped.get("malformed HAR entries"), Some(&2));
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.kind == NoteKind::HarEntrySkipped && w.at == Some(2)),
        "{:?}",
        report.warnings
    );
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.kind == NoteKind::HarEntrySkipped && w.at == Some(6))
    );
    assert_eq!(caps.exchanges, 4);
    // Marks cite the entry numbers of this input.
    let ex = support::with_messages(rec.collector.into_exchanges());
    assert!(
        ex.iter()
            .all(|e| e.request.as_ref().unwrap().first.frame.input == 3)
    );
    assert!(ingest::read_har_text("x.har", "{\"log\":{}}", 0, &mut Recorder::default()).is_err());
}

// ---------------------------------------------------------------- access logs

#[test]
fn nginx_log_of_the_seed_incident() {
    let r = read(NGINX, None);
    assert_eq!(r.exchanges.len(), 18);
    assert_eq!(r.report.format.to_string(), "nginx-log");
    assert!(r.report.skipped.is_empty());
    let lines: Vec<Value> = std::fs::read_to_string(NGINX)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // start = end - duration, for every line (msec and request_time).
    for e in &r.exchanges {
        let line = &lines[e.request.as_ref().unwrap().first.frame.frame as usize - 1];
        let end: f64 = line["msec"].as_str().unwrap().parse().unwrap();
        let dur: f64 = line["request_time"].as_str().unwrap().parse().unwrap();
        let start = secs(e.request.as_ref().unwrap().first.time);
        assert!(
            (start - (end - dur)).abs() < 1e-6,
            "{start} vs {end} - {dur}"
        );
        // No content in a log: a POST's body is unknown; a GET without a size has none.
        let q = e.request.as_ref().unwrap();
        assert_eq!(q.body.unknown, q.method != "GET", "{}", q.method);
    }
    // The buffered tools/call: 499, abandoned by the client before any response byte.
    let abandoned: Vec<&Exchange> = r
        .exchanges
        .iter()
        .filter(|e| e.no_response.is_some())
        .collect();
    assert_eq!(abandoned.len(), 1);
    let (outcome, by, mark) = abandoned[0].no_response.unwrap();
    assert_eq!(
        (outcome, by),
        (Outcome::ClosedEarly, Some(Direction::ClientToServer))
    );
    assert!(approx(secs(mark.time), 1_796_013_367.294));
    // Headers: the logged ones; an empty logged value is an absent header.
    let first = &r.exchanges[0];
    assert!(
        first
            .request
            .as_ref()
            .unwrap()
            .headers
            .get("mcp-session-id")
            .is_none()
    );
    assert_eq!(
        first
            .response
            .as_ref()
            .unwrap()
            .headers
            .get("mcp-session-id"),
        Some("2665c7c69224c221fa665378ef4692a9")
    );
    assert!(first.response.as_ref().unwrap().event_stream);
    let resume: Vec<&str> = r
        .exchanges
        .iter()
        .filter_map(|e| e.request.as_ref().unwrap().headers.get("last-event-id"))
        .collect();
    assert_eq!(resume, ["41"]);
    // The GET fallback stream began when the POST was abandoned (to the millisecond nginx logs),
    // although its line was written 4 s later, at its end.
    let gets: Vec<&Exchange> = r
        .exchanges
        .iter()
        .filter(|e| e.request.as_ref().unwrap().method == "GET")
        .collect();
    assert_eq!(gets.len(), 2);
    assert!(gets[0].start().unwrap().time >= mark.time);
    assert_eq!(gets[0].request.as_ref().unwrap().first.frame.frame, 16);
    // nginx $connection: connection 7 carried 13 requests, indexed in order; the DELETE is last.
    let c7: Vec<&Exchange> = r
        .exchanges
        .iter()
        .filter(|e| e.id.conn == r.exchanges[4].id.conn)
        .collect();
    assert_eq!(c7.len(), 13);
    assert_eq!(
        c7.last().unwrap().request.as_ref().unwrap().method,
        "DELETE"
    );
    assert_eq!(c7.last().unwrap().id.index, 12);
    let c = &r.caps;
    assert!(c.knows_request_header("mcp-session-id") && c.knows_request_header("last-event-id"));
    assert!(c.knows_response_header("mcp-session-id") && c.knows_response_header("content-type"));
    assert!(
        !c.knows_request_header("authorization") && !c.knows_response_header("x-accel-buffering")
    );
    // Only bodies the log says were empty (body_bytes_sent 0) are known.
    let empty = lines
        .iter()
        .filter(|l| l["body_bytes_sent"] == "0" && l["status"] != "499")
        .count() as u64;
    assert!(empty >= 2);
    assert_eq!(c.response_bodies.known, empty);
    assert!(c.sse_streams.none() && !c.has_all_sse_events());
    assert!(
        c.start_from_duration && c.response_start_estimated && c.connections && c.client_addresses
    );
    assert!(c.lacks.contains(&SourceLack::LogBodies));
    assert!(c.lacks.contains(&SourceLack::LogRequestStart {
        durations: Durations::All
    }));
    // The client address is logged.
    assert_eq!(
        first.request.as_ref().unwrap().client.to_string(),
        "127.0.0.1:49446"
    );
}

#[test]
fn nginx_log_keeps_namespaced_last_event_ids() {
    let r = read(NGINX_NS, None);
    let ids: Vec<&str> = r
        .exchanges
        .iter()
        .filter_map(|e| e.request.as_ref().unwrap().headers.get("last-event-id"))
        .collect();
    assert_eq!(ids, ["sse:41"]);
}

#[test]
fn malformed_lines_are_skipped_counted_and_named_by_line_number() {
    let r = read(&format!("{FIX}/nginx-malformed.jsonl"), None);
    assert_eq!(r.report.skipped.get("malformed lines"), Some(&4));
    let lines: Vec<u64> = r
        .report
        .warnings
        .iter()
        .filter(|w| w.kind == NoteKind::LineSkipped)
        .filter_map(|w| w.at)
        .collect();
    assert_eq!(lines, [2, 4, 7, 8]);
    assert!(
        r.report.warnings[3]
            .detail
            .as_deref()
            .is_some_and(|why| why.contains("no status")),
        "{:?}",
        r.report.warnings
    );
    // The rest is analysed: lines 1, 3 and 6 (the 499).
    assert_eq!(r.exchanges.len(), 3);
    let frames: Vec<u64> = r
        .exchanges
        .iter()
        .map(|e| e.request.as_ref().unwrap().first.frame.frame)
        .collect();
    assert_eq!(frames, [1, 3, 6]);
    assert!(r.exchanges[2].no_response.is_some());
    // Non-empty lines are counted (the empty line 5 is not).
    assert_eq!(r.report.packets, 7);
}

#[test]
fn envoy_log_with_response_flags() {
    let r = read(&format!("{FIX}/envoy.jsonl"), None);
    assert_eq!(r.report.format.to_string(), "envoy-log");
    assert_eq!(r.exchanges.len(), 8);
    let method_status: Vec<(String, Option<u16>)> = r
        .exchanges
        .iter()
        .map(|e| {
            (
                e.request.as_ref().unwrap().method.clone(),
                e.response.as_ref().map(|h| h.status),
            )
        })
        .collect();
    // Sorted by start_time although the log has them in end order.
    assert_eq!(method_status[3], ("GET".to_string(), Some(200)));
    assert_eq!(method_status[2], ("POST".to_string(), None));
    // start_time is the start; end = start + duration (ms).
    let get = &r.exchanges[3];
    assert_eq!(
        get.request.as_ref().unwrap().first.time,
        Timestamp::parse_rfc3339("2026-11-30T04:36:07.294Z").unwrap()
    );
    assert_eq!(
        get.end.as_ref().unwrap().last.time,
        Timestamp::parse_rfc3339("2026-11-30T04:36:11.293Z").unwrap()
    );
    // DC with response code 0: abandoned before any byte; DC with 200: a stream the client cut.
    let (o, by, _) = r.exchanges[2].no_response.unwrap();
    assert_eq!(
        (o, by),
        (Outcome::ClosedEarly, Some(Direction::ClientToServer))
    );
    let end = get.end.as_ref().unwrap();
    assert_eq!(
        (end.outcome, end.closed_by),
        (Outcome::ClosedEarly, Some(Direction::ClientToServer))
    );
    // UT with 504: Envoy's own response reached the client whole.
    let ut = r
        .exchanges
        .iter()
        .find(|e| e.response.as_ref().is_some_and(|h| h.status == 504))
        .unwrap();
    assert_eq!(ut.end.as_ref().unwrap().outcome, Outcome::Complete);
    assert_eq!(r.anomalies.len(), 3);
    assert!(
        r.anomalies
            .iter()
            .any(|a| a.contains("DC (downstream connection termination)"))
    );
    assert!(
        r.anomalies
            .iter()
            .any(|a| a.contains("UT (upstream request timeout)"))
    );
    // %REQ(...)% / %RESP(...)% keys.
    let resume = &r.exchanges[6];
    assert_eq!(
        resume
            .request
            .as_ref()
            .unwrap()
            .headers
            .get("last-event-id"),
        Some("41")
    );
    assert_eq!(
        resume
            .request
            .as_ref()
            .unwrap()
            .headers
            .get("mcp-session-id"),
        Some("2665c7c69224c221fa665378ef4692a9")
    );
    assert_eq!(
        resume
            .response
            .as_ref()
            .unwrap()
            .headers
            .get("mcp-session-id"),
        Some("2665c7c69224c221fa665378ef4692a9")
    );
    assert!(resume.response.as_ref().unwrap().event_stream);
    assert_eq!(
        resume.request.as_ref().unwrap().headers.get("host"),
        Some("127.0.0.1:10000")
    );
    assert_eq!(
        resume.request.as_ref().unwrap().client.to_string(),
        "127.0.0.1:49480"
    );
    // connection_id groups: 13 carried the POST, the 504 and the DELETE.
    let c13 = r
        .exchanges
        .iter()
        .filter(|e| e.id.conn == r.exchanges[4].id.conn)
        .count();
    assert_eq!(c13, 3);
    // The 202 with bytes_sent 0 has a known empty body; other bodies are unknown.
    let accepted = &r.exchanges[1];
    assert!(!accepted.end.as_ref().unwrap().body.unknown);
    assert!(r.exchanges[0].end.as_ref().unwrap().body.unknown);
    let c = &r.caps;
    assert!(!c.start_from_duration && c.response_end_known && c.connections);
    assert!(c.knows_request_header("mcp-session-id") && c.knows_response_header("mcp-session-id"));
    assert!(!c.knows_request_header("cookie"));
}

#[test]
fn caddy_log_default_json() {
    let r = read(&format!("{FIX}/caddy.jsonl"), None);
    assert_eq!(r.report.format.to_string(), "caddy-log");
    assert_eq!(r.exchanges.len(), 5);
    // ts is the end; start = ts - duration (seconds).
    let get = r
        .exchanges
        .iter()
        .find(|e| e.request.as_ref().unwrap().method == "GET")
        .unwrap();
    let ts = Timestamp(1_796_013_371_293_870_000);
    let near = |a: Timestamp, b: Timestamp| (a.0 - b.0).abs() < 1_000;
    assert!(near(get.end.as_ref().unwrap().last.time, ts));
    assert!(near(
        get.request.as_ref().unwrap().first.time,
        ts.add_nanos(-3_999_502_000)
    ));
    // 499: the client went away before the upstream answered.
    let (o, by, _) = r.exchanges[2].no_response.unwrap();
    assert_eq!(
        (o, by),
        (Outcome::ClosedEarly, Some(Direction::ClientToServer))
    );
    // request.headers / resp_headers maps of arrays; an empty array is an absent header.
    let last = r.exchanges.last().unwrap();
    assert_eq!(
        last.request.as_ref().unwrap().headers.get("last-event-id"),
        Some("41")
    );
    assert_eq!(
        last.request.as_ref().unwrap().headers.get("host"),
        Some("127.0.0.1:8443")
    );
    assert!(
        r.exchanges[1]
            .response
            .as_ref()
            .unwrap()
            .headers
            .get("content-type")
            .is_none()
    );
    let c = &r.caps;
    assert!(c.sanitized, "Caddy redacts Authorization by default");
    assert!(c.knows_request_header("accept") && c.knows_response_header("mcp-session-id"));
    assert!(!c.connections && !c.server_addresses && c.client_addresses);
    // Without a connection id, the client's ip:port groups requests.
    assert_eq!(r.exchanges[0].id.conn, r.exchanges[1].id.conn);
}

#[test]
fn log_map_reads_any_json_log() {
    let path = format!("{FIX}/custom.jsonl");
    assert!(ingest::detect(&path).is_err());
    let spec = "time=when,method=req.verb,path=req.url,status=code,duration=took_ms,duration_unit=ms,\
                req.Mcp-Session-Id=req.sid,req.Last-Event-ID=req.leid,resp.Mcp-Session-Id=resp.sid,\
                resp.Content-Type=resp.ctype,client=peer";
    let from_spec = LogMap::parse(spec).unwrap();
    let file = std::fs::read_to_string(format!("{FIX}/custom.logmap.json")).unwrap();
    let from_file = LogMap::from_json(&file).unwrap();
    for map in [&from_spec, &from_file] {
        let r = read(&path, Some(map));
        assert_eq!(r.report.format.to_string(), "mapped-log");
        assert_eq!(r.exchanges.len(), 3);
        let get = &r.exchanges[2];
        let q = get.request.as_ref().unwrap();
        assert_eq!((q.method.as_str(), q.target.as_str()), ("GET", "/mcp"));
        assert_eq!(q.headers.get("last-event-id"), Some("sse:41"));
        assert_eq!(q.client.to_string(), "10.0.0.7:51002");
        assert_eq!(
            q.first.time,
            Timestamp::parse_rfc3339("2026-11-30T04:36:05.800Z").unwrap()
        );
        assert!(get.response.as_ref().unwrap().event_stream);
        assert!(
            r.exchanges[0]
                .request
                .as_ref()
                .unwrap()
                .headers
                .get("mcp-session-id")
                .is_none()
        );
        assert!(
            r.caps.knows_request_header("last-event-id") && !r.caps.knows_request_header("accept")
        );
    }
    assert!(LogMap::parse("time=when").is_err());
}

// ---------------------------------------------------------------- the http command

fn cmd() -> Command {
    Command::cargo_bin("mcp-forensics").unwrap()
}

#[test]
fn http_command_reads_har_and_logs() {
    let out = cmd()
        .args(["http", HAR])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("(har)") && text.contains("7 exchanges"),
        "{text}"
    );
    assert!(text.contains("tools/call #4"));
    let out = cmd()
        .args(["http", "--format", "json", NGINX, SANITIZED])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["exchanges"].as_array().unwrap().len(), 25);
    assert_eq!(doc["inputs"][0]["format"], "nginx-log");
    assert_eq!(doc["inputs"][1]["format"], "har");
    // Credentials in the HAR are redacted as in captures.
    let out = cmd()
        .args(["http", "--format", "json", HAR])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(
        !String::from_utf8_lossy(&out).contains(
            truth()["secrets_that_must_be_redacted"][0]
                .as_str()
                .unwrap()
        )
    );
    // A capture and a log in one run.
    cmd()
        .args(["http", "samples/http-basic.pcap", NGINX])
        .assert()
        .success();
}

#[test]
fn http_command_input_format_and_log_map() {
    let custom = format!("{FIX}/custom.jsonl");
    let assert = cmd().args(["http", &custom]).assert().code(4);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        err.contains("when, req, code, took_ms, resp, peer"),
        "{err}"
    );
    let map = format!("{FIX}/custom.logmap.json");
    let out = cmd()
        .args(["http", "--log-map", &map, &custom])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&out).contains("3 exchanges"));
    cmd()
        .args(["http", "--input-format", "log", HAR])
        .assert()
        .code(4);
    cmd()
        .args(["http", "--input-format", "har", HAR])
        .assert()
        .success();
    cmd()
        .args(["http", "--log-map", "time=x", &custom])
        .assert()
        .code(2);
}

// ---------------------------------------------------------------- helpers

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "mcpf-ingest-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------- robustness

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn field() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            ".{0,12}".prop_map(Value::from),
            prop_oneof![
                Just("1796013365.789"),
                Just("-"),
                Just(""),
                Just("30/Nov/2026:04:36:05 +éé"),
                Just("1e300, 1e300"),
                Just("2026/11/30 x"),
                Just("DC,UC"),
                Just("[::1]:80"),
                Just("1m2ms3"),
                Just("text/event-stream"),
                Just("499"),
            ]
            .prop_map(Value::from),
        ]
    }

    fn record(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
        proptest::collection::vec((proptest::sample::select(keys), field()), 0..10).prop_map(|kv| {
            let obj: serde_json::Map<String, Value> =
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            Value::Object(obj).to_string()
        })
    }

    const NGINX_KEYS: &[&str] = &[
        "msec",
        "time_iso8601",
        "time_local",
        "request_method",
        "request_uri",
        "request",
        "status",
        "request_time",
        "upstream_header_time",
        "http_mcp_session_id",
        "sent_http_content_type",
        "remote_addr",
        "remote_port",
        "connection",
        "connection_requests",
        "request_completion",
        "body_bytes_sent",
    ];
    const ENVOY_KEYS: &[&str] = &[
        "start_time",
        "method",
        "path",
        "response_code",
        "response_flags",
        "duration",
        "response_duration",
        "downstream_remote_address",
        "connection_id",
        "req_mcp_session_id",
        "x-last-event-id",
        "bytes_sent",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn logs(lines in proptest::collection::vec(prop_oneof![record(NGINX_KEYS), record(ENVOY_KEYS), ".{0,40}"], 0..12)) {
            let text = lines.join("\n");
            let map = LogMap::parse("time=msec,method=method,path=path,status=status,duration=duration,req.A=x-last-event-id").unwrap();
            for map in [None, Some(&map)] {
                let mut rec = Recorder::default();
                if ingest::read_access_log_text("fuzz.jsonl", &text, 0, map, &mut rec).is_ok() {
                    check_order("fuzz.jsonl", &rec.seen);
                }
            }
        }

        #[test]
        fn har_entries(started in ".{0,30}", url in ".{0,30}", status in field(), timing in field(), text in field(), enc in field(), msg_time in field()) {
            let entry = serde_json::json!({
                "startedDateTime": started, "time": timing,
                "request": {"method": "POST", "url": url, "headers": [{"name": "a", "value": "b"}], "postData": {"text": text}},
                "response": {"status": status, "headers": [{"name": "Content-Type", "value": "text/event-stream"}],
                             "content": {"text": text, "encoding": enc}},
                "timings": {"send": timing, "wait": timing, "receive": timing},
                "serverIPAddress": url, "connection": status,
                "_eventSourceMessages": [{"time": msg_time, "data": text}, {"time": timing}],
            });
            let ok = serde_json::json!({"startedDateTime": "2026-11-30T04:36:05Z", "request": {"method": "GET", "url": url}, "response": {"status": 200}});
            let har = serde_json::json!({"log": {"entries": [entry, ok]}}).to_string();
            let mut rec = Recorder::default();
            let _ = ingest::read_har_text("fuzz.har", &har, 0, &mut rec);
            check_order("fuzz.har", &rec.seen);
        }
    }
}
