//! TCP reassembly: segments in capture order in, ordered byte streams out, with every loss made
//! explicit.
//!
//! Sans-IO: the reassembler, which [`CaptureStage`](crate::CaptureStage) drives, is fed decoded
//! segments with their capture time and frame and reports [`TcpEvent`]s to a sink. Sequence
//! numbers are turned into 64-bit stream offsets by unwrapping each 32-bit value to the one
//! nearest the next expected byte (RFC 9293 §3.4 modular arithmetic, in `SeqNumber`), so
//! wraparound at 2^32 needs no special case.
//!
//! Overlap policy: the first copy of a byte wins. A later copy is compared with it, whether the
//! first copy is still buffered or was delivered already (the last bytes of each direction are
//! kept for that, within [`Limits`]); a copy that disagrees is never spliced in, and is reported
//! as [`TcpEvent::Inconsistent`] with both frames (Zeek's `rexmit_inconsistency`). Missing bytes
//! become a [`TcpEvent::Gap`] of their exact size once the loss is certain: the receiver
//! acknowledged past the hole, the buffer limit was reached, or the connection ended.
//!
//! Identity: a connection is its 4-tuple for as long as it lives. A closed one leaves a small
//! tombstone that absorbs its late segments (last ACKs, retransmitted FINs) for two minutes, but
//! only those whose sequence and acknowledgement numbers fall inside the window it ended with; a
//! segment outside it starts a new connection on the reused 4-tuple, picked up mid-stream when its
//! SYN was not captured (RFC 9293 §3.4.1 and §3.10.7.4: a new incarnation starts from a sequence
//! number unrelated to the old one).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use rustc_hash::FxHashMap as HashMap;
use std::net::SocketAddr;

use super::decode::TcpSegment;
pub use mcpf_model::{ConnId, Direction};
use mcpf_model::{Mark, Timestamp, WireMap};

mod recent;
mod roles;
mod seq;
mod table;
#[cfg(test)]
mod trace;
mod waiting;

use recent::{Difference, Recent};
pub use roles::{RoleBasis, ServerSpec};
use roles::{decide_by_port, decide_by_user, decide_roles};
use seq::SeqNumber;
use table::{FlowKey, Link, Order, Tombstone, flow_key};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Both sides sent FIN and every byte before it was accounted for.
    Fin,
    Reset {
        by: Direction,
    },
    /// Still open when the capture ended.
    CaptureEnd,
    /// Evicted after the configured idle time.
    Idle,
    /// A new SYN reused the 4-tuple.
    Superseded,
    /// The connection table was full ([`Limits::max_connections`]): the least recently active
    /// connection made room for a new one, half-open ones (nothing but a handshake) first. What
    /// it had open is cut, as at the end of the capture.
    Evicted,
}

impl CloseReason {
    pub fn name(self) -> &'static str {
        match self {
            CloseReason::Fin => "fin",
            CloseReason::Reset {
                by: Direction::ClientToServer,
            } => "reset by client",
            CloseReason::Reset {
                by: Direction::ServerToClient,
            } => "reset by server",
            CloseReason::CaptureEnd => "open at capture end",
            CloseReason::Idle => "idle, evicted",
            CloseReason::Superseded => "superseded by a new SYN",
            CloseReason::Evicted => "evicted, connection table full",
        }
    }
}

/// Reassembly health of one direction of a connection.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HalfStats {
    pub segments: u64,
    /// Payload bytes delivered (each byte once).
    pub bytes: u64,
    pub gaps: u64,
    pub gap_bytes: u64,
    /// Of `gap_bytes`, the bytes cut from captured frames by the snap length (the segment was
    /// seen; its tail was not kept), as opposed to segments the capture never saw.
    pub snaplen_bytes: u64,
    pub retransmissions: u64,
    pub out_of_order: u64,
    /// Retransmitted segments whose bytes were compared with the first copy (still buffered, or
    /// delivered and still in the window of recent bytes).
    pub compared: u64,
    /// Of those, segments whose bytes disagreed with the first copy (which was kept): each one
    /// reported as a [`TcpEvent::Inconsistent`].
    pub conflicts: u64,
    /// Bytes that differed from the first copy.
    pub conflict_bytes: u64,
    /// Retransmitted bytes overlapping bytes delivered too long ago to be still held (or never
    /// captured): not compared.
    pub uncompared_bytes: u64,
    pub keepalives: u64,
    pub fin: bool,
}

