//! Capture files of every supported shape, built byte by byte with the project's writer, read
//! back through the capture stage: file formats, link types, damage.

use std::io::{Cursor, Write};
use std::net::SocketAddr;

use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::reader::{CaptureReader, ReadError};
use mcpf_capture::tcp::{Direction, TcpEvent};
use mcpf_capture::writer::{PcapNgWriter, PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_capture::{CaptureInput, CaptureStage, Settings, capture_from_bytes, run};
use mcpf_model::{CorruptUnit, InputReport, Note, NoteKind, Timestamp};

/// Whether the report warns of `kind`.
fn warns(report: &InputReport, kind: impl Fn(&NoteKind) -> bool) -> bool {
    report.warnings.iter().any(|w| kind(&w.kind))
}

/// The warnings of corrupt stretches of `unit`, as (byte offset, length).
fn corrupt_stretches(report: &InputReport, unit: CorruptUnit) -> Vec<(Option<u64>, u64)> {
    report
        .warnings
        .iter()
        .filter(|w| w.kind == NoteKind::CorruptStretch { unit })
        .map(|w: &Note| (w.at, w.count))
        .collect()
}

const REQUEST: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
const RESPONSE: &[u8] = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";

fn t(ms: i64) -> Timestamp {
    Timestamp::from_secs_nanos(1_790_000_000, 0).add_nanos(ms * 1_000_000)
}

/// The packets of one short HTTP exchange: handshake, request, response, FINs.
fn conversation(client: &str, server: &str) -> Vec<Vec<u8>> {
    let c: SocketAddr = client.parse().unwrap();
    let s: SocketAddr = server.parse().unwrap();
    let syn = TcpFlags {
        syn: true,
        ..TcpFlags::default()
    };
    let synack = TcpFlags {
        syn: true,
        ack: true,
        ..TcpFlags::default()
    };
    let finack = TcpFlags {
        fin: true,
        ack: true,
        ..TcpFlags::default()
    };
    let r = REQUEST.len() as u32;
    let p = RESPONSE.len() as u32;
    vec![
        ip_packet(&SegmentSpec::new(c, s, 1000, 0, b"").flags(syn)),
        ip_packet(&SegmentSpec::new(s, c, 5000, 1001, b"").flags(synack)),
        ip_packet(&SegmentSpec::new(c, s, 1001, 5001, b"")),
        ip_packet(&SegmentSpec::new(c, s, 1001, 5001, REQUEST)),
        ip_packet(&SegmentSpec::new(s, c, 5001, 1001 + r, RESPONSE)),
        ip_packet(&SegmentSpec::new(c, s, 1001 + r, 5001 + p, b"").flags(finack)),
        ip_packet(&SegmentSpec::new(s, c, 5001 + p, 1002 + r, b"").flags(finack)),
        ip_packet(&SegmentSpec::new(c, s, 1002 + r, 5002 + p, b"")),
    ]
}

#[derive(Default, Debug)]
struct Seen {
    c2s: Vec<u8>,
    s2c: Vec<u8>,
    gaps: u64,
    client: Option<SocketAddr>,
    server: Option<SocketAddr>,
    connections: usize,
    frames: Vec<u64>,
    times: Vec<Timestamp>,
}

fn analyse(bytes: Vec<u8>) -> (Seen, InputReport) {
    let mut inputs = vec![capture_from_bytes("test", bytes, 0).expect("opens")];
    let mut stage = CaptureStage::new(Settings::default(), 1);
    let mut seen = Seen::default();
    let mut sink = |ev: TcpEvent<'_>| match ev {
        TcpEvent::Opened { client, server, .. } => {
            seen.client = Some(client);
            seen.server = Some(server);
            seen.connections += 1;
        }
        TcpEvent::Data {
            dir, data, mark, ..
        } => {
            seen.frames.push(mark.frame.frame);
            seen.times.push(mark.time);
            match dir {
                Direction::ClientToServer => seen.c2s.extend_from_slice(data),
                Direction::ServerToClient => seen.s2c.extend_from_slice(data),
            }
        }
        TcpEvent::Gap { len, .. } => seen.gaps += len,
        _ => {}
    };
    run(&mut inputs, &mut stage, &mut sink);
    let report = stage.report(&inputs[0]);
    (seen, report)
}

