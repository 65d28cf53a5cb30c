//! Segments into the byte stream of one direction. A sequence number becomes a stream offset
//! (from the direction's first byte); bytes in order are delivered straight from the packet;
//! bytes past a hole wait as pieces, only the parts no earlier copy covers; bytes seen before are
//! compared with the first copy, buffered or delivered (the window of recent bytes); and a hole
//! becomes a gap of its exact size once it is certainly lost: the receiver acknowledged past it
//! (and the reorder window passed), a limit or the hole timeout gave up on it, or the connection
//! ended.

use std::collections::BTreeMap;
use std::ops::Range;

use mcpf_model::{Mark, Timestamp};

use super::recent::Difference;
use super::seq::SeqNumber;
use super::{Conn, ConnId, Direction, Half, TcpEvent, TcpSink};
use crate::decode::TcpSegment;

#[derive(Debug)]
enum Chunk {
    Bytes(Vec<u8>),
    Lost(u64),
}

impl Chunk {
    fn len(&self) -> u64 {
        match self {
            Chunk::Bytes(b) => b.len() as u64,
            Chunk::Lost(n) => *n,
        }
    }
}

#[derive(Debug)]
pub(super) struct Piece {
    chunk: Chunk,
    mark: Mark,
    /// What the segment that carried it acknowledged of the other direction.
    acked: Option<u64>,
}

impl Half {
    /// Unwraps a sequence number to the stream offset nearest the next expected byte. Negative
    /// when it lies before the first byte we know of.
    fn offset(&self, seq: SeqNumber) -> i64 {
        // The offset is taken modulo 2^32 into sequence space, as the sender counted it.
        let next = self.base.unwrap_or(seq) + self.next as u32;
        self.next as i64 + i64::from(seq - next)
    }

    /// The stream offset an ACK of this direction's bytes stands for, when it can be told.
    fn acked_offset(&self, ack: SeqNumber) -> Option<u64> {
        self.base?;
        u64::try_from(self.offset(ack)).ok()
    }
}

impl Conn {
    /// The sender's part of a segment: its SYN, its bytes (or the bytes the capture cut) and its
    /// FIN.
    #[inline]
    pub(super) fn sent(
        &mut self,
        side: usize,
        seg: &TcpSegment<'_>,
        mark: Mark,
        sink: &mut impl TcpSink,
    ) {
        let dir = self.dir_of(side);
        let id = self.id;
        let packets = self.packets;
        let acked = if seg.flags.ack {
            self.halves[1 - side].acked_offset(seg.ack)
        } else {
            None
        };
        if seg.flags.syn {
            self.wscale[side] = seg.wscale;
        }
        let window = self.scaled_window(side, seg);
        let half = &mut self.halves[side];
        half.max_window = half.max_window.max(window);
        let mut data_seq = seg.seq;
        if seg.flags.syn {
            self.syn_seen[side] = true;
            // The SYN takes one sequence number; the first byte is the next (RFC 9293 §3.4).
            data_seq = seg.seq + 1;
            if half.stats.bytes == 0 && half.pending.is_empty() {
                half.base = Some(data_seq);
                half.next = 0;
            }
        }
        if half.base.is_none() {
            half.base = Some(data_seq);
        }
        half.stats.segments += 1;
        let len = seg.payload.len() as u64 + u64::from(seg.missing);
        let start = half.offset(data_seq);
        if len > 0 {
            half.last_mark = Some(mark);
            let seg_bytes = SegBytes {
                start,
                payload: seg.payload,
                missing: seg.missing,
                mark,
                acked,
            };
            insert(half, id, dir, seg_bytes, sink);
        }
        if seg.flags.fin && half.fin_at.is_none() {
            half.fin_at = Some((start + len as i64).max(0) as u64);
            half.fin_mark = Some(mark);
        }
        // Without pieces, only a FIN not yet reported can be drained.
        if !half.pending.is_empty() || (half.fin_at.is_some() && !half.stats.fin) {
            drain(half, id, dir, Some(mark), sink);
        }
        flush_acked_holes(half, id, dir, packets, mark.time, sink);
    }

