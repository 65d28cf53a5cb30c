//! The namespace that minted every event's ID: the stream that delivered it, unless a resume
//! replayed it, when what was delivered before says whose sequence it belongs to.
//!
//! Events are walked in capture order across streams; what each teaches is kept in
//! [`Delivered`] only while a later replay may ask.

use super::delivered::Delivered;
use crate::model::{Attribution, Namespace, Seq, Session, StreamIdx};

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
    let mut known = Delivered::new(s);
    // Only resume streams look back at what was delivered before them.
    let last_replay = order
        .iter()
        .rposition(|&(_, si, _)| s.streams[si].resume.is_some());
    for (n, (_, si, ei)) in order.into_iter().enumerate() {
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
                known.replayed(s, si, ev, id, continues, prev)
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
