//! HAR 1.2 (`log.entries[]`) to HTTP events.
//!
//! Per entry: a [`Request`] (method, path and query of `url`, headers, `postData.text`), a
//! [`ResponseHead`] (status, headers, `event_stream` for `text/event-stream`), the SSE events of
//! an event stream, then a [`ResponseEnd`]; or a `NoResponse` when the response status is 0.
//!
//! Times: `startedDateTime` plus `timings` (`blocked`, `dns`, `connect`, `send`, `wait`,
//! `receive`; -1 means not applicable, `ssl` is included in `connect`) give the request's first
//! byte (after blocked/dns/connect), its last (after send), the response's first byte (after
//! wait) and its end (after receive).
//!
//! SSE: HAR keeps no time per event. Events of `content.text` (base64 when `encoding` says so)
//! are parsed with the capture path's [`SseParser`] and their times spread between the first
//! byte and the end in proportion to their byte offset in the body, marked
//! [`SseEvent::estimated`]. An entry's `_eventSourceMessages` (`time`, `eventName`/`type`,
//! `eventId`/`id`, `data`) are used instead when present: their times are real when absolute.
//!
//! Holes are unknown, never absent: a body the exporter did not keep is [`Body::unknown`]; an
//! event stream with an empty body is unknown unless the same file stores some other event
//! stream's bytes (mitmproxy without a recording addon, and browsers for fetch-based SSE, store
//! nothing for streams); Authorization, Cookie and Set-Cookie are unknown when the file has none
//! at all (sanitized exports strip them).
//!
//! Exchange ids: entries sharing a `connection` value share a synthetic connection (index by
//! start time); without it each entry is its own connection. Marks cite the entry number (from
//! 1, in file order).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::timeline::{Timeline, ms_to_ns, not_before};
use super::{Warnings, open_text, read_all_text};
use mcpf_http::sse::{SseEvent, SseParser, SseStats};
use mcpf_http::{
    Body, ConnKind, ExchangeId, Headers, HttpEvent, HttpSink, Outcome, Request, ResponseEnd,
    ResponseHead,
};
use mcpf_model::Direction;
use mcpf_model::{Capabilities, ConnId, HeaderCoverage, SourceFormat};
use mcpf_model::{FrameRef, InputId, Mark, Timestamp};
use mcpf_model::{InputReport, OpenError};

/// Header fields a sanitized export removes.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "cookie", "set-cookie"];

/// Reads a HAR file (plain or gzip) into `sink`.
pub fn read_har(
    path: &str,
    input: InputId,
    sink: &mut impl HttpSink,
) -> Result<(InputReport, Capabilities), OpenError> {
    let mut text_input = open_text(path)?;
    let text = read_all_text(path, &mut text_input)?;
    let (mut report, caps) = read_har_text(path, &text, input, sink)?;
    report.bytes = text_input
        .bytes_read
        .load(std::sync::atomic::Ordering::Relaxed);
    if text_input.gzip {
        report.format.push_str("+gzip");
    }
    Ok((report, caps))
}

/// Reads HAR text already in memory; `name` is used in reports and errors.
pub fn read_har_text(
    name: &str,
    text: &str,
    input: InputId,
    sink: &mut impl HttpSink,
) -> Result<(InputReport, Capabilities), OpenError> {
    let (report, caps, timeline) = parse(name, text, input)?;
    timeline.emit(sink);
    Ok((report, caps))
}

#[derive(Deserialize)]
struct Top<'a> {
    #[serde(borrow)]
    log: Option<Log<'a>>,
}

#[derive(Deserialize)]
struct Log<'a> {
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    creator: Option<Value>,
    #[serde(borrow)]
    entries: Option<Vec<&'a RawValue>>,
}

/// A response body as the file has it.
enum Content {
    Known(Vec<u8>),
    Unknown,
}

struct Resp {
    status: u16,
    reason: String,
    version: u8,
    headers: Headers,
    content: Content,
    /// `content.text` was present but empty.
    empty_text: bool,
    decode_error: Option<String>,
    /// Bytes on the wire (`bodySize`), when given.
    wire_size: Option<u64>,
    /// Decoded size (`content.size`), when given.
    size: Option<u64>,
    event_stream: bool,
}

