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

mod human;
mod json;
mod live;
mod profile;
mod rollup;
pub(crate) mod spill;
mod stamp;
mod writer;

pub use human::{DEFAULT_WIDTH, Style, write_human};
pub(crate) use human::{
    FindingText, block_heading, finding_row, frames_text, opened_in_run, seen_lines, stream_legend,
    write_finding, write_fix, write_session_table, write_timeline_row, write_verdict_line,
};
pub use json::{write_json, write_ndjson, write_ndjson_tail};
pub use live::{LiveLines, LiveSession};
pub use writer::SessionWriter;

use serde::Serialize;

use mcpf_detect::verdict::Verdict;
use mcpf_detect::{Finding, Severity};
use mcpf_http::HttpStats;
use mcpf_mcp::McpStats;
use mcpf_mcp::model::SessionHead;
use mcpf_model::{Anomaly, ConnId, FrameRef, InputReport, Mark, Timestamp};

use crate::timeline::Entry;
use spill::{Range, Ranges};

const SCHEMA_VERSION: u32 = 1;

/// What the report shows, after the filters.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub sessions: Option<Vec<String>>,
    pub since: Option<TimeBound>,
    pub until: Option<TimeBound>,
    pub min_severity: Option<Severity>,
    pub events: bool,
    pub all_events: bool,
    /// Every session's timeline, those without findings too (`--all`).
    pub all_timelines: bool,
    /// The call profile in the terminal report (`--profile`; the JSON always has it).
    pub profile: bool,
}

/// A `--since` / `--until` time: an instant, or a time of day (UTC, as the timeline prints it)
/// on the date each session began, the date its timeline heads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeBound {
    At(Timestamp),
    /// Nanoseconds since midnight UTC.
    OfDay(i64),
}

const DAY_NS: i64 = 86_400_000_000_000;

impl TimeBound {
    /// The instant it names for a session that began at `start`.
    pub fn for_session(self, start: Timestamp) -> Timestamp {
        match self {
            TimeBound::At(t) => t,
            TimeBound::OfDay(ns) => Timestamp(start.0 - start.0.rem_euclid(DAY_NS) + ns),
        }
    }

    /// `12:00:00Z`-style times of day: `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff…`, optionally
    /// followed by `Z`.
    pub fn parse_time_of_day(text: &str) -> Option<TimeBound> {
        let t = text.trim().trim_end_matches(['Z', 'z']);
        let mut parts = t.split(':');
        let (h, m) = (parts.next()?, parts.next()?);
        let s = parts.next().unwrap_or("0");
        if parts.next().is_some() {
            return None;
        }
        let num = |x: &str, max: i64| {
            (!x.is_empty() && x.len() <= 2 && x.bytes().all(|b| b.is_ascii_digit()))
                .then(|| x.parse::<i64>().ok())
                .flatten()
                .filter(|&v| v <= max)
        };
        let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
        if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let nanos = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<9}").parse::<i64>().ok()?
        };
        let secs = num(h, 23)? * 3600 + num(m, 59)? * 60 + num(whole, 59)?;
        Some(TimeBound::OfDay(secs * 1_000_000_000 + nanos))
    }
}

impl Selection {
    /// Whether `--session` names the session labelled `label` with this ID (its label, its ID
    /// whole or shortened as the table prints it); false when no `--session` was given.
    pub fn names(&self, label: &str, session_id: Option<&str>) -> bool {
        self.sessions
            .as_ref()
            .is_some_and(|keys| keys.iter().any(|k| key_names_session(k, label, session_id)))
    }

    /// Whether the session is shown by `--session`: named by it, or no `--session` given.
    pub fn names_or_all(&self, label: &str, session_id: Option<&str>) -> bool {
        self.sessions.is_none() || self.names(label, session_id)
    }

    /// Whether the session is shown: named by `--session` (when given) and overlapping the
    /// time window.
    fn selects(&self, s: &SessionHeader) -> bool {
        if let Some(keys) = &self.sessions
            && !keys.iter().any(|k| key_names(k, s))
        {
            return false;
        }
        let (start, end) = (s.head.start.time, s.head.end.time);
        !(self.since.is_some_and(|t| end < t.for_session(start))
            || self.until.is_some_and(|t| start > t.for_session(start)))
    }