/// Everything known about a connection when it ends.
#[derive(Clone, Debug)]
pub struct ConnSummary {
    pub conn: ConnId,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub role_basis: RoleBasis,
    pub handshake_seen: bool,
    pub start: Mark,
    pub end: Mark,
    /// Frames of this connection (both directions, from its first to its last), with
    /// [`Self::frame_bytes`] their captured bytes: what a later stage moves to a skipped bucket
    /// of the input's accounting when the connection turns out not to carry its protocol. A
    /// connection of several merged inputs counts them all here.
    pub packets: u64,
    pub frame_bytes: u64,
    pub c2s: HalfStats,
    pub s2c: HalfStats,
    pub close: CloseReason,
}

/// What the reassembler reports to the next layer.
#[derive(Debug)]
pub enum TcpEvent<'a> {
    Opened {
        conn: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        mark: Mark,
        /// The connection's SYN or SYN-ACK was captured; when not, it was picked up mid-stream
        /// and its first bytes may be in the middle of a message.
        handshake_seen: bool,
    },
    Data {
        conn: ConnId,
        dir: Direction,
        data: &'a [u8],
        mark: Mark,
        /// The stream offset of the *other* direction that the ACK field of the segment carrying
        /// these bytes acknowledges: its sender had received every byte of the other direction
        /// before it (RFC 9293 §3.4). `None` when the ACK flag was not set or the other
        /// direction's first sequence number is not known. Capture order can lie (`-i any`,
        /// merged interfaces); this does not: a response acknowledges the request it answers.
        acked: Option<u64>,
    },
    /// `len` bytes of this direction crossed the wire but are not in the capture.
    Gap {
        conn: ConnId,
        dir: Direction,
        len: u64,
        mark: Mark,
        /// The bytes were cut from a captured frame by the capture's snap length (`tcpdump -s`):
        /// the segment was seen, its tail not kept. Otherwise the segment itself is missing.
        snaplen: bool,
    },
    /// A retransmission disagreed with the first copy of the same bytes (Zeek's
    /// `rexmit_inconsistency`): `len` bytes from stream `offset` on (from the first differing
    /// byte to the last) differ. The first copy, carried by `first`, is the one delivered; the
    /// copy in `second` was dropped. Two stacks never send different bytes for one sequence
    /// number, so this is evidence of tampering, a middlebox rewriting, or a capture artefact.
    Inconsistent {
        conn: ConnId,
        dir: Direction,
        offset: u64,
        len: u64,
        first: Mark,
        second: Mark,
    },
    /// This direction ended with a FIN, after all its bytes (or gaps).
    Fin {
        conn: ConnId,
        dir: Direction,
        mark: Mark,
    },
    Closed {
        summary: &'a ConnSummary,
    },
}

pub trait TcpSink {
    fn on_tcp(&mut self, event: TcpEvent<'_>);

    /// NSS key log lines an input carried (pcapng Decryption Secrets Blocks), before the
    /// packets they open: for a TLS stage downstream. Ignored by default.
    fn on_tls_secrets(&mut self, _key_log: &[u8]) {}
}

impl<F: FnMut(TcpEvent<'_>)> TcpSink for F {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        self(event)
    }
}

