//! The HTTP/SSE/JSON-RPC layer end to end on the real captures under `samples/`, checked against
//! the ground truth the scripts that made them recorded (`samples/*.truth.json`: what the client
//! sent and what the server minted, from their own logs, not from the pcap). Everything specific
//! to a run (session ids, event uuids) is read from the truth file, so a re-captured sample only
//! needs its truth file regenerated with it. Optional samples that do not exist are skipped.
//!
//! Also the `http` command's JSON shape and the redaction of the bearer token.

use std::collections::BTreeMap;
use std::path::Path;

use mcpf_capture::tcp::Direction;
use mcpf_capture::{CaptureStage, Settings, open_capture, run};
use mcpf_http::exchange::Collector;
use support::Exchange;

mod support;
use mcpf_http::{HttpStats, Outcome, Stage};
use mcpf_mcp::jsonrpc::{Kind, Message};
use serde_json::Value;

const SECRET: &str = "mcpf-secret-token-DO-NOT-LEAK";

struct Analysed {
    /// In the order their requests began.
    exchanges: Vec<Exchange>,
    stats: HttpStats,
    anomalies: Vec<String>,
}

fn analyse(path: &str) -> Analysed {
    let mut inputs = vec![open_capture(path, 0).unwrap_or_else(|e| panic!("{path}: {e:?}"))];
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Collector::default());
    run(&mut inputs, &mut capture, &mut http);
    let collector = std::mem::take(&mut http.sink);
    let anomalies = collector
        .anomalies
        .iter()
        .map(|a| format!("{} {}", a.kind.name(), a.detail))
        .collect();
    Analysed {
        exchanges: support::with_messages(collector.into_exchanges()),
        stats: http.stats.clone(),
        anomalies,
    }
}

/// The sample and its truth, or `None` (with a note) when the sample is not there.
fn optional(pcap: &str, truth: &str) -> Option<(String, Value)> {
    let pcap = format!("samples/{pcap}");
    let truth_path = format!("samples/{truth}");
    if !Path::new(&pcap).exists() || !Path::new(&truth_path).exists() {
        eprintln!("skipped: {pcap} or {truth_path} does not exist");
        return None;
    }
    Some((pcap, read_truth(&truth_path)))
}

fn read_truth(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn arr(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

fn kind_name(k: Kind) -> Value {
    serde_json::to_value(k).unwrap()
}

/// A message's id as JSON, with its type (`1` or `"1"`), null when it has none.
fn id_value(m: &Message) -> Value {
    m.id.as_ref().map(|i| i.to_value()).unwrap_or(Value::Null)
}

fn header<'a>(e: &'a Exchange, name: &str) -> Option<&'a str> {
    e.request.as_ref().and_then(|r| r.headers.get(name))
}

fn response_header<'a>(e: &'a Exchange, name: &str) -> Option<&'a str> {
    e.response.as_ref().and_then(|h| h.headers.get(name))
}

fn event_ids(e: &Exchange) -> Vec<Value> {
    e.events
        .iter()
        .map(|ev| {
            ev.id
                .as_deref()
                .map(|i| Value::String(i.into()))
                .unwrap_or(Value::Null)
        })
        .collect()
}

fn opt_str(v: &Value) -> Option<&str> {
    v.as_str()
}

/// Compares a request's body messages with the truth's `jsonrpc` member (method, kind if given,
/// and the id with its JSON type; no id member or `null` means a notification).
fn check_request_jsonrpc(e: &Exchange, t: &Value, what: &str) {
    match t.get("jsonrpc") {
        None => assert!(
            e.request_messages.is_empty(),
            "{what}: {:?}",
            e.request_messages
        ),
        Some(j) => {
            assert_eq!(
                e.request_messages.len(),
                1,
                "{what}: {:?}",
                e.request_messages
            );
            let m = &e.request_messages[0];
            assert_eq!(m.method.as_deref(), j["method"].as_str(), "{what}");
            let id = j.get("id").cloned().unwrap_or(Value::Null);
            assert_eq!(id_value(m), id, "{what}: id and its JSON type");
            let kind = j.get("kind").cloned().unwrap_or_else(|| {
                if id.is_null() {
                    "notification"
                } else {
                    "request"
                }
                .into()
            });
            assert_eq!(kind_name(m.kind), kind, "{what}");
        }
    }
}

/// Compares the messages of an event with a truth `message` (`kind`, `id`, `method`).
fn check_event_message(msgs: &[Message], t: &Value, what: &str) {
    assert_eq!(msgs.len(), 1, "{what}: {msgs:?}");
    let m = &msgs[0];
    assert_eq!(kind_name(m.kind), t["kind"], "{what}");
    if let Some(id) = t.get("id") {
        assert_eq!(&id_value(m), id, "{what}");
    }
    if let Some(method) = t.get("method").and_then(Value::as_str) {
        assert_eq!(m.method.as_deref(), Some(method), "{what}");
    }
    if let Some(p) = t.get("progress") {
        assert_eq!(
            m.mcp.progress.as_ref().and_then(|n| n.as_f64()),
            p.as_f64(),
            "{what}"
        );
    }
}

