//! The `http` view: one row per HTTP exchange, requests paired with their responses, with SSE
//! events and JSON-RPC summaries.

use std::io::{self, Write};

use base64::Engine;
use serde::Serialize;

/// The version of `http --format json` (docs/report-format.md, "Other commands").
pub const HTTP_SCHEMA_VERSION: u32 = 1;
use serde_json::{Value, json};

use comfy_table::Table;
use mcpf_http::exchange::{Collector, Exchange, Order};
use mcpf_http::{Body, Headers, HttpEvent, HttpSink, HttpStats, Outcome};
use mcpf_mcp::jsonrpc::{ExchangeMessages, Kind, Message};
use mcpf_model::{Anomaly, InputReport};

use crate::ndjson;
use crate::note::InputJson;
use mcpf_model::{Mark, endpoint};

use super::analyze::spill::{Range, Records, Spills};
use super::redact::Redactor;
use super::sanitize::terminal;
use super::table::{Fit, bytes, new_table};

fn headers_json(h: &Headers, r: &Redactor) -> Value {
    Value::Array(
        h.0.iter()
            .map(|(n, v)| json!([n, r.header(n, v)]))
            .collect(),
    )
}

/// A body as JSON: text when it is UTF-8, base64 otherwise (never lossily replaced). Its
/// secrets are redacted where every output is, at standard output (`redact::Redacting`): a
/// body is the bulk of the document, and scanning it twice would double the cost.
fn body_json(b: &Body) -> Value {
    let (encoding, text) = match std::str::from_utf8(&b.data) {
        Ok(t) => ("utf-8", t.to_string()),
        Err(_) => (
            "base64",
            base64::engine::general_purpose::STANDARD.encode(&b.data),
        ),
    };
    json!({
        "wire_bytes": b.wire_bytes,
        "decoded_bytes": b.decoded_bytes,
        "content_encoding": b.content_encoding,
        "chunked": b.chunked,
        "truncated": b.truncated,
        "decode_error": b.decode_error,
        "encoding": encoding,
        "text": text,
    })
}

pub(crate) fn message_json(m: &Message) -> Value {
    let mut v = json!({ "kind": m.kind });
    let o = v.as_object_mut().expect("object");
    if let Some(id) = &m.id {
        o.insert("id".into(), id.to_value());
    } else if m.null_id {
        o.insert("id".into(), Value::Null);
    }
    if let Some(method) = &m.method {
        o.insert("method".into(), json!(method));
    }
    if m.kind == Kind::Error {
        o.insert(
            "error".into(),
            json!({ "code": m.error_code(), "message": m.error_message() }),
        );
    }
    if let Some(why) = m.malformed() {
        o.insert("malformed".into(), json!(why));
    }
    if let Some(tool) = &m.mcp.tool {
        o.insert("tool".into(), json!(tool));
    }
    if let Some(t) = &m.mcp.progress_token {
        o.insert(
            "progress_token".into(),
            serde_json::from_str(t).unwrap_or(Value::Null),
        );
    }
    v
}

fn mark_json(m: Option<Mark>) -> (Value, Value) {
    match m {
        Some(m) => (json!(m.time.rfc3339()), json!(m.frame.frame)),
        None => (Value::Null, Value::Null),
    }
}

fn flags(e: &Exchange) -> Vec<&'static str> {
    let mut f = Vec::new();
    let out = e.end.as_ref().map(|x| x.outcome);
    if e.request
        .as_ref()
        .is_some_and(|r| r.outcome != Outcome::Complete)
    {
        f.push("request_incomplete");
    }
    match out {
        Some(Outcome::CutByCaptureEnd) => f.push("cut_by_capture_end"),
        Some(Outcome::Complete) | None => {}
        Some(_) => f.push("incomplete"),
    }
    if e.request.is_none() {
        f.push("request_not_captured");
    }
    if e.response.is_none() {
        f.push("no_response");
    }
    let decoded = |b: &Body| b.content_encoding.is_some() && b.decode_error.is_none();
    if e.end.as_ref().is_some_and(|x| decoded(&x.body))
        || e.request.as_ref().is_some_and(|r| decoded(&r.body))
    {
        f.push("decoded");
    }
    if e.end
        .as_ref()
        .is_some_and(|x| x.body.decode_error.is_some())
    {
        f.push("body_damaged");
    }
    f
}

