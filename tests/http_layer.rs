//! The HTTP/1.1, SSE and JSON-RPC layer driven directly with synthetic TCP events (no capture
//! file): `http::Stage` is a `TcpSink`, fed `Opened` / `Data` / `Gap` / `Fin` / `Closed` events,
//! one frame number per event, and its output collected with `http::exchange::Collector`.
//!
//! - a property test: a realistic keep-alive connection (SSE, 202, gzip JSON, a GET stream cut
//!   by the capture end) fed in any chunking, down to a byte at a time, with the two directions
//!   interleaved in any causal order, gives the same exchanges, events and messages; and in any
//!   order at all when the server's segments carry their ACKs (a response captured before its
//!   request waits for it);
//! - SSE parsing edge cases through the whole HTTP path; chunked framing; pipelining and the
//!   no-body cases; capture gaps; connection ends; JSON-RPC payloads; non-HTTP traffic;
//! - packets written to a pcap and read back through the capture stage: retransmissions that
//!   disagree, responses before their requests, connections picked up in the middle of an event
//!   stream, heads cut by the snap length.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::net::SocketAddr;

use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::reader::CaptureReader;
use mcpf_capture::tcp::{
    CloseReason, ConnSummary, Direction, HalfStats, RoleBasis, TcpEvent, TcpSink,
};
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_capture::{CaptureStage, Settings, open_capture, run};
use mcpf_http::exchange::Collector;
use support::Exchange;

mod support;
use mcpf_http::{Body, HttpStats, Outcome, Stage};
use mcpf_mcp::jsonrpc::{Kind, Message, RequestId};
use mcpf_model::{AnomalyKind, ConnId, FrameRef, Mark, Timestamp};
use proptest::prelude::*;

const C2S: Direction = Direction::ClientToServer;
const S2C: Direction = Direction::ServerToClient;
/// MCP servers listen anywhere: nothing here uses a well-known HTTP port.
const CLIENT: &str = "10.0.0.1:40000";
const SERVER: &str = "10.0.0.2:9123";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn mark_of(frame: u64) -> Mark {
    mark_at(frame, 1_000_000)
}

/// The mark of a frame when frames are `step_ns` apart.
fn mark_at(frame: u64, step_ns: i64) -> Mark {
    Mark {
        time: Timestamp::from_secs_nanos(1_790_000_000, 0).add_nanos(frame as i64 * step_ns),
        frame: FrameRef::new(0, frame),
    }
}

// ------------------------------------------------------------------------------------------------
// Driving the stage
// ------------------------------------------------------------------------------------------------

/// One `Data` event: which bytes of which direction, in which frame.
#[derive(Clone, Copy, Debug)]
struct Piece {
    conn: u64,
    dir: Direction,
    start: usize,
    end: usize,
    frame: u64,
}

/// Feeds an HTTP stage with TCP events, one new frame (and millisecond) per event.
struct Driver {
    stage: Stage<Collector>,
    frame: u64,
    /// Capture time between two frames.
    step_ns: i64,
    open: HashMap<u64, (SocketAddr, SocketAddr, Mark)>,
    offsets: HashMap<(u64, Direction), usize>,
    pieces: Vec<Piece>,
}

/// What the stage reported.
struct Run {
    exchanges: Vec<Exchange>,
    /// (connection, direction, frame, text)
    /// Connection, direction, frame, kind and sentence of each anomaly.
    anomalies: Vec<(u64, Direction, u64, AnomalyKind, String)>,
    stats: HttpStats,
    pieces: Vec<Piece>,
}

impl Driver {
    fn new() -> Driver {
        Driver {
            stage: Stage::new(Collector::default()),
            frame: 0,
            step_ns: 1_000_000,
            open: HashMap::new(),
            offsets: HashMap::new(),
            pieces: Vec::new(),
        }
    }

    /// A driver with connection 0 (`CLIENT` → `SERVER`) open.
    fn conn0() -> Driver {
        let mut d = Driver::new();
        d.open(0, CLIENT, SERVER);
        d
    }

    fn tick(&mut self) -> Mark {
        self.frame += 1;
        mark_at(self.frame, self.step_ns)
    }

    fn open(&mut self, conn: u64, client: &str, server: &str) {
        self.open_as(conn, client, server, true);
    }

    /// Opens a connection the capture picked up mid-stream (no handshake).
    fn open_midstream(&mut self, conn: u64, client: &str, server: &str) {
        self.open_as(conn, client, server, false);
    }

    fn open_as(&mut self, conn: u64, client: &str, server: &str, handshake_seen: bool) {
        let mark = self.tick();
        let (client, server) = (addr(client), addr(server));
        self.open.insert(conn, (client, server, mark));
        self.stage.on_tcp(TcpEvent::Opened {
            conn: ConnId::tcp(conn),
            client,
            server,
            mark,
            handshake_seen,
        });
    }

    fn data(&mut self, conn: u64, dir: Direction, data: &[u8]) -> u64 {
        self.data_acking(conn, dir, data, None)
    }

    /// Bytes whose segment acknowledged the other direction up to offset `acked`.
    fn data_acking(&mut self, conn: u64, dir: Direction, data: &[u8], acked: Option<u64>) -> u64 {
        let mark = self.tick();
        let off = self.offsets.entry((conn, dir)).or_default();
        self.pieces.push(Piece {
            conn,
            dir,
            start: *off,
            end: off.saturating_add(data.len()),
            frame: mark.frame.frame,
        });
        *off = off.saturating_add(data.len());
        self.stage.on_tcp(TcpEvent::Data {
            conn: ConnId::tcp(conn),
            dir,
            data,
            mark,
            acked,
        });
        mark.frame.frame
    }

    fn c2s(&mut self, data: impl AsRef<[u8]>) -> u64 {
        self.data(0, C2S, data.as_ref())
    }

    fn s2c(&mut self, data: impl AsRef<[u8]>) -> u64 {
        self.data(0, S2C, data.as_ref())
    }

    fn gap(&mut self, conn: u64, dir: Direction, len: u64) -> u64 {
        let mark = self.tick();
        let off = self.offsets.entry((conn, dir)).or_default();
        *off = off.saturating_add(len as usize);
        self.stage.on_tcp(TcpEvent::Gap {
            conn: ConnId::tcp(conn),
            dir,
            len,
            mark,
            snaplen: false,
        });
        mark.frame.frame
    }

    fn fin(&mut self, conn: u64, dir: Direction) -> u64 {
        let mark = self.tick();
        self.stage.on_tcp(TcpEvent::Fin {
            conn: ConnId::tcp(conn),
            dir,
            mark,
        });
        mark.frame.frame
    }

    fn close(&mut self, conn: u64, close: CloseReason) -> u64 {
        let mark = self.tick();
        let (client, server, start) = self.open.remove(&conn).expect("connection open");
        let summary = ConnSummary {
            conn: ConnId::tcp(conn),
            client,
            server,
            role_basis: RoleBasis::Syn,
            handshake_seen: true,
            start,
            end: mark,
            packets: self.frame,
            frame_bytes: 0,
            c2s: HalfStats::default(),
            s2c: HalfStats::default(),
            close,
        };
        self.stage.on_tcp(TcpEvent::Closed { summary: &summary });
        mark.frame.frame
    }

    /// Ends every connection still open as the capture would (open at capture end).
    fn finish(mut self) -> Run {
        let mut open: Vec<u64> = self.open.keys().copied().collect();
        open.sort_unstable();
        for conn in open {
            self.close(conn, CloseReason::CaptureEnd);
        }
        Run::of(&mut self.stage, self.pieces)
    }
}

impl Run {
    /// What an HTTP stage reported once every connection ended.
    fn of(stage: &mut Stage<Collector>, pieces: Vec<Piece>) -> Run {
        let collector = std::mem::take(&mut stage.sink);
        let anomalies = collector
            .anomalies
            .iter()
            .map(|a| {
                let frame = a.mark.frame.frame;
                (a.conn.number(), a.dir, frame, a.kind, a.detail.clone())
            })
            .collect();
        Run {
            exchanges: support::with_messages(collector.into_exchanges()),
            anomalies,
            stats: stage.stats.clone(),
            pieces,
        }
    }
}

impl Run {
    fn ex(&self, conn: u64, index: u32) -> &Exchange {
        self.exchanges
            .iter()
            .find(|e| e.id.conn == ConnId::tcp(conn) && e.id.index == index)
            .unwrap_or_else(|| panic!("no exchange tcp{conn}#{}: {}", index + 1, self.dump()))
    }

    fn only(&self) -> &Exchange {
        assert_eq!(self.exchanges.len(), 1, "{}", self.dump());
        &self.exchanges[0]
    }

    /// The frame that carried byte `offset` of a direction.
    fn frame_of(&self, conn: u64, dir: Direction, offset: usize) -> u64 {
        self.pieces
            .iter()
            .find(|p| p.conn == conn && p.dir == dir && p.start <= offset && offset < p.end)
            .map(|p| p.frame)
            .unwrap_or_else(|| panic!("byte {offset} of {dir:?} was not fed"))
    }

    fn frames(&self) -> BTreeSet<u64> {
        self.pieces.iter().map(|p| p.frame).collect()
    }

    /// An anomaly of `kind` whose sentence says `needle`.
    fn has_anomaly(&self, kind: AnomalyKind, needle: &str) -> bool {
        self.anomalies
            .iter()
            .any(|a| a.3 == kind && a.4.contains(needle))
    }

    fn dump(&self) -> String {
        summary(self).join("\n")
    }
}

// ------------------------------------------------------------------------------------------------
// A normalised view of everything reported, without capture marks
// ------------------------------------------------------------------------------------------------

fn body_line(b: &Body) -> String {
    format!(
        "data={:?} wire={} decoded={} truncated={} encoding={:?} error={:?} chunked={}",
        String::from_utf8_lossy(&b.data),
        b.wire_bytes,
        b.decoded_bytes,
        b.truncated,
        b.content_encoding,
        b.decode_error,
        b.chunked
    )
}

/// Exchanges (by connection and index), their events and messages, anomalies and counters:
/// everything but the marks, which legitimately depend on how the bytes were cut into packets.
fn summary(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    let mut xs: Vec<&Exchange> = run.exchanges.iter().collect();
    xs.sort_by_key(|e| e.id);
    for e in xs {
        out.push(format!(
            "exchange {} {:?} -> {:?}",
            e.id, e.client, e.server
        ));
        if let Some(r) = &e.request {
            out.push(format!(
                "  request {} {} HTTP/1.{} {:?} outcome={:?}",
                r.method, r.target, r.version, r.headers.0, r.outcome
            ));
            out.push(format!("  request body {}", body_line(&r.body)));
        }
        if let Some(h) = &e.response {
            out.push(format!(
                "  response {} {:?} HTTP/1.{} {:?} interim={:?} event_stream={}",
                h.status, h.reason, h.version, h.headers.0, h.interim, h.event_stream
            ));
        }
        if let Some(end) = &e.end {
            out.push(format!(
                "  end outcome={:?} closed_by={:?} sse={:?}",
                end.outcome, end.closed_by, end.sse
            ));
            out.push(format!("  response body {}", body_line(&end.body)));
        }
        if let Some((outcome, by, _)) = &e.no_response {
            out.push(format!(
                "  no response outcome={outcome:?} closed_by={by:?}"
            ));
        }
        for ev in &e.events {
            out.push(format!(
                "  event #{} id={:?} last_event_id={:?} type={:?} data={:?} retry={:?} priming={} dispatched={} after_gap={} truncated={}",
                ev.index,
                ev.id,
                ev.last_event_id,
                ev.event,
                ev.data,
                ev.retry,
                ev.priming,
                ev.dispatched,
                ev.after_gap,
                ev.truncated
            ));
        }
        out.push(format!("  jsonrpc request {:?}", e.request_messages));
        out.push(format!("  jsonrpc response {:?}", e.response_messages));
        out.push(format!("  jsonrpc events {:?}", e.event_messages));
    }
    for (conn, dir, _, kind, what) in &run.anomalies {
        out.push(format!("anomaly tcp{conn} {dir:?} {} {what}", kind.name()));
    }
    // How often responses waited for their requests depends on the order the directions were
    // fed, not on what they carried.
    let stats = HttpStats {
        responses_held: 0,
        held_paired: 0,
        held_released_early: 0,
        ..run.stats.clone()
    };
    out.push(format!("stats {stats:?}"));
    out
}

// ------------------------------------------------------------------------------------------------
// Building wire bytes
// ------------------------------------------------------------------------------------------------

/// An event-stream payload built from lines and their terminators, with the offset of each byte
/// that dispatches an event (the first byte of the line end of the blank line closing a block
/// that has a `data` or `id` field).
fn sse_payload(lines: &[(&str, &str)]) -> (Vec<u8>, Vec<usize>) {
    let mut payload = Vec::new();
    let mut dispatch = Vec::new();
    let mut has_event = false;
    for (line, end) in lines {
        if line.is_empty() {
            if has_event {
                dispatch.push(payload.len());
            }
            has_event = false;
        } else if line.starts_with("data") || line.starts_with("id") {
            has_event = true;
        }
        payload.extend_from_slice(line.as_bytes());
        payload.extend_from_slice(end.as_bytes());
    }
    (payload, dispatch)
}

