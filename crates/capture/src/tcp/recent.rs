//! The window of recent bytes: the last bytes delivered in each direction, kept so that a
//! retransmission of bytes already delivered is still compared with the copy that was (the
//! overlap policy of the module: the first copy wins, a copy that disagrees is reported), and
//! what the windows cost against their global budget
//! ([`Limits::recent_total`](super::Limits::recent_total)).
//!
//! Positions here are 64-bit stream offsets, not sequence numbers: they start at 0 with the
//! first byte of a direction and do not wrap.

use std::collections::VecDeque;

use mcpf_model::Mark;

use super::Reassembler;

/// A window of recent bytes remembers the packets that carried them, one per this many bytes of
/// its size (and at least [`MIN_RECENT_MARKS`]): tiny segments shrink the window rather than grow
/// the list, which stays an eighth of the window's memory.
const BYTES_PER_RECENT_MARK: usize = 256;
const MIN_RECENT_MARKS: usize = 8;

/// A window of recent bytes has one of two sizes: this, until its direction delivered more, then
/// [`Limits::recent_per_direction`](super::Limits::recent_per_direction). Two sizes, not a
/// doubling series: windows are freed and reallocated all the time, and blocks of many sizes
/// would fragment the heap (twice the memory the budget counts, measured on the benchmark
/// capture).
pub(super) const SMALL_RECENT: usize = 2048;

/// Memory a window of recent bytes of `size` bytes takes, with its marks: what the global
/// budget counts.
pub(super) fn recent_cost(size: usize) -> usize {
    size + recent_marks(size) * std::mem::size_of::<(u64, Mark)>()
}

fn recent_marks(size: usize) -> usize {
    (size / BYTES_PER_RECENT_MARK).max(MIN_RECENT_MARKS)
}

/// The last bytes delivered in one direction, so that a retransmission overlapping them can be
/// compared with the copy that was delivered: a [`Window`] once the reassembler gave it one.
///
/// The window is boxed and made only when granted: the global budget
/// ([`Limits::recent_total`](super::Limits::recent_total)) grants one to a few hundred
/// directions at a time, and every other direction of every open connection would otherwise
/// carry its empty ring, positions and marks (80 bytes) for nothing.
#[derive(Debug, Default)]
pub(super) struct Recent {
    window: Option<Box<Window>>,
    /// The global budget kept this window from growing once (counted once per direction).
    refused: bool,
}

impl Recent {
    fn capacity(&self) -> usize {
        self.window.as_ref().map_or(0, |w| w.size)
    }

    /// Memory it holds, as the global budget counts it.
    pub(super) fn cost(&self) -> usize {
        match self.capacity() {
            0 => 0,
            size => recent_cost(size),
        }
    }

    /// Grows the window to `size` (a power of two larger than now), keeping what it holds.
    fn grow(&mut self, size: usize) {
        self.window.get_or_insert_default().grow(size);
    }

    /// Records bytes delivered from stream `offset` on, carried by `mark`.
    #[inline]
    pub(super) fn record(&mut self, offset: u64, data: &[u8], mark: Mark) {
        if let Some(w) = self.window.as_mut() {
            w.record(offset, data, mark);
        }
    }

    /// The packet that carried the byte at `offset` (held).
    pub(super) fn mark_at(&self, offset: u64) -> Option<Mark> {
        self.window.as_ref().and_then(|w| w.mark_at(offset))
    }

    /// Compares `data`, a later copy of the bytes from `offset` on (all delivered already), with
    /// what is held. Returns how many bytes were compared and where they differ.
    pub(super) fn compare(&self, offset: u64, data: &[u8]) -> (u64, Option<Difference>) {
        self.window
            .as_ref()
            .map_or((0, None), |w| w.compare(offset, data))
    }
}

/// A ring indexed by stream offset modulo its size (a power of two), grown by the reassembler
/// once the stream outgrows it, within a global budget.
///
/// The ring fills as bytes arrive rather than being zeroed when made: most of a window's life is
/// its first lap, and zeroing 16 KiB per direction cost more than copying the bytes in. Position 0
/// holds `anchor`, the first byte written since the window last started afresh, so that writes
/// reach the end of what is filled, never past it.
#[derive(Debug, Default)]
struct Window {
    ring: Vec<u8>,
    /// The size the ring fills up to (a power of two).
    size: usize,
    /// The stream offset held at position 0 (modulo `size`).
    anchor: u64,
    /// Offsets `start..end` are held.
    start: u64,
    end: u64,
    /// The packet that carried the bytes from each offset on, oldest first.
    marks: VecDeque<(u64, Mark)>,
}