fn exchange_json(e: &Exchange, r: &Redactor) -> Value {
    let m = ExchangeMessages::of(e);
    let (req_time, req_frame) = mark_json(e.request.as_ref().map(|q| q.first));
    let (resp_time, resp_frame) = mark_json(e.response.as_ref().map(|h| h.first));
    let (end_time, end_frame) = mark_json(
        e.end
            .as_ref()
            .map(|x| x.last)
            .or(e.no_response.map(|n| n.2)),
    );
    let events: Vec<Value> = e
        .events
        .iter()
        .map(|ev| {
            json!({
                "index": ev.index,
                "id": ev.id,
                "last_event_id": ev.last_event_id,
                "event": ev.event,
                "data": ev.data,
                "retry": ev.retry,
                "priming": ev.priming,
                "after_gap": ev.after_gap,
                "time": ev.mark.time.rfc3339(),
                "frame": ev.mark.frame.frame,
            })
        })
        .collect();
    let outcome = e
        .end
        .as_ref()
        .map(|x| x.outcome)
        .or(e.no_response.map(|n| n.0));
    json!({
        "id": e.id.to_string(),
        "connection": e.id.conn,
        "client": e.client.map(endpoint),
        "server": e.server.map(endpoint),
        "method": e.request.as_ref().map(|q| q.method.clone()),
        "target": e.request.as_ref().map(|q| r.target(&q.target)),
        "status": e.response.as_ref().map(|h| h.status),
        "reason": e.response.as_ref().map(|h| h.reason.clone()),
        "interim": e.response.as_ref().map(|h| h.interim.clone()).unwrap_or_default(),
        "request_time": req_time,
        "request_frame": req_frame,
        "response_time": resp_time,
        "response_frame": resp_frame,
        "end_time": end_time,
        "end_frame": end_frame,
        "outcome": outcome,
        "flags": flags(e),
        "request_headers": e.request.as_ref().map(|q| headers_json(&q.headers, r)),
        "response_headers": e.response.as_ref().map(|h| headers_json(&h.headers, r)),
        "request_body": e.request.as_ref().map(|q| body_json(&q.body)),
        "response_body": e.end.as_ref().filter(|_| e.events.is_empty()).map(|x| body_json(&x.body)),
        "sse_events": events,
        "jsonrpc": {
            "request": m.request.iter().map(message_json).collect::<Vec<_>>(),
            "response": m.response.iter().map(message_json).collect::<Vec<_>>(),
            "events": m.events.iter().map(|m| m.iter().map(message_json).collect::<Vec<_>>()).collect::<Vec<_>>(),
        },
    })
}

/// What follows the exchanges in the document: serialized on its own, it is the document's
/// tail once its opening brace is dropped.
#[derive(Serialize)]
struct Tail<'a> {
    inputs: Vec<InputJson<'a>>,
    http: HttpSummary<'a>,
    anomalies: Vec<Value>,
}

/// The HTTP stage's counts as every report shows them (`summary.http`): the keys the schema
/// lists, not every counter the stage keeps (a record file carries those).
#[derive(Serialize)]
pub(crate) struct HttpSummary<'a> {
    connections_http: u64,
    connections_tls: u64,
    connections_http2: u64,
    connections_other: u64,
    connections_empty: u64,
    tls_ports: &'a [u16],
    http_ports: &'a [u16],
    skipped_bytes: u64,
    anomalies: u64,
    h2_streams: u64,
    h2_streams_reset: u64,
    h2_goaways: u64,
    h2_flow_stalls: u64,
    h2_flow_stall_ns: u64,
    h2_flow_stalled_at_end: u64,
    set_aside: &'a mcpf_http::sniff::SetAside,
}

