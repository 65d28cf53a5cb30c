//! The connection table: connections by 4-tuple ([`FlowKey`], under a seeded hash), in two
//! lists by last activity (half-open ones, then those that carried bytes) so that evicting the
//! oldest from a full table and sweeping idle ones cost O(1) per connection touched, and the
//! tombstones closed connections leave for two minutes to absorb their late segments without
//! mistaking a new connection on the same 4-tuple for one of them.

use std::hash::{Hash, Hasher};
use std::net::SocketAddr;

use mcpf_model::{InputId, Mark, Timestamp, WireMap};

use super::assembly::flush_all;
use super::recent::Recent;
use super::roles::decide_by_port;
use super::seq::SeqNumber;
use super::{CloseReason, Conn, ConnId, Half, Reassembler, RoleBasis, TcpEvent, TcpSink};
use crate::decode::TcpSegment;

/// A connection's 4-tuple, its lower endpoint first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FlowKey(SocketAddr, SocketAddr);

impl Hash for FlowKey {
    /// One word per IPv4 endpoint, where `SocketAddr`'s own hash feeds the hasher field by field
    /// (with length prefixes): the table is looked up for every segment. Equal keys still hash
    /// alike, since every field hashed is one that equality compares. Inlined into the
    /// lookup: a call of its own cost a fifth more than the hashing (it was not, depending on
    /// what else the caller inlined).
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        for end in [&self.0, &self.1] {
            match end {
                SocketAddr::V4(a) => {
                    state.write_u64(u64::from(a.ip().to_bits()) << 16 | u64::from(a.port()))
                }
                SocketAddr::V6(a) => {
                    state.write_u128(a.ip().to_bits());
                    state.write_u64(u64::from(a.flowinfo()) << 16 | u64::from(a.port()));
                }
            }
        }
    }
}

pub(super) fn flow_key(a: SocketAddr, b: SocketAddr) -> FlowKey {
    if a <= b { FlowKey(a, b) } else { FlowKey(b, a) }
}

/// A 4-tuple's hash under the table's seed.
fn flow_hash(table: &WireMap<FlowKey, usize>, key: &FlowKey) -> u64 {
    use std::hash::BuildHasher;
    table.hasher().hash_one(key)
}

/// Sweeps for idle connections and stale holes at most this often (capture time).
const SWEEP_INTERVAL_NS: i64 = Timestamp::NANOS_PER_SEC;

/// Closed connections are remembered this long to absorb their last ACKs and retransmissions.
const TOMBSTONE_NS: i64 = 120 * Timestamp::NANOS_PER_SEC;

/// The least window a late segment of a closed connection may fall within, whatever window the
/// connection advertised: the largest unscaled window (a capture that missed the handshake
/// cannot know the scale, so the windows it read may be too small).
const MIN_TOMBSTONE_WINDOW: u32 = 65_535;

/// Where one side's sequence space stood when its connection closed.
#[derive(Clone, Copy, Debug)]
struct SeqEnd {
    /// The sequence number after its last byte and FIN.
    next: SeqNumber,
    /// How far a late segment of it may lie from `next`: the largest window its peer advertised.
    window: u32,
}

/// What outlives a closed connection for [`TOMBSTONE_NS`]: when it last saw a packet, and each
/// side's final sequence window (`ends[0]` is the lower endpoint of the flow key).
#[derive(Clone, Copy, Debug)]
pub(super) struct Tombstone {
    last: Timestamp,
    ends: [Option<SeqEnd>; 2],
    /// Each side's first sequence number after its SYN, when the SYN was seen.
    syn: [Option<SeqNumber>; 2],
    /// The input the connection was read from, and the input of a copy of it recognised since.
    input: InputId,
    copy_in: Option<InputId>,
}

