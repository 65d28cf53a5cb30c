//! The JSON records of the `analyze` report and the two formats made of them: the document of
//! `--format json` and the NDJSON lines of `--format ndjson`. Sessions and streams are records of
//! their own (structs, not `json!` trees) because they are the bulk of a large capture's report;
//! findings, timeline entries and events are `json!` trees.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Value, json};

use mcpf_detect::{Finding, Severity, finding_id};
use mcpf_mcp::model::{Namespace, Session};
use mcpf_model::Mark;

use super::spill::{Ranges, Records};
use super::stamp::{Endpoint, Rfc3339};
use super::{RecordFormat, Report, SCHEMA_VERSION, Selection, SessionHeader};
use crate::note::InputJson;
use crate::redact::{CleanWrite, Redactor};
use crate::timeline::Entry;

/// Serializes pretty-printed, every line after the first indented by `indent` spaces, to sit
/// inside the document.
fn pretty_at(v: &impl Serialize, indent: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Indented::at(indent));
    // Writing to a `Vec` fails only if `v` cannot be serialized, which ours always can.
    if v.serialize(&mut ser).is_err() {
        out.clear();
    }
    out
}

/// `,`, a newline, and spaces enough for the indentation of any record the report writes:
/// a line's start is one slice of it (deeper lines take more writes).
const LINE: &[u8; 66] = b",\n                                                                ";

/// serde_json's `PrettyFormatter` (two spaces a level) with every line after the first
/// indented by `base` more spaces, each line's start written at once.
struct Indented {
    base: usize,
    level: usize,
    has_value: bool,
}

impl Indented {
    fn at(base: usize) -> Self {
        Indented {
            base,
            level: 0,
            has_value: false,
        }
    }

    /// A new line, after `,` unless `first`, indented to the current level.
    fn line<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        let mut n = self.base + 2 * self.level;
        let k = n.min(LINE.len() - 2);
        w.write_all(&LINE[usize::from(first)..2 + k])?;
        n -= k;
        while n > 0 {
            let k = n.min(LINE.len() - 2);
            w.write_all(&LINE[2..2 + k])?;
            n -= k;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
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

/// Where a finding was seen: the input and the server endpoint there.
fn vantage_json(v: mcpf_detect::Vantage) -> Value {
    json!({ "input": v.input, "server": Endpoint(v.server) })
}

/// The same finding at another vantage point of its session.
fn seen_at_json(x: &mcpf_detect::SeenAt) -> Value {
    let (frames, refs) = frames_json(&x.frames);
    json!({
        "input": x.vantage.input,
        "server": Endpoint(x.vantage.server),
        "observation": mcpf_mcp::model::session_label(x.session),
        "time": x.time.time.rfc3339(),
        "frames": frames,
        "frame_refs": refs,
        "streams": x.streams,
    })
}

/// A vantage point of a logical session and what it saw.
fn vantage_point_json(v: &mcpf_mcp::model::VantagePoint) -> Value {
    json!({
        "observation": mcpf_mcp::model::session_label(v.session),
        "input": v.input,
        "server": Endpoint(v.server),
        "streams": v.streams,
        "events": v.events,
        "start": v.start.time.rfc3339(),
        "end": v.end.time.rfc3339(),
        "first_frame": v.start.frame.frame,
    })
}

/// The Wireshark display filters of a finding's frames, one per capture input (a HAR's or a
/// log's "frames" are its entries or lines, which no Wireshark filter selects).
fn display_filters_json(frames: &[Mark], captures: &[bool]) -> Value {
    let is_capture = |i: u32| captures.get(i as usize).copied().unwrap_or(true);
    let refs = frames
        .iter()
        .filter(|m| is_capture(m.frame.input))
        .map(|m| (u64::from(m.frame.input), m.frame.frame));
    let filters = crate::doc::display_filters(refs);
    json!(
        filters
            .into_iter()
            .map(|(input, filter)| json!({"input": input, "filter": filter}))
            .collect::<Vec<_>>()
    )
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
    target: std::borrow::Cow<'a, str>,
    client: Endpoint,
    status: Option<u16>,
    content_type: Option<&'a str>,
    event_stream: bool,
    opened: Rfc3339,
    opened_frame: u64,
    ended: Option<Rfc3339>,
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
    events_unheld: u64,
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
        client: Endpoint(st.client),
        status: st.status,
        content_type: st.content_type.as_deref(),
        event_stream: st.event_stream,
        opened: Rfc3339(st.opened.time),
        opened_frame: st.opened.frame.frame,
        ended: st.ended.map(|m| Rfc3339(m.time)),
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
        events_unheld: st.events_unheld,
    }
}

/// A session as the JSON report has it (see [`StreamRecord`] for why a struct).
#[derive(Serialize)]
struct SessionRecord<'a> {
    key: String,
    session_id: Option<&'a str>,
    server: Endpoint,
    endpoint: &'a str,
    client: String,
    transport: mcpf_mcp::model::Transport,
    stateless: bool,
    protocol_version: Option<&'a str>,
    revision: &'a mcpf_mcp::revision::Revision,
    client_info: Option<String>,
    server_info: Option<String>,
    initialize_seen: bool,
    start: Rfc3339,
    end: Rfc3339,
    event_id_scheme: &'static str,
    event_id_scheme_from: &'static str,
    transport_mode_header: Option<&'a str>,
    not_determinable: Value,
    fell_back: Option<Value>,
    resumption: ResumptionRecord<'a>,
    deleted: Option<Rfc3339>,
    forgotten_by_server: Vec<Rfc3339>,
    same_session_as: &'a [String],
    vantage_points: Vec<Value>,
    continues: Option<String>,
    sources: Vec<&'a str>,
    merged_sources: Value,
    counts: CountsRecord,
    #[serde(skip_serializing_if = "StreamRecords::apart")]
    streams: StreamRecords<'a>,
}