/// `payload` in the chunked transfer coding, chunk sizes taken in turn from `sizes`; some size
/// lines carry chunk extensions (one with a quoted `;`), some are upper-case hex. `end` is the
/// last chunk and trailer section (empty to leave the body open). Also returns the wire offset
/// of each payload byte.
fn chunked(payload: &[u8], sizes: &[usize], end: &str) -> (Vec<u8>, Vec<usize>) {
    let mut wire = Vec::new();
    let mut map = Vec::with_capacity(payload.len());
    let mut pos = 0;
    let mut n = 0;
    while pos < payload.len() {
        let size = sizes[n % sizes.len()].min(payload.len() - pos);
        let ext = match n % 5 {
            1 => ";ext=1",
            3 => ";name=\"a;b\"",
            _ => "",
        };
        let hex = if n % 4 == 2 {
            format!("{size:X}")
        } else {
            format!("{size:x}")
        };
        wire.extend_from_slice(format!("{hex}{ext}\r\n").as_bytes());
        for i in 0..size {
            map.push(wire.len() + i);
        }
        wire.extend_from_slice(&payload[pos..pos + size]);
        wire.extend_from_slice(b"\r\n");
        pos += size;
        n += 1;
    }
    wire.extend_from_slice(end.as_bytes());
    (wire, map)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn post(target: &str, body: &str) -> String {
    format!(
        "POST {target} HTTP/1.1\r\nHost: {SERVER}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn get(target: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: {SERVER}\r\nAccept: text/event-stream\r\n\r\n")
}

fn json_response(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

const ACCEPTED: &str = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
const SSE_CLOSE_DELIMITED: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
const SSE_CHUNKED: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";

fn num(n: &str) -> Option<RequestId> {
    Some(RequestId::Number(n.into()))
}

fn string_id(s: &str) -> Option<RequestId> {
    Some(RequestId::String(s.into()))
}

/// (kind, id, method) of messages.
fn rpc(msgs: &[Message]) -> Vec<(Kind, Option<RequestId>, Option<String>)> {
    msgs.iter()
        .map(|m| {
            (
                m.kind,
                m.id.clone(),
                m.method.as_deref().map(str::to_string),
            )
        })
        .collect()
}

/// (id field, last event ID, data) of each event.
fn ids_data(e: &Exchange) -> Vec<(Option<String>, String, String)> {
    e.events
        .iter()
        .map(|ev| {
            (
                ev.id.as_deref().map(str::to_string),
                ev.last_event_id.to_string(),
                ev.data.clone(),
            )
        })
        .collect()
}

fn datas(e: &Exchange) -> Vec<String> {
    e.events.iter().map(|ev| ev.data.clone()).collect()
}

// ------------------------------------------------------------------------------------------------
// The realistic connection of the property test
// ------------------------------------------------------------------------------------------------

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":"2","method":"tools/list"}"#;
const LIST_RESULT: &str = r#"{"jsonrpc":"2.0","id":"2","result":{"tools":[{"name":"add","inputSchema":{"type":"object"}}]}}"#;
const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
const LOG_1: &str = r#"{"jsonrpc":"2.0","method":"notifications/message","#;
const LOG_2: &str = r#""params":{"level":"info","data":"x"}}"#;
const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":"srv-1","method":"ping"}"#;

struct Conversation {
    c2s: Vec<u8>,
    s2c: Vec<u8>,
    /// Where each request ends in `c2s`.
    req_end: Vec<usize>,
    /// Where each response starts in `s2c`.
    resp_start: Vec<usize>,
    /// For the exchanges with an identity-coded event stream: the `s2c` offset of the byte that
    /// completes each event.
    dispatch: Vec<(u32, Vec<usize>)>,
}

/// One keep-alive connection, four exchanges:
/// 0. POST initialize (Content-Length) → chunked `text/event-stream`: priming event with retry,
///    a comment block, a two-line data event, the response; CRLF and LF lines, chunk boundaries
///    inside lines and inside CRLFs, chunk extensions and a trailer;
/// 1. POST notification with an LF-only head → 202 with an LF-only head;
/// 2. POST tools/list with a string id → gzip `application/json`;
/// 3. GET → chunked event stream with CR-only lines, cut by the capture end in the middle of a
///    chunk and of an event.
fn conversation() -> Conversation {
    let mut c2s = Vec::new();
    let mut req_end = Vec::new();
    c2s.extend_from_slice(post("/mcp", INIT).as_bytes());
    req_end.push(c2s.len());
    c2s.extend_from_slice(
        format!(
            "POST /mcp HTTP/1.1\nHost: {SERVER}\nMcp-Session-Id: s-1\nContent-Type: application/json\nContent-Length: {}\n\n{INITIALIZED}",
            INITIALIZED.len()
        )
        .as_bytes(),
    );
    req_end.push(c2s.len());
    c2s.extend_from_slice(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {SERVER}\r\nMcp-Session-Id: s-1\r\nAccept-Encoding: gzip\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{LIST}",
            LIST.len()
        )
        .as_bytes(),
    );
    req_end.push(c2s.len());
    c2s.extend_from_slice(
        format!("GET /mcp HTTP/1.1\r\nHost: {SERVER}\r\nMcp-Session-Id: s-1\r\nAccept: text/event-stream\r\n\r\n").as_bytes(),
    );
    req_end.push(c2s.len());

    let mut s2c = Vec::new();
    let mut resp_start = Vec::new();
    let mut dispatch = Vec::new();

    // 0: chunked event stream.
    resp_start.push(s2c.len());
    s2c.extend_from_slice(SSE_CHUNKED.as_bytes());
    let data_e2 = format!("data: {INIT_RESULT}");
    let data_l1 = format!("data: {LOG_1}");
    let data_l2 = format!("data: {LOG_2}");
    let (payload, events) = sse_payload(&[
        ("id: p1", "\r\n"),
        ("retry: 3000", "\r\n"),
        ("data: ", "\r\n"),
        ("", "\r\n"),
        (": keep-alive", "\n"),
        ("", "\n"),
        ("id: e1", "\r\n"),
        (&data_l1, "\r\n"),
        (&data_l2, "\r\n"),
        ("", "\r\n"),
        ("event: message", "\n"),
        ("id: e2", "\n"),
        (&data_e2, "\n"),
        ("", "\n"),
    ]);
    let (wire, map) = chunked(
        &payload,
        &[7, 1, 30, 2, 5, 64, 3],
        "0\r\nX-Trailer: done\r\n\r\n",
    );
    let base = s2c.len();
    dispatch.push((0, events.iter().map(|&o| base + map[o]).collect()));
    s2c.extend_from_slice(&wire);

    // 1: 202 with an LF-only head.
    resp_start.push(s2c.len());
    s2c.extend_from_slice(b"HTTP/1.1 202 Accepted\nContent-Length: 0\n\n");

    // 2: gzip JSON.
    resp_start.push(s2c.len());
    let gz = gzip(LIST_RESULT.as_bytes());
    s2c.extend_from_slice(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
            gz.len()
        )
        .as_bytes(),
    );
    s2c.extend_from_slice(&gz);

    // 3: event stream left open.
    resp_start.push(s2c.len());
    s2c.extend_from_slice(SSE_CHUNKED.as_bytes());
    let data_g1 = format!("data: {LIST_CHANGED}");
    let data_g2 = format!("data: {PING}");
    let (payload, events) = sse_payload(&[
        ("id: g1", "\n"),
        (&data_g1, "\n"),
        ("", "\n"),
        ("id: g2", "\r"),
        (&data_g2, "\r"),
        ("", "\r"),
    ]);
    let (wire, map) = chunked(&payload, &[11, 40, 4], "");
    let base = s2c.len();
    dispatch.push((3, events.iter().map(|&o| base + map[o]).collect()));
    s2c.extend_from_slice(&wire);
    // A chunk of 26 bytes of which 23 were sent: an event cut in the middle.
    s2c.extend_from_slice(b"1a\r\nid: g3\ndata: {\"jsonrpc\"");

    Conversation {
        c2s,
        s2c,
        req_end,
        resp_start,
        dispatch,
    }
}

/// Splitmix64: a small deterministic generator for piece sizes and interleavings.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn split(len: usize, max: usize, rng: &mut Rng) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < len {
        let n = (1 + rng.below(max)).min(len - pos);
        out.push((pos, pos + n));
        pos += n;
    }
    out
}

/// Feeds the conversation cut into pieces of at most `max_c` / `max_s` bytes, the directions
/// interleaved at random. `causal`: a response's bytes are only fed once its request is complete
/// (what a capture shows: a server answers what it has received); otherwise any merge of the two
/// directions that keeps each one's order. Either way each server piece acknowledges the
/// requests it answers, as its TCP segment's ACK field would.
fn feed(conv: &Conversation, max_c: usize, max_s: usize, seed: u64, causal: bool) -> Run {
    let mut rng = Rng(seed);
    let c = split(conv.c2s.len(), max_c, &mut rng);
    let s = split(conv.s2c.len(), max_s, &mut rng);
    let bias = 1 + rng.below(7);
    let mut d = Driver::conn0();
    if !causal {
        // Frames 0.1 ms apart: a capture reorders by so little, even a byte at a time.
        d.step_ns = 100_000;
    }
    let (mut i, mut j) = (0, 0);
    while i < c.len() || j < s.len() {
        let mut server = j < s.len() && (i == c.len() || rng.below(8) < bias);
        // The client bytes the server had received when it sent this piece.
        let needed = s.get(j).map_or(0, |&(_, end)| {
            let answered = conv.resp_start.iter().filter(|&&r| r < end).count();
            answered.checked_sub(1).map_or(0, |k| conv.req_end[k])
        });
        if server && causal && i < c.len() && c[i].0 < needed {
            server = false;
        }
        if server {
            d.data_acking(0, S2C, &conv.s2c[s[j].0..s[j].1], Some(needed as u64));
            j += 1;
        } else {
            d.c2s(&conv.c2s[c[i].0..c[i].1]);
            i += 1;
        }
    }
    d.finish()
}

/// The conversation fed whole: one frame per direction, requests first.
fn feed_whole(conv: &Conversation) -> Run {
    let mut d = Driver::conn0();
    d.c2s(&conv.c2s);
    d.s2c(&conv.s2c);
    d.finish()
}

#[test]
fn realistic_connection_fed_whole() {
    let conv = conversation();
    let run = feed_whole(&conv);
    assert_eq!(run.exchanges.len(), 4, "{}", run.dump());
    assert!(run.anomalies.is_empty(), "{}", run.dump());
    assert_eq!(run.stats.connections_http, 1);
    assert_eq!(run.stats.http_ports, vec![9123]);
    assert_eq!(run.stats.skipped_bytes, 0);

    // 0: initialize answered by an event stream.
    let e = run.ex(0, 0);
    let req = e.request.as_ref().unwrap();
    assert_eq!(
        (req.method.as_str(), req.target.as_str(), req.version),
        ("POST", "/mcp", 1)
    );
    assert_eq!(req.body.data, INIT.as_bytes());
    assert_eq!(req.outcome, Outcome::Complete);
    assert_eq!(
        rpc(&e.request_messages),
        vec![(Kind::Request, num("1"), Some("initialize".into()))]
    );
    let head = e.response.as_ref().unwrap();
    assert_eq!(head.status, 200);
    assert!(head.event_stream);
    assert_eq!(head.headers.get("transfer-encoding"), Some("chunked"));
    assert_eq!(
        head.headers.media_type().as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(
        ids_data(e),
        vec![
            (Some("p1".into()), "p1".into(), "".into()),
            (Some("e1".into()), "e1".into(), format!("{LOG_1}\n{LOG_2}")),
            (Some("e2".into()), "e2".into(), INIT_RESULT.into()),
        ]
    );
    let p = &e.events[0];
    assert!(p.priming && p.dispatched);
    assert_eq!(p.retry, Some(3000));
    assert_eq!(
        e.events.iter().map(|ev| ev.index).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert!(
        e.events
            .iter()
            .all(|ev| ev.event == "message" && !ev.after_gap)
    );
    assert_eq!(
        e.event_messages.iter().map(|m| rpc(m)).collect::<Vec<_>>(),
        vec![
            vec![],
            vec![(
                Kind::Notification,
                None,
                Some("notifications/message".into())
            )],
            vec![(Kind::Response, num("1"), None)],
        ]
    );
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Complete);
    assert!(end.body.chunked);
    let sse = end.sse.as_ref().unwrap();
    assert_eq!((sse.events, sse.comments, sse.empty_blocks), (3, 1, 1));
    assert_eq!(sse.last_retry, Some(3000));
    assert!(!sse.unterminated);

    // 1: notification → 202.
    let e = run.ex(0, 1);
    assert_eq!(e.response.as_ref().unwrap().status, 202);
    assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::Complete);
    assert_eq!(
        rpc(&e.request_messages),
        vec![(
            Kind::Notification,
            None,
            Some("notifications/initialized".into())
        )]
    );
    assert!(e.events.is_empty() && e.response_messages.is_empty());

    // 2: gzip JSON, string id.
    let e = run.ex(0, 2);
    assert_eq!(
        rpc(&e.request_messages),
        vec![(Kind::Request, string_id("2"), Some("tools/list".into()))]
    );
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Complete);
    assert_eq!(end.body.data, LIST_RESULT.as_bytes());
    assert_eq!(end.body.content_encoding.as_deref(), Some("gzip"));
    assert_eq!(end.body.decode_error, None);
    assert_eq!(end.body.decoded_bytes, LIST_RESULT.len() as u64);
    assert_eq!(
        rpc(&e.response_messages),
        vec![(Kind::Response, string_id("2"), None)]
    );

    // 3: GET stream cut by the capture end.
    let e = run.ex(0, 3);
    assert_eq!(e.request.as_ref().unwrap().method, "GET");
    assert_eq!(
        ids_data(e),
        vec![
            (Some("g1".into()), "g1".into(), LIST_CHANGED.into()),
            (Some("g2".into()), "g2".into(), PING.into()),
        ]
    );
    assert_eq!(
        e.event_messages.iter().map(|m| rpc(m)).collect::<Vec<_>>(),
        vec![
            vec![(
                Kind::Notification,
                None,
                Some("notifications/tools/list_changed".into())
            )],
            vec![(Kind::Request, string_id("srv-1"), Some("ping".into()))],
        ]
    );
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::CutByCaptureEnd);
    assert!(end.sse.as_ref().unwrap().unterminated);
    assert!(e.no_response.is_none());
    check_marks(&conv, &run);
}

/// Every mark is one of the frames fed; an event of an identity-coded stream carries the frame
/// holding the byte that completed it.
fn check_marks(conv: &Conversation, run: &Run) {
    let frames = run.frames();
    for e in &run.exchanges {
        for ev in &e.events {
            assert!(frames.contains(&ev.mark.frame.frame), "{ev:?}");
            assert_eq!(
                ev.mark,
                mark_of(ev.mark.frame.frame),
                "time goes with the frame"
            );
        }
        if let Some(r) = &e.request {
            assert!(frames.contains(&r.first.frame.frame) && frames.contains(&r.last.frame.frame));
        }
        if let Some(h) = &e.response {
            assert!(frames.contains(&h.first.frame.frame));
        }
    }
    for (index, offsets) in &conv.dispatch {
        let e = run.ex(0, *index);
        assert_eq!(e.events.len(), offsets.len());
        for (ev, &off) in e.events.iter().zip(offsets) {
            assert_eq!(
                ev.mark.frame.frame,
                run.frame_of(0, S2C, off),
                "event {} of exchange {} completed by s2c byte {off}",
                ev.index,
                index
            );
        }
    }
}

