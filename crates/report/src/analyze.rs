//! The `analyze` report: for people (sessions, findings as cause → consequence trees, the
//! incident timeline, what to do) and for tools (a versioned JSON document, or NDJSON records).
//!
//! # JSON report, schema version 1
//!
//! One document (`--format json`), described field by field in `docs/report-format.md` and
//! checked against `docs/report.schema.json` by the test suite. Fields are only ever added
//! within a schema version. Event IDs are the strings seen on the wire; request IDs the JSON
//! values seen on the wire (`7` and `"7"` differ); times are RFC 3339 UTC with microseconds;
//! frames are 1-based frame numbers of the input named by `input` (Wireshark's `frame.number`).
//!
//! Each session's record is written when the session is finalized, to a spill file, and the
//! session's own records are dropped: memory follows the sessions in progress, not the length
//! of the capture. The document is assembled from the spill at the end.

use std::io::{self, Read, Seek, SeekFrom, Write};

use serde::Serialize;
use serde_json::{Value, json};

use super::redact::Redactor;
use super::sanitize::{terminal, terminal_truncated};
use super::table::{bytes, new_table};
use super::timeline::Entry;
use mcpf_detect::verdict::Verdict;
use mcpf_detect::{Finding, Severity, finding_id};
use mcpf_http::HttpStats;
use mcpf_mcp::model::{Namespace, Session, SessionHead};
use mcpf_mcp::{HttpAnomaly, McpStats};
use mcpf_model::InputReport;
use mcpf_model::{Mark, Timestamp, endpoint};

pub const SCHEMA_VERSION: u32 = 1;

/// What the report shows, after the filters.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub sessions: Option<Vec<String>>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub min_severity: Option<Severity>,
    pub events: bool,
    pub all_events: bool,
}

/// How the session records are spilled: pretty for the JSON document, one line each for NDJSON,
/// not at all for the terminal report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordFormat {
    Pretty,
    Lines,
    None,
}

/// What stays in memory of a finalized session: its head (enough for the terminal tables, the
/// filters and the links between observations), its verdict, and where its rendered records
/// went.
#[derive(Clone, Debug)]
pub struct SessionHeader {
    pub head: SessionHead,
    pub verdict: Verdict,
    pub same_session_as: Vec<String>,
    /// Merged sources: input index, path, matched and added exchanges, clock offset (s).
    pub merged: Vec<(u32, String, usize, usize, f64)>,
    record: Option<(u64, u64)>,
    events: Option<(u64, u64)>,
}

impl SessionHeader {
    /// `S1`, `S2`, ...
    pub fn label(&self) -> String {
        self.head.label()
    }
}

/// An append-only temporary file of rendered records.
struct Spill {
    file: std::fs::File,
    len: u64,
}

impl Spill {
    fn new() -> io::Result<Spill> {
        Ok(Spill {
            file: tempfile::tempfile()?,
            len: 0,
        })
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<(u64, u64)> {
        self.file.write_all(bytes)?;
        let at = self.len;
        self.len += bytes.len() as u64;
        Ok((at, bytes.len() as u64))
    }

    fn copy(&mut self, (at, len): (u64, u64), out: &mut dyn Write) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(at))?;
        let mut left = len;
        let mut buf = vec![0u8; 64 * 1024];
        while left > 0 {
            let n = (left as usize).min(buf.len());
            self.file.read_exact(&mut buf[..n])?;
            out.write_all(&buf[..n])?;
            left -= n as u64;
        }
        self.file.seek(SeekFrom::End(0))?;
        Ok(())
    }
}

/// How session records are rendered: shared by the writer and its background thread.
#[derive(Clone)]
struct RenderConfig {
    format: RecordFormat,
    with_events: bool,
    redactor: Redactor,
    input_paths: Vec<String>,
}

/// The temporary files records are spilled to, created on first use.
#[derive(Default)]
struct Spills {
    records: Option<Spill>,
    events: Option<Spill>,
    /// The first error writing them (reported at the end).
    error: Option<String>,
}

/// Where a session's records went in the spills.
type Ranges = (Option<(u64, u64)>, Option<(u64, u64)>);

impl Spills {
    fn spill(&mut self, events: bool, bytes: &[u8]) -> Option<(u64, u64)> {
        let slot = if events {
            &mut self.events
        } else {
            &mut self.records
        };
        if slot.is_none() {
            match Spill::new() {
                Ok(s) => *slot = Some(s),
                Err(e) => {
                    self.error
                        .get_or_insert(format!("cannot create a temporary file: {e}"));
                    return None;
                }
            }
        }
        match slot.as_mut().map(|s| s.append(bytes)) {
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                self.error
                    .get_or_insert(format!("cannot write a temporary file: {e}"));
                None
            }
            None => None,
        }
    }

    /// Renders a session's record (and its events when asked) and spills them.
    fn render(&mut self, cfg: &RenderConfig, header: &SessionHeader, s: &Session) -> Ranges {
        let v = session_json(header, s, &cfg.input_paths, &cfg.redactor);
        let bytes = match cfg.format {
            RecordFormat::Pretty => pretty_at(&v, 4),
            _ => serde_json::to_vec(&v).unwrap_or_default(),
        };
        let record = self.spill(false, &bytes);
        let mut events = None;
        if cfg.with_events {
            let evs = events_json(s);
            let mut bytes = Vec::new();
            for (i, e) in evs.iter().enumerate() {
                if cfg.format == RecordFormat::Pretty {
                    if i > 0 {
                        bytes.extend_from_slice(b",\n    ");
                    }
                    bytes.extend_from_slice(&pretty_at(e, 4));
                } else {
                    bytes.extend_from_slice(&serde_json::to_vec(e).unwrap_or_default());
                    bytes.push(b'\n');
                }
            }
            if !evs.is_empty() {
                events = self.spill(true, &bytes);
            }
        }
        (record, events)
    }
}

