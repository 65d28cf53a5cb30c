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

use std::io::{self, Write};

use serde_json::{Value, json};

use super::redact::Redactor;
use super::sanitize::{terminal, terminal_truncated};
use super::table::{bytes, new_table};
use super::timeline::Entry;
use crate::capture::InputReport;
use crate::detect::verdict::Verdict;
use crate::detect::{Finding, Severity, finding_id, kind_info};
use crate::http::HttpStats;
use crate::mcp::model::{Namespace, Session};
use crate::mcp::{HttpAnomaly, McpStats};
use crate::model::{Mark, Timestamp, endpoint};

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

/// Everything the analysis produced.
pub struct Report {
    pub inputs: Vec<InputReport>,
    pub sessions: Vec<Session>,
    pub findings: Vec<Finding>,
    pub verdicts: Vec<Verdict>,
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
}

impl Report {
    fn session_selected(&self, s: &Session, sel: &Selection) -> bool {
        if let Some(keys) = &sel.sessions
            && !keys.iter().any(|k| {
                k.eq_ignore_ascii_case(&s.label()) || s.session_id.as_deref() == Some(k.as_str())
            })
        {
            return false;
        }
        if sel.since.is_some_and(|t| s.end.time < t) || sel.until.is_some_and(|t| s.start.time > t)
        {
            return false;
        }
        true
    }

    fn in_window(&self, m: Mark, sel: &Selection) -> bool {
        !(sel.since.is_some_and(|t| m.time < t) || sel.until.is_some_and(|t| m.time > t))
    }

    /// Positions of the findings shown.
    pub fn shown_findings(&self, sel: &Selection) -> Vec<usize> {
        self.findings
            .iter()
            .enumerate()
            .filter(|(_, f)| self.session_selected(&self.sessions[f.session], sel))
            .filter(|(_, f)| self.in_window(f.time, sel))
            .filter(|(_, f)| sel.min_severity.is_none_or(|m| f.severity.at_least(m)))
            .map(|(i, _)| i)
            .collect()
    }

