//! The anomalies the MCP stage keeps for the report. A crafted or broken capture can make one
//! per message (a malformed head on every request), so they are kept whole only up to a cap;
//! past it each is still counted by kind, with the first frame of its kind, so the report's
//! counts and kinds stay whole whatever the capture.

use std::collections::BTreeMap;

use mcpf_model::{Anomaly, AnomalyKind, Mark};

/// Anomalies kept whole: about 250 bytes each (the sentence included), a few MiB at most.
pub const MAX_ANOMALIES_KEPT: usize = 10_000;

/// The anomalies of a run: the first [`MAX_ANOMALIES_KEPT`] whole, and every one counted by
/// kind.
#[derive(Clone, Debug, Default)]
pub struct Anomalies {
    kept: Vec<Anomaly>,
    by_kind: BTreeMap<AnomalyKind, KindCount>,
}

/// How many anomalies of one kind the run had, and where the first of them was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindCount {
    pub count: u64,
    /// The earliest (by capture time, then input and frame).
    pub first: Mark,
}

impl Anomalies {
    /// Counts `a` under its kind, and keeps it while under the cap.
    pub fn add(&mut self, a: Anomaly) {
        self.by_kind
            .entry(a.kind)
            .and_modify(|k| {
                k.count += 1;
                k.first = k.first.min(a.mark);
            })
            .or_insert(KindCount {
                count: 1,
                first: a.mark,
            });
        if self.kept.len() < MAX_ANOMALIES_KEPT {
            self.kept.push(a);
        }
    }

    /// Every anomaly of the run, kept or not.
    pub fn total(&self) -> u64 {
        self.by_kind.values().map(|k| k.count).sum()
    }

    /// The anomalies kept whole, in the order they came.
    pub fn kept(&self) -> &[Anomaly] {
        &self.kept
    }

    /// The kept anomalies where the capture contradicts itself (a retransmission that said
    /// something else than the first copy): the report lists each, with both frames, since
    /// what rests on those bytes rests on one of two versions.
    pub fn conflicts(&self) -> impl Iterator<Item = &Anomaly> {
        self.kept
            .iter()
            .filter(|a| a.kind == AnomalyKind::RetransmissionInconsistent)
    }

    /// Each kind the run had, the most frequent first (then by name): what the report lists.
    pub fn by_kind(&self) -> Vec<(AnomalyKind, KindCount)> {
        let mut v: Vec<(AnomalyKind, KindCount)> =
            self.by_kind.iter().map(|(k, c)| (*k, *c)).collect();
        v.sort_by_key(|(k, c)| (std::cmp::Reverse(c.count), k.name()));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{ConnId, Direction, FrameRef, Timestamp};

    fn anomaly(kind: AnomalyKind, frame: u64) -> Anomaly {
        Anomaly {
            kind,
            conn: ConnId::tcp(0),
            dir: Direction::ClientToServer,
            mark: Mark {
                time: Timestamp(frame as i64),
                frame: FrameRef::new(0, frame),
            },
            detail: String::new(),
        }
    }

    #[test]
    fn past_the_cap_anomalies_are_counted_by_kind_not_kept() {
        let mut a = Anomalies::default();
        for i in 0..MAX_ANOMALIES_KEPT as u64 + 5 {
            a.add(anomaly(AnomalyKind::MalformedHead, 10 + i));
        }
        a.add(anomaly(AnomalyKind::H2Goaway, 3));
        a.add(anomaly(AnomalyKind::H2Goaway, 7));
        assert_eq!(a.kept().len(), MAX_ANOMALIES_KEPT);
        assert_eq!(a.total(), MAX_ANOMALIES_KEPT as u64 + 7);
        let by = a.by_kind();
        assert_eq!(by[0].0, AnomalyKind::MalformedHead);
        assert_eq!(by[0].1.count, MAX_ANOMALIES_KEPT as u64 + 5);
        assert_eq!(by[0].1.first.frame.frame, 10);
        assert_eq!((by[1].0, by[1].1.count), (AnomalyKind::H2Goaway, 2));
        assert_eq!(
            by[1].1.first.frame.frame, 3,
            "the earliest, though not kept"
        );
    }

    #[test]
    fn kinds_of_equal_count_are_listed_by_name() {
        let mut a = Anomalies::default();
        a.add(anomaly(AnomalyKind::MidstreamResync, 1));
        a.add(anomaly(AnomalyKind::BadChunkedFraming, 2));
        let names: Vec<&str> = a.by_kind().iter().map(|(k, _)| k.name()).collect();
        assert_eq!(names, ["bad_chunked_framing", "midstream_resync"]);
    }
}
