//! The test harness of the reassembler: segments written like packet traces (a few lines each,
//! sequence numbers as on the wire), fed through a [`Reassembler`] with one millisecond between
//! frames, and a sink that collects what it reports per connection and direction. The tests of
//! each concern (assembly, the table, roles, limits) use it, next to the code they test.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use mcpf_model::{FrameRef, Mark, Timestamp};

use super::{
    CloseReason, ConnId, ConnSummary, Direction, Limits, Reassembler, SeqNumber, TcpEvent, TcpSink,
};
use crate::decode::{TcpFlags, TcpSegment};

pub(super) const C: &str = "10.0.0.1:40000";
pub(super) const S: &str = "10.0.0.2:8080";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Item {
    Bytes(Vec<u8>),
    Gap(u64),
    Fin,
}

#[derive(Default)]
pub(super) struct Collector {
    pub(super) opened: Vec<(ConnId, SocketAddr, SocketAddr)>,
    pub(super) streams: BTreeMap<(ConnId, Direction), Vec<Item>>,
    pub(super) closed: Vec<ConnSummary>,
    /// Connection number, direction, frame of each data event.
    pub(super) frames: Vec<(u64, Direction, u64)>,
    /// Connection number, direction, offset, length, first and second frame.
    pub(super) inconsistent: Vec<(u64, Direction, u64, u64, u64, u64)>,
    /// Whether each gap came from the snap length, in order.
    pub(super) snaplen: Vec<bool>,
    /// What each data event's segment acknowledged of the other direction.
    pub(super) acks: Vec<(Direction, Option<u64>)>,
}

impl TcpSink for Collector {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        match event {
            TcpEvent::Opened {
                conn,
                client,
                server,
                ..
            } => self.opened.push((conn, client, server)),
            TcpEvent::Data {
                conn,
                dir,
                data,
                mark,
                acked,
            } => {
                assert!(self.opened.iter().any(|o| o.0 == conn), "data before open");
                self.acks.push((dir, acked));
                self.frames.push((conn.number(), dir, mark.frame.frame));
                let items = self.streams.entry((conn, dir)).or_default();
                match items.last_mut() {
                    Some(Item::Bytes(b)) => b.extend_from_slice(data),
                    _ => items.push(Item::Bytes(data.to_vec())),
                }
            }
            TcpEvent::Gap {
                conn,
                dir,
                len,
                snaplen,
                ..
            } => {
                self.snaplen.push(snaplen);
                self.streams
                    .entry((conn, dir))
                    .or_default()
                    .push(Item::Gap(len))
            }
            TcpEvent::Fin { conn, dir, .. } => {
                self.streams.entry((conn, dir)).or_default().push(Item::Fin)
            }
            TcpEvent::Inconsistent {
                conn,
                dir,
                offset,
                len,
                first,
                second,
            } => self.inconsistent.push((
                conn.number(),
                dir,
                offset,
                len,
                first.frame.frame,
                second.frame.frame,
            )),
            TcpEvent::Closed { summary } => self.closed.push(summary.clone()),
            TcpEvent::SetAside { .. } | TcpEvent::Resumed { .. } => {
                unreachable!("the reassembler never sets a connection aside")
            }
        }
    }
}

impl Collector {
    /// The items of the `n`-th connection (from 0) in direction `dir`.
    pub(super) fn stream(&self, n: u64, dir: Direction) -> Vec<Item> {
        self.streams
            .get(&(ConnId::tcp(n), dir))
            .cloned()
            .unwrap_or_default()
    }
}

pub(super) struct Seg {
    pub(super) from_client: bool,
    pub(super) seq: u32,
    pub(super) ack: Option<u32>,
    pub(super) syn: bool,
    pub(super) fin: bool,
    pub(super) rst: bool,
    pub(super) payload: Vec<u8>,
    pub(super) missing: u32,
    pub(super) window: u16,
    pub(super) wscale: Option<u8>,
}

