//! `cross_namespace_replay`: the resume stream delivered events minted by a namespace other than
//! the one where the client last saw its `Last-Event-ID` — the server looked the ID up in the
//! wrong counter (the incident of the seed note), or replays across streams (servers#4087).

use serde::{Deserialize, Serialize};

use super::index::Index;
use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{Attribution, Namespace, Resume, Session, Stream, StreamIdx, Need};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::CrossNamespaceReplay,
    severity: Severity::Critical,
    when: "the resume stream delivered events minted by a namespace other than the one where the client last saw Last-Event-ID",
    meaning: "The client asked to continue the stream where it last saw an event ID; the server answered with events from a different stream's sequence (the same number exists in both when counters are per transport). The replay is syntactically valid and monotonic, and wrong.",
    why: "The client receives events that belong to other requests (a response it already has: a duplicate) and never receives the events it missed (skipped), so a request waits forever. No error, no 4xx, no session mismatch: it is silent divergence.",
    fix: "Server: resolve Last-Event-ID within the namespace that minted it, and mint IDs that name their stream (get:41, post:41, or <stream>_<n>); reject an ID you cannot place (400) rather than guessing. Client: never resume with Last-Event-ID across a fallback; re-initialize and reconcile by request ID.",
    requires: &[Need::Bodies],
};

pub(crate) fn detect(s: &Session, ix: &Index, f: &mut Findings) {
    for r in s.streams.iter().filter(|st| st.resume.is_some()) {
        let Some(resume) = &r.resume else { continue };
        let Some(observed) = resume.continues else {
            continue;
        };
        let foreign = foreign_events(s, r, resume, observed);
        let Some(&(first, from)) = foreign.first() else {
            continue;
        };
        let ids: Vec<String> = foreign
            .iter()
            .filter_map(|(i, _)| r.events[*i].id.as_deref().map(str::to_string))
            .collect();
        let mut from_streams: Vec<usize> = foreign.iter().map(|(_, ns)| *ns).collect();
        from_streams.sort_unstable();
        from_streams.dedup();
        let how: Attribution = r.events[first].attribution;
        let cause = cause(s, ix, f, r);
        let observed_label = s.streams[observed].label();
        let from_label = s.streams[from].label();
        let frames = frames(s, r, resume, observed, &foreign);
        let mut streams = vec![r.idx, observed];
        streams.extend(from_streams.iter().copied());
        let also: Vec<String> = resume
            .also_seen_on
            .iter()
            .map(|&i| s.streams[i].label())
            .collect();
        f.add(
            s,
            New {
                kind: FindingKind::CrossNamespaceReplay,
                severity: INFO.severity,
                time: r.events[first].mark,
                frames,
                streams,
                summary: format!(
                    "resume with Last-Event-ID {} replayed {} minted by {from_label}, not {observed_label} where the client saw {}",
                    resume.last_event_id,
                    plural_ids(&ids),
                    resume.last_event_id
                ),
                evidence: crate::Evidence::CrossNamespaceReplay(Evidence {
                    last_event_id: resume.last_event_id.clone(),
                    observed_in: observed_label,
                    also_minted_by: also,
                    replayed_from: Some(from_label),
                    replayed_from_all: from_streams.iter().map(|&i| s.streams[i].label()).collect(),
                    replayed_event_ids: ids,
                    resume_stream: r.label(),
                    how: how.describe().to_string(),
                    attribution: how,
                    resume_upstream: r.upstream.clone(),
                    minting_upstreams: Vec::new(),
                    minted_in_session: None,
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// Events of the resume stream minted by a namespace other than the one the client resumed
/// (`observed`, or whichever minted the ID it sent): (event index, namespace).
fn foreign_events(
    s: &Session,
    r: &Stream,
    resume: &Resume,
    observed: StreamIdx,
) -> Vec<(usize, StreamIdx)> {
    let minted_by = s.streams[observed]
        .events
        .iter()
        .rev()
        .find(|e| e.id.as_deref() == Some(resume.last_event_id.as_str()))
        .map(|e| e.namespace)
        .unwrap_or(Namespace::Stream(observed));
    r.events
        .iter()
        .enumerate()
        // New events the server went on to mint in a stream are not replays of it.
        .filter(|(_, e)| !e.attribution.went_on())
        .filter_map(|(i, e)| match e.namespace {
            Namespace::Stream(ns)
                if ns != observed && ns != r.idx && Namespace::Stream(ns) != minted_by =>
            {
                Some((i, ns))
            }
            _ => None,
        })
        .collect()
}

/// The unsafe resumption this replay follows, else the fallback before it.
pub(crate) fn cause(s: &Session, ix: &Index, f: &Findings, r: &Stream) -> Option<usize> {
    f.find(
        s.idx,
        FindingKind::UnsafeResumptionAfterFallback,
        &Subject::Resume(r.idx),
    )
    .or_else(|| {
        ix.fallback_before(s, r.opened).and_then(|fb| {
            f.find(
                s.idx,
                FindingKind::SseFallback,
                &Subject::FallbackTo(fb.to_stream),
            )
        })
    })
}

/// The resume, the foreign events, where the client saw the ID it sent, and where the replayed
/// events were first delivered.
fn frames(
    s: &Session,
    r: &Stream,
    resume: &Resume,
    observed: StreamIdx,
    foreign: &[(usize, StreamIdx)],
) -> Vec<Mark> {
    let mut frames = vec![r.opened];
    frames.extend(foreign.iter().map(|(i, _)| r.events[*i].mark));
    frames.extend(
        s.streams[observed]
            .events
            .iter()
            .filter(|e| e.id.as_deref() == Some(resume.last_event_id.as_str()))
            .map(|e| e.mark),
    );
    for (i, ns) in foreign {
        let ev = &r.events[*i];
        frames.extend(
            s.streams[*ns]
                .events
                .iter()
                .find(|e| {
                    // The hash picks candidates; the bytes decide.
                    e.id == ev.id
                        && e.data_hash == ev.data_hash
                        && s.payloads.same(e.data(), ev.data()) == Some(true)
                })
                .map(|e| e.mark),
        );
    }
    frames
}

fn plural_ids(ids: &[String]) -> String {
    match ids {
        [] => "events".into(),
        [one] => format!("event {one}"),
        [first, .., last] => format!("events {first}–{last}"),
    }
}

/// The evidence of a `cross_namespace_replay`: the ID the client resumed with, where it saw it,
/// and what the resume delivered instead: another namespace's events, or (from a log) the
/// replicas, none of which served the resume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub last_event_id: String,
    /// The stream where the client last saw `last_event_id`.
    pub observed_in: String,
    /// Other streams that minted the same ID.
    pub also_minted_by: Vec<String>,
    /// The namespace that minted the first foreign event replayed; none when the evidence is
    /// the replicas.
    pub replayed_from: Option<String>,
    pub replayed_from_all: Vec<String>,
    pub replayed_event_ids: Vec<String>,
    pub resume_stream: String,
    /// How the foreign events were attributed, in words.
    pub how: String,
    pub attribution: Attribution,
    /// The upstream a proxy's log says served the resume.
    pub resume_upstream: Option<String>,
    /// When the evidence is the replicas: the upstreams that served every stream that could
    /// have minted the ID.
    pub minting_upstreams: Vec<String>,
    /// When the ID was minted in another session record of the same session (another
    /// replica's server leg).
    pub minted_in_session: Option<String>,
}
