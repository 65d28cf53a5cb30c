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
//! Exchange ids: entries sharing a `connection` value share a connection (numbered by
//! start time); without it each entry is its own connection. Marks cite the entry number (from
//! 1, in file order).
//!
//! [`Request`]: mcpf_http::Request
//! [`ResponseHead`]: mcpf_http::ResponseHead
//! [`ResponseEnd`]: mcpf_http::ResponseEnd
//! [`Body::unknown`]: mcpf_http::Body::unknown
//! [`SseParser`]: mcpf_http::sse::SseParser
//! [`SseEvent::estimated`]: mcpf_http::sse::SseEvent::estimated

mod bodies;
mod entries;
mod exchanges;
mod headers;
mod sse;
mod timings;
mod url;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::connections::{Connections, push_starts};
use crate::timeline::Timeline;
use crate::{Warnings, open_text, read_all_text};
use mcpf_http::{ExchangeId, HttpSink};
use mcpf_model::{Capabilities, ConnId, HeaderCoverage, SourceFormat};
use mcpf_model::{FrameRef, InputId, Mark};
use mcpf_model::{InputReport, OpenError};

use self::bodies::Content;
use self::entries::{Entry, EntryError, entry};
use self::exchanges::{Exchanges, Holes};
use self::headers::CREDENTIAL_HEADERS;

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

/// What the writer keeps, judged over the whole file.
struct Writer {
    /// `creator`: name and version.
    producer: Option<String>,
    /// A browser's export, sanitized by default.
    browser: bool,
    credentials_seen: bool,
    /// Some entry keeps the bytes or the messages of an event stream.
    stores_streams: bool,
}

/// The report, capabilities and timeline of a HAR document.
fn parse(
    name: &str,
    text: &str,
    input: InputId,
) -> Result<(InputReport, Capabilities, Timeline), OpenError> {
    let (log, raw_entries) = document(name, text)?;
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
    let entries = read_entries(&raw_entries, &mut report, &mut warnings);
    let writer = judge(&log, &entries);

    // Connections: by `connection` when given, else one per entry.
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (entries[i].req_first, entries[i].number));
    let mut conns = Connections::new(input);
    let mut ids = vec![
        ExchangeId {
            conn: ConnId::default(),
            index: 0
        };
        entries.len()
    ];
    for &i in &order {
        ids[i] = conns.exchange(entries[i].connection.as_deref(), false);
    }
    let mut caps = capabilities(&entries, &writer, conns.any_named());

    let mut timeline = Timeline::default();
    push_starts(
        &mut timeline,
        order.iter().map(|&i| {
            let e = &entries[i];
            let mark = Mark {
                time: e.req_first,
                frame: FrameRef::new(input, e.number),
            };
            (ids[i].conn, CLIENT_UNKNOWN, e.server, mark)
        }),
    );
    let mut exchanges = Exchanges::new(&mut timeline, &mut caps, input, writer.stores_streams);
    for &i in &order {
        exchanges.entry(&entries[i], ids[i]);
    }
    let holes = exchanges.finish();
    if holes.clamped_messages > 0 {
        warnings.push(format!(
            "{} _eventSourceMessages times fell outside their response (first byte to end) and were moved into it",
            holes.clamped_messages
        ));
    }
    lacks(&mut caps, &holes, &writer, !entries.is_empty());
    report.warnings = warnings.finish("warnings");
    Ok((report, caps, timeline))
}

/// HAR records no client address.
const CLIENT_UNKNOWN: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// The `log` object of a HAR document and its `entries`, or why the text is not one.
fn document<'a>(name: &str, text: &'a str) -> Result<(Log<'a>, Vec<&'a RawValue>), OpenError> {
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
    let mut log = top
        .log
        .ok_or_else(|| err("is JSON but has no \"log\" object, so it is not a HAR file".into()))?;
    let entries = log
        .entries
        .take()
        .ok_or_else(|| err("has no log.entries, so it is not a HAR file".into()))?;
    Ok((log, entries))
}

/// The entries that can be read; one that cannot is counted and named in the warnings.
fn read_entries(
    raw_entries: &[&RawValue],
    report: &mut InputReport,
    warnings: &mut Warnings,
) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut http2 = 0u64;
    for (i, raw) in raw_entries.iter().enumerate() {
        let number = i as u64 + 1;
        report.packets += 1;
        match serde_json::from_str::<Value>(raw.get())
            .map_err(EntryError::from)
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
    entries
}

fn judge(log: &Log<'_>, entries: &[Entry]) -> Writer {
    let producer = log.creator.as_ref().and_then(|c| {
        let n = c.get("name").and_then(Value::as_str)?;
        Some(match c.get("version").and_then(Value::as_str) {
            Some(v) if !v.is_empty() => format!("{n} {v}"),
            _ => n.to_string(),
        })
    });
    let browser = producer
        .as_deref()
        .is_some_and(|p| p.starts_with("WebInspector") || p.starts_with("Firefox"));
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
    Writer {
        producer,
        browser,
        credentials_seen,
        stores_streams,
    }
}

fn capabilities(entries: &[Entry], writer: &Writer, any_named: bool) -> Capabilities {
    let mut caps = Capabilities::new(SourceFormat::Har);
    caps.producer = writer.producer.clone();
    caps.connections = any_named && entries.iter().all(|e| e.connection.is_some());
    caps.server_addresses = !entries.is_empty() && entries.iter().all(|e| e.server_known);
    caps.client_addresses = false;
    caps.response_end_known = true;
    if !writer.credentials_seen {
        let except: Vec<String> = CREDENTIAL_HEADERS.iter().map(|s| s.to_string()).collect();
        caps.request_headers = HeaderCoverage::All {
            except: except.clone(),
        };
        caps.response_headers = HeaderCoverage::All { except };
        caps.sanitized = writer.browser;
    }
    caps
}

/// What this HAR lacks, in sentences.
fn lacks(caps: &mut Capabilities, holes: &Holes, writer: &Writer, any_entries: bool) {
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
    if holes.unknown_plain_bodies > 0 {
        lacks.push(format!(
            "{} response bodies (not stored or removed by the exporter): the JSON-RPC messages they carried are unknown",
            holes.unknown_plain_bodies
        ));
    }
    if holes.unknown_streams > 0 {
        let why = if holes.empty_streams_unknown > 0 {
            " (stored empty: exporters such as mitmproxy without a recording addon, or a browser for fetch-based SSE, keep nothing of a streamed body)"
        } else {
            " (not stored by the exporter)"
        };
        lacks.push(format!(
            "the SSE events of {} of {} event streams{why}: replays, skipped ranges and duplicate events on them are not determinable",
            holes.unknown_streams,
            caps.sse_streams.total()
        ));
    }
    if caps.sse_times_estimated {
        lacks.push(
            "the time of each SSE event: a HAR keeps none, so event times are spread between the response's first byte and its end (estimated)"
                .into(),
        );
    }
    if !writer.credentials_seen && any_entries {
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

/// A size field; negative (HAR's -1) means not given.
fn byte_size(v: Option<&Value>) -> Option<u64> {
    v.and_then(as_i64).filter(|n| *n >= 0).map(|n| n as u64)
}