/// A session's resumption verdict as its record has it.
#[derive(Serialize)]
struct ResumptionRecord<'a> {
    verdict: &'static str,
    reason: Option<&'a str>,
    resumes: usize,
}

/// A session's counts as its record has it.
#[derive(Serialize)]
struct CountsRecord {
    streams: usize,
    events: usize,
    requests: usize,
    responses: usize,
    errors: usize,
    notifications: usize,
}

/// A session's streams, each made into its record as it is written: a session can hold
/// hundreds of thousands, and their records together several times what the session holds.
struct StreamRecords<'a> {
    s: &'a Session,
    r: &'a Redactor,
    /// Written after the rest of the record by [`write_pretty_streams`], not by serde.
    apart: bool,
}

impl StreamRecords<'_> {
    fn apart(&self) -> bool {
        self.apart
    }
}

impl Serialize for StreamRecords<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let (s, r) = (self.s, self.r);
        ser.collect_seq(s.streams.iter().map(|st| stream_json(s, st, r)))
    }
}

/// How a pretty session record (at [`Indented::at`] 4) ends: its last member's line, its brace.
const SESSION_END: &[u8] = b"\n    }";

/// Spaces before a stream record of a pretty session record, and before each of its members.
const STREAM_INDENT: usize = 8;
const STREAM_MEMBER_INDENT: usize = STREAM_INDENT + 2;

/// The `streams` member of a pretty session record, its last, after the others: the same text
/// as serde_json with [`Indented`] writes, but each record's keys are written as they are (they
/// need no escaping), since a large capture's report is mostly stream records.
fn write_pretty_streams<W: Write>(w: &mut W, s: &Session, r: &Redactor) -> io::Result<()> {
    w.write_all(&LINE[..2 + STREAM_INDENT - 2])?;
    w.write_all(b"\"streams\": [")?;
    for (n, st) in s.streams.iter().enumerate() {
        w.write_all(&LINE[usize::from(n == 0)..2 + STREAM_INDENT])?;
        stream_json(s, st, r).write_pretty(w)?;
    }
    if !s.streams.is_empty() {
        w.write_all(&LINE[1..2 + STREAM_INDENT - 2])?;
    }
    w.write_all(b"]")
}

/// What comes before a stream record member's value, in one piece: `,`, a newline, the
/// indentation of [`STREAM_MEMBER_INDENT`] spaces, the key (which needs no escaping) and `": `.
macro_rules! stream_member {
    ($key:literal) => {
        concat!(",\n          \"", $key, "\": ")
    };
}

/// The members of a stream record written one by one, as [`Indented`] writes them inside a
/// pretty session record.
struct PrettyMembers<'w, W: Write> {
    w: &'w mut W,
    first: bool,
}

impl<W: Write> PrettyMembers<'_, W> {
    /// A member, `start` from [`stream_member`]: the first one without its comma.
    fn member(&mut self, start: &str, value: &impl Serialize) -> io::Result<()> {
        self.w
            .write_all(&start.as_bytes()[usize::from(self.first)..])?;
        self.first = false;
        let mut ser = serde_json::Serializer::with_formatter(
            &mut *self.w,
            Indented::at(STREAM_MEMBER_INDENT),
        );
        value.serialize(&mut ser).map_err(io::Error::from)
    }
}

