//! Out-of-order bytes held within [`Limits`](super::Limits): the directions whose pieces wait
//! for a hole, ordered by when the hole last made progress, and what makes them give up on it.
//! A direction over its own limit declares its oldest holes lost until it holds half; all
//! connections over theirs free the direction that has waited longest, whole; and the sweep
//! declares lost any hole that made no progress for the hole timeout. Each finds what it frees
//! at once, without looking at the other connections.

use mcpf_model::{Mark, Timestamp};

use super::assembly::declare_gap;
use super::{Half, Reassembler, TcpSink};

impl Half {
    /// Pieces wait for a hole, or the reassembler's set of waiting directions still lists it.
    pub(super) fn waits(&self) -> bool {
        !self.pending.is_empty() || self.waiting.is_some()
    }
}

impl Reassembler {
    /// Keeps [`Self::waiting`] in step with one direction's buffer: a direction waits from when
    /// pieces are first buffered, and again from each time its hole makes progress.
    pub(super) fn sync_waiting(&mut self, idx: usize, side: usize, now: Timestamp) {
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        let half = &mut conn.halves[side];
        let want = match half.waiting {
            _ if half.pending.is_empty() => None,
            Some((since, next)) if next == half.next => Some((since, next)),
            _ => Some((now, half.next)),
        };
        if want == half.waiting {
            return;
        }
        if let Some((since, _)) = half.waiting {
            self.waiting.remove(&(since, idx, side));
        }
        if let Some((since, _)) = want {
            self.waiting.insert((since, idx, side));
        }
        half.waiting = want;
    }

    /// Declares the holes of one direction lost, oldest first, until at most `keep.0` bytes and
    /// `keep.1` pieces wait; the pieces after each hole are delivered.
    pub(super) fn release(
        &mut self,
        idx: usize,
        side: usize,
        keep: (usize, usize),
        now: Timestamp,
        sink: &mut impl TcpSink,
    ) {
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        let (id, dir) = (conn.id, conn.dir_of(side));
        let half = &mut conn.halves[side];
        let (bytes, pieces) = (half.pending_bytes, half.pending.len());
        while (half.pending_bytes > keep.0 || half.pending.len() > keep.1)
            && !half.pending.is_empty()
        {
            declare_gap(half, id, dir, sink);
        }
        let freed = bytes.saturating_sub(half.pending_bytes);
        self.total_pending -= freed.min(self.total_pending);
        let freed = pieces.saturating_sub(half.pending.len());
        self.total_pieces -= freed.min(self.total_pieces);
        self.sync_waiting(idx, side, now);
    }

