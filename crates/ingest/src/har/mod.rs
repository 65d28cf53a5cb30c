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
mod cut;
mod entries;
mod exchanges;
mod headers;
mod sse;
mod stream;
mod timings;
mod url;

use std::io::BufRead;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::connections::{Connections, Ends, push_starts};
use crate::timeline::Timeline;
use crate::{Warnings, open_text, read_all_text, read_error};
use mcpf_http::{ExchangeId, HttpSink};
use mcpf_model::{Accounting, Capabilities, HeaderCoverage, SourceFormat, Timestamp, bucket};
use mcpf_model::{FrameRef, InputId, Mark};
use mcpf_model::{InputReport, Note, NoteKind, OpenError, SourceLack};

use self::bodies::Content;
use self::entries::entry;
use self::exchanges::{Exchanges, Holes};
use self::headers::CREDENTIAL_HEADERS;
use self::stream::{Head, for_each_entry};

/// Reads a HAR file (plain or gzip) into `sink`. The file is read twice, entry by entry (see
/// [`read_streaming`]); a stream (standard input, a FIFO), which cannot be, is read whole first.
pub fn read_har(
    path: &str,
    input: InputId,
    sink: &mut impl HttpSink,
) -> Result<(InputReport, Capabilities), OpenError> {
    if crate::streamed(path) {
        let mut text_input = open_text(path)?;
        let text = read_all_text(path, &mut text_input)?;
        let (mut report, caps) = read_har_text(path, &text, input, sink)?;
        report.bytes = text_input.bytes_read.load(Ordering::Relaxed);
        return Ok((report, caps));
    }
    let mut last = None;
    let (mut report, caps) = read_streaming(path, input, sink, &mut || {
        let text = open_text(path)?;
        last = Some((text.bytes_read.clone(), text.gzip));
        Ok(text.reader)
    })?;
    if let Some((bytes_read, gzip)) = last {
        report.bytes = bytes_read.load(Ordering::Relaxed);
        if gzip {
            report.format.gzip = true;
        }
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
    let (mut report, caps) = read_streaming(name, input, sink, &mut || {
        Ok(Box::new(text.as_bytes()) as Box<dyn BufRead + '_>)
    })?;
    report.bytes = text.len() as u64;
    Ok((report, caps))
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

/// What the first pass keeps of a readable entry: enough to number connections in start order
/// and to know when no later entry can start before a time.
struct Meta {
    req_first: Timestamp,
    end: Timestamp,
    connection: Option<String>,
    server: SocketAddr,
    server_known: bool,
}

/// The first pass over the entries: what the whole file says, and each readable entry's
/// [`Meta`] (by file position; `None` for an entry that cannot be read).
struct Scan {
    metas: Vec<Option<Meta>>,
    credentials_seen: bool,
    stores_streams: bool,
    http2: u64,
    malformed: u64,
    accounting: Accounting,
    warnings: Warnings,
}

impl Scan {
    fn entry(&mut self, number: u64, v: &Value, bytes: u64, cuts: &[cut::Cut]) {
        // The bytes of strings cut were read through, not analysed.
        let dropped: u64 = cuts.iter().map(|c| c.dropped).sum();
        self.accounting.bytes.lose(bucket::CAP_REACHED, dropped);
        let bytes = bytes - dropped.min(bytes);
        if !cuts.is_empty() {
            let kind = NoteKind::HarStringsCut {
                cap_mib: (cut::MAX_STRING >> 20) as u64,
            };
            let note = Note::new(kind, cuts.len() as u64).at(number);
            self.warnings
                .push(note.detail(format!("{dropped} bytes dropped")));
        }
        match entry(number, v, &mut self.http2) {
            Ok(e) => {
                self.credentials_seen |= CREDENTIAL_HEADERS.iter().any(|h| {
                    e.req_headers.has(h) || e.response.as_ref().is_some_and(|r| r.headers.has(h))
                });
                self.stores_streams |= e.response.as_ref().is_some_and(|r| {
                    r.event_stream && matches!(&r.content, Content::Known(b) if !b.is_empty())
                }) || e.messages.as_ref().is_some_and(|m| !m.is_empty());
                self.accounting.packets.analyse(1);
                self.accounting.bytes.analyse(bytes);
                self.metas.push(Some(Meta {
                    req_first: e.req_first,
                    end: e.end,
                    server: e.server,
                    server_known: e.server_known,
                    connection: e.connection,
                }));
            }
            Err(why) => {
                self.malformed += 1;
                self.accounting.packets.skip(bucket::NOT_RECOGNISED, 1);
                self.accounting.bytes.skip(bucket::NOT_RECOGNISED, bytes);
                let note = Note::new(NoteKind::HarEntrySkipped, 1).at(number);
                self.warnings.push(note.detail(why.to_string()));
                self.metas.push(None);
            }
        }
    }
}

impl Scan {
    /// Counts what no whole entry covers: the document around the entries (framing), or after
    /// a JSON error the entry it cut and the rest of the file (lost: truncated when the file
    /// ends early, else corrupt).
    fn settle(&mut self, error: &Option<serde_json::Error>, entries: u64, bytes: u64, at: u64) {
        let around = bytes.saturating_sub(self.accounting.bytes.total);
        let Some(e) = error else {
            self.accounting.bytes.skip(bucket::FILE_FRAMING, around);
            return;
        };
        let reason = if e.is_eof() {
            bucket::TRUNCATED
        } else {
            bucket::CORRUPT_RECORD
        };
        let rest = bytes.saturating_sub(at);
        let kind = NoteKind::HarReadingStopped {
            entry: entries + 1,
            rest,
        };
        let note = Note::new(kind, 1).at(at).detail(e.to_string());
        self.warnings.push(note);
        self.accounting.packets.lose(reason, 1);
        self.accounting.bytes.lose(reason, around);
    }
}

/// Reads a HAR document in two passes over `open`'s readers, entry by entry, so memory follows
/// the largest entry (and a few words per entry), not the file:
///
/// 1. every entry is read for what the whole file decides (whether it stores streams or
///    credentials, which entries share a connection, the connections' ends) and its start;
/// 2. every entry is read again and its events pushed onto a [`Timeline`] that emits all
///    events before the earliest start of the entries still to come. Entries are usually in
///    start order, so only the exchanges in flight are held; a file far out of order is held up
///    to the timeline's reorder window, beyond which events leave early and are counted in a
///    warning.
fn read_streaming<'r>(
    name: &str,
    input: InputId,
    sink: &mut impl HttpSink,
    open: &mut dyn FnMut() -> Result<Box<dyn BufRead + 'r>, OpenError>,
) -> Result<(InputReport, Capabilities), OpenError> {
    let (scan, head) = scan(name, open()?)?;
    let mut report = InputReport {
        path: name.to_string(),
        format: mcpf_model::FileFormat::new(mcpf_model::FileKind::Har),
        packets: scan.accounting.packets.total,
        ..InputReport::default()
    };
    if scan.malformed > 0 {
        report
            .skipped
            .insert("malformed HAR entries".into(), scan.malformed);
    }
    let writer = judge(&head, &scan);
    let plan = Plan::new(&scan.metas, input);
    let mut caps = capabilities(&scan.metas, &writer, plan.any_named);
    let mut timeline = Timeline::default();
    plan.push_connections(&scan.metas, &mut timeline, input);

    let mut exchanges = Exchanges::new(&mut caps, input, writer.stores_streams);
    let mut ignored = 0;
    let second = for_each_entry(open()?, &mut |number, v, _, cuts| {
        let i = number as usize - 1;
        let Some(Some(id)) = plan.ids.get(i) else {
            return;
        };
        let Ok(mut e) = entry(number, &v, &mut ignored) else {
            return;
        };
        drop(v);
        e.mark_cut(&cuts);
        timeline.begin(plan.rank[i]);
        exchanges.entry(&mut timeline, &mut e, *id, sink);
        drop(e);
        timeline.flush_before(plan.later_start[i + 1], sink);
    });
    second.map_err(|e| read_error(name, e))?;
    let holes = exchanges.finish();
    let out_of_order = timeline.out_of_order;
    timeline.emit(sink);

    let mut warnings = scan.warnings;
    if holes.clamped_messages > 0 {
        let kind = NoteKind::HarMessagesMoved;
        warnings.push(Note::new(kind, holes.clamped_messages));
    }
    if out_of_order > 0 {
        let window_mib = (crate::timeline::MAX_REORDER_BYTES >> 20) as u64;
        let kind = NoteKind::HarOutOfOrder { window_mib };
        warnings.push(Note::new(kind, out_of_order));
    }
    lacks(&mut caps, &holes, &writer, plan.any_entries);
    report.warnings = warnings.finish(NoteKind::MoreWarnings);
    report.accounting = scan.accounting;
    Ok((report, caps))
}

/// The first pass: the scan of every entry and the document's head, or why the text is not a
/// HAR document.
fn scan(name: &str, reader: Box<dyn BufRead + '_>) -> Result<(Scan, Head), OpenError> {
    let err = |message: String| OpenError {
        path: name.to_string(),
        message,
        hint: Some(
            "a HAR file is one JSON object with log.entries (HAR 1.2), as written by browsers' \
             \"Save all as HAR\" or mitmproxy's hardump"
                .into(),
        ),
    };
    let mut scan = Scan {
        metas: Vec::new(),
        credentials_seen: false,
        stores_streams: false,
        http2: 0,
        malformed: 0,
        accounting: Accounting::default(),
        warnings: Warnings::new(20),
    };
    let streamed = for_each_entry(reader, &mut |number, v, bytes, cuts| {
        scan.entry(number, &v, bytes, &cuts)
    })
    .map_err(|e| read_error(name, e))?;
    let head = streamed.head;
    match &streamed.error {
        // Stopped by a signal before its first entry: nothing is said of what it is.
        Some(_) if streamed.entries == 0 && mcpf_model::interrupt::stop_requested() => {
            return Err(OpenError {
                path: name.to_string(),
                message: "not read: a signal stopped the run before its first entry".into(),
                hint: None,
            });
        }
        // Nothing readable at all: the file is not a HAR document.
        Some(e) if streamed.entries == 0 => {
            return Err(err(format!("is not a valid HAR file: {e}")));
        }
        None if !head.saw_log => {
            return Err(err(
                "is JSON but has no \"log\" object, so it is not a HAR file".into(),
            ));
        }
        None if !head.saw_entries => {
            return Err(err("has no log.entries, so it is not a HAR file".into()));
        }
        _ => {}
    }
    scan.settle(
        &streamed.error,
        streamed.entries,
        streamed.bytes,
        streamed.error_at,
    );
    let version = head.version.as_ref().and_then(Value::as_str).unwrap_or("");
    let mut warnings = Warnings::new(20);
    if !version.is_empty() && !version.starts_with("1.") {
        warnings.push(Note::new(NoteKind::HarVersion, 1).detail(version));
    }
    let entries = std::mem::replace(&mut scan.warnings, Warnings::new(0));
    for w in entries.finish(NoteKind::MoreWarnings) {
        warnings.push(w);
    }
    if scan.http2 > 0 {
        warnings.push(Note::new(NoteKind::HarHttp2Entries, scan.http2));
    }
    scan.warnings = warnings;
    Ok((scan, head))
}

/// The order of the second pass's events, decided from the first pass's metas.
struct Plan {
    /// Each entry's place in start order (by file position).
    rank: Vec<u64>,
    /// Each readable entry's exchange id (by file position).
    ids: Vec<Option<ExchangeId>>,
    /// `later_start[i]`: the earliest start of the entries from file position `i` on: no event
    /// of theirs comes before it.
    later_start: Vec<Timestamp>,
    any_named: bool,
    any_entries: bool,
    order: Vec<usize>,
}

impl Plan {
    fn new(metas: &[Option<Meta>], input: InputId) -> Plan {
        let mut order: Vec<usize> = (0..metas.len()).filter(|&i| metas[i].is_some()).collect();
        let start = |i: usize| metas[i].as_ref().map(|m| m.req_first).unwrap_or_default();
        order.sort_by_key(|&i| (start(i), i));
        let mut rank = vec![0; metas.len()];
        let mut ids = vec![None; metas.len()];
        // Connections: by `connection` when given, else one per entry.
        let mut conns = Connections::new(input);
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r as u64;
            let conn = metas[i].as_ref().and_then(|m| m.connection.as_deref());
            ids[i] = Some(conns.exchange(conn, false));
        }
        let mut later_start = vec![Timestamp(i64::MAX); metas.len() + 1];
        for i in (0..metas.len()).rev() {
            later_start[i] = match &metas[i] {
                Some(m) => m.req_first.min(later_start[i + 1]),
                None => later_start[i + 1],
            };
        }
        Plan {
            rank,
            ids,
            later_start,
            any_named: conns.any_named(),
            any_entries: !order.is_empty(),
            order,
        }
    }

    /// Each connection's start (at its first exchange) and end (at the latest end of its
    /// exchanges), known before any entry's events.
    fn push_connections(&self, metas: &[Option<Meta>], timeline: &mut Timeline, input: InputId) {
        let readable = || {
            self.order.iter().filter_map(|&i| {
                let m = metas[i].as_ref()?;
                Some((self.ids[i]?, m, FrameRef::new(input, i as u64 + 1)))
            })
        };
        push_starts(
            timeline,
            readable().map(|(id, m, frame)| {
                let mark = Mark {
                    time: m.req_first,
                    frame,
                };
                (id.conn, CLIENT_UNKNOWN, m.server, mark)
            }),
        );
        let mut ends = Ends::default();
        for (id, m, frame) in readable() {
            let mark = Mark { time: m.end, frame };
            ends.note(id.conn, CLIENT_UNKNOWN, m.server, mark);
        }
        ends.push(timeline);
    }
}

/// HAR records no client address.
const CLIENT_UNKNOWN: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

fn judge(head: &Head, scan: &Scan) -> Writer {
    let producer = head.creator.as_ref().and_then(|c| {
        let n = c.get("name").and_then(Value::as_str)?;
        Some(match c.get("version").and_then(Value::as_str) {
            Some(v) if !v.is_empty() => format!("{n} {v}"),
            _ => n.to_string(),
        })
    });
    let browser = producer
        .as_deref()
        .is_some_and(|p| p.starts_with("WebInspector") || p.starts_with("Firefox"));
    Writer {
        producer,
        browser,
        credentials_seen: scan.credentials_seen,
        stores_streams: scan.stores_streams,
    }
}

fn capabilities(metas: &[Option<Meta>], writer: &Writer, any_named: bool) -> Capabilities {
    let mut caps = Capabilities::new(SourceFormat::Har);
    let readable = || metas.iter().flatten();
    caps.producer = writer.producer.clone();
    caps.connections = any_named && readable().all(|m| m.connection.is_some());
    caps.server_addresses = readable().next().is_some() && readable().all(|m| m.server_known);
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

/// What this HAR lacks (the report words it).
fn lacks(caps: &mut Capabilities, holes: &Holes, writer: &Writer, any_entries: bool) {
    let mut lacks = vec![SourceLack::HarTcp, SourceLack::HarClientAddresses];
    if !caps.connections {
        lacks.push(SourceLack::HarConnections);
    }
    if caps.request_bodies.unknown > 0 {
        lacks.push(SourceLack::RequestBodies {
            unknown: caps.request_bodies.unknown,
            total: caps.request_bodies.total(),
        });
    }
    if holes.without_response_count > 0 {
        lacks.push(SourceLack::HarResponses {
            entries: holes.without_response_count,
            listed: holes.without_response.clone(),
        });
    }
    if holes.unknown_plain_bodies > 0 {
        let count = holes.unknown_plain_bodies;
        lacks.push(SourceLack::HarResponseBodies { count });
    }
    if holes.unknown_streams > 0 {
        lacks.push(SourceLack::HarSseEvents {
            unknown: holes.unknown_streams,
            total: caps.sse_streams.total(),
            stored_empty: holes.empty_streams_unknown > 0,
        });
    }
    if caps.sse_times_estimated {
        lacks.push(SourceLack::HarSseTimes);
    }
    if !writer.credentials_seen && any_entries {
        let sanitized = caps.sanitized;
        lacks.push(SourceLack::HarCredentials { sanitized });
    }
    if !caps.server_addresses {
        lacks.push(SourceLack::HarServerAddresses);
    }
    caps.lacks.extend(lacks);
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