struct Entry {
    number: u64,
    req_first: Timestamp,
    req_last: Timestamp,
    head: Timestamp,
    end: Timestamp,
    method: String,
    target: String,
    version: u8,
    req_headers: Headers,
    req_body: Body,
    server: SocketAddr,
    server_known: bool,
    connection: Option<String>,
    response: Option<Resp>,
    error: Option<String>,
    messages: Option<Vec<Value>>,
}

fn parse(
    name: &str,
    text: &str,
    input: InputId,
) -> Result<(InputReport, Capabilities, Timeline), OpenError> {
    let err = |message: String| OpenError {
        path: name.to_string(),
        message,
        hint: Some(
            "a HAR file is one JSON object with log.entries (HAR 1.2), as written by browsers' \
             \"Save all as HAR\" or mitmproxy's hardump"
                .into(),
        ),
    };
    let top: Top<'_> =
        serde_json::from_str(text).map_err(|e| err(format!("is not a valid HAR file: {e}")))?;
    let log = top
        .log
        .ok_or_else(|| err("is JSON but has no \"log\" object, so it is not a HAR file".into()))?;
    let raw_entries = log
        .entries
        .ok_or_else(|| err("has no log.entries, so it is not a HAR file".into()))?;

    let mut warnings = Warnings::new(20);
    let mut report = InputReport {
        path: name.to_string(),
        format: "har".into(),
        ..InputReport::default()
    };
    let version = log.version.as_ref().and_then(Value::as_str).unwrap_or("");
    if !version.is_empty() && !version.starts_with("1.") {
        warnings.push(format!("HAR version {version:?}: read as HAR 1.2"));
    }
    let producer = log.creator.as_ref().and_then(|c| {
        let n = c.get("name").and_then(Value::as_str)?;
        Some(match c.get("version").and_then(Value::as_str) {
            Some(v) if !v.is_empty() => format!("{n} {v}"),
            _ => n.to_string(),
        })
    });
    let browser_export = producer
        .as_deref()
        .is_some_and(|p| p.starts_with("WebInspector") || p.starts_with("Firefox"));

    let mut entries = Vec::new();
    let mut http2 = 0u64;
    for (i, raw) in raw_entries.iter().enumerate() {
        let number = i as u64 + 1;
        report.packets += 1;
        match serde_json::from_str::<Value>(raw.get())
            .map_err(|e| e.to_string())
            .and_then(|v| entry(number, &v, &mut http2))
        {
            Ok(e) => entries.push(e),
            Err(why) => {
                *report
                    .skipped
                    .entry("malformed HAR entries".into())
                    .or_default() += 1;
                warnings.push(format!("entry {number} skipped: {why}"));
            }
        }
    }
    if http2 > 0 {
        warnings.push(format!(
            "{http2} entries used HTTP/2 or HTTP/3: read with HTTP/1.1 semantics (pseudo-headers dropped)"
        ));
    }

    // What the writer keeps, judged over the whole file.
    let credentials_seen = entries.iter().any(|e| {
        CREDENTIAL_HEADERS
            .iter()
            .any(|h| e.req_headers.has(h) || e.response.as_ref().is_some_and(|r| r.headers.has(h)))
    });
    let stores_streams = entries.iter().any(|e| {
        e.response.as_ref().is_some_and(|r| {
            r.event_stream && matches!(&r.content, Content::Known(b) if !b.is_empty())
        }) || e.messages.as_ref().is_some_and(|m| !m.is_empty())
    });

    // Synthetic connections: by `connection` when given, else one per entry.
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (entries[i].req_first, entries[i].number));
    let mut conns: HashMap<String, (u64, u32)> = HashMap::new();
    let mut next_conn = 0u64;
    let mut ids = vec![
        ExchangeId {
            conn: ConnId::default(),
            index: 0
        };
        entries.len()
    ];
    for &i in &order {
        let id = match &entries[i].connection {
            Some(c) => {
                let slot = conns.entry(c.clone()).or_insert_with(|| {
                    next_conn += 1;
                    (next_conn - 1, 0)
                });
                let id = ExchangeId {
                    conn: ConnId::recorded(input, slot.0),
                    index: slot.1,
                };
                slot.1 += 1;
                id
            }
            None => {
                next_conn += 1;
                ExchangeId {
                    conn: ConnId::recorded(input, next_conn - 1),
                    index: 0,
                }
            }
        };
        ids[i] = id;
    }

    let mut caps = Capabilities::new(SourceFormat::Har);
    caps.producer = producer;
    caps.connections = !conns.is_empty() && entries.iter().all(|e| e.connection.is_some());
    caps.server_addresses = !entries.is_empty() && entries.iter().all(|e| e.server_known);
    caps.client_addresses = false;
    caps.response_end_known = true;
    if !credentials_seen {
        let except: Vec<String> = CREDENTIAL_HEADERS.iter().map(|s| s.to_string()).collect();
        caps.request_headers = HeaderCoverage::All {
            except: except.clone(),
        };
        caps.response_headers = HeaderCoverage::All { except };
        caps.sanitized = browser_export;
    }

    let mut timeline = Timeline::default();
    let client_unknown = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
    let mut started = std::collections::HashSet::new();
    for &i in &order {
        if started.insert(ids[i].conn) {
            timeline.push(
                entries[i].req_first,
                HttpEvent::ConnectionStart {
                    conn: ids[i].conn,
                    client: client_unknown,
                    server: entries[i].server,
                    mark: Mark {
                        time: entries[i].req_first,
                        frame: FrameRef::new(input, entries[i].number),
                    },
                },
            );
        }
    }
    let mut conn_ends: HashMap<ConnId, (SocketAddr, SocketAddr, Mark)> = HashMap::new();
    let mut clamped_messages = 0u64;
    let mut unknown_streams = 0u64;
    let mut empty_streams_unknown = 0u64;
    let mut unknown_plain_bodies = 0u64;
    for &i in &order {
        let e = &entries[i];
        let id = ids[i];
        let frame = FrameRef::new(input, e.number);
        let mark = |time: Timestamp| Mark { time, frame };
        caps.exchanges += 1;
        let client = client_unknown;
        caps.request_bodies.add(!e.req_body.unknown);
        timeline.push(
            e.req_first,
            HttpEvent::Request(Box::new(Request {
                exchange: id,
                client,
                server: e.server,
                method: e.method.clone(),
                target: e.target.clone(),
                version: e.version,
                headers: e.req_headers.clone(),
                body: e.req_body.clone(),
                first: mark(e.req_first),
                last: mark(e.req_last),
                outcome: Outcome::Complete,
            })),
        );
        let (err_outcome, err_by) = e
            .error
            .as_deref()
            .map(error_outcome)
            .unwrap_or((Outcome::Complete, None));
        let last_time;
        match &e.response {
            None => {
                let outcome = if err_outcome == Outcome::Complete {
                    Outcome::ClosedEarly
                } else {
                    err_outcome
                };
                last_time = e.end;
                timeline.push(
                    e.end,
                    HttpEvent::NoResponse {
                        exchange: id,
                        outcome,
                        closed_by: err_by,
                        mark: mark(e.end),
                    },
                );
            }
            Some(r) => {
                timeline.push(
                    e.head,
                    HttpEvent::ResponseHead(Box::new(ResponseHead {
                        exchange: id,
                        status: r.status,
                        reason: r.reason.clone(),
                        version: r.version,
                        headers: r.headers.clone(),
                        interim: Vec::new(),
                        first: mark(e.head),
                        event_stream: r.event_stream,
                    })),
                );
                // An empty event stream is a hole when this writer stores no stream bytes.
                let mut known = matches!(r.content, Content::Known(_));
                if r.event_stream && r.empty_text && !stores_streams {
                    known = false;
                    empty_streams_unknown += 1;
                }
                let mut body = Body {
                    wire_bytes: r.wire_size.or(r.size).unwrap_or(0),
                    decoded_bytes: r.size.unwrap_or(0),
                    content_encoding: r.headers.get("content-encoding").map(str::to_string),
                    chunked: r.headers.has_token("transfer-encoding", "chunked"),
                    decode_error: r.decode_error.clone(),
                    unknown: !known,
                    ..Body::default()
                };
                let mut sse = None;
                if r.event_stream {
                    let events = match (&e.messages, &r.content) {
                        (Some(msgs), _) if !msgs.is_empty() || !known => {
                            let (events, clamped) = messages_to_events(msgs, e.head, e.end, frame);
                            clamped_messages += clamped;
                            Some(events)
                        }
                        (_, Content::Known(bytes)) if known => {
                            body.decoded_bytes = bytes.len() as u64;
                            let (events, stats) = spread_events(bytes, e.head, e.end, frame);
                            sse = Some(stats);
                            Some(events)
                        }
                        _ => None,
                    };
                    caps.sse_streams.add(events.is_some());
                    match events {
                        Some(events) => {
                            if sse.is_none() {
                                sse = Some(SseStats {
                                    events: events.len() as u64,
                                    ..SseStats::default()
                                });
                            }
                            if events.iter().any(|ev| ev.estimated) {
                                caps.sse_times_estimated = true;
                            }
                            for ev in events {
                                timeline.push(
                                    ev.mark.time,
                                    HttpEvent::SseEvent {
                                        exchange: id,
                                        event: ev,
                                    },
                                );
                            }
                        }
                        None => unknown_streams += 1,
                    }
                } else if let Content::Known(bytes) = &r.content {
                    body.decoded_bytes = bytes.len() as u64;
                    if r.wire_size.is_none() && r.size.is_none() {
                        body.wire_bytes = bytes.len() as u64;
                    }
                    body.data = bytes.clone();
                }
                caps.response_bodies.add(!body.unknown);
                if body.unknown && !r.event_stream {
                    unknown_plain_bodies += 1;
                }
                last_time = e.end;
                timeline.push(
                    e.end,
                    HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                        exchange: id,
                        body,
                        last: mark(e.end),
                        outcome: err_outcome,
                        closed_by: err_by,
                        sse,
                    })),
                );
            }
        }
        let slot = conn_ends
            .entry(id.conn)
            .or_insert((client, e.server, mark(last_time)));
        if last_time >= slot.2.time {
            slot.2 = mark(last_time);
        }
    }
    let mut ends: Vec<(ConnId, (SocketAddr, SocketAddr, Mark))> = conn_ends.into_iter().collect();
    ends.sort_by_key(|(c, _)| *c);
    for (conn, (client, server, mark)) in ends {
        timeline.push(
            mark.time,
            HttpEvent::ConnectionEnd {
                conn,
                client,
                server,
                kind: ConnKind::Http,
                mark,
            },
        );
    }
    if clamped_messages > 0 {
        warnings.push(format!(
            "{clamped_messages} _eventSourceMessages times fell outside their response (first byte to end) and were moved into it"
        ));
    }

    // What this HAR lacks, in sentences.
    let lacks = &mut caps.lacks;
    lacks.push(
        "TCP-level evidence (packets, retransmissions, gaps, resets): a HAR records HTTP messages only"
            .into(),
    );
    lacks.push("client addresses and ports: a HAR records only the server's IP address".into());
    if !caps.connections {
        lacks.push(
            "which exchanges shared a TCP connection (no \"connection\" field): each entry is counted as its own connection"
                .into(),
        );
    }
    if caps.request_bodies.unknown > 0 {
        lacks.push(format!(
            "{} of {} request bodies (not stored by the exporter): the JSON-RPC messages they carried are unknown",
            caps.request_bodies.unknown,
            caps.request_bodies.total()
        ));
    }
    if unknown_plain_bodies > 0 {
        lacks.push(format!(
            "{unknown_plain_bodies} response bodies (not stored or removed by the exporter): the JSON-RPC messages they carried are unknown"
        ));
    }
    if unknown_streams > 0 {
        let why = if empty_streams_unknown > 0 {
            " (stored empty: exporters such as mitmproxy without a recording addon, or a browser for fetch-based SSE, keep nothing of a streamed body)"
        } else {
            " (not stored by the exporter)"
        };
        lacks.push(format!(
            "the SSE events of {unknown_streams} of {} event streams{why}: replays, skipped ranges and duplicate events on them are not determinable",
            caps.sse_streams.total()
        ));
    }
    if caps.sse_times_estimated {
        lacks.push(
            "the time of each SSE event: a HAR keeps none, so event times are spread between the response's first byte and its end (estimated)"
                .into(),
        );
    }
    if !credentials_seen && !entries.is_empty() {
        lacks.push(format!(
            "Authorization, Cookie and Set-Cookie headers: none in the whole file, so {}; treated as unknown, not absent",
            if caps.sanitized {
                "the browser exported it sanitized (its default)"
            } else {
                "they were stripped by the exporter or never sent"
            }
        ));
    }
    if !caps.server_addresses {
        lacks.push("server IP addresses of some entries (no serverIPAddress)".into());
    }
    report.warnings = warnings.finish("warnings");
    Ok((report, caps, timeline))
}