    /// The receive window a segment advertises, in bytes: scaled by the shift its sender offered
    /// when both SYNs offered one (RFC 7323 §2.3; never in a SYN itself, and at most 14).
    fn scaled_window(&self, side: usize, seg: &TcpSegment<'_>) -> u32 {
        let shift = match (self.wscale[side], self.wscale[1 - side]) {
            (Some(s), Some(_)) if !seg.flags.syn => s.min(14),
            _ => 0,
        };
        u32::from(seg.window) << shift
    }

    /// The peer of `side` acknowledged up to sequence number `ack`.
    #[inline]
    pub(super) fn acked(
        &mut self,
        side: usize,
        ack: SeqNumber,
        now: Timestamp,
        sink: &mut impl TcpSink,
    ) {
        let dir = self.dir_of(side);
        let id = self.id;
        let half = &mut self.halves[side];
        if half.base.is_some() {
            let acked = half.offset(ack);
            if acked > 0 {
                let acked = acked as u64;
                if half.acked.is_none_or(|a| acked > a) {
                    half.acked = Some(acked);
                }
            }
            flush_acked_holes(half, id, dir, self.packets, now, sink);
        }
    }
}

/// The bytes a segment carries: from stream offset `start` on, `payload` as captured and then
/// `missing` bytes the capture cut; `mark` and `acked` are those of the segment.
struct SegBytes<'p> {
    start: i64,
    payload: &'p [u8],
    missing: u32,
    mark: Mark,
    acked: Option<u64>,
}

/// Takes the bytes of a segment: the next bytes are delivered at once when nothing waits,
/// others are buffered; bytes delivered already are compared with the copy delivered.
fn insert(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    seg: SegBytes<'_>,
    sink: &mut impl TcpSink,
) {
    let SegBytes {
        start,
        payload,
        missing,
        mark,
        acked,
    } = seg;
    let len = payload.len() as i64 + i64::from(missing);
    let end = start + len;
    let next = half.next as i64;
    if end <= next {
        // Everything here was delivered already.
        if len <= 1 && end == next {
            // A keep-alive probe: its one byte is garbage by design (RFC 9293 §3.8.4).
            half.stats.keepalives += 1;
        } else {
            half.stats.retransmissions += 1;
            compare_delivered(half, conn, dir, start, payload, mark, sink);
        }
        return;
    }
    let mut cut = 0i64;
    if start < next {
        half.stats.retransmissions += 1;
        cut = next - start;
        let old = &payload[..(cut as usize).min(payload.len())];
        compare_delivered(half, conn, dir, start, old, mark, sink);
    }
    let start = start + cut;
    if start > next {
        half.stats.out_of_order += 1;
    }
    // Fast path: in order with nothing waiting, delivered straight from the packet.
    if start == next && half.pending.is_empty() {
        let cut = cut as usize;
        half.delivered_mark = Some(half.delivered_mark.map_or(mark, |m| m.max(mark)));
        if cut < payload.len() {
            deliver(half, conn, dir, &payload[cut..], mark, acked, sink);
        }
        let lost = (len - cut as i64).min(i64::from(missing)) as u64;
        if lost > 0 {
            report_gap(half, conn, dir, lost, true, mark, sink);
        }
        half.next = end as u64;
        return;
    }
    let seg_start = (start - cut) as u64;
    let seg = SegBytes {
        start: seg_start as i64,
        payload,
        missing,
        mark,
        acked,
    };
    buffer(half, conn, dir, &seg, start as u64..end as u64, sink);
}