/// Bounds that keep memory flat whatever the capture holds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Out-of-order bytes buffered for one direction before the hole is declared lost.
    pub max_buffered_per_direction: usize,
    /// Out-of-order bytes buffered over all connections.
    pub max_buffered_total: usize,
    /// Out-of-order pieces (segments, or the part of one no other copy covers) buffered for one
    /// direction: what bounds the bookkeeping of tiny segments, which the byte limits do not
    /// (each piece costs about 100 bytes whatever its length, a cut frame's piece holds none).
    /// 65,536 is 4 MiB of 64-byte segments, more than a window of a real sender holds.
    pub max_pieces_per_direction: usize,
    /// Out-of-order pieces buffered over all connections: 1M pieces is about 100 MiB.
    pub max_pieces_total: usize,
    /// Connections tracked at once. Past it, the least recently active one is evicted
    /// ([`CloseReason::Evicted`]), half-open ones first. 100,000 open at once (not in total:
    /// connections that end with FIN or RST, or stay silent for the idle timeout, leave the
    /// table) is more than a busy proxy holds; each costs about 3.5 KiB through the whole
    /// analysis (1 KiB of it here, the rest HTTP and MCP state; measured on a SYN flood), so a
    /// full table is about 350 MiB.
    pub max_connections: usize,
    /// A connection silent for this long (capture time) is closed and forgotten.
    pub idle_timeout_secs: u64,
    /// A hole older than this (capture time) is declared lost even without an ACK past it.
    pub hole_timeout_secs: u64,
    /// Delivered bytes kept per direction to compare retransmissions with (rounded down to a
    /// power of two; 0 turns the comparison of delivered bytes off).
    pub recent_per_direction: usize,
    /// Memory for delivered bytes kept over all connections (with the marks of the packets that
    /// carried them): past it, a direction's window stops growing (small, or none) and the
    /// refusal is counted. 2 MiB is 128 full windows (or 1,000 small ones): a retransmission
    /// overlaps the last bytes sent, and on the benchmark capture (2,500 connections at once),
    /// where the budget is reached, each MiB of it costs 1.5 MB of peak memory.
    pub recent_total: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_buffered_per_direction: 4 << 20,
            max_buffered_total: 256 << 20,
            max_pieces_per_direction: 1 << 16,
            max_pieces_total: 1 << 20,
            max_connections: 100_000,
            idle_timeout_secs: 900,
            hole_timeout_secs: 30,
            recent_per_direction: 16 << 10,
            recent_total: 2 << 20,
        }
    }
}

/// Counters for the whole reassembler, reported with the input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    pub connections: u64,
    pub direction_limit_hits: u64,
    pub total_limit_hits: u64,
    pub idle_evictions: u64,
    /// Connections evicted because the table was full ([`Limits::max_connections`]), and of
    /// those, how many had carried bytes (the others were half-open or empty).
    pub table_evictions: u64,
    pub table_evictions_with_payload: u64,
    /// Times a direction reached [`Limits::max_pieces_per_direction`], and times all
    /// connections together reached [`Limits::max_pieces_total`]: each time the oldest holes
    /// were declared lost and the pieces after them delivered.
    pub direction_piece_limit_hits: u64,
    pub total_piece_limit_hits: u64,
    pub(crate) packets_after_close: u64,
    /// The most out-of-order bytes and pieces held at once, over all connections (once the
    /// limits were enforced: at most the limits).
    pub peak_buffered: usize,
    pub peak_pieces: usize,
    /// Segments on the 4-tuple of a closed connection that fell outside its final sequence
    /// window, and so started a new connection although no SYN was captured.
    pub reused_without_syn: u64,
    /// Retransmitted segments compared byte for byte with the first copy (over all
    /// connections; [`HalfStats::compared`] per direction).
    pub rexmit_compared: u64,
    /// Of those, segments that disagreed ([`TcpEvent::Inconsistent`]).
    pub rexmit_inconsistent: u64,
    pub rexmit_differing_bytes: u64,
    /// Retransmitted bytes overlapping delivered bytes that had already left the window of
    /// recent bytes (evicted by its size or by [`Limits::recent_total`]): not compared.
    pub rexmit_evicted_bytes: u64,
    /// Directions whose window of recent bytes could not grow to
    /// [`Limits::recent_per_direction`] because [`Limits::recent_total`] was reached.
    pub recent_window_refusals: u64,
    /// Most memory held in windows of recent bytes at once (their bytes and marks).
    pub peak_recent: usize,
}

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
struct Piece {
    chunk: Chunk,
    mark: Mark,
    /// What the segment that carried it acknowledged of the other direction.
    acked: Option<u64>,
}

