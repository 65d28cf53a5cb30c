//! `skipped_events`: events of a namespace that never reached the client — a jump inside one
//! stream's integer sequence (41 then 48), or, after a cross-namespace replay, everything after
//! `Last-Event-ID` in the namespace the client was really resuming.

use std::collections::HashSet;

use serde_json::json;

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::ids;
use mcpf_mcp::model::Session;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SkippedEvents,
    severity: Severity::High,
    when: "events of a namespace never delivered: an integer gap within a namespace (41 then 48: from 42 to 47), or after a cross-namespace replay everything after Last-Event-ID in the namespace being resumed",
    meaning: "The server minted events the client never received: inside one stream the IDs jump, or a resume continued the wrong namespace so the events the client was waiting for were never replayed.",
    why: "Skipped events often hold progress and the final response of a long request: the client waits for an answer that was sent into the void.",
    fix: "See caused_by. Server: replay strictly from the namespace and position the client names; keep enough history; answer 400 when you cannot. Client: after a suspicious resume, re-send in-flight requests (with an idempotency key) instead of waiting.",
    evidence: &["namespace", "from", "to", "count"],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    after_cross_namespace_replay(s, f);
    inside_streams(s, f);
}

fn after_cross_namespace_replay(s: &Session, f: &mut Findings) {
    let replays: Vec<(usize, usize)> = f
        .of(s.idx, FindingKind::CrossNamespaceReplay)
        .filter_map(|x| match x.subject {
            Subject::Resume(r) => Some((x.handle, r)),
            _ => None,
        })
        .collect();
    for (cause, r) in replays {
        let st = &s.streams[r];
        let Some(resume) = &st.resume else { continue };
        let Some(ns) = resume.continues else { continue };
        let lei = &resume.last_event_id;
        let from = ids::counter(lei).map(|n| n + 1);
        // A later event of the resumed namespace shows where the skipped range ends.
        let later = s
            .streams
            .iter()
            .flat_map(|x| x.events.iter())
            .filter(|e| e.mark > st.opened && e.namespace == mcpf_mcp::model::Namespace::Stream(ns))
            .filter_map(|e| e.id.as_deref().and_then(ids::counter))
            .filter(|n| from.is_some_and(|f| *n >= f))
            .min();
        let to = later
            .and_then(|n| n.checked_sub(1))
            .filter(|t| from.is_some_and(|f| *t >= f));
        let count = match (from, to) {
            (Some(a), Some(b)) => Some(b - a + 1),
            _ => None,
        };
        let time = f.list[cause].time;
        let label = s.streams[ns].label();
        let range = match (from, to) {
            (Some(a), Some(b)) => format!("IDs {a}–{b}"),
            (Some(a), None) => format!("IDs from {a} on"),
            _ => format!("events after {lei}"),
        };
        f.add(
            s,
            New {
                kind: FindingKind::SkippedEvents,
                severity: INFO.severity,
                time,
                frames: vec![st.opened, time],
                streams: vec![ns, r],
                summary: format!(
                    "{range} of {label} never delivered: the resume replayed another namespace"
                ),
                evidence: json!({
                    "namespace": label,
                    "from": from.map(|n| n.to_string()),
                    "to": to.map(|n| n.to_string()),
                    "count": count,
                    "after": lei,
                    "resume_stream": st.label(),
                }),
                caused_by: vec![cause],
                subject: Subject::Namespace(ns),
            },
        );
    }
}

fn inside_streams(s: &Session, f: &mut Findings) {
    let seen: HashSet<u64> = s
        .streams
        .iter()
        .flat_map(|st| st.events.iter())
        .filter_map(|e| e.id.as_deref().and_then(ids::integer))
        .collect();
    for st in s.streams.iter().filter(|st| st.resume.is_none()) {
        let numbered: Vec<(usize, u64, Option<&str>)> = st
            .events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let id = e.id.as_deref()?;
                Some((i, ids::counter(id)?, ids::stream_token(id)))
            })
            .collect();
        for pair in numbered.windows(2) {
            let (_, a, ta) = pair[0];
            let (bi, b, tb) = pair[1];
            if ta != tb || b <= a + 1 {
                continue;
            }
            // IDs of a shared counter delivered on another stream are not skipped.
            let missing: Vec<u64> = (a + 1..b)
                .filter(|n| ta.is_some() || !seen.contains(n))
                .take(1_000_000)
                .collect();
            if missing.is_empty() {
                continue;
            }
            let ev = &st.events[bi];
            let cause = if st.gap {
                f.find(s.idx, FindingKind::CaptureGap, &Subject::Stream(st.idx))
            } else {
                None
            };
            let (from, to) = (a + 1, b - 1);
            f.add(
                s,
                New {
                    kind: FindingKind::SkippedEvents,
                    severity: INFO.severity,
                    time: ev.mark,
                    frames: vec![st.events[pair[0].0].mark, ev.mark],
                    streams: vec![st.idx],
                    summary: format!(
                        "{} jumped from event {} to {}: {} events never delivered",
                        st.label(),
                        a,
                        b,
                        missing.len()
                    ),
                    evidence: json!({
                        "namespace": st.label(),
                        "from": from.to_string(),
                        "to": to.to_string(),
                        "count": missing.len(),
                        "after": null,
                        "resume_stream": null,
                    }),
                    caused_by: cause.into_iter().collect(),
                    subject: Subject::Namespace(st.idx),
                },
            );
        }
    }
}