fn assert_exchange(seen: &Seen, client: &str, server: &str) {
    assert_eq!(seen.connections, 1, "{seen:?}");
    assert_eq!(seen.client, Some(client.parse().unwrap()));
    assert_eq!(seen.server, Some(server.parse().unwrap()));
    assert_eq!(seen.c2s, REQUEST);
    assert_eq!(seen.s2c, RESPONSE);
    assert_eq!(seen.gaps, 0);
    assert_eq!(seen.frames, vec![4, 5], "frame numbers are 1-based");
}

fn pcap(lt: i32, nanos: bool, big_endian: bool, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), lt, 262_144, nanos, big_endian).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.packet(t(i as i64), f, f.len() as u32).unwrap();
    }
    w.into_inner()
}

#[test]
fn every_link_type_in_classic_pcap() {
    let v4 = ("192.168.1.10:51000", "192.168.1.20:3000");
    let v6 = ("[2001:db8::10]:51000", "[2001:db8::20]:3000");
    let cases: Vec<(i32, &[u16], (&str, &str))> = vec![
        (linktype::ETHERNET, &[], v4),
        (linktype::ETHERNET, &[10], v4),
        (linktype::ETHERNET, &[100, 200], v6),
        (linktype::LINUX_SLL, &[], v4),
        (linktype::LINUX_SLL2, &[], v6),
        (linktype::RAW, &[], v4),
        (linktype::RAW_12, &[], v6),
        (linktype::IPV4, &[], v4),
        (linktype::IPV6, &[], v6),
        (linktype::NULL, &[], v4),
        (linktype::NULL, &[], v6),
        (linktype::LOOP, &[], v6),
    ];
    for (lt, tags, (c, s)) in cases {
        let frames: Vec<Vec<u8>> = conversation(c, s)
            .iter()
            .map(|ip| link_frame(lt, ip, tags))
            .collect();
        let (seen, report) = analyse(pcap(lt, false, false, &frames));
        assert_exchange(&seen, c, s);
        assert_eq!(report.packets, 8, "link type {lt}");
        assert!(
            report.skipped.is_empty(),
            "link type {lt}: {:?}",
            report.skipped
        );
    }
}

#[test]
fn both_byte_orders_and_precisions() {
    let frames: Vec<Vec<u8>> = conversation("10.0.0.1:40000", "10.0.0.2:8000")
        .iter()
        .map(|ip| link_frame(linktype::ETHERNET, ip, &[]))
        .collect();
    for big_endian in [false, true] {
        for nanos in [false, true] {
            let (seen, report) = analyse(pcap(linktype::ETHERNET, nanos, big_endian, &frames));
            assert_exchange(&seen, "10.0.0.1:40000", "10.0.0.2:8000");
            assert_eq!(report.format.to_string(), "pcap");
            // Frame 4 was written at +3 ms.
            assert_eq!(seen.times[0], t(3));
        }
    }
}

#[test]
fn ip_options_and_ipv6_extension_headers() {
    let c: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let s: SocketAddr = "10.0.0.2:8000".parse().unwrap();
    let mut spec = SegmentSpec::new(c, s, 1, 1, REQUEST);
    let options = [1u8, 1, 1, 0]; // NOP, NOP, NOP, EOL
    spec.ip_options = &options;
    let framed = link_frame(linktype::RAW, &ip_packet(&spec), &[]);
    let (seen, _) = analyse(pcap(linktype::RAW, false, false, &[framed]));
    assert_eq!(seen.c2s, REQUEST);

    let c6: SocketAddr = "[::1]:40000".parse().unwrap();
    let s6: SocketAddr = "[::1]:8000".parse().unwrap();
    let mut spec = SegmentSpec::new(c6, s6, 1, 1, REQUEST);
    let hop = [1u8, 4, 0, 0, 0, 0]; // PadN filling the 8-byte header
    spec.ip_options = &hop;
    let framed = link_frame(linktype::RAW, &ip_packet(&spec), &[]);
    let (seen, _) = analyse(pcap(linktype::RAW, false, false, &[framed]));
    assert_eq!(seen.c2s, REQUEST);
}