fn piece_max() -> impl Strategy<Value = usize> {
    prop_oneof![Just(1usize), 2usize..=8, 9usize..=64, 65usize..=4096]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        // Keep the repository clean: no regression files written.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn first_difference(got: &[String], expected: &[String]) -> String {
    let i = got.iter().zip(expected).take_while(|(a, b)| a == b).count();
    format!(
        "line {i}: got {:?}, expected {:?}",
        got.get(i).map(String::as_str).unwrap_or("<end>"),
        expected.get(i).map(String::as_str).unwrap_or("<end>")
    )
}

proptest! {
    #![proptest_config(config())]

    /// Any chunking (down to a byte at a time), any causal interleaving of the two directions:
    /// the same exchanges, events and JSON-RPC messages.
    #[test]
    fn any_chunking_gives_the_same_result(max_c in piece_max(), max_s in piece_max(), seed in any::<u64>()) {
        let conv = conversation();
        let expected = summary(&feed_whole(&conv));
        let run = feed(&conv, max_c, max_s, seed, true);
        let got = summary(&run);
        prop_assert!(got == expected, "first difference: {}", first_difference(&got, &expected));
        check_marks(&conv, &run);
    }
}

/// Pieces of HTTP, SSE and chunked framing, to build hostile byte streams from.
const TOKENS: &[&str] = &[
    "GET /mcp HTTP/1.1\r\n",
    "HEAD / HTTP/1.1\r\n",
    "POST /mcp HTTP/1.0\n",
    "CONNECT h:443 HTTP/1.1\r\n",
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 101 Switching Protocols\r\n",
    "HTTP/1.1 204 No Content\r\n",
    "HTTP/1.0 304 x\n",
    "Content-Length: 5\r\n",
    "Content-Length: 99999999999\r\n",
    "Content-Length: 3, 4\r\n",
    "Transfer-Encoding: chunked\r\n",
    "Transfer-Encoding: gzip\r\n",
    "Content-Type: text/event-stream\r\n",
    "Content-Type: application/json\r\n",
    "Content-Encoding: gzip\r\n",
    "Content-Encoding: deflate\r\n",
    "Content-Encoding: br\r\n",
    "\r\n",
    "\n",
    "\r",
    "5\r\n",
    "ffffffffffffffff\r\n",
    "0\r\n\r\n",
    "0\r\nX: y\r\n\r\n",
    "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
    "id: 1\r",
    "id: \0\n",
    "retry: 99999999999999999999999\n",
    ": c\n",
    "\u{feff}",
    "[{\"jsonrpc\":\"2.0\"},1,[],{}]",
    "\x16\x03",
    "PRI * HTTP/2.0\r\n",
];

#[derive(Clone, Debug)]
enum Op {
    Data(bool, Vec<u8>),
    Gap(bool, u64),
    Fin(bool),
}

fn op() -> impl Strategy<Value = Op> {
    let piece = prop_oneof![
        4 => proptest::collection::vec(0..TOKENS.len(), 1..6)
            .prop_map(|ix| ix.iter().flat_map(|&i| TOKENS[i].bytes()).collect::<Vec<u8>>()),
        1 => proptest::collection::vec(any::<u8>(), 1..64),
    ];
    prop_oneof![
        8 => (any::<bool>(), piece).prop_map(|(c, d)| Op::Data(c, d)),
        1 => (any::<bool>(), prop_oneof![1u64..8, 8u64..5000, Just(1u64 << 32)]).prop_map(|(c, n)| Op::Gap(c, n)),
        1 => any::<bool>().prop_map(Op::Fin),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Whatever the bytes, gaps and FINs, the stage never panics, and every exchange it reports
    /// is on the connection it was fed.
    #[test]
    fn hostile_streams_never_panic(
        ops in proptest::collection::vec(op(), 1..60),
        end in 0u8..4,
        midstream in any::<bool>(),
    ) {
        let mut d = Driver::new();
        d.open_as(0, CLIENT, SERVER, !midstream);
        for op in &ops {
            let dir = |c: bool| if c { C2S } else { S2C };
            match op {
                Op::Data(c, bytes) => { d.data(0, dir(*c), bytes); }
                Op::Gap(c, n) => { d.gap(0, dir(*c), *n); }
                Op::Fin(c) => { d.fin(0, dir(*c)); }
            }
        }
        let reason = match end {
            0 => CloseReason::Fin,
            1 => CloseReason::Reset { by: S2C },
            2 => CloseReason::Idle,
            _ => CloseReason::CaptureEnd,
        };
        d.close(0, reason);
        let run = d.finish();
        prop_assert!(run.exchanges.iter().all(|e| e.id.conn == ConnId::tcp(0)));
    }
}

#[test]
fn one_byte_at_a_time_both_directions() {
    let conv = conversation();
    let expected = summary(&feed_whole(&conv));
    for seed in 0..8 {
        let run = feed(&conv, 1, 1, seed, true);
        assert_eq!(summary(&run), expected, "seed {seed}");
        check_marks(&conv, &run);
    }
}

#[test]
fn any_interleaving_even_response_before_request() {
    // Any interleaving of the directions, even one where response bytes come before the request
    // they answer (capture reordering: `-i any`, merged interfaces): the ACK of each response
    // segment says which request bytes the server had, so the response waits for them and is
    // paired as if captured in order. (Without an ACK, a response captured before any request
    // is an orphan: the capture began mid-connection; `response_without_ack_before_any_request`.)
    let conv = conversation();
    let expected = summary(&feed_whole(&conv));
    let mut runner = proptest::test_runner::TestRunner::new(config());
    runner
        .run(
            &(piece_max(), piece_max(), any::<u64>()),
            |(max_c, max_s, seed)| {
                let got = summary(&feed(&conv, max_c, max_s, seed, false));
                prop_assert!(
                    got == expected,
                    "first difference: {}",
                    first_difference(&got, &expected)
                );
                Ok(())
            },
        )
        .unwrap();
}

// ------------------------------------------------------------------------------------------------
// SSE edge cases through the whole HTTP path
// ------------------------------------------------------------------------------------------------

/// A GET answered by `head`, whose body arrives in `pieces` (one frame each), then both sides
/// close. Returns the run and the frame of each piece.
fn stream_run(head: &str, pieces: &[&[u8]]) -> (Run, Vec<u64>) {
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c(head);
    let frames = pieces.iter().map(|p| d.s2c(p)).collect();
    d.fin(0, S2C);
    d.fin(0, C2S);
    d.close(0, CloseReason::Fin);
    (d.finish(), frames)
}

/// The event stream of a close-delimited response whose body arrives in `pieces`.
fn sse_stream(pieces: &[&[u8]]) -> (Run, Vec<u64>) {
    stream_run(SSE_CLOSE_DELIMITED, pieces)
}

fn sse_chunked_pieces(payload: &[u8], sizes: &[usize], cut: &[usize]) -> Vec<Vec<u8>> {
    let (wire, _) = chunked(payload, sizes, "0\r\n\r\n");
    let mut out = Vec::new();
    let mut pos = 0;
    let mut k = 0;
    while pos < wire.len() {
        let n = cut[k % cut.len()].min(wire.len() - pos);
        out.push(wire[pos..pos + n].to_vec());
        pos += n;
        k += 1;
    }
    out
}

#[test]
fn sse_line_ends_split_across_packets() {
    let cases: Vec<Vec<&[u8]>> = vec![
        // CRLF split between CR and LF, at every line.
        vec![b"data: a\r", b"\n\r", b"\ndata: b\r", b"\n\r", b"\n"],
        // CR only, blank line in its own packet.
        vec![b"data: a\r", b"\r", b"data: b\r", b"\r"],
        // CR only, all in one packet.
        vec![b"data: a\r\rdata: b\r\r"],
        // LF only.
        vec![b"data: a\n\ndata: b\n\n"],
        // Mixed in one stream.
        vec![b"data: a\r\n\r", b"data: b\n", b"\r"],
    ];
    for pieces in cases {
        let (run, _) = sse_stream(&pieces);
        let e = run.only();
        assert_eq!(datas(e), ["a", "b"], "{pieces:?}");
        assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::Complete);
    }
    // A CRLF split over two packets is one line end, not a line end and a blank line: both data
    // lines belong to the same event.
    let (run, _) = sse_stream(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(datas(run.only()), ["a\nb"]);
    // A CR ending a packet, then a packet starting with a field: the CR ended the line.
    let (run, _) = sse_stream(&[b"data: a\r", b"data: b\r", b"\r"]);
    assert_eq!(datas(run.only()), ["a\nb"]);
}

#[test]
fn sse_line_ends_split_across_chunked_chunks() {
    let payload = b"id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\rid: 3\ndata: c\r\n\n";
    for sizes in [&[1usize][..], &[2], &[3], &[7, 1], &[8]] {
        for cut in [&[1usize][..], &[4], &[5, 2], &[1000]] {
            let pieces = sse_chunked_pieces(payload, sizes, cut);
            let refs: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
            let (run, _) = stream_run(SSE_CHUNKED, &refs);
            let e = run.only();
            assert_eq!(
                ids_data(e),
                vec![
                    (Some("1".into()), "1".into(), "a".into()),
                    (Some("2".into()), "2".into(), "b".into()),
                    (Some("3".into()), "3".into(), "c".into()),
                ],
                "chunk sizes {sizes:?}, packets {cut:?}"
            );
            assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::Complete);
        }
    }
}

#[test]
fn sse_multi_line_data_and_field_parsing() {
    let (run, _) = sse_stream(&[
        b"data: one\ndata:two\ndata\ndata:  three\n\n",
        b"event: endpoint\ndata: /messages/?session_id=abc\n\n",
        b"event:\ndata: typed-empty\n\n",
        b"unknown: x\ndata: keep\nDATA: not-a-field\n\n",
    ]);
    let e = run.only();
    assert_eq!(
        datas(e),
        [
            "one\ntwo\n\n three",
            "/messages/?session_id=abc",
            "typed-empty",
            "keep"
        ]
    );
    let types: Vec<&str> = e.events.iter().map(|ev| &*ev.event).collect();
    assert_eq!(types, ["message", "endpoint", "message", "message"]);
}

#[test]
fn sse_id_with_nul_is_ignored_and_empty_id_resets() {
    let (run, _) = sse_stream(&[
        b"id: 7\ndata: a\n\n",
        b"id: 8\0x\ndata: b\n\n",
        b"id\ndata: c\n\n",
        b"id: 9\ndata: d\n\n",
        b"id:\ndata: e\n\n",
        b"data: f\n\n",
    ]);
    assert_eq!(
        ids_data(run.only()),
        vec![
            (Some("7".into()), "7".into(), "a".into()),
            (None, "7".into(), "b".into()),
            (Some("".into()), "".into(), "c".into()),
            (Some("9".into()), "9".into(), "d".into()),
            (Some("".into()), "".into(), "e".into()),
            (None, "".into(), "f".into()),
        ]
    );
}

#[test]
fn sse_comments_are_counted_not_dispatched() {
    let (run, _) = sse_stream(&[
        b": ping\r\n\r\n",
        b":\n: keep-alive 2026\ndata: y\n\n",
        b": bye\n\n",
    ]);
    let e = run.only();
    assert_eq!(datas(e), ["y"]);
    let sse = e.end.as_ref().unwrap().sse.clone().unwrap();
    assert_eq!(sse.comments, 4);
    assert_eq!(sse.events, 1);
    assert_eq!(sse.empty_blocks, 2);
}

#[test]
fn sse_leading_bom_is_dropped_even_split() {
    // Split over packets of a close-delimited body.
    let (run, _) = sse_stream(&[&[0xef], &[0xbb], &[0xbf, b'd'], b"ata: a\n\n"]);
    assert_eq!(datas(run.only()), ["a"]);
    // Split over chunks of a chunked body, one byte per chunk and per packet.
    let mut payload = vec![0xef, 0xbb, 0xbf];
    payload.extend_from_slice(b"id: 1\ndata: b\n\n\xef\xbb\xbfdata: not a field\n\ndata: c\n\n");
    let pieces = sse_chunked_pieces(&payload, &[1], &[1]);
    let refs: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
    let (run, _) = stream_run(SSE_CHUNKED, &refs);
    // Only the first BOM is dropped: the second makes the field name "\u{feff}data".
    assert_eq!(datas(run.only()), ["b", "c"]);
}

#[test]
fn sse_retry_only_digits() {
    let (run, _) = sse_stream(&[
        b"retry: 2500\ndata: a\n\nretry: 1.5\ndata: b\n\nretry: 10x\n\nretry: 700\n\n",
    ]);
    let e = run.only();
    assert_eq!(
        e.events.iter().map(|ev| ev.retry).collect::<Vec<_>>(),
        [Some(2500), None]
    );
    assert_eq!(
        e.end.as_ref().unwrap().sse.as_ref().unwrap().last_retry,
        Some(700)
    );
}

#[test]
fn sse_priming_events_are_kept() {
    let (run, _) = sse_stream(&[
        b"id: 0\ndata:\n\n",
        b"id: 1\n\n",
        b"id: 2\nretry: 1000\n\n",
        b"event: x\n\n",
        b"id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
    ]);
    let e = run.only();
    let v: Vec<_> = e
        .events
        .iter()
        .map(|ev| {
            (
                ev.id.as_deref(),
                ev.priming,
                ev.dispatched,
                ev.retry,
                ev.index,
            )
        })
        .collect();
    assert_eq!(
        v,
        vec![
            (Some("0"), true, true, None, 0),
            (Some("1"), true, false, None, 1),
            (Some("2"), true, false, Some(1000), 2),
            (Some("3"), false, true, None, 3),
        ]
    );
    // Priming events carry no JSON-RPC message; the block with neither id nor data is no event.
    assert_eq!(
        e.event_messages.iter().map(Vec::len).collect::<Vec<_>>(),
        [0, 0, 0, 1]
    );
    assert_eq!(
        e.end.as_ref().unwrap().sse.as_ref().unwrap().empty_blocks,
        1
    );
}