impl<'a> HttpSummary<'a> {
    pub(crate) fn of(s: &'a HttpStats) -> HttpSummary<'a> {
        HttpSummary {
            connections_http: s.connections_http,
            connections_tls: s.connections_tls,
            connections_http2: s.connections_http2,
            connections_other: s.connections_other,
            connections_empty: s.connections_empty,
            tls_ports: &s.tls_ports,
            http_ports: &s.http_ports,
            skipped_bytes: s.skipped_bytes,
            anomalies: s.anomalies,
            h2_streams: s.h2_streams,
            h2_streams_reset: s.h2_streams_reset,
            h2_goaways: s.h2_goaways,
            h2_flow_stalls: s.h2_flow_stalls,
            h2_flow_stall_ns: s.h2_flow_stall_ns,
            h2_flow_stalled_at_end: s.h2_flow_stalled_at_end,
            set_aside: &s.set_aside,
        }
    }
}

/// The view's anomalies, each with its kind's stable name.
fn anomalies_json(anomalies: &[Anomaly], r: &Redactor) -> Vec<Value> {
    anomalies
        .iter()
        .map(|a| {
            json!({
                "connection": a.conn,
                "direction": match a.dir { mcpf_model::Direction::ClientToServer => "c2s", _ => "s2c" },
                "time": a.mark.time.rfc3339(),
                "frame": a.mark.frame.frame,
                "kind": a.kind.name(),
                "what": r.text(&a.detail),
            })
        })
        .collect()
}

/// How the `http` view is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Json,
    /// One record per line: each `exchange`, `anomaly` and `input`, then the `summary`.
    Ndjson,
    Table,
}

/// The `http` view's sink: each exchange is rendered the moment it is finished and spilled to
/// a temporary file, with only its place in the order and where it went kept, so memory
/// follows the exchanges still open rather than the length of the capture. [`Spool::write`]
/// assembles the view from the spill.
pub struct Spool {
    pub collector: Collector,
    view: View,
    redactor: Redactor,
    spills: Spills,
    pieces: Vec<(Order, Range)>,
    /// The table's column widths so far (its header's, then every row's).
    widths: Vec<u16>,
}

const TABLE_HEADER: [&str; 11] = [
    "time", "tcp", "method", "target", "status", "type", "req", "resp", "events", "JSON-RPC",
    "flags",
];

/// The columns left out, in this order, when the table is wider than the output.
const TABLE_DROPPED: [usize; 6] = [1, 6, 7, 5, 8, 0];

/// Indents what a pretty-printer writes at depth 0 to the depth of an element of the
/// document's `exchanges`: a rendered JSON value has a newline only between its tokens.
struct Nested<'a>(&'a mut dyn Write);

impl Write for Nested<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for (i, line) in buf.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                self.0.write_all(b"\n    ")?;
            }
            self.0.write_all(line)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Drops the first byte written through it.
struct AfterFirst<'a>(&'a mut dyn Write, bool);