#[test]
fn pcapng_sections_interfaces_resolutions_and_block_kinds() {
    let conv = conversation("10.1.0.1:40000", "10.1.0.2:9000");
    let mut w = PcapNgWriter::new(Vec::new(), false).unwrap();
    // Interface 0 is Ethernet in microseconds, interface 1 raw IP in nanoseconds.
    let eth = w.interface(linktype::ETHERNET, 0, 6).unwrap();
    let raw = w.interface(linktype::RAW, 0, 9).unwrap();
    for (i, ip) in conv.iter().enumerate().take(3) {
        w.packet(
            eth,
            t(i as i64),
            &link_frame(linktype::ETHERNET, ip, &[]),
            0,
        )
        .unwrap();
    }
    w.packet(raw, t(3).add_nanos(123), &conv[3], 0).unwrap();
    // A second section, big-endian, whose only interface uses binary fractions (2^-20 s).
    w.section(true).unwrap();
    let bin = w.interface(linktype::LINUX_SLL, 0, 0x80 | 20).unwrap();
    w.packet(
        bin,
        t(4),
        &link_frame(linktype::LINUX_SLL, &conv[4], &[]),
        0,
    )
    .unwrap();
    w.obsolete_packet(0, t(5), &link_frame(linktype::LINUX_SLL, &conv[5], &[]))
        .unwrap();
    w.simple_packet(&link_frame(linktype::LINUX_SLL, &conv[6], &[]))
        .unwrap();
    w.packet(
        bin,
        t(7),
        &link_frame(linktype::LINUX_SLL, &conv[7], &[]),
        0,
    )
    .unwrap();
    let (seen, report) = analyse(w.into_inner());
    assert_exchange(&seen, "10.1.0.1:40000", "10.1.0.2:9000");
    assert_eq!(report.format.to_string(), "pcapng");
    assert_eq!(report.packets, 8);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(seen.times[0], t(3).add_nanos(123), "nanosecond interface");
    let bin_err = (seen.times[1].0 - t(4).0).abs();
    assert!(bin_err < 1000, "2^-20 s resolution is within a microsecond");
}

#[test]
fn gzip_is_detected_by_content() {
    let frames: Vec<Vec<u8>> = conversation("10.0.0.1:40000", "10.0.0.2:8000")
        .iter()
        .map(|ip| link_frame(linktype::ETHERNET, ip, &[]))
        .collect();
    let plain = pcap(linktype::ETHERNET, false, false, &frames);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    let (seen, report) = analyse(gz.finish().unwrap());
    assert_exchange(&seen, "10.0.0.1:40000", "10.0.0.2:8000");
    assert_eq!(report.format.to_string(), "pcap+gzip");
}

#[test]
fn truncated_file_keeps_what_was_read_and_warns() {
    let frames: Vec<Vec<u8>> = conversation("10.0.0.1:40000", "10.0.0.2:8000")
        .iter()
        .map(|ip| link_frame(linktype::ETHERNET, ip, &[]))
        .collect();
    let mut bytes = pcap(linktype::ETHERNET, false, false, &frames[..5]);
    bytes.truncate(bytes.len() - 7);
    let (seen, report) = analyse(bytes);
    assert_eq!(seen.c2s, REQUEST);
    assert_eq!(report.packets, 4);
    assert!(
        warns(&report, |k| *k == NoteKind::CaptureTruncated),
        "{:?}",
        report.warnings
    );
}

