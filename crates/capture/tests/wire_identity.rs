//! Connection identity and retransmitted bytes through the whole capture stage: packets written
//! to a pcap with the project's writer (TCP options included), read back, decoded, reassembled.
//! What the reassembler decides from sequence numbers, windows and ACKs, seen from outside.

use std::io::Cursor;
use std::net::SocketAddr;

use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::reader::CaptureReader;
use mcpf_capture::tcp::{ConnSummary, Direction, SeqNumber, TcpEvent};
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_capture::{CaptureStage, Settings};
use mcpf_model::Timestamp;

const CLIENT: &str = "10.0.0.1:40000";
const SERVER: &str = "10.0.0.2:9123";

/// What the capture stage reported, with frame numbers.
#[derive(Debug, Default)]
struct Seen {
    /// (connection, handshake seen)
    opened: Vec<(u64, bool)>,
    /// (connection, direction, bytes, acked)
    data: Vec<(u64, Direction, Vec<u8>, Option<u64>)>,
    /// (connection, length, snap length)
    gaps: Vec<(u64, u64, bool)>,
    /// (connection, offset, length, first frame, second frame)
    inconsistent: Vec<(u64, u64, u64, u64, u64)>,
    closed: Vec<ConnSummary>,
    reused_without_syn: u64,
}

/// A segment between `CLIENT` and `SERVER`, ACK set.
fn seg(from_client: bool, seq: u32, ack: u32, payload: &[u8]) -> SegmentSpec<'_> {
    let (c, s): (SocketAddr, SocketAddr) = (CLIENT.parse().unwrap(), SERVER.parse().unwrap());
    let (src, dst) = if from_client { (c, s) } else { (s, c) };
    SegmentSpec::new(src, dst, seq, ack, payload)
}

fn flags(syn: bool, ack: bool, fin: bool, rst: bool) -> TcpFlags {
    TcpFlags { syn, ack, fin, rst }
}

/// Each packet (frame `i + 1`, `i` ms apart), cut to `keep` frame bytes when given.
fn capture(packets: &[(SegmentSpec<'_>, Option<usize>)]) -> Seen {
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, 65_535, false, false).unwrap();
    for (i, (spec, keep)) in packets.iter().enumerate() {
        let frame = link_frame(linktype::ETHERNET, &ip_packet(spec), &[]);
        let kept = &frame[..keep.unwrap_or(frame.len()).min(frame.len())];
        let time = Timestamp::from_secs_nanos(1_790_000_000, 0).add_nanos(i as i64 * 1_000_000);
        w.packet(time, kept, frame.len() as u32).unwrap();
    }
    let mut reader = CaptureReader::open(Box::new(Cursor::new(w.into_inner())), 0).unwrap();
    let mut stage = CaptureStage::new(Settings::default(), 1);
    let mut seen = Seen::default();
    let mut sink = |ev: TcpEvent<'_>| match ev {
        TcpEvent::Opened {
            conn,
            handshake_seen,
            ..
        } => seen.opened.push((conn.number(), handshake_seen)),
        TcpEvent::Data {
            conn,
            dir,
            data,
            acked,
            ..
        } => seen.data.push((conn.number(), dir, data.to_vec(), acked)),
        TcpEvent::Gap {
            conn, len, snaplen, ..
        } => seen.gaps.push((conn.number(), len, snaplen)),
        TcpEvent::Inconsistent {
            conn,
            offset,
            len,
            first,
            second,
            ..
        } => seen.inconsistent.push((
            conn.number(),
            offset,
            len,
            first.frame.frame,
            second.frame.frame,
        )),
        TcpEvent::Fin { .. } | TcpEvent::SetAside { .. } | TcpEvent::Resumed { .. } => {}
        TcpEvent::Closed { summary } => seen.closed.push(summary.clone()),
    };
    while let Some(frame) = reader.next_frame().unwrap() {
        stage.frame(&frame, &mut sink);
    }
    let stats = stage.finish(&mut sink);
    seen.reused_without_syn = stats.reused_without_syn;
    seen
}

fn whole(specs: Vec<SegmentSpec<'_>>) -> Vec<(SegmentSpec<'_>, Option<usize>)> {
    specs.into_iter().map(|s| (s, None)).collect()
}

