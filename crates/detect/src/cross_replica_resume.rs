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
/// addresses: the replicas behind a balancer) whose `Last-Event-ID` another of them minted.
/// The finding goes to the session that served the resume.
///
/// Two cases. The resumed replica never minted the ID: the other one did. Or each replica
/// minted it (their counters collide), and the ID names the other's stream by what a
/// `Last-Event-ID` is, the last ID the client read on the stream it resumes: the other
/// replica's stream ended right after that ID without answering its request (the stream a
/// client resumes), while the resumed replica's own stream with that ID went on past it to its
/// end (its reader holds a later ID and nothing to resume).
pub(crate) fn detect_across(sessions: &[&Session], f: &mut Findings) {
    for (i, b) in sessions.iter().enumerate() {
        for r in b.streams.iter().filter(|st| answered_resume(st)) {
            let Some(resume) = &r.resume else { continue };
            let lei = resume.last_event_id.as_str();
            let own = resume.continues.map(|c| &b.streams[c]);
            if own.is_some_and(|c| !went_past(c, lei, r)) {
                continue;
            }
            let others = sessions
                .iter()
                .enumerate()
                .filter(|(j, a)| *j != i && a.server != b.server)
                .map(|(_, a)| *a);
            let minted = match own {
                None => others
                    .into_iter()
                    .find_map(|a| Some((a, carrier(a, r, lei)?))),
                Some(_) => others
                    .into_iter()
                    .find_map(|a| Some((a, cut_at(a, r, lei)?))),
            };
            let Some((a, by)) = minted else { continue };
            if replays_the_minter(b, r, a, by, lei) {
                // One event store behind both replicas: nothing crossed.
                continue;
            }
            let h = f.add(b, across(b, r, a, by, own));
            // The requests of the stream the resume should have continued went unanswered
            // because of it.
            for x in f.list.iter_mut().filter(|x| {
                x.session == a.idx
                    && x.kind == FindingKind::UnansweredRequest
                    && x.streams.contains(&by.idx)
            }) {
                x.caused_by.push(h);
            }
        }
    }
}

/// The first stream of `a` (not a resume, in the input of `r`) that carried `lei`.
fn carrier<'s>(a: &'s Session, r: &Stream, lei: &str) -> Option<&'s Stream> {
    a.streams
        .iter()
        .filter(|st| st.resume.is_none() && st.opened.frame.input == r.opened.frame.input)
        .find(|st| st.events.iter().any(|e| e.id.as_deref() == Some(lei)))
}

/// The stream of `a` (in the input of `r`) whose last event before `r` was `lei`, and which
/// ended before `r` with a request of its own unanswered (cut, or closed by the server to be
/// polled): the stream a client resumes with that ID.
fn cut_at<'s>(a: &'s Session, r: &Stream, lei: &str) -> Option<&'s Stream> {
    a.streams
        .iter()
        .filter(|st| st.resume.is_none() && st.opened.frame.input == r.opened.frame.input)
        .filter(|st| st.ended.is_some_and(|e| e <= r.opened) && !answered_on(st))
        .find(|st| last_id_before(st, r) == Some(lei))
}

/// Whether `c`, the stream of `b` its own analysis says the resume `r` continues, went on past
/// `lei` and answered its requests before `r`: its reader read later IDs, and an answered
/// stream is not resumed.
fn went_past(c: &Stream, lei: &str, r: &Stream) -> bool {
    c.ended.is_some_and(|e| e <= r.opened)
        && answered_on(c)
        && last_id_before(c, r).is_some_and(|last| last != lei)
}

/// Whether every request the client sent on `st` was answered by its events (a stream with no
/// request, the standalone GET, answers nothing and so is never "answered").
fn answered_on(st: &Stream) -> bool {
    let answers: Vec<&RequestId> = answered(st).collect();
    let mut asked = st.request_ids().peekable();
    asked.peek().is_some() && asked.all(|id| answers.contains(&id))
}