#[test]
fn absurd_record_length_is_rejected_without_allocating() {
    let frames: Vec<Vec<u8>> = conversation("10.0.0.1:40000", "10.0.0.2:8000")
        .iter()
        .map(|ip| link_frame(linktype::ETHERNET, ip, &[]))
        .collect();
    let mut bytes = pcap(linktype::ETHERNET, false, false, &frames[..4]);
    // A record header claiming 3 GB.
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&3_000_000_000u32.to_le_bytes());
    bytes.extend_from_slice(&3_000_000_000u32.to_le_bytes());
    bytes.extend_from_slice(&[0u8; 64]);
    let (seen, report) = analyse(bytes);
    assert_eq!(seen.c2s, REQUEST);
    assert_eq!(report.packets, 4);
    assert!(
        warns(&report, |k| matches!(
            k,
            NoteKind::CorruptStretch { .. } | NoteKind::CaptureTruncated
        )),
        "{:?}",
        report.warnings
    );
}

#[test]
fn snaplen_cut_frames_are_gaps() {
    let conv = conversation("10.0.0.1:40000", "10.0.0.2:8000");
    let mut w = PcapWriter::new(Vec::new(), linktype::RAW, 60, false, false).unwrap();
    for (i, ip) in conv.iter().enumerate() {
        let keep = ip.len().min(60);
        w.packet(t(i as i64), &ip[..keep], ip.len() as u32).unwrap();
    }
    let (seen, report) = analyse(w.into_inner());
    // 60 bytes of IPv4 + TCP headers leave 20 payload bytes per data frame.
    assert_eq!(seen.c2s, &REQUEST[..20]);
    assert_eq!(seen.gaps, (REQUEST.len() - 20 + RESPONSE.len() - 20) as u64);
    assert!(warns(&report, |k| matches!(
        k,
        NoteKind::FramesCutBySnaplen { .. }
    )));
}

#[test]
fn unknown_link_type_is_counted_and_reported_once() {
    let frames = vec![vec![0u8; 40], vec![0u8; 40]];
    let (_, report) = analyse(pcap(147, false, false, &frames));
    assert_eq!(report.skipped.get("unsupported link type"), Some(&2));
    let mentions = report
        .warnings
        .iter()
        .filter(|w| w.kind == NoteKind::LinkTypeUnsupported { link_type: 147 })
        .count();
    assert_eq!(mentions, 1);
}

#[test]
fn not_a_capture_names_its_first_bytes() {
    for (bytes, expect) in [
        (b"GET / HTTP/1.1\r\n".to_vec(), "47 45 54"),
        (b"{\"log\": {}}".to_vec(), "JSON"),
        (vec![0x16, 0x03, 0x01, 0x02, 0x00], "TLS"),
    ] {
        let err = CaptureReader::open(Box::new(Cursor::new(bytes)), 0)
            .err()
            .expect("must fail");
        let text = err.to_string();
        assert!(text.contains(expect), "{text}");
    }
    assert!(matches!(
        CaptureReader::open(Box::new(Cursor::new(Vec::new())), 0),
        Err(ReadError::Empty)
    ));
}

#[test]
fn several_inputs_merge_by_time() {
    let conv = conversation("10.0.0.1:40000", "10.0.0.2:8000");
    // Split one connection over two files, interleaved in time.
    let mut a = PcapWriter::new(Vec::new(), linktype::RAW, 0, false, false).unwrap();
    let mut b = PcapWriter::new(Vec::new(), linktype::RAW, 0, true, true).unwrap();
    for (i, ip) in conv.iter().enumerate() {
        if i % 2 == 0 {
            a.packet(t(i as i64), ip, ip.len() as u32).unwrap();
        } else {
            b.packet(t(i as i64), ip, ip.len() as u32).unwrap();
        }
    }
    let mut inputs: Vec<CaptureInput> = [a.into_inner(), b.into_inner()]
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| capture_from_bytes(&format!("part{i}"), bytes, i as u32).unwrap())
        .collect();
    let mut stage = CaptureStage::new(Settings::default(), 2);
    let mut c2s = Vec::new();
    let mut s2c = Vec::new();
    let mut frames = Vec::new();
    let mut sink = |ev: TcpEvent<'_>| {
        if let TcpEvent::Data {
            dir, data, mark, ..
        } = ev
        {
            frames.push((mark.frame.input, mark.frame.frame));
            match dir {
                Direction::ClientToServer => c2s.extend_from_slice(data),
                Direction::ServerToClient => s2c.extend_from_slice(data),
            }
        }
    };
    run(&mut inputs, &mut stage, &mut sink);
    assert_eq!(c2s, REQUEST);
    assert_eq!(s2c, RESPONSE);
    // Request was packet 4 overall: the 2nd of input 1; response the 3rd of input 0.
    assert_eq!(frames, vec![(1, 2), (0, 3)]);
}