#[test]
fn sse_event_marks_are_the_packet_with_the_blank_line() {
    let (run, frames) = sse_stream(&[
        b"data: a\n",
        b"\n",
        b"data: b\n\nda",
        b"ta: c\r",
        b"\n\r",
        b"\n",
    ]);
    let e = run.only();
    let got: Vec<u64> = e.events.iter().map(|ev| ev.mark.frame.frame).collect();
    assert_eq!(got, [frames[1], frames[2], frames[4]]);
    assert_eq!(e.events[2].mark.time, mark_of(frames[4]).time);
}

#[test]
fn sse_unterminated_event_is_discarded_at_the_end() {
    let (run, _) = sse_stream(&[b"data: a\n\ndata: half"]);
    let e = run.only();
    assert_eq!(datas(e), ["a"]);
    assert!(e.end.as_ref().unwrap().sse.as_ref().unwrap().unterminated);
}

// ------------------------------------------------------------------------------------------------
// Chunked framing
// ------------------------------------------------------------------------------------------------

#[test]
fn chunked_sse_with_extensions_and_trailers_then_next_response() {
    let (payload, _) = sse_payload(&[
        ("id: 41", "\r\n"),
        (
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}",
            "\r\n",
        ),
        ("", "\r\n"),
        ("id: 42", "\r\n"),
        (
            "data: {\"jsonrpc\":\"2.0\",\"id\":19,\"result\":{}}",
            "\r\n",
        ),
        ("", "\r\n"),
    ]);
    for sizes in [&[1usize][..], &[3, 9], &[17], &[1000]] {
        let (wire, _) = chunked(
            &payload,
            sizes,
            "0;last=1\r\nX-Checksum: abc\r\nX-Other: 2\r\n\r\n",
        );
        let mut d = Driver::conn0();
        d.c2s(post(
            "/mcp",
            r#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"x"}}"#,
        ));
        d.c2s(post("/mcp", INITIALIZED));
        let mut s2c = SSE_CHUNKED.as_bytes().to_vec();
        s2c.extend_from_slice(&wire);
        s2c.extend_from_slice(ACCEPTED.as_bytes());
        for p in s2c.chunks(13) {
            d.s2c(p);
        }
        let run = d.finish();
        let e = run.ex(0, 0);
        assert_eq!(e.events.len(), 2, "sizes {sizes:?}: {}", run.dump());
        assert_eq!(e.events[1].id.as_deref(), Some("42"));
        assert_eq!(
            rpc(&e.event_messages[1]),
            vec![(Kind::Response, num("19"), None)]
        );
        let end = e.end.as_ref().unwrap();
        assert_eq!(end.outcome, Outcome::Complete);
        assert!(end.body.chunked);
        assert_eq!(end.body.wire_bytes, payload.len() as u64, "de-chunked size");
        let next = run.ex(0, 1);
        assert_eq!(next.response.as_ref().unwrap().status, 202);
        assert_eq!(next.end.as_ref().unwrap().outcome, Outcome::Complete);
        assert!(run.anomalies.is_empty(), "{}", run.dump());
    }
}

#[test]
fn chunked_json_with_bare_lf_framing() {
    let mut d = Driver::conn0();
    d.c2s(post("/mcp", r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#));
    d.s2c("HTTP/1.1 200 OK\nContent-Type: application/json\nTransfer-Encoding: chunked\n\n");
    let body = r#"{"jsonrpc":"2.0","id":5,"result":{}}"#;
    let (a, rest) = body.split_at(5);
    let (b, c) = rest.split_at(rest.len() - 1);
    d.s2c(format!(
        "{:x}\n{a}\n{:x};x=y\n{b}\n{:x}\n{c}\n0\n\n",
        a.len(),
        b.len(),
        c.len()
    ));
    let run = d.finish();
    let e = run.only();
    assert_eq!(
        e.end.as_ref().unwrap().body.data,
        br#"{"jsonrpc":"2.0","id":5,"result":{}}"#
    );
    assert_eq!(
        rpc(&e.response_messages),
        vec![(Kind::Response, num("5"), None)]
    );
}

// ------------------------------------------------------------------------------------------------
// Message framing, pairing, no-body cases
// ------------------------------------------------------------------------------------------------

fn statuses(run: &Run) -> Vec<(u32, String, Option<u16>)> {
    let mut v: Vec<(u32, String, Option<u16>)> = run
        .exchanges
        .iter()
        .map(|e| {
            (
                e.id.index,
                e.request
                    .as_ref()
                    .map(|r| format!("{} {}", r.method, r.target))
                    .unwrap_or_default(),
                e.response.as_ref().map(|h| h.status),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn pipelined_requests_are_paired_in_order() {
    let requests = format!(
        "{}{}DELETE /c HTTP/1.1\r\nHost: x\r\n\r\n",
        get("/a"),
        post("/b", r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
    );
    let responses = format!(
        "{}HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        json_response("200 OK", r#"{"a":1}"#)
    );
    let expected = vec![
        (0, "GET /a".to_string(), Some(200)),
        (1, "POST /b".to_string(), Some(201)),
        (2, "DELETE /c".to_string(), Some(204)),
    ];
    // All three requests in one packet, then all three responses in one.
    let mut d = Driver::conn0();
    d.c2s(&requests);
    d.s2c(&responses);
    let run = d.finish();
    assert_eq!(statuses(&run), expected, "{}", run.dump());
    assert_eq!(run.ex(0, 0).end.as_ref().unwrap().body.data, br#"{"a":1}"#);
    assert_eq!(run.ex(0, 1).end.as_ref().unwrap().body.data, b"{}");
    assert!(
        run.exchanges
            .iter()
            .all(|e| e.end.as_ref().unwrap().outcome == Outcome::Complete)
    );
    // A byte at a time, each response after all the requests.
    let mut d = Driver::conn0();
    for b in requests.as_bytes().chunks(1) {
        d.c2s(b);
    }
    for b in responses.as_bytes().chunks(1) {
        d.s2c(b);
    }
    assert_eq!(statuses(&d.finish()), expected);
}

#[test]
fn responses_captured_before_their_requests_wait_for_them() {
    // `tcpdump -i any` on two interfaces: the server's segments were written first. Their ACKs
    // say the server had the requests; the HEAD's response is framed as a HEAD's (no body).
    let a = get("/a");
    let head = "HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut d = Driver::conn0();
    let to_a = a.len() as u64;
    d.data_acking(0, S2C, json_response("200 OK", "{}").as_bytes(), Some(to_a));
    d.data_acking(
        0,
        S2C,
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
        Some(to_a + head.len() as u64),
    );
    d.c2s(&a);
    d.c2s(head);
    let run = d.finish();
    assert_eq!(
        statuses(&run),
        vec![
            (0, "GET /a".to_string(), Some(200)),
            (1, "HEAD /b".to_string(), Some(200)),
        ],
        "{}",
        run.dump()
    );
    assert_eq!(
        run.ex(0, 1).end.as_ref().unwrap().outcome,
        Outcome::Complete
    );
    assert_eq!(
        (
            run.stats.responses_held,
            run.stats.held_paired,
            run.stats.held_released_early
        ),
        (2, 2, 0)
    );
}

#[test]
fn response_without_ack_before_any_request() {
    // No ACK to go by (a HAR, a log, a capture that cannot tell): a response before any request
    // answers one the capture missed, and the request that follows is a new one.
    for acked in [None, Some(0)] {
        let mut d = Driver::conn0();
        d.data_acking(0, S2C, ACCEPTED.as_bytes(), acked);
        d.c2s(post("/mcp", INIT));
        let run = d.finish();
        let orphan = run.ex(0, 0);
        assert!(orphan.request.is_none() && orphan.response.is_some());
        let late = run.ex(0, 1);
        assert!(late.request.is_some() && late.no_response.is_some());
        assert_eq!(run.stats.responses_held, 0, "acked {acked:?}");
    }
}

#[test]
fn a_held_response_whose_request_never_comes_is_given_up() {
    // The ACK covers request bytes the capture never shows: after 2 s of capture time, or when
    // the connection ends, the response is parsed as an orphan (and counted).
    let mut d = Driver::conn0();
    d.data_acking(0, S2C, ACCEPTED.as_bytes(), Some(300));
    d.step_ns = 3_000_000_000;
    d.data_acking(0, S2C, ACCEPTED.as_bytes(), Some(300));
    let run = d.finish();
    assert_eq!(run.exchanges.len(), 2, "{}", run.dump());
    assert!(run.exchanges.iter().all(|e| e.request.is_none()));
    assert_eq!(
        (run.stats.responses_held, run.stats.held_released_early),
        (1, 1),
        "the second is not held again for the same bytes"
    );
    let mut d = Driver::conn0();
    d.data_acking(0, S2C, ACCEPTED.as_bytes(), Some(300));
    d.fin(0, S2C);
    d.close(0, CloseReason::Fin);
    let run = d.finish();
    assert_eq!(run.only().end.as_ref().unwrap().outcome, Outcome::Complete);
    assert_eq!(run.stats.held_released_early, 1);
}

#[test]
fn a_hold_is_bounded() {
    // An endless response held for a request that does not come: given up past 256 KiB.
    let mut d = Driver::conn0();
    d.data_acking(0, S2C, SSE_CLOSE_DELIMITED.as_bytes(), Some(10));
    let event = format!("data: {}\n\n", "x".repeat(1000));
    for _ in 0..300 {
        d.data_acking(0, S2C, event.as_bytes(), Some(10));
    }
    let run = d.finish();
    assert_eq!(run.only().events.len(), 300);
    assert_eq!(run.stats.held_released_early, 1);
}

#[test]
fn head_response_has_no_body() {
    let mut d = Driver::conn0();
    d.c2s(format!(
        "HEAD /big HTTP/1.1\r\nHost: x\r\n\r\n{}",
        get("/next")
    ));
    d.s2c("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n");
    d.s2c(json_response("200 OK", "ok"));
    let run = d.finish();
    assert_eq!(
        statuses(&run),
        vec![
            (0, "HEAD /big".into(), Some(200)),
            (1, "GET /next".into(), Some(200))
        ]
    );
    let head = run.ex(0, 0).end.as_ref().unwrap();
    assert_eq!(head.outcome, Outcome::Complete);
    assert_eq!(head.body.wire_bytes, 0);
    assert_eq!(run.ex(0, 1).end.as_ref().unwrap().body.data, b"ok");
    assert!(run.anomalies.is_empty());
}

#[test]
fn no_body_for_204_and_304() {
    let mut d = Driver::conn0();
    d.c2s(format!("{}{}{}", get("/a"), get("/b"), get("/c")));
    d.s2c("HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\n\r\n");
    d.s2c("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 1234\r\n\r\n");
    d.s2c(json_response("200 OK", "{}"));
    let run = d.finish();
    assert_eq!(
        statuses(&run),
        vec![
            (0, "GET /a".into(), Some(204)),
            (1, "GET /b".into(), Some(304)),
            (2, "GET /c".into(), Some(200)),
        ]
    );
    assert!(
        run.exchanges
            .iter()
            .all(|e| e.end.as_ref().unwrap().outcome == Outcome::Complete)
    );
    assert_eq!(run.ex(0, 2).end.as_ref().unwrap().body.data, b"{}");
}

#[test]
fn interim_100_continue_and_103_before_the_final_response() {
    let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"big"}}"#;
    let mut d = Driver::conn0();
    d.c2s(format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    d.s2c("HTTP/1.1 100 Continue\r\n\r\n");
    d.c2s(body);
    d.s2c("HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n");
    d.s2c(json_response(
        "200 OK",
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
    ));
    let run = d.finish();
    let e = run.only();
    let head = e.response.as_ref().unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.interim, vec![100, 103]);
    assert_eq!(e.request.as_ref().unwrap().body.data, body.as_bytes());
    assert_eq!(
        rpc(&e.response_messages),
        vec![(Kind::Response, num("3"), None)]
    );
    assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::Complete);
}

#[test]
fn transfer_encoding_and_content_length_is_an_anomaly_chunked_wins() {
    let mut d = Driver::conn0();
    d.c2s(format!("{}{}", get("/a"), get("/b")));
    d.s2c("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    d.s2c(json_response("200 OK", "{}"));
    let run = d.finish();
    assert!(
        run.has_anomaly(
            AnomalyKind::ContentLengthAndTransferEncoding,
            "both Transfer-Encoding and Content-Length"
        ),
        "{}",
        run.dump()
    );
    assert_eq!(run.stats.anomalies, 1);
    assert_eq!(run.ex(0, 0).end.as_ref().unwrap().body.data, b"hello");
    assert_eq!(run.ex(0, 1).response.as_ref().unwrap().status, 200);
    assert_eq!(run.ex(0, 1).end.as_ref().unwrap().body.data, b"{}");
}

#[test]
fn close_delimited_response_ended_by_server_fin() {
    let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let mut d = Driver::conn0();
    d.c2s("POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    d.s2c("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n");
    d.s2c(&body[..10]);
    d.s2c(&body[10..]);
    d.fin(0, S2C);
    d.fin(0, C2S);
    d.close(0, CloseReason::Fin);
    let run = d.finish();
    let e = run.only();
    assert_eq!(e.request.as_ref().unwrap().version, 0);
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Complete);
    assert_eq!(end.body.data, body.as_bytes());
    assert_eq!(
        rpc(&e.response_messages),
        vec![(Kind::Response, num("1"), None)]
    );
    assert!(e.no_response.is_none());
}

#[test]
fn close_delimited_response_ended_by_reset_is_not_complete() {
    let mut d = Driver::conn0();
    d.c2s(get("/x"));
    d.s2c("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\"");
    d.close(0, CloseReason::Reset { by: S2C });
    let run = d.finish();
    let end = run.only().end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Reset);
    assert_eq!(end.closed_by, Some(S2C));
}

#[test]
fn connection_close() {
    let mut d = Driver::conn0();
    d.c2s("GET /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    d.s2c("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    d.fin(0, S2C);
    d.fin(0, C2S);
    d.close(0, CloseReason::Fin);
    // And on a second connection, `Connection: close` without a length: read until the FIN.
    d.open(1, "10.0.0.1:40001", SERVER);
    d.data(1, C2S, b"GET /mcp HTTP/1.1\r\nConnection: close\r\n\r\n");
    d.data(
        1,
        S2C,
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nall of it",
    );
    d.fin(1, S2C);
    d.fin(1, C2S);
    d.close(1, CloseReason::Fin);
    let run = d.finish();
    assert_eq!(run.exchanges.len(), 2);
    for e in &run.exchanges {
        assert!(
            e.request
                .as_ref()
                .unwrap()
                .headers
                .has_token("connection", "close")
        );
        assert!(
            e.response
                .as_ref()
                .unwrap()
                .headers
                .has_token("Connection", "CLOSE")
        );
        assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::Complete);
        assert!(e.no_response.is_none());
    }
    assert_eq!(run.ex(0, 0).end.as_ref().unwrap().body.data, b"{}");
    assert_eq!(run.ex(1, 0).end.as_ref().unwrap().body.data, b"all of it");
    assert_eq!(run.stats.connections_http, 2);
}

#[test]
fn headers_keep_order_and_case_lookups_ignore_case() {
    let mut d = Driver::conn0();
    d.c2s("GET /mcp?x=1&y=2 HTTP/1.1\r\nhost: a\r\nX-Dup: 1\r\nACCEPT: text/event-stream\r\nx-dup: 2\r\n\r\n");
    d.s2c("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    let run = d.finish();
    let r = run.only().request.as_ref().unwrap();
    assert_eq!(r.target, "/mcp?x=1&y=2");
    let names: Vec<&str> = r.headers.0.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["host", "X-Dup", "ACCEPT", "x-dup"]);
    assert_eq!(r.headers.get("Accept"), Some("text/event-stream"));
    assert_eq!(r.headers.get_all("X-DUP").collect::<Vec<_>>(), ["1", "2"]);
    assert_eq!(run.only().response.as_ref().unwrap().reason, "Not Found");
}

// ------------------------------------------------------------------------------------------------
// Capture marks: first and last byte of each message
// ------------------------------------------------------------------------------------------------

#[test]
fn marks_of_messages_in_one_packet_each() {
    let mut d = Driver::conn0();
    let f_req = d.c2s(post("/mcp", INIT));
    let f_head = d.s2c(SSE_CHUNKED);
    let f_ev = d.s2c("7\r\nid: 1\n\n\r\n0\r\n\r\n");
    let run = d.finish();
    let e = run.only();
    let r = e.request.as_ref().unwrap();
    assert_eq!((r.first.frame.frame, r.last.frame.frame), (f_req, f_req));
    assert_eq!(e.response.as_ref().unwrap().first.frame.frame, f_head);
    assert_eq!(e.end.as_ref().unwrap().last.frame.frame, f_ev);
}

#[test]
fn first_mark_is_the_packet_of_the_first_byte() {
    let mut d = Driver::conn0();
    let f_req = d.c2s("POST /m");
    d.c2s(&post("/mcp", INIT)["POST /m".len()..]);
    let f_resp = d.s2c("HTTP/1.1 2");
    d.s2c("00 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    let run = d.finish();
    let e = run.only();
    assert_eq!(e.request.as_ref().unwrap().first.frame.frame, f_req);
    assert_eq!(e.response.as_ref().unwrap().first.frame.frame, f_resp);
}

#[test]
fn last_mark_is_the_packet_that_ended_the_message() {
    let mut d = Driver::conn0();
    d.c2s("GET /mcp HTTP/1.1\r\nHost: x\r\n");
    let f_get_end = d.c2s("Accept: text/event-stream\r\n\r\n");
    d.s2c(SSE_CHUNKED);
    let event = "data: {\"a\":1}\n\n";
    d.s2c(format!("{:x}\r\n{event}\r\n", event.len()));
    // The stream is closed by its last chunk a second later, in a packet of its own.
    let f_last_chunk = d.s2c("0\r\n\r\n");
    let run = d.finish();
    let e = run.only();
    assert_eq!(
        (
            e.request.as_ref().unwrap().last.frame.frame,
            e.end.as_ref().unwrap().last.frame.frame
        ),
        (f_get_end, f_last_chunk),
        "(request last byte, response last byte)"
    );
}

// ------------------------------------------------------------------------------------------------
// Capture gaps
// ------------------------------------------------------------------------------------------------

#[test]
fn gap_in_a_content_length_body_keeps_the_framing() {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"text":"{}"}}}}"#,
        "x".repeat(60)
    );
    let mut d = Driver::conn0();
    d.c2s(format!(
        "{}{}",
        post("/mcp", INIT),
        post("/mcp", INITIALIZED)
    ));
    d.s2c(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        &body[..30]
    ));
    d.gap(0, S2C, 40);
    d.s2c(&body[70..]);
    d.s2c(ACCEPTED);
    let run = d.finish();
    let damaged = run.ex(0, 0);
    let end = damaged.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Gap);
    assert!(end.body.decode_error.is_some(), "the body is flagged");
    // Nothing after the hole is glued to what came before it.
    assert_eq!(end.body.data, &body.as_bytes()[..30]);
    let next = run.ex(0, 1);
    assert_eq!(next.response.as_ref().unwrap().status, 202);
    assert_eq!(next.end.as_ref().unwrap().outcome, Outcome::Complete);
    assert_eq!(run.stats.skipped_bytes, 0);
}