impl StreamRecord<'_> {
    /// The record as serde_json with [`Indented`] writes it inside a pretty session record:
    /// the derived `Serialize` writes the same members in the same order (see the tests).
    fn write_pretty<W: Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"{")?;
        let mut m = PrettyMembers {
            w: &mut *w,
            first: true,
        };
        m.member(stream_member!("id"), &self.id)?;
        m.member(stream_member!("transport"), &self.transport)?;
        m.member(stream_member!("exchange"), &self.exchange)?;
        m.member(stream_member!("input"), &self.input)?;
        m.member(stream_member!("method"), &self.method)?;
        m.member(stream_member!("target"), &self.target)?;
        m.member(stream_member!("client"), &self.client)?;
        m.member(stream_member!("status"), &self.status)?;
        m.member(stream_member!("content_type"), &self.content_type)?;
        m.member(stream_member!("event_stream"), &self.event_stream)?;
        m.member(stream_member!("opened"), &self.opened)?;
        m.member(stream_member!("opened_frame"), &self.opened_frame)?;
        m.member(stream_member!("ended"), &self.ended)?;
        m.member(stream_member!("ended_frame"), &self.ended_frame)?;
        m.member(stream_member!("outcome"), &self.outcome)?;
        m.member(stream_member!("closed_by"), &self.closed_by)?;
        m.member(stream_member!("requests"), &self.requests)?;
        m.member(stream_member!("methods"), &self.methods)?;
        m.member(stream_member!("events"), &self.events)?;
        m.member(stream_member!("first_event_id"), &self.first_event_id)?;
        m.member(stream_member!("last_event_id"), &self.last_event_id)?;
        m.member(stream_member!("comments"), &self.comments)?;
        m.member(stream_member!("retry_ms"), &self.retry_ms)?;
        m.member(stream_member!("resume"), &self.resume)?;
        m.member(stream_member!("session_id_sent"), &self.session_id_sent)?;
        m.member(
            stream_member!("session_id_received"),
            &self.session_id_received,
        )?;
        m.member(stream_member!("gap"), &self.gap)?;
        m.member(stream_member!("gap_bytes"), &self.gap_bytes)?;
        m.member(stream_member!("body_unknown"), &self.body_unknown)?;
        m.member(stream_member!("events_unheld"), &self.events_unheld)?;
        w.write_all(&LINE[1..2 + STREAM_INDENT])?;
        w.write_all(b"}")
    }
}

fn session_json<'a>(
    h: &'a SessionHeader,
    s: &'a Session,
    input_paths: &'a [String],
    r: &'a Redactor,
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
        server: Endpoint(s.server),
        endpoint: &s.path,
        client: if s.client_ip.is_unspecified() {
            "unknown".to_string()
        } else {
            s.client_ip.to_string()
        },
        transport: s.transport,
        stateless: s.stateless,
        protocol_version: s.protocol_version.as_deref(),
        revision: &s.revision,
        client_info: s.client_info.as_deref().map(|c| r.text(c).into_owned()),
        server_info: s.server_info.as_deref().map(|c| r.text(c).into_owned()),
        initialize_seen: s.initialize_seen,
        start: Rfc3339(s.start.time),
        end: Rfc3339(s.end.time),
        event_id_scheme: s.event_id_scheme.name(),
        event_id_scheme_from: s.event_id_scheme_from,
        transport_mode_header: s.transport_mode_header.as_deref(),
        not_determinable: h
            .not_determinable(&s.lacks)
            .into_iter()
            .map(|(k, lack)| json!({ "kind": k, "reason": crate::lacks::reason(lack) }))
            .collect(),
        fell_back,
        resumption: ResumptionRecord {
            verdict: v.verdict,
            reason: v.reason.as_deref(),
            resumes: v.resumes,
        },
        deleted: s.deleted.map(|m| Rfc3339(m.time)),
        forgotten_by_server: s.forgotten.iter().map(|m| Rfc3339(m.time)).collect(),
        same_session_as: &h.same_session_as,
        vantage_points: s.vantage_points.iter().map(vantage_point_json).collect(),
        continues: s.continues.map(mcpf_mcp::model::session_label),
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
        counts: CountsRecord {
            streams: s.streams.len(),
            events: c.events,
            requests: c.requests,
            responses: c.responses,
            errors: c.errors,
            notifications: c.notifications,
        },
        streams: StreamRecords { s, r, apart: false },
    }
}

fn finding_json(pos: usize, f: &Finding, r: &Redactor, captures: &[bool]) -> Value {
    let causes = f.caused_by.iter().map(|&c| finding_id(c)).collect();
    finding_json_as(finding_id(pos), causes, f, r, captures)
}

/// Which inputs are packet captures (their frames are Wireshark's), by index.
fn capture_inputs(rep: &Report) -> Vec<bool> {
    rep.inputs.iter().map(|i| i.format.is_capture()).collect()
}

