//! What the fuzz targets share: the production pipeline, from capture bytes (or raw frames, or
//! HTTP events from the ingest readers) through the MCP stage and every detector, keeping
//! nothing but what the stages keep themselves; and a way to turn arbitrary bytes into a TCP
//! conversation cut into segments, some reordered, repeated or lost, written as a pcap.

use std::io::Cursor;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::reader::{CaptureReader, Frame};
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_capture::{CaptureStage, Settings};
use mcpf_detect::Detector;
use mcpf_http::{HttpEvent, HttpSink, Stage};
use mcpf_mcp::Builder;

/// The MCP and detect stages as the binary runs them: sessions finalized as they end (no HAR or
/// log input), each through the detectors.
pub struct Analysis {
    builder: Builder,
    detector: Arc<Mutex<Detector>>,
}

impl Default for Analysis {
    fn default() -> Self {
        let detector = Arc::new(Mutex::new(Detector::new()));
        let d = detector.clone();
        let builder = Builder::new()
            .with_early_finalize(true)
            .with_session_callback(Box::new(move |s| {
                d.lock().unwrap().session(&s);
            }));
        Analysis { builder, detector }
    }
}

impl HttpSink for Analysis {
    fn on_http(&mut self, event: HttpEvent) {
        self.builder.on_http(event);
    }
}

impl Analysis {
    /// Ends the run: the sessions still open are analysed and detected too.
    pub fn finish(self) {
        let Analysis { builder, detector } = self;
        let (left, _, _) = builder.finish();
        let mut d = Arc::try_unwrap(detector)
            .ok()
            .expect("the builder held the only other handle")
            .into_inner()
            .unwrap();
        for s in &left {
            d.session(s);
        }
        let _ = d.finish();
    }
}

/// A capture file's bytes (pcap, pcapng, gzip of either) through the whole pipeline.
pub fn analyze_capture(bytes: &[u8]) {
    let Ok(mut reader) = CaptureReader::open(Box::new(Cursor::new(bytes.to_vec())), 0) else {
        return;
    };
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Analysis::default());
    // A reader error ends the input as it does in production (with what was read kept).
    while let Ok(Some(frame)) = reader.next_frame() {
        capture.frame(&frame, &mut http);
    }
    capture.finish(&mut http);
    http.sink.finish();
}

/// Raw frames of one link type through link, IP and TCP decoding, reassembly and the rest.
pub fn analyze_frames(link: i32, frames: &[&[u8]]) {
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Analysis::default());
    for (i, data) in frames.iter().enumerate() {
        let frame = Frame {
            time: mcpf_model::Timestamp::from_secs_nanos(1_796_000_000 + i as i64, 0),
            frame: mcpf_model::FrameRef::new(0, i as u64 + 1),
            linktype: link,
            data,
            orig_len: data.len() as u32,
        };
        capture.frame(&frame, &mut http);
    }
    capture.finish(&mut http);
    http.sink.finish();
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
        let syn = TcpFlags { syn: true, ..TcpFlags::default() };
        let syn_ack = TcpFlags { syn: true, ack: true, ..TcpFlags::default() };
        segs.push((true, isn_c - 1, 0, &[], syn));
        segs.push((false, isn_s - 1, isn_c, &[], syn_ack));
    }
    let ack = TcpFlags { ack: true, ..TcpFlags::default() };
    // Client and server pieces alternate, as a request and its answer would.
    let (mut ci, mut si) = (0usize, 0usize);
    while ci < c2s.len() || si < s2c.len() {
        let n = cut.min(c2s.len() - ci);
        if n > 0 {
            let seq = isn_c.wrapping_add(ci as u32);
            segs.push((true, seq, isn_s.wrapping_add(si as u32), &c2s[ci..ci + n], ack));
            ci += n;
        }
        let m = (cut * 2).min(s2c.len() - si);
        if m > 0 {
            let seq = isn_s.wrapping_add(si as u32);
            segs.push((false, seq, isn_c.wrapping_add(ci as u32), &s2c[si..si + m], ack));
            si += m;
        }
    }
    if mode & 2 != 0 {
        let fin = TcpFlags { fin: true, ack: true, ..TcpFlags::default() };
        segs.push((true, isn_c.wrapping_add(c2s.len() as u32), isn_s.wrapping_add(s2c.len() as u32), &[], fin));
        segs.push((false, isn_s.wrapping_add(s2c.len() as u32), isn_c.wrapping_add(c2s.len() as u32 + 1), &[], fin));
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
        let (src, dst) = if from_client { (client, server) } else { (server, client) };
        let spec = SegmentSpec::new(src, dst, seq, ackn, payload).flags(flags);
        let frame = link_frame(linktype::ETHERNET, &ip_packet(&spec), &[]);
        let time = mcpf_model::Timestamp::from_secs_nanos(1_796_000_000, 0).add_nanos(i as i64 * 1_000_000);
        w.packet(time, &frame, frame.len() as u32).unwrap();
    }
    w.into_inner()
}