/// Every event of the capture in wire order (time, frame; then connection and index).
fn events_in_wire_order(a: &Analysed) -> Vec<(&Exchange, usize)> {
    let mut v: Vec<(&Exchange, usize)> = a
        .exchanges
        .iter()
        .flat_map(|e| (0..e.events.len()).map(move |i| (e, i)))
        .collect();
    v.sort_by_key(|(e, i)| (e.events[*i].mark, e.id, *i));
    v
}

// ------------------------------------------------------------------------------------------------
// python-sdk-healthy: official Python SDK server and client
// ------------------------------------------------------------------------------------------------

/// What must not depend on the capture file's format or link type.
fn normalised(a: &Analysed) -> Vec<String> {
    a.exchanges
        .iter()
        .map(|e| {
            format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                e.request.as_ref().map(|r| (
                    &r.method,
                    &r.target,
                    &r.headers.0,
                    &r.body.data,
                    r.outcome
                )),
                e.response.as_ref().map(|h| (h.status, &h.headers.0)),
                e.end.as_ref().map(|x| (x.outcome, &x.body.data, &x.sse)),
                e.events
                    .iter()
                    .map(|ev| (
                        &ev.id,
                        &ev.last_event_id,
                        &ev.event,
                        &ev.data,
                        ev.priming,
                        ev.index
                    ))
                    .collect::<Vec<_>>(),
                e.request_messages,
                e.response_messages,
                e.event_messages,
                e.no_response.map(|n| (n.0, n.1)),
            )
        })
        .collect()
}

