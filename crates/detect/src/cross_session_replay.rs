//! `cross_session_replay`: a resume in one session was replayed events another session had been
//! sent. The proof is the event itself: an ID random by construction (a uuid, the TypeScript
//! SDK's `<stream>_<ms>_<random>`) that a stream of the other session carried first, fresh, in
//! the same input (and no third session fresh), with the same data bytes. An event store keyed by stream without the session does this: the official
//! Python SDK's session manager hands one store to every session and names every standalone
//! stream `_GET_stream`, and a POST stream by its request ID, which every session reuses.
//! One finding per resume, naming every session whose events it got; a duplicate response it
//! delivered names it as its cause.

use super::{EventRef, FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{ForeignEvent, Session, Stream, short_id as short};
use mcpf_model::InputId;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::CrossSessionReplay,
    severity: Severity::Critical,
    when: "a resume in one session receives events minted in another session",
    meaning: "The server's event store answered a Last-Event-ID with events another session had been sent: the same event IDs (random by construction) with the same bytes. Its streams are keyed without the session, so streams of the same name in different sessions are one stream to it.",
    why: "One client's notifications, progress and results are delivered to another: a data leak across sessions (and tenants), and a client that takes a replayed response for its own request gets another session's result.",
    fix: "Server: key the event store by session as well as stream, or give each session its own store (the official Python SDK's session manager hands one store to every session; wrap it per session), and drop a session's events when it ends.",
    requires: &[],
};

/// Events listed in the evidence; `event_count` counts them all.
const LISTED: usize = 20;

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    let Some(replayed_in) = s.session_id.as_deref() else {
        return;
    };
    for st in &s.streams {
        let Some(resume) = st.resume.as_ref() else {
            continue;
        };
        let proven = same_events(s, st);
        if !proven.is_empty() {
            let new = finding(s, st, &resume.last_event_id, replayed_in, &proven);
            f.add(s, new);
        }
    }
}

/// The foreign events of a resume that are the same bytes as the other session's copy, with
/// their positions among the stream's events.
fn same_events<'a>(s: &Session, st: &'a Stream) -> Vec<(usize, &'a ForeignEvent)> {
    st.foreign_events
        .iter()
        .filter_map(|x| {
            let pos = x.event as usize;
            let ev = st.events.get(pos)?;
            (s.payloads.same(ev.data(), x.data) == Some(true)).then_some((pos, x))
        })
        .collect()
}

fn finding(
    s: &Session,
    st: &Stream,
    last_event_id: &str,
    replayed_in: &str,
    events: &[(usize, &ForeignEvent)],
) -> New {
    let first = events[0];
    // The minting sessions in the order their events came, with how many each.
    let mut minters: Vec<(&str, usize)> = Vec::new();
    let mut at: mcpf_model::WireMap<&str, usize> = mcpf_model::WireMap::default();
    for (_, x) in events {
        let i = *at.entry(&x.minted_in_session).or_insert_with(|| {
            minters.push((&x.minted_in_session, 0));
            minters.len() - 1
        });
        minters[i].1 += 1;
    }
    let listed: Vec<Replayed> = events
        .iter()
        .take(LISTED)
        .map(|&(pos, x)| Replayed {
            replayed: EventRef::of(s, st.idx, pos),
            first_sent: FirstSent {
                session: x.minted_in_session.clone(),
                exchange: x.first_exchange.to_string(),
                input: x.first.frame.input,
                time: x.first.time.rfc3339(),
                frame: x.first.frame.frame,
            },
        })
        .collect();
    let n = events.len();
    let others = match minters.len() {
        1 => format!("session {}", short(minters[0].0)),
        k => format!("{k} other sessions (first {})", short(minters[0].0)),
    };
    let at = st.events[first.0].mark;
    New {
        kind: FindingKind::CrossSessionReplay,
        severity: INFO.severity,
        time: at,
        frames: vec![first.1.first, at],
        streams: vec![st.idx],
        summary: format!(
            "the resume {} (Last-Event-ID {last_event_id}) was replayed {n} event{} that {others} had been sent (same IDs, same bytes): the event store is shared across sessions",
            st.label(),
            if n == 1 { "" } else { "s" },
        ),
        evidence: crate::Evidence::CrossSessionReplay(Evidence {
            last_event_id: last_event_id.to_string(),
            stream: st.label(),
            replayed_in_session: replayed_in.to_string(),
            minted_in_session: minters[0].0.to_string(),
            minted_in_sessions: minters
                .iter()
                .map(|&(m, k)| Minter {
                    session: m.to_string(),
                    events: k,
                })
                .collect(),
            event_count: n,
            events: listed,
        }),
        caused_by: Vec::new(),
        subject: Subject::Resume(st.idx),
    }
}

/// The evidence of a `cross_session_replay`: the resume, the session it was in, the sessions
/// whose events it was replayed, and each such event as replayed and as first sent.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// The `Last-Event-ID` the resume sent.
    pub last_event_id: String,
    /// The resume stream.
    pub stream: String,
    /// The session ID of the resume.
    pub replayed_in_session: String,
    /// The session ID that had been sent the first event replayed.
    pub minted_in_session: String,
    /// Every session whose events were replayed, in the order its first one came.
    pub minted_in_sessions: Vec<Minter>,
    /// The events replayed that another session had been sent, all of them.
    pub event_count: usize,
    /// The first 20 of them.
    pub events: Vec<Replayed>,
}

/// A session whose events a resume of another was replayed, and how many.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Minter {
    /// Its session ID.
    pub session: String,
    pub events: usize,
}

/// An event another session had been sent: where the resume replayed it, and where it came
/// first.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Replayed {
    pub replayed: EventRef,
    pub first_sent: FirstSent,
}

/// Where the other session's stream carried an event first, fresh.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirstSent {
    /// The session ID of the other session.
    pub session: String,
    pub exchange: String,
    pub input: InputId,
    pub time: String,
    pub frame: u64,
}
