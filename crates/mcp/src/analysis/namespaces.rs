//! The namespace that minted every event's ID: the stream that delivered it, unless a resume
//! replayed it, when what was delivered before says whose sequence it belongs to.
//!
//! Events are walked in capture order across streams; what each teaches is kept in
//! [`Delivered`] only while a later replay may ask.

use super::delivered::Delivered;
use crate::model::{Attribution, Namespace, Seq, Session, Stream, StreamIdx};

/// Labels every event with the namespace that minted its ID.
pub(super) fn attribute(s: &mut Session) {
    if s.streams.iter().all(|st| st.resume.is_none()) {
        // Nothing was replayed: every event was minted by the stream that delivered it, and no
        // index of what was delivered is needed (it costs tens of bytes an event).
        for st in &mut s.streams {
            let si = st.idx;
            for ev in &mut st.events {
                ev.namespace = Namespace::Stream(si);
                ev.attribution = Attribution::Own;
            }
        }
        return;
    }
    let order = capture_order(s);
    let mut resumed = vec![None; s.streams.len()];
    walk(s, &order, &resumed);
    // The stream each resume went on in: the one every event the evidence placed is of, or,
    // when the evidence placed none elsewhere, the one it named. Its new IDs and its priming
    // event are that stream's. Walked again when that places an event (later resumes may
    // replay it).
    let mut again = false;
    // Only when every stream was captured whole: a stream with bytes missing may have
    // delivered the ID first, and then it is no new one.
    let whole = s.streams.iter().all(|st| !st.gap && !st.body_unknown);
    for st in s.streams.iter().filter(|st| whole && st.resume.is_some()) {
        let unplaced = st.events.iter().any(|e| e.namespace == Namespace::Unknown);
        if unplaced && let Some(ns) = went_on_in(st) {
            resumed[st.idx] = Some(ns);
            again = true;
        }
    }
    if again {
        walk(s, &order, &resumed);
    }
}

/// The one stream a resume's events were placed in by evidence, else the stream it named
/// when none was; `None` when the evidence names two, or when it replayed events another
/// session was sent (its store is not this session's alone).
fn went_on_in(st: &Stream) -> Option<Namespace> {
    if !st.foreign_events.is_empty() {
        return None;
    }
    let mut placed = st.events.iter().filter(|e| {
        !e.attribution.went_on()
            && !matches!(e.attribution, Attribution::Own | Attribution::Unknown)
    });
    let Some(first) = placed.next() else {
        let c = st.resume.as_ref()?.continues?;
        return Some(Namespace::Stream(c));
    };
    placed
        .all(|e| e.namespace == first.namespace)
        .then_some(first.namespace)
        .filter(|ns| *ns != Namespace::Unknown)
}

/// One walk over the events in capture order; `resumed`: the stream each resume went on in,
/// once known.
fn walk(s: &mut Session, order: &[(Seq, StreamIdx, usize)], resumed: &[Option<Namespace>]) {
    // Only resume streams look back at what was delivered before them.
    let last_replay = order
        .iter()
        .rposition(|&(_, si, _)| s.streams[si].resume.is_some());
    let mut known = Delivered::new(s, last_replay.unwrap_or(0));
    for (n, &(_, si, ei)) in order.iter().enumerate() {
        let resume = s.streams[si].resume.as_ref().map(|r| r.continues);
        let ev = &s.streams[si].events[ei];
        let id: Option<&str> = ev.id.as_deref().filter(|i| !i.is_empty());
        let (ns, how) = match resume {
            None => (Namespace::Stream(si), Attribution::Own),
            Some(continues) => {
                let prev = s.streams[si].events[..ei]
                    .iter()
                    .rev()
                    .find(|e| e.id.as_deref().is_some_and(|i| !i.is_empty()));
                match (known.replayed(s, si, ev, id, continues, prev), resumed[si]) {
                    ((Namespace::Unknown, Attribution::Unknown), Some(ns)) => {
                        (ns, Attribution::ResumedStream)
                    }
                    ((Namespace::Unknown, Attribution::PrimingOfResume), Some(ns)) => {
                        (ns, Attribution::PrimingOfResume)
                    }
                    ((_, Attribution::PrimingOfResume), None) => {
                        (Namespace::Unknown, Attribution::Unknown)
                    }
                    (found, _) => found,
                }
            }
        };
        if last_replay.is_some_and(|last| n < last) {
            known.learn(s, (si, ei), id, ns);
        }
        let ev = &mut s.streams[si].events[ei];
        ev.namespace = ns;
        ev.attribution = how;
    }
}

/// Every event of the session (its stream, its position there), in capture order across
/// streams.
fn capture_order(s: &Session) -> Vec<(Seq, StreamIdx, usize)> {
    let mut order: Vec<(Seq, StreamIdx, usize)> = s
        .streams
        .iter()
        .flat_map(|st| {
            st.events
                .iter()
                .enumerate()
                .map(move |(i, e)| (s.seq(e.mark), st.idx, i))
        })
        .collect();
    order.sort();
    order
}