impl Window {
    fn slot(&self, offset: u64) -> usize {
        // Stream offsets, not sequence numbers: they do not wrap, and none asked for lies before
        // `anchor`. The subtraction wraps only so that one that did could not overflow; the
        // mask brings it into the ring either way.
        (offset.wrapping_sub(self.anchor) & (self.size as u64 - 1)) as usize
    }

    /// Grows the ring to `size` (a power of two larger than now), keeping what it holds.
    fn grow(&mut self, size: usize) {
        let mut ring = Vec::with_capacity(size);
        if self.size > 0 {
            // Bytes move in at most two runs: where the old ring wraps.
            let mut at = self.start;
            while at < self.end {
                let from = self.slot(at);
                let n = ((self.end - at) as usize).min(self.size - from);
                ring.extend_from_slice(&self.ring[from..from + n]);
                at += n as u64;
            }
        }
        self.ring = ring;
        self.size = size;
        self.anchor = self.start;
        let marks = recent_marks(size);
        self.marks
            .reserve_exact(marks.saturating_sub(self.marks.len()));
    }

    #[inline]
    fn record(&mut self, offset: u64, data: &[u8], mark: Mark) {
        let cap = self.size;
        if cap == 0 || data.is_empty() {
            return;
        }
        let end = offset + data.len() as u64;
        let keep = &data[data.len().saturating_sub(cap)..];
        let at = end - keep.len() as u64;
        if offset != self.end {
            // Bytes were lost in between: what came before is no longer next to what follows.
            self.start = offset;
            self.marks.clear();
            self.anchor = at;
        } else if keep.len() == cap {
            self.anchor = at;
        }
        self.write(at, keep);
        self.end = end;
        self.start = self.start.max(end.saturating_sub(cap as u64));
        if self.marks.back().is_none_or(|&(_, m)| m != mark) {
            if self.marks.len() == recent_marks(cap) {
                // Make room first: the list never outgrows what the budget counted.
                self.marks.pop_front();
            }
            self.marks.push_back((offset, mark));
        }
        let max_marks = recent_marks(cap);
        while self.marks.len() > max_marks
            || self.marks.get(1).is_some_and(|&(o, _)| o <= self.start)
        {
            self.marks.pop_front();
        }
        if let Some(&(first, _)) = self.marks.front() {
            self.start = self.start.max(first);
        }
    }

    /// Copies `bytes` in from stream offset `at` on, which is the end of what is held or the
    /// anchor: positions are overwritten up to what is filled, and the ring grows past it.
    fn write(&mut self, mut at: u64, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let pos = self.slot(at);
            let n = bytes.len().min(self.size - pos);
            let filled = self.ring.len();
            debug_assert!(pos <= filled, "a write starts past what is filled");
            let over = n.min(filled.saturating_sub(pos));
            self.ring[pos..pos + over].copy_from_slice(&bytes[..over]);
            self.ring.extend_from_slice(&bytes[over..n]);
            bytes = &bytes[n..];
            at += n as u64;
        }
    }

    fn mark_at(&self, offset: u64) -> Option<Mark> {
        let i = self.marks.partition_point(|&(o, _)| o <= offset);
        i.checked_sub(1).map(|i| self.marks[i].1)
    }

    fn compare(&self, offset: u64, data: &[u8]) -> (u64, Option<Difference>) {
        let end = offset + data.len() as u64;
        let (lo, hi) = (offset.max(self.start), end.min(self.end));
        if self.size == 0 || lo >= hi {
            return (0, None);
        }
        let mut diff = Difference::default();
        let mut at = lo;
        while at < hi {
            let pos = self.slot(at);
            let n = ((hi - at) as usize).min(self.size - pos);
            let old = &self.ring[pos..pos + n];
            let new = &data[(at - offset) as usize..(at - offset) as usize + n];
            if old != new {
                diff.add(at, old, new);
            }
            at += n as u64;
        }
        (hi - lo, (diff.bytes > 0).then_some(diff))
    }
}

/// Where a later copy of some bytes differs from the first copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Difference {
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) bytes: u64,
}

impl Difference {
    /// Adds the differences of two equally long runs starting at stream offset `at`.
    pub(super) fn add(&mut self, at: u64, old: &[u8], new: &[u8]) {
        let mut pairs = old.iter().zip(new);
        let Some(first) = pairs.position(|(a, b)| a != b) else {
            return;
        };
        let last = old
            .iter()
            .zip(new)
            .rposition(|(a, b)| a != b)
            .unwrap_or(first);
        let count = old[first..=last]
            .iter()
            .zip(&new[first..=last])
            .filter(|(a, b)| a != b)
            .count() as u64;
        if self.bytes == 0 {
            self.first = at + first as u64;
        }
        self.last = at + last as u64;
        self.bytes += count;
    }