    /// Holds out-of-order data within [`Limits`](super::Limits): a direction over its limit
    /// declares its oldest holes lost until it holds half; all connections over theirs free whole
    /// directions, the one whose hole has waited longest first (found at once in
    /// [`Self::waiting`]).
    pub(super) fn enforce_limits(
        &mut self,
        idx: usize,
        side: usize,
        mark: Mark,
        sink: &mut impl TcpSink,
    ) {
        let l = self.limits;
        let Some(conn) = self.slots[idx].as_ref() else {
            return;
        };
        let half = &conn.halves[side];
        let (bytes, pieces) = (half.pending_bytes, half.pending.len());
        let mut hit = false;
        if bytes > l.max_buffered_per_direction {
            self.stats.direction_limit_hits += 1;
            hit = true;
            let keep = (l.max_buffered_per_direction / 2, usize::MAX);
            self.release(idx, side, keep, mark.time, sink);
        }
        if pieces > l.max_pieces_per_direction {
            self.stats.direction_piece_limit_hits += 1;
            hit = true;
            let keep = (usize::MAX, l.max_pieces_per_direction / 2);
            self.release(idx, side, keep, mark.time, sink);
        }
        if self.total_pending > l.max_buffered_total {
            self.stats.total_limit_hits += 1;
            hit = true;
        }
        if self.total_pieces > l.max_pieces_total {
            self.stats.total_piece_limit_hits += 1;
            hit = true;
        }
        while self.total_pending > l.max_buffered_total || self.total_pieces > l.max_pieces_total {
            let Some((_, vi, vs)) = self.waiting.pop_first() else {
                break;
            };
            self.release(vi, vs, (0, 0), mark.time, sink);
        }
        // What stays held, which the limits bound.
        self.stats.peak_buffered = self.stats.peak_buffered.max(self.total_pending);
        self.stats.peak_pieces = self.stats.peak_pieces.max(self.total_pieces);
        if hit {
            self.caps_of(mark).buffer_limit_hits += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::Direction::ClientToServer as C2S;
    use crate::tcp::trace::*;
    use crate::tcp::{Limits, Reassembler};
    use mcpf_model::Timestamp;

    #[test]
    fn buffer_limit_declares_a_gap_and_is_counted() {
        let limits = Limits {
            max_buffered_per_direction: 8,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(true, 3, b"cdef"));
        segs.push(data(true, 7, b"ghijkl"));
        feed(&mut r, &mut k, &segs);
        assert_eq!(r.stats.direction_limit_hits, 1);
        assert_eq!(
            k.stream(0, C2S),
            vec![Item::Gap(2), Item::Bytes(b"cdefghijkl".to_vec())]
        );
    }

    #[test]
    fn out_of_order_pieces_are_capped_by_count_whatever_their_size() {
        let limits = Limits {
            max_pieces_per_direction: 8,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        // Every other byte, never filled; half of them cut to nothing by the snap length, which
        // the byte limits would not see.
        for i in 0..20u32 {
            let mut seg = data(true, 3 + 2 * i, b"p");
            if i % 2 == 1 {
                seg.payload.clear();
                seg.missing = 1;
            }
            segs.push(seg);
        }
        feed(&mut r, &mut k, &segs);
        // 9 pieces go down to 4, three times (at the 9th, 14th and 19th).
        assert_eq!(r.stats.direction_piece_limit_hits, 3);
        assert_eq!(r.stats.peak_pieces, 8);
        assert_eq!(r.total_pieces, 5);
        assert_eq!(r.cap_counts(0).buffer_limit_hits, 3);
        r.finish(&mut k);
        assert_eq!(r.total_pieces, 0);
        let closed = &k.closed[0].c2s;
        assert_eq!((closed.bytes, closed.snaplen_bytes), (10, 10));
        assert_eq!(closed.gap_bytes, 2 + 19 + 10, "the holes and the cut bytes");
    }

    #[test]
    fn all_connections_over_the_piece_limit_free_the_longest_waiting_direction() {
        let limits = Limits {
            max_pieces_total: 5,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        for n in 0..3 {
            let mut segs = handshake(0, 0);
            segs.extend([data(true, 3, b"a"), data(true, 5, b"b")]);
            feed_with(&mut r, &mut k, &segs, &client(n), S);
        }
        // The sixth piece: connection 0, waiting longest, is freed, and nothing else.
        assert_eq!(r.stats.total_piece_limit_hits, 1);
        assert_eq!(r.total_pieces, 4);
        assert_eq!(
            k.stream(0, C2S),
            vec![
                Item::Gap(2),
                Item::Bytes(b"a".to_vec()),
                Item::Gap(1),
                Item::Bytes(b"b".to_vec())
            ]
        );
        assert!(k.stream(1, C2S).is_empty() && k.stream(2, C2S).is_empty());
    }

    #[test]
    fn a_hole_without_progress_for_the_hole_timeout_is_lost() {
        let limits = Limits {
            hole_timeout_secs: 5,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(true, 3, b"late"));
        feed(&mut r, &mut k, &segs);
        // Another connection's packets move time on, one a second.
        let other: Vec<Seg> = (0..10).map(|i| data(true, 1 + i, b"y")).collect();
        let second = Timestamp::NANOS_PER_SEC;
        feed_timed(&mut r, &mut k, &other[..4], &client(9), S, second);
        assert!(k.stream(0, C2S).is_empty(), "4 s: still waiting");
        feed_timed(&mut r, &mut k, &other, &client(9), S, second);
        assert_eq!(
            k.stream(0, C2S),
            vec![Item::Gap(2), Item::Bytes(b"late".to_vec())]
        );
        assert!(r.waiting.is_empty());
    }
}
