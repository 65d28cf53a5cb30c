//! Which stream each resume continues: a GET with `Last-Event-ID` asks the server to replay
//! what followed that ID on the stream that delivered it. Found by the ID, worked out from an
//! index built in one pass, for sessions with tens of thousands of resumes.

use rustc_hash::FxHashMap as HashMap;

use crate::model::{Seq, Session, StreamIdx};

/// Which stream each resume continues: the interrupted stream whose last delivered ID equals the
/// `Last-Event-ID` sent; with colliding counters, the other streams that delivered the same ID
/// are recorded.
pub(super) fn resolve_resumes(s: &mut Session) {
    let index = ResumeIndex::new(s);
    for r in 0..s.streams.len() {
        let Some(lei) = s.streams[r]
            .resume
            .as_ref()
            .map(|x| x.last_event_id.as_str())
        else {
            continue;
        };
        let opened = s.seq(s.streams[r].opened);
        let mut delivered: Vec<StreamIdx> = index
            .carrying(lei)
            .iter()
            .filter(|&&(t, first)| t < r && first <= opened)
            .map(|&(t, _)| t)
            .collect();
        delivered.sort_unstable();
        let last_is = |t: &StreamIdx| index.last_id_by(s, *t, opened) == Some(lei);
        let pick = delivered
            .iter()
            .filter(|t| last_is(t) && s.streams[**t].interrupted())
            .max_by_key(|t| s.streams[**t].ended.map(|e| s.seq(e)))
            .or_else(|| delivered.iter().filter(|t| last_is(t)).max())
            .or_else(|| delivered.iter().max())
            .copied();
        if let Some(resume) = s.streams[r].resume.as_mut() {
            resume.continues = pick;
            resume.also_seen_on = delivered.into_iter().filter(|t| Some(*t) != pick).collect();
        }
    }
}

/// What [`resolve_resumes`] asks of the events, worked out in one pass: a session with 30,000
/// resumes must not scan every event for each.
struct ResumeIndex {
    /// A `Last-Event-ID` some resume sent → each stream that carried it, with the first time it
    /// did.
    carried: HashMap<String, Vec<(StreamIdx, Seq)>>,
    /// Per stream that carried one, when its events are in session order: the positions of its
    /// events with a non-empty ID. `None` otherwise (times from several inputs that go back):
    /// then it is scanned.
    with_id: Vec<Option<Vec<u32>>>,
}

impl ResumeIndex {
    fn new(s: &Session) -> Self {
        let mut carried: HashMap<String, Vec<(StreamIdx, Seq)>> = s
            .streams
            .iter()
            .filter_map(|st| st.resume.as_ref())
            .map(|r| (r.last_event_id.clone(), Vec::new()))
            .collect();
        let mut with_id = Vec::with_capacity(s.streams.len());
        for st in &s.streams {
            let mut carries = false;
            for e in &st.events {
                let Some(v) = e.id.as_deref().and_then(|i| carried.get_mut(i)) else {
                    continue;
                };
                carries = true;
                let seq = s.seq(e.mark);
                match v.last_mut() {
                    Some((t, first)) if *t == st.idx => *first = (*first).min(seq),
                    _ => v.push((st.idx, seq)),
                }
            }
            // Only a stream that carried a `Last-Event-ID` is asked about.
            let ordered = carries
                && st
                    .events
                    .windows(2)
                    .all(|w| s.seq(w[0].mark) <= s.seq(w[1].mark));
            with_id.push(ordered.then(|| {
                (0..st.events.len() as u32)
                    .filter(|&i| {
                        st.events[i as usize]
                            .id
                            .as_deref()
                            .is_some_and(|x| !x.is_empty())
                    })
                    .collect()
            }));
        }
        ResumeIndex { carried, with_id }
    }

    fn carrying(&self, id: &str) -> &[(StreamIdx, Seq)] {
        self.carried.get(id).map(Vec::as_slice).unwrap_or_default()
    }

    /// The last non-empty ID stream `t` delivered by `at`.
    fn last_id_by<'s>(&self, s: &'s Session, t: StreamIdx, at: Seq) -> Option<&'s str> {
        let events = &s.streams[t].events;
        match &self.with_id[t] {
            Some(pos) => {
                let n = pos.partition_point(|&i| s.seq(events[i as usize].mark) <= at);
                n.checked_sub(1)
                    .and_then(|k| events[pos[k] as usize].id.as_deref())
            }
            None => events
                .iter()
                .filter(|e| s.seq(e.mark) <= at)
                .rev()
                .find_map(|e| e.id.as_deref().filter(|i| !i.is_empty())),
        }
    }
}