    /// Findings that count for the exit code: selected sessions and time window, any severity.
    pub fn counted_findings(&self, sel: &Selection) -> impl Iterator<Item = &Finding> {
        let sel = sel.clone();
        self.findings.iter().filter(move |f| {
            self.session_selected(&self.sessions[f.session], &sel) && self.in_window(f.time, &sel)
        })
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

fn stream_json(s: &Session, st: &crate::mcp::model::Stream, r: &Redactor) -> Value {
    let first = st.summary.first_id.clone();
    let last = st.summary.last_id.clone();
    json!({
        "id": st.label(),
        "transport": st.transport.name(),
        "exchange": st.exchange.to_string(),
        "input": st.input,
        "method": st.method,
        "target": r.target(&st.target),
        "client": endpoint(st.client),
        "status": st.status,
        "content_type": st.content_type,
        "event_stream": st.event_stream,
        "opened": st.opened.time.rfc3339(),
        "opened_frame": st.opened.frame.frame,
        "ended": st.ended.map(|m| m.time.rfc3339()),
        "ended_frame": st.ended.map(|m| m.frame.frame),
        "outcome": st.outcome,
        "closed_by": st.closed_by.map(|d| match d {
            crate::capture::tcp::Direction::ClientToServer => "client",
            crate::capture::tcp::Direction::ServerToClient => "server",
        }),
        "requests": st.requests().filter_map(|m| m.id.as_ref().map(|i| i.to_value())).collect::<Vec<_>>(),
        "methods": st.client_messages.iter().filter_map(|m| m.method.clone()).collect::<Vec<_>>(),
        "events": st.summary.count,
        "first_event_id": first,
        "last_event_id": last,
        "comments": st.comments,
        "retry_ms": st.last_retry,
        "resume": st.resume.as_ref().map(|x| json!({
            "last_event_id": x.last_event_id,
            "continues": x.continues.map(|i| s.streams[i].label()),
            "also_seen_on": x.also_seen_on.iter().map(|&i| s.streams[i].label()).collect::<Vec<_>>(),
        })),
        "session_id_sent": st.session_id_sent,
        "session_id_received": st.session_id_received,
        "gap": st.gap,
        "gap_bytes": st.gap_bytes,
        "body_unknown": st.body_unknown,
    })
}

fn session_json(rep: &Report, s: &Session, v: &Verdict, r: &Redactor) -> Value {
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
    let inputs: Vec<&str> = s
        .inputs
        .iter()
        .filter_map(|&i| rep.inputs.get(i as usize).map(|x| x.path.as_str()))
        .collect();
    json!({
        "key": s.label(),
        "session_id": s.session_id,
        "server": endpoint(s.server),
        "endpoint": s.path,
        "client": s.client_ip.to_string(),
        "transport": s.transport,
        "stateless": s.stateless,
        "protocol_version": s.protocol_version,
        "client_info": s.client_info.as_deref().map(|c| r.text(c).into_owned()),
        "server_info": s.server_info.as_deref().map(|c| r.text(c).into_owned()),
        "initialize_seen": s.initialize_seen,
        "start": s.start.time.rfc3339(),
        "end": s.end.time.rfc3339(),
        "event_id_scheme": s.event_id_scheme.name(),
        "event_id_scheme_from": s.event_id_scheme_from,
        "transport_mode_header": s.transport_mode_header,
        "not_determinable": s.not_determinable.iter().map(|(k, why)| json!({ "kind": k, "reason": why })).collect::<Vec<_>>(),
        "fell_back": fell_back,
        "resumption": { "verdict": v.verdict, "reason": v.reason, "resumes": v.resumes },
        "deleted": s.deleted.map(|m| m.time.rfc3339()),
        "forgotten_by_server": s.forgotten.iter().map(|m| m.time.rfc3339()).collect::<Vec<_>>(),
        "same_session_as": s.same_session_as.iter().map(|&i| rep.sessions[i].label()).collect::<Vec<_>>(),
        "sources": inputs,
        "merged_sources": s.merged_sources.iter().map(|m| json!({
            "input": rep.inputs.get(m.input as usize).map(|x| x.path.clone()),
            "matched_exchanges": m.matched,
            "added_exchanges": m.added,
            "clock_offset_s": (m.offset_s * 1e6).round() / 1e6,
        })).collect::<Vec<_>>(),
        "counts": {
            "streams": s.streams.len(),
            "events": c.events,
            "requests": c.requests,
            "responses": c.responses,
            "errors": c.errors,
            "notifications": c.notifications,
        },
        "streams": s.streams.iter().map(|st| stream_json(s, st, r)).collect::<Vec<_>>(),
    })
}

fn finding_json(rep: &Report, pos: usize, f: &Finding, r: &Redactor) -> Value {
    let s = &rep.sessions[f.session];
    let (frames, refs) = frames_json(&f.frames);
    let exchanges: Vec<String> = f
        .streams
        .iter()
        .map(|&i| s.streams[i].exchange.to_string())
        .collect();
    json!({
        "id": finding_id(pos),
        "kind": f.kind,
        "severity": f.severity.name(),
        "session": s.label(),
        "session_id": s.session_id,
        "time": f.time.time.rfc3339(),
        "frames": frames,
        "frame_refs": refs,
        "streams": f.streams.iter().map(|&i| s.streams[i].label()).collect::<Vec<_>>(),
        "exchanges": exchanges,
        "summary": r.text(&f.summary),
        "evidence": f.evidence,
        "caused_by": f.caused_by.iter().map(|&c| finding_id(c)).collect::<Vec<_>>(),
        "confidence": f.confidence,
        "confidence_note": f.confidence_note,
    })
}

fn entry_json(rep: &Report, e: &Entry, r: &Redactor) -> Value {
    let (frames, _) = frames_json(&e.frames);
    json!({
        "time": e.time.time.rfc3339(),
        "frame": e.time.frame.frame,
        "input": e.time.frame.input,
        "session": rep.sessions[e.session].label(),
        "stream": e.stream,
        "direction": e.arrow,
        "kind": e.kind,
        "summary": r.text(&e.text),
        "request_ids": e.request_ids.iter().map(|i| i.to_value()).collect::<Vec<_>>(),
        "event_ids": e.event_ids.as_ref().map(|(a, b)| json!([a, b])),
        "frames": frames,
        "findings": e.findings.iter().map(|&p| finding_id(p)).collect::<Vec<_>>(),
    })
}

fn events_json(rep: &Report, s: &Session) -> Vec<Value> {
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
    let _ = rep;
    out.sort_by_key(|(m, _)| *m);
    out.into_iter().map(|(_, v)| v).collect()
}

fn timeline_entries<'a>(rep: &'a Report, sel: &Selection) -> Vec<&'a Entry> {
    let mut all: Vec<&Entry> = rep
        .sessions
        .iter()
        .filter(|s| rep.session_selected(s, sel))
        .flat_map(|s| rep.timelines.get(s.idx).into_iter().flatten())
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

pub fn document(rep: &Report, sel: &Selection, r: &Redactor) -> Value {
    let shown = rep.shown_findings(sel);
    let sessions: Vec<Value> = rep
        .sessions
        .iter()
        .filter(|s| rep.session_selected(s, sel))
        .map(|s| session_json(rep, s, &rep.verdicts[s.idx], r))
        .collect();
    let findings: Vec<Value> = shown
        .iter()
        .map(|&p| finding_json(rep, p, &rep.findings[p], r))
        .collect();
    let timeline: Vec<Value> = timeline_entries(rep, sel)
        .into_iter()
        .map(|e| entry_json(rep, e, r))
        .collect();
    let mut doc = json!({
        "schema_version": SCHEMA_VERSION,
        "tool": { "name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION") },
        "inputs": rep.inputs,
        "summary": {
            "sessions": sessions.len(),
            "findings": severity_counts(rep, &shown),
            "connections": rep.connections,
            "connections_with_gaps": rep.connections_with_gaps,
            "gap_bytes": rep.gap_bytes,
            "http": rep.http,
            "http_exchanges": rep.mcp.exchanges_total,
            "mcp_exchanges": rep.mcp.exchanges_mcp,
            "http_anomalies": rep.anomalies.len(),
            "limits": rep.limits,
        },
        "sessions": sessions,
        "findings": findings,
        "timeline": timeline,
    });
    if sel.events
        && let Some(o) = doc.as_object_mut()
    {
        let events: Vec<Value> = rep
            .sessions
            .iter()
            .filter(|s| rep.session_selected(s, sel))
            .flat_map(|s| events_json(rep, s))
            .collect();
        o.insert("events".into(), Value::Array(events));
    }
    doc
}