/// Sessions waiting for the background renderer; few, since each holds its streams.
const RENDER_QUEUE: usize = 16;

/// A thread that renders and spills session records while analysis goes on: the JSON writer is
/// a tenth of a run's work, and the analysis thread need not wait for it.
struct Renderer {
    tx: std::sync::mpsc::SyncSender<(SessionHeader, Box<Session>)>,
    handle: std::thread::JoinHandle<(Spills, Vec<(usize, Ranges)>)>,
}

/// Renders finalized sessions into the spill and keeps their headers.
pub struct SessionWriter {
    cfg: RenderConfig,
    spills: Spills,
    records: Option<Spill>,
    events: Option<Spill>,
    renderer: Option<Renderer>,
    pub headers: mcpf_model::PagedVec<Option<SessionHeader>>,
    /// The first error writing the spill (reported at the end).
    pub error: Option<String>,
}

/// Serializes pretty-printed, every line after the first indented by `indent` spaces, to sit
/// inside the document.
fn pretty_at(v: &impl Serialize, indent: usize) -> Vec<u8> {
    // serde writes token by token: indenting the finished text in bulk is cheaper than
    // intercepting every write.
    let text = serde_json::to_vec_pretty(v).unwrap_or_default();
    let lines = memchr::memchr_iter(b'\n', &text).count();
    let mut out = Vec::with_capacity(text.len() + lines * indent);
    let mut from = 0;
    for nl in memchr::memchr_iter(b'\n', &text) {
        out.extend_from_slice(&text[from..=nl]);
        out.resize(out.len() + indent, b' ');
        from = nl + 1;
    }
    out.extend_from_slice(&text[from..]);
    out
}

impl SessionWriter {
    pub fn new(
        format: RecordFormat,
        with_events: bool,
        redactor: Redactor,
        input_paths: Vec<String>,
    ) -> Self {
        SessionWriter {
            cfg: RenderConfig {
                format,
                with_events,
                redactor,
                input_paths,
            },
            spills: Spills::default(),
            records: None,
            events: None,
            renderer: None,
            headers: Default::default(),
            error: None,
        }
    }

    /// Renders records on a thread of their own from now on (same records, same order).
    pub fn in_background(mut self) -> Self {
        if self.cfg.format == RecordFormat::None {
            return self;
        }
        let (tx, rx) = std::sync::mpsc::sync_channel::<(SessionHeader, Box<Session>)>(RENDER_QUEUE);
        let cfg = self.cfg.clone();
        let mut spills = std::mem::take(&mut self.spills);
        let handle = std::thread::spawn(move || {
            let mut ranges = Vec::new();
            for (header, s) in rx {
                ranges.push((header.head.idx, spills.render(&cfg, &header, &s)));
            }
            (spills, ranges)
        });
        self.renderer = Some(Renderer { tx, handle });
        self
    }

    fn header(&self, s: &Session, verdict: Verdict, same_session_as: Vec<String>) -> SessionHeader {
        let merged: Vec<(u32, String, usize, usize, f64)> = s
            .merged_sources
            .iter()
            .map(|m| {
                (
                    m.input,
                    self.cfg
                        .input_paths
                        .get(m.input as usize)
                        .cloned()
                        .unwrap_or_default(),
                    m.matched,
                    m.added,
                    m.offset_s,
                )
            })
            .collect();
        SessionHeader {
            head: s.head(),
            verdict,
            same_session_as,
            merged,
            record: None,
            events: None,
        }
    }

    fn keep(&mut self, mut header: SessionHeader) {
        if self.cfg.format != RecordFormat::None {
            // The record has been rendered (or its copy is queued): what only the terminal
            // tables show is dropped, since a header is kept for every session of the run.
            header.head.path = String::new();
            header.head.protocol_version = None;
            header.head.client_info = None;
            header.head.not_determinable = Vec::new();
            header.merged = Vec::new();
            header.same_session_as = Vec::new();
            header.verdict.reason = None;
        }
        let idx = header.head.idx;
        self.headers.resize_with(idx + 1, || None);
        if let Some(slot) = self.headers.get_mut(idx) {
            *slot = Some(header);
        }
    }

