//! `--live-flush`: on a live pipe, a session quiet for a while is analysed as it stands and
//! handed on as an interim report, without ending it (silence is never an end: see
//! [`super::lifetime`]). A copy is analysed; the session goes on being built, and is reported
//! again if it goes quiet again after more traffic, and finally when it ends.
//!
//! Quiet is measured in capture time: the packets of the pipe are the clock, so a session is
//! found quiet at the first exchange of any session that comes after the interval.

use std::collections::HashMap;

use mcpf_model::Timestamp;

use super::{Builder, SessionCallback};
use crate::model::SessionIdx;

/// How often (capture time) quiet sessions are looked for.
const CHECK_EVERY_NS: i64 = Timestamp::NANOS_PER_SEC;

/// What `--live-flush` keeps: each session's last activity and whether it was reported since.
pub(super) struct LiveFlush {
    after_ns: i64,
    on_interim: SessionCallback,
    /// Last activity of the sessions not finalized, and whether an interim report went out
    /// since.
    seen: HashMap<SessionIdx, (Timestamp, bool)>,
    next_check: Timestamp,
}

impl LiveFlush {
    pub(super) fn new(after_ns: i64, on_interim: SessionCallback) -> Self {
        LiveFlush {
            after_ns: after_ns.max(1),
            on_interim,
            seen: HashMap::new(),
            next_check: Timestamp::default(),
        }
    }

    /// The session did something at `t`: it is not quiet, and once quiet it is reported again.
    pub(super) fn touch(&mut self, idx: SessionIdx, t: Timestamp) {
        let e = self.seen.entry(idx).or_insert((t, false));
        if t >= e.0 {
            *e = (t, false);
        }
    }

    pub(super) fn forget(&mut self, idx: SessionIdx) {
        self.seen.remove(&idx);
    }

    /// The sessions quiet for the interval at `now`, not reported since their last activity
    /// (marked reported now), in index order; none between checks.
    fn due(&mut self, now: Timestamp) -> Vec<(SessionIdx, Timestamp)> {
        if now < self.next_check {
            return Vec::new();
        }
        self.next_check = Timestamp(now.0.saturating_add(CHECK_EVERY_NS));
        let mut due: Vec<(SessionIdx, Timestamp)> = self
            .seen
            .iter_mut()
            .filter(|(_, (last, reported))| !*reported && now.0 - last.0 >= self.after_ns)
            .map(|(&idx, (last, reported))| {
                *reported = true;
                (idx, *last)
            })
            .collect();
        due.sort_unstable();
        due
    }
}

impl Builder {
    /// Interim reports, on a live pipe: each session quiet for `after_ns` of capture time is
    /// analysed as it stands (a copy) and handed to `on_interim`, its `end` the last activity.
    pub fn with_live_flush(mut self, after_ns: i64, on_interim: SessionCallback) -> Self {
        self.flush = Some(LiveFlush::new(after_ns, on_interim));
        self
    }

    /// Notes activity of a session for `--live-flush`.
    pub(super) fn touch(&mut self, idx: SessionIdx, t: Timestamp) {
        if let Some(f) = &mut self.flush {
            f.touch(idx, t);
        }
    }

    /// Capture time is `now`: the sessions quiet for the interval are reported.
    pub(super) fn flush_quiet(&mut self, now: Timestamp) {
        let Some(due) = self.flush.as_mut().map(|f| f.due(now)) else {
            return;
        };
        for (idx, last) in due {
            if self.spilled.contains_key(&idx) {
                self.restore(idx);
                // Read back for the report, it goes to disk again once quiet for as long.
                if let Some(s) = self.live(idx).filter(|s| s.open == 0) {
                    self.quiet.push_back((s.quiet_since, idx));
                }
            }
            let Some(s) = self.live(idx).filter(|s| !s.finalized) else {
                continue;
            };
            let mut copy = Box::new(s.clone());
            if last > copy.end.time {
                copy.end.time = last;
            }
            self.analyse(&mut copy);
            if let Some(f) = &mut self.flush {
                (f.on_interim)(copy);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp(s * Timestamp::NANOS_PER_SEC)
    }

    #[test]
    fn a_session_is_due_once_quiet_and_again_after_more_traffic() {
        let mut f = LiveFlush::new(30 * Timestamp::NANOS_PER_SEC, Box::new(|_| {}));
        f.touch(1, at(100));
        f.touch(2, at(110));
        assert!(f.due(at(120)).is_empty());
        assert_eq!(f.due(at(131)), [(1, at(100))]);
        // Reported once for that silence.
        assert!(f.due(at(135)).is_empty());
        assert_eq!(f.due(at(141)), [(2, at(110))]);
        f.touch(1, at(150));
        assert_eq!(f.due(at(181)), [(1, at(150))]);
        f.forget(1);
        f.touch(2, at(190));
        assert!(f.due(at(200)).is_empty());
    }

    #[test]
    fn checks_are_at_most_once_a_second_of_capture_time() {
        let mut f = LiveFlush::new(1, Box::new(|_| {}));
        f.touch(1, at(10));
        assert_eq!(f.due(at(11)).len(), 1);
        f.touch(2, at(11));
        assert!(f.due(Timestamp(at(11).0 + 500_000_000)).is_empty());
        assert_eq!(f.due(at(12)).len(), 1);
    }
}