#[test]
fn gap_inside_a_chunk_keeps_the_framing() {
    let mut d = Driver::conn0();
    d.c2s(format!("{}{}", get("/a"), get("/b")));
    d.s2c("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n0123456789");
    d.gap(0, S2C, 20);
    d.s2c("0123456789012345678901234567890123\r\n3\r\nend\r\n0\r\n\r\n");
    d.s2c(json_response("200 OK", "{}"));
    let run = d.finish();
    let end = run.ex(0, 0).end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Gap);
    assert_eq!(end.body.data, b"0123456789");
    let next = run.ex(0, 1);
    assert_eq!(next.response.as_ref().unwrap().status, 200);
    assert_eq!(next.end.as_ref().unwrap().outcome, Outcome::Complete);
    assert_eq!(next.end.as_ref().unwrap().body.data, b"{}");
}

/// A gap that swallows the end of a chunk and the next chunk-size line: the chunked framing is
/// lost, the response is cut there, and parsing picks up at the next status line.
fn chunk_size_line_lost() -> Run {
    let mut d = Driver::conn0();
    d.c2s(format!("{}{}", get("/a"), get("/b")));
    d.s2c("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\na\r\n01234");
    d.gap(0, S2C, 12); // "56789\r\n10\r\nab"
    d.s2c("cdefghijklmnop\r\n0\r\n\r\n");
    d.s2c(json_response("201 Created", "{}"));
    d.finish()
}

#[test]
fn gap_swallowing_a_chunk_size_line_resyncs_at_the_next_status_line() {
    let run = chunk_size_line_lost();
    let end = run.ex(0, 0).end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Gap);
    assert_eq!(end.body.data, b"01234");
    let next = run.ex(0, 1);
    assert_eq!(next.request.as_ref().unwrap().target, "/b");
    assert_eq!(next.response.as_ref().unwrap().status, 201);
    assert_eq!(next.end.as_ref().unwrap().body.data, b"{}");
}

#[test]
fn lost_chunk_framing_rescans_the_rest_of_the_packet() {
    // As above, but the tail of the damaged body and the next response share a packet.
    let mut d = Driver::conn0();
    d.c2s(format!("{}{}", get("/a"), get("/b")));
    d.s2c("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\na\r\n01234");
    d.gap(0, S2C, 13);
    d.s2c(format!(
        "cdefghijklmnop\r\n0\r\n\r\n{}",
        json_response("201 Created", "{}")
    ));
    let run = d.finish();
    assert_eq!(run.ex(0, 0).end.as_ref().unwrap().outcome, Outcome::Gap);
    let next = run.ex(0, 1);
    assert_eq!(
        next.response.as_ref().map(|h| h.status),
        Some(201),
        "{}",
        run.dump()
    );
    assert!(
        run.stats.skipped_bytes > 0,
        "the tail of the lost chunk is skipped and counted"
    );
}

#[test]
fn gap_in_an_sse_stream_inside_a_chunk() {
    let before = "id: 2\ndata: two\n\nid: 3\ndata: par";
    let lost = "tial-3-xyz";
    let after = "tial tail of 3\n\nid: 4\ndata: four\n\nid: 5\r\n";
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c(SSE_CHUNKED);
    let first = "id: 1\ndata: one\n\n";
    d.s2c(format!("{:x}\r\n{first}\r\n", first.len()));
    d.s2c(format!(
        "{:x}\r\n{before}",
        before.len() + lost.len() + after.len()
    ));
    d.gap(0, S2C, lost.len() as u64);
    d.s2c(format!("{after}\r\n"));
    d.s2c("c\r\ndata: five\r\r\r\n0\r\n\r\n");
    let run = d.finish();
    let e = run.only();
    let got: Vec<(Option<String>, String, bool)> = e
        .events
        .iter()
        .map(|ev| {
            (
                ev.id.as_deref().map(str::to_string),
                ev.data.clone(),
                ev.after_gap,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("1".into()), "one".into(), false),
            (Some("2".into()), "two".into(), false),
            (Some("4".into()), "four".into(), true),
            (Some("5".into()), "five".into(), false),
        ],
        "{}",
        run.dump()
    );
    assert!(
        e.events
            .iter()
            .all(|ev| !ev.data.contains("par") && !ev.data.contains("tail")),
        "no stitching"
    );
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Gap);
    assert_eq!(end.sse.as_ref().unwrap().dropped_at_gaps, 1);
    assert!(run.anomalies.is_empty(), "{}", run.dump());
}

#[test]
fn sse_gap_ending_just_before_a_line_end_invents_no_event() {
    // Event 3 is `data: {..response..}` then `id: 3`. The capture lost the data line but its
    // final LF: what follows the gap is "\nid: 3\n\n". That LF ends the cut line; it is not a
    // blank line. Taking it as one ends the resynchronisation at once and reports event 3 as a
    // priming event (an id with no data), which it never was: its response was lost.
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c(SSE_CLOSE_DELIMITED);
    d.s2c("data: one\nid: 1\n\nda");
    d.gap(0, S2C, 40); // ta: {"jsonrpc":"2.0","id":9,"result":{}}
    d.s2c("\nid: 3\n\ndata: four\nid: 4\n\n");
    let run = d.finish();
    let e = run.only();
    let got: Vec<(Option<String>, bool, bool)> = e
        .events
        .iter()
        .map(|ev| {
            (
                ev.id.as_deref().map(str::to_string),
                ev.priming,
                ev.after_gap,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("1".into()), false, false),
            (Some("4".into()), false, true)
        ],
        "{}",
        run.dump()
    );
}

#[test]
fn gap_in_a_close_delimited_sse_stream() {
    let mut d = Driver::conn0();
    d.c2s(get("/sse"));
    d.s2c(SSE_CLOSE_DELIMITED);
    d.s2c("event: endpoint\ndata: /messages/?session_id=1\n\ndata: {\"jsonrpc\":\"2.0\",");
    d.gap(0, S2C, 500);
    d.s2c("\"id\":0,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n");
    let run = d.finish();
    let e = run.only();
    assert_eq!(
        datas(e),
        [
            "/messages/?session_id=1",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        ]
    );
    assert!(e.events[1].after_gap);
    assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::CutByCaptureEnd);
    assert_eq!(
        rpc(&e.event_messages[1]),
        vec![(Kind::Response, num("1"), None)]
    );
}

#[test]
fn gap_of_a_whole_chunk_in_an_sse_stream() {
    // Servers flush one event per chunk, and a lost packet is typically one whole chunk: the
    // gap starts at a chunk-size line, so it never fits "inside the current chunk".
    let ev = |n: u32| {
        let p = format!(
            "id: {n}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progress\":{n}}}}}\n\n"
        );
        format!("{:x}\r\n{p}\r\n", p.len())
    };
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c(SSE_CHUNKED);
    d.s2c(ev(1));
    d.s2c(ev(2));
    d.gap(0, S2C, ev(3).len() as u64);
    d.s2c(ev(4));
    d.s2c(ev(5));
    let run = d.finish();
    let e = run.only();
    let ids: Vec<Option<String>> = e
        .events
        .iter()
        .map(|ev| ev.id.as_deref().map(str::to_string))
        .collect();
    assert_eq!(
        ids,
        [
            Some("1".into()),
            Some("2".into()),
            Some("4".into()),
            Some("5".into())
        ],
        "{}",
        run.dump()
    );
    assert!(e.events[2].after_gap);
}

#[test]
fn gap_in_the_request_direction() {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"x","arguments":{{"s":"{}"}}}}}}"#,
        "y".repeat(50)
    );
    let mut d = Driver::conn0();
    let req = post("/mcp", &body);
    let cut = req.len() - body.len() + 20;
    d.c2s(&req[..cut]);
    d.gap(0, C2S, 30);
    d.c2s(&req[cut + 30..]);
    d.c2s(get("/next"));
    d.s2c(json_response(
        "200 OK",
        r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
    ));
    d.s2c(json_response("200 OK", "{}"));
    let run = d.finish();
    let r = run.ex(0, 0).request.as_ref().unwrap();
    assert_eq!(r.outcome, Outcome::Gap);
    assert_eq!(
        r.body.data,
        &body.as_bytes()[..20],
        "nothing glued across the hole"
    );
    assert_eq!(
        rpc(&run.ex(0, 0).response_messages),
        vec![(Kind::Response, num("7"), None)]
    );
    let next = run.ex(0, 1);
    assert_eq!(next.request.as_ref().unwrap().target, "/next");
    assert_eq!(next.request.as_ref().unwrap().outcome, Outcome::Complete);
    assert_eq!(next.response.as_ref().unwrap().status, 200);
}