    /// Renders a finalized, summarized session and keeps its header. The session is consumed:
    /// a background renderer takes it.
    pub fn write(&mut self, s: Box<Session>, verdict: Verdict, same_session_as: Vec<String>) {
        let mut header = self.header(&s, verdict, same_session_as);
        if self.cfg.format == RecordFormat::None {
            self.keep(header);
            return;
        }
        if let Some(r) = &self.renderer {
            if r.tx.send((header.clone(), s)).is_ok() {
                self.keep(header);
                return;
            }
            // The renderer is gone (it only stops by panicking): render here.
            self.error
                .get_or_insert("internal error: the record renderer stopped".into());
            self.keep(header);
            return;
        }
        let (record, events) = self.spills.render(&self.cfg, &header, &s);
        header.record = record;
        header.events = events;
        self.keep(header);
    }

    /// Waits for the background renderer, then hands the spills to the report.
    pub fn finish(&mut self) {
        if let Some(r) = self.renderer.take() {
            drop(r.tx);
            match r.handle.join() {
                Ok((spills, ranges)) => {
                    self.spills = spills;
                    for (idx, (record, events)) in ranges {
                        if let Some(Some(h)) = self.headers.get_mut(idx) {
                            h.record = record;
                            h.events = events;
                        }
                    }
                }
                Err(_) => {
                    self.error
                        .get_or_insert("internal error: the record renderer failed".into());
                }
            }
        }
        self.records = self.spills.records.take();
        self.events = self.spills.events.take();
        if let Some(e) = self.spills.error.take() {
            self.error.get_or_insert(e);
        }
    }
}

/// Everything the analysis produced.
pub struct Report {
    pub inputs: Vec<InputReport>,
    pub sessions: SessionWriter,
    pub findings: Vec<Finding>,
    /// The timeline of each session (empty when the report does not show it).
    pub timelines: Vec<Vec<Entry>>,
    pub http: HttpStats,
    pub mcp: McpStats,
    pub anomalies: Vec<HttpAnomaly>,
    pub connections: u64,
    pub gap_bytes: u64,
    pub connections_with_gaps: u64,
    /// Notes about what an input format could not support.
    pub limits: Vec<String>,
    /// The program that wrote the report.
    pub tool: Tool,
}

/// The program that wrote a report, as it names itself in every format.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

impl Report {
    /// Session headers in label order.
    pub fn headers(&self) -> impl Iterator<Item = &SessionHeader> {
        self.sessions.headers.iter().flatten()
    }

    pub fn session_count(&self) -> usize {
        self.headers().count()
    }

    fn header(&self, idx: usize) -> Option<&SessionHeader> {
        self.sessions.headers.get(idx).and_then(Option::as_ref)
    }

    fn session_selected(&self, s: &SessionHeader, sel: &Selection) -> bool {
        if let Some(keys) = &sel.sessions
            && !keys.iter().any(|k| {
                k.eq_ignore_ascii_case(&s.label())
                    || s.head.session_id.as_deref() == Some(k.as_str())
            })
        {
            return false;
        }
        let (start, end) = (s.head.start.time, s.head.end.time);
        if sel.since.is_some_and(|t| end < t) || sel.until.is_some_and(|t| start > t) {
            return false;
        }
        true
    }

    fn idx_selected(&self, idx: usize, sel: &Selection) -> bool {
        self.header(idx)
            .is_some_and(|h| self.session_selected(h, sel))
    }

    fn in_window(&self, m: Mark, sel: &Selection) -> bool {
        !(sel.since.is_some_and(|t| m.time < t) || sel.until.is_some_and(|t| m.time > t))
    }

    /// Positions of the findings shown.
    pub fn shown_findings(&self, sel: &Selection) -> Vec<usize> {
        self.findings
            .iter()
            .enumerate()
            .filter(|(_, f)| self.idx_selected(f.session, sel))
            .filter(|(_, f)| self.in_window(f.time, sel))
            .filter(|(_, f)| sel.min_severity.is_none_or(|m| f.severity.at_least(m)))
            .map(|(i, _)| i)
            .collect()
    }

    /// Findings that count for the exit code: selected sessions and time window, any severity.
    pub fn counted_findings(&self, sel: &Selection) -> impl Iterator<Item = &Finding> {
        let sel = sel.clone();
        self.findings
            .iter()
            .filter(move |f| self.idx_selected(f.session, &sel) && self.in_window(f.time, &sel))
    }
}

fn frames_json(frames: &[Mark]) -> (Value, Value) {
    let nums: Vec<u64> = frames.iter().map(|m| m.frame.frame).collect();
    let refs: Vec<Value> = frames
        .iter()
        .map(|m| json!({ "input": m.frame.input, "frame": m.frame.frame }))
        .collect();
    (json!(nums), json!(refs))
}

/// A stream as the JSON report has it. A struct, not a `json!` tree: a large capture has tens of
/// thousands of streams, and a tree allocates every key and value before it is written.
#[derive(Serialize)]
struct StreamRecord<'a> {
    id: String,
    transport: &'static str,
    exchange: String,
    input: mcpf_model::InputId,
    method: &'a str,
    target: String,
    client: String,
    status: Option<u16>,
    content_type: Option<&'a str>,
    event_stream: bool,
    opened: String,
    opened_frame: u64,
    ended: Option<String>,
    ended_frame: Option<u64>,
    outcome: Option<mcpf_http::Outcome>,
    closed_by: Option<&'static str>,
    requests: Vec<&'a mcpf_mcp::jsonrpc::RequestId>,
    methods: Vec<&'a str>,
    events: usize,
    first_event_id: Option<&'a str>,
    last_event_id: Option<&'a str>,
    comments: u64,
    retry_ms: Option<u64>,
    resume: Option<ResumeRecord<'a>>,
    session_id_sent: Option<&'a str>,
    session_id_received: Option<&'a str>,
    gap: bool,
    gap_bytes: u64,
    body_unknown: bool,
}