/// A finding under the ID `id`, its causes named `causes`.
pub(super) fn finding_json_as(
    id: String,
    causes: Vec<String>,
    f: &Finding,
    r: &Redactor,
    captures: &[bool],
) -> Value {
    let (frames, refs) = frames_json(&f.frames);
    let every: Vec<Mark> = f
        .frames
        .iter()
        .chain(f.seen_at.iter().flat_map(|x| &x.frames))
        .copied()
        .collect();
    json!({
        "id": id,
        "kind": f.kind,
        "severity": f.severity.name(),
        "session": f.labels.session_label,
        "session_id": f.labels.session_id,
        "time": f.time.time.rfc3339(),
        "frames": frames,
        "frame_refs": refs,
        "display_filters": display_filters_json(&every, captures),
        "vantage": vantage_json(f.vantage),
        "seen_at": f.seen_at.iter().map(seen_at_json).collect::<Vec<_>>(),
        "streams": f.labels.stream_labels,
        "exchanges": f.labels.exchanges,
        "summary": r.text(&f.summary),
        "evidence": f.evidence,
        "caused_by": causes,
        "confidence": f.confidence,
        "confidence_note": f.confidence_note,
    })
}

fn entry_json(rep: &Report, e: &Entry, r: &Redactor) -> Value {
    let session = rep.header(e.session).map(|h| h.label());
    let findings = e.findings.iter().map(|&p| finding_id(p)).collect();
    entry_json_as(session, findings, e, r)
}

/// A timeline entry of the session `session`, the findings placed on it named `findings`.
pub(super) fn entry_json_as(
    session: Option<String>,
    findings: Vec<String>,
    e: &Entry,
    r: &Redactor,
) -> Value {
    let (frames, refs) = frames_json(&e.frames);
    json!({
        "time": e.time.time.rfc3339(),
        "frame": e.time.frame.frame,
        "input": e.time.frame.input,
        "session": session,
        "stream": e.stream,
        "direction": e.arrow,
        "kind": e.kind,
        "summary": r.text(&e.text),
        "request_ids": e.request_ids.iter().map(|i| i.to_value()).collect::<Vec<_>>(),
        "event_ids": e.event_ids.as_ref().map(|(a, b)| json!([a, b])),
        "frames": frames,
        "frame_refs": refs,
        "findings": findings,
    })
}

/// An event as the JSON report has it (see [`StreamRecord`] for why a struct): with `--events`,
/// events are the bulk of the report, rendered one at a time.
#[derive(Serialize)]
pub(super) struct EventRecord<'a> {
    session: &'a str,
    stream: &'a str,
    transport: &'static str,
    namespace: &'a str,
    attribution: mcpf_mcp::model::Attribution,
    minted_by_evidence: &'static str,
    index: u32,
    id: Option<&'a str>,
    last_event_id: &'a str,
    event: &'a str,
    priming: bool,
    retry: Option<u32>,
    time: Rfc3339,
    time_estimated: bool,
    frame: u64,
    input: mcpf_model::InputId,
    after_gap: bool,
    data_bytes: u32,
    jsonrpc: Vec<Value>,
}

/// A session's events in the report's order, by position: (stream, event, the event whose `id`
/// the stream's last event ID is after it). Time order; ties keep stream order, then position.
fn event_order(s: &Session) -> Vec<(u32, u32, Option<u32>)> {
    let mut order = Vec::with_capacity(s.streams.iter().map(|st| st.events.len()).sum());
    for (si, st) in s.streams.iter().enumerate() {
        // The stream's last event ID after each event (WHATWG: set by every `id` field, an
        // empty one resets it, ID-less events keep it).
        let mut last = None;
        for (ei, ev) in st.events.iter().enumerate() {
            if ev.id.is_some() {
                last = Some(ei as u32);
            }
            order.push((si as u32, ei as u32, last));
        }
    }
    order.sort_by_key(|&(si, ei, _)| s.streams[si as usize].events[ei as usize].mark);
    order
}