/// A connection (client ISN 100, server ISN 500; both offering `wscale`, advertising `window`)
/// that sends `body` from the server and is then reset by the client.
fn reset_after(body: &[u8], wscale: Option<u8>, window: u16) -> Vec<SegmentSpec<'_>> {
    let mut syn = seg(true, 100, 0, b"").flags(flags(true, false, false, false));
    syn.wscale = wscale;
    let mut syn_ack = seg(false, 500, 101, b"").flags(flags(true, true, false, false));
    syn_ack.wscale = wscale;
    let mut data = seg(false, 501, 101, body);
    data.window = window;
    let mut ack = seg(true, 101, 501 + body.len() as u32, b"");
    ack.window = window;
    vec![
        syn,
        syn_ack,
        seg(true, 101, 501, b""),
        data,
        ack,
        seg(true, 101, 0, b"").flags(flags(false, false, false, true)),
    ]
}

#[test]
fn the_window_scale_offered_in_the_syns_widens_the_final_window() {
    // 70 KB before the end of the server's bytes, a late copy is inside a window of
    // 1024 << 7 = 128 KiB, but not inside the unscaled 1024, nor the 64 KiB floor.
    let body = vec![b'x'; 40_000];
    for (wscale, connections) in [(Some(7), 1), (None, 2)] {
        let mut specs = reset_after(&body, wscale, 1024);
        let late_seq = (SeqNumber(501) - 30_000).0;
        specs.push(seg(false, late_seq, 101, b"late"));
        let seen = capture(&whole(specs));
        assert_eq!(seen.opened.len(), connections, "wscale {wscale:?}");
        assert_eq!(seen.reused_without_syn, connections as u64 - 1);
    }
}

#[test]
fn a_reused_four_tuple_without_its_syn_is_a_new_connection() {
    let mut specs = reset_after(b"event: 1\n\n", None, 65_535);
    // The old connection's last data again, then the new one's first bytes, far away in
    // sequence space.
    specs.push(seg(false, 501, 101, b"event: 1\n\n"));
    specs.push(seg(
        true,
        3_000_000_000,
        4_000_000_000,
        b"GET /mcp HTTP/1.1\r\n\r\n",
    ));
    let seen = capture(&whole(specs));
    assert_eq!(seen.opened, [(0, true), (1, false)]);
    assert_eq!(seen.reused_without_syn, 1);
    let c2s: Vec<&[u8]> = seen
        .data
        .iter()
        .filter(|d| d.0 == 1)
        .map(|d| d.2.as_slice())
        .collect();
    assert_eq!(c2s, [b"GET /mcp HTTP/1.1\r\n\r\n".as_slice()]);
}

#[test]
fn a_retransmission_that_differs_is_reported_with_both_frames() {
    let body = b"data: {\"result\":\"ok\"}\n\n";
    let mut changed = body.to_vec();
    changed[17] = b'K';
    let mut specs = vec![
        seg(true, 100, 0, b"").flags(flags(true, false, false, false)),
        seg(false, 500, 101, b"").flags(flags(true, true, false, false)),
        seg(true, 101, 501, b""),
    ];
    specs.push(seg(false, 501, 101, body)); // 4
    specs.push(seg(false, 501, 101, &changed)); // 5
    let seen = capture(&whole(specs));
    assert_eq!(seen.inconsistent, [(0, 17, 1, 4, 5)]);
    let s2c: Vec<&[u8]> = seen.data.iter().map(|d| d.2.as_slice()).collect();
    assert_eq!(s2c, [body.as_slice()], "the first copy wins");
    let half = &seen.closed[0].s2c;
    assert_eq!(
        (half.compared, half.conflicts, half.conflict_bytes),
        (1, 1, 1)
    );
}

#[test]
fn gaps_say_whether_the_snap_length_cut_them() {
    let req = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    let mut packets = whole(vec![
        seg(true, 100, 0, b"").flags(flags(true, false, false, false)),
        seg(false, 500, 101, b"").flags(flags(true, true, false, false)),
        seg(true, 101, 501, b""),
    ]);
    // Cut to 20 bytes of payload (Ethernet, IPv4 and TCP headers are 54 bytes).
    packets.push((seg(true, 101, 501, req), Some(54 + 20)));
    // The server acknowledges 10 bytes the capture never saw after it.
    let next = 101 + req.len() as u32;
    packets.push((seg(true, next + 10, 501, b"{}"), None));
    packets.push((seg(false, 501, next + 12, b""), None));
    let seen = capture(&packets);
    assert_eq!(
        seen.gaps,
        [(0, req.len() as u64 - 20, true), (0, 10, false)],
        "{seen:?}"
    );
    assert_eq!(seen.closed[0].c2s.snaplen_bytes, req.len() as u64 - 20);
    // What each data event's segment acknowledged of the other direction.
    assert!(seen.data.iter().all(|d| d.3 == Some(0)), "{:?}", seen.data);
}
