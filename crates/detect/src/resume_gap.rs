//! `resume_gap`: integer IDs jumped at a resume — the first resumed ID is greater than
//! `Last-Event-ID` + 1, so the events in between were not replayed (or the server resumed a
//! different counter).

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::ids;
use mcpf_mcp::model::{Session, Need};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::ResumeGap,
    severity: Severity::High,
    when: "integer IDs: the first resumed ID is greater than Last-Event-ID + 1",
    meaning: "The resume did not start with the successor of the ID the client sent: events in between were never replayed, or the server continued another counter.",
    why: "Whatever was in the missing range (progress, a response) never reaches the client; a request whose answer was there waits until it times out.",
    fix: "Server: keep events per stream long enough to replay from any ID a client can hold, and replay strictly after it; answer 400 when an ID can no longer be replayed so the client re-initializes. Client: treat a jump as unsafe resumption.",
    requires: &[Need::Bodies, Need::EveryEvent],
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
                evidence: crate::Evidence::ResumeGap(Evidence {
                    last_event_id: resume.last_event_id.clone(),
                    first_event_id: first.to_string(),
                    missing: first - lei - 1,
                    stream: r.label(),
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The evidence of a `resume_gap`: the `Last-Event-ID` a resume sent, the ID it began at
/// instead of the next one, and how many IDs it jumped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub last_event_id: String,
    /// The first ID of the resume (greater than `Last-Event-ID` + 1).
    pub first_event_id: String,
    /// How many IDs were jumped.
    pub missing: u64,
    /// The resume stream.
    pub stream: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_jump_is_read_back_from_the_report() {
        let text = r#"{"last_event_id":"41","first_event_id":"48","missing":6,"stream":"get:s17"}"#;
        let e: Evidence = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }
}
