#![warn(unreachable_pub)]
//! Detectors: one file per finding kind, each tracing back to the resumption rules of the
//! incident note (a `Last-Event-ID` is only valid in the event-ID namespace that minted it) or to
//! the MCP transport specification.
//!
//! Detectors read the analysed sessions and add [`Finding`]s; they never format output. They run
//! in a fixed order so a consequence can name its cause (`caused_by`): a fallback makes a resume
//! unsafe, an unsafe resume replays the wrong namespace, the replay duplicates a response and
//! skips the events that held the answer the client then waits for forever.

mod capture_gap;
mod cross_namespace_replay;
mod cross_replica_resume;
mod duplicate_response;
mod event_id_reset;
mod request_id_reused;
mod resume_gap;
mod retry_without_idempotency_key;
mod session_id_changed;
mod session_not_reaffirmed;
mod skipped_events;
mod sse_fallback;
mod unanswered_request;
mod unsafe_resumption_after_fallback;
pub mod verdict;

mod finding;
mod index;
mod kind;

pub use finding::{Confidence, Finding, Findings, Labels, New, Severity, Subject};
pub use kind::{FindingKind, KindInfo};

use serde_json::Value;

use mcpf_mcp::model::{Session, StreamIdx};
use mcpf_model::Mark;

/// The detector stage: every detector on each session the MCP stage finalizes, then the order
/// of all findings. The same path for a run of the binary and for the tests.
#[derive(Debug, Default)]
pub struct Detector {
    findings: Findings,
}

impl Detector {
    pub fn new() -> Detector {
        Detector::default()
    }

    /// Runs every detector on a finalized session (its events still present); returns its
    /// resumption verdict and the handles of the findings it got.
    pub fn session(&mut self, s: &Session) -> (verdict::Verdict, std::ops::Range<usize>) {
        let first = self.findings.list.len();
        run_detectors(s, &mut self.findings);
        let mine = first..self.findings.list.len();
        (
            verdict::resumption(s, &self.findings.list[mine.clone()]),
            mine,
        )
    }

    /// Every finding so far, by handle.
    pub fn findings(&self) -> &[Finding] {
        &self.findings.list
    }

    /// Orders every finding: by time, a cause before its consequences. Returns them with the
    /// position each handle got.
    pub fn finish(self) -> (Vec<Finding>, Vec<usize>) {
        order(self.findings.list)
    }
}

/// Every detector of one session, in the order that lets a consequence name its cause.
fn run_detectors(s: &Session, f: &mut Findings) {
    let ix = index::Index::new(s);
    // Events past the cap were counted, not held: nothing is concluded from an event's absence
    // (the session says so under "not determinable").
    let all_held = !s.has_unheld_events();
    capture_gap::detect(s, f);
    sse_fallback::detect(s, f);
    unsafe_resumption_after_fallback::detect(s, &ix, f);
    cross_namespace_replay::detect(s, &ix, f);
    cross_replica_resume::detect(s, &ix, f);
    event_id_reset::detect(s, f);
    if all_held {
        resume_gap::detect(s, f);
    }
    session_not_reaffirmed::detect(s, f);
    session_id_changed::detect(s, f);
    duplicate_response::detect(s, &ix, f);
    request_id_reused::detect(s, &ix, f);
    if all_held {
        skipped_events::detect(s, f);
        unanswered_request::detect(s, &ix, f);
    }
    retry_without_idempotency_key::detect(s, &ix, f);
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
pub(crate) fn event_ref(s: &Session, stream: StreamIdx, event: usize) -> Value {
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

/// The exchange was refused at the HTTP level (4xx/5xx): its requests were never processed.
pub(crate) fn rejected(s: &Session, stream: StreamIdx) -> bool {
    s.streams[stream].status.is_some_and(|c| c >= 400)
}