    pub(super) fn len(&self) -> u64 {
        self.last - self.first + 1
    }
}

impl Reassembler {
    /// Lets the window of recent bytes of one direction grow with its stream (small, then
    /// [`Limits::recent_per_direction`](super::Limits::recent_per_direction)) while the global
    /// budget allows; past the budget it keeps its size and is counted once.
    pub(super) fn grow_recent(&mut self, idx: usize, side: usize, incoming: usize) {
        let per_dir = self.limits.recent_per_direction;
        if per_dir == 0 {
            return;
        }
        let max = 1usize << (usize::BITS - 1 - per_dir.leading_zeros());
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        let recent = &mut conn.halves[side].recent;
        let have = recent.capacity();
        if have >= max {
            return;
        }
        let delivered = conn.halves[side].stats.bytes as usize;
        let small = SMALL_RECENT.min(max);
        let want = if delivered.saturating_add(incoming) <= small {
            small
        } else {
            max
        };
        if want <= have {
            return;
        }
        let more = recent_cost(want) - recent.cost();
        if self.total_recent + more > self.limits.recent_total {
            if !recent.refused {
                recent.refused = true;
                self.stats.recent_window_refusals += 1;
            }
            return;
        }
        recent.grow(want);
        self.total_recent += more;
        self.stats.peak_recent = self.stats.peak_recent.max(self.total_recent);
    }
}

#[cfg(test)]
mod tests {
    use mcpf_model::{FrameRef, Timestamp};

    use super::*;
    use crate::tcp::Limits;
    use crate::tcp::trace::*;

    #[test]
    fn bytes_older_than_the_window_are_counted_not_compared() {
        let limits = Limits {
            recent_per_direction: 512,
            ..Limits::default()
        };
        let mut segs = handshake(0, 0);
        let body: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
        segs.push(data(true, 1, &body));
        // The first 100 bytes again, altered: too old to compare.
        segs.push(data(true, 1, &[0u8; 100]));
        // The last 10 again, altered: still held.
        segs.push(data(true, 1991, &[0u8; 10]));
        let (r, k) = reassemble(limits, &segs);
        let s = &k.closed[0].c2s;
        assert_eq!(s.uncompared_bytes, 100);
        assert_eq!(s.compared, 1);
        assert_eq!(k.inconsistent.len(), 1);
        assert_eq!(r.stats.rexmit_evicted_bytes, 100);
    }

    #[test]
    fn the_global_budget_of_recent_bytes_is_counted() {
        let limits = Limits {
            recent_total: 6000,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        for i in 0..4u32 {
            segs.push(data(true, 1 + i * 1500, &[b'a'; 1500]));
        }
        feed(&mut r, &mut k, &segs);
        // The small window and its marks fit; the full one (past 4 KiB delivered) does not.
        assert_eq!(r.stats.peak_recent, recent_cost(SMALL_RECENT));
        assert_eq!(r.stats.recent_window_refusals, 1, "counted once");
        // The window kept its size: the last 4 KiB can still be compared.
        feed(&mut r, &mut k, &[data(true, 5999, b"bb")]);
        assert_eq!(k.inconsistent.len(), 1);
        r.finish(&mut k);
        assert_eq!(r.total_recent, 0);
    }

    #[test]
    fn recent_ring_wraps_and_remembers_the_carrying_packets() {
        let m = |n: u64| Mark {
            time: Timestamp(n as i64),
            frame: FrameRef::new(0, n),
        };
        let mut w = Recent::default();
        w.grow(512);
        w.record(0, &[1; 400], m(1));
        w.grow(1024);
        w.record(400, &[2; 1000], m(2));
        let held = |w: &Recent| w.window.as_ref().map(|w| (w.start, w.end));
        // 1024 bytes held: 376..1400, the first 24 of them from packet 1.
        assert_eq!(held(&w), Some((376, 1400)));
        assert_eq!(w.mark_at(380), Some(m(1)));
        assert_eq!(w.mark_at(400), Some(m(2)));
        assert_eq!(w.compare(390, &[1; 10]), (10, None));
        let (n, diff) = w.compare(398, &[2, 1, 1, 2]);
        assert_eq!(n, 4);
        assert_eq!(
            diff,
            Some(Difference {
                first: 398,
                last: 400,
                bytes: 2
            })
        );
        // Bytes before the window are not compared.
        assert_eq!(w.compare(0, &[9; 10]), (0, None));
        // After a gap, the window starts again.
        w.record(2000, b"xyz", m(3));
        assert_eq!(held(&w), Some((2000, 2003)));
    }
}