#[test]
fn gap_in_request_headers_keeps_what_survives() {
    let mut d = Driver::conn0();
    d.c2s("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Ty");
    d.gap(0, C2S, 25);
    d.c2s(format!("\r\n{}", get("/after")));
    let run = d.finish();
    assert!(
        run.has_anomaly(
            AnomalyKind::HeadCutByGap,
            "request head cut by a 25-byte capture gap: its start line and 1 whole header lines kept"
        ),
        "{}",
        run.dump()
    );
    let cut = run.ex(0, 0).request.as_ref().unwrap();
    assert_eq!((cut.method.as_str(), cut.target.as_str()), ("POST", "/mcp"));
    assert_eq!(cut.headers.0, [("Host".to_string(), "x".to_string())]);
    assert!(!cut.head_complete && cut.body.unknown);
    assert_eq!(cut.outcome, Outcome::Gap);
    let after = run.ex(0, 1).request.as_ref().unwrap();
    assert_eq!(after.target, "/after");
    assert!(after.head_complete);
    assert_eq!(
        (run.stats.heads_cut, run.stats.heads_cut_by_snaplen),
        (1, 0)
    );
    // With no whole start line, nothing survives.
    let mut d = Driver::conn0();
    d.c2s("POST /mcp HTTP/1.1\r\nHost: x\r\n");
    d.gap(0, C2S, 25);
    let run = d.finish();
    assert_eq!(run.exchanges.len(), 1, "the start line was whole");
    let mut d = Driver::conn0();
    d.c2s("POST /mcp HT");
    d.gap(0, C2S, 25);
    let run = d.finish();
    assert!(run.exchanges.is_empty());
}

#[test]
fn resync_finds_a_request_glued_to_the_previous_body() {
    // The end of request 1's head is lost (what survives of it is reported). Its JSON body has
    // no final newline, so the next request line follows it on the same "line".
    let mut d = Driver::conn0();
    d.c2s("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n");
    d.gap(0, C2S, 22); // "Content-Length: 41\r\n\r\n"
    d.c2s(format!(
        "{INITIALIZED}{}{}",
        post("/mcp", r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
        get("/mcp")
    ));
    let run = d.finish();
    let targets: Vec<String> = run
        .exchanges
        .iter()
        .filter_map(|e| {
            e.request
                .as_ref()
                .map(|r| format!("{} {}", r.method, r.target))
        })
        .collect();
    assert_eq!(
        targets,
        ["POST /mcp", "POST /mcp", "GET /mcp"],
        "{}",
        run.dump()
    );
    assert!(!run.ex(0, 0).request.as_ref().unwrap().head_complete);
    assert!(run.ex(0, 1).request.as_ref().unwrap().head_complete);
}

// ------------------------------------------------------------------------------------------------
// How connections end
// ------------------------------------------------------------------------------------------------

#[test]
fn stream_cut_by_capture_end_keeps_its_events() {
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c(SSE_CHUNKED);
    for n in 1..=5 {
        let p = format!(
            "id: {n}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}}\n\n"
        );
        d.s2c(format!("{:x}\r\n{p}\r\n", p.len()));
    }
    d.s2c("20\r\nid: 6\ndata: {\"js");
    let run = d.finish();
    let e = run.only();
    assert_eq!(e.events.len(), 5);
    assert_eq!(&*e.events[4].last_event_id, "5");
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::CutByCaptureEnd);
    assert_eq!(end.closed_by, None);
    assert!(end.sse.as_ref().unwrap().unterminated);
}

#[test]
fn request_never_answered_says_who_closed() {
    // The client gives up (FIN first), then the server closes too.
    let mut d = Driver::conn0();
    d.c2s(post(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}"#,
    ));
    let f_fin = d.fin(0, C2S);
    d.fin(0, S2C);
    d.close(0, CloseReason::Fin);
    // A request still waiting when the capture ended.
    d.open(1, "10.0.0.1:40001", SERVER);
    d.data(1, C2S, post("/mcp", INIT).as_bytes());
    let run = d.finish();
    let e = run.ex(0, 0);
    assert!(e.response.is_none() && e.end.is_none());
    let (outcome, by, mark) = e.no_response.unwrap();
    assert_eq!((outcome, by), (Outcome::ClosedEarly, Some(C2S)));
    assert!(mark.frame.frame >= f_fin);
    assert_eq!(
        rpc(&e.request_messages),
        vec![(Kind::Request, num("7"), Some("tools/call".into()))]
    );
    let (outcome, by, _) = run.ex(1, 0).no_response.unwrap();
    assert_eq!((outcome, by), (Outcome::CutByCaptureEnd, None));
}

#[test]
fn reset_ends_the_stream_and_the_unanswered_request() {
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c(SSE_CLOSE_DELIMITED);
    d.s2c("id: 1\ndata: {}\n\nid: 2\ndata: {");
    d.open(1, "10.0.0.1:40001", SERVER);
    d.data(1, C2S, post("/mcp", INIT).as_bytes());
    d.close(0, CloseReason::Reset { by: C2S });
    d.close(1, CloseReason::Reset { by: S2C });
    let run = d.finish();
    let e = run.ex(0, 0);
    assert_eq!(e.events.len(), 1);
    let end = e.end.as_ref().unwrap();
    assert_eq!((end.outcome, end.closed_by), (Outcome::Reset, Some(C2S)));
    let (outcome, by, _) = run.ex(1, 0).no_response.unwrap();
    assert_eq!((outcome, by), (Outcome::Reset, Some(S2C)));
}

#[test]
fn stream_closed_by_the_client_says_so() {
    // The client gives up on an event stream (FIN), the server answers with its own FIN: the
    // client closed the connection, as `no_response` would say for an unanswered request.
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c(SSE_CHUNKED);
    d.s2c("7\r\nid: 1\n\n\r\n");
    d.fin(0, C2S);
    d.fin(0, S2C);
    d.close(0, CloseReason::Fin);
    let run = d.finish();
    let end = run.only().end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::ClosedEarly);
    assert_eq!(end.closed_by, Some(C2S));
}

#[test]
fn request_cut_mid_body_by_fin() {
    let mut d = Driver::conn0();
    let req = post("/mcp", INIT);
    d.c2s(&req[..req.len() - 10]);
    d.fin(0, C2S);
    d.fin(0, S2C);
    d.close(0, CloseReason::Fin);
    let run = d.finish();
    let e = run.only();
    assert_eq!(e.request.as_ref().unwrap().outcome, Outcome::ClosedEarly);
    assert!(e.no_response.is_some());
}

// ------------------------------------------------------------------------------------------------
// JSON-RPC payloads
// ------------------------------------------------------------------------------------------------

#[test]
fn jsonrpc_batches() {
    let mut d = Driver::conn0();
    d.c2s(post(
        "/mcp",
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
    ));
    d.s2c(json_response(
        "200 OK",
        r#"[{"jsonrpc":"2.0","id":1,"result":{"tools":[]}},{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"Method not found"}}]"#,
    ));
    let run = d.finish();
    let e = run.only();
    assert_eq!(
        rpc(&e.request_messages),
        vec![
            (Kind::Request, num("1"), Some("tools/list".into())),
            (Kind::Request, string_id("1"), Some("ping".into())),
            (
                Kind::Notification,
                None,
                Some("notifications/initialized".into())
            ),
        ]
    );
    assert_eq!(
        rpc(&e.response_messages),
        vec![
            (Kind::Response, num("1"), None),
            (Kind::Error, string_id("1"), None)
        ]
    );
    assert_eq!(e.response_messages[1].error_code(), Some(-32601));
    assert_eq!(
        e.response_messages[1].error_message(),
        Some("Method not found")
    );
}