/// The Ethernet frames of one exchange.
fn eth_conversation() -> Vec<Vec<u8>> {
    conversation("10.0.0.1:40000", "10.0.0.2:8000")
        .iter()
        .map(|ip| link_frame(linktype::ETHERNET, ip, &[]))
        .collect()
}

/// A pcap of `frames` with `garbage` written after the first `at` records; returns the file and
/// the offset the garbage starts at.
fn pcap_with_garbage(frames: &[Vec<u8>], at: usize, garbage: &[u8]) -> (Vec<u8>, usize) {
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, 262_144, false, false).unwrap();
    for (i, f) in frames[..at].iter().enumerate() {
        w.packet(t(i as i64), f, f.len() as u32).unwrap();
    }
    let mut bytes = w.into_inner();
    let offset = bytes.len();
    bytes.extend_from_slice(garbage);
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, 262_144, false, false).unwrap();
    for (i, f) in frames.iter().enumerate().skip(at) {
        w.packet(t(i as i64), f, f.len() as u32).unwrap();
    }
    bytes.extend_from_slice(&w.into_inner()[24..]);
    (bytes, offset)
}

/// Deterministic bytes that do not compress.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn assert_balanced(report: &InputReport, file_len: usize) {
    let a = &report.accounting;
    assert!(a.balanced(), "{a:?}");
    assert_eq!(a.bytes.total, file_len as u64, "{a:?}");
}

#[test]
fn pcap_corrupt_record_in_the_middle_is_skipped_and_the_exchange_after_it_found() {
    let frames = eth_conversation();
    // A record header claiming 3 GB, then bytes that are no record: the request comes after.
    let mut garbage = Vec::new();
    for v in [1u32, 0, 3_000_000_000, 3_000_000_000] {
        garbage.extend_from_slice(&v.to_le_bytes());
    }
    garbage.extend_from_slice(&noise(37, 7));
    let (bytes, offset) = pcap_with_garbage(&frames, 3, &garbage);
    let len = bytes.len();
    let (seen, report) = analyse(bytes);
    assert_eq!(seen.c2s, REQUEST, "{:?}", report.warnings);
    assert_eq!(seen.s2c, RESPONSE);
    assert_eq!(seen.gaps, 0);
    assert_eq!(report.packets, 8);
    let expected = (Some(offset as u64), garbage.len() as u64);
    assert!(
        corrupt_stretches(&report, CorruptUnit::PcapRecord).contains(&expected),
        "{expected:?} in {:?}",
        report.warnings
    );
    let a = &report.accounting;
    assert_eq!(a.bytes.lost["corrupt_record"], garbage.len() as u64);
    assert_eq!(a.packets.lost["corrupt_record"], 1);
    assert_balanced(&report, len);
}

#[test]
fn pcap_record_with_a_damaged_length_is_skipped_up_to_the_next_record() {
    let frames = eth_conversation();
    let (mut bytes, _) = pcap_with_garbage(&frames, 8, &[]);
    // The third record (the handshake's last ACK) claims more captured bytes than any record.
    let third = 24 + (16 + frames[0].len()) + (16 + frames[1].len());
    bytes[third + 8..third + 12].copy_from_slice(&300_000u32.to_le_bytes());
    let len = bytes.len();
    let (seen, report) = analyse(bytes);
    assert_eq!(seen.c2s, REQUEST);
    assert_eq!(seen.s2c, RESPONSE);
    assert_eq!(report.packets, 7);
    let lost = (16 + frames[2].len()) as u64;
    assert_eq!(report.accounting.bytes.lost["corrupt_record"], lost);
    assert!(
        corrupt_stretches(&report, CorruptUnit::PcapRecord).contains(&(Some(third as u64), lost)),
        "{:?}",
        report.warnings
    );
    assert_balanced(&report, len);
}

