//! TCP reassembly: segments in capture order in, ordered byte streams out, with every loss made
//! explicit.
//!
//! Sans-IO: the reassembler, which [`CaptureStage`](crate::CaptureStage) drives, is fed decoded
//! segments with their capture time and frame and reports [`TcpEvent`]s to a sink. Sequence
//! numbers are turned into 64-bit stream offsets by unwrapping each 32-bit value to the one
//! nearest the next expected byte (RFC 9293 §3.4 modular arithmetic, in [`SeqNumber`]), so
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
//!
//! One concern per file: `seq` the sequence-number newtype, the one place that wraps; `assembly`
//! one direction's segments into its byte stream (buffering, overlaps, gaps); `recent` the
//! window of delivered bytes that retransmissions are compared with; `waiting` out-of-order bytes
//! within the limits; `table` the connection table, its tombstones and sweeps; `roles` who is
//! client and who server. This file holds what the reassembler reports, its limits and counters,
//! the state the others share (`Conn`, `Half`, `Reassembler`, whose methods each file adds to
//! by concern) and its entry points, `Reassembler::segment` and `Reassembler::finish`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;

use rustc_hash::FxHashMap as HashMap;

use super::decode::TcpSegment;
pub use mcpf_model::{ConnId, Direction};
use mcpf_model::{Mark, Note, NoteKind, Timestamp, WireMap};

mod assembly;
mod recent;
mod roles;
mod seq;
mod table;
#[cfg(test)]
mod trace;
mod waiting;

use assembly::Piece;
use recent::Recent;
pub use roles::{RoleBasis, ServerSpec};
use roles::{decide_by_user, decide_roles};
pub use seq::SeqNumber;
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
    /// Not the reassembler's: a stage between it and HTTP (the engine's early classification)
    /// found that the connection does not carry MCP, and passes none of its bytes on from here
    /// until a [`TcpEvent::Resumed`]. What is in progress ends here, not examined; the bytes
    /// crossed the wire and are in the capture (unlike a [`TcpEvent::Gap`]).
    SetAside {
        conn: ConnId,
        mark: Mark,
    },
    /// The bytes of a connection set aside are passed on again (it was found to be maybe MCP
    /// after all), the client's first: `skipped` bytes of each direction (the client's first)
    /// before the next ones were not kept. None skipped, the bytes simply come late; else
    /// parsing picks up as on a connection picked up mid-stream.
    Resumed {
        conn: ConnId,
        skipped: [u64; 2],
        mark: Mark,
    },
}

pub trait TcpSink {
    fn on_tcp(&mut self, event: TcpEvent<'_>);

    /// NSS key log lines an input carried (pcapng Decryption Secrets Blocks), before the
    /// packets they open: for a TLS stage downstream. Ignored by default.
    fn on_tls_secrets(&mut self, _key_log: &[u8]) {}

    /// Whether the stages behind read `conn`'s bytes. When they do not (the engine's early
    /// classification set it aside), the reassembler keeps none of them to compare
    /// retransmissions with: nothing would read what a comparison found.
    fn reads(&self, _conn: ConnId) -> bool {
        true
    }
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

/// One direction of a connection: where its byte stream stands, what waits for a hole, the
/// bytes it delivered last, and its counters.
#[derive(Debug, Default)]
struct Half {
    /// Sequence number of stream offset 0.
    base: Option<SeqNumber>,
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

/// One connection: its endpoints and roles, its two directions, and its place in the table.
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

/// The reassembler of every connection of a capture: the connection table and what it holds,
/// with the totals the limits bound.
pub(crate) struct Reassembler {
    pub(crate) limits: Limits,
    /// Seeded: the 4-tuples are the sender's to choose, and must not collide on purpose.
    table: WireMap<FlowKey, usize>,
    /// Boxed: a slot is 8 bytes whether or not a connection is in it.
    slots: Vec<Option<Box<Conn>>>,
    free: Vec<usize>,
    /// Connections closed in the last two minutes (`TOMBSTONE_NS`). A few bytes each, not a
    /// whole connection, because a busy capture closes thousands a minute. Keyed by a 64-bit hash
    /// of the 4-tuple, seeded as [`Self::table`] is: a collision (which no sender can aim for)
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
    /// Connections of this input that are a connection of another input captured again: the
    /// same 4-tuple and initial sequence numbers after that one closed (the same link captured
    /// at two points, or twice with another clock). Their packets were read once.
    pub captured_twice: u64,
}

/// What an input's report says of the caps its packets reached.
pub(crate) fn cap_notes(caps: &CapCounts, limits: &Limits) -> Vec<Note> {
    let mut out = Vec::new();
    if caps.table_evictions > 0 {
        let kind = NoteKind::ConnectionTableFull {
            max: limits.max_connections as u64,
            with_bytes: caps.table_evictions_with_payload,
        };
        out.push(Note::new(kind, caps.table_evictions));
    }
    if caps.buffer_limit_hits > 0 {
        let kind = NoteKind::OutOfOrderLimits;
        out.push(Note::new(kind, caps.buffer_limit_hits));
    }
    if caps.captured_twice > 0 {
        let kind = NoteKind::ConnectionsCapturedTwice;
        out.push(Note::new(kind, caps.captured_twice));
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

#[cfg(test)]
mod tests {
    use super::trace::*;
    use super::*;

    use Direction::ClientToServer as C2S;

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
    fn closed_tells_the_frames_and_bytes_that_carried_the_connection() {
        let mut segs = handshake(0, 0);
        segs.push(data(true, 1, b"hello"));
        segs.push(data(false, 1, b"hi"));
        let (_, k) = reassemble(Limits::default(), &segs);
        let s = &k.closed[0];
        assert_eq!(s.packets, 5);
        assert_eq!(s.frame_bytes, 5 * 54 + 5 + 2);
    }
}