#[test]
fn invalid_payloads_are_kept_as_malformed() {
    let mut d = Driver::conn0();
    d.c2s(post("/mcp", r#"{"jsonrpc":"2.0","id":3,"method":"#));
    d.c2s(post("/mcp", r#"{"id":4,"method":"ping"}"#));
    d.s2c(format!("{SSE_CLOSE_DELIMITED}data: not json\n\ndata: [1,\n\ndata: {{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{}}}}\n\n"));
    d.close(0, CloseReason::Fin);
    let run = d.finish();
    let e = run.ex(0, 0);
    assert_eq!(e.request_messages.len(), 1);
    assert_eq!(e.request_messages[0].kind, Kind::Malformed);
    assert!(
        e.request_messages[0]
            .malformed()
            .unwrap()
            .contains("invalid JSON")
    );
    let kinds: Vec<Vec<Kind>> = e
        .event_messages
        .iter()
        .map(|m| m.iter().map(|x| x.kind).collect())
        .collect();
    assert_eq!(
        kinds,
        vec![
            vec![Kind::Malformed],
            vec![Kind::Malformed],
            vec![Kind::Response]
        ]
    );
    let e = run.ex(0, 1);
    assert_eq!(e.request_messages[0].kind, Kind::Malformed);
    assert!(
        e.request_messages[0]
            .malformed()
            .unwrap()
            .contains("no jsonrpc")
    );
    assert!(e.no_response.is_some());
}

#[test]
fn ids_keep_their_json_type() {
    let mut d = Driver::conn0();
    d.c2s(post("/mcp", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#));
    d.c2s(post(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#,
    ));
    d.s2c(json_response(
        "200 OK",
        r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
    ));
    d.s2c(json_response(
        "200 OK",
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
    ));
    let run = d.finish();
    let a = &run.ex(0, 0).request_messages[0];
    let b = &run.ex(0, 1).request_messages[0];
    assert_eq!(a.id, num("1"));
    assert_eq!(b.id, string_id("1"));
    assert_ne!(a.id, b.id);
    assert_eq!(a.id.as_ref().unwrap().to_value(), serde_json::json!(1));
    assert_eq!(b.id.as_ref().unwrap().to_value(), serde_json::json!("1"));
    assert_eq!(run.ex(0, 0).response_messages[0].id, string_id("1"));
    assert_eq!(run.ex(0, 1).response_messages[0].id, num("1"));
}

#[test]
fn gzip_and_deflate_bodies_are_decoded_undecodable_reported() {
    let json = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zl.write_all(json.as_bytes()).unwrap();
    let deflate = zl.finish().unwrap();
    let gz = gzip(json.as_bytes());
    let mut d = Driver::conn0();
    d.c2s(format!("{}{}{}", get("/a"), get("/b"), get("/c")));
    for (enc, body) in [
        ("gzip", &gz),
        ("deflate", &deflate),
        ("gzip", &b"not gzip at all".to_vec()),
    ] {
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: {enc}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        for p in r.chunks(5) {
            d.s2c(p);
        }
    }
    let run = d.finish();
    for i in 0..2 {
        let e = run.ex(0, i);
        assert_eq!(e.end.as_ref().unwrap().body.data, json.as_bytes());
        assert_eq!(
            rpc(&e.response_messages),
            vec![(Kind::Response, num("1"), None)]
        );
    }
    let bad = run.ex(0, 2).end.as_ref().unwrap();
    assert!(bad.body.decode_error.is_some());
    assert!(
        run.anomalies
            .iter()
            .any(|a| a.3 == AnomalyKind::BodyNotDecodable && a.4.contains("decode")),
        "{}",
        run.dump()
    );
}

#[test]
fn gzip_event_stream_events_come_as_their_packets_arrive() {
    // A compressing proxy in front of an MCP server, flushing after each event.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut parts = Vec::new();
    for n in 1..=3 {
        write!(enc, "id: {n}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progress\":{n}}}}}\n\n").unwrap();
        enc.flush().unwrap();
        parts.push(std::mem::take(enc.get_mut()));
    }
    let mut d = Driver::conn0();
    d.c2s(get("/mcp"));
    d.s2c("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n");
    let mut frames = Vec::new();
    for p in &parts {
        let mut chunk = format!("{:x}\r\n", p.len()).into_bytes();
        chunk.extend_from_slice(p);
        chunk.extend_from_slice(b"\r\n");
        frames.push(d.s2c(chunk));
    }
    let run = d.finish();
    let e = run.only();
    assert_eq!(e.events.len(), 3, "{}", run.dump());
    assert!(e.response.as_ref().unwrap().event_stream);
    let got: Vec<u64> = e.events.iter().map(|ev| ev.mark.frame.frame).collect();
    assert_eq!(got, frames, "each event when its packet arrived");
    assert_eq!(e.end.as_ref().unwrap().outcome, Outcome::CutByCaptureEnd);
    assert_eq!(
        e.end.as_ref().unwrap().body.content_encoding.as_deref(),
        Some("gzip")
    );
}

#[test]
fn gzip_request_body_is_decoded() {
    let gz = gzip(INIT.as_bytes());
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        gz.len()
    )
    .into_bytes();
    req.extend_from_slice(&gz);
    let mut d = Driver::conn0();
    d.c2s(&req);
    d.s2c(ACCEPTED);
    let run = d.finish();
    let e = run.only();
    assert_eq!(e.request.as_ref().unwrap().body.data, INIT.as_bytes());
    assert_eq!(
        rpc(&e.request_messages),
        vec![(Kind::Request, num("1"), Some("initialize".into()))]
    );
}

#[test]
fn upgrade_and_connect_tunnels_stop_http_parsing() {
    let mut d = Driver::conn0();
    d.c2s("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
    d.s2c(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello".as_slice());
    d.c2s(b"\x81\x85\x00\x00\x00\x00hello GET /x HTTP/1.1\r\n\r\n".as_slice());
    d.open(1, "10.0.0.1:40001", "10.0.0.2:3128");
    d.data(
        1,
        C2S,
        b"CONNECT mcp.example:443 HTTP/1.1\r\nHost: mcp.example:443\r\n\r\n",
    );
    d.data(1, S2C, b"HTTP/1.1 200 Connection established\r\n\r\n");
    d.data(1, C2S, &client_hello());
    d.data(1, S2C, b"\x16\x03\x03\x00\x02HTTP/1.1 200 OK\r\n\r\n");
    let run = d.finish();
    assert_eq!(run.exchanges.len(), 2, "{}", run.dump());
    let ws = run.ex(0, 0);
    assert_eq!(ws.response.as_ref().unwrap().status, 101);
    assert_eq!(ws.end.as_ref().unwrap().outcome, Outcome::Complete);
    let tunnel = run.ex(1, 0);
    assert_eq!(tunnel.request.as_ref().unwrap().method, "CONNECT");
    assert_eq!(tunnel.response.as_ref().unwrap().status, 200);
    assert_eq!(tunnel.end.as_ref().unwrap().outcome, Outcome::Complete);
    // Each switch said once, with what it switched to; nothing else is an anomaly.
    let said: Vec<(AnomalyKind, &str)> =
        run.anomalies.iter().map(|a| (a.3, a.4.as_str())).collect();
    assert_eq!(said.len(), 2, "{}", run.dump());
    assert!(
        said.iter()
            .all(|(k, _)| *k == AnomalyKind::ProtocolSwitched)
    );
    assert!(said[0].1.contains("websocket"), "{}", said[0].1);
}

// ------------------------------------------------------------------------------------------------
// Non-HTTP traffic, any port
// ------------------------------------------------------------------------------------------------

fn client_hello() -> Vec<u8> {
    let mut hello = vec![
        0x16, 0x03, 0x01, 0x00, 0x5a, 0x01, 0x00, 0x00, 0x56, 0x03, 0x03,
    ];
    hello.extend((0..32u8).map(|i| i.wrapping_mul(37)));
    hello.extend_from_slice(&[
        0x00, 0x00, 0x04, 0x13, 0x01, 0x13, 0x02, 0x01, 0x00, 0x00, 0x29,
    ]);
    hello.extend_from_slice(&[0x00, 0x00, 0x00, 0x0d, 0x00, 0x0b, 0x00, 0x00, 0x08]);
    hello.extend_from_slice(b"mcp.test");
    hello.extend_from_slice(&[0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04]);
    hello.resize(0x5a + 5, 0);
    hello
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..n).map(|_| rng.next() as u8).collect()
}

#[test]
fn non_http_traffic_is_counted_not_fatal() {
    let mut d = Driver::new();
    d.open(0, CLIENT, "10.0.0.2:9123");
    d.open(1, "10.0.0.1:40001", "10.0.0.2:443");
    d.open(2, "10.0.0.1:40002", "10.0.0.2:5432");
    d.open(3, "10.0.0.1:40003", "10.0.0.2:8080");
    d.open(4, "10.0.0.1:40004", "10.0.0.2:3000");
    d.open(5, "10.0.0.1:40005", "10.0.0.2:7000");
    d.data(1, C2S, &client_hello());
    d.data(
        1,
        S2C,
        &[
            0x16, 0x03, 0x03, 0x00, 0x31, 0x02, 0x00, 0x00, 0x2d, 0x03, 0x03,
        ],
    );
    let noise = random_bytes(300 * 1024, 7);
    for p in noise.chunks(1400) {
        d.data(2, C2S, p);
    }
    d.data(2, S2C, &random_bytes(5000, 8));
    d.data(
        3,
        C2S,
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04\x00\x00\x00\x00\x00",
    );
    d.data(0, C2S, get("/mcp").as_bytes());
    d.data(0, S2C, json_response("200 OK", "{}").as_bytes());
    d.data(4, C2S, post("/mcp", INIT).as_bytes());
    d.data(4, S2C, ACCEPTED.as_bytes());
    for conn in 0..6 {
        d.close(conn, CloseReason::Fin);
    }
    let run = d.finish();
    let s = &run.stats;
    assert_eq!(s.connections_http, 2, "{s:?}");
    assert_eq!(s.connections_tls, 1, "{s:?}");
    assert_eq!(s.connections_http2, 1, "{s:?}");
    assert_eq!(s.connections_other, 1, "{s:?}");
    assert_eq!(s.connections_empty, 1, "{s:?}");
    assert_eq!(s.tls_ports, vec![443]);
    // The HTTP/2 connection (8080) is HTTP too, read as HTTP/2.
    assert_eq!(s.http_ports, vec![3000, 8080, 9123]);
    assert!(s.skipped_bytes >= 256 * 1024, "{s:?}");
    assert!(s.skipped_bytes <= (noise.len() + 5000 + client_hello().len() + 11 + 40) as u64);
    let conns: BTreeSet<u64> = run.exchanges.iter().map(|e| e.id.conn.number()).collect();
    assert_eq!(conns, BTreeSet::from([0, 4]), "{}", run.dump());
    assert_eq!(run.ex(4, 0).response.as_ref().unwrap().status, 202);
}

#[test]
fn tls_and_http2_are_recognised_in_any_chunking() {
    let mut d = Driver::new();
    d.open(0, CLIENT, "10.0.0.2:443");
    d.open(1, "10.0.0.1:40001", "10.0.0.2:8080");
    for p in client_hello().chunks(1) {
        d.data(0, C2S, p);
    }
    for p in b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".chunks(3) {
        d.data(1, C2S, p);
    }
    d.close(0, CloseReason::Fin);
    d.close(1, CloseReason::Fin);
    let run = d.finish();
    assert_eq!(run.stats.connections_tls, 1, "{:?}", run.stats);
    assert_eq!(run.stats.connections_http2, 1, "{:?}", run.stats);
}

#[test]
fn http_after_leading_noise_is_still_found() {
    // Bytes before the first request line (a capture that started mid-message) are skipped
    // and counted; the request that follows is parsed.
    let mut d = Driver::conn0();
    d.c2s(format!("tail of an earlier body}}\r\n\r\n{}", get("/mcp")));
    d.s2c(format!("ndom\r\n{}", json_response("200 OK", "{}")));
    let run = d.finish();
    let e = run.only();
    assert_eq!(e.request.as_ref().unwrap().target, "/mcp");
    assert_eq!(e.response.as_ref().unwrap().status, 200);
    assert!(run.stats.skipped_bytes > 0);
    assert_eq!(run.stats.connections_http, 1);
}

// ------------------------------------------------------------------------------------------------
// Connections picked up in the middle of an event stream
// ------------------------------------------------------------------------------------------------

/// A connection picked up mid-stream whose server bytes (`s2c`) arrive in pieces of at most
/// `max` bytes, then the server closes.
fn midstream_run(s2c: &[u8], max: usize) -> Run {
    let mut d = Driver::new();
    d.open_midstream(0, CLIENT, SERVER);
    for piece in s2c.chunks(max) {
        d.s2c(piece);
    }
    d.fin(0, S2C);
    d.close(0, CloseReason::Fin);
    d.finish()
}

/// An event, as a chunk of the chunked coding (one chunk per event, as nginx forwards them).
fn event_chunk(event: &str) -> String {
    format!("{:x}\r\n{event}\r\n", event.len())
}

/// Checks a resynchronised stream: one exchange with neither request nor head, these event ids
/// (the first after a gap), one anomaly naming the framing and the bytes skipped, and how it
/// ended (a body whose start is not in the capture never ends `Complete`: `Gap` instead).
fn check_resync(run: &Run, ids: &[&str], framing: &str, skipped: usize, outcome: Outcome) {
    let e = run.only();
    assert!(
        e.request.is_none() && e.response.is_none(),
        "{}",
        run.dump()
    );
    let got: Vec<&str> = e.events.iter().map(|ev| &*ev.last_event_id).collect();
    assert_eq!(got, ids, "{}", run.dump());
    assert!(e.events[0].after_gap);
    assert!(e.events[1..].iter().all(|ev| !ev.after_gap));
    assert!(e.no_response.is_none());
    let end = e
        .end
        .as_ref()
        .expect("the response ends with the connection");
    assert_eq!(end.outcome, outcome);
    assert_eq!(
        run.anomalies
            .iter()
            .map(|a| (a.3, a.4.as_str()))
            .collect::<Vec<_>>(),
        [(
            AnomalyKind::MidstreamResync,
            &*format!(
                "response picked up in the middle of its body (no request or head in the capture): \
             resynchronised on {framing} after skipping {skipped} bytes"
            )
        )]
    );
    assert_eq!(run.stats.midstream_resyncs, 1);
    assert_eq!(run.stats.connections_http, 1);
    assert_eq!(run.stats.connections_other, 0);
}

const IN_CHUNKS: &str = "SSE framing inside chunked transfer coding";
const UNTIL_CLOSE: &str = "SSE framing (a close-delimited body)";

#[test]
fn midstream_chunked_sse_with_crlf_lines() {
    // The capture starts inside the data line of an event, in the middle of a chunk.
    let cut = "\"progress\":3}}\r\n\r\n\r\n";
    let mut wire = cut.to_string();
    for n in 4..=6 {
        wire += &event_chunk(&format!(
            "event: message\r\nid: {n}\r\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progress\":{n}}}}}\r\n\r\n"
        ));
    }
    wire += "0\r\n\r\n";
    for max in [wire.len(), 7, 1] {
        let run = midstream_run(wire.as_bytes(), max);
        check_resync(&run, &["4", "5", "6"], IN_CHUNKS, cut.len(), Outcome::Gap);
        let e = run.only();
        let progress = (
            Kind::Notification,
            None,
            Some("notifications/progress".into()),
        );
        let per_event: Vec<_> = e.event_messages.iter().map(|m| rpc(m)).collect();
        assert_eq!(per_event, vec![vec![progress]; 3]);
        assert!(e.end.as_ref().unwrap().body.chunked);
    }
}

#[test]
fn midstream_close_delimited_sse_with_lf_lines() {
    let wire = "ing\"}\n\nid: 7\ndata: seven\n\n: keep-alive\n\nid: 8\ndata: eight\n\n";
    for max in [wire.len(), 5, 1] {
        let run = midstream_run(wire.as_bytes(), max);
        check_resync(&run, &["7", "8"], UNTIL_CLOSE, 7, Outcome::Gap);
        let e = run.only();
        assert_eq!(datas(e), ["seven", "eight"]);
        assert_eq!(e.end.as_ref().unwrap().sse.as_ref().unwrap().comments, 1);
    }
}

#[test]
fn midstream_resync_point_in_the_middle_of_a_chunk() {
    // Inside a chunk that holds two events: the second is read from its first line, the chunk's
    // end found from the chunk-size line that follows it.
    let first = "id: 1\ndata: one\n\nid: 2\ndata: two\n\n";
    let chunk = event_chunk(first);
    let start = chunk.find("ne\n\nid: 2").unwrap();
    let mut wire = chunk[start..].to_string();
    wire += &event_chunk("id: 3\r\ndata: three\r\n\r\n");
    for max in [wire.len(), 3, 1] {
        let run = midstream_run(wire.as_bytes(), max);
        // No last chunk before the FIN: cut short.
        check_resync(&run, &["2", "3"], IN_CHUNKS, 4, Outcome::ClosedEarly);
        assert_eq!(datas(run.only()), ["two", "three"]);
    }
}

#[test]
fn midstream_connection_then_a_whole_exchange() {
    // The stream picked up mid-body ends; the client asks again on the same connection.
    let mut d = Driver::new();
    d.open_midstream(0, CLIENT, SERVER);
    d.s2c(format!("{}0\r\n\r\n", event_chunk("id: 9\ndata: x\n\n")));
    d.c2s(post("/mcp", INIT));
    d.s2c(ACCEPTED);
    let run = d.finish();
    assert_eq!(run.exchanges.len(), 2, "{}", run.dump());
    let orphan = run.ex(0, 0);
    assert!(orphan.request.is_none() && orphan.events.len() == 1);
    let next = run.ex(0, 1);
    assert_eq!(next.response.as_ref().unwrap().status, 202);
    assert!(next.request.is_some());
}

#[test]
fn midstream_bytes_that_are_not_sse_are_not_read_as_sse() {
    // JSON with "data:" inside, HTML, binary, an SSE-looking line with no event after it: no
    // resync, the bytes are skipped as before.
    let json = "e\": 1}\n{\"data: x\": \"id: 4\"}\n\n";
    let html = "<p>\ndata: not an event\n<p>\n\n";
    let lone_field = "junk\ndata: a\nmore junk\n\n";
    let binary = random_bytes(20_000, 11);
    for wire in [
        json.as_bytes(),
        html.as_bytes(),
        lone_field.as_bytes(),
        &binary,
    ] {
        let run = midstream_run(wire, 1400);
        assert!(run.exchanges.is_empty(), "{}", run.dump());
        assert_eq!(run.stats.midstream_resyncs, 0);
        assert_eq!(run.stats.skipped_bytes, wire.len() as u64);
    }
    // With its handshake captured, a connection is never read from the middle.
    let mut d = Driver::conn0();
    d.s2c("id: 1\ndata: a\n\nid: 2\ndata: b\n\n");
    let run = d.finish();
    assert!(run.exchanges.is_empty());
}

#[test]
fn midstream_connection_starting_at_a_head_is_parsed_as_usual() {
    let mut d = Driver::new();
    d.open_midstream(0, CLIENT, SERVER);
    d.c2s(get("/mcp"));
    d.s2c(format!("{SSE_CLOSE_DELIMITED}id: 1\ndata: a\n\n"));
    let run = d.finish();
    let e = run.only();
    assert!(e.request.is_some() && e.response.is_some());
    assert_eq!(run.stats.midstream_resyncs, 0);
    assert!(run.anomalies.is_empty());
}

#[test]
fn midstream_incident_sample_get_stream_is_read_from_event_1() {
    // samples/midstream-incident.pcap: the capture began inside the fallback GET's chunked body.
    let mut inputs = vec![open_capture("samples/midstream-incident.pcap", 0).unwrap()];
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Collector::default());
    run(&mut inputs, &mut capture, &mut http);
    let run = Run::of(&mut http, Vec::new());
    let get = run
        .exchanges
        .iter()
        .find(|e| e.request.is_none())
        .expect("the GET stream");
    let ids: Vec<String> = get
        .events
        .iter()
        .map(|e| e.last_event_id.to_string())
        .collect();
    let want: Vec<String> = (1..=41).map(|n| n.to_string()).collect();
    assert_eq!(ids, want);
    assert!(get.events[0].after_gap);
    assert_eq!(get.end.as_ref().unwrap().outcome, Outcome::Reset);
    assert_eq!(run.stats.midstream_resyncs, 1);
    assert_eq!(run.stats.connections_other, 0);
    assert_eq!(run.stats.skipped_bytes, 0, "it starts at a chunk-size line");
    assert!(
        run.anomalies
            .iter()
            .any(|a| a.3 == AnomalyKind::MidstreamResync && a.4.contains("after skipping 0 bytes"))
    );
}

// ------------------------------------------------------------------------------------------------
// Through the capture stage: packets written to a pcap, read back, reassembled, parsed
// ------------------------------------------------------------------------------------------------

/// A segment between `CLIENT` and `SERVER` (`from_client` says which way), ACK set.
fn seg(from_client: bool, seq: u32, ack: u32, payload: &[u8]) -> SegmentSpec<'_> {
    let (c, s) = (addr(CLIENT), addr(SERVER));
    let (src, dst) = if from_client { (c, s) } else { (s, c) };
    SegmentSpec::new(src, dst, seq, ack, payload)
}

/// The three packets of a handshake: client ISN 100, server ISN 500.
fn handshake() -> Vec<SegmentSpec<'static>> {
    let syn = TcpFlags {
        syn: true,
        ..TcpFlags::default()
    };
    let syn_ack = TcpFlags {
        syn: true,
        ack: true,
        ..TcpFlags::default()
    };
    vec![
        seg(true, 100, 0, b"").flags(syn),
        seg(false, 500, 101, b"").flags(syn_ack),
        seg(true, 101, 501, b""),
    ]
}

/// Packets (frame `i + 1`, each cut to `keep` bytes of frame when given, as `tcpdump -s` cuts
/// them) written to a pcap, read back through the capture stage into an HTTP stage.
fn through_capture(packets: &[(SegmentSpec<'_>, Option<usize>)]) -> Run {
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, 65_535, false, false).unwrap();
    for (i, (spec, keep)) in packets.iter().enumerate() {
        let frame = link_frame(linktype::ETHERNET, &ip_packet(spec), &[]);
        let kept = &frame[..keep.unwrap_or(frame.len()).min(frame.len())];
        let time = mark_of(i as u64 + 1).time;
        w.packet(time, kept, frame.len() as u32).unwrap();
    }
    let pcap = w.into_inner();
    let mut reader = CaptureReader::open(Box::new(std::io::Cursor::new(pcap)), 0).unwrap();
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Collector::default());
    while let Some(frame) = reader.next_frame().unwrap() {
        capture.frame(&frame, &mut http);
    }
    capture.finish(&mut http);
    Run::of(&mut http, Vec::new())
}

fn whole(specs: Vec<SegmentSpec<'_>>) -> Vec<(SegmentSpec<'_>, Option<usize>)> {
    specs.into_iter().map(|s| (s, None)).collect()
}

#[test]
fn retransmission_with_different_bytes_marks_the_message_and_names_both_frames() {
    let req = post("/mcp", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let resp = json_response("200 OK", body);
    let (head_and_half, rest) = resp.as_bytes().split_at(resp.len() - 10);
    let mut altered = head_and_half.to_vec();
    let last = altered.len() - 3;
    altered[last] = b'X';
    let r = 101 + req.len() as u32;
    let mut packets = handshake();
    packets.push(seg(true, 101, 501, req.as_bytes())); // 4
    packets.push(seg(false, 501, r, head_and_half)); // 5
    packets.push(seg(false, 501, r, &altered)); // 6: the same bytes again, one changed
    packets.push(seg(false, 501 + head_and_half.len() as u32, r, rest)); // 7
    let run = through_capture(&whole(packets));
    let e = run.only();
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.body.data, body.as_bytes(), "the first copy wins");
    assert_eq!(end.body.inconsistent_bytes, 1);
    assert_eq!(e.request.as_ref().unwrap().body.inconsistent_bytes, 0);
    let at = head_and_half.len() - 3;
    assert_eq!(
        run.anomalies,
        vec![(
            0,
            S2C,
            6,
            AnomalyKind::RetransmissionInconsistent,
            format!(
                "retransmitted bytes differ from the first copy: 1 bytes at stream offset {at} \
                 in the response of tcp0#1 (first copy in frame 5, retransmission in frame 6; \
                 the first copy was kept)"
            )
        )]
    );
    assert_eq!(run.stats.inconsistent_retransmissions, 1);
    assert_eq!(run.stats.inconsistent_bytes, 1);
}

#[test]
fn a_response_captured_before_its_request_is_paired_by_its_ack() {
    let req = post("/mcp", INIT);
    let resp = json_response("200 OK", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let r = 101 + req.len() as u32;
    let mut packets = handshake();
    // Written out of order by a capture on two interfaces: the answer, then the question.
    packets.push(seg(false, 501, r, resp.as_bytes()));
    packets.push(seg(true, 101, 501, req.as_bytes()));
    packets.push(seg(true, r, 501 + resp.len() as u32, b""));
    let run = through_capture(&whole(packets));
    let e = run.only();
    assert_eq!(e.request.as_ref().unwrap().body.data, INIT.as_bytes());
    assert_eq!(e.response.as_ref().unwrap().status, 200);
    assert_eq!(
        rpc(&e.response_messages),
        vec![(Kind::Response, num("1"), None)]
    );
    assert_eq!((run.stats.responses_held, run.stats.held_paired), (1, 1));
    // Its frame is still the one that carried it.
    assert_eq!(e.response.as_ref().unwrap().first.frame.frame, 4);
}

/// Frame bytes before the TCP payload in `through_capture`: Ethernet, IPv4 and TCP headers.
const HEADERS: usize = 14 + 20 + 20;

#[test]
fn heads_cut_by_the_snap_length_keep_their_start_line_and_whole_header_lines() {
    let req = post("/mcp", INIT);
    let resp = json_response("200 OK", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let r = 101 + req.len() as u32;
    // Every frame cut to 50 bytes of TCP payload, as `tcpdump -s 104` would.
    let keep = Some(HEADERS + 50);
    let mut packets: Vec<_> = handshake().into_iter().map(|s| (s, None)).collect();
    packets.push((seg(true, 101, 501, req.as_bytes()), keep));
    packets.push((seg(false, 501, r, resp.as_bytes()), keep));
    let run = through_capture(&packets);
    let e = run.only();
    let q = e.request.as_ref().unwrap();
    assert_eq!((q.method.as_str(), q.target.as_str()), ("POST", "/mcp"));
    // "POST /mcp HTTP/1.1\r\n" and "Host: 10.0.0.2:9123\r\n" are whole within 50 bytes.
    assert_eq!(q.headers.get("host"), Some(SERVER));
    assert!(!q.head_complete && q.body.unknown);
    assert_eq!(q.outcome, Outcome::Gap);
    let h = e.response.as_ref().unwrap();
    assert_eq!(h.status, 200);
    assert!(!h.head_complete);
    assert_eq!(h.headers.get("content-type"), Some("application/json"));
    let end = e.end.as_ref().unwrap();
    assert_eq!(end.outcome, Outcome::Gap);
    assert!(end.body.unknown);
    assert_eq!(
        (run.stats.heads_cut, run.stats.heads_cut_by_snaplen),
        (2, 2)
    );
    assert!(
        run.has_anomaly(
            AnomalyKind::HeadCutByGap,
            &format!(
                "request head cut by a {}-byte capture gap (cut by the capture's snap length): its \
             start line and 1 whole header lines kept",
                req.len() - 50
            )
        ),
        "{}",
        run.dump()
    );
}

#[test]
fn a_request_head_cut_by_the_snap_length_keeps_the_first_bytes_of_its_body() {
    // The client writes head and body apart (the Python SDK does): the cut takes the end of the
    // head's segment, the body's segment is cut in turn, and the next request on the connection
    // starts a segment of its own, whole.
    let first = post("/mcp", INIT);
    let (head, body) = first.split_at(first.len() - INIT.len());
    let second = post("/mcp", r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    let ok = json_response("200 OK", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let keep = Some(HEADERS + 40);
    let c2 = 101 + first.len() as u32;
    let s1 = 501 + ok.len() as u32;
    let packets = [
        (seg(true, 101, 501, head.as_bytes()), keep),
        (
            seg(true, 101 + head.len() as u32, 501, body.as_bytes()),
            keep,
        ),
        (seg(false, 501, c2, ok.as_bytes()), None),
        (seg(true, c2, s1, second.as_bytes()), None),
        (
            seg(false, s1, c2 + second.len() as u32, ok.as_bytes()),
            None,
        ),
    ];
    let mut all: Vec<_> = handshake().into_iter().map(|s| (s, None)).collect();
    all.extend(packets);
    let run = through_capture(&all);
    let cut = run.ex(0, 0).request.as_ref().unwrap();
    assert!(!cut.head_complete && !cut.body.unknown, "{}", run.dump());
    assert_eq!(cut.body.data, &INIT.as_bytes()[..40]);
    let cut_bytes = (head.len() - 40 + INIT.len() - 40) as u64;
    assert_eq!(
        (cut.body.gap_bytes, cut.body.snaplen_bytes),
        (cut_bytes, cut_bytes)
    );
    // The next request lost nothing of itself: it is whole, not marked as after a gap.
    let next = run.ex(0, 1).request.as_ref().unwrap();
    assert!(next.head_complete);
    assert_eq!(next.outcome, Outcome::Complete, "{}", run.dump());
    assert_eq!(run.ex(0, 1).response.as_ref().unwrap().status, 200);
}

#[test]
fn a_chunked_response_whose_end_was_lost_does_not_swallow_the_next_response() {
    // Keep-alive: the first answer's last chunk is in a gap; the next segment starts the second
    // answer. Its status line must be read as one, or every later answer pairs one request off.
    let (q1, q2) = (get("/mcp"), post("/mcp", INIT));
    let events = "4\r\nid:1\r\n3\r\n\n\n\r\n";
    let lost = "0\r\n\r\n";
    let first = format!("{SSE_CHUNKED}{events}");
    let second = json_response("202 Accepted", "");
    let c2 = 101 + q1.len() as u32;
    let c3 = c2 + q2.len() as u32;
    let s_lost = 501 + first.len() as u32;
    let s2 = s_lost + lost.len() as u32;
    let mut packets = handshake();
    packets.push(seg(true, 101, 501, q1.as_bytes()));
    packets.push(seg(false, 501, c2, first.as_bytes()));
    packets.push(seg(true, c2, s_lost, q2.as_bytes()));
    // Bytes s_lost..s2 never captured.
    packets.push(seg(false, s2, c3, second.as_bytes()));
    let run = through_capture(&whole(packets));
    assert_eq!(
        run.ex(0, 0).response.as_ref().unwrap().status,
        200,
        "{}",
        run.dump()
    );
    let answer = run.ex(0, 1).response.as_ref().unwrap();
    assert_eq!(answer.status, 202, "{}", run.dump());
    assert_eq!(run.exchanges.len(), 2, "{}", run.dump());
}

#[test]
fn a_response_whose_head_was_lost_does_not_shift_the_pairing_of_the_next() {
    // Keep-alive: the second answer's first segment (its head) is not in the capture, its last
    // one is. Those bytes start no message: the answer to request 2 was lost, and the third
    // answer is request 3's.
    let (q1, q2, q3) = (get("/a"), get("/b"), get("/c"));
    let a1 = json_response("200 OK", "one");
    let a2 = format!("{SSE_CHUNKED}4\r\nid:2\r\n");
    let a2_tail = "3\r\n\n\n\r\n0\r\n\r\n";
    let a3 = json_response("201 Created", "three");
    let c = [
        101,
        101 + q1.len() as u32,
        101 + (q1.len() + q2.len()) as u32,
    ];
    let c_end = c[2] + q3.len() as u32;
    let s2 = 501 + a1.len() as u32;
    let s2_tail = s2 + a2.len() as u32;
    let s3 = s2_tail + a2_tail.len() as u32;
    let mut packets = handshake();
    packets.push(seg(true, c[0], 501, q1.as_bytes()));
    packets.push(seg(false, 501, c[1], a1.as_bytes()));
    packets.push(seg(true, c[1], s2, q2.as_bytes()));
    packets.push(seg(true, c[2], s2, q3.as_bytes()));
    // s2..s2_tail (the head of answer 2) never captured.
    packets.push(seg(false, s2_tail, c_end, a2_tail.as_bytes()));
    packets.push(seg(false, s3, c_end, a3.as_bytes()));
    let run = through_capture(&whole(packets));
    assert_eq!(run.ex(0, 0).response.as_ref().unwrap().status, 200);
    let lost = run.ex(0, 1);
    assert!(lost.response.is_none(), "{}", run.dump());
    assert_eq!(
        lost.no_response.as_ref().map(|n| n.0),
        Some(Outcome::Gap),
        "{}",
        run.dump()
    );
    assert_eq!(
        run.ex(0, 2).response.as_ref().unwrap().status,
        201,
        "{}",
        run.dump()
    );
    assert!(run.has_anomaly(
        AnomalyKind::ResponseLostInGap,
        "the response to request 2 (GET) was lost in a capture gap"
    ));
}

#[test]
fn snaplen_sample_has_its_seven_exchanges() {
    // samples/snaplen-mcp.pcap: python-sdk-healthy.pcap with 62 bytes of TCP payload per frame.
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("samples/snaplen-mcp.truth.json").unwrap())
            .unwrap();
    let want: Vec<(String, String, u16)> = truth["source_truth"]["http_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_string(),
                r["path"].as_str().unwrap().to_string(),
                r["status"].as_u64().unwrap() as u16,
            )
        })
        .collect();
    let mut inputs = vec![open_capture("samples/snaplen-mcp.pcap", 0).unwrap()];
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Collector::default());
    run(&mut inputs, &mut capture, &mut http);
    let run = Run::of(&mut http, Vec::new());
    let got: Vec<(String, String, u16)> = run
        .exchanges
        .iter()
        .map(|e| {
            let q = e.request.as_ref().expect("request line survives");
            let h = e.response.as_ref().expect("status line survives");
            (q.method.clone(), q.target.clone(), h.status)
        })
        .collect();
    assert_eq!(got, want);
    assert!(run.exchanges.iter().all(|e| {
        let q = e.request.as_ref().unwrap();
        !q.head_complete && q.outcome == Outcome::Gap
    }));
    assert!(run.stats.heads_cut >= 7);
    assert_eq!(run.stats.heads_cut, run.stats.heads_cut_by_snaplen);
}

#[test]
fn a_compressed_body_that_ends_before_its_stream_is_an_anomaly() {
    // Content-Length frames the message whole; the gzip stream inside it is cut: only the end
    // of the body can tell, and it says so as every other decoding failure does.
    let result = format!(
        r#"{{"jsonrpc":"2.0","id":3,"result":{{"text":"{}"}}}}"#,
        "x".repeat(4000)
    );
    let gz = gzip(result.as_bytes());
    let cut = &gz[..gz.len() - 8];
    let mut d = Driver::conn0();
    d.c2s(post(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t"}}"#,
    ));
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        cut.len()
    )
    .into_bytes();
    resp.extend_from_slice(cut);
    d.s2c(resp);
    let run = d.finish();
    let body = &run.only().end.as_ref().unwrap().body;
    assert!(body.decode_error.is_some(), "{}", run.dump());
    assert!(
        run.has_anomaly(AnomalyKind::CompressedBodyEndsEarly, "ends"),
        "{}",
        run.dump()
    );
}