impl Tombstone {
    /// Whether `seg`, sent by side `side` of the flow key, is a late segment of the closed
    /// connection rather than the first one seen of a new connection on the same 4-tuple. A new
    /// connection's initial sequence number is unrelated to the old one's (RFC 9293 §3.4.1), so
    /// its sequence (or acknowledgement) number falls outside the old window but for a chance of
    /// about `2 * window / 2^32`. A side that sent nothing gives no evidence either way.
    fn absorbs(&self, side: usize, seg: &TcpSegment<'_>) -> bool {
        let near = |value: SeqNumber, end: Option<SeqEnd>| {
            end.is_none_or(|e| {
                let w = e.window.clamp(MIN_TOMBSTONE_WINDOW, 1 << 30);
                value.within(e.next, w, w)
            })
        };
        near(seg.seq, self.ends[side]) && (!seg.flags.ack || near(seg.ack, self.ends[1 - side]))
    }

    /// Whether `seg`, of another input, is the closed connection captured again: a SYN with the
    /// initial sequence number it had (a new connection on the same 4-tuple picks another,
    /// RFC 9293 §3.4.1), or any segment of a copy already recognised. Within one input the same
    /// SYN after the close is no copy.
    fn is_copy(&self, side: usize, seg: &TcpSegment<'_>, input: InputId) -> bool {
        if input == self.input {
            return false;
        }
        let syn = seg.flags.syn && !seg.flags.ack;
        let same_syn = self.syn[side] == Some(seg.seq + 1);
        match self.copy_in == Some(input) {
            // A copy's segments, but a SYN of another connection on the same 4-tuple.
            true => !syn || same_syn,
            false => syn && same_syn,
        }
    }
}

/// No slot: the end of a list.
const NIL: usize = usize::MAX;

/// A connection's neighbours in its list of [`Reassembler::order`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    prev: usize,
    next: usize,
    list: usize,
    linked: bool,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            prev: NIL,
            next: NIL,
            list: 0,
            linked: false,
        }
    }
}

/// A list of connections through their slots, oldest activity first: moving one to the back
/// (every packet) and taking the oldest (eviction, the idle sweep) cost O(1).
#[derive(Clone, Copy, Debug)]
pub(super) struct Order {
    head: usize,
    tail: usize,
}

impl Default for Order {
    fn default() -> Self {
        Order {
            head: NIL,
            tail: NIL,
        }
    }
}

/// A SYN that cannot belong to the connection we hold under this 4-tuple starts a new one.
fn is_new_connection(conn: &Conn, seg: &TcpSegment<'_>) -> bool {
    if !seg.flags.syn || seg.flags.ack {
        return false;
    }
    if conn.closed {
        return true;
    }
    let side = if seg.src == conn.a { 0 } else { 1 };
    let half = &conn.halves[side];
    match half.base {
        // A retransmitted SYN carries the same initial sequence number.
        Some(base) => {
            base != seg.seq + 1
                && (conn.syn_seen[side]
                    || half.stats.bytes > 0
                    || conn.halves[1 - side].stats.bytes > 0)
        }
        None => false,
    }
}

impl Half {
    /// The sequence number after the last byte (and FIN) this direction sent, when it sent any.
    fn seq_end(&self) -> Option<SeqNumber> {
        let end = self.fin_at.map_or(self.next, |f| self.next.max(f + 1));
        // The FIN takes a sequence number of its own; offsets wrap into sequence space.
        Some(self.base? + end as u32)
    }
}

impl Conn {
    /// What is left of the connection once closed: each side's final sequence window, by the
    /// side of the flow key `key`.
    fn tombstone(&self, key: FlowKey) -> Tombstone {
        let end = |side: usize| {
            let window = self.halves[1 - side].max_window;
            self.halves[side]
                .seq_end()
                .map(|next| SeqEnd { next, window })
        };
        let a_low = self.a == key.0;
        let (low, high) = if a_low { (0, 1) } else { (1, 0) };
        let syn = |side: usize| self.halves[side].base.filter(|_| self.syn_seen[side]);
        Tombstone {
            last: self.last.time,
            ends: [end(low), end(high)],
            syn: [syn(low), syn(high)],
            input: self.start.frame.input,
            copy_in: None,
        }
    }
}