/// A retransmission of bytes already delivered, from stream offset `start` on: compared with
/// the window of recent bytes, and reported when it differs. Bytes before the window (or before
/// the first byte of the stream) cannot be compared, and are counted.
fn compare_delivered(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    start: i64,
    old: &[u8],
    second: Mark,
    sink: &mut impl TcpSink,
) {
    let skip = usize::try_from(-start.min(0))
        .unwrap_or(usize::MAX)
        .min(old.len());
    let (offset, old) = ((start + skip as i64) as u64, &old[skip..]);
    if old.is_empty() {
        return;
    }
    let (compared, diff) = half.recent.compare(offset, old);
    half.stats.uncompared_bytes += (old.len() as u64 + skip as u64) - compared;
    if compared == 0 {
        return;
    }
    half.stats.compared += 1;
    if let Some(d) = diff {
        let first = half.recent.mark_at(d.first).unwrap_or(second);
        report_inconsistent(half, conn, dir, d, first, second, sink);
    }
}

/// Reports a later copy that disagreed with the first one, and counts it.
fn report_inconsistent(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    d: Difference,
    first: Mark,
    second: Mark,
    sink: &mut impl TcpSink,
) {
    half.stats.conflicts += 1;
    half.stats.conflict_bytes += d.bytes;
    sink.on_tcp(TcpEvent::Inconsistent {
        conn,
        dir,
        offset: d.first,
        len: d.len(),
        first,
        second,
    });
}

/// The slow path of [`insert`]: keeps only the bytes of `range` that no earlier copy covers and
/// compares the rest. The segment's payload starts at offset `seg.start`.
fn buffer(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    seg: &SegBytes<'_>,
    range: Range<u64>,
    sink: &mut impl TcpSink,
) {
    let (payload, seg_start, mark) = (seg.payload, seg.start as u64, seg.mark);
    let captured_end = seg_start + payload.len() as u64;
    let overlap = compare_with_pending(&half.pending, payload, seg_start, range);
    if overlap.overlapped {
        half.stats.retransmissions += 1;
    }
    if overlap.compared {
        half.stats.compared += 1;
    }
    if let Some((d, first)) = overlap.conflict {
        report_inconsistent(half, conn, dir, d, first, mark, sink);
    }
    let slice = |from: u64, to: u64| -> Chunk {
        let a = (from - seg_start) as usize;
        let b = (to - seg_start) as usize;
        let have = payload.len();
        if b <= have {
            Chunk::Bytes(payload[a..b].to_vec())
        } else if a >= have {
            Chunk::Lost((b - a) as u64)
        } else {
            // Split by the caller below; never reached because pieces are cut at `have`.
            Chunk::Bytes(payload[a..have].to_vec())
        }
    };
    for (s, e) in overlap.fresh {
        // Cut each fresh range where captured bytes end and lost bytes begin.
        let mut parts = vec![(s, e)];
        if s < captured_end && captured_end < e {
            parts = vec![(s, captured_end), (captured_end, e)];
        }
        for (ps, pe) in parts {
            let chunk = slice(ps, pe);
            if let Chunk::Bytes(b) = &chunk {
                half.pending_bytes += b.len();
            }
            let acked = seg.acked;
            half.pending.insert(ps, Piece { chunk, mark, acked });
        }
    }
}

/// How a segment's range meets the pieces already buffered.
struct Overlap {
    /// The parts of the range no buffered piece covers, in order.
    fresh: Vec<(u64, u64)>,
    /// Some of the range was buffered already.
    overlapped: bool,
    /// Some captured bytes of it were compared with a buffered copy.
    compared: bool,
    /// Where captured bytes differ from the copy buffered first, and the packet that carried
    /// the first differing byte's first copy.
    conflict: Option<(Difference, Mark)>,
}