/// One entry, or why it cannot be read.
fn entry(number: u64, v: &Value, http2: &mut u64) -> Result<Entry, String> {
    let obj = v.as_object().ok_or("not a JSON object")?;
    let started = obj
        .get("startedDateTime")
        .and_then(Value::as_str)
        .ok_or("no startedDateTime")?;
    let started = Timestamp::parse_rfc3339(started)
        .ok_or_else(|| format!("startedDateTime {started:?} is not an ISO 8601 date-time"))?;
    let req = obj
        .get("request")
        .and_then(Value::as_object)
        .ok_or("no request object")?;
    let method = req
        .get("method")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .ok_or("request without a method")?
        .to_string();
    let url = req
        .get("url")
        .and_then(Value::as_str)
        .ok_or("request without a url")?;
    let (scheme, authority, target) = split_url(url);

    // Times.
    let timings = obj.get("timings").and_then(Value::as_object);
    let t = |k: &str| {
        ms_to_ns(
            timings
                .and_then(|t| t.get(k))
                .and_then(as_f64)
                .unwrap_or(0.0),
        )
    };
    let total = ms_to_ns(obj.get("time").and_then(as_f64).unwrap_or(0.0));
    let req_first = started.add_nanos(t("blocked") + t("dns") + t("connect"));
    let req_last = req_first.add_nanos(t("send"));
    let head = req_last.add_nanos(t("wait"));
    let mut end = head.add_nanos(t("receive"));
    if timings.is_none() {
        end = started.add_nanos(total);
    }
    let end = not_before(end, head);

    let req_version = req.get("httpVersion").and_then(Value::as_str).unwrap_or("");
    let (version, is_h2) = http_version(req_version);
    if is_h2 {
        *http2 += 1;
    }
    let req_headers = headers(req.get("headers"));

    // Request body: postData.text; absent means unknown unless the request evidently had none.
    let post = req.get("postData").and_then(Value::as_object);
    let body_size = req.get("bodySize").and_then(as_i64);
    let req_body = match post.and_then(|p| p.get("text")).and_then(Value::as_str) {
        Some(text) => {
            let base64 = post
                .and_then(|p| p.get("encoding"))
                .and_then(Value::as_str)
                .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
            let (data, decode_error) = decode_text(text, base64);
            Body {
                wire_bytes: body_size
                    .filter(|n| *n >= 0)
                    .map(|n| n as u64)
                    .unwrap_or(data.len() as u64),
                decoded_bytes: data.len() as u64,
                content_encoding: req_headers.get("content-encoding").map(str::to_string),
                chunked: req_headers.has_token("transfer-encoding", "chunked"),
                decode_error,
                data,
                ..Body::default()
            }
        }
        None => {
            let bodiless = matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS" | "TRACE")
                && body_size.is_none_or(|n| n <= 0);
            Body {
                wire_bytes: body_size.filter(|n| *n > 0).map(|n| n as u64).unwrap_or(0),
                unknown: !(body_size == Some(0) || bodiless),
                ..Body::default()
            }
        }
    };

    let server_ip = obj
        .get("serverIPAddress")
        .and_then(Value::as_str)
        .and_then(parse_ip)
        .or_else(|| host_ip(authority));
    let port = authority_port(authority).unwrap_or(match scheme {
        Some(s) if s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("wss") => 443,
        Some(_) => 80,
        None => 0,
    });
    let server = SocketAddr::new(server_ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), port);
    let connection = obj.get("connection").and_then(|c| match c {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    });

    let resp = obj.get("response").and_then(Value::as_object);
    let status = resp
        .and_then(|r| r.get("status"))
        .and_then(as_i64)
        .unwrap_or(0);
    let error = obj
        .get("_error")
        .or_else(|| resp.and_then(|r| r.get("_error")))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let response = match resp {
        Some(r) if status > 0 => {
            let status =
                u16::try_from(status).map_err(|_| format!("status {status} out of range"))?;
            let headers = headers(r.get("headers"));
            let content = r.get("content").and_then(Value::as_object);
            let mime = content
                .and_then(|c| c.get("mimeType"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let media = headers.media_type().unwrap_or_else(|| {
                mime.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            });
            let event_stream = media == "text/event-stream";
            let size = content
                .and_then(|c| c.get("size"))
                .and_then(as_i64)
                .filter(|n| *n >= 0)
                .map(|n| n as u64);
            let wire_size = r
                .get("bodySize")
                .and_then(as_i64)
                .filter(|n| *n >= 0)
                .map(|n| n as u64);
            let text = content.and_then(|c| c.get("text")).and_then(Value::as_str);
            let base64 = content
                .and_then(|c| c.get("encoding"))
                .and_then(Value::as_str)
                .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
            let (content, decode_error, empty_text) = match text {
                Some(t) => {
                    let (data, err) = decode_text(t, base64);
                    if err.is_some() {
                        (Content::Unknown, err, false)
                    } else {
                        (Content::Known(data), None, t.is_empty())
                    }
                }
                // No text: an empty body when the sizes say so (not for event streams, which
                // exporters leave empty when they did not keep them).
                None if !event_stream
                    && size.unwrap_or(0) == 0
                    && wire_size.unwrap_or(0) == 0
                    && (size.is_some() || wire_size.is_some()) =>
                {
                    (Content::Known(Vec::new()), None, false)
                }
                None if matches!(status, 204 | 304) || (100..200).contains(&status) => {
                    (Content::Known(Vec::new()), None, false)
                }
                None => (Content::Unknown, None, false),
            };
            let (rversion, _) = http_version(
                r.get("httpVersion")
                    .and_then(Value::as_str)
                    .unwrap_or(req_version),
            );
            Some(Resp {
                status,
                reason: r
                    .get("statusText")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                version: rversion,
                headers,
                content,
                empty_text,
                decode_error,
                wire_size,
                size,
                event_stream,
            })
        }
        _ => None,
    };
    let messages = obj
        .get("_eventSourceMessages")
        .or_else(|| resp.and_then(|r| r.get("_eventSourceMessages")))
        .and_then(Value::as_array)
        .cloned();

    Ok(Entry {
        number,
        req_first,
        req_last,
        head,
        end,
        method,
        target,
        version,
        req_headers,
        req_body,
        server,
        server_known: server_ip.is_some(),
        connection,
        response,
        error,
        messages,
    })
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// `HTTP/1.0` → 0; anything else → 1, and whether it was HTTP/2 or /3.
fn http_version(v: &str) -> (u8, bool) {
    let v = v.trim().to_ascii_uppercase();
    if v == "HTTP/1.0" {
        (0, false)
    } else {
        (
            1,
            v.starts_with("HTTP/2") || v.starts_with("HTTP/3") || v == "H2" || v == "H3",
        )
    }
}

/// HAR `headers` (`[{name, value}]`) in order; HTTP/2 pseudo-headers are dropped.
fn headers(v: Option<&Value>) -> Headers {
    let mut out = Vec::new();
    for h in v.and_then(Value::as_array).into_iter().flatten() {
        let (Some(name), Some(value)) = (
            h.get("name").and_then(Value::as_str),
            h.get("value").and_then(Value::as_str),
        ) else {
            continue;
        };
        if name.starts_with(':') {
            continue;
        }
        out.push((name.to_string(), value.to_string()));
    }
    Headers(out)
}

fn decode_text(text: &str, base64: bool) -> (Vec<u8>, Option<String>) {
    if !base64 {
        return (text.as_bytes().to_vec(), None);
    }
    let cleaned: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
        Ok(b) => (b, None),
        Err(e) => (
            Vec::new(),
            Some(format!("content.text is not valid base64: {e}")),
        ),
    }
}

/// `(scheme, authority, path?query)` of a URL; the fragment is dropped, an empty path is `/`.
fn split_url(url: &str) -> (Option<&str>, &str, String) {
    let (scheme, rest) = match url.find("://") {
        Some(i)
            if url[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (Some(&url[..i]), &url[i + 3..])
        }
        _ => (None, ""),
    };
    let (authority, path) = if scheme.is_some() {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    } else {
        ("", url)
    };
    let path = path.split('#').next().unwrap_or("");
    let target = if path.is_empty() || path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    (scheme, authority, target)
}

fn host_port(authority: &str) -> (&str, Option<&str>) {
    let hostport = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(rest) = hostport.strip_prefix('[') {
        let close = rest.find(']').unwrap_or(rest.len());
        let port = rest[close..].strip_prefix("]:");
        return (&rest[..close], port);
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    }
}

fn authority_port(authority: &str) -> Option<u16> {
    host_port(authority).1.and_then(|p| p.parse().ok())
}

fn host_ip(authority: &str) -> Option<IpAddr> {
    host_port(authority).0.parse().ok()
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_start_matches('[');
    let s = s.split(']').next().unwrap_or(s);
    let s = s.split('%').next().unwrap_or(s);
    s.parse().ok()
}

/// How a HAR `_error` (Chrome `net::ERR_*`, mitmproxy messages) ended the exchange.
fn error_outcome(err: &str) -> (Outcome, Option<Direction>) {
    let e = err.to_ascii_lowercase();
    if e.contains("reset") {
        (Outcome::Reset, None)
    } else if e.contains("abort") || e.contains("cancel") || e.contains("client") {
        (Outcome::ClosedEarly, Some(Direction::ClientToServer))
    } else if e.contains("server") || e.contains("empty_response") || e.contains("closed") {
        (Outcome::ClosedEarly, Some(Direction::ServerToClient))
    } else {
        (Outcome::ClosedEarly, None)
    }
}

/// Parses an event-stream body with the capture path's parser, line by line, giving each line
/// a time between `head` and `end` in proportion to its end offset: events are marked estimated.
fn spread_events(
    body: &[u8],
    head: Timestamp,
    end: Timestamp,
    frame: FrameRef,
) -> (Vec<SseEvent>, SseStats) {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let span = i128::from(end.0.saturating_sub(head.0).max(0));
    let total = body.len().max(1) as i128;
    let mut pos = 0;
    while pos < body.len() {
        let stop = match body[pos..].iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) => {
                let mut s = pos + i + 1;
                if body[pos + i] == b'\r' && body.get(s) == Some(&b'\n') {
                    s += 1;
                }
                s
            }
            None => body.len(),
        };
        let offset = (span * stop as i128 / total) as i64;
        let mark = Mark {
            time: head.add_nanos(offset),
            frame,
        };
        parser.feed(&body[pos..stop], mark, &mut out);
        pos = stop;
    }
    parser.finish();
    for ev in &mut out {
        ev.estimated = true;
    }
    (out, parser.stats)
}

