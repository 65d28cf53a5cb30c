//! The per-session resumption verdict: `safe`, `unsafe` (with the reason from the incident note's
//! decision boundary), `not_attempted`, or `unknown`.

use serde::Serialize;

use super::{Evidence, Finding, FindingKind};
use std::borrow::Cow;

use mcpf_mcp::model::{EventIdScheme, Session, Stream};

#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub verdict: &'static str,
    /// Static for the common verdicts: a header is kept for every session of a run.
    pub reason: Option<std::borrow::Cow<'static, str>>,
    pub resumes: usize,
}

/// Finding kinds that make a resumption unsafe, in the order of the decision boundary.
const UNSAFE_BECAUSE: &[FindingKind] = &[
    FindingKind::CrossNamespaceReplay,
    FindingKind::UnsafeResumptionAfterFallback,
    FindingKind::EventIdReset,
    FindingKind::ResumeGap,
    FindingKind::SessionNotReaffirmed,
    FindingKind::SessionIdChanged,
    FindingKind::CursorDropped,
];

pub fn resumption(s: &Session, findings: &[Finding]) -> Verdict {
    let resumes: Vec<&Stream> = s.streams.iter().filter(|st| st.resume.is_some()).collect();
    if resumes.is_empty() {
        return not_attempted(s);
    }
    let verdict = |verdict, reason: Cow<'static, str>| Verdict {
        verdict,
        reason: Some(reason),
        resumes: resumes.len(),
    };
    if let Some(f) = unsafe_because(s, findings) {
        return verdict("unsafe", format!("{}: {}", f.kind, f.summary).into());
    }
    if let Some(reason) = unknown_because(s, &resumes) {
        return verdict("unknown", reason);
    }
    let why = match s.event_id_scheme {
        EventIdScheme::Namespaced => {
            "event IDs name their stream; every resume continued the namespace it named"
        }
        _ if s.fallbacks.is_empty() => {
            "no fallback before the resumes; every resume continued the stream it named"
        }
        _ => "every resume continued the namespace it named",
    };
    verdict("safe", why.into())
}

/// No resume: says whether one would have been unsafe after the fallback.
fn not_attempted(s: &Session) -> Verdict {
    let reason = s.fallbacks.first().and_then(|fb| {
        (!matches!(s.event_id_scheme, EventIdScheme::Namespaced | EventIdScheme::None)
            && s.transport_mode_header.is_none())
        .then(|| {
            format!(
                "no resume was attempted; after the fallback at {} a resume would have been unsafe ({} event IDs)",
                fb.mark.time.clock_millis(),
                s.event_id_scheme.name()
            )
            .into()
        })
    });
    Verdict {
        verdict: "not_attempted",
        reason,
        resumes: 0,
    }
}

/// The first finding of the session that makes resumption unsafe, in the order of the
/// decision boundary.
fn unsafe_because<'a>(s: &Session, findings: &'a [Finding]) -> Option<&'a Finding> {
    UNSAFE_BECAUSE.iter().find_map(|kind| {
        findings.iter().find(|f| {
            f.session == s.idx
                && f.kind == *kind
                && !matches!(&f.evidence, Evidence::EventIdReset(e) if e.last_event_id.is_none())
        })
    })
}

/// Why the inputs cannot tell whether the resumes were safe, if they cannot.
fn unknown_because(s: &Session, resumes: &[&Stream]) -> Option<Cow<'static, str>> {
    let unplaced: Vec<&str> = resumes
        .iter()
        .filter(|r| r.resume.as_ref().is_some_and(|x| x.continues.is_none()))
        .filter_map(|r| r.resume.as_ref().map(|x| x.last_event_id.as_str()))
        .collect();
    let no_events_recorded = s
        .streams
        .iter()
        .all(|st| st.body_unknown || st.events.is_empty())
        && s.streams.iter().any(|st| st.body_unknown);
    if !unplaced.is_empty() && no_events_recorded {
        return Some(format!(
            "the inputs record no SSE events (an access log keeps no bodies): which stream minted Last-Event-ID {} cannot be told",
            unplaced.join(", ")
        ).into());
    }
    if !unplaced.is_empty() {
        return Some(format!(
            "Last-Event-ID {} was never delivered in the inputs: the stream it continues is not in them (the capture starts later, or covers another leg)",
            unplaced.join(", ")
        ).into());
    }
    if resumes.iter().any(|r| r.body_unknown) {
        return Some("the input did not record what the resume streams delivered".into());
    }
    None
}
