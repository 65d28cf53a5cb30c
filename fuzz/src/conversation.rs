//! Turning the fuzzer's bytes into inputs the binary reads: a TCP conversation written as a
//! pcap, and raw frames split out of one buffer. Shared with `tests/fuzz_regressions.rs`, which
//! replays every input that ever failed through the released binary (and the `tls_records`
//! inputs in-process), so this file depends on nothing but the capture, TLS and model crates.

use std::net::SocketAddr;

use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::tcp::SeqNumber;
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};

/// The link types the `frame_decode` target's first byte picks from.
pub const LINKS: [i32; 6] = [
    linktype::ETHERNET,
    linktype::NULL,
    linktype::RAW_12,
    linktype::RAW_14,
    113, // Linux cooked
    276, // Linux cooked v2
];

/// A `frame_decode` input (link pick, then frames) written as a pcap of that link type.
pub fn frames_pcap(data: &[u8]) -> Vec<u8> {
    let Some((&pick, rest)) = data.split_first() else {
        return Vec::new();
    };
    let link = LINKS[pick as usize % LINKS.len()];
    let mut w = PcapWriter::new(Vec::new(), link, 262_144, false, false).unwrap();
    for (i, frame) in split_frames(rest).into_iter().enumerate() {
        let time = mcpf_model::Timestamp::from_secs_nanos(1_796_000_000 + i as i64, 0);
        w.packet(time, frame, frame.len() as u32).unwrap();
    }
    w.into_inner()
}

/// Frames separated by the bytes 0xFF 0x00 0xFF, as the `frame_decode` target reads them.
pub fn split_frames(rest: &[u8]) -> Vec<&[u8]> {
    let mut frames: Vec<&[u8]> = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i + 3 <= rest.len() {
        if rest[i..i + 3] == [0xFF, 0x00, 0xFF] {
            frames.push(&rest[start..i]);
            start = i + 3;
            i += 3;
        } else {
            i += 1;
        }
    }
    frames.push(&rest[start..]);
    frames
}

/// A small reader of the fuzzer's bytes: numbers from the front, the rest as payload.
pub struct Bytes<'a>(pub &'a [u8]);

impl<'a> Bytes<'a> {
    pub fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }

    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

/// Turns `data` into a TCP conversation and writes it as a pcap: a handshake (unless the
/// first byte says the capture starts mid-connection), then the client's and the server's
/// bytes (split where `data` holds the byte 0xFF 0xFE, or in half) cut into segments whose sizes,
/// order, repeats and losses the control bytes choose.
pub fn conversation_pcap(data: &[u8]) -> Vec<u8> {
    let mut ctl = Bytes(data);
    let mode = ctl.byte();
    let cut = ctl.byte().max(1) as usize;
    let body = ctl.0;
    let split = body
        .windows(2)
        .position(|w| w == [0xFF, 0xFE])
        .map_or((body.len() / 2, body.len() / 2), |i| (i, i + 2));
    let (c2s, s2c) = (&body[..split.0], &body[split.1..]);
    let client: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let server: SocketAddr = "10.0.0.2:8080".parse().unwrap();
    let mut segs: Vec<(bool, u32, u32, &[u8], TcpFlags)> = Vec::new();
    let (isn_c, isn_s) = (1000u32, 5000u32);
    if mode & 1 == 0 {
        let syn = TcpFlags {
            syn: true,
            ..TcpFlags::default()
        };
        let syn_ack = TcpFlags {
            syn: true,
            ack: true,
            ..TcpFlags::default()
        };
        segs.push((true, isn_c - 1, 0, &[], syn));
        segs.push((false, isn_s - 1, isn_c, &[], syn_ack));
    }
    let ack = TcpFlags {
        ack: true,
        ..TcpFlags::default()
    };
    // Client and server pieces alternate, as a request and its answer would.
    let (mut ci, mut si) = (0usize, 0usize);
    while ci < c2s.len() || si < s2c.len() {
        let n = cut.min(c2s.len() - ci);
        if n > 0 {
            let seq = (SeqNumber(isn_c) + (ci as u32)).0;
            segs.push((
                true,
                seq,
                (SeqNumber(isn_s) + (si as u32)).0,
                &c2s[ci..ci + n],
                ack,
            ));
            ci += n;
        }
        let m = (cut * 2).min(s2c.len() - si);
        if m > 0 {
            let seq = (SeqNumber(isn_s) + (si as u32)).0;
            segs.push((
                false,
                seq,
                (SeqNumber(isn_c) + (ci as u32)).0,
                &s2c[si..si + m],
                ack,
            ));
            si += m;
        }
    }
    if mode & 2 != 0 {
        let fin = TcpFlags {
            fin: true,
            ack: true,
            ..TcpFlags::default()
        };
        segs.push((
            true,
            (SeqNumber(isn_c) + (c2s.len() as u32)).0,
            (SeqNumber(isn_s) + (s2c.len() as u32)).0,
            &[],
            fin,
        ));
        segs.push((
            false,
            (SeqNumber(isn_s) + (s2c.len() as u32)).0,
            (SeqNumber(isn_c) + (c2s.len() as u32 + 1)).0,
            &[],
            fin,
        ));
    }
    // The mode's high bits disturb the order: swap neighbours, repeat one, lose one.
    let n = segs.len();
    if n > 3 {
        let at = (mode as usize >> 2) % (n - 1);
        if mode & 0x40 != 0 {
            segs.swap(at, at + 1);
        }
        if mode & 0x80 != 0 {
            let again = segs[at];
            segs.push(again);
        }
        if mode & 0x20 != 0 {
            segs.remove((at + 2) % n);
        }
    }
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, 65_535, false, false).unwrap();
    for (i, (from_client, seq, ackn, payload, flags)) in segs.into_iter().enumerate() {
        let (src, dst) = if from_client {
            (client, server)
        } else {
            (server, client)
        };
        let spec = SegmentSpec::new(src, dst, seq, ackn, payload).flags(flags);
        let frame = link_frame(linktype::ETHERNET, &ip_packet(&spec), &[]);
        let time = mcpf_model::Timestamp::from_secs_nanos(1_796_000_000, 0)
            .add_nanos(i as i64 * 1_000_000);
        w.packet(time, &frame, frame.len() as u32).unwrap();
    }
    w.into_inner()
}

/// A `tls_records` input: a key log of the length its first two bytes say, then one
/// connection's TLS bytes, split into pieces that alternate direction, fed to the TLS stage.
pub fn feed_tls_records(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_be_bytes(*len)).min(rest.len());
    let (log, stream) = rest.split_at(len);
    let keys = mcpf_tls::KeyLog::parse(log).unwrap_or_default();
    let mut conn = mcpf_tls::TlsConnection::new();
    let mut dir = mcpf_model::Direction::ClientToServer;
    for piece in split_frames(stream) {
        let _ = conn.feed(dir, piece, &keys);
        dir = dir.reverse();
    }
}
