//! `event_id_collision`: one event ID minted on two different streams of a session. From
//! 2025-03-26 an event ID "MUST be globally unique across all streams within that session";
//! two integer counters (one per transport, one per stream) collide exactly so, and a later
//! `Last-Event-ID` then names two events. Only fresh events count (a stream that is not a
//! resume mints what it delivers), from streams without missing bytes, and one finding is
//! raised per session. IDs minted twice by the two counters of an `event_id_reset` (the client's
//! view of a second counter, after a fallback) are that reset's: it states them, and its
//! severity says whether a resume crossed them.

use std::collections::hash_map::Entry;

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{Session, StreamIdx};
use mcpf_model::{Mark, WireMap};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::EventIdCollision,
    severity: Severity::Medium,
    when: "the same event ID minted fresh on two different streams of one session",
    meaning: "Event IDs must be unique across all the streams of a session (2025-03-26 on); here one ID was minted by two streams, so it names two different events.",
    why: "A client resuming with that ID as Last-Event-ID cannot be served correctly: the server has to guess which stream it meant, and a wrong guess replays the wrong events.",
    fix: "Server: mint IDs from one counter per session, or make each ID name its stream (post-7:41, a UUID); the SDKs' stores do one or the other.",
    requires: &[],
};

/// Where an ID was minted: the stream, and the event's mark.
type Minted = (StreamIdx, Mark);

/// Listed IDs; `colliding_ids` counts them all.
const LISTED: usize = 20;

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    if s.revision.at_least(mcpf_mcp::revision::STATELESS) {
        return;
    }
    let mut collided: Vec<(&str, Minted, Minted)> = Vec::new();
    // Fresh events only, from streams the input holds whole (a gap can misplace an event's
    // fields).
    let whole = |st: &&mcpf_mcp::model::Stream| st.resume.is_none() && !st.gap && !st.body_unknown;
    // Sized for every event at once: the map is not grown (and rehashed) as it fills.
    let events = s.streams.iter().filter(whole).map(|st| st.events.len()).sum();
    let mut minted: WireMap<&str, Minted> =
        WireMap::with_capacity_and_hasher(events, Default::default());
    for st in s.streams.iter().filter(whole) {
        for ev in &st.events {
            let Some(id) = ev.id.as_deref().filter(|i| !i.is_empty()) else {
                continue;
            };
            match minted.entry(id) {
                Entry::Occupied(e) => {
                    let &(other, at) = e.get();
                    if other != st.idx {
                        collided.push((id, (other, at), (st.idx, ev.mark)));
                    }
                }
                Entry::Vacant(e) => {
                    e.insert((st.idx, ev.mark));
                }
            }
        }
    }
    // A second counter the client saw start after a fallback (`event_id_reset`) is the same
    // fact as the IDs its streams minted twice: stated once, there.
    // Each reset with its IDs, and where the first of them was minted by each counter; the IDs
    // no reset explains are the collision's.
    let mut by_reset: Vec<(usize, Vec<&str>, [Mark; 2])> = Vec::new();
    let mut rest = Vec::new();
    for c @ (id, (a, first), (b, again)) in collided {
        let Some(h) = reset_of(s, f, a, b) else {
            rest.push(c);
            continue;
        };
        match by_reset.iter_mut().find(|(r, _, _)| *r == h) {
            Some((_, ids, _)) => ids.push(id),
            None => by_reset.push((h, vec![id], [first, again])),
        }
    }
    for (h, ids, minted) in by_reset {
        state_on_reset(s, f, h, &ids, minted);
    }
    collision(s, f, &rest);
}

/// The `event_id_reset` after the fallback to stream `a` or `b`.
fn reset_of(s: &Session, f: &Findings, a: StreamIdx, b: StreamIdx) -> Option<usize> {
    [b, a]
        .iter()
        .find_map(|&st| f.find(s.idx, FindingKind::EventIdReset, &Subject::FallbackTo(st)))
}