#[derive(Serialize)]
struct ResumeRecord<'a> {
    last_event_id: &'a str,
    continues: Option<String>,
    also_seen_on: Vec<String>,
}

fn stream_json<'a>(s: &Session, st: &'a mcpf_mcp::model::Stream, r: &Redactor) -> StreamRecord<'a> {
    StreamRecord {
        id: st.label(),
        transport: st.transport.name(),
        exchange: st.exchange.to_string(),
        input: st.input,
        method: &st.method,
        target: r.target(&st.target),
        client: endpoint(st.client),
        status: st.status,
        content_type: st.content_type.as_deref(),
        event_stream: st.event_stream,
        opened: st.opened.time.rfc3339(),
        opened_frame: st.opened.frame.frame,
        ended: st.ended.map(|m| m.time.rfc3339()),
        ended_frame: st.ended.map(|m| m.frame.frame),
        outcome: st.outcome,
        closed_by: st.closed_by.map(|d| match d {
            mcpf_model::Direction::ClientToServer => "client",
            mcpf_model::Direction::ServerToClient => "server",
        }),
        requests: st.requests().filter_map(|m| m.id.as_ref()).collect(),
        methods: st
            .client_messages
            .iter()
            .filter_map(|m| m.method.as_deref())
            .collect(),
        events: st.summary.count,
        first_event_id: st.summary.first_id.as_deref(),
        last_event_id: st.summary.last_id.as_deref(),
        comments: st.comments,
        retry_ms: st.last_retry,
        resume: st.resume.as_ref().map(|x| ResumeRecord {
            last_event_id: &x.last_event_id,
            continues: x.continues.map(|i| s.streams[i].label()),
            also_seen_on: x
                .also_seen_on
                .iter()
                .map(|&i| s.streams[i].label())
                .collect(),
        }),
        session_id_sent: st.session_id_sent.as_deref(),
        session_id_received: st.session_id_received.as_deref(),
        gap: st.gap,
        gap_bytes: st.gap_bytes,
        body_unknown: st.body_unknown,
    }
}

/// A session as the JSON report has it (see [`StreamRecord`] for why a struct).
#[derive(Serialize)]
struct SessionRecord<'a> {
    key: String,
    session_id: Option<&'a str>,
    server: String,
    endpoint: &'a str,
    client: String,
    transport: mcpf_mcp::model::Transport,
    stateless: bool,
    protocol_version: Option<&'a str>,
    client_info: Option<String>,
    server_info: Option<String>,
    initialize_seen: bool,
    start: String,
    end: String,
    event_id_scheme: &'static str,
    event_id_scheme_from: &'static str,
    transport_mode_header: Option<&'a str>,
    not_determinable: Value,
    fell_back: Option<Value>,
    resumption: Value,
    deleted: Option<String>,
    forgotten_by_server: Vec<String>,
    same_session_as: &'a [String],
    sources: Vec<&'a str>,
    merged_sources: Value,
    counts: Value,
    streams: Vec<StreamRecord<'a>>,
}

fn session_json<'a>(
    h: &'a SessionHeader,
    s: &'a Session,
    input_paths: &'a [String],
    r: &Redactor,
) -> SessionRecord<'a> {
    let fell_back = s.fallbacks.first().map(|f| {
        json!({
            "time": f.mark.time.rfc3339(),
            "from": f.from,
            "to": f.to,
            "trigger": f.trigger,
            "stream": s.streams[f.to_stream].label(),
        })
    });
    let c = &s.counts;
    let v = &h.verdict;
    SessionRecord {
        key: h.label(),
        session_id: s.session_id.as_deref(),
        server: endpoint(s.server),
        endpoint: &s.path,
        client: if s.client_ip.is_unspecified() {
            "unknown".to_string()
        } else {
            s.client_ip.to_string()
        },
        transport: s.transport,
        stateless: s.stateless,
        protocol_version: s.protocol_version.as_deref(),
        client_info: s.client_info.as_deref().map(|c| r.text(c).into_owned()),
        server_info: s.server_info.as_deref().map(|c| r.text(c).into_owned()),
        initialize_seen: s.initialize_seen,
        start: s.start.time.rfc3339(),
        end: s.end.time.rfc3339(),
        event_id_scheme: s.event_id_scheme.name(),
        event_id_scheme_from: s.event_id_scheme_from,
        transport_mode_header: s.transport_mode_header.as_deref(),
        not_determinable: s
            .not_determinable
            .iter()
            .map(|(k, why)| json!({ "kind": k, "reason": why }))
            .collect(),
        fell_back,
        resumption: json!({ "verdict": v.verdict, "reason": v.reason, "resumes": v.resumes }),
        deleted: s.deleted.map(|m| m.time.rfc3339()),
        forgotten_by_server: s.forgotten.iter().map(|m| m.time.rfc3339()).collect(),
        same_session_as: &h.same_session_as,
        sources: s
            .inputs
            .iter()
            .filter_map(|&i| input_paths.get(i as usize).map(String::as_str))
            .collect(),
        merged_sources: h
            .merged
            .iter()
            .map(|(input, path, matched, added, offset)| {
                json!({
                    "input": input,
                    "path": path,
                    "matched_exchanges": matched,
                    "added_exchanges": added,
                    "clock_offset_s": (offset * 1e6).round() / 1e6,
                })
            })
            .collect(),
        counts: json!({
            "streams": s.streams.len(),
            "events": c.events,
            "requests": c.requests,
            "responses": c.responses,
            "errors": c.errors,
            "notifications": c.notifications,
        }),
        streams: s.streams.iter().map(|st| stream_json(s, st, r)).collect(),
    }
}