/// `_eventSourceMessages` to events; returns them and how many times had to be moved into the
/// response's span. Absolute times (Unix seconds or milliseconds, ISO 8601) are kept; relative
/// ones (a monotonic clock) are anchored at the first byte and marked estimated.
fn messages_to_events(
    msgs: &[Value],
    head: Timestamp,
    end: Timestamp,
    frame: FrameRef,
) -> (Vec<SseEvent>, u64) {
    let raw_times: Vec<Option<(f64, bool)>> = msgs
        .iter()
        .map(|m| {
            m.get("time")
                .or_else(|| m.get("timestamp"))
                .and_then(message_time)
        })
        .collect();
    let first_relative = raw_times
        .iter()
        .flatten()
        .find(|(_, absolute)| !absolute)
        .map(|(t, _)| *t);
    let mut last_event_id = String::new();
    let mut out = Vec::new();
    let mut clamped = 0;
    let mut prev = head;
    for (i, m) in msgs.iter().enumerate() {
        let text = |keys: &[&str]| {
            keys.iter().find_map(|k| match m.get(*k) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            })
        };
        let data = match m.get("data") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let event = text(&["eventName", "event", "type"])
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "message".into());
        // DevTools reports "no id" as an empty string: read it so.
        let id =
            text(&["eventId", "id", "lastEventId"]).filter(|s| !s.is_empty() && !s.contains('\0'));
        if let Some(id) = &id {
            last_event_id = id.clone();
        }
        let (time, estimated) = match raw_times[i] {
            Some((t, true)) => (super::timeline::epoch_scaled(t, 1_000_000_000), false),
            Some((t, false)) => (
                head.add_nanos(super::timeline::secs_to_ns(t - first_relative.unwrap_or(t))),
                true,
            ),
            None => (prev, true),
        };
        let bounded = time.clamp(prev, end.max(prev));
        if bounded != time && !estimated {
            clamped += 1;
        }
        prev = bounded;
        let priming = id.is_some() && data.is_empty();
        out.push(SseEvent {
            index: i as u32,
            id: id.map(Into::into),
            last_event_id: last_event_id.as_str().into(),
            event: event.into(),
            data,
            retry: None,
            priming,
            dispatched: true,
            mark: Mark {
                time: bounded,
                frame,
            },
            after_gap: false,
            truncated: false,
            estimated,
        });
    }
    (out, clamped)
}

