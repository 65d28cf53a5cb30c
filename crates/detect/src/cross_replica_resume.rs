//! `cross_namespace_replay` from a proxy's log: a resume served by another upstream replica than
//! every stream that could have minted its `Last-Event-ID`. Each replica keeps its own event
//! store, so the replica that answered the resume looked the ID up in a store that never
//! minted it: the namespace is crossed whatever the replay held. A log keeps no events, so this
//! is the evidence a log has; it is void when the replicas share one event store, which the
//! finding says.
//!
//! A capture of the server legs sees each replica as a server of its own: the same session ID
//! at two addresses is two observations of one session. A resume at one address whose
//! `Last-Event-ID` the other minted ([`detect_across`]) crossed event stores the same way.

use crate::cross_namespace_replay::Evidence as Replay;

use super::index::Index;
use super::{FindingKind, Findings, New, Subject};
use mcpf_mcp::jsonrpc::{Kind, RequestId};
use mcpf_mcp::model::{Attribution, EventRec, Session, Stream, StreamTransport};

pub(crate) fn detect(s: &Session, ix: &Index, f: &mut Findings) {
    for r in s.streams.iter().filter(|st| st.resume.is_some()) {
        let (Some(resume), Some(served_by)) = (&r.resume, &r.upstream) else {
            continue;
        };
        // Events decide where there are any; this is for when there are none.
        if resume.continues.is_some() || !r.events.is_empty() {
            continue;
        }
        // A replica that refused the resume (404: it does not know the session) replayed
        // nothing: that is session_not_found's, no crossed namespace.
        if !r.status.is_some_and(|c| (200..300).contains(&c)) {
            continue;
        }
        let minters = could_have_minted(s, r);
        if minters.is_empty()
            || minters
                .iter()
                .any(|m| m.upstream.as_ref().is_none_or(|u| u == served_by))
        {
            continue;
        }
        // A resume continues a GET stream; which one a log cannot say: the latest.
        let observed = minters
            .iter()
            .rev()
            .find(|m| m.transport == StreamTransport::Get)
            .unwrap_or(&minters[minters.len() - 1]);
        let mut upstreams: Vec<&str> = minters
            .iter()
            .filter_map(|m| m.upstream.as_deref())
            .collect();
        upstreams.sort_unstable();
        upstreams.dedup();
        let mut streams = vec![r.idx];
        streams.extend(minters.iter().map(|m| m.idx));
        f.add(
            s,
            New {
                kind: FindingKind::CrossNamespaceReplay,
                severity: super::cross_namespace_replay::INFO.severity,
                time: r.opened,
                frames: vec![observed.opened, r.opened],
                streams,
                summary: format!(
                    "resume with Last-Event-ID {} was served by {served_by}, another replica than the one that served every stream that could have minted it ({}): it was looked up in another event store (unless the replicas share one)",
                    resume.last_event_id,
                    upstreams.join(", ")
                ),
                evidence: crate::Evidence::CrossNamespaceReplay(Replay {
                    last_event_id: resume.last_event_id.clone(),
                    observed_in: observed.label(),
                    also_minted_by: minters
                        .iter()
                        .filter(|m| m.idx != observed.idx)
                        .map(|m| m.label())
                        .collect(),
                    replayed_from: None,
                    replayed_from_all: Vec::new(),
                    replayed_event_ids: Vec::new(),
                    resume_stream: r.label(),
                    how: "served by another upstream replica than every stream that could have minted the ID".into(),
                    attribution: Attribution::Unknown,
                    resume_upstream: Some(served_by.clone()),
                    minting_upstreams: upstreams.iter().map(|u| u.to_string()).collect(),
                    minted_in_session: None,
                }),
                caused_by: super::cross_namespace_replay::cause(s, ix, f, r).into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The event streams of the session opened before the resume that answered 2xx: where its
/// `Last-Event-ID` can have come from.
fn could_have_minted<'s>(s: &'s Session, r: &Stream) -> Vec<&'s Stream> {
    s.streams
        .iter()
        .filter(|st| {
            st.idx != r.idx
                && st.event_stream
                && st.status.is_some_and(|c| (200..300).contains(&c))
                && matches!(st.transport, StreamTransport::Get | StreamTransport::Post)
                && s.seq(st.opened) < s.seq(r.opened)
        })
        .collect()
}

/// Resumes in one of `sessions` (the same session ID, from one input, at different server
/// addresses: the replicas behind a balancer) whose `Last-Event-ID` another of them minted
/// and the resumed one never did. The finding goes to the session that served the resume.
pub(crate) fn detect_across(sessions: &[&Session], f: &mut Findings) {
    for (i, b) in sessions.iter().enumerate() {
        for r in b.streams.iter().filter(|st| unplaced_resume(st)) {
            let Some(resume) = &r.resume else { continue };
            let input = r.opened.frame.input;
            let minted = sessions
                .iter()
                .enumerate()
                .filter(|(j, a)| *j != i && a.server != b.server)
                .find_map(|(_, a)| {
                    let by = a
                        .streams
                        .iter()
                        .filter(|st| st.resume.is_none() && st.opened.frame.input == input)
                        .find(|st| {
                            st.events
                                .iter()
                                .any(|e| e.id.as_deref() == Some(resume.last_event_id.as_str()))
                        })?;
                    Some((*a, by))
                });
            let Some((a, by)) = minted else { continue };
            if replays_the_minter(b, r, a, by, &resume.last_event_id) {
                // One event store behind both replicas: nothing crossed.
                continue;
            }
            f.add(b, across(b, r, a, by));
        }
    }
}

/// Whether the resume `r` served by `b` continued the stream it named on the other replica `a`:
/// it delivered, byte for byte and in order, the events the minting stream `by` carried after
/// `lei`, or it answered a request that only `by` carried (a replica that never received that
/// request can answer it only from a store it shares with the one that did). Either way one
/// event store serves both replicas and nothing crossed. A resume that delivered neither proves
/// nothing.
fn replays_the_minter(b: &Session, r: &Stream, a: &Session, by: &Stream, lei: &str) -> bool {
    answers_the_minters_request(r, by) || replays_bytes(b, r, a, by, lei)
}

fn answers_the_minters_request(r: &Stream, by: &Stream) -> bool {
    let asked: Vec<&RequestId> = by
        .client_messages
        .iter()
        .filter(|m| m.kind == Kind::Request)
        .filter_map(|m| m.id.as_ref())
        .collect();
    r.events
        .iter()
        .flat_map(|e| e.messages.iter())
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        .any(|m| m.id.as_ref().is_some_and(|id| asked.contains(&id)))
}

fn replays_bytes(b: &Session, r: &Stream, a: &Session, by: &Stream, lei: &str) -> bool {
    let Some(at) = by.events.iter().position(|e| e.id.as_deref() == Some(lei)) else {
        return false;
    };
    let after: Vec<&EventRec> = by.events[at + 1..].iter().filter(|e| !e.priming).collect();
    let replayed: Vec<&EventRec> = r.events.iter().filter(|e| !e.priming).collect();
    let bytes = |s: &Session, e: &EventRec| e.data().and_then(|d| s.payloads.read(d));
    !replayed.is_empty()
        && replayed.len() <= after.len()
        && replayed.iter().zip(after).all(|(x, y)| {
            x.id == y.id
                && x.data_hash == y.data_hash
                && bytes(b, x).is_some_and(|d| Some(d) == bytes(a, y))
        })
}

/// A resume its own session cannot place: answered with an event stream, its ID minted by none
/// of its streams.
fn unplaced_resume(st: &Stream) -> bool {
    st.resume.as_ref().is_some_and(|r| r.continues.is_none())
        && st.status.is_some_and(|c| (200..300).contains(&c))
        && !st.gap
}

fn across(b: &Session, r: &Stream, a: &Session, by: &Stream) -> New {
    let lei = r.resume.as_ref().map_or("", |x| x.last_event_id.as_str());
    let served = b.server.to_string();
    let minter = a.server.to_string();
    New {
        kind: FindingKind::CrossNamespaceReplay,
        severity: super::cross_namespace_replay::INFO.severity,
        time: r.opened,
        frames: vec![r.opened],
        streams: vec![r.idx],
        summary: format!(
            "resume with Last-Event-ID {lei} was served by {served}, another replica than {minter}, which minted it on {} of {}: it was looked up in another event store (unless the replicas share one)",
            by.label(),
            a.label()
        ),
        evidence: crate::Evidence::CrossNamespaceReplay(Replay {
            last_event_id: lei.to_string(),
            observed_in: by.label(),
            also_minted_by: Vec::new(),
            replayed_from: None,
            replayed_from_all: Vec::new(),
            replayed_event_ids: Vec::new(),
            resume_stream: r.label(),
            how: "served by another server replica than the one that minted the ID".into(),
            attribution: Attribution::Unknown,
            resume_upstream: Some(served),
            minting_upstreams: vec![minter],
            minted_in_session: Some(a.label()),
        }),
        caused_by: Vec::new(),
        subject: Subject::Resume(r.idx),
    }
}