fn check_python_healthy(path: &str, truth: &Value) {
    let a = analyse(path);
    let requests = arr(&truth["http_requests"]);
    assert_eq!(
        a.exchanges.len(),
        truth["http_request_count"].as_u64().unwrap() as usize,
        "{path}"
    );
    assert_eq!(a.exchanges.len(), requests.len());
    assert!(a.anomalies.is_empty(), "{path}: {:?}", a.anomalies);
    assert_eq!(a.stats.skipped_bytes, 0);
    assert_eq!(a.stats.connections_http, 7, "{path}: {:?}", a.stats);
    let port: u16 = truth["server"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(a.stats.http_ports, vec![port]);

    let minted = arr(&truth["sse_events_minted"]);
    for (e, t) in a.exchanges.iter().zip(requests) {
        let seq = t["seq"].as_u64().unwrap();
        let what = format!("{path} request {seq}");
        let r = e
            .request
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no request"));
        assert_eq!(r.method, t["method"].as_str().unwrap(), "{what}");
        assert_eq!(r.target, t["path"].as_str().unwrap(), "{what}");
        assert_eq!(r.outcome, Outcome::Complete, "{what}");
        assert_eq!(
            header(e, "mcp-session-id"),
            opt_str(&t["mcp_session_id"]),
            "{what}"
        );
        assert_eq!(
            header(e, "mcp-protocol-version"),
            opt_str(&t["mcp_protocol_version"]),
            "{what}"
        );
        assert_eq!(
            header(e, "last-event-id"),
            opt_str(&t["last_event_id"]),
            "{what}"
        );
        assert_eq!(
            header(e, "authorization"),
            truth["authorization_header_value"].as_str(),
            "{what}"
        );
        let head = e
            .response
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no response"));
        assert_eq!(
            u64::from(head.status),
            t["status"].as_u64().unwrap(),
            "{what}"
        );
        assert_eq!(
            head.headers.media_type().as_deref(),
            opt_str(&t["response_content_type"]),
            "{what}"
        );
        assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::Complete, "{what}");
        check_request_jsonrpc(e, t, &what);

        // The events of this request's stream, as the server's event store minted them.
        let mine: Vec<&Value> = minted
            .iter()
            .filter(|m| m["http_request_seq"].as_u64() == Some(seq))
            .collect();
        let want: Vec<Value> = mine.iter().map(|m| m["event_id"].clone()).collect();
        assert_eq!(event_ids(e), want, "{what}: event ids");
        for (i, (ev, m)) in e.events.iter().zip(&mine).enumerate() {
            let what = format!("{what} event {i}");
            assert_eq!(ev.index as usize, i, "{what}");
            assert_eq!(Some(&*ev.last_event_id), ev.id.as_deref(), "{what}");
            assert_eq!(ev.priming, m["priming"].as_bool().unwrap(), "{what}");
            match m.get("message") {
                Some(msg) => check_event_message(&e.event_messages[i], msg, &what),
                None => assert!(
                    e.event_messages[i].is_empty() && ev.data.is_empty(),
                    "{what}"
                ),
            }
        }
    }

    // All event ids in the order they crossed the wire; the priming ones.
    let order: Vec<Value> = events_in_wire_order(&a)
        .iter()
        .map(|(e, i)| {
            e.events[*i]
                .id
                .as_deref()
                .map(|i| Value::String(i.into()))
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_eq!(&order, arr(&truth["sse_event_ids_in_order"]), "{path}");
    let priming: Vec<Value> = events_in_wire_order(&a)
        .iter()
        .filter(|(e, i)| e.events[*i].priming)
        .map(|(e, i)| Value::String(e.events[*i].id.as_deref().unwrap().into()))
        .collect();
    assert_eq!(&priming, arr(&truth["priming_event_ids"]), "{path}");
    // No resumption in a healthy session.
    assert!(arr(&truth["last_event_id_sent"]).is_empty());
}

#[test]
fn python_sdk_healthy_pcap() {
    let truth = read_truth("samples/python-sdk-healthy.truth.json");
    check_python_healthy("samples/python-sdk-healthy.pcap", &truth);
}

#[test]
fn python_sdk_healthy_pcapng_and_any_give_the_same_result() {
    let truth = read_truth("samples/python-sdk-healthy.truth.json");
    let reference = normalised(&analyse("samples/python-sdk-healthy.pcap"));
    for path in [
        "samples/python-sdk-healthy.pcapng",
        "samples/python-sdk-healthy-any.pcap",
    ] {
        check_python_healthy(path, &truth);
        assert_eq!(normalised(&analyse(path)), reference, "{path}");
    }
}

// ------------------------------------------------------------------------------------------------
// seed-incident: the client leg through nginx
// ------------------------------------------------------------------------------------------------

#[test]
fn seed_incident_client_leg() {
    let truth = read_truth("samples/seed-incident.truth.json");
    let a = analyse("samples/seed-incident-client-leg.pcap");
    let client = &truth["client"];
    let requests = arr(&client["http_requests"]);
    assert_eq!(requests.len(), 18);
    assert_eq!(
        truth["http_request_counts"]["client_leg_sent_by_client"],
        18
    );
    assert_eq!(
        a.exchanges.len(),
        18,
        "{:?}",
        a.exchanges.iter().map(|e| e.id).collect::<Vec<_>>()
    );
    assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
    assert_eq!(a.stats.connections_http, 4);
    assert_eq!(a.stats.http_ports, vec![8080]);

    let by_seq: BTreeMap<u64, &Exchange> = a
        .exchanges
        .iter()
        .zip(requests)
        .map(|(e, t)| (t["seq"].as_u64().unwrap(), e))
        .collect();
    for (e, t) in a.exchanges.iter().zip(requests) {
        let what = format!("request {}", t["seq"]);
        assert_eq!(
            e.id.conn.number(),
            t["connection"].as_u64().unwrap(),
            "{what}"
        );
        let r = e.request.as_ref().unwrap();
        assert_eq!(r.method, t["method"].as_str().unwrap(), "{what}");
        assert_eq!(r.target, t["path"].as_str().unwrap(), "{what}");
        for (name, value) in t["headers"].as_object().unwrap() {
            assert_eq!(header(e, name), value.as_str(), "{what}: {name}");
        }
        check_request_jsonrpc(e, t, &what);
        match t["status"].as_u64() {
            None => assert!(e.response.is_none(), "{what}"),
            Some(status) => {
                let head = e
                    .response
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: no response"));
                assert_eq!(u64::from(head.status), status, "{what}");
                assert_eq!(
                    head.headers.media_type().as_deref(),
                    t.get("content_type").and_then(Value::as_str),
                    "{what}"
                );
                if let Some(sid) = t.get("response_mcp_session_id") {
                    assert_eq!(response_header(e, "mcp-session-id"), sid.as_str(), "{what}");
                }
            }
        }
        if t["outcome"] == "complete" {
            assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::Complete, "{what}");
        }
    }

    // tools/call 7: never answered; the client gave up and closed with a FIN.
    let call7 = by_seq[&3];
    assert_eq!(id_value(&call7.request_messages[0]), serde_json::json!(7));
    assert!(call7.response.is_none() && call7.end.is_none());
    let (outcome, by, _) = call7.no_response.expect("reported as unanswered");
    assert_eq!(outcome, Outcome::ClosedEarly);
    assert_eq!(by, Some(Direction::ClientToServer));
    assert_eq!(
        arr(&client["unanswered_requests"]),
        &vec![serde_json::json!(7)]
    );

    // Every stream's events, as the client received them.
    for s in arr(&client["received_streams"]) {
        let seq = s["http_request_seq"].as_u64().unwrap();
        let e = by_seq[&seq];
        let what = format!("stream {}", s["label"]);
        let want: Vec<Value> = arr(&s["events"])
            .iter()
            .map(|ev| ev["id"].clone())
            .collect();
        assert_eq!(event_ids(e), want, "{what}");
        for (i, ev) in arr(&s["events"]).iter().enumerate() {
            let sum = &ev["summary"];
            let m = &e.event_messages[i];
            assert_eq!(m.len(), 1, "{what} event {i}");
            match sum["kind"].as_str().unwrap() {
                "response" => {
                    assert_eq!(m[0].kind, Kind::Response, "{what} event {i}");
                    assert_eq!(id_value(&m[0]), sum["response_to_id"], "{what} event {i}");
                }
                "progress" => {
                    assert_eq!(m[0].kind, Kind::Notification, "{what} event {i}");
                    assert_eq!(m[0].method.as_deref(), Some("notifications/progress"));
                    assert_eq!(
                        m[0].mcp.progress.as_ref().and_then(|n| n.as_f64()),
                        sum["progress"].as_f64()
                    );
                    assert_eq!(
                        m[0].mcp.progress_token.as_deref(),
                        Some(sum["progressToken"].to_string().as_str())
                    );
                }
                "log" => {
                    assert_eq!(m[0].kind, Kind::Notification, "{what} event {i}");
                    assert_eq!(m[0].method.as_deref(), Some("notifications/message"));
                }
                other => panic!("{what}: unexpected summary kind {other}"),
            }
        }
    }

    // The first GET: events 1..41, then the client reset the connection.
    let get1 = by_seq[&4];
    let ids: Vec<Value> = (1..=41).map(|n| Value::String(n.to_string())).collect();
    assert_eq!(event_ids(get1), ids);
    assert_eq!(&*get1.events.last().unwrap().last_event_id, "41");
    let end = get1.end.as_ref().unwrap();
    assert_eq!(
        (end.outcome, end.closed_by),
        (Outcome::Reset, Some(Direction::ClientToServer))
    );

    // The resume: Last-Event-ID 41, one event, id 42, the response to 19 (a duplicate of the
    // one the POST stream of 19 delivered under the same event id).
    let resume = by_seq[&17];
    assert_eq!(header(resume, "last-event-id"), Some("41"));
    assert_eq!(client["last_event_id_sent"], "41");
    assert_eq!(event_ids(resume), vec![Value::String("42".into())]);
    assert_eq!(resume.event_messages[0][0].kind, Kind::Response);
    assert_eq!(
        id_value(&resume.event_messages[0][0]),
        serde_json::json!(19)
    );
    let post19 = by_seq[&16];
    assert_eq!(id_value(&post19.request_messages[0]), serde_json::json!(19));
    let dup = &arr(&client["duplicate_responses"])[0];
    assert_eq!(dup["response_to_id"], 19);
    let first = post19
        .events
        .iter()
        .position(|ev| ev.id.as_deref() == dup["first"]["event_id"].as_str());
    let first = first.expect("the POST stream of 19 carries event 42");
    assert_eq!(
        id_value(&post19.event_messages[first][0]),
        serde_json::json!(19)
    );
    let end = resume.end.as_ref().unwrap();
    assert_eq!(
        end.outcome,
        Outcome::ClosedEarly,
        "the resumed stream never ended on its own"
    );
    assert!(end.closed_by.is_some());
}

#[test]
fn seed_incident_resume_was_closed_by_the_client() {
    // Connection D: the client gave up on the resumed GET and sent the first FIN (frame 154);
    // nginx answered with its own FIN (frame 155), which is what ends the response.
    let truth = read_truth("samples/seed-incident.truth.json");
    assert_eq!(
        arr(&truth["client"]["connections"])[3]["closed_by_client"],
        "FIN"
    );
    let a = analyse("samples/seed-incident-client-leg.pcap");
    let resume = a
        .exchanges
        .iter()
        .find(|e| header(e, "last-event-id").is_some())
        .unwrap();
    assert_eq!(
        resume.end.as_ref().unwrap().closed_by,
        Some(Direction::ClientToServer)
    );
}

#[test]
fn seed_incident_server_leg() {
    let truth = read_truth("samples/seed-incident.truth.json");
    let a = analyse("samples/seed-incident-server-leg.pcap");
    let requests = arr(&truth["server"]["http_requests"]);
    assert_eq!(
        truth["http_request_counts"]["server_leg_received_by_server"],
        18
    );
    assert_eq!(a.exchanges.len(), requests.len());
    assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
    for (e, t) in a.exchanges.iter().zip(requests) {
        let what = format!("server request {}", t["seq"]);
        let r = e.request.as_ref().unwrap();
        assert_eq!(r.method, t["method"].as_str().unwrap(), "{what}");
        assert_eq!(r.target, t["path"].as_str().unwrap(), "{what}");
        assert_eq!(
            format!("HTTP/1.{}", r.version),
            t["http_version"].as_str().unwrap(),
            "{what}"
        );
        assert_eq!(
            header(e, "mcp-session-id"),
            opt_str(&t["mcp_session_id"]),
            "{what}"
        );
        assert_eq!(
            header(e, "last-event-id"),
            opt_str(&t["last_event_id"]),
            "{what}"
        );
        check_request_jsonrpc(e, t, &what);
        assert!(
            e.response.is_some(),
            "{what}: every request reached the server and was answered"
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Optional samples: TypeScript SDK resumption, legacy HTTP+SSE fallback
// ------------------------------------------------------------------------------------------------

#[test]
fn ts_sdk_resumption() {
    let Some((path, truth)) = optional("ts-sdk-resumption.pcap", "ts-sdk-resumption.truth.json")
    else {
        return;
    };
    let a = analyse(&path);
    let requests = arr(&truth["http_requests"]);
    assert_eq!(
        a.exchanges.len(),
        truth["http_request_count"].as_u64().unwrap() as usize
    );
    assert_eq!(a.exchanges.len(), requests.len());
    assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
    let endpoint = truth["endpoint"].as_str().unwrap();
    let by_seq: BTreeMap<u64, &Exchange> = a
        .exchanges
        .iter()
        .zip(requests)
        .map(|(e, t)| (t["seq"].as_u64().unwrap(), e))
        .collect();
    for (e, t) in a.exchanges.iter().zip(requests) {
        let what = format!("{path} request {}", t["seq"]);
        let r = e.request.as_ref().unwrap();
        assert_eq!(r.method, t["method"].as_str().unwrap(), "{what}");
        assert_eq!(r.target, endpoint, "{what}");
        assert_eq!(
            header(e, "mcp-session-id"),
            opt_str(&t["mcp_session_id"]),
            "{what}"
        );
        assert_eq!(
            header(e, "last-event-id"),
            opt_str(&t["last_event_id"]),
            "{what}"
        );
        check_request_jsonrpc(e, t, &what);
        let head = e
            .response
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no response"));
        assert_eq!(
            u64::from(head.status),
            t["status"].as_u64().unwrap(),
            "{what}"
        );
        assert_eq!(
            head.headers.media_type().as_deref(),
            opt_str(&t["response_content_type"]),
            "{what}"
        );
        assert_eq!(&event_ids(e), arr(&t["sse_event_ids_received"]), "{what}");
    }
    // Messages and priming flags of every minted event, on the stream(s) that carried it.
    for m in arr(&truth["sse_events_minted"]) {
        for seq in arr(&m["received_on_http_request_seq"]) {
            let e = by_seq[&seq.as_u64().unwrap()];
            let i = e
                .events
                .iter()
                .position(|ev| ev.id.as_deref() == m["event_id"].as_str())
                .unwrap();
            let what = format!("event {} on request {seq}", m["event_id"]);
            assert_eq!(
                e.events[i].priming,
                m["priming"].as_bool().unwrap(),
                "{what}"
            );
            if let Some(msg) = m.get("message") {
                check_event_message(&e.event_messages[i], msg, &what);
            }
        }
    }
    let order: Vec<Value> = events_in_wire_order(&a)
        .iter()
        .map(|(e, i)| {
            e.events[*i]
                .id
                .as_deref()
                .map(|i| Value::String(i.into()))
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_eq!(&order, arr(&truth["sse_event_ids_in_order"]));
    let priming: Vec<Value> = events_in_wire_order(&a)
        .iter()
        .filter(|(e, i)| e.events[*i].priming)
        .map(|(e, i)| Value::String(e.events[*i].id.as_deref().unwrap().into()))
        .collect();
    assert_eq!(&priming, arr(&truth["priming_event_ids"]));

    // The cut POST stream, reset by the relay, and its resumption by a GET.
    let res = &truth["resumption"];
    let cut = by_seq[&res["cut_request"]["http_request_seq"].as_u64().unwrap()];
    assert_eq!(
        id_value(&cut.request_messages[0]),
        res["cut_request"]["jsonrpc_id"]
    );
    assert_eq!(&event_ids(cut), arr(&res["event_ids_received_before_cut"]));
    assert_eq!(cut.end.as_ref().unwrap().outcome, Outcome::Reset);
    assert_eq!(
        cut.end.as_ref().unwrap().closed_by,
        Some(Direction::ServerToClient),
        "the relay sent the RST"
    );
    let resume = by_seq[&res["resume_http_request_seq"].as_u64().unwrap()];
    assert_eq!(
        header(resume, "last-event-id"),
        res["last_event_id_sent"].as_str()
    );
    assert_eq!(
        u64::from(resume.response.as_ref().unwrap().status),
        res["resume_status"].as_u64().unwrap()
    );
    assert_eq!(
        &event_ids(resume),
        arr(&res["event_ids_delivered_after_resume"])
    );
    let last = resume.event_messages.last().unwrap();
    assert_eq!(
        (last[0].kind, id_value(&last[0])),
        (Kind::Response, res["cut_request"]["jsonrpc_id"].clone())
    );
}

#[test]
fn legacy_sse_fallback() {
    let Some((path, truth)) =
        optional("legacy-sse-fallback.pcap", "legacy-sse-fallback.truth.json")
    else {
        return;
    };
    let a = analyse(&path);
    let requests = arr(&truth["http_requests"]);
    assert_eq!(
        a.exchanges.len(),
        truth["http_request_count"].as_u64().unwrap() as usize
    );
    assert_eq!(a.exchanges.len(), requests.len());
    assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
    for (e, t) in a.exchanges.iter().zip(requests) {
        let what = format!("request {}", t["seq"]);
        let r = e.request.as_ref().unwrap();
        assert_eq!(r.method, t["method"].as_str().unwrap(), "{what}");
        assert_eq!(r.target, t["target"].as_str().unwrap(), "{what}");
        check_request_jsonrpc(e, t, &what);
        let head = e
            .response
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no response"));
        assert_eq!(
            u64::from(head.status),
            t["status"].as_u64().unwrap(),
            "{what}"
        );
        assert_eq!(
            response_header(e, "content-type"),
            opt_str(&t["response_content_type"]),
            "{what}"
        );
    }
    let ids: Vec<Value> = a
        .exchanges
        .iter()
        .flat_map(|e| e.request_messages.iter().map(id_value))
        .filter(|v| !v.is_null())
        .collect();
    assert_eq!(&ids, arr(&truth["request_ids"]));

    // The legacy stream: the endpoint event, then the responses, none with an id.
    let fb = &truth["fallback"]["legacy_get"];
    let stream = a
        .exchanges
        .iter()
        .find(|e| {
            e.request
                .as_ref()
                .is_some_and(|r| r.method == fb["method"] && r.target == fb["target"])
        })
        .expect("the legacy GET");
    let want = arr(&truth["sse_events_on_legacy_stream"]);
    assert_eq!(stream.events.len(), want.len());
    for (i, (ev, t)) in stream.events.iter().zip(want).enumerate() {
        assert_eq!(ev.event, t["event"].as_str().unwrap(), "event {i}");
        assert_eq!(ev.id, None, "event {i}");
        if let Some(data) = t.get("data") {
            assert_eq!(ev.data, data.as_str().unwrap(), "event {i}");
        }
        if let Some(msg) = t.get("message") {
            check_event_message(&stream.event_messages[i], msg, &format!("event {i}"));
        }
    }
    assert!(arr(&truth["sse_event_ids"]).is_empty());
    assert_eq!(
        stream.events[0].data,
        truth["fallback"]["endpoint_event_data"].as_str().unwrap()
    );
}

// ------------------------------------------------------------------------------------------------
// The `http` command
// ------------------------------------------------------------------------------------------------

fn mcp_forensics(args: &[&str]) -> (String, String) {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn is_time(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() >= 20 && s.ends_with('Z') && s.contains('T'))
}

fn is_header_list(v: &Value) -> bool {
    v.as_array().is_some_and(|hs| {
        hs.iter().all(|h| {
            h.as_array()
                .is_some_and(|p| p.len() == 2 && p.iter().all(Value::is_string))
        })
    })
}

#[test]
fn http_command_json_shape() {
    let path = "samples/seed-incident-client-leg.pcap";
    let (stdout, _) = mcp_forensics(&["http", "--format", "json", path]);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert!(doc["inputs"].is_array());
    let exchanges = arr(&doc["exchanges"]);
    let a = analyse(path);
    assert_eq!(exchanges.len(), a.exchanges.len());
    for (x, e) in exchanges.iter().zip(&a.exchanges) {
        let what = x["id"].to_string();
        assert_eq!(x["connection"], e.id.conn.number(), "{what}");
        assert_eq!(
            x["method"],
            e.request.as_ref().unwrap().method.as_str(),
            "{what}"
        );
        assert_eq!(
            x["target"],
            e.request.as_ref().unwrap().target.as_str(),
            "{what}"
        );
        match &e.response {
            Some(h) => {
                assert_eq!(x["status"], h.status, "{what}");
                assert!(is_time(&x["response_time"]), "{what}");
                assert!(is_header_list(&x["response_headers"]), "{what}");
            }
            None => {
                assert!(
                    x["status"].is_null(),
                    "{what}: status is null without a response"
                );
                assert!(
                    x.get("response_time").is_some() && x.get("response_headers").is_some(),
                    "{what}"
                );
            }
        }
        assert!(is_time(&x["request_time"]), "{what}");
        assert!(is_header_list(&x["request_headers"]), "{what}");
        let events = arr(&x["sse_events"]);
        assert_eq!(events.len(), e.events.len(), "{what}");
        for (j, ev) in events.iter().zip(&e.events) {
            for key in ["id", "last_event_id", "event", "data", "time", "frame"] {
                assert!(j.get(key).is_some(), "{what}: event without {key}: {j}");
            }
            assert_eq!(
                j["id"],
                ev.id
                    .as_deref()
                    .map(|i| Value::String(i.into()))
                    .unwrap_or(Value::Null)
            );
            assert_eq!(j["last_event_id"], &*ev.last_event_id);
            assert_eq!(j["event"], &*ev.event);
            assert_eq!(j["frame"], ev.mark.frame.frame);
            assert!(is_time(&j["time"]));
        }
        let rpc = &x["jsonrpc"];
        assert!(rpc.is_object(), "{what}: {rpc}");
        assert_eq!(
            arr(&rpc["request"]).len(),
            e.request_messages.len(),
            "{what}"
        );
        assert_eq!(arr(&rpc["events"]).len(), e.events.len(), "{what}");
        for (m, msg) in arr(&rpc["request"]).iter().zip(&e.request_messages) {
            assert_eq!(m["id"], id_value(msg), "{what}: ids keep their JSON type");
        }
    }
    // The first GET stream's 41 event ids, in order.
    let get = exchanges.iter().find(|x| x["method"] == "GET").unwrap();
    let ids: Vec<&str> = arr(&get["sse_events"])
        .iter()
        .map(|ev| ev["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, (1..=41).map(|n| n.to_string()).collect::<Vec<_>>());
}

#[test]
fn bearer_token_is_redacted_unless_asked() {
    let truth = read_truth("samples/python-sdk-healthy.truth.json");
    assert_eq!(truth["secret_that_must_be_redacted"], SECRET);
    let path = "samples/python-sdk-healthy.pcap";
    for args in [vec!["http", path], vec!["http", "--format", "json", path]] {
        let (stdout, stderr) = mcp_forensics(&args);
        assert!(
            !stdout.contains(SECRET) && !stderr.contains(SECRET),
            "{args:?} leaks the token"
        );
        assert!(
            !stdout.contains(&SECRET[5..20]),
            "{args:?} leaks part of the token"
        );
    }
    let (stdout, _) = mcp_forensics(&["http", "--format", "json", path]);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let auth: Vec<&Value> = arr(&doc["exchanges"])
        .iter()
        .flat_map(|x| arr(&x["request_headers"]).iter())
        .filter(|h| h[0].as_str().unwrap().eq_ignore_ascii_case("authorization"))
        .collect();
    assert_eq!(
        auth.len(),
        7,
        "the header is still listed, its value redacted"
    );
    let kept = format!("Bearer [redacted, {} chars]", SECRET.len());
    assert!(auth.iter().all(|h| h[1] == kept.as_str()), "{auth:?}");

    let (stdout, _) = mcp_forensics(&["http", "--format", "json", "--show-secrets", path]);
    assert!(stdout.contains(&format!("Bearer {SECRET}")));
}

/// The `http` command's standard output, whatever its exit status (a lossy capture's is not 0).
fn http_stdout(args: &[&str]) -> String {
    http_stdout_at(args, 400)
}

/// Standard output with the output `columns` wide.
fn http_stdout_at(args: &[&str], columns: usize) -> String {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
        .args(args)
        .env("COLUMNS", columns.to_string())
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// The view is assembled from pieces rendered as each exchange finished: the document is laid
/// out as one pretty-printing of the whole would be, the exchanges are in the order they began,
/// and every row of the table is as wide as its header.
#[test]
fn http_command_assembles_the_view_in_order() {
    for path in [
        "samples/http-basic.pcap",
        "samples/seed-incident-client-leg.pcap",
        "samples/python-sdk-healthy.pcap",
        "samples/legacy-sse-concurrent.pcap",
        "samples/ts-sdk-resumption.pcap",
        "samples/lossy.pcap",
    ] {
        let want: Vec<String> = analyse(path)
            .exchanges
            .iter()
            .map(|e| e.id.to_string())
            .collect();
        assert!(!want.is_empty(), "{path}");
        let json = http_stdout(&["http", "--format", "json", path]);
        let doc: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            serde_json::to_string_pretty(&doc).unwrap() + "\n",
            json,
            "{path}"
        );
        let ids: Vec<&str> = arr(&doc["exchanges"])
            .iter()
            .map(|x| x["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want, "{path}");

        let table = http_stdout(&["http", path]);
        let lines: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
            .collect();
        assert_eq!(lines.len(), want.len() + 4, "{path}");
        let width = lines[0].chars().count();
        assert!(
            lines.iter().all(|l| l.chars().count() == width),
            "{path}: {table}"
        );
        let conns: Vec<&str> = lines[3..lines.len() - 1]
            .iter()
            .map(|l| l.split('┆').nth(1).unwrap().trim())
            .collect();
        let want_conns: Vec<String> = want
            .iter()
            .map(|id| id[3..id.find('#').unwrap()].to_string())
            .collect();
        assert_eq!(conns, want_conns, "{path}");
        // At 80 columns the table leaves columns out, and says which, rather than wrap rows.
        let narrow = http_stdout_at(&["http", path], 80);
        assert!(
            narrow.lines().all(|l| l.chars().count() <= 80),
            "{path}: {narrow}"
        );
        let rows = narrow.lines().filter(|l| l.starts_with('│')).count();
        assert_eq!(rows, want.len() + 1, "{path}: one line per exchange");
        assert!(narrow.contains("(left out to fit 80 columns: "), "{path}");
    }
}

// ------------------------------------------------------------------------------------------------
// `http` and `flows`: --output and NDJSON
// ------------------------------------------------------------------------------------------------

/// What each record type of a view's NDJSON is in its JSON document: the array it is an
/// element of, or the members a `summary` carries.
const VIEW_RECORDS: [(&str, &[(&str, &str)]); 2] = [
    (
        "http",
        &[
            ("exchange", "exchanges"),
            ("anomaly", "anomalies"),
            ("input", "inputs"),
        ],
    ),
    (
        "flows",
        &[("connection", "connections"), ("input", "inputs")],
    ),
];

/// NDJSON of the `http` and `flows` views: every line one JSON object with its `type` and the
/// document's `schema_version`, as many records of each type as the document has elements, the
/// same records in the same order, and one `summary` last holding the rest of the document.
#[test]
fn http_and_flows_ndjson_is_the_document_one_record_a_line() {
    for path in [
        "samples/seed-incident-client-leg.pcap",
        "samples/lossy.pcap",
        // Anomalies: heads cut by the snap length.
        "samples/snaplen-mcp.pcap",
        "samples/mitmproxy-python-sdk.har",
    ] {
        for (command, records) in VIEW_RECORDS {
            if command == "flows" && path.ends_with(".har") {
                continue;
            }
            let doc: Value =
                serde_json::from_str(&http_stdout(&[command, "--format", "json", path])).unwrap();
            let ndjson = http_stdout(&[command, "--format", "ndjson", path]);
            let mut lines: Vec<Value> = ndjson
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            for line in &mut lines {
                let o = line.as_object_mut().unwrap();
                assert_eq!(
                    o.remove("schema_version"),
                    Some(doc["schema_version"].clone())
                );
            }
            let summary = lines.pop().unwrap();
            assert_eq!(summary["type"], "summary", "{command} {path}: summary last");
            let mut counted = 0;
            for (kind, array) in records {
                let of_kind: Vec<Value> = lines
                    .iter()
                    .filter(|l| l["type"] == *kind)
                    .map(|l| {
                        let mut l = l.clone();
                        l.as_object_mut().unwrap().remove("type");
                        l
                    })
                    .collect();
                assert_eq!(&of_kind, arr(&doc[array]), "{command} {path}: {kind}");
                counted += of_kind.len();
            }
            assert_eq!(counted, lines.len(), "{command} {path}: no other type");
            // The summary holds what is left of the document.
            for (key, value) in summary.as_object().unwrap() {
                if key != "type" {
                    assert_eq!(value, &doc[key], "{command} {path}: summary.{key}");
                }
            }
        }
    }
}

/// `-o FILE` writes what standard output would have shown, in the format named by `--format`
/// or else by the file's extension (`.json`, `.ndjson`/`.jsonl`; any other, the table).
#[test]
fn http_and_flows_write_to_an_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = "samples/seed-incident-client-leg.pcap";
    for (command, _) in VIEW_RECORDS {
        for (file, format) in [
            ("v.json", "json"),
            ("v.ndjson", "ndjson"),
            ("v.JSONL", "ndjson"),
            ("v.txt", "table"),
        ] {
            let out = dir.path().join(format!("{command}-{file}"));
            let o = out.to_str().unwrap();
            let stdout = http_stdout(&[command, "-o", o, path]);
            assert_eq!(
                stdout, "",
                "{command} -o {file}: nothing on standard output"
            );
            let expected = http_stdout(&[command, "--format", format, path]);
            let written = std::fs::read_to_string(&out).unwrap();
            assert_eq!(written, expected, "{command} -o {file}");
        }
        // A format asked for wins over the extension.
        let out = dir.path().join(format!("{command}-asked.ndjson"));
        mcp_forensics(&[command, "-f", "json", "-o", out.to_str().unwrap(), path]);
        let written = std::fs::read_to_string(&out).unwrap();
        assert!(serde_json::from_str::<Value>(&written).is_ok(), "{command}");
    }
}

/// A path that cannot be written is refused before the inputs are read, naming the flag.
#[test]
fn http_and_flows_refuse_an_output_that_cannot_be_written() {
    for (command, _) in VIEW_RECORDS {
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
            .args([command, "-o", "/nonexistent-dir/view.json"])
            .arg("samples/seed-incident-client-leg.pcap")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("--output /nonexistent-dir/view.json: cannot write it"),
            "{command}: {stderr}"
        );
    }
}

/// `mcp-forensics http x.pcap | head -1`: the reader goes away after one line, and the
/// command ends quietly with 0 in every format (the output is larger than a pipe holds, so the
/// write after it fails).
#[test]
fn http_and_flows_end_quietly_on_a_closed_pipe() {
    use std::io::BufRead;
    let path = "samples/concurrent-nginx-client-leg.pcap";
    for (command, _) in VIEW_RECORDS {
        for format in ["table", "json", "ndjson"] {
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
                .args([command, "--format", format, path])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut first = String::new();
            let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            stdout.read_line(&mut first).unwrap();
            assert!(!first.is_empty(), "{command} {format}");
            drop(stdout);
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{command} {format}: {stderr}");
            assert!(!stderr.contains("pipe"), "{command} {format}: {stderr}");
        }
    }
}