impl Reassembler {
    /// The slot of the connection a segment belongs to, opening a new connection when it starts
    /// one; `None` for a late packet of a connection already closed.
    #[inline]
    pub(super) fn slot_for(
        &mut self,
        key: FlowKey,
        seg: &TcpSegment<'_>,
        mark: Mark,
        sink: &mut impl TcpSink,
    ) -> Option<usize> {
        match self.table.get(&key).copied() {
            Some(idx) => {
                let replace = self.slots[idx]
                    .as_ref()
                    .is_none_or(|conn| is_new_connection(conn, seg));
                if !replace {
                    return Some(idx);
                }
                self.retire(idx, Some(CloseReason::Superseded), sink);
                self.retire(idx, None, sink);
            }
            None => {
                let hash = flow_hash(&self.table, &key);
                if let Some(tomb) = self.tombstones.get_mut(&hash) {
                    // The last ACKs and retransmissions of a closed connection, inside the window
                    // it ended with; a SYN, or a segment from elsewhere in sequence space, opens
                    // a new one.
                    let syn = seg.flags.syn && !seg.flags.ack;
                    let side = usize::from(seg.src != key.0);
                    let input = mark.frame.input;
                    if tomb.is_copy(side, seg, input) {
                        let first = tomb.copy_in.replace(input).is_none();
                        tomb.last = mark.time;
                        if first {
                            self.caps_of(mark).captured_twice += 1;
                        }
                        return None;
                    }
                    if !syn && tomb.absorbs(side, seg) {
                        tomb.last = mark.time;
                        self.stats.packets_after_close += 1;
                        return None;
                    }
                    if !syn {
                        self.stats.reused_without_syn += 1;
                    }
                    self.tombstones.remove(&hash);
                }
            }
        }
        Some(self.open(key, seg, mark, sink))
    }