pub(super) fn data(from_client: bool, seq: u32, payload: &[u8]) -> Seg {
    Seg {
        from_client,
        seq,
        ack: None,
        syn: false,
        fin: false,
        rst: false,
        payload: payload.to_vec(),
        missing: 0,
        window: 65_535,
        wscale: None,
    }
}

/// The segments through a new reassembler, to the end of the capture.
pub(super) fn reassemble(limits: Limits, segs: &[Seg]) -> (Reassembler, Collector) {
    let mut r = Reassembler::new(limits);
    let mut k = Collector::default();
    feed(&mut r, &mut k, segs);
    r.finish(&mut k);
    (r, k)
}

pub(super) fn feed(r: &mut Reassembler, sink: &mut Collector, segs: &[Seg]) {
    feed_with(r, sink, segs, C, S)
}

pub(super) fn feed_with(r: &mut Reassembler, sink: &mut Collector, segs: &[Seg], c: &str, s: &str) {
    feed_timed(r, sink, segs, c, s, 1_000_000)
}

pub(super) fn feed_timed(
    r: &mut Reassembler,
    sink: &mut Collector,
    segs: &[Seg],
    c: &str,
    s: &str,
    step_ns: i64,
) {
    feed_input(r, sink, segs, (c, s), step_ns, 0, 0)
}

/// [`feed_timed`] as input `input` reads them, from `start_s` seconds on.
pub(super) fn feed_input(
    r: &mut Reassembler,
    sink: &mut Collector,
    segs: &[Seg],
    (c, s): (&str, &str),
    step_ns: i64,
    input: u32,
    start_s: i64,
) {
    let (c, s): (SocketAddr, SocketAddr) = (c.parse().unwrap(), s.parse().unwrap());
    for (i, seg) in segs.iter().enumerate() {
        let (src, dst) = if seg.from_client { (c, s) } else { (s, c) };
        let ts = TcpSegment {
            src,
            dst,
            seq: SeqNumber(seg.seq),
            ack: SeqNumber(seg.ack.unwrap_or(0)),
            flags: TcpFlags {
                syn: seg.syn,
                ack: seg.ack.is_some(),
                fin: seg.fin,
                rst: seg.rst,
            },
            window: seg.window,
            wscale: seg.wscale,
            payload: &seg.payload,
            missing: seg.missing,
            frame_len: 54 + seg.payload.len() as u32,
        };
        let mark = Mark {
            time: Timestamp::from_secs_nanos(1000 + start_s, 0).add_nanos(step_ns * i as i64),
            frame: FrameRef::new(input, i as u64 + 1),
        };
        r.segment(&ts, mark, sink);
    }
}

/// The sequence number `n` after `seq`, wrapping as [`SeqNumber`] does.
pub(super) fn after(seq: u32, n: u32) -> u32 {
    (SeqNumber(seq) + n).0
}

pub(super) fn handshake(isn_c: u32, isn_s: u32) -> Vec<Seg> {
    vec![
        Seg {
            syn: true,
            ..data(true, isn_c, b"")
        },
        Seg {
            syn: true,
            ack: Some(after(isn_c, 1)),
            ..data(false, isn_s, b"")
        },
        Seg {
            ack: Some(after(isn_s, 1)),
            ..data(true, after(isn_c, 1), b"")
        },
    ]
}

pub(super) fn syn(seq: u32) -> Seg {
    Seg {
        syn: true,
        ..data(true, seq, b"")
    }
}

pub(super) fn client(n: u32) -> String {
    format!(
        "10.0.{}.{}:{}",
        n >> 16,
        (n >> 8) & 0xff,
        20_000 + (n & 0xff)
    )
}

/// The connections closed as `reason`, by number, in the order they were closed.
pub(super) fn closed_as(k: &Collector, reason: CloseReason) -> Vec<u64> {
    k.closed
        .iter()
        .filter(|s| s.close == reason)
        .map(|s| s.conn.number())
        .collect()
}
