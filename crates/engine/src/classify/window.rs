//! The last bytes of one direction of a connection set aside, with the marks of the segments
//! that carried them: what is replayed when the connection is resumed.

use std::collections::VecDeque;

use mcpf_model::Mark;

/// Bytes kept per direction of a connection set aside.
pub(super) const WINDOW: usize = 64 << 10;

/// One direction's last [`WINDOW`] bytes (at most), in segments.
#[derive(Debug, Default)]
pub(super) struct Window {
    bytes: VecDeque<u8>,
    /// Each segment's length, its mark and the offset its ACK acknowledged, oldest first.
    pieces: VecDeque<(usize, Mark, Option<u64>)>,
}

impl Window {
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Keeps `data`, dropping the oldest bytes past [`WINDOW`]; returns the change in bytes
    /// held.
    pub(super) fn push(&mut self, data: &[u8], mark: Mark, acked: Option<u64>) -> isize {
        if data.is_empty() {
            return 0;
        }
        let before = self.bytes.len();
        let data = &data[data.len().saturating_sub(WINDOW)..];
        self.bytes.extend(data);
        self.pieces.push_back((data.len(), mark, acked));
        self.skip(self.bytes.len().saturating_sub(WINDOW));
        self.bytes.len() as isize - before as isize
    }

    /// Forgets what is kept (the bytes after a gap do not follow it); returns the bytes freed.
    pub(super) fn clear(&mut self) -> usize {
        let n = self.bytes.len();
        self.bytes = VecDeque::new();
        self.pieces = VecDeque::new();
        n
    }

    /// Where the first request line in the kept bytes starts: at their start, or after a line
    /// end.
    pub(super) fn first_request_line(&mut self) -> Option<usize> {
        let bytes: &[u8] = self.bytes.make_contiguous();
        let starts = std::iter::once(0).chain(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
        starts
            .take_while(|&at| at < bytes.len())
            .find(|&at| mcpf_http::sniff::is_request_line(&bytes[at..]))
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
            if front.0 == 0 {
                self.pieces.pop_front();
            }
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
        assert_eq!(
            w.push(&vec![1; WINDOW - 10], mark(1), None),
            (WINDOW - 10) as isize
        );
        assert_eq!(w.push(&[2; 30], mark(2), Some(7)), 10);
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