#[derive(Debug, Default)]
struct Half {
    /// Sequence number of stream offset 0.
    base: Option<u32>,
    /// Offset of the next byte to deliver.
    next: u64,
    pending: BTreeMap<u64, Piece>,
    pending_bytes: usize,
    fin_at: Option<u64>,
    /// The packet that carried the FIN.
    fin_mark: Option<Mark>,
    /// The last packet that carried data for this direction.
    last_mark: Option<Mark>,
    /// Highest offset the peer acknowledged.
    acked: Option<u64>,
    /// The connection's packet count and the time when the peer first acknowledged past the
    /// current hole.
    hole_acked_at: Option<(u64, Timestamp)>,
    /// Mark of the last delivered piece: marks never go backwards within a direction.
    delivered_mark: Option<Mark>,
    /// The largest receive window the sender of this direction advertised (scaled when the
    /// handshake agreed on a scale): how far the peer's segments may run ahead of its ACKs.
    max_window: u32,
    recent: Recent,
    /// While pieces wait: when the hole before them last made progress, and `next` then. The
    /// reassembler keeps the same time in its set of waiting directions, so that stale holes are
    /// found without looking at the others.
    waiting: Option<(Timestamp, u64)>,
    stats: HalfStats,
}

impl Half {
    /// Unwraps a sequence number to the stream offset nearest the next expected byte. Negative
    /// when it lies before the first byte we know of.
    fn offset(&self, seq: u32) -> i64 {
        let base = SeqNumber(self.base.unwrap_or(seq));
        let next = base.add(self.next as u32);
        self.next as i64 + SeqNumber(seq).since(next)
    }

    /// The stream offset an ACK of this direction's bytes stands for, when it can be told.
    fn acked_offset(&self, ack: u32) -> Option<u64> {
        self.base?;
        u64::try_from(self.offset(ack)).ok()
    }
}

#[derive(Debug)]
struct Conn {
    id: ConnId,
    /// Endpoint that sent the first packet we saw; `halves[0]` carries its bytes.
    a: SocketAddr,
    b: SocketAddr,
    /// `Some(true)` when `a` is the client.
    a_is_client: Option<bool>,
    role_basis: RoleBasis,
    halves: [Half; 2],
    handshake_seen: bool,
    start: Mark,
    last: Mark,
    packets: u64,
    frame_bytes: u64,
    /// A segment carried bytes (or bytes the capture cut) in either direction: the connection is
    /// no longer half-open, and is evicted after those that are.
    carried: bool,
    /// Its place in the reassembler's order of last activity.
    link: Link,
    closed: bool,
    syn_seen: [bool; 2],
    /// The window scale each side's SYN offered (RFC 7323 §2.2).
    wscale: [Option<u8>; 2],
}

