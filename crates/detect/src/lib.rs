//! Detectors: one file per finding kind, each tracing back to the resumption rules of the
//! incident note (a `Last-Event-ID` is only valid in the event-ID namespace that minted it) or to
//! the MCP transport specification.
//!
//! Detectors read the analysed sessions and add [`Finding`]s; they never format output. They run
//! in a fixed order so a consequence can name its cause (`caused_by`): a fallback makes a resume
//! unsafe, an unsafe resume replays the wrong namespace, the replay duplicates a response and
//! skips the events that held the answer the client then waits for forever.

pub mod capture_gap;
pub mod cross_namespace_replay;
pub mod duplicate_response;
pub mod event_id_reset;
pub mod request_id_reused;
pub mod resume_gap;
pub mod retry_without_idempotency_key;
pub mod session_id_changed;
pub mod session_not_reaffirmed;
pub mod skipped_events;
pub mod sse_fallback;
pub mod unanswered_request;
pub mod unsafe_resumption_after_fallback;
pub mod verdict;

use serde::Serialize;
use serde_json::Value;

use mcpf_mcp::model::{Session, SessionIdx, StreamIdx};
use mcpf_model::Mark;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Critical,
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        match s.to_ascii_lowercase().as_str() {
            "critical" => Some(Severity::Critical),
            "high" => Some(Severity::High),
            "medium" => Some(Severity::Medium),
            "low" => Some(Severity::Low),
            "info" => Some(Severity::Info),
            _ => None,
        }
    }

    /// Whether `self` is at least as severe as `other`.
    pub fn at_least(self, other: Severity) -> bool {
        self <= other
    }
}

/// What a finding kind means: drives `explain`, the man page and the README table.
#[derive(Clone, Copy, Debug)]
pub struct KindInfo {
    pub kind: &'static str,
    pub severity: Severity,
    /// One line: when it is raised.
    pub when: &'static str,
    pub meaning: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    pub evidence: &'static [&'static str],
}

/// Every finding kind, in the order detectors run.
pub const KINDS: &[KindInfo] = &[
    capture_gap::INFO,
    sse_fallback::INFO,
    unsafe_resumption_after_fallback::INFO,
    cross_namespace_replay::INFO,
    event_id_reset::INFO,
    resume_gap::INFO,
    session_not_reaffirmed::INFO,
    session_id_changed::INFO,
    duplicate_response::INFO,
    request_id_reused::INFO,
    skipped_events::INFO,
    unanswered_request::INFO,
    retry_without_idempotency_key::INFO,
];

pub fn kind_info(kind: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.kind == kind)
}

/// Confidence in a finding: reduced when the evidence it rests on lost bytes in the capture or
/// comes from a source that lacks them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Normal,
    Reduced,
}

#[derive(Clone, Debug)]
pub struct Finding {
    /// Position in creation order (an internal handle for `caused_by`).
    pub handle: usize,
    pub kind: &'static str,
    pub severity: Severity,
    pub session: SessionIdx,
    pub time: Mark,
    /// Frames the finding rests on, in order.
    pub frames: Vec<Mark>,
    /// Streams (by index in the session) it rests on.
    pub streams: Vec<StreamIdx>,
    pub summary: String,
    pub evidence: Value,
    pub caused_by: Vec<usize>,
    pub confidence: Confidence,
    pub confidence_note: Option<String>,
    /// A key detectors use to find each other's findings (a stream, a request ID...).
    pub anchor: String,
    /// Labels kept so the finding can be reported after its session's records are dropped.
    pub session_label: String,
    pub session_id: Option<String>,
    pub stream_labels: Vec<String>,
    pub exchanges: Vec<String>,
}

/// Labels of a finding added after its session was compacted.
pub struct CompactLabels {
    pub session_label: String,
    pub session_id: Option<String>,
    pub stream_labels: Vec<String>,
    pub exchanges: Vec<String>,
}

/// Findings of a run, in creation order.
#[derive(Debug, Default)]
pub struct Findings {
    pub list: Vec<Finding>,
}