fn compare_with_pending(
    pending: &BTreeMap<u64, Piece>,
    payload: &[u8],
    seg_start: u64,
    range: Range<u64>,
) -> Overlap {
    let Range { start, end } = range;
    let captured_end = seg_start + payload.len() as u64;
    let mut cursor = start;
    let mut overlap = Overlap {
        fresh: Vec::new(),
        overlapped: false,
        compared: false,
        conflict: None,
    };
    let before = pending
        .range(..start)
        .next_back()
        .map(|(&k, p)| (k, k + p.chunk.len()));
    let covering: Vec<(u64, u64)> = before
        .into_iter()
        .chain(
            pending
                .range(start..end)
                .map(|(&k, p)| (k, k + p.chunk.len())),
        )
        .filter(|&(s, e)| e > start && s < end)
        .collect();
    let mut diff = Difference::default();
    let mut first_mark = None;
    for (ps, pe) in covering {
        if ps > cursor {
            overlap.fresh.push((cursor, ps));
        }
        let (os, oe) = (ps.max(cursor), pe.min(end));
        if os < oe {
            overlap.overlapped = true;
            if let Some(Piece {
                chunk: Chunk::Bytes(old),
                mark,
                ..
            }) = pending.get(&ps)
            {
                let lo = os.max(seg_start).min(captured_end);
                let hi = oe.min(captured_end);
                if lo < hi {
                    overlap.compared = true;
                    let new = &payload[(lo - seg_start) as usize..(hi - seg_start) as usize];
                    let old = &old[(lo - ps) as usize..(hi - ps) as usize];
                    if new != old {
                        let had = diff.bytes;
                        diff.add(lo, old, new);
                        if had == 0 {
                            first_mark = Some(*mark);
                        }
                    }
                }
            }
        }
        cursor = cursor.max(pe);
    }
    if cursor < end {
        overlap.fresh.push((cursor, end));
    }
    overlap.conflict = first_mark.map(|m| (diff, m));
    overlap
}

/// Delivers bytes of the stream (carried by `mark`, delivered at `half.next`), keeps them in
/// the window of recent bytes, and counts them.
#[inline]
fn deliver(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    data: &[u8],
    mark: Mark,
    acked: Option<u64>,
    sink: &mut impl TcpSink,
) {
    half.stats.bytes += data.len() as u64;
    sink.on_tcp(TcpEvent::Data {
        conn,
        dir,
        data,
        mark,
        acked,
    });
    if sink.reads(conn) {
        half.recent.record(half.next, data, mark);
    }
}

/// Reports `len` bytes of the stream lost from the capture (`snaplen`: cut from a captured
/// frame), and counts them.
#[inline]
fn report_gap(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    len: u64,
    snaplen: bool,
    mark: Mark,
    sink: &mut impl TcpSink,
) {
    half.stats.gaps += 1;
    half.stats.gap_bytes += len;
    if snaplen {
        half.stats.snaplen_bytes += len;
    }
    sink.on_tcp(TcpEvent::Gap {
        conn,
        dir,
        len,
        mark,
        snaplen,
    });
}

/// Delivers whatever is now contiguous. `completed_by` is the packet that made it deliverable
/// (the one that filled the hole); without one, each piece keeps its own mark.
fn drain(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    completed_by: Option<Mark>,
    sink: &mut impl TcpSink,
) {
    while let Some(entry) = half.pending.first_entry() {
        if *entry.key() > half.next {
            break;
        }
        let start = *entry.key();
        let piece = entry.remove();
        let len = piece.chunk.len();
        if let Chunk::Bytes(b) = &piece.chunk {
            half.pending_bytes -= b.len().min(half.pending_bytes);
        }
        let end = start + len;
        if end <= half.next {
            continue;
        }
        let skip = (half.next - start) as usize;
        let mut mark = completed_by.map_or(piece.mark, |m| m.max(piece.mark));
        if let Some(prev) = half.delivered_mark {
            mark = mark.max(prev);
        }
        half.delivered_mark = Some(mark);
        match &piece.chunk {
            // The first copy's own packet is what the window of recent bytes remembers.
            Chunk::Bytes(b) => {
                half.stats.bytes += (b.len() - skip) as u64;
                if sink.reads(conn) {
                    half.recent.record(half.next, &b[skip..], piece.mark);
                }
                sink.on_tcp(TcpEvent::Data {
                    conn,
                    dir,
                    data: &b[skip..],
                    mark,
                    acked: piece.acked,
                });
            }
            // Lost pieces are only ever the bytes a snap length cut from a captured segment.
            Chunk::Lost(n) => report_gap(half, conn, dir, n - skip as u64, true, mark, sink),
        }
        half.next = end;
    }
    if let Some(fin) = half.fin_at
        && !half.stats.fin
        && half.next >= fin
    {
        half.stats.fin = true;
        let fin_mark = half.fin_mark.unwrap_or(Mark {
            time: Timestamp(0),
            frame: mcpf_model::FrameRef::new(0, 0),
        });
        sink.on_tcp(TcpEvent::Fin {
            conn,
            dir,
            mark: completed_by.map_or(fin_mark, |m| m.max(fin_mark)),
        });
    }
}