    /// Starts tracking a connection whose first captured packet is `seg`; returns its slot.
    fn open(
        &mut self,
        key: FlowKey,
        seg: &TcpSegment<'_>,
        mark: Mark,
        sink: &mut impl TcpSink,
    ) -> usize {
        if self.slots.len() - self.free.len() >= self.limits.max_connections.max(1) {
            self.evict(mark, sink);
        }
        let conn = Box::new(Conn {
            id: ConnId::tcp(self.next_id),
            a: seg.src,
            b: seg.dst,
            a_is_client: None,
            role_basis: RoleBasis::LowerPort,
            halves: [Half::default(), Half::default()],
            handshake_seen: false,
            start: mark,
            last: mark,
            packets: 0,
            frame_bytes: 0,
            carried: false,
            link: Link::default(),
            closed: false,
            syn_seen: [false; 2],
            wscale: [None; 2],
        });
        self.next_id += 1;
        self.stats.connections += 1;
        let idx = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(conn);
                i
            }
            None => {
                self.slots.push(Some(conn));
                self.slots.len() - 1
            }
        };
        self.table.insert(key, idx);
        self.touch(idx);
        idx
    }

    /// Makes room in a full table: the least recently active half-open connection goes, or,
    /// when every connection carried bytes, the least recently active one.
    fn evict(&mut self, mark: Mark, sink: &mut impl TcpSink) {
        let list = if self.order[0].head != NIL { 0 } else { 1 };
        let idx = self.order[list].head;
        let Some(conn) = self.slots.get(idx).and_then(|c| c.as_ref()) else {
            return;
        };
        let carried = conn.carried;
        self.stats.table_evictions += 1;
        self.stats.table_evictions_with_payload += u64::from(carried);
        let caps = self.caps_of(mark);
        caps.table_evictions += 1;
        caps.table_evictions_with_payload += u64::from(carried);
        self.retire(idx, Some(CloseReason::Evicted), sink);
    }

    /// Moves a connection to the back of its list of [`Self::order`]: it was just active.
    #[inline]
    pub(super) fn touch(&mut self, idx: usize) {
        let Some(conn) = self.slots[idx].as_ref() else {
            return;
        };
        let list = usize::from(conn.carried);
        if conn.link.linked && conn.link.list == list && self.order[list].tail == idx {
            return;
        }
        self.unlink(idx);
        let tail = self.order[list].tail;
        if let Some(conn) = self.slots[idx].as_mut() {
            conn.link = Link {
                prev: tail,
                next: NIL,
                list,
                linked: true,
            };
        }
        match self.slots.get_mut(tail).and_then(|c| c.as_mut()) {
            Some(prev) => prev.link.next = idx,
            None => self.order[list].head = idx,
        }
        self.order[list].tail = idx;
    }

    /// Takes a connection out of its list of [`Self::order`].
    fn unlink(&mut self, idx: usize) {
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        let link = conn.link;
        if !link.linked {
            return;
        }
        conn.link = Link::default();
        match self.slots.get_mut(link.prev).and_then(|c| c.as_mut()) {
            Some(prev) => prev.link.next = link.next,
            None => self.order[link.list].head = link.next,
        }
        match self.slots.get_mut(link.next).and_then(|c| c.as_mut()) {
            Some(next) => next.link.prev = link.prev,
            None => self.order[link.list].tail = link.prev,
        }
    }

    /// Flushes a connection (every hole becomes a gap), reports it closed and frees its slot,
    /// leaving a tombstone to absorb its last packets; `None` forgets it without a tombstone.
    pub(super) fn retire(
        &mut self,
        idx: usize,
        reason: Option<CloseReason>,
        sink: &mut impl TcpSink,
    ) {
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        if let Some(reason) = reason
            && !conn.closed
        {
            let id = conn.id;
            if conn.a_is_client.is_none() {
                decide_by_port(conn);
                conn.report_opened(sink);
            }
            for side in 0..2 {
                let dir = conn.dir_of(side);
                let half = &mut conn.halves[side];
                let (bytes, pieces) = (half.pending_bytes, half.pending.len());
                flush_all(half, id, dir, sink);
                self.total_pending -= bytes.min(self.total_pending);
                self.total_pieces -= pieces.min(self.total_pieces);
            }
            conn.closed = true;
            let summary = conn.summary(reason);
            for h in [&summary.c2s, &summary.s2c] {
                self.stats.rexmit_compared += h.compared;
                self.stats.rexmit_inconsistent += h.conflicts;
                self.stats.rexmit_differing_bytes += h.conflict_bytes;
                self.stats.rexmit_evicted_bytes += h.uncompared_bytes;
            }
            sink.on_tcp(TcpEvent::Closed { summary: &summary });
            if !matches!(
                reason,
                CloseReason::Superseded | CloseReason::Idle | CloseReason::Evicted
            ) {
                let key = flow_key(conn.a, conn.b);
                let tomb = conn.tombstone(key);
                let hash = flow_hash(&self.table, &key);
                self.tombstones.insert(hash, tomb);
                self.tombstone_order.push_back((tomb.last, hash));
            }
        }
        for half in &mut conn.halves {
            self.total_recent -= half.recent.cost().min(self.total_recent);
            half.recent = Recent::default();
        }
        let key = flow_key(conn.a, conn.b);
        if self.table.get(&key) == Some(&idx) {
            self.table.remove(&key);
        }
        for side in 0..2 {
            if let Some((since, _)) = conn.halves[side].waiting.take() {
                self.waiting.remove(&(since, idx, side));
            }
        }
        self.unlink(idx);
        self.slots[idx] = None;
        self.free.push(idx);
        self.bound_tombstones();
    }

    /// Keeps at most as many tombstones as connections: a flood of connections that close at
    /// once (SYN then RST) must not grow them past what the table itself may hold.
    fn bound_tombstones(&mut self) {
        while self.tombstone_order.len() > self.limits.max_connections.max(1) {
            if let Some((_, hash)) = self.tombstone_order.pop_front() {
                self.tombstones.remove(&hash);
            }
        }
    }

    /// Forgets the tombstones older than [`TOMBSTONE_NS`], looking at those only: one that
    /// absorbed a packet since it was queued is queued again at its new time.
    fn expire_tombstones(&mut self, now: Timestamp) {
        while let Some(&(queued, hash)) = self.tombstone_order.front() {
            if now.0.saturating_sub(queued.0) <= TOMBSTONE_NS {
                break;
            }
            self.tombstone_order.pop_front();
            match self.tombstones.get(&hash) {
                Some(t) if now.0.saturating_sub(t.last.0) <= TOMBSTONE_NS => {
                    self.tombstone_order.push_back((t.last, hash));
                }
                Some(_) => {
                    self.tombstones.remove(&hash);
                }
                None => {}
            }
        }
    }

    /// Once a second of capture time: forgets old tombstones, closes idle connections and
    /// declares stale holes lost. Each looks at what expired and one more, never at every
    /// connection: the lists are in order of activity, so the first one not idle ends the look
    /// (capture time that goes backwards only delays an eviction).
    pub(super) fn maybe_sweep(&mut self, mark: Mark, sink: &mut impl TcpSink) {
        let now = mark.time;
        match self.next_sweep {
            None => {
                self.next_sweep = Some(now.add_nanos(SWEEP_INTERVAL_NS));
                return;
            }
            Some(t) if now < t => return,
            _ => {}
        }
        self.next_sweep = Some(now.add_nanos(SWEEP_INTERVAL_NS));
        self.expire_tombstones(now);
        let idle_ns =
            (self.limits.idle_timeout_secs as i64).saturating_mul(Timestamp::NANOS_PER_SEC);
        let hole_ns =
            (self.limits.hole_timeout_secs as i64).saturating_mul(Timestamp::NANOS_PER_SEC);
        for list in 0..2 {
            while let Some(conn) = self
                .slots
                .get(self.order[list].head)
                .and_then(|c| c.as_ref())
            {
                if now.0.saturating_sub(conn.last.time.0) <= idle_ns {
                    break;
                }
                self.stats.idle_evictions += 1;
                self.retire(self.order[list].head, Some(CloseReason::Idle), sink);
            }
        }
        while let Some(&(since, idx, side)) = self.waiting.first() {
            if now.0.saturating_sub(since.0) <= hole_ns {
                break;
            }
            self.waiting.pop_first();
            self.release(idx, side, (0, 0), now, sink);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::Direction::{ClientToServer as C2S, ServerToClient as S2C};
    use crate::tcp::trace::*;
    use crate::tcp::{Direction, Limits, cap_notes};

    #[test]
    fn new_syn_after_fin_is_a_new_connection() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(10, 20);
        segs.push(data(true, 11, b"one"));
        segs.push(Seg {
            fin: true,
            ..data(true, 14, b"")
        });
        segs.push(Seg {
            fin: true,
            ack: Some(15),
            ..data(false, 21, b"")
        });
        segs.push(Seg {
            ack: Some(22),
            ..data(true, 15, b"")
        });
        segs.extend(handshake(900, 800));
        segs.push(data(true, 901, b"two"));
        feed(&mut r, &mut k, &segs);
        r.finish(&mut k);
        assert_eq!(k.opened.len(), 2);
        assert_eq!(
            k.stream(0, C2S),
            vec![Item::Bytes(b"one".to_vec()), Item::Fin]
        );
        assert_eq!(k.stream(1, C2S), vec![Item::Bytes(b"two".to_vec())]);
        assert_eq!(k.closed[0].close, CloseReason::Fin);
        assert_eq!(k.closed[1].close, CloseReason::CaptureEnd);
    }

    #[test]
    fn reset_closes_and_names_the_side() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(false, 1, b"event: 1\n\n"));
        segs.push(Seg {
            rst: true,
            ..data(true, 1, b"")
        });
        feed(&mut r, &mut k, &segs);
        assert_eq!(
            k.closed[0].close,
            CloseReason::Reset {
                by: Direction::ClientToServer
            }
        );
        // A late retransmission after the reset is absorbed, not a new connection.
        feed(&mut r, &mut k, &[data(false, 1, b"event: 1\n\n")]);
        r.finish(&mut k);
        assert_eq!(k.closed.len(), 1);
    }

    #[test]
    fn idle_connections_are_evicted() {
        let limits = Limits {
            idle_timeout_secs: 5,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, b"x"));
        // Frames are one second apart: the other connection keeps time moving.
        feed(&mut r, &mut k, &segs);
        let later: Vec<Seg> = (0..10).map(|i| data(true, 1 + i, b"y")).collect();
        let second = Timestamp::NANOS_PER_SEC;
        feed_timed(
            &mut r,
            &mut k,
            &later,
            "10.9.9.9:1234",
            "10.0.0.2:8080",
            second,
        );
        let evicted = k.closed.iter().find(|s| s.conn == ConnId::tcp(0)).unwrap();
        assert_eq!(evicted.close, CloseReason::Idle);
        assert_eq!(r.stats.idle_evictions, 1);
    }

    #[test]
    fn a_full_table_evicts_half_open_connections_first_by_last_activity() {
        let limits = Limits {
            max_connections: 3,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, b"GET / HTTP/1.1\r\n"));
        feed_with(&mut r, &mut k, &segs, &client(0), S);
        for n in [1, 2, 1, 3, 4] {
            // Connection 1 sends its SYN again after 2 opened: 2 is the older.
            feed_with(&mut r, &mut k, &[syn(7)], &client(n), S);
        }
        // 3 carries bytes now: of the half-open ones only 4 is left, then 5.
        feed_with(&mut r, &mut k, &[data(true, 8, b"x")], &client(3), S);
        for n in [5, 6] {
            feed_with(&mut r, &mut k, &[syn(7)], &client(n), S);
        }
        assert_eq!(closed_as(&k, CloseReason::Evicted), vec![2, 1, 4, 5]);
        assert_eq!(r.stats.table_evictions, 4);
        assert_eq!(r.stats.table_evictions_with_payload, 0);
        assert_eq!(r.cap_counts(0).table_evictions, 4);
        r.finish(&mut k);
        assert_eq!(closed_as(&k, CloseReason::CaptureEnd), vec![0, 3, 6]);
        assert_eq!(
            k.stream(0, C2S),
            vec![Item::Bytes(b"GET / HTTP/1.1\r\n".to_vec())]
        );
    }

    #[test]
    fn a_full_table_of_busy_connections_evicts_the_least_recently_active() {
        let limits = Limits {
            max_connections: 2,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        for n in [0, 1, 0] {
            feed_with(&mut r, &mut k, &[data(true, 1, b"abc")], &client(n), S);
        }
        feed_with(&mut r, &mut k, &[syn(7)], &client(2), S);
        assert_eq!(closed_as(&k, CloseReason::Evicted), vec![1]);
        assert_eq!(r.stats.table_evictions_with_payload, 1);
        assert_eq!(
            cap_notes(&r.cap_counts(0), &r.limits).len(),
            1,
            "an eviction is a warning of the input"
        );
    }

    #[test]
    fn an_exchange_beside_a_flood_of_syns_is_reassembled_whole() {
        let limits = Limits {
            max_connections: 100,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        let request = b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
        let response = b"HTTP/1.1 202 Accepted\r\n\r\n";
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, request));
        feed(&mut r, &mut k, &segs);
        for n in 1..=1000 {
            feed_with(&mut r, &mut k, &[syn(n)], &client(n), S);
        }
        feed(&mut r, &mut k, &[data(false, 1, response)]);
        r.finish(&mut k);
        assert_eq!(k.stream(0, C2S), vec![Item::Bytes(request.to_vec())]);
        assert_eq!(k.stream(0, S2C), vec![Item::Bytes(response.to_vec())]);
        assert_eq!(k.closed[0].conn, ConnId::tcp(1), "a SYN went first");
        assert_eq!(closed_as(&k, CloseReason::CaptureEnd)[0], 0);
        assert_eq!(r.stats.table_evictions, 1000 - 99);
        assert_eq!(r.stats.table_evictions_with_payload, 0);
    }

    #[test]
    fn tombstones_are_no_more_than_the_table_holds() {
        let limits = Limits {
            max_connections: 2,
            ..Limits::default()
        };
        let mut r = Reassembler::new(limits);
        let mut k = Collector::default();
        for n in 0..5 {
            let reset = Seg {
                rst: true,
                ..data(true, 8, b"")
            };
            feed_with(&mut r, &mut k, &[syn(7), reset], &client(n), S);
        }
        assert_eq!(closed_as(&k, CloseReason::Reset { by: C2S }).len(), 5);
        assert_eq!(r.tombstones.len(), 2);
        assert_eq!(r.tombstone_order.len(), 2);
    }

    /// One connection from `handshake(isn_c, isn_s)`: "one" from the client, then both FINs and
    /// the last ACK, which closes it and leaves its tombstone.
    fn closed_connection(isn_c: u32, isn_s: u32) -> Vec<Seg> {
        let (c, s) = (after(isn_c, 1), after(isn_s, 1));
        let mut segs = handshake(isn_c, isn_s);
        segs.push(Seg {
            ack: Some(s),
            ..data(true, c, b"one")
        });
        segs.push(Seg {
            fin: true,
            ack: Some(s),
            ..data(true, after(c, 3), b"")
        });
        segs.push(Seg {
            fin: true,
            ack: Some(after(c, 4)),
            ..data(false, s, b"")
        });
        segs.push(Seg {
            ack: Some(after(s, 1)),
            ..data(true, after(c, 4), b"")
        });
        segs
    }

    /// The same link captured in two inputs, the second's clock 2 s behind: its copy of a
    /// connection closed in the first is read once and counted; within one input the same
    /// 4-tuple with a new SYN is a new connection.
    #[test]
    fn a_connection_captured_again_in_another_input_is_read_once() {
        let segs = closed_connection(10, 20);
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        feed_input(&mut r, &mut k, &segs, (C, S), 1_000_000, 0, 0);
        feed_input(&mut r, &mut k, &segs, (C, S), 1_000_000, 1, 2);
        assert_eq!(k.opened.len(), 1, "one connection");
        assert_eq!(r.cap_counts(1).captured_twice, 1);
        assert_eq!(r.cap_counts(0).captured_twice, 0);
        // Another connection on the same 4-tuple (another initial sequence number) in the
        // second input is its own.
        feed_input(
            &mut r,
            &mut k,
            &closed_connection(5_000, 20),
            (C, S),
            1_000_000,
            1,
            4,
        );
        assert_eq!(k.opened.len(), 2);
        // The same SYN again in the first input (no copy: one capture point) is a new one.
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        feed_input(&mut r, &mut k, &segs, (C, S), 1_000_000, 0, 0);
        feed_input(&mut r, &mut k, &segs, (C, S), 1_000_000, 0, 2);
        assert_eq!(k.opened.len(), 2);
        assert_eq!(r.cap_counts(0).captured_twice, 0);
    }

    #[test]
    fn reused_four_tuple_without_syn_is_a_new_connection_picked_up_mid_stream() {
        let mut segs = closed_connection(10, 20);
        // The next connection on the same ports; the capture missed its handshake.
        segs.push(Seg {
            ack: Some(9_000_001),
            ..data(true, 7_000_001, b"POST /mcp HTTP/1.1\r\n")
        });
        segs.push(Seg {
            ack: Some(7_000_021),
            ..data(false, 9_000_001, b"HTTP/1.1 200 OK\r\n")
        });
        let (r, k) = reassemble(Limits::default(), &segs);
        assert_eq!(k.opened.len(), 2);
        assert_eq!(
            k.stream(1, C2S),
            vec![Item::Bytes(b"POST /mcp HTTP/1.1\r\n".to_vec())]
        );
        assert_eq!(
            k.stream(1, S2C),
            vec![Item::Bytes(b"HTTP/1.1 200 OK\r\n".to_vec())]
        );
        assert!(!k.closed[1].handshake_seen);
        assert_eq!(k.closed[1].role_basis, RoleBasis::HttpRequestLine);
        assert_eq!(r.stats.reused_without_syn, 1);
        // Only the last ACK of the close was late.
        assert_eq!(r.stats.packets_after_close, 1);
    }

    #[test]
    fn reused_four_tuple_with_a_syn_or_only_its_syn_ack() {
        // With the SYN: a new connection, whatever its sequence numbers.
        let mut segs = closed_connection(10, 20);
        segs.extend(handshake(12, 30));
        let (r, k) = reassemble(Limits::default(), &segs);
        assert_eq!(k.opened.len(), 2);
        assert!(k.closed[1].handshake_seen);
        assert_eq!(r.stats.reused_without_syn, 0);
        // The SYN missed, its SYN-ACK captured: the SYN-ACK tells the roles of the new one.
        let mut segs = closed_connection(10, 20);
        segs.push(Seg {
            syn: true,
            ack: Some(5_000_001),
            ..data(false, 3_000_000, b"")
        });
        segs.push(data(true, 5_000_001, b"two"));
        let (_, k) = reassemble(Limits::default(), &segs);
        assert_eq!(k.opened.len(), 2);
        assert_eq!(k.closed[1].role_basis, RoleBasis::SynAck);
        assert_eq!(k.stream(1, C2S), vec![Item::Bytes(b"two".to_vec())]);
    }

    #[test]
    fn late_retransmissions_of_a_closed_connection_are_absorbed() {
        let mut segs = closed_connection(10, 20);
        // The client's FIN and its data again (their ACK was lost), and the server's FIN.
        segs.push(Seg {
            fin: true,
            ack: Some(21),
            ..data(true, 14, b"")
        });
        segs.push(Seg {
            ack: Some(21),
            ..data(true, 11, b"one")
        });
        segs.push(Seg {
            fin: true,
            ack: Some(15),
            ..data(false, 21, b"")
        });
        let (r, k) = reassemble(Limits::default(), &segs);
        assert_eq!(k.opened.len(), 1, "no connection made of late segments");
        // The last ACK of the close, then the three.
        assert_eq!(r.stats.packets_after_close, 4);
        assert_eq!(r.stats.reused_without_syn, 0);
    }

    #[test]
    fn port_reused_after_sequence_wraparound() {
        // The old connection's client sequence space crosses 2^32 ("one" ends 1 byte past it).
        let isn_c = u32::MAX - 3;
        let mut segs = closed_connection(isn_c, 20);
        // Late: its FIN (after the wrap) and its data (from before the wrap).
        segs.push(Seg {
            fin: true,
            ack: Some(21),
            ..data(true, after(isn_c, 4), b"")
        });
        segs.push(Seg {
            ack: Some(21),
            ..data(true, after(isn_c, 1), b"one")
        });
        // A new incarnation, its handshake missed: far from the old window on both sides.
        segs.push(Seg {
            ack: Some(0x9000_0000),
            ..data(true, 0x8000_0000, b"two")
        });
        let (r, k) = reassemble(Limits::default(), &segs);
        assert_eq!(k.opened.len(), 2);
        assert_eq!(
            k.stream(0, C2S),
            vec![Item::Bytes(b"one".to_vec()), Item::Fin]
        );
        assert_eq!(k.stream(1, C2S), vec![Item::Bytes(b"two".to_vec())]);
        // The last ACK of the close, the FIN and the data.
        assert_eq!(r.stats.packets_after_close, 3);
        assert_eq!(r.stats.reused_without_syn, 1);
    }

    #[test]
    fn the_final_window_is_the_advertised_one_scaled() {
        // A late retransmission from 100 KB before the end is in the window of a connection that
        // agreed on a scale (512 << 8 = 128 KiB), not of one that did not (64 KiB at most).
        for (wscale, absorbed) in [(Some(8), true), (None, false)] {
            let mut segs = handshake(0, 0);
            segs[0].wscale = wscale;
            segs[1].wscale = wscale;
            let body = vec![b'x'; 200_000];
            segs.push(Seg {
                window: 512,
                ..data(false, 1, &body)
            });
            segs.push(Seg {
                ack: Some(200_001),
                window: 512,
                ..data(true, 1, b"")
            });
            segs.push(Seg {
                rst: true,
                ..data(true, 1, b"")
            });
            segs.push(data(false, 100_001, b"late"));
            let (_, k) = reassemble(Limits::default(), &segs);
            assert_eq!(k.opened.len() == 1, absorbed, "wscale {wscale:?}");
        }
    }
}