/// A message time as `(value, absolute)`: absolute values are Unix seconds.
fn message_time(v: &Value) -> Option<(f64, bool)> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(n) => n,
            Err(_) => {
                let t = Timestamp::parse_rfc3339(s)?;
                return Some((t.0 as f64 / 1e9, true));
            }
        },
        _ => return None,
    };
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    Some(if n >= 1e11 {
        // Milliseconds: whole seconds and the rest, so no precision is lost on the way.
        ((n / 1000.0).trunc() + (n % 1000.0) / 1000.0, true)
    } else if n >= 1e8 {
        (n, true)
    } else {
        (n, false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_target_and_port() {
        assert_eq!(
            split_url("http://127.0.0.1:3100/mcp?x=1#frag"),
            (Some("http"), "127.0.0.1:3100", "/mcp?x=1".to_string())
        );
        assert_eq!(
            split_url("https://example.com"),
            (Some("https"), "example.com", "/".into())
        );
        assert_eq!(split_url("http://h?q"), (Some("http"), "h", "/?q".into()));
        assert_eq!(authority_port("[::1]:8443"), Some(8443));
        assert_eq!(host_ip("[::1]:8443"), Some("::1".parse().unwrap()));
        assert_eq!(
            host_ip("user:pw@10.0.0.1:80"),
            Some("10.0.0.1".parse().unwrap())
        );
        assert_eq!(parse_ip("[fe80::1%eth0]"), Some("fe80::1".parse().unwrap()));
    }

    #[test]
    fn errors_map_to_outcomes() {
        assert_eq!(error_outcome("net::ERR_CONNECTION_RESET").0, Outcome::Reset);
        assert_eq!(
            error_outcome("net::ERR_ABORTED"),
            (Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(
            error_outcome("Server disconnected."),
            (Outcome::ClosedEarly, Some(Direction::ServerToClient))
        );
    }

    #[test]
    fn spread_events_by_byte_offset() {
        let body = b"id: 1\r\ndata: a\r\n\r\nid: 2\r\ndata: b\r\n\r\n";
        let frame = FrameRef::new(0, 1);
        let (ev, stats) = spread_events(body, Timestamp(1_000), Timestamp(2_000), frame);
        assert_eq!(ev.len(), 2);
        assert_eq!(stats.events, 2);
        assert!(ev.iter().all(|e| e.estimated));
        assert_eq!(ev[0].mark.time, Timestamp(1_500));
        assert_eq!(ev[1].mark.time, Timestamp(2_000));
    }

    #[test]
    fn message_times_absolute_and_relative() {
        assert_eq!(
            message_time(&serde_json::json!(1_796_013_365.5)),
            Some((1_796_013_365.5, true))
        );
        assert_eq!(
            message_time(&serde_json::json!(1_796_013_365_500u64)),
            Some((1_796_013_365.5, true))
        );
        assert_eq!(message_time(&serde_json::json!(12.5)), Some((12.5, false)));
        assert!(
            message_time(&serde_json::json!("2026-11-30T04:36:05Z"))
                .unwrap()
                .1
        );
    }
}