/// The reset `h` states the split counter: how many IDs both counters minted, and the resumes
/// that crossed it (their `Last-Event-ID` one of those IDs), whose replays it causes. One that
/// no resume crossed is a latent defect (medium), not this capture's incident.
fn state_on_reset(s: &Session, f: &mut Findings, h: usize, ids: &[&str], minted: [Mark; 2]) {
    let crossing: Vec<StreamIdx> = s
        .streams
        .iter()
        .filter(|r| {
            r.resume
                .as_ref()
                .is_some_and(|x| ids.contains(&x.last_event_id.as_str()))
        })
        .map(|r| r.idx)
        .collect();
    for &r in &crossing {
        if let Some(x) = f.find(s.idx, FindingKind::CrossNamespaceReplay, &Subject::Resume(r))
            && !f.list[x].caused_by.contains(&h)
        {
            f.list[x].caused_by.push(h);
        }
    }
    let reset = &mut f.list[h];
    for m in minted {
        if !reset.frames.contains(&m) {
            reset.frames.push(m);
        }
    }
    reset.frames.sort();
    let n = ids.len();
    reset.summary.push_str(&format!(
        "; {n} ID{} minted by both counters",
        if n == 1 { "" } else { "s" }
    ));
    if crossing.is_empty() {
        reset.severity = Severity::Medium;
        reset.summary.push_str(", and no resume crossed them here");
    }
    if let crate::Evidence::EventIdReset(e) = &mut reset.evidence {
        e.ids_minted_twice = n as u64;
        e.crossed_by = crossing.iter().map(|&r| s.streams[r].label()).collect();
    }
}

/// The collision of IDs no reset explains, one finding for the session.
fn collision(s: &Session, f: &mut Findings, collided: &[(&str, Minted, Minted)]) {
    let Some(&(id, (a, first), (b, again))) = collided.first() else {
        return;
    };
    let (la, lb) = (s.streams[a].label(), s.streams[b].label());
    let others = collided.len() - 1;
    let more = if others > 0 {
        format!(
            ", and {others} more ID{} minted twice",
            if others == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    f.add(
        s,
        New {
            kind: FindingKind::EventIdCollision,
            severity: INFO.severity,
            time: again,
            frames: vec![first, again],
            streams: vec![a, b],
            summary: format!("event ID {id} minted on {la} and again on {lb}{more}: IDs are not unique in the session"),
            evidence: crate::Evidence::EventIdCollision(Evidence {
                event_id: id.to_string(),
                streams: [la, lb],
                first: At::of(first),
                again: At::of(again),
                colliding_ids: collided.len() as u64,
                listed: collided
                    .iter()
                    .take(LISTED)
                    .map(|c| c.0.to_string())
                    .collect(),
            }),
            caused_by: Vec::new(),
            subject: Subject::Stream(b),
        },
    );
}

/// The evidence of an `event_id_collision`: the first event ID minted on two streams, where and
/// when each minted it, and how many IDs of the session were minted twice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The first ID minted twice.
    pub event_id: String,
    /// The stream that minted it first, and the one that minted it again.
    pub streams: [String; 2],
    pub first: At,
    pub again: At,
    /// How many IDs were minted twice in the session.
    pub colliding_ids: u64,
    /// The first 20 of them.
    pub listed: Vec<String>,
}

/// A moment of the input: its time and frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct At {
    pub time: String,
    pub frame: u64,
}

impl At {
    pub(crate) fn of(m: Mark) -> At {
        At {
            time: m.time.rfc3339(),
            frame: m.frame.frame,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_collision_is_read_back_from_the_report() {
        let text = r#"{"event_id":"1","streams":["post:s1","get:s4"],"first":{"time":"2026-12-01T10:38:43.862922Z","frame":341},"again":{"time":"2026-12-01T10:38:46.365697Z","frame":1803},"colliding_ids":2,"listed":["1","19"]}"#;
        let e: Evidence = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }
}