pub fn write_json(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    r: &Redactor,
) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &document(rep, sel, r))?;
    writeln!(out)
}

/// One record per line: `input`, `session`, `finding`, `timeline` (and `event` with `--events`),
/// then `summary`; each record carries `type` and `schema_version`.
pub fn write_ndjson(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    r: &Redactor,
) -> io::Result<()> {
    let doc = document(rep, sel, r);
    let mut line = |kind: &str, v: &Value| -> io::Result<()> {
        let mut rec = serde_json::Map::new();
        rec.insert("type".into(), json!(kind));
        rec.insert("schema_version".into(), json!(SCHEMA_VERSION));
        if let Value::Object(o) = v {
            for (k, val) in o {
                rec.insert(k.clone(), val.clone());
            }
        }
        serde_json::to_writer(&mut *out, &Value::Object(rec))?;
        writeln!(out)
    };
    for (key, kind) in [
        ("inputs", "input"),
        ("sessions", "session"),
        ("findings", "finding"),
        ("timeline", "timeline"),
        ("events", "event"),
    ] {
        if let Some(Value::Array(items)) = doc.get(key) {
            for item in items {
                line(kind, item)?;
            }
        }
    }
    let summary = json!({ "summary": doc["summary"], "tool": doc["tool"] });
    line("summary", &summary)
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
    writeln!(
        out,
        "{} {}",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION")
    )?;
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
    writeln!(
        out,
        "{} TCP connections ({lost}); {} HTTP exchanges, {} speaking MCP",
        rep.connections, rep.mcp.exchanges_total, rep.mcp.exchanges_mcp
    )?;
    for l in &rep.limits {
        writeln!(out, "  note: {}", terminal(l))?;
    }
    let sessions: Vec<&Session> = rep
        .sessions
        .iter()
        .filter(|s| rep.session_selected(s, sel))
        .collect();
    if sessions.is_empty() {
        writeln!(out, "\nno MCP session found")?;
        return Ok(());
    }
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
        let v = &rep.verdicts[s.idx];
        let id = match &s.session_id {
            Some(id) => terminal(&short_id(id)).into_owned(),
            None if s.stateless => "(stateless)".into(),
            None => "—".into(),
        };
        let mut server = format!("{} {}", endpoint(s.server), terminal_truncated(&s.path, 20));
        if !s.same_session_as.is_empty() {
            let other: Vec<String> = s
                .same_session_as
                .iter()
                .map(|&i| rep.sessions[i].label())
                .collect();
            server.push_str(&format!(" (= {})", other.join(", ")));
        }
        table.add_row(vec![
            s.label(),
            id,
            server,
            match s.transport {
                crate::mcp::model::Transport::StreamableHttp => "streamable".into(),
                crate::mcp::model::Transport::LegacySse => "legacy SSE".into(),
            },
            s.protocol_version
                .as_deref()
                .map(|p| terminal_truncated(p, 12))
                .unwrap_or_else(|| "?".into()),
            s.client_info
                .as_deref()
                .map(|c| terminal_truncated(&r.text(c), 24))
                .unwrap_or_default(),
            s.fallbacks
                .first()
                .map(|f| f.mark.time.clock_millis())
                .unwrap_or_else(|| "no".into()),
            s.event_id_scheme.name().into(),
            match v.verdict {
                "unsafe" => "UNSAFE".into(),
                "not_attempted" => "not tried".into(),
                other => other.into(),
            },
        ]);
    }
    writeln!(out, "{table}")?;
    for s in &sessions {
        for m in &s.merged_sources {
            let path = rep
                .inputs
                .get(m.input as usize)
                .map(|i| i.path.as_str())
                .unwrap_or("?");
            writeln!(
                out,
                " {}: {} matched {} exchanges of the capture (clock offset {:+.3} s applied), added {}",
                s.label(),
                terminal(path),
                m.matched,
                m.offset_s,
                m.added
            )?;
        }
    }

    let shown = rep.shown_findings(sel);
    for s in &sessions {
        let mine: Vec<usize> = shown
            .iter()
            .copied()
            .filter(|&p| rep.findings[p].session == s.idx)
            .collect();
        if !s.not_determinable.is_empty() {
            let kinds: Vec<&str> = s.not_determinable.iter().map(|(k, _)| *k).collect();
            let mut reasons: Vec<&str> =
                s.not_determinable.iter().map(|(_, r)| r.as_str()).collect();
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
        while let Some((p, depth)) = stack.pop() {
            let f = &rep.findings[p];
            let indent = "  ".repeat(depth);
            writeln!(
                out,
                " {indent}{} {:<8} {}  {}  {}",
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
        let entries: &[Entry] = rep.timelines.get(s.idx).map(Vec::as_slice).unwrap_or(&[]);
        if entries.is_empty() {
            continue;
        }
        let v = &rep.verdicts[s.idx];
        writeln!(
            out,
            "\n{}  {}",
            style.heading(&format!("TIMELINE ({})", s.label())),
            s.start.time.date()
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
        if let Some(info) = kind_info(f.kind) {
            writeln!(
                out,
                "\n{}  (mcp-forensics explain {})",
                style.heading("WHAT TO DO"),
                f.kind
            )?;
            writeln!(out, " {}", info.fix)?;
        }
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
                "exit 1: {failing} findings at or above --fail-on {}",
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