/// Arguments of a new finding.
pub struct New {
    pub kind: &'static KindInfo,
    pub session: SessionIdx,
    pub time: Mark,
    pub frames: Vec<Mark>,
    pub streams: Vec<StreamIdx>,
    pub summary: String,
    pub evidence: Value,
    pub caused_by: Vec<usize>,
    pub anchor: String,
}

impl Findings {
    pub fn add(&mut self, s: &Session, new: New) -> usize {
        self.add_with_severity(s, new, None)
    }

    /// Adds a finding whose session is no longer at hand (its streams are not checked for
    /// damage): the caller gives the labels.
    pub fn add_compact(&mut self, new: New, labels: CompactLabels) -> usize {
        let handle = self.list.len();
        let mut frames = new.frames;
        frames.sort();
        frames.dedup();
        self.list.push(Finding {
            handle,
            kind: new.kind.kind,
            severity: new.kind.severity,
            session: new.session,
            time: new.time,
            frames,
            streams: new.streams,
            summary: new.summary,
            evidence: new.evidence,
            caused_by: new.caused_by,
            confidence: Confidence::Normal,
            confidence_note: None,
            anchor: new.anchor,
            session_label: labels.session_label,
            session_id: labels.session_id,
            stream_labels: labels.stream_labels,
            exchanges: labels.exchanges,
        });
        handle
    }

    pub fn add_with_severity(
        &mut self,
        s: &Session,
        new: New,
        severity: Option<Severity>,
    ) -> usize {
        let handle = self.list.len();
        let damaged: Vec<String> = new
            .streams
            .iter()
            .filter_map(|&i| s.streams.get(i))
            .filter(|st| st.gap)
            .map(|st| st.label())
            .collect();
        let unknown: Vec<String> = new
            .streams
            .iter()
            .filter_map(|&i| s.streams.get(i))
            .filter(|st| st.body_unknown)
            .map(|st| st.label())
            .collect();
        let (confidence, note) = if !damaged.is_empty() && new.kind.kind != "capture_gap" {
            (
                Confidence::Reduced,
                Some(format!(
                    "bytes are missing from the capture under {}",
                    damaged.join(", ")
                )),
            )
        } else if !unknown.is_empty() {
            (
                Confidence::Reduced,
                Some(format!(
                    "the input did not record the body of {}",
                    unknown.join(", ")
                )),
            )
        } else {
            (Confidence::Normal, None)
        };
        let mut frames = new.frames;
        frames.sort();
        frames.dedup();
        let mut streams: Vec<StreamIdx> = Vec::with_capacity(new.streams.len());
        for st in new.streams {
            if !streams.contains(&st) {
                streams.push(st);
            }
        }
        self.list.push(Finding {
            handle,
            kind: new.kind.kind,
            severity: severity.unwrap_or(new.kind.severity),
            session: new.session,
            time: new.time,
            frames,
            streams,
            summary: new.summary,
            evidence: new.evidence,
            caused_by: new.caused_by,
            confidence,
            confidence_note: note,
            anchor: new.anchor,
            session_label: s.label(),
            session_id: s.session_id.clone(),
            stream_labels: Vec::new(),
            exchanges: Vec::new(),
        });
        let f = self.list.last_mut().expect("just pushed");
        f.stream_labels = f
            .streams
            .iter()
            .filter_map(|&i| s.streams.get(i).map(|st| st.label()))
            .collect();
        f.exchanges = f
            .streams
            .iter()
            .filter_map(|&i| s.streams.get(i).map(|st| st.exchange.to_string()))
            .collect();
        handle
    }

    /// Findings of a kind in a session.
    pub fn of<'a>(
        &'a self,
        session: SessionIdx,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Finding> + 'a {
        self.list
            .iter()
            .filter(move |f| f.session == session && f.kind == kind)
    }

    pub fn find(&self, session: SessionIdx, kind: &str, anchor: &str) -> Option<usize> {
        self.of(session, kind)
            .find(|f| f.anchor == anchor)
            .map(|f| f.handle)
    }
}

