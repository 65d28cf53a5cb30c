//! `skipped_events`: events of a namespace that never reached the client — a jump inside one
//! stream's integer sequence (41 then 48), or, after a cross-namespace replay, everything after
//! `Last-Event-ID` in the namespace the client was really resuming.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::ids;
use crate::index::Index;
use mcpf_mcp::model::{Namespace, Need, Session};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SkippedEvents,
    severity: Severity::High,
    when: "events of a namespace never delivered: an integer gap within a namespace (41 then 48: from 42 to 47), or after a cross-namespace replay everything after Last-Event-ID in the namespace being resumed (info when the jump crosses bytes missing from the capture)",
    meaning: "The server minted events the client never received: inside one stream the IDs jump, or a resume continued the wrong namespace so the events the client was waiting for were never replayed.",
    why: "Skipped events often hold progress and the final response of a long request: the client waits for an answer that was sent into the void.",
    fix: "See caused_by. Server: replay strictly from the namespace and position the client names; keep enough history; answer 400 when you cannot. Client: after a suspicious resume, re-send in-flight requests (with an idempotency key) instead of waiting.",
    requires: &[Need::Bodies, Need::EveryEvent],
};

pub(crate) fn detect(s: &Session, ix: &Index<'_>, f: &mut Findings) {
    after_cross_namespace_replay(s, ix, f);
    inside_streams(s, f);
}

/// Whether the namespace of stream `ns` went on after the resume `r` opened: an event tied to
/// it came later, or a request it carried was answered later. Then its events after
/// `Last-Event-ID` were delivered (under IDs never seen before, for opaque ones), and nothing
/// shows any was skipped but a gap between two of its counters.
fn went_on_after(s: &Session, ix: &Index<'_>, ns: usize, r: usize) -> bool {
    let from = s.seq(s.streams[r].opened);
    let later_event = s
        .streams
        .iter()
        .flat_map(|x| x.events.iter())
        .any(|e| s.seq(e.mark) > from && e.namespace == Namespace::Stream(ns));
    let answered_later = s.streams[ns]
        .requests()
        .filter_map(|m| m.id.as_ref())
        .any(|id| !ix.answers.between(id, from, None).is_empty());
    later_event || answered_later
}

fn after_cross_namespace_replay(s: &Session, ix: &Index<'_>, f: &mut Findings) {
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
            .filter(|e| {
                s.seq(e.mark) > s.seq(st.opened)
                    && e.namespace == Namespace::Stream(ns)
            })
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
        // Without a counter gap, a skip is an absence: claimed only when the namespace never
        // went on after the resume.
        if to.is_none() && went_on_after(s, ix, ns, r) {
            continue;
        }
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
                evidence: crate::Evidence::SkippedEvents(Evidence {
                    namespace: label,
                    from: from.map(|n| n.to_string()),
                    to: to.map(|n| n.to_string()),
                    count,
                    after: Some(lei.clone()),
                    resume_stream: Some(st.label()),
                }),
                caused_by: vec![cause],
                subject: Subject::Namespace(ns),
            },
        );
    }
}

fn inside_streams(s: &Session, f: &mut Findings) {
    // Every integer ID of the session, gathered at the first jump that needs them.
    let mut seen: Option<BTreeSet<u64>> = None;
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
            let (ai, a, ta) = pair[0];
            let (bi, b, tb) = pair[1];
            if ta != tb || b <= a + 1 {
                continue;
            }
            // IDs of a shared counter delivered on another stream are not skipped.
            let delivered_elsewhere = if ta.is_some() {
                0
            } else {
                let seen = seen.get_or_insert_with(|| {
                    s.streams
                        .iter()
                        .flat_map(|st| st.events.iter())
                        .filter_map(|e| e.id.as_deref().and_then(ids::integer))
                        .collect()
                });
                seen.range(a + 1..b).count() as u64
            };
            let missing = b - a - 1 - delivered_elsewhere;
            if missing == 0 {
                continue;
            }
            // Bytes the capture lost between the two: the events may be in them.
            let lost = st.events[ai + 1..=bi].iter().any(|e| e.after_gap);
            f.add(s, jump(s, f, st, (ai, a), (bi, b), missing, lost));
        }
    }
}

/// The finding of a jump from event `a` (at index `ai`) to `b` on `st`.
fn jump(
    s: &Session,
    f: &Findings,
    st: &mcpf_mcp::model::Stream,
    (ai, a): (usize, u64),
    (bi, b): (usize, u64),
    missing: u64,
    lost: bool,
) -> New {
    let ev = &st.events[bi];
    let cause = if st.gap {
        f.find(s.idx, FindingKind::CaptureGap, &Subject::Stream(st.idx))
    } else {
        None
    };
    let summary = if lost {
        format!(
            "{} jumped from event {a} to {b} across bytes missing from the capture: whether the server skipped {missing} events is not determinable",
            st.label()
        )
    } else {
        format!(
            "{} jumped from event {a} to {b}: {missing} events never delivered",
            st.label()
        )
    };
    New {
        kind: FindingKind::SkippedEvents,
        severity: if lost { Severity::Info } else { INFO.severity },
        time: ev.mark,
        frames: vec![st.events[ai].mark, ev.mark],
        streams: vec![st.idx],
        summary,
        evidence: crate::Evidence::SkippedEvents(Evidence {
            namespace: st.label(),
            from: Some((a + 1).to_string()),
            to: Some((b - 1).to_string()),
            count: Some(missing),
            after: None,
            resume_stream: None,
        }),
        caused_by: cause.into_iter().collect(),
        subject: Subject::Namespace(st.idx),
    }
}

/// The evidence of a `skipped_events`: the namespace whose events never reached the client, and
/// the range of positions skipped. After a cross-namespace replay it also has the resume and the
/// `Last-Event-ID` it sent; a jump inside one stream has neither.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The stream that minted the events never delivered.
    pub namespace: String,
    /// The first skipped position: the integer counter as a decimal string (the counter part of
    /// a namespaced ID such as `get:41`); none when the `Last-Event-ID` holds no counter.
    pub from: Option<String>,
    /// The last skipped position; none when no later ID shows where the range ends.
    pub to: Option<String>,
    /// How many; none with `to`.
    pub count: Option<u64>,
    /// The `Last-Event-ID` the resume sent (a replay only).
    pub after: Option<String>,
    /// The resume stream (a replay only).
    pub resume_stream: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn both_variants_are_read_back_from_the_report() {
        for text in [
            r#"{"namespace":"get:s4","from":"42","to":null,"count":null,"after":"41","resume_stream":"get:s17"}"#,
            r#"{"namespace":"get:s4","from":"42","to":"47","count":6,"after":null,"resume_stream":null}"#,
        ] {
            let e: Evidence = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
    }
}
