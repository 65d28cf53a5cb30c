//! `event_id_reset`: integer event IDs went backwards where the incident note's decision
//! boundary says they must not — on the stream a fallback opened (not greater than the highest ID
//! the client saw before it: a second counter), or at the start of a resume (not greater than
//! the `Last-Event-ID` sent).

use serde_json::json;

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::ids;
use mcpf_mcp::model::{Session, StreamIdx};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::EventIdReset,
    severity: Severity::High,
    when: "integer IDs: after a fallback, IDs on the new stream not greater than the highest the client saw before it; or a resume whose first ID is not greater than Last-Event-ID",
    meaning: "The event counter the client is now reading restarted below what it already saw: the server keeps more than one counter (one per transport or per stream), or reset its counter.",
    why: "Two counters mean the same ID names two different events. Any later Last-Event-ID is ambiguous, and a server that resolves it in the wrong counter replays the wrong events (the seed incident).",
    fix: "Server: one namespace per stream, visible in the ID (get:41, post:41), or a single monotonic counter per session. Client: treat a non-increasing ID after a fallback as a reason to re-initialize rather than resume.",
    evidence: &["last_event_id", "first_event_id", "highest_before"],
};

/// Highest integer event ID the client received before `before`.
fn highest_before(s: &Session, before: Mark, except: StreamIdx) -> Option<(u64, String)> {
    s.streams
        .iter()
        .filter(|st| st.idx != except)
        .flat_map(|st| st.events.iter().map(move |e| (st, e)))
        .filter(|(_, e)| s.seq(e.mark) < s.seq(before))
        .filter_map(|(st, e)| {
            e.id.as_deref()
                .and_then(ids::integer)
                .map(|n| (n, st.label()))
        })
        .max_by_key(|(n, _)| *n)
}

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    after_fallbacks(s, f);
    on_resumes(s, f);
}

/// A fallback stream whose first integer ID is not above the highest the client already saw.
fn after_fallbacks(s: &Session, f: &mut Findings) {
    for fb in &s.fallbacks {
        let to = &s.streams[fb.to_stream];
        let Some((ei, first)) = to
            .events
            .iter()
            .enumerate()
            .find_map(|(i, e)| e.id.as_deref().and_then(ids::integer).map(|n| (i, n)))
        else {
            continue;
        };
        let Some((highest, where_)) = highest_before(s, fb.mark, to.idx) else {
            continue;
        };
        if first > highest {
            continue;
        }
        let cause = f.find(
            s.idx,
            FindingKind::SseFallback,
            &Subject::FallbackTo(fb.to_stream),
        );
        let mark = to.events[ei].mark;
        f.add(
            s,
            New {
                kind: FindingKind::EventIdReset,
                severity: INFO.severity,
                time: mark,
                frames: vec![fb.mark, mark],
                streams: vec![to.idx],
                summary: format!(
                    "after the fallback, {} started at event ID {first}, not above {highest} already seen on {where_}: a second counter",
                    to.label()
                ),
                evidence: json!({
                    "last_event_id": null,
                    "first_event_id": first.to_string(),
                    "highest_before": highest.to_string(),
                    "highest_seen_on": where_,
                    "stream": to.label(),
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::FallbackTo(fb.to_stream),
            },
        );
    }
}

/// A resume whose first integer ID is not greater than the `Last-Event-ID` it sent.
fn on_resumes(s: &Session, f: &mut Findings) {
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
        if first > lei {
            continue;
        }
        let before = highest_before(s, r.opened, r.idx);
        let highest = before.as_ref().map(|(n, _)| n.to_string());
        let highest_seen_on = before.map(|(_, w)| w);
        let cause = f.find(
            s.idx,
            FindingKind::UnsafeResumptionAfterFallback,
            &Subject::Resume(r.idx),
        );
        let mark = r.events[ei].mark;
        f.add(
            s,
            New {
                kind: FindingKind::EventIdReset,
                severity: INFO.severity,
                time: mark,
                frames: vec![r.opened, mark],
                streams: vec![r.idx],
                summary: format!(
                    "resume with Last-Event-ID {lei} began at event ID {first}, not after it",
                ),
                evidence: json!({
                    "last_event_id": resume.last_event_id,
                    "first_event_id": first.to_string(),
                    "highest_before": highest,
                    "highest_seen_on": highest_seen_on,
                    "stream": r.label(),
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}