/// Runs every detector of one session (an analysed one, events still present).
pub fn session(s: &Session, f: &mut Findings) {
    capture_gap::detect(s, f);
    sse_fallback::detect(s, f);
    unsafe_resumption_after_fallback::detect(s, f);
    cross_namespace_replay::detect(s, f);
    event_id_reset::detect(s, f);
    resume_gap::detect(s, f);
    session_not_reaffirmed::detect(s, f);
    session_id_changed::detect(s, f);
    duplicate_response::detect(s, f);
    request_id_reused::detect(s, f);
    skipped_events::detect(s, f);
    unanswered_request::detect(s, f);
}

/// Runs the detectors that span sessions, then orders every finding: by time, a cause before
/// its consequences. Returns them with the position each creation handle got.
pub fn finish(
    mut f: Findings,
    calls: &mut [retry_without_idempotency_key::ToolCall],
) -> (Vec<Finding>, Vec<usize>) {
    retry_without_idempotency_key::detect(calls, &mut f);
    order(f.list)
}

/// Every detector on every session (for callers that hold all sessions with their events).
pub fn run(sessions: &[Session]) -> Vec<Finding> {
    let mut f = Findings::default();
    let mut calls = Vec::new();
    for s in sessions {
        session(s, &mut f);
        calls.extend(retry_without_idempotency_key::calls(s));
    }
    finish(f, &mut calls).0
}

/// Depth in the causal chain, so a consequence sorts after its cause at the same time.
fn depth(list: &[Finding], handle: usize, seen: &mut Vec<usize>) -> usize {
    if seen.contains(&handle) {
        return 0;
    }
    seen.push(handle);
    list[handle]
        .caused_by
        .iter()
        .map(|&c| 1 + depth(list, c, seen))
        .max()
        .unwrap_or(0)
}

fn order(list: Vec<Finding>) -> (Vec<Finding>, Vec<usize>) {
    let mut keyed: Vec<(Mark, usize, usize)> = list
        .iter()
        .map(|f| (f.time, depth(&list, f.handle, &mut Vec::new()), f.handle))
        .collect();
    keyed.sort();
    let mut position = vec![0; list.len()];
    for (pos, (_, _, h)) in keyed.iter().enumerate() {
        position[*h] = pos;
    }
    let mut slots: Vec<Option<Finding>> = list.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for (_, _, h) in keyed {
        if let Some(mut f) = slots[h].take() {
            f.caused_by = f.caused_by.iter().map(|c| position[*c]).collect();
            f.caused_by.sort_unstable();
            f.caused_by.dedup();
            f.handle = out.len();
            out.push(f);
        }
    }
    (out, position)
}

/// The public ID of the finding at `pos` in the ordered list.
pub fn finding_id(pos: usize) -> String {
    format!("F{}", pos + 1)
}

/// Evidence helper: an event as a person can find it.
pub fn event_ref(s: &Session, stream: StreamIdx, event: usize) -> Value {
    let st = &s.streams[stream];
    let ev = &st.events[event];
    serde_json::json!({
        "stream": st.label(),
        "exchange": st.exchange.to_string(),
        "event_id": ev.id,
        "time": ev.mark.time.rfc3339(),
        "frame": ev.mark.frame.frame,
    })
}

/// The client's JSON-RPC requests in a session, in the order they were sent.
pub fn client_requests(s: &Session) -> Vec<(StreamIdx, &mcpf_mcp::jsonrpc::Message)> {
    let mut v: Vec<(StreamIdx, &mcpf_mcp::jsonrpc::Message)> = s
        .streams
        .iter()
        .flat_map(|st| st.requests().map(move |m| (st.idx, m)))
        .collect();
    v.sort_by_key(|(i, _)| (s.streams[*i].opened, *i));
    v
}

/// The exchange was refused at the HTTP level (4xx/5xx): its requests were never processed.
pub fn rejected(s: &Session, stream: StreamIdx) -> bool {
    s.streams[stream].status.is_some_and(|c| c >= 400)
}