fn finding_json(pos: usize, f: &Finding, r: &Redactor) -> Value {
    let (frames, refs) = frames_json(&f.frames);
    json!({
        "id": finding_id(pos),
        "kind": f.kind,
        "severity": f.severity.name(),
        "session": f.labels.session_label,
        "session_id": f.labels.session_id,
        "time": f.time.time.rfc3339(),
        "frames": frames,
        "frame_refs": refs,
        "streams": f.labels.stream_labels,
        "exchanges": f.labels.exchanges,
        "summary": r.text(&f.summary),
        "evidence": f.evidence,
        "caused_by": f.caused_by.iter().map(|&c| finding_id(c)).collect::<Vec<_>>(),
        "confidence": f.confidence,
        "confidence_note": f.confidence_note,
    })
}

fn entry_json(rep: &Report, e: &Entry, r: &Redactor) -> Value {
    let (frames, refs) = frames_json(&e.frames);
    json!({
        "time": e.time.time.rfc3339(),
        "frame": e.time.frame.frame,
        "input": e.time.frame.input,
        "session": rep.header(e.session).map(|h| h.label()),
        "stream": e.stream,
        "direction": e.arrow,
        "kind": e.kind,
        "summary": r.text(&e.text),
        "request_ids": e.request_ids.iter().map(|i| i.to_value()).collect::<Vec<_>>(),
        "event_ids": e.event_ids.as_ref().map(|(a, b)| json!([a, b])),
        "frames": frames,
        "frame_refs": refs,
        "findings": e.findings.iter().map(|&p| finding_id(p)).collect::<Vec<_>>(),
    })
}

fn events_json(s: &Session) -> Vec<Value> {
    let mut out = Vec::new();
    for st in &s.streams {
        // The stream's last event ID after each event (WHATWG: set by every `id` field, an
        // empty one resets it, ID-less events keep it).
        let mut last_event_id = String::new();
        for ev in &st.events {
            if let Some(id) = ev.id.as_deref() {
                last_event_id = id.to_string();
            }
            let ns = match ev.namespace {
                Namespace::Stream(i) => s.streams[i].label(),
                Namespace::Unknown => "unknown".into(),
            };
            out.push((
                ev.mark,
                json!({
                    "session": s.label(),
                    "stream": st.label(),
                    "transport": st.transport.name(),
                    "namespace": ns,
                    "attribution": ev.attribution,
                    "index": ev.index,
                    "id": ev.id,
                    "last_event_id": last_event_id,
                    "event": ev.event_type(),
                    "priming": ev.priming,
                    "retry": ev.retry,
                    "time": ev.mark.time.rfc3339(),
                    "time_estimated": ev.estimated_time,
                    "frame": ev.mark.frame.frame,
                    "input": ev.mark.frame.input,
                    "after_gap": ev.after_gap,
                    "data_bytes": ev.data_len,
                    "jsonrpc": ev.messages.iter().map(super::http::message_json).collect::<Vec<_>>(),
                }),
            ));
        }
    }
    out.sort_by_key(|(m, _)| *m);
    out.into_iter().map(|(_, v)| v).collect()
}

fn timeline_entries<'a>(rep: &'a Report, sel: &Selection) -> Vec<&'a Entry> {
    let mut all: Vec<&Entry> = rep
        .headers()
        .filter(|h| rep.session_selected(h, sel))
        .flat_map(|h| rep.timelines.get(h.head.idx).into_iter().flatten())
        .collect();
    all.sort_by_key(|e| (e.time, e.session));
    all
}

fn severity_counts(rep: &Report, shown: &[usize]) -> Value {
    let mut m = serde_json::Map::new();
    for sev in [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ] {
        let n = shown
            .iter()
            .filter(|&&p| rep.findings[p].severity == sev)
            .count();
        m.insert(sev.name().into(), json!(n));
    }
    Value::Object(m)
}

fn summary_json(rep: &Report, selected: usize, shown: &[usize]) -> Value {
    json!({
        "sessions": selected,
        "findings": severity_counts(rep, shown),
        "connections": rep.connections,
        "connections_with_gaps": rep.connections_with_gaps,
        "gap_bytes": rep.gap_bytes,
        "http": rep.http,
        "http_exchanges": rep.mcp.exchanges_total,
        "http_responses": rep.mcp.responses,
        "mcp_exchanges": rep.mcp.exchanges_mcp,
        "http_anomalies": rep.anomalies.len(),
        "limits": rep.limits,
    })
}