/// The last non-empty event ID `st` delivered before `r` was opened.
fn last_id_before<'s>(st: &'s Stream, r: &Stream) -> Option<&'s str> {
    st.events
        .iter()
        .filter(|e| e.mark <= r.opened)
        .rev()
        .find_map(|e| e.id.as_deref().filter(|i| !i.is_empty()))
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
    let asked: Vec<&RequestId> = by.request_ids().collect();
    answered(r).any(|id| asked.contains(&id))
}

/// The IDs of the responses and errors the events of `st` carried.
fn answered(st: &Stream) -> impl Iterator<Item = &RequestId> {
    st.events
        .iter()
        .flat_map(|e| e.messages.iter())
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        .filter_map(|m| m.id.as_ref())
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

/// The requests whose answers `c` carried and the resume `r` carried again.
fn answered_again(r: &Stream, c: &Stream) -> Vec<String> {
    let first: Vec<&RequestId> = answered(c).collect();
    let mut again: Vec<String> = answered(r)
        .filter(|id| first.contains(id))
        .map(RequestId::to_string)
        .collect();
    again.dedup();
    again
}

/// A resume answered with an event stream, every byte of it captured.
fn answered_resume(st: &Stream) -> bool {
    st.resume.is_some() && st.status.is_some_and(|c| (200..300).contains(&c)) && !st.gap
}

/// The finding on `b` for its resume `r`, whose ID `a` minted on `by`; `own`: the stream of
/// `b` that had minted the same ID (counters that collide), whose events it replayed.
fn across(b: &Session, r: &Stream, a: &Session, by: &Stream, own: Option<&Stream>) -> New {
    let lei = r.resume.as_ref().map_or("", |x| x.last_event_id.as_str());
    let served = b.server.to_string();
    let minter = a.server.to_string();
    let replayed: Vec<String> = r
        .events
        .iter()
        .filter(|e| !e.priming)
        .filter_map(|e| e.id.as_deref().map(str::to_string))
        .collect();
    let mut summary = format!(
        "resume with Last-Event-ID {lei} was served by {served}, another replica than {minter}, which minted it"
    );
    match own {
        Some(c) => {
            let again = answered_again(r, c);
            summary.push_str(&format!(
                " as the last event of its {} (ended with its request unanswered); {served} had minted its own {lei} on its {}, which went on to answer its request, and replayed {} of that stream's events from its own store{}",
                by.label(),
                c.label(),
                replayed.len(),
                match again.as_slice() {
                    [] => String::new(),
                    ids => format!(
                        ", the answer to request {} among them, delivered a second time",
                        ids.join(", ")
                    ),
                }
            ));
        }
        None => summary.push_str(&format!(
            " on {} of {}: it was looked up in another event store (unless the replicas share one)",
            by.label(),
            a.label()
        )),
    }
    New {
        kind: FindingKind::CrossNamespaceReplay,
        severity: super::cross_namespace_replay::INFO.severity,
        time: r.opened,
        frames: vec![r.opened],
        streams: own.map_or(vec![r.idx], |c| vec![r.idx, c.idx]),
        summary,
        evidence: crate::Evidence::CrossNamespaceReplay(Replay {
            last_event_id: lei.to_string(),
            observed_in: by.label(),
            also_minted_by: own.map(|c| c.label()).into_iter().collect(),
            replayed_from: own.map(|c| c.label()),
            replayed_from_all: own.map(|c| c.label()).into_iter().collect(),
            replayed_event_ids: if own.is_some() { replayed } else { Vec::new() },
            resume_stream: r.label(),
            how: match own {
                Some(_) => "the ID is the last event of a cut stream of another server replica; the replica that served the resume replayed its own stream that had minted the same ID".into(),
                None => "served by another server replica than the one that minted the ID".into(),
            },
            attribution: Attribution::Unknown,
            resume_upstream: Some(served),
            minting_upstreams: vec![minter],
            minted_in_session: Some(a.label()),
        }),
        caused_by: Vec::new(),
        subject: Subject::Resume(r.idx),
    }
}