    /// Whether `m` of a session that began at `start` is inside the time window.
    pub fn in_window(&self, m: Mark, start: Timestamp) -> bool {
        !(self.since.is_some_and(|t| m.time < t.for_session(start))
            || self.until.is_some_and(|t| m.time > t.for_session(start)))
    }
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
struct SessionHeader {
    head: SessionHead,
    verdict: Verdict,
    same_session_as: Vec<String>,
    /// The kinds the session has findings of: determined, whatever its inputs lack.
    found: Vec<mcpf_detect::FindingKind>,
    /// Every vantage point it was seen at, its own first, when more than one: the terminal report
    /// lists them, the rollups by input and server count the session at each.
    vantage_points: Vec<mcpf_mcp::model::VantagePoint>,
    /// Merged sources: input index, path, matched and added exchanges, clock offset (s).
    merged: Vec<(u32, String, usize, usize, f64)>,
    /// The connections that carried its streams (TCP connections, or those of a HAR file or
    /// log): what `--write-pcap` copies its frames from.
    conns: Vec<mcpf_model::ConnId>,
    record: Option<Range>,
    events: Option<Range>,
}

impl Report {
    /// What input `i`'s record numbers count.
    pub(crate) fn unit(&self, i: u32) -> mcpf_model::RecordUnit {
        self.inputs
            .get(i as usize)
            .map_or(mcpf_model::RecordUnit::Frame, |r| r.format.unit())
    }
}

impl SessionHeader {
    /// `S1`, `S2`, ...
    fn label(&self) -> String {
        self.head.label()
    }

    /// What the inputs could not tell about the session, and why: the kinds a lack leaves
    /// undecided, but those it has findings of (a partial lack, bodies missing from some
    /// exchanges, leaves the rest to decide).
    fn not_determinable<'a>(
        &self,
        lacks: &'a [mcpf_mcp::model::Lack],
    ) -> Vec<(mcpf_detect::FindingKind, &'a mcpf_mcp::model::Lack)> {
        mcpf_detect::not_determinable(lacks)
            .into_iter()
            .filter(|(k, _)| !self.found.contains(k))
            .collect()
    }
}

/// Everything the analysis produced.
pub struct Report {
    pub inputs: Vec<InputReport>,
    pub sessions: SessionWriter,
    pub findings: Vec<Finding>,
    /// The timeline of each session (empty when the report does not show it).
    pub timelines: Vec<Vec<Entry>>,
    /// The calls of the sessions shown, per server and method.
    pub profile: mcpf_mcp::profile::CallProfile,
    pub http: HttpStats,
    pub mcp: McpStats,
    /// The HTTP anomalies the MCP stage kept, counted by kind.
    pub anomalies: mcpf_mcp::Anomalies,
    pub connections: u64,
    pub gap_bytes: u64,
    /// Of `gap_bytes`, those the capture's snap length cut (recorded short, not lost).
    pub snaplen_bytes: u64,
    pub connections_with_gaps: u64,
    /// What the run could not keep, judge or decrypt: caps reached, comparisons not made (the
    /// report words them).
    pub limits: Vec<mcpf_model::Note>,
    /// TLS connections the key log could not (wholly) decrypt: where reading stopped, and why.
    pub tls_not_decrypted: Vec<Anomaly>,
    /// Between inputs whose sessions were compared hop by hop: the far clock minus the near.
    pub clock_offsets: Vec<mcpf_detect::ClockOffset>,
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
    fn headers(&self) -> impl Iterator<Item = &SessionHeader> {
        self.sessions.headers.iter().flatten()
    }

    pub fn session_count(&self) -> usize {
        self.headers().count()
    }

    fn header(&self, idx: usize) -> Option<&SessionHeader> {
        self.sessions.headers.get(idx).and_then(Option::as_ref)
    }

    fn session_selected(&self, s: &SessionHeader, sel: &Selection) -> bool {
        sel.selects(s)
    }

    /// The sessions' labels, in order.
    pub fn session_labels(&self) -> Vec<String> {
        self.headers().map(SessionHeader::label).collect()
    }