/// Writes `"key": [items]` with each item pretty at indent 4.
fn write_array(
    out: &mut dyn Write,
    key: &str,
    items: &mut dyn Iterator<Item = io::Result<Vec<u8>>>,
    last: bool,
) -> io::Result<()> {
    write!(out, "  \"{key}\": [")?;
    let mut any = false;
    for item in items {
        let item = item?;
        if item.is_empty() {
            continue;
        }
        out.write_all(if any { b",\n    " } else { b"\n    " })?;
        out.write_all(&item)?;
        any = true;
    }
    if any {
        out.write_all(b"\n  ]")?;
    } else {
        out.write_all(b"]")?;
    }
    out.write_all(if last { b"\n" } else { b",\n" })
}

/// The JSON document, assembled from the spilled session records.
pub fn write_json(
    out: &mut dyn Write,
    rep: &mut Report,
    sel: &Selection,
    r: &Redactor,
) -> io::Result<()> {
    let shown = rep.shown_findings(sel);
    let selected: Vec<SessionHeader> = rep
        .headers()
        .filter(|h| rep.session_selected(h, sel))
        .cloned()
        .collect();
    out.write_all(b"{\n")?;
    writeln!(out, "  \"schema_version\": {SCHEMA_VERSION},")?;
    out.write_all(b"  \"tool\": ")?;
    out.write_all(&pretty_at(&rep.tool, 2))?;
    out.write_all(b",\n  \"inputs\": ")?;
    out.write_all(&pretty_at(&rep.inputs, 2))?;
    out.write_all(b",\n  \"summary\": ")?;
    out.write_all(&pretty_at(&summary_json(rep, selected.len(), &shown), 2))?;
    out.write_all(b",\n")?;
    {
        let spill = &mut rep.sessions.records;
        let mut items = selected.iter().map(|h| {
            let mut buf = Vec::new();
            if let (Some(range), Some(sp)) = (h.record, spill.as_mut()) {
                sp.copy(range, &mut buf)?;
            }
            Ok(buf)
        });
        write_array(out, "sessions", &mut items, false)?;
    }
    let findings: Vec<Vec<u8>> = shown
        .iter()
        .map(|&p| pretty_at(&finding_json(p, &rep.findings[p], r), 4))
        .collect();
    write_array(out, "findings", &mut findings.into_iter().map(Ok), false)?;
    let timeline: Vec<Vec<u8>> = timeline_entries(rep, sel)
        .into_iter()
        .map(|e| pretty_at(&entry_json(rep, e, r), 4))
        .collect();
    write_array(
        out,
        "timeline",
        &mut timeline.into_iter().map(Ok),
        !sel.events,
    )?;
    if sel.events {
        let spill = &mut rep.sessions.events;
        let mut items = selected.iter().map(|h| {
            let mut buf = Vec::new();
            if let (Some(range), Some(sp)) = (h.events, spill.as_mut()) {
                sp.copy(range, &mut buf)?;
            }
            Ok(buf)
        });
        write_array(out, "events", &mut items, true)?;
    }
    out.write_all(b"}\n")
}

/// One record per line: `input`, `session`, `finding`, `timeline` (and `event` with `--events`),
/// then `summary`; each record carries `type` and `schema_version`.
pub fn write_ndjson(
    out: &mut dyn Write,
    rep: &mut Report,
    sel: &Selection,
    r: &Redactor,
) -> io::Result<()> {
    fn line(out: &mut dyn Write, kind: &str, compact: &[u8]) -> io::Result<()> {
        // `{"type":...,"schema_version":1,` then the record's own fields.
        let body = compact.strip_prefix(b"{").unwrap_or(compact);
        write!(
            out,
            "{{\"type\":\"{kind}\",\"schema_version\":{SCHEMA_VERSION}"
        )?;
        if body != b"}" {
            out.write_all(b",")?;
        }
        out.write_all(body)?;
        out.write_all(b"\n")
    }
    let shown = rep.shown_findings(sel);
    let selected: Vec<SessionHeader> = rep
        .headers()
        .filter(|h| rep.session_selected(h, sel))
        .cloned()
        .collect();
    for input in &rep.inputs {
        line(out, "input", &serde_json::to_vec(input)?)?;
    }
    for h in &selected {
        if let (Some(range), Some(sp)) = (h.record, rep.sessions.records.as_mut()) {
            let mut buf = Vec::new();
            sp.copy(range, &mut buf)?;
            line(out, "session", &buf)?;
        }
    }
    for &p in &shown {
        line(
            out,
            "finding",
            &serde_json::to_vec(&finding_json(p, &rep.findings[p], r))?,
        )?;
    }
    for e in timeline_entries(rep, sel) {
        line(
            out,
            "timeline",
            &serde_json::to_vec(&entry_json(rep, e, r))?,
        )?;
    }
    if sel.events {
        for h in &selected {
            if let (Some(range), Some(sp)) = (h.events, rep.sessions.events.as_mut()) {
                let mut buf = Vec::new();
                sp.copy(range, &mut buf)?;
                for l in buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    line(out, "event", l)?;
                }
            }
        }
    }
    let summary = json!({ "summary": summary_json(rep, selected.len(), &shown), "tool": rep.tool });
    line(out, "summary", &serde_json::to_vec(&summary)?)
}