/// Declares the hole before the first buffered piece lost and delivers what follows it.
pub(super) fn declare_gap(half: &mut Half, conn: ConnId, dir: Direction, sink: &mut impl TcpSink) {
    let Some((&first, piece)) = half.pending.first_key_value() else {
        return;
    };
    let mark = piece.mark;
    if first > half.next {
        report_gap(half, conn, dir, first - half.next, false, mark, sink);
        half.next = first;
    }
    drain(half, conn, dir, None, sink);
}

/// Packets of a connection a capture may reorder: a segment acknowledged before it shows up is
/// waited for this long before its hole is declared lost (captures merged from several interfaces,
/// or `-i any`, can put an ACK ahead of the data it acknowledges).
const REORDER_WINDOW_PACKETS: u64 = 16;

/// ... or this long in capture time.
const REORDER_WINDOW_NS: i64 = 500_000_000;

#[inline]
fn flush_acked_holes(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    packets: u64,
    now: Timestamp,
    sink: &mut impl TcpSink,
) {
    // Nothing waits: no hole (the common case, checked without a call).
    if !half.pending.is_empty() {
        flush_acked_holes_waiting(half, conn, dir, packets, now, sink);
    }
}

fn flush_acked_holes_waiting(
    half: &mut Half,
    conn: ConnId,
    dir: Direction,
    packets: u64,
    now: Timestamp,
    sink: &mut impl TcpSink,
) {
    let Some(acked) = half.acked else {
        return;
    };
    while let Some((&first, _)) = half.pending.first_key_value() {
        // Only a hole the receiver acknowledged in full is certainly lost from the capture.
        if first > half.next && acked >= first {
            // Once the FIN itself is acknowledged nothing can still be on its way.
            let fin_acked = half.fin_at.is_some_and(|f| acked > f);
            let (since, at) = *half.hole_acked_at.get_or_insert((packets, now));
            if !fin_acked
                && packets.saturating_sub(since) < REORDER_WINDOW_PACKETS
                && now.0.saturating_sub(at.0) < REORDER_WINDOW_NS
            {
                return;
            }
            half.hole_acked_at = None;
            declare_gap(half, conn, dir, sink);
        } else {
            half.hole_acked_at = None;
            break;
        }
    }
}