#[test]
fn pcap_clock_jump_confirmed_by_the_next_record_is_not_corruption() {
    let frames = eth_conversation();
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, 262_144, false, false).unwrap();
    // A device that booted with its clock at 1970 and was set by NTP before the exchange.
    for i in 0..3 {
        let f = noise(60, i);
        let time = Timestamp::from_secs_nanos(10, 0).add_nanos(i as i64 * 1_000_000);
        w.packet(time, &f, f.len() as u32).unwrap();
    }
    for (i, f) in frames.iter().enumerate() {
        w.packet(t(i as i64), f, f.len() as u32).unwrap();
    }
    let bytes = w.into_inner();
    let len = bytes.len();
    let (seen, report) = analyse(bytes);
    assert_eq!((seen.connections, seen.gaps), (1, 0));
    assert_eq!(seen.c2s, REQUEST);
    assert_eq!(seen.s2c, RESPONSE);
    assert_eq!(report.packets, 11);
    assert!(report.accounting.bytes.lost.is_empty(), "{report:?}");
    assert_balanced(&report, len);
}

#[test]
fn many_corrupt_stretches_warn_ten_times_and_sum_up_the_rest() {
    let frames = eth_conversation();
    let (mut bytes, _) = pcap_with_garbage(&frames, 0, &[]);
    bytes.truncate(24);
    // A record after garbage is believed when the record after it is plausible too: the
    // garbage comes between pairs of records.
    for pair in 0..40 {
        if pair > 0 {
            bytes.extend_from_slice(&[0xff; 5]);
        }
        let (records, _) = pcap_with_garbage(&frames[..2], 2, &[]);
        bytes.extend_from_slice(&records[24..]);
    }
    let len = bytes.len();
    let (_, report) = analyse(bytes);
    let listed = corrupt_stretches(&report, CorruptUnit::PcapRecord).len();
    assert_eq!(listed, 10, "{:?}", report.warnings);
    assert!(
        report.warnings.iter().any(|w| w.count == 39
            && w.kind
                == NoteKind::CorruptStretches {
                    bytes: 195,
                    listed: 10
                }),
        "{:?}",
        report.warnings
    );
    assert_eq!(report.packets, 80);
    assert_eq!(report.accounting.packets.lost["corrupt_record"], 39);
    assert_balanced(&report, len);
}

/// The blocks of a little-endian pcapng of `frames` (section header, interface, packets), each
/// as its own bytes.
fn pcapng_blocks(frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut w = PcapNgWriter::new(Vec::new(), false).unwrap();
    let eth = w.interface(linktype::ETHERNET, 0, 6).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.packet(eth, t(i as i64), f, f.len() as u32).unwrap();
    }
    let bytes = w.into_inner();
    let mut blocks = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        blocks.push(bytes[at..at + len].to_vec());
        at += len;
    }
    blocks
}