impl Conn {
    /// The sender's part of a segment: its SYN, its bytes (or the bytes the capture cut) and its
    /// FIN.
    #[inline]
    fn sent(&mut self, side: usize, seg: &TcpSegment<'_>, mark: Mark, sink: &mut impl TcpSink) {
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
            data_seq = seg.seq.wrapping_add(1);
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
    fn acked(&mut self, side: usize, ack: u32, now: Timestamp, sink: &mut impl TcpSink) {
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

    fn pending_bytes(&self) -> usize {
        self.halves[0].pending_bytes + self.halves[1].pending_bytes
    }

    fn pending_pieces(&self) -> usize {
        self.halves[0].pending.len() + self.halves[1].pending.len()
    }

    /// Client and server, once the roles are decided.
    fn endpoints(&self) -> (SocketAddr, SocketAddr) {
        if self.a_is_client == Some(true) {
            (self.a, self.b)
        } else {
            (self.b, self.a)
        }
    }

    /// Tells the sink the connection exists, once its roles are decided.
    fn report_opened(&self, sink: &mut impl TcpSink) {
        let (client, server) = self.endpoints();
        sink.on_tcp(TcpEvent::Opened {
            conn: self.id,
            client,
            server,
            mark: self.start,
            handshake_seen: self.handshake_seen,
        });
    }

    fn dir_of(&self, side: usize) -> Direction {
        let from_client = (side == 0) == self.a_is_client.unwrap_or(true);
        if from_client {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        }
    }

    fn summary(&self, close: CloseReason) -> ConnSummary {
        let a_client = self.a_is_client.unwrap_or(true);
        let (client, server) = if a_client {
            (self.a, self.b)
        } else {
            (self.b, self.a)
        };
        let (c, s) = if a_client { (0, 1) } else { (1, 0) };
        ConnSummary {
            conn: self.id,
            client,
            server,
            role_basis: self.role_basis,
            handshake_seen: self.handshake_seen,
            start: self.start,
            end: self.last,
            packets: self.packets,
            frame_bytes: self.frame_bytes,
            c2s: self.halves[c].stats.clone(),
            s2c: self.halves[s].stats.clone(),
            close,
        }
    }
}

pub(crate) struct Reassembler {
    pub(crate) limits: Limits,
    /// Seeded: the 4-tuples are the sender's to choose, and must not collide on purpose.
    table: WireMap<FlowKey, usize>,
    /// Boxed: a slot is 8 bytes whether or not a connection is in it.
    slots: Vec<Option<Box<Conn>>>,
    free: Vec<usize>,
    /// Connections closed in the last [`TOMBSTONE_NS`]. A few bytes each, not a whole
    /// connection, because a busy capture closes thousands a minute. Keyed by a 64-bit hash of
    /// the 4-tuple, seeded as [`Self::table`] is: a collision (which no sender can aim for)
    /// would only make one stray packet be judged against another connection's window.
    tombstones: HashMap<u64, Tombstone>,
    /// Tombstones in the order they were made (or last absorbed a packet), so that expiring
    /// them looks at the expired ones only.
    tombstone_order: VecDeque<(Timestamp, u64)>,
    /// Connections by last activity, oldest first: `order[0]` the half-open ones (nothing but a
    /// handshake yet), `order[1]` those that carried bytes.
    order: [Order; 2],
    /// Directions with pieces waiting for a hole, by when the hole last made progress: the
    /// stale ones are the first, and so is the victim when a total limit is reached.
    waiting: BTreeSet<(Timestamp, usize, usize)>,
    next_id: u64,
    total_pending: usize,
    /// Pieces buffered over all connections.
    total_pieces: usize,
    /// Bytes held in the windows of recent bytes of all connections.
    total_recent: usize,
    next_sweep: Option<Timestamp>,
    servers: Vec<ServerSpec>,
    pub(crate) stats: ReassemblyStats,
    /// The caps each input's packets reached, by input.
    per_input: Vec<CapCounts>,
}

/// The caps one input's packets reached: what [`crate::CaptureStage::report`] warns about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CapCounts {
    /// Connections evicted from the full table to make room for one this input's packet opened,
    /// and of those, how many had carried bytes.
    pub table_evictions: u64,
    pub table_evictions_with_payload: u64,
    /// Times one of this input's packets took a direction, or all connections, over an
    /// out-of-order limit (pieces or bytes): holes were declared lost early.
    pub buffer_limit_hits: u64,
}

/// What an input's report says of the caps its packets reached.
pub(crate) fn cap_warnings(caps: &CapCounts, limits: &Limits) -> Vec<String> {
    let mut out = Vec::new();
    if caps.table_evictions > 0 {
        out.push(format!(
            "the connection table was full ({} connections): {} connections were evicted ({} of them had carried bytes, whose open messages are cut)",
            limits.max_connections, caps.table_evictions, caps.table_evictions_with_payload
        ));
    }
    if caps.buffer_limit_hits > 0 {
        out.push(format!(
            "the out-of-order limits (pieces or bytes) were reached {} times: holes were declared lost early and reported as gaps",
            caps.buffer_limit_hits
        ));
    }
    out
}

impl Reassembler {
    pub(crate) fn new(limits: Limits) -> Self {
        Reassembler {
            limits,
            table: WireMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            tombstones: HashMap::default(),
            tombstone_order: VecDeque::new(),
            order: [Order::default(); 2],
            waiting: BTreeSet::new(),
            next_id: 0,
            total_pending: 0,
            total_pieces: 0,
            total_recent: 0,
            next_sweep: None,
            servers: Vec::new(),
            stats: ReassemblyStats::default(),
            per_input: Vec::new(),
        }
    }