impl Write for AfterFirst<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match buf.split_first() {
            Some((_, rest)) if !self.1 => {
                self.1 = true;
                self.0.write_all(rest)?;
            }
            _ => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Spool {
    pub fn new(view: View, redactor: Redactor) -> Spool {
        Spool {
            collector: Collector::streaming(),
            view,
            redactor,
            spills: Spills::default(),
            pieces: Vec::new(),
            widths: new_table(&TABLE_HEADER).column_max_content_widths(),
        }
    }

    fn spill(&mut self, e: &Exchange) {
        let r = self.redactor;
        let range = match self.view {
            View::Json => self.spills.append_with(Records::Sessions, &mut |w| {
                serde_json::to_writer_pretty(Nested(w), &exchange_json(e, &r))
                    .map_err(io::Error::from)
            }),
            View::Ndjson => self.spills.append_with(Records::Sessions, &mut |w| {
                serde_json::to_writer(w, &exchange_json(e, &r)).map_err(io::Error::from)
            }),
            View::Table => {
                let cells = table_row(e, &r);
                let mut row = Table::new();
                row.add_row(cells.clone());
                for (w, c) in self.widths.iter_mut().zip(row.column_max_content_widths()) {
                    *w = (*w).max(c);
                }
                self.spills.append_with(Records::Sessions, &mut |w| {
                    serde_json::to_writer(&mut *w, &cells).map_err(io::Error::from)
                })
            }
        };
        // A failed write is noted in `spills.error`, and reported by `write`.
        if let Some(range) = range {
            self.pieces.push((e.order(), range));
        }
    }

    fn spill_finished(&mut self) {
        let done: Vec<Exchange> = self.collector.take_finished().collect();
        for e in &done {
            self.spill(e);
        }
    }

    /// Writes the view: the exchanges in order, then the rest; the table fits `width`.
    pub fn write(
        mut self,
        out: &mut dyn Write,
        inputs: &[InputReport],
        stats: &HttpStats,
        width: usize,
    ) -> io::Result<()> {
        let anomalies = std::mem::take(&mut self.collector.anomalies);
        let open = std::mem::take(&mut self.collector).into_exchanges();
        for e in &open {
            self.spill(e);
        }
        drop(open);
        if let Some(e) = self.spills.error.take() {
            return Err(io::Error::other(e));
        }
        self.pieces.sort_unstable_by_key(|p| p.0);
        let tail = || Tail {
            inputs: InputJson::all(inputs),
            http: HttpSummary::of(stats),
            anomalies: anomalies_json(&anomalies, &self.redactor),
        };
        match self.view {
            View::Json => self.write_json(out, &tail()),
            View::Ndjson => self.write_ndjson(out, &tail()),
            View::Table => self.write_table(out, inputs, stats, width),
        }
    }

    fn write_json(&mut self, out: &mut dyn Write, tail: &Tail) -> io::Result<()> {
        // Versioned like the analyze report: a field is added, never changed, within a version.
        writeln!(out, "{{\n  \"schema_version\": {HTTP_SCHEMA_VERSION},")?;
        out.write_all(b"  \"exchanges\": [")?;
        for (i, (_, range)) in self.pieces.iter().enumerate() {
            out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
            self.spills.copy(Records::Sessions, Some(*range), out)?;
        }
        out.write_all(if self.pieces.is_empty() {
            b"],"
        } else {
            b"\n  ],"
        })?;
        serde_json::to_writer_pretty(AfterFirst(out, false), tail)?;
        writeln!(out)
    }

    /// The document's content one record per line: every `exchange`, `input` and `anomaly`,
    /// then one `summary` holding `http`.
    fn write_ndjson(&mut self, out: &mut dyn Write, tail: &Tail) -> io::Result<()> {
        let v = HTTP_SCHEMA_VERSION;
        for &(_, range) in &self.pieces {
            ndjson::write_spilled(out, "exchange", v, range, |r, out| {
                self.spills.copy(Records::Sessions, Some(r), out)
            })?;
        }
        for input in &tail.inputs {
            ndjson::write_record(out, "input", v, input)?;
        }
        for a in &tail.anomalies {
            ndjson::write_record(out, "anomaly", v, a)?;
        }
        ndjson::write_record(out, "summary", v, &json!({ "http": tail.http }))
    }

    fn write_table(
        &mut self,
        out: &mut dyn Write,
        inputs: &[InputReport],
        stats: &HttpStats,
        width: usize,
    ) -> io::Result<()> {
        for input in inputs {
            super::write_input_line(out, input, "", width)?;
        }
        let widths: Vec<usize> = self.widths.iter().map(|w| usize::from(*w)).collect();
        // The JSON-RPC summary and the target are the columns whose cells may be shortened.
        let fit = Fit::new(&widths, &TABLE_DROPPED, &[9, 3], width);
        let kept = &fit.kept;
        let pick = |cells: &[String]| fit.row(cells);
        let header = pick(&TABLE_HEADER.map(String::from));
        if self.pieces.is_empty() {
            writeln!(
                out,
                "{}",
                new_table(&header.iter().map(String::as_str).collect::<Vec<_>>())
            )?;
        } else {
            // Every row is drawn with a last row as wide as the widest of each column, so that
            // its lines are those the whole table would have.
            let ruler: Vec<String> = kept
                .iter()
                .map(|&c| " ".repeat(fit.width_of(c, widths[c])))
                .collect();
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            let mut frame = new_table(&header);
            frame.add_row(ruler.clone());
            let frame: Vec<String> = frame.lines().collect();
            for l in &frame[..3] {
                writeln!(out, "{l}")?;
            }
            for (_, range) in &self.pieces {
                let piece = self.spills.read(Records::Sessions, Some(*range))?;
                let cells: Vec<String> = serde_json::from_slice(&piece)?;
                let mut t = new_table(&header);
                t.add_row(pick(&cells)).add_row(ruler.clone());
                let lines: Vec<String> = t.lines().collect();
                for l in &lines[3..lines.len() - 2] {
                    writeln!(out, "{l}")?;
                }
            }
            writeln!(out, "{}", frame[frame.len() - 1])?;
        }
        if kept.len() < TABLE_HEADER.len() {
            let left = fit.left_out(&TABLE_HEADER);
            let note = format!(
                "(left out to fit {width} columns: {}; --format json has them)",
                left.join(", ")
            );
            writeln!(out, "{}", super::table::wrap(&note, width, "", "  "))?;
        }
        writeln!(
            out,
            "{} exchanges on {} HTTP connections{}",
            self.pieces.len(),
            stats.connections_http + stats.connections_http2,
            h2_summary(stats)
        )?;
        let other = stats.connections_tls + stats.connections_other;
        if other > 0 {
            writeln!(
                out,
                "skipped {other} non-HTTP connections ({} TLS, {} other)",
                stats.connections_tls, stats.connections_other
            )?;
        }
        Ok(())
    }
}

/// What the HTTP/2 connections among them carried, when there are any.
fn h2_summary(stats: &HttpStats) -> String {
    if stats.connections_http2 == 0 {
        return String::new();
    }
    format!(
        " ({} of them HTTP/2 with {})",
        stats.connections_http2,
        h2_parts(stats).join(", ")
    )
}

/// The HTTP/2 streams, resets, GOAWAYs and flow-control waits of a run, as words.
pub(crate) fn h2_parts(stats: &HttpStats) -> Vec<String> {
    let mut parts = vec![super::table::count(stats.h2_streams, "stream", "streams")];
    if stats.h2_streams_reset > 0 {
        parts.push(format!("{} reset", stats.h2_streams_reset));
    }
    if stats.h2_goaways > 0 {
        parts.push(super::table::count(stats.h2_goaways, "GOAWAY", "GOAWAYs"));
    }
    if stats.h2_flow_stalls > 0 {
        parts.push(format!(
            "{} on flow control ({:.3} s in all)",
            super::table::count(stats.h2_flow_stalls, "wait", "waits"),
            stats.h2_flow_stall_ns as f64 / 1e9
        ));
    }
    if stats.h2_flow_stalled_at_end > 0 {
        parts.push(format!(
            "{} stalled on flow control at its end",
            super::table::count(stats.h2_flow_stalled_at_end, "stream", "streams")
        ));
    }
    parts
}

impl HttpSink for Spool {
    fn on_http(&mut self, event: HttpEvent) {
        self.collector.on_http(event);
        self.spill_finished();
    }
}

fn jsonrpc_summary(e: &Exchange) -> String {
    let m = ExchangeMessages::of(e);
    let mut parts: Vec<String> = m
        .request
        .iter()
        .chain(m.response.iter())
        .map(Message::summary)
        .collect();
    let in_events: usize = m.events.iter().map(Vec::len).sum();
    if in_events > 0 {
        let responses = m
            .events
            .iter()
            .flatten()
            .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
            .map(Message::summary)
            .collect::<Vec<_>>();
        let others = in_events - responses.len();
        parts.extend(responses);
        if others > 0 {
            parts.push(format!("+{others} in events"));
        }
    }
    parts.join(", ")
}

fn table_row(e: &Exchange, r: &Redactor) -> Vec<String> {
    let time = e.start().map(|m| m.time.clock_millis()).unwrap_or_default();
    let method = e.request.as_ref().map(|q| q.method.as_str()).unwrap_or("?");
    let target = e
        .request
        .as_ref()
        .map(|q| r.cell(&q.target, 48))
        .unwrap_or_default();
    let status = e
        .response
        .as_ref()
        .map(|h| h.status.to_string())
        .unwrap_or_else(|| "—".into());
    let ctype = e
        .response
        .as_ref()
        .and_then(|h| h.headers.media_type())
        .map(|m| r.cell(&m, 24))
        .unwrap_or_default();
    let req_bytes = e
        .request
        .as_ref()
        .map(|q| bytes(q.body.wire_bytes))
        .unwrap_or_default();
    let resp_bytes = e
        .end
        .as_ref()
        .map(|x| bytes(x.body.wire_bytes))
        .unwrap_or_default();
    vec![
        time,
        e.id.conn.to_string(),
        terminal(method).into_owned(),
        target,
        status,
        ctype,
        req_bytes,
        resp_bytes,
        if e.events.is_empty() {
            String::new()
        } else {
            e.events.len().to_string()
        },
        r.cell(&jsonrpc_summary(e), 60),
        flags(e).join(" "),
    ]
}