/// Terminal styling: colour only when asked for and on a terminal.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
}

impl Style {
    fn severity(&self, sev: Severity) -> String {
        let name = sev.name().to_uppercase();
        if !self.color {
            return name;
        }
        let code = match sev {
            Severity::Critical => "1;97;41",
            Severity::High => "1;31",
            Severity::Medium => "33",
            Severity::Low => "36",
            Severity::Info => "2",
        };
        format!("\x1b[{code}m{name}\x1b[0m")
    }

    fn heading(&self, text: &str) -> String {
        if self.color {
            format!("\x1b[1m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

fn short_id(id: &str) -> String {
    if id.chars().count() <= 14 {
        return id.to_string();
    }
    let head: String = id.chars().take(4).collect();
    let tail: String = id
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{head}…{tail}")
}

fn frames_text(frames: &[Mark]) -> String {
    let mut nums: Vec<u64> = frames
        .iter()
        .map(|m| m.frame.frame)
        .filter(|&n| n > 0)
        .collect();
    nums.sort_unstable();
    nums.dedup();
    match nums.as_slice() {
        [] => String::new(),
        [one] => format!("frame {one}"),
        [first, .., last] if nums.len() > 4 => format!("frames {first}…{last}"),
        many => format!(
            "frames {}",
            many.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub fn write_human(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    r: &Redactor,
    style: Style,
    fail_on: Severity,
) -> io::Result<()> {
    writeln!(out, "{} {}", rep.tool.name, rep.tool.version)?;
    for input in &rep.inputs {
        super::write_input_line(out, input)?;
    }
    let lost = if rep.connections_with_gaps > 0 {
        format!(
            "{} lost data ({})",
            rep.connections_with_gaps,
            bytes(rep.gap_bytes)
        )
    } else {
        "none lost data".to_string()
    };
    let exchanges = format!(
        "{}, {} speaking MCP",
        super::table::count(rep.mcp.exchanges_total, "HTTP exchange", "HTTP exchanges"),
        rep.mcp.exchanges_mcp
    );
    // Logs and HAR files have no TCP: the line speaks of connections only for captures.
    let captures = rep
        .inputs
        .iter()
        .any(|i| i.error.is_none() && i.format.starts_with("pcap"));
    if captures {
        writeln!(
            out,
            "{} ({lost}); {exchanges}",
            super::table::count(rep.connections, "TCP connection", "TCP connections")
        )?;
    } else {
        writeln!(out, "{exchanges}")?;
    }
    for l in &rep.limits {
        writeln!(out, "  note: {}", terminal(l))?;
    }
    let shown = rep.shown_findings(sel);
    let all: Vec<&SessionHeader> = rep
        .headers()
        .filter(|s| rep.session_selected(s, sel))
        .collect();
    if rep.session_count() == 0 {
        writeln!(
            out,
            "\nno MCP session found\n\nexit 2: no MCP session in the inputs (why, and a hint, on standard error)"
        )?;
        return Ok(());
    }
    if all.is_empty() {
        writeln!(
            out,
            "\nno session matches the selection (--session, --since, --until)"
        )?;
        return Ok(());
    }
    // A large capture has thousands of healthy sessions: the table lists those with findings,
    // those asked for, and the first few; the JSON report lists them all.
    let with_findings: std::collections::BTreeSet<usize> =
        shown.iter().map(|&p| rep.findings[p].session).collect();
    let listed: Vec<&SessionHeader> = all
        .iter()
        .enumerate()
        .filter(|(i, s)| *i < 20 || with_findings.contains(&s.head.idx) || sel.sessions.is_some())
        .map(|(_, s)| *s)
        .collect();
    let sessions = listed;
    writeln!(out, "\n{}", style.heading("SESSIONS"))?;
    let mut table = new_table(&[
        "S",
        "Mcp-Session-Id",
        "server",
        "transport",
        "revision",
        "client",
        "fell back",
        "IDs",
        "resumption",
    ]);
    for s in &sessions {
        let v = &s.verdict;
        let id = match &s.head.session_id {
            Some(id) => terminal(&short_id(id)).into_owned(),
            None if s.head.stateless => "(stateless)".into(),
            None => "—".into(),
        };
        let mut server = format!(
            "{} {}",
            endpoint(s.head.server),
            terminal_truncated(&s.head.path, 20)
        );
        if !s.same_session_as.is_empty() {
            server.push_str(&format!(" (= {})", s.same_session_as.join(", ")));
        }
        table.add_row(vec![
            s.label(),
            id,
            server,
            match s.head.transport {
                mcpf_mcp::model::Transport::StreamableHttp => "streamable".into(),
                mcpf_mcp::model::Transport::LegacySse => "legacy SSE".into(),
            },
            s.head
                .protocol_version
                .as_deref()
                .map(|p| terminal_truncated(p, 12))
                .unwrap_or_else(|| "?".into()),
            s.head
                .client_info
                .as_deref()
                .map(|c| terminal_truncated(&r.text(c), 24))
                .unwrap_or_default(),
            s.head
                .fell_back
                .map(|m| m.time.clock_millis())
                .unwrap_or_else(|| "no".into()),
            s.head.event_id_scheme.name().into(),
            match v.verdict {
                "unsafe" => "UNSAFE".into(),
                "not_attempted" => "not tried".into(),
                other => other.into(),
            },
        ]);
    }
    writeln!(out, "{table}")?;
    if all.len() > sessions.len() {
        writeln!(
            out,
            " … and {} more sessions without findings (--format json lists every session; --session S9 shows one)",
            all.len() - sessions.len()
        )?;
    }
    for s in &sessions {
        for (_, path, matched, added, offset) in &s.merged {
            writeln!(
                out,
                " {}: {} matched {} exchanges of the capture (clock offset {:+.3} s applied), added {}",
                s.label(),
                terminal(path),
                matched,
                offset,
                added
            )?;
        }
    }

    for s in &sessions {
        let mine: Vec<usize> = shown
            .iter()
            .copied()
            .filter(|&p| rep.findings[p].session == s.head.idx)
            .collect();
        if !s.head.not_determinable.is_empty() {
            let kinds: Vec<&str> = s.head.not_determinable.iter().map(|(k, _)| *k).collect();
            let mut reasons: Vec<&str> = s
                .head
                .not_determinable
                .iter()
                .map(|(_, r)| r.as_str())
                .collect();
            reasons.dedup();
            writeln!(
                out,
                "\n{} not determinable from these inputs: {} ({})",
                s.label(),
                kinds.join(", "),
                reasons.join("; ")
            )?;
        }
        if mine.is_empty() {
            continue;
        }
        writeln!(
            out,
            "\n{}  root cause first, consequences indented",
            style.heading(&format!("FINDINGS ({})", s.label()))
        )?;
        // Cause → consequence trees: a finding is printed under its first shown cause.
        let parent = |p: usize| {
            rep.findings[p]
                .caused_by
                .iter()
                .copied()
                .find(|c| mine.contains(c))
        };
        let roots: Vec<usize> = mine
            .iter()
            .copied()
            .filter(|&p| parent(p).is_none())
            .collect();
        let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&p| (p, 0)).collect();
        let id_width = mine.iter().map(|&p| finding_id(p).len()).max().unwrap_or(2);
        while let Some((p, depth)) = stack.pop() {
            let f = &rep.findings[p];
            let indent = "  ".repeat(depth);
            writeln!(
                out,
                " {indent}{:<id_width$} {:<8} {}  {}  {}",
                finding_id(p),
                style.severity(f.severity),
                f.kind,
                f.time.time.clock_millis(),
                frames_text(&f.frames)
            )?;
            writeln!(out, " {indent}     {}", terminal(&r.text(&f.summary)))?;
            if let Some(note) = &f.confidence_note {
                writeln!(out, " {indent}     confidence reduced: {}", terminal(note))?;
            }
            let children: Vec<usize> = mine
                .iter()
                .copied()
                .filter(|&c| parent(c) == Some(p))
                .collect();
            for c in children.into_iter().rev() {
                stack.push((c, depth + 1));
            }
        }
    }

    for s in &sessions {
        let entries: &[Entry] = rep
            .timelines
            .get(s.head.idx)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if entries.is_empty() {
            continue;
        }
        let v = &s.verdict;
        writeln!(
            out,
            "\n{}  {}",
            style.heading(&format!("TIMELINE ({})", s.label())),
            s.head.start.time.date()
        )?;
        for e in entries {
            let text = terminal(&r.text(&e.text)).into_owned();
            let marker = if e.kind == "finding" {
                format!(
                    "▲ {}",
                    e.findings
                        .iter()
                        .map(|&p| finding_id(p))
                        .collect::<Vec<_>>()
                        .join(",")
                )
            } else {
                e.arrow.to_string()
            };
            writeln!(
                out,
                " {}  {:<6} {}",
                e.time.time.clock_millis(),
                marker,
                text
            )?;
        }
        writeln!(
            out,
            " resumption: {}{}",
            v.verdict,
            v.reason
                .as_deref()
                .map(|r| format!(" — {}", terminal(r)))
                .unwrap_or_default()
        )?;
    }

    // What to do: the root cause of the most severe chain.
    let worst = shown
        .iter()
        .copied()
        .filter(|&p| rep.findings[p].severity.at_least(Severity::Medium))
        .min_by_key(|&p| (rep.findings[p].severity, p));
    if let Some(p) = worst {
        let f = &rep.findings[p];
        writeln!(
            out,
            "\n{}  (mcp-forensics explain {})",
            style.heading("WHAT TO DO"),
            f.kind
        )?;
        writeln!(out, " {}", f.kind.info().fix)?;
    }
    let failing = rep
        .counted_findings(sel)
        .filter(|f| f.severity.at_least(fail_on))
        .count();
    writeln!(
        out,
        "\n{}",
        if failing > 0 {
            format!(
                "exit 1: {} at or above --fail-on {}",
                super::table::count(failing as u64, "finding", "findings"),
                fail_on.name()
            )
        } else {
            format!(
                "exit 0: no finding at or above --fail-on {}",
                fail_on.name()
            )
        }
    )?;
    Ok(())
}
