//! The last bytes of one direction of a connection set aside, with the marks of the segments
//! that carried them: what is replayed when the connection is resumed.

use std::collections::VecDeque;

use mcpf_model::Mark;

/// Bytes kept per direction of a connection set aside.
pub(super) const WINDOW: usize = 64 << 10;

/// What a segment's bookkeeping costs beside its bytes (its length, mark and ACK): charged to
/// the budget of the windows, so that a stream of one-byte segments cannot hold more than its
/// bytes say.
const PIECE_COST: usize = std::mem::size_of::<(usize, Mark, Option<u64>)>();

/// One direction's last [`WINDOW`] bytes (at most), in segments.
#[derive(Debug, Default)]
pub(super) struct Window {
    bytes: VecDeque<u8>,
    /// Each segment's length, its mark and the offset its ACK acknowledged, oldest first.
    pieces: VecDeque<(usize, Mark, Option<u64>)>,
    /// What was let go of this direction since it was set aside: the highest ACK its segments
    /// carried, and whether one carried none.
    dropped: Dropped,
}

/// The ACKs of the bytes a window let go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Dropped {
    pub(super) max_ack: Option<u64>,
    pub(super) unknown: bool,
}

impl Dropped {
    fn add(&mut self, acked: Option<u64>) {
        match acked {
            Some(a) => self.max_ack = Some(self.max_ack.map_or(a, |m| m.max(a))),
            None => self.unknown = true,
        }
    }
}

impl Window {
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// What the window holds, its bookkeeping included.
    pub(super) fn cost(&self) -> usize {
        self.bytes.len() + self.pieces.len() * PIECE_COST
    }

    pub(super) fn dropped(&self) -> Dropped {
        self.dropped
    }

    /// Keeps `data`, dropping the oldest bytes past [`WINDOW`]; returns the change in
    /// [`Self::cost`].
    pub(super) fn push(&mut self, data: &[u8], mark: Mark, acked: Option<u64>) -> isize {
        if data.is_empty() {
            return 0;
        }
        let before = self.cost();
        if data.len() > WINDOW {
            self.dropped.add(acked);
        }
        let data = &data[data.len().saturating_sub(WINDOW)..];
        self.bytes.extend(data);
        self.pieces.push_back((data.len(), mark, acked));
        self.skip(self.bytes.len().saturating_sub(WINDOW));
        self.cost() as isize - before as isize
    }

    /// Bytes of a segment carrying `acked` let go without being kept.
    pub(super) fn let_go(&mut self, acked: Option<u64>) {
        self.dropped.add(acked);
    }

    /// Forgets what is kept (the bytes after a gap do not follow it, or they are not worth
    /// keeping); returns the cost freed.
    pub(super) fn clear(&mut self) -> usize {
        let n = self.cost();
        for p in &self.pieces {
            self.dropped.add(p.2);
        }
        self.bytes = VecDeque::new();
        self.pieces = VecDeque::new();
        n
    }

    /// Where the first request line at or after `from` in the kept bytes starts (at `from`, or
    /// after a line end); with `last`, the last one instead.
    pub(super) fn request_line(&mut self, from: usize, last: bool) -> Option<usize> {
        let bytes: &[u8] = self.bytes.make_contiguous();
        let mut starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1))
            .filter(|&at| at >= from && at < bytes.len())
            .filter(|&at| mcpf_http::sniff::is_request_line(&bytes[at..]));
        if last {
            starts.next_back()
        } else {
            starts.next()
        }
    }

    /// Drops the oldest `n` bytes kept.
    pub(super) fn skip(&mut self, mut n: usize) {
        n = n.min(self.bytes.len());
        self.bytes.drain(..n);
        while n > 0 {
            let Some(front) = self.pieces.front_mut() else {
                break;
            };
            let cut = front.0.min(n);
            front.0 -= cut;
            n -= cut;
            let acked = front.2;
            if front.0 == 0 {
                self.pieces.pop_front();
            }
            self.dropped.add(acked);
        }
    }

    /// Drops the oldest segments while `drop` says so of their ACK; returns the bytes dropped.
    pub(super) fn skip_while(&mut self, drop: impl Fn(Option<u64>) -> bool) -> usize {
        let n: usize = self
            .pieces
            .iter()
            .take_while(|p| drop(p.2))
            .map(|p| p.0)
            .sum();
        self.skip(n);
        n
    }

    /// The kept segments, oldest first, each with its mark and ACK.
    pub(super) fn segments(&mut self) -> impl Iterator<Item = (Vec<u8>, Mark, Option<u64>)> + '_ {
        let bytes = &mut self.bytes;
        self.pieces
            .drain(..)
            .map(move |(len, mark, acked)| (bytes.drain(..len).collect(), mark, acked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_with_the_marks_of_their_segments() {
        let mut w = Window::default();
        let mark = |n: u64| Mark {
            time: mcpf_model::Timestamp::from_secs_nanos(n as i64, 0),
            frame: mcpf_model::FrameRef::new(0, n),
        };
        let piece = PIECE_COST as isize;
        let first = w.push(&vec![1; WINDOW - 10], mark(1), None);
        assert_eq!(first, (WINDOW - 10) as isize + piece);
        // Twenty bytes of the first segment go: it still holds the rest.
        assert_eq!(w.push(&[2; 30], mark(2), Some(7)), 10 + piece);
        assert_eq!(
            w.dropped(),
            Dropped {
                max_ack: None,
                unknown: true
            }
        );
        assert_eq!(w.len(), WINDOW);
        let segs: Vec<_> = w.segments().collect();
        assert_eq!(segs.len(), 2);
        assert_eq!((segs[0].0.len(), segs[0].1), (WINDOW - 30, mark(1)));
        assert_eq!((segs[1].0.as_slice(), segs[1].2), (&[2u8; 30][..], Some(7)));
        assert_eq!(w.len(), 0);
        // One segment larger than the window keeps its last bytes.
        let mut big = vec![3u8; WINDOW + 5];
        big[WINDOW + 4] = 9;
        w.push(&big, mark(3), None);
        let segs: Vec<_> = w.segments().collect();
        assert_eq!(
            (segs.len(), segs[0].0.len(), segs[0].0[WINDOW - 1]),
            (1, WINDOW, 9)
        );
    }
}