    /// The `--session` keys that name no session of the report.
    pub fn unmatched_session_keys<'a>(&self, sel: &'a Selection) -> Vec<&'a str> {
        let Some(keys) = &sel.sessions else {
            return Vec::new();
        };
        keys.iter()
            .filter(|k| !self.headers().any(|h| key_names(k, h)))
            .map(String::as_str)
            .collect()
    }

    fn idx_selected(&self, idx: usize, sel: &Selection) -> bool {
        self.header(idx)
            .is_some_and(|h| self.session_selected(h, sel))
    }

    fn in_window(&self, f: &Finding, sel: &Selection) -> bool {
        let start = self
            .header(f.session)
            .map_or(f.time.time, |h| h.head.start.time);
        sel.in_window(f.time, start)
    }

    /// Positions of the findings shown.
    fn shown_findings(&self, sel: &Selection) -> Vec<usize> {
        self.findings
            .iter()
            .enumerate()
            .filter(|(_, f)| self.idx_selected(f.session, sel))
            .filter(|(_, f)| self.in_window(f, sel))
            .filter(|(_, f)| sel.min_severity.is_none_or(|m| f.severity.at_least(m)))
            .map(|(i, _)| i)
            .collect()
    }

    /// Findings that count for the exit code: selected sessions and time window, any severity.
    pub fn counted_findings(&self, sel: &Selection) -> impl Iterator<Item = &Finding> {
        let sel = sel.clone();
        self.findings
            .iter()
            .filter(move |f| self.idx_selected(f.session, &sel) && self.in_window(f, &sel))
    }

    /// The sessions shown, in label order.
    fn selected_headers<'a>(
        &'a self,
        sel: &'a Selection,
    ) -> impl Iterator<Item = &'a SessionHeader> {
        self.headers().filter(|h| self.session_selected(h, sel))
    }

    /// How many sessions are shown: records that continue another are the same session.
    fn selected_count(&self, sel: &Selection) -> usize {
        self.selected_headers(sel)
            .filter(|h| h.head.continues.is_none())
            .count()
    }

    /// Where the records of the sessions shown went: the formats copy them from the spills,
    /// which needs the report mutably.
    fn selected_spills(&self, sel: &Selection) -> Vec<Ranges> {
        self.selected_headers(sel)
            .map(|h| (h.record, h.events))
            .collect()
    }

    /// The sessions shown, by label, with the connections that carried their streams.
    pub fn shown_session_connections<'a>(
        &'a self,
        sel: &'a Selection,
    ) -> Vec<(String, &'a [ConnId])> {
        self.selected_headers(sel)
            .map(|h| (h.label(), h.conns.as_slice()))
            .collect()
    }

    /// The findings shown, by ID, with every frame each cites: its own and those of the
    /// session's other vantage points, each once, in order.
    pub fn shown_finding_frames(&self, sel: &Selection) -> Vec<(String, Vec<FrameRef>)> {
        self.shown_findings(sel)
            .into_iter()
            .map(|p| {
                let f = &self.findings[p];
                let seen = f.seen_at.iter().flat_map(|x| &x.frames);
                let mut frames: Vec<FrameRef> =
                    f.frames.iter().chain(seen).map(|m| m.frame).collect();
                frames.sort_unstable();
                frames.dedup();
                (mcpf_detect::finding_id(p), frames)
            })
            .collect()
    }

    /// The timeline entries of the sessions shown, merged in time order.
    fn shown_timeline(&self, sel: &Selection) -> Vec<&Entry> {
        let mut all: Vec<&Entry> = self
            .selected_headers(sel)
            .flat_map(|h| self.timelines.get(h.head.idx).into_iter().flatten())
            .collect();
        all.sort_by_key(|e| (e.time, e.session));
        all
    }
}

/// Whether a `--session` key names the session: its label (`S3`, any case), its ID whole, or its
/// ID as the session table shortens it (`2665…92a9`, or with `...`).
fn key_names(key: &str, s: &SessionHeader) -> bool {
    key_names_session(key, &s.label(), s.head.session_id.as_deref())
}

/// The same, of a session known by its label and ID.
fn key_names_session(key: &str, label: &str, session_id: Option<&str>) -> bool {
    if key.eq_ignore_ascii_case(label) {
        return true;
    }
    let Some(id) = session_id else {
        return false;
    };
    if id == key {
        return true;
    }
    let split = key.split_once('…').or_else(|| key.split_once("..."));
    split.is_some_and(|(head, tail)| {
        !head.is_empty() && !tail.is_empty() && id.starts_with(head) && id.ends_with(tail)
    })
}