/// At the end of a connection every remaining hole is a gap, and so are bytes missing before a
/// FIN we saw; bytes never announced are not.
pub(super) fn flush_all(half: &mut Half, conn: ConnId, dir: Direction, sink: &mut impl TcpSink) {
    while !half.pending.is_empty() {
        declare_gap(half, conn, dir, sink);
    }
    // Bytes the peer acknowledged but the capture never showed (Wireshark's "ACKed unseen
    // segment") are lost too; the FIN's own sequence number is not data.
    if let Some(acked) = half.acked {
        let end = half.fin_at.map_or(acked, |f| acked.min(f));
        if end > half.next && half.base.is_some() {
            let mark = half.fin_mark.or(half.last_mark).unwrap_or(Mark {
                time: Timestamp(0),
                frame: mcpf_model::FrameRef::new(0, 0),
            });
            report_gap(half, conn, dir, end - half.next, false, mark, sink);
            half.next = end;
            drain(half, conn, dir, None, sink);
        }
    }
    if let (Some(fin), Some(mark)) = (half.fin_at, half.fin_mark)
        && half.next < fin
        && !half.stats.fin
    {
        report_gap(half, conn, dir, fin - half.next, false, mark, sink);
        half.next = fin;
        drain(half, conn, dir, None, sink);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tcp::Direction::{ClientToServer as C2S, ServerToClient as S2C};
    use crate::tcp::trace::*;
    use crate::tcp::{CloseReason, Limits, Reassembler};

    #[test]
    fn reorders_and_drops_duplicates() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(1, 1);
        segs.push(data(true, 6, b"world"));
        segs.push(data(true, 2, b"hell"));
        segs.push(data(true, 2, b"hell"));
        segs.push(data(true, 6, b"w"));
        segs.push(data(true, 11, b"!"));
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(k.stream(0, C2S), vec![Item::Bytes(b"hellworld!".to_vec())]);
        let s = &k.closed[0];
        assert_eq!(s.c2s.out_of_order, 1);
        assert_eq!(s.c2s.retransmissions, 2);
        assert_eq!(s.close, CloseReason::CaptureEnd);
        // The out-of-order bytes were completed by the segment that filled the hole (frame 5).
        assert_eq!(k.frames, vec![(0, C2S, 5), (0, C2S, 5), (0, C2S, 8)]);
    }

    #[test]
    fn first_copy_wins_and_conflicts_are_counted() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(1, 1);
        segs.push(data(true, 4, b"CDEF"));
        segs.push(data(true, 2, b"abXYgh"));
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(k.stream(0, C2S), vec![Item::Bytes(b"abCDEF".to_vec())]);
        assert_eq!(k.closed[0].c2s.conflicts, 1);
        // "XYgh" against the buffered "CDEF" (frame 4), at offsets 2 to 5.
        assert_eq!(k.inconsistent, vec![(0, C2S, 2, 4, 4, 5)]);
        assert_eq!(k.closed[0].c2s.conflict_bytes, 4);
    }

    #[test]
    fn wraps_sequence_numbers() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let isn = u32::MAX - 3;
        let mut segs = handshake(isn, 7);
        segs.push(data(true, after(isn, 1), b"abc"));
        segs.push(data(true, after(isn, 7), b"ghi")); // after the wrap, out of order
        segs.push(data(true, after(isn, 4), b"def")); // crosses 2^32
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(k.stream(0, C2S), vec![Item::Bytes(b"abcdefghi".to_vec())]);
        assert_eq!(k.closed[0].c2s.gaps, 0);
    }

    #[test]
    fn ack_past_a_hole_declares_the_gap_after_the_reorder_window() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(false, 1, b"aaaa"));
        // Bytes 5..=8 never captured.
        segs.push(data(false, 9, b"cccc"));
        segs.push(Seg {
            ack: Some(13),
            ..data(true, 1, b"")
        });
        feed(&mut r, &mut k, &segs);
        assert_eq!(
            k.stream(0, S2C),
            vec![Item::Bytes(b"aaaa".to_vec())],
            "waits for a reordered segment"
        );
        let acks: Vec<Seg> = (0..REORDER_WINDOW_PACKETS)
            .map(|_| Seg {
                ack: Some(13),
                ..data(true, 1, b"")
            })
            .collect();
        feed(&mut r, &mut k, &acks);
        assert_eq!(
            k.stream(0, S2C),
            vec![
                Item::Bytes(b"aaaa".to_vec()),
                Item::Gap(4),
                Item::Bytes(b"cccc".to_vec())
            ]
        );
        r.finish(&mut k);
        assert_eq!(k.closed[0].s2c.gap_bytes, 4);
    }

    #[test]
    fn an_ack_captured_ahead_of_its_data_is_not_a_loss() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(false, 1, b"aaaa"));
        // Captured out of order: the second segment, then the ACK for the first, then the first.
        segs.push(data(false, 9, b"cccc"));
        segs.push(Seg {
            ack: Some(9),
            ..data(true, 1, b"")
        });
        segs.push(data(false, 5, b"bbbb"));
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(
            k.stream(0, S2C),
            vec![Item::Bytes(b"aaaabbbbcccc".to_vec())]
        );
    }

    #[test]
    fn hole_before_fin_is_a_gap() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, b"ab"));
        segs.push(Seg {
            fin: true,
            ..data(true, 6, b"")
        });
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(
            k.stream(0, C2S),
            vec![Item::Bytes(b"ab".to_vec()), Item::Gap(3), Item::Fin]
        );
    }

    #[test]
    fn snaplen_cut_becomes_a_gap() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(Seg {
            missing: 6,
            ..data(true, 1, b"abcd")
        });
        segs.push(data(true, 11, b"next"));
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(
            k.stream(0, C2S),
            vec![
                Item::Bytes(b"abcd".to_vec()),
                Item::Gap(6),
                Item::Bytes(b"next".to_vec())
            ]
        );
        assert_eq!(k.snaplen, [true]);
        assert_eq!(k.closed[0].c2s.snaplen_bytes, 6);
        assert_eq!(k.closed[0].c2s.gap_bytes, 6);
    }

    #[test]
    fn snaplen_cut_of_a_buffered_segment_is_still_told_from_a_loss() {
        let mut segs = handshake(0, 0);
        // Out of order: a segment cut by the snap length waits behind a hole that is lost.
        segs.push(Seg {
            missing: 6,
            ..data(true, 11, b"abcd")
        });
        segs.push(data(true, 1, b"12345"));
        let (_, k) = reassemble(Limits::default(), &segs);
        assert_eq!(
            k.stream(0, C2S),
            vec![
                Item::Bytes(b"12345".to_vec()),
                Item::Gap(5),
                Item::Bytes(b"abcd".to_vec()),
                Item::Gap(6)
            ]
        );
        assert_eq!(k.snaplen, [false, true]);
        assert_eq!(k.closed[0].c2s.snaplen_bytes, 6);
    }

    #[test]
    fn keepalive_probes_are_counted_not_delivered() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, b"abc"));
        segs.push(data(true, 3, b"c"));
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(k.stream(0, C2S), vec![Item::Bytes(b"abc".to_vec())]);
        assert_eq!(k.closed[0].c2s.keepalives, 1);
    }

    #[test]
    fn retransmission_of_delivered_bytes_that_differs_names_both_frames() {
        let mut segs = handshake(0, 0);
        segs.push(data(false, 1, b"data: {\"ok\":true}\n\n")); // frame 4
        segs.push(data(false, 1, b"data: {\"ok\":true}\n\n")); // frame 5, the same
        segs.push(data(false, 13, b"fals}")); // frame 6, differs
        let (r, k) = reassemble(Limits::default(), &segs);
        assert_eq!(
            k.stream(0, S2C),
            vec![Item::Bytes(b"data: {\"ok\":true}\n\n".to_vec())],
            "the first copy wins"
        );
        // "true}" against "fals}": bytes 12..=15 of the stream differ.
        assert_eq!(k.inconsistent, vec![(0, S2C, 12, 4, 4, 6)]);
        let s = &k.closed[0].s2c;
        assert_eq!((s.compared, s.conflicts, s.conflict_bytes), (2, 1, 4));
        assert_eq!(r.stats.rexmit_compared, 2);
        assert_eq!(r.stats.rexmit_inconsistent, 1);
        assert_eq!(r.stats.rexmit_differing_bytes, 4);
    }

    #[test]
    fn retransmission_overlapping_delivered_and_new_bytes() {
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, b"abc")); // frame 4
        segs.push(data(true, 4, b"def")); // frame 5
        segs.push(data(true, 3, b"XdeFGH")); // frame 6: "c" and "f" differ; "GH" is new
        let (_, k) = reassemble(Limits::default(), &segs);
        assert_eq!(k.stream(0, C2S), vec![Item::Bytes(b"abcdefGH".to_vec())]);
        // From the first differing byte (offset 2, first carried by frame 4) to the last (5).
        assert_eq!(k.inconsistent, vec![(0, C2S, 2, 4, 4, 6)]);
        assert_eq!(k.closed[0].c2s.conflict_bytes, 2);
    }

    #[test]
    fn data_says_what_its_segment_acknowledged() {
        let mut segs = handshake(100, 500);
        segs.push(Seg {
            ack: Some(501),
            ..data(true, 101, b"GET / HTTP/1.1\r\n\r\n")
        });
        // The server acknowledges the whole request (18 bytes) with its response.
        segs.push(Seg {
            ack: Some(119),
            ..data(false, 501, b"HTTP/1.1 204 No Content\r\n\r\n")
        });
        // Out of order: held, then delivered with its own segment's ACK.
        segs.push(Seg {
            ack: Some(530),
            ..data(true, 124, b"!")
        });
        segs.push(data(true, 119, b"abcde"));
        let (_, k) = reassemble(Limits::default(), &segs);
        assert_eq!(
            k.acks,
            vec![
                (C2S, Some(0)),
                (S2C, Some(18)),
                (C2S, None),
                (C2S, Some(29))
            ]
        );
    }

    /// Builds the segments of a client stream, with a final FIN, for the property tests.
    fn split(payload: &[u8], cuts: &[usize]) -> Vec<(u32, Vec<u8>)> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % payload.len().max(1)).collect();
        points.push(0);
        points.push(payload.len());
        points.sort_unstable();
        points.dedup();
        points
            .windows(2)
            .map(|w| (w[0] as u32, payload[w[0]..w[1]].to_vec()))
            .collect()
    }

    fn run_property(
        isn: u32,
        pieces: &[(u32, Vec<u8>)],
        order: &[usize],
        total: usize,
    ) -> Vec<Item> {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(isn, 1);
        for &i in order {
            let (off, bytes) = &pieces[i];
            segs.push(data(true, after(isn, 1 + off), bytes));
        }
        segs.push(Seg {
            fin: true,
            ..data(true, after(isn, 1 + total as u32), b"")
        });
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        k.stream(0, C2S)
    }

    proptest! {
        #[test]
        fn any_reordering_and_duplication_delivers_the_same_bytes(
            payload in proptest::collection::vec(any::<u8>(), 1..600),
            cuts in proptest::collection::vec(any::<usize>(), 0..20),
            seed in proptest::collection::vec(any::<u16>(), 0..60),
            isn in any::<u32>(),
        ) {
            let pieces = split(&payload, &cuts);
            // Every piece at least once, plus duplicates, in an order the seed picks.
            let mut order: Vec<usize> = (0..pieces.len()).collect();
            for s in &seed {
                order.push(*s as usize % pieces.len());
            }
            for (i, s) in seed.iter().enumerate() {
                let j = *s as usize % order.len();
                let i = i % order.len();
                order.swap(i, j);
            }
            let got = run_property(isn, &pieces, &order, payload.len());
            prop_assert_eq!(got, vec![Item::Bytes(payload.clone()), Item::Fin]);
        }

        #[test]
        fn dropping_one_segment_yields_exactly_one_gap_of_its_size(
            payload in proptest::collection::vec(any::<u8>(), 2..600),
            cuts in proptest::collection::vec(any::<usize>(), 1..20),
            seed in proptest::collection::vec(any::<u16>(), 0..40),
            drop in any::<usize>(),
            isn in any::<u32>(),
        ) {
            let pieces = split(&payload, &cuts);
            let dropped = drop % pieces.len();
            let mut order: Vec<usize> = (0..pieces.len()).filter(|&i| i != dropped).collect();
            if order.is_empty() {
                return Ok(());
            }
            for (i, s) in seed.iter().enumerate() {
                let j = *s as usize % order.len();
                let i = i % order.len();
                order.swap(i, j);
            }
            let got = run_property(isn, &pieces, &order, payload.len());
            let (off, bytes) = &pieces[dropped];
            let (off, len) = (*off as usize, bytes.len());
            let mut want = Vec::new();
            if off > 0 {
                want.push(Item::Bytes(payload[..off].to_vec()));
            }
            want.push(Item::Gap(len as u64));
            if off + len < payload.len() {
                want.push(Item::Bytes(payload[off + len..].to_vec()));
            }
            want.push(Item::Fin);
            prop_assert_eq!(got, want);
        }
    }
}
