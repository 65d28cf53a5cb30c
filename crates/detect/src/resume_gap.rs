//! `resume_gap`: integer IDs jumped at a resume — the first resumed ID is greater than
//! `Last-Event-ID` + 1, so the events in between were not replayed (or the server resumed a
//! different counter).

use serde_json::json;

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::ids;
use mcpf_mcp::model::Session;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::ResumeGap,
    severity: Severity::High,
    when: "integer IDs: the first resumed ID is greater than Last-Event-ID + 1",
    meaning: "The resume did not start with the successor of the ID the client sent: events in between were never replayed, or the server continued another counter.",
    why: "Whatever was in the missing range (progress, a response) never reaches the client; a request whose answer was there waits until it times out.",
    fix: "Server: keep events per stream long enough to replay from any ID a client can hold, and replay strictly after it; answer 400 when an ID can no longer be replayed so the client re-initializes. Client: treat a jump as unsafe resumption.",
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    for r in s.streams.iter().filter(|st| st.resume.is_some()) {
        let Some(resume) = &r.resume else { continue };
        let Some(lei) = ids::integer(&resume.last_event_id) else {
            continue;
        };
        let Some((ei, first)) = r
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.priming)
            .find_map(|(i, e)| e.id.as_deref().and_then(ids::integer).map(|n| (i, n)))
        else {
            continue;
        };
        if first <= lei.saturating_add(1) {
            continue;
        }
        let cause = f.find(
            s.idx,
            FindingKind::UnsafeResumptionAfterFallback,
            &Subject::Resume(r.idx),
        );
        let mark = r.events[ei].mark;
        f.add(
            s,
            New {
                kind: FindingKind::ResumeGap,
                severity: INFO.severity,
                time: mark,
                frames: vec![r.opened, mark],
                streams: vec![r.idx],
                summary: format!(
                    "resume with Last-Event-ID {lei} began at {first}: IDs {}–{} never replayed",
                    lei + 1,
                    first - 1
                ),
                evidence: crate::Evidence::ResumeGap(Evidence(json!({
                    "last_event_id": resume.last_event_id,
                    "first_event_id": first.to_string(),
                    "missing": (first - lei - 1),
                    "stream": r.label(),
                }))),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The evidence of a `resume_gap` finding (as JSON until it is typed).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Evidence(pub serde_json::Value);