#[test]
fn pcapng_garbage_between_blocks_and_a_bad_trailer_are_stepped_over() {
    let frames = eth_conversation();
    let mut blocks = pcapng_blocks(&frames);
    // The block of frames[2] (the handshake's last ACK) ends in a length that differs from the
    // one it starts with; 13 bytes of garbage (not a multiple of 4) come before it.
    let bad = &mut blocks[4];
    let n = bad.len();
    bad[n - 4..].copy_from_slice(&999u32.to_le_bytes());
    let bad_len = n;
    let mut bytes = Vec::new();
    let mut offset = 0;
    for (i, b) in blocks.iter().enumerate() {
        if i == 4 {
            offset = bytes.len();
            bytes.extend_from_slice(&noise(13, 3));
        }
        bytes.extend_from_slice(b);
    }
    let len = bytes.len();
    let (seen, report) = analyse(bytes);
    assert_eq!(seen.c2s, REQUEST, "{:?}", report.warnings);
    assert_eq!(seen.s2c, RESPONSE);
    assert_eq!(report.packets, 7);
    let skipped = 13 + bad_len;
    assert!(
        corrupt_stretches(&report, CorruptUnit::PcapngBlock)
            .contains(&(Some(offset as u64), skipped as u64)),
        "{:?}",
        report.warnings
    );
    assert_eq!(
        report.accounting.bytes.lost["corrupt_record"],
        skipped as u64
    );
    assert_eq!(report.accounting.packets.lost["corrupt_record"], 1);
    assert_balanced(&report, len);
}

#[test]
fn pcapng_block_with_an_impossible_length_is_skipped() {
    let frames = eth_conversation();
    let mut blocks = pcapng_blocks(&frames);
    // frames[2]'s block claims a length that is not a multiple of 4.
    blocks[4][4..8].copy_from_slice(&61u32.to_le_bytes());
    let lost = blocks[4].len();
    let bytes = blocks.concat();
    let len = bytes.len();
    let (seen, report) = analyse(bytes);
    assert_eq!(seen.c2s, REQUEST, "{:?}", report.warnings);
    assert_eq!(seen.s2c, RESPONSE);
    assert_eq!(report.accounting.bytes.lost["corrupt_record"], lost as u64);
    assert_balanced(&report, len);
}

#[test]
fn small_truncated_gzip_is_read_up_to_its_cut() {
    let mut frames = eth_conversation();
    // Frames that do not compress after the exchange, so the cut falls among them.
    frames.extend((0..8).map(|i| noise(200, i + 10)));
    let plain = pcap(linktype::ETHERNET, false, false, &frames);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    let mut compressed = gz.finish().unwrap();
    assert!(
        compressed.len() < 4096,
        "a small file: {}",
        compressed.len()
    );
    compressed.truncate(compressed.len() - 300);
    let reader = CaptureReader::open(Box::new(Cursor::new(compressed.clone())), 0);
    assert!(reader.is_ok(), "a cut gzip stream is not rejected whole");
    let (seen, report) = analyse(compressed);
    assert_exchange(&seen, "10.0.0.1:40000", "10.0.0.2:8000");
    assert_eq!(report.format.to_string(), "pcap+gzip");
    assert!(
        warns(&report, |k| *k == NoteKind::GzipCut),
        "{:?}",
        report.warnings
    );
    let a = &report.accounting;
    assert!(a.bytes.lost["truncated"] > 0, "{a:?}");
    assert!(a.balanced(), "{a:?}");
    assert!(a.bytes.total < plain.len() as u64 && a.bytes.total > 0);
}

#[test]
fn a_megabyte_of_garbage_is_scanned_in_linear_time() {
    let frames = eth_conversation();
    // Record headers whose lengths are plausible but whose successors never are make every
    // offset a candidate that has to be looked at twice.
    let mut garbage = Vec::new();
    while garbage.len() < 1 << 20 {
        for v in [1_790_000_000u32, 0, 40, 40] {
            garbage.extend_from_slice(&v.to_le_bytes());
        }
        garbage.extend_from_slice(&[0xee; 24]);
    }
    garbage.extend_from_slice(&[0xee; 56]);
    let (bytes, _) = pcap_with_garbage(&frames, 3, &garbage);
    let len = bytes.len();
    let started = std::time::Instant::now();
    let (seen, report) = analyse(bytes);
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert_eq!(seen.c2s, REQUEST);
    // The first fake record follows a good one and is plausible, so it is read as a record (of
    // no TCP); the one it points to is not, and from there on everything is skipped.
    assert_eq!(report.packets, 9);
    assert_eq!(
        report.accounting.bytes.lost["corrupt_record"],
        garbage.len() as u64 - 56
    );
    assert_balanced(&report, len);
}