/// Writes each of a session's events, in the report's order, with `write`.
pub(super) fn for_each_event(
    s: &Session,
    mut write: impl FnMut(&EventRecord) -> io::Result<()>,
) -> io::Result<()> {
    let session = s.label();
    let labels: Vec<String> = s.streams.iter().map(|st| st.label()).collect();
    for (si, ei, last) in event_order(s) {
        let st = &s.streams[si as usize];
        let ev = &st.events[ei as usize];
        let last_event_id = last
            .and_then(|i| st.events[i as usize].id.as_deref())
            .unwrap_or("");
        write(&EventRecord {
            session: &session,
            stream: &labels[si as usize],
            transport: st.transport.name(),
            namespace: match ev.namespace {
                Namespace::Stream(i) => &labels[i],
                Namespace::Unknown => "unknown",
            },
            attribution: ev.attribution,
            minted_by_evidence: ev.attribution.describe(),
            index: ev.index,
            id: ev.id.as_deref(),
            last_event_id,
            event: ev.event_type(),
            priming: ev.priming,
            retry: ev.retry(),
            time: Rfc3339(ev.mark.time),
            time_estimated: ev.estimated_time,
            frame: ev.mark.frame.frame,
            input: ev.mark.frame.input,
            after_gap: ev.after_gap,
            data_bytes: ev.data_len,
            jsonrpc: ev.messages.iter().map(crate::http::message_json).collect(),
        })?;
    }
    Ok(())
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

/// `summary.evidence_conflicts`: each place the capture said two things (a retransmission with
/// other content than the first copy), with its connection, frame and both frames in words.
fn conflicts_json(anomalies: &mcpf_mcp::Anomalies) -> Vec<Value> {
    anomalies
        .conflicts()
        .map(|a| {
            json!({
                "kind": a.kind.name(),
                "connection": a.conn.number(),
                "input": a.mark.frame.input,
                "frame": a.mark.frame.frame,
                "detail": a.detail,
            })
        })
        .collect()
}

/// `summary.http_anomalies_by_kind`: each kind the run had, the most frequent first, with its
/// count and the input and frame of its first, so a reader can go to one.
fn anomalies_by_kind(anomalies: &mcpf_mcp::Anomalies) -> Vec<Value> {
    anomalies
        .by_kind()
        .iter()
        .map(|(kind, c)| {
            json!({
                "kind": kind.name(),
                "count": c.count,
                "input": c.first.frame.input,
                "frame": c.first.frame.frame,
            })
        })
        .collect()
}

fn summary_json(rep: &Report, sel: &Selection, selected: usize, shown: &[usize]) -> Value {
    let (by_input, by_server) = super::rollup::rollups(rep, sel, shown);
    let input = |r: &super::rollup::Rollup| json!({"input": r.input, "path": r.name, "sessions": r.sessions, "findings": severity_counts(rep, &r.findings)});
    let server = |r: &super::rollup::Rollup| json!({"server": r.name, "sessions": r.sessions, "findings": severity_counts(rep, &r.findings)});
    json!({
        "sessions": selected,
        "findings": severity_counts(rep, shown),
        "connections": rep.connections,
        "connections_with_gaps": rep.connections_with_gaps,
        "gap_bytes": rep.gap_bytes,
        "snaplen_bytes": rep.snaplen_bytes,
        "http": crate::http::HttpSummary::of(&rep.http),
        "http_exchanges": rep.mcp.exchanges_total,
        "http_responses": rep.mcp.responses,
        "mcp_exchanges": rep.mcp.exchanges_mcp,
        "jsonrpc_not_mcp": rep.mcp.jsonrpc_not_mcp,
        "event_streams_not_mcp": rep.mcp.event_streams_not_mcp,
        "mcp_requests_cut": rep.mcp.requests_cut,
        "mcp_requests_cut_methods": rep.mcp.requests_cut_methods,
        "mcp_unattributed": rep.mcp.unattributed,
        "mcp_unattributed_examples": rep.mcp.unattributed_examples,
        "http_anomalies": rep.anomalies.total(),
        "http_anomalies_by_kind": anomalies_by_kind(&rep.anomalies),
        "evidence_conflicts": conflicts_json(&rep.anomalies),
        "limits": rep.limits.iter().map(crate::note::sentence).collect::<Vec<_>>(),
        "tls_not_decrypted": rep.tls_not_decrypted.iter().map(|f| json!({
            "connection": f.conn.number(),
            "input": f.mark.frame.input,
            "frame": f.mark.frame.frame,
            "time": f.mark.time.rfc3339(),
            "reason": f.detail,
        })).collect::<Vec<_>>(),
        "clock_offsets": rep.clock_offsets,
        "by_input": by_input.iter().map(input).collect::<Vec<_>>(),
        "by_server": by_server.iter().map(server).collect::<Vec<_>>(),
    })
}

/// Writes `"key": [items]` with each item pretty at indent 4.
fn write_array(
    out: &mut dyn Write,
    key: &str,
    items: &mut dyn Iterator<Item = io::Result<Vec<u8>>>,
    last: bool,
) -> io::Result<()> {
    let mut array = Array::open(out, key)?;
    for item in items {
        let item = item?;
        if !item.is_empty() {
            array.item(out)?;
            out.write_all(&item)?;
        }
    }
    array.close(out, last)
}

/// A `"key": [...]` of the document being written: items are written between `item` calls.
struct Array {
    any: bool,
}

impl Array {
    fn open(out: &mut dyn Write, key: &str) -> io::Result<Array> {
        write!(out, "  \"{key}\": [")?;
        Ok(Array { any: false })
    }

    /// Starts the next item.
    fn item(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(if self.any { b",\n    " } else { b"\n    " })?;
        self.any = true;
        Ok(())
    }

    fn close(self, out: &mut dyn Write, last: bool) -> io::Result<()> {
        out.write_all(if self.any { b"\n  ]" } else { b"]" })?;
        out.write_all(if last { b"\n" } else { b",\n" })
    }
}

/// The document's `sessions`: the records as they were spilled, passed on unscanned when they
/// were found free of secrets then.
fn write_sessions(
    out: &mut dyn CleanWrite,
    rep: &mut Report,
    selected: &[Ranges],
) -> io::Result<()> {
    let mut array = Array::open(out, "sessions")?;
    for &(record, _) in selected {
        if record.is_none() {
            continue;
        }
        array.item(out)?;
        if rep.sessions.is_clean(record) {
            // A clean record is small (see `Spool`): read whole, passed on unscanned.
            out.write_clean(&rep.sessions.spilled(Records::Sessions, record)?)?;
        } else {
            rep.sessions.copy_spilled(Records::Sessions, record, out)?;
        }
    }
    array.close(out, false)
}

/// The JSON document, assembled from the spilled session records.
pub fn write_json(
    out: &mut dyn CleanWrite,
    rep: &mut Report,
    sel: &Selection,
    r: &Redactor,
) -> io::Result<()> {
    let shown = rep.shown_findings(sel);
    let selected = rep.selected_spills(sel);
    out.write_all(b"{\n")?;
    writeln!(out, "  \"schema_version\": {SCHEMA_VERSION},")?;
    out.write_all(b"  \"tool\": ")?;
    out.write_all(&pretty_at(&rep.tool, 2))?;
    out.write_all(b",\n  \"inputs\": ")?;
    out.write_all(&pretty_at(&InputJson::all(&rep.inputs), 2))?;
    out.write_all(b",\n  \"summary\": ")?;
    let count = rep.selected_count(sel);
    out.write_all(&pretty_at(&summary_json(rep, sel, count, &shown), 2))?;
    out.write_all(b",\n")?;
    write_sessions(out, rep, &selected)?;
    let captures = capture_inputs(rep);
    let mut findings = shown.iter().map(|&p| {
        Ok(pretty_at(
            &finding_json(p, &rep.findings[p], r, &captures),
            4,
        ))
    });
    write_array(out, "findings", &mut findings, false)?;
    let mut timeline = rep
        .shown_timeline(sel)
        .into_iter()
        .map(|e| Ok(pretty_at(&entry_json(rep, e, r), 4)));
    write_array(out, "timeline", &mut timeline, false)?;
    let mut profile = profile_json(rep, r)
        .into_iter()
        .map(|row| Ok(pretty_at(&row, 4)));
    write_array(out, "profile", &mut profile, !sel.events)?;
    if sel.events {
        // Copied from the spill piece by piece: the events can be far larger than memory.
        let mut array = Array::open(out, "events")?;
        for &(_, events) in selected.iter().filter(|(_, e)| e.is_some()) {
            array.item(out)?;
            rep.sessions.copy_spilled(Records::Events, events, out)?;
        }
        array.close(out, true)?;
    }
    out.write_all(b"}\n")
}

/// One NDJSON record: `{"type":...,"schema_version":1,` then the record's own fields.
pub(super) fn write_line(out: &mut dyn Write, kind: &str, compact: &[u8]) -> io::Result<()> {
    crate::ndjson::write_line(out, kind, SCHEMA_VERSION, compact)
}

/// One record per line: `session`, `finding`, `timeline` (and `event` with `--events`), then
/// `input` and `summary`, as a live stream's end; each record carries `type` and
/// `schema_version`.
pub fn write_ndjson(
    out: &mut dyn Write,
    rep: &mut Report,
    sel: &Selection,
    r: &Redactor,
) -> io::Result<()> {
    let shown = rep.shown_findings(sel);
    let selected = rep.selected_spills(sel);
    for &(record, _) in &selected {
        let Some(range) = record.filter(|&(_, len)| len > 2) else {
            continue;
        };
        crate::ndjson::write_spilled(out, "session", SCHEMA_VERSION, range, |r, out| {
            rep.sessions.copy_spilled(Records::Sessions, Some(r), out)
        })?;
    }
    let captures = capture_inputs(rep);
    for &p in &shown {
        let finding = finding_json(p, &rep.findings[p], r, &captures);
        write_line(out, "finding", &serde_json::to_vec(&finding)?)?;
    }
    for e in rep.shown_timeline(sel) {
        write_line(
            out,
            "timeline",
            &serde_json::to_vec(&entry_json(rep, e, r))?,
        )?;
    }
    if sel.events {
        for &(_, events) in &selected {
            rep.sessions
                .spilled_lines(Records::Events, events, &mut |l| {
                    write_line(out, "event", l)
                })?;
        }
    }
    // Last as in a live stream's, where they are complete only at the end.
    write_ndjson_tail(out, rep, sel, r)
}

fn write_ndjson_summary(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    shown: &[usize],
) -> io::Result<()> {
    let count = rep.selected_count(sel);
    let summary = json!({ "summary": summary_json(rep, sel, count, shown), "tool": rep.tool });
    write_line(out, "summary", &serde_json::to_vec(&summary)?)
}

/// What NDJSON leaves for the end, written live or not: the call profile's rows, every `input`
/// (their accounting is complete only now), then the `summary`.
pub fn write_ndjson_tail(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    r: &Redactor,
) -> io::Result<()> {
    for row in profile_json(rep, r) {
        write_line(out, "profile", &serde_json::to_vec(&row)?)?;
    }
    for input in &rep.inputs {
        write_line(out, "input", &serde_json::to_vec(&InputJson::new(input))?)?;
    }
    write_ndjson_summary(out, rep, sel, &rep.shown_findings(sel))
}

/// A session's record as it is spilled: pretty, indented to sit in the document's `sessions`,
/// or on one line for NDJSON.
pub(super) fn session_record(
    format: RecordFormat,
    h: &SessionHeader,
    s: &Session,
    input_paths: &[String],
    r: &Redactor,
) -> Vec<u8> {
    // Writing to a `Vec` fails only if the record cannot be serialized, which ours always can.
    write_session_record(format, h, s, input_paths, r, Vec::with_capacity(1024)).unwrap_or_default()
}

/// [`session_record`] written to `out` as it is made, one stream at a time; `out` is handed
/// back. Generic and by value: the serializer writes a record in thousands of small pieces,
/// each a call made directly, not through a pointer.
pub(super) fn write_session_record<W: Write>(
    format: RecordFormat,
    h: &SessionHeader,
    s: &Session,
    input_paths: &[String],
    r: &Redactor,
    out: W,
) -> io::Result<W> {
    let mut v = session_json(h, s, input_paths, r);
    match format {
        RecordFormat::Pretty => {
            // All but the streams, which are the last member: they are written after it.
            v.streams.apart = true;
            let mut head = Vec::with_capacity(4096);
            v.serialize(&mut serde_json::Serializer::with_formatter(
                &mut head,
                Indented::at(4),
            ))?;
            let mut out = out;
            match head.strip_suffix(SESSION_END) {
                Some(members) => {
                    out.write_all(members)?;
                    write_pretty_streams(&mut out, s, r)?;
                    out.write_all(SESSION_END)?;
                }
                // Never: a session record has members. Written whole, as serde writes it.
                None => {
                    v.streams.apart = false;
                    v.serialize(&mut serde_json::Serializer::with_formatter(
                        &mut out,
                        Indented::at(4),
                    ))?;
                }
            }
            Ok(out)
        }
        _ => {
            let mut ser = serde_json::Serializer::new(out);
            v.serialize(&mut ser)?;
            Ok(ser.into_inner())
        }
    }
}

/// Writes a session's events as they are spilled, one at a time: pretty and comma-separated to
/// sit in the document's `events`, or one a line for NDJSON; nothing when the session has none.
pub(super) fn write_event_records(
    format: RecordFormat,
    s: &Session,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut first = true;
    for_each_event(s, |e| {
        if format == RecordFormat::Pretty {
            if !first {
                out.write_all(b",\n    ")?;
            }
            out.write_all(&pretty_at(e, 4))?;
        } else {
            serde_json::to_writer(&mut *out, e)?;
            out.write_all(b"\n")?;
        }
        first = false;
        Ok(())
    })
}

/// The call profile's rows: per server and method, the calls, how they failed, those with no
/// answer in the inputs, and the answered ones' latency in milliseconds.
pub(crate) fn profile_json(rep: &Report, r: &Redactor) -> Vec<serde_json::Value> {
    let ms = |ns: u64| (ns as f64 / 1e3).round() / 1e3;
    rep.profile
        .rows()
        .map(|(key, calls)| {
            let latency = calls.latency().map(|p| {
                json!({
                    "answered": p.count,
                    "p50_ms": ms(p.p50),
                    "p95_ms": ms(p.p95),
                    "p99_ms": ms(p.p99),
                    "max_ms": ms(p.max),
                    "approximate": p.approximate,
                })
            });
            let codes: Vec<serde_json::Value> = calls
                .jsonrpc_errors
                .iter()
                .map(|(code, n)| json!({"code": code, "count": n}))
                .collect();
            let statuses: Vec<serde_json::Value> = calls
                .http_errors
                .iter()
                .map(|(status, n)| json!({"status": status, "count": n}))
                .collect();
            json!({
                "server": r.text(&key.server),
                "method": r.text(&key.method),
                "calls": calls.calls,
                "errors": calls.errors(),
                "jsonrpc_errors": codes,
                "tool_errors": calls.tool_errors,
                "http_errors": statuses,
                "no_answer_seen": calls.no_answer_seen,
                "latency": latency,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pretty_at` as it was: serde_json's pretty text, indented after every newline.
    fn indented_after(v: &Value, indent: usize) -> Vec<u8> {
        let text = serde_json::to_vec_pretty(v).unwrap();
        let pad = format!("\n{}", " ".repeat(indent));
        String::from_utf8(text)
            .unwrap()
            .replace('\n', &pad)
            .into_bytes()
    }

    #[test]
    fn a_stream_member_starts_at_its_indentation() {
        let start = stream_member!("id");
        assert_eq!(
            start,
            format!(",\n{}\"id\": ", " ".repeat(STREAM_MEMBER_INDENT))
        );
    }

    #[test]
    fn stream_records_are_written_as_serde_writes_them() {
        let ids = [
            mcpf_mcp::jsonrpc::RequestId::Number("7".into()),
            mcpf_mcp::jsonrpc::RequestId::String("a\"b\u{1}".into()),
        ];
        let full = || StreamRecord {
            id: "get:s12".into(),
            transport: "get",
            exchange: "tcp7#2".into(),
            input: 3,
            method: "GET",
            target: "/mcp?x=\"é\"\n".into(),
            client: Endpoint("10.0.0.1:40000".parse().unwrap()),
            status: Some(200),
            content_type: Some("text/event-stream"),
            event_stream: true,
            opened: Rfc3339(mcpf_model::Timestamp(1_700_000_000_123_456_789)),
            opened_frame: 24,
            ended: Some(Rfc3339(mcpf_model::Timestamp(-5))),
            ended_frame: Some(u64::MAX),
            outcome: Some(mcpf_http::Outcome::Reset),
            closed_by: Some("server"),
            requests: ids.iter().collect(),
            methods: vec!["initialize", "tools/call"],
            events: 29,
            first_event_id: Some("3-10"),
            last_event_id: Some(""),
            comments: 1,
            retry_ms: Some(1000),
            resume: Some(ResumeRecord {
                last_event_id: "3-9",
                continues: Some("post:s5".into()),
                also_seen_on: vec!["post:s1".into(), "get:s2".into()],
            }),
            session_id_sent: Some("325554a4"),
            session_id_received: None,
            gap: true,
            gap_bytes: 12,
            body_unknown: false,
            events_unheld: 3,
        };
        let bare = || StreamRecord {
            status: None,
            content_type: None,
            ended: None,
            ended_frame: None,
            outcome: None,
            closed_by: None,
            requests: Vec::new(),
            methods: Vec::new(),
            first_event_id: None,
            last_event_id: None,
            retry_ms: None,
            resume: Some(ResumeRecord {
                last_event_id: "",
                continues: None,
                also_seen_on: Vec::new(),
            }),
            ..full()
        };
        let none = StreamRecord {
            resume: None,
            ..bare()
        };
        for record in [full(), bare(), none] {
            let mut by_serde = Vec::new();
            record
                .serialize(&mut serde_json::Serializer::with_formatter(
                    &mut by_serde,
                    Indented::at(STREAM_INDENT),
                ))
                .unwrap();
            let mut by_hand = Vec::new();
            record.write_pretty(&mut by_hand).unwrap();
            assert_eq!(
                String::from_utf8(by_hand).unwrap(),
                String::from_utf8(by_serde).unwrap()
            );
        }
    }

    #[test]
    fn pretty_at_indents_as_serde_pretty_text_shifted() {
        let mut deep = json!({"leaf": [1, "a\nb", {}], "empty": []});
        for level in 0..40 {
            deep = json!({ "level": level, "inner": [deep, null, [], {"k": 1.5}] });
        }
        for v in [json!(1), json!([]), json!({}), json!({"a": [[]]}), deep] {
            for indent in [0, 2, 4] {
                assert_eq!(pretty_at(&v, indent), indented_after(&v, indent));
            }
        }
    }
}