    /// The caps the packets of input `input` reached so far.
    pub(crate) fn cap_counts(&self, input: mcpf_model::InputId) -> CapCounts {
        self.per_input
            .get(input as usize)
            .copied()
            .unwrap_or_default()
    }

    fn caps_of(&mut self, mark: Mark) -> &mut CapCounts {
        let i = mark.frame.input as usize;
        if self.per_input.len() <= i {
            self.per_input.resize(i + 1, CapCounts::default());
        }
        &mut self.per_input[i]
    }

    /// Endpoints to treat as servers whatever the packets suggest.
    pub(crate) fn with_servers(mut self, servers: Vec<ServerSpec>) -> Self {
        self.servers = servers;
        self
    }

    /// Feeds one segment in capture order.
    pub(crate) fn segment(&mut self, seg: &TcpSegment<'_>, mark: Mark, sink: &mut impl TcpSink) {
        self.maybe_sweep(mark, sink);
        let key = flow_key(seg.src, seg.dst);
        let Some(idx) = self.slot_for(key, seg, mark, sink) else {
            return;
        };
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        conn.packets += 1;
        conn.frame_bytes += u64::from(seg.frame_len);
        conn.last = mark;
        conn.carried |= !seg.payload.is_empty() || seg.missing > 0;
        self.touch(idx);
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        if conn.closed {
            self.stats.packets_after_close += 1;
            return;
        }
        let side = if seg.src == conn.a { 0 } else { 1 };
        if conn.a_is_client.is_none() && !self.servers.is_empty() {
            decide_by_user(conn, &self.servers, seg.flags.syn, sink);
        }
        decide_roles(conn, side, seg, sink);

        if !seg.payload.is_empty() {
            self.grow_recent(idx, side, seg.payload.len());
        }
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        let (bytes, pieces) = (conn.pending_bytes(), conn.pending_pieces());
        conn.sent(side, seg, mark, sink);
        // The ACK tells what the peer received: holes it acknowledged are lost from the capture.
        if seg.flags.ack {
            conn.acked(1 - side, seg.ack, mark.time, sink);
        }
        self.total_pending = (self.total_pending + conn.pending_bytes()).saturating_sub(bytes);
        self.total_pieces = (self.total_pieces + conn.pending_pieces()).saturating_sub(pieces);
        if conn.halves.iter().any(Half::waits) {
            self.sync_waiting(idx, 0, mark.time);
            self.sync_waiting(idx, 1, mark.time);
        }
        self.enforce_limits(idx, side, mark, sink);
        self.close_if_ended(idx, side, seg.flags.rst, sink);
    }

    /// A reset ends the connection at once; so does the second FIN once every byte before it
    /// is accounted for.
    #[inline]
    fn close_if_ended(&mut self, idx: usize, side: usize, rst: bool, sink: &mut impl TcpSink) {
        let Some(conn) = self.slots[idx].as_mut() else {
            return;
        };
        if rst {
            let by = conn.dir_of(side);
            self.retire(idx, Some(CloseReason::Reset { by }), sink);
            return;
        }
        if conn.halves.iter().all(|h| h.stats.fin) {
            self.retire(idx, Some(CloseReason::Fin), sink);
        }
    }

    /// Ends the capture: every connection still open is flushed and reported, in the order the
    /// connections started.
    pub(crate) fn finish(&mut self, sink: &mut impl TcpSink) {
        let mut open: Vec<(ConnId, usize)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().filter(|c| !c.closed).map(|c| (c.id, i)))
            .collect();
        open.sort_unstable();
        for (_, idx) in open {
            self.retire(idx, Some(CloseReason::CaptureEnd), sink);
        }
        self.table.clear();
        self.slots.clear();
        self.free.clear();
        self.tombstones.clear();
        self.tombstone_order.clear();
        self.order = [Order::default(); 2];
        self.waiting.clear();
        self.total_pending = 0;
        self.total_pieces = 0;
        self.total_recent = 0;
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
    half.recent.record(half.next, data, mark);
    sink.on_tcp(TcpEvent::Data {
        conn,
        dir,
        data,
        mark,
        acked,
    });
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
                half.recent.record(half.next, &b[skip..], piece.mark);
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
fn declare_gap(half: &mut Half, conn: ConnId, dir: Direction, sink: &mut impl TcpSink) {
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
fn flush_all(half: &mut Half, conn: ConnId, dir: Direction, sink: &mut impl TcpSink) {
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
    use super::trace::*;
    use super::*;
    use proptest::prelude::*;

    use Direction::{ClientToServer as C2S, ServerToClient as S2C};

    #[test]
    fn delivers_in_order_bytes_and_fin_close() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        let mut segs = handshake(100, 5000);
        segs.push(data(true, 101, b"GET / HTTP/1.1\r\n\r\n"));
        segs.push(data(false, 5001, b"HTTP/1.1 200 OK\r\n\r\n"));
        segs.push(Seg {
            fin: true,
            ..data(true, 119, b"")
        });
        segs.push(Seg {
            fin: true,
            ..data(false, 5020, b"")
        });
        feed(&mut r, &mut k, &segs);
        assert_eq!(k.opened.len(), 1);
        assert_eq!(k.opened[0].1, C.parse().unwrap());
        assert_eq!(
            k.stream(0, C2S),
            vec![Item::Bytes(b"GET / HTTP/1.1\r\n\r\n".to_vec()), Item::Fin]
        );
        assert_eq!(k.closed.len(), 1);
        assert_eq!(k.closed[0].close, CloseReason::Fin);
        assert!(k.closed[0].handshake_seen);
    }

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
        segs.push(data(true, isn.wrapping_add(1), b"abc"));
        segs.push(data(true, isn.wrapping_add(7), b"ghi")); // after the wrap, out of order
        segs.push(data(true, isn.wrapping_add(4), b"def")); // crosses 2^32
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
    fn closed_tells_the_frames_and_bytes_that_carried_the_connection() {
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, b"hello"));
        segs.push(data(false, 1, b"hi"));
        let (_, k) = reassemble(Limits::default(), &segs);
        let s = &k.closed[0];
        assert_eq!(s.packets, 5);
        assert_eq!(s.frame_bytes, 5 * 54 + 5 + 2);
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
            segs.push(data(true, isn.wrapping_add(1).wrapping_add(*off), bytes));
        }
        segs.push(Seg {
            fin: true,
            ..data(true, isn.wrapping_add(1).wrapping_add(total as u32), b"")
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
