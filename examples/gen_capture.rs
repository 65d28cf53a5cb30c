//! Synthetic MCP capture generator for the performance benchmark (issue 7).
//!
//! ```text
//! cargo run --release --example gen_capture -- --size 256MiB --out FILE [--seed N] [--port 8080]
//! ```
//!
//! Writes a classic pcap (Ethernet / IPv4 / TCP, microsecond timestamps) of about `--size` bytes,
//! and next to it `FILE.counts.json` with the exact number of everything it put on the wire, so a
//! benchmark can check that an analysis found all of it. The output is a pure function of the
//! arguments: the same seed gives the same bytes.
//!
//! # Traffic
//!
//! About `--concurrency` clients (default 2500) are active at any time; when one finishes another
//! starts a little later, until the size budget is used up (the last ones run to completion, so
//! every stream in the file is whole). Two kinds of client share the same server ports
//! (`10.0.0.10`–`10.0.0.13`, port `--port`):
//!
//! * **MCP sessions** (Streamable HTTP, endpoint `/mcp`), half TypeScript-SDK style (LF SSE
//!   framing, UUID session ids, Express headers), half Python-SDK style (CRLF SSE framing as
//!   sse-starlette writes it, 32-hex session ids, uvicorn headers). Each session, on one keep-alive
//!   connection: optionally `GET /.well-known/oauth-protected-resource/mcp` (404, non-MCP),
//!   `POST initialize` (SSE answer carrying `Mcp-Session-Id`), `POST notifications/initialized`
//!   (202), `POST tools/list` (SSE, or `application/json` for some TypeScript sessions), 1–6
//!   `POST tools/call` whose SSE stream carries 4–60 `notifications/progress` events and then the
//!   result (3% are JSON-RPC errors), and usually `DELETE /mcp`. After the 202 the client opens the
//!   standalone `GET /mcp` stream on a second connection; the server sends `notifications/message`,
//!   `notifications/resources/updated` and `notifications/tools/list_changed` on it, plus
//!   keep-alive comments, until the session ends.
//! * **Plain HTTP API clients** (about 20% of all HTTP requests, `--non-mcp-share`): keep-alive
//!   connections with `GET /api/v1/items/N` (JSON, sometimes 404), `POST /api/v1/search` (chunked
//!   JSON), `GET /static/app.*.js`, `GET /metrics`, `GET /healthz`. The MCP clients' OAuth probes
//!   count here too.
//!
//! Sessions negotiating 2025-11-25 get a priming event (id, empty data, `retry: 1000`) at the start
//! of every POST stream. A share (`--break-rate`, default 5%) of `tools/call` streams and of GET
//! streams is broken by a TCP RST (POST streams: from client or server; GET streams: from the
//! server side) right after an event; the server keeps producing events meanwhile, and about a
//! second later the client opens a new connection with `GET /mcp` and `Last-Event-ID`, and the
//! server replays exactly the events after that ID (original IDs) and carries on live on the new
//! connection (a resumed POST stream ends with the result; the new connection then carries the
//! session's next requests).
//!
//! **Event IDs** are namespaced and unique within a session: `<stream>-<n>`, where `<stream>` is
//! 0 for the standalone GET stream and 1, 2, … for the session's POST streams in order, and `<n>`
//! counts the stream's events from 1 (`<stream>-0` is the priming event). A replayed event keeps
//! its ID.
//!
//! Each SSE event is normally one HTTP chunk written as one TCP write; sometimes (6%) an event is
//! split over two chunks (for CRLF streams between the CR and the LF ending its data line), and a
//! replay writes many events at once. The last chunk (`0\r\n\r\n`) is a write of its own, as
//! Node and uvicorn send it when the handler returns. When a session is deleted the server ends
//! its GET stream with the last chunk; otherwise (30%) the client closes the GET connection
//! mid-stream. A quarter of the API clients end with `Connection: close` and a server FIN.
//!
//! Writes are cut into 1448-byte segments. TCP is modelled as seen by a sniffer at the server:
//! three-way handshakes, delayed ACKs (every second segment, else after 40 ms), client ACKs one
//! RTT (0.2–90 ms per client) after the data, FIN handshakes, RSTs; no loss, no retransmission, no
//! window overrun, no 4-tuple reuse, valid checksums. Timestamps advance monotonically over the
//! whole file.
//!
//! # Counts (`FILE.counts.json`)
//!
//! Everything counts what is on the wire: `http_requests` / `http_responses` (every request gets a
//! response head, also on streams later cut by RST), `jsonrpc_requests` (initialize, tools/list,
//! tools/call), `jsonrpc_responses` (results and errors, one per request), `jsonrpc_notifications`
//! (notifications/initialized, progress, GET-stream notifications), `sse_events` (every event
//! block, priming events included, comments not), `resumed_streams` (GETs with `Last-Event-ID`),
//! `non_mcp_requests`, `connections` (TCP connections, one per SYN), `sessions`, and the file's
//! `bytes` and `packets`. `detail` breaks these down further.
//!
//! # Mostly not MCP (`--noise-share`)
//!
//! With `--noise-share 0.96` the traffic above takes 4% of `--size` and is written alone to
//! `--mcp-out`; `--out` gets the same records merged with traffic that is not MCP (bulk HTTP/1.1,
//! JSON APIs, TLS, HTTP/2, short connections): see `gen_capture/noise.rs`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use mcpf_capture::decode::{TcpFlags, linktype};
use mcpf_capture::tcp::SeqNumber;
use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
use mcpf_model::Timestamp;
use serde::Serialize;

#[derive(Parser, Debug)]
#[command(about = "Writes a synthetic MCP Streamable-HTTP capture with exact counts")]
struct Args {
    /// Approximate file size: bytes, or with a suffix KiB, MiB, GiB, KB, MB, GB.
    #[arg(long, default_value = "256MiB")]
    size: String,
    /// Output pcap; the counts go to OUT.counts.json.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Server TCP port (MCP and plain HTTP alike).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// MCP and API clients active at the same time once ramped up [default: 2500, or
    /// 2500 × (1 − noise share) with --noise-share, so that MCP has the same time to fill its
    /// smaller share of the bytes].
    #[arg(long)]
    concurrency: Option<u32>,
    /// Share of HTTP requests that are not MCP.
    #[arg(long, default_value_t = 0.2)]
    non_mcp_share: f64,
    /// Share of tools/call and GET streams broken by RST and resumed with Last-Event-ID.
    #[arg(long, default_value_t = 0.05)]
    break_rate: f64,
    /// Share of the file's bytes that is not MCP traffic (e.g. 0.96): bulk HTTP/1.1, JSON APIs,
    /// TLS, HTTP/2 and short connections around the MCP traffic, which is also written alone
    /// to --mcp-out. 0: MCP traffic only.
    #[arg(long, default_value_t = 0.0)]
    noise_share: f64,
    /// With --noise-share: where the MCP traffic alone goes (every packet and timestamp as in
    /// OUT), with its own counts [default: OUT.mcp.pcap].
    #[arg(long)]
    mcp_out: Option<PathBuf>,
}

// ---------------------------------------------------------------------------------------------
// Constants of the model. Times are microseconds from the start of the capture.

const NEVER: u64 = u64::MAX;
const MSS: usize = 1448;
/// Spacing of back-to-back segments of one write (1 Gbit/s).
const SER_US: u64 = 12;
/// Delayed-ACK timeout.
const DELACK_US: u64 = 40_000;
/// Server-side delay before its stack reacts (the sniffer sits at the server).
const SRV_LAG_US: u64 = 10;
/// 2026-03-02T09:00:00Z.
const BASE_SECS: i64 = 1_772_442_000;
const RAMP_US: u64 = 3_000_000;
const MAX_WRITE: usize = 48 * 1024;

const F_SYN: u8 = 1;
const F_FIN: u8 = 2;
const F_RST: u8 = 4;
const SIDE_C: usize = 0;
const SIDE_S: usize = 1;

// ---------------------------------------------------------------------------------------------
// Deterministic randomness.

#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(mix(seed ^ 0x9e37_79b9_7f4a_7c15))
    }
    /// wyrand.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < p
    }
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

macro_rules! w {
    ($buf:expr, $($arg:tt)*) => {{ let _ = write!($buf, $($arg)*); }};
}

// The noise of the mostly-not-MCP capture (after `w!`, which it uses); in a directory of its own
// so that Cargo does not take it for an example.
#[path = "gen_capture/noise.rs"]
mod noise;

// ---------------------------------------------------------------------------------------------
// Output and counts.

struct CountingWriter<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)?;
        self.bytes += buf.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct Out {
    w: PcapWriter<CountingWriter<BufWriter<File>>>,
    packets: u64,
    bytes: u64,
    last_t: u64,
}

impl Out {
    fn create(path: &Path) -> io::Result<Out> {
        let counting = CountingWriter {
            inner: BufWriter::with_capacity(4 << 20, File::create(path)?),
            bytes: 0,
        };
        Ok(Out {
            w: PcapWriter::new(counting, linktype::ETHERNET, 262_144, false, false)?,
            packets: 0,
            bytes: 24,
            last_t: 0,
        })
    }

    /// Writes one segment; returns the bytes it took in the file.
    fn packet(&mut self, t: u64, spec: &SegmentSpec<'_>) -> io::Result<u64> {
        let ip = ip_packet(spec);
        self.frame(t, &link_frame(linktype::ETHERNET, &ip, &[]))
    }

    /// Writes one Ethernet frame captured `t` microseconds into the capture.
    fn frame(&mut self, t: u64, frame: &[u8]) -> io::Result<u64> {
        debug_assert!(
            t >= self.last_t,
            "time went backwards: {t} < {}",
            self.last_t
        );
        self.last_t = t;
        let ts = Timestamp::from_secs_nanos(
            BASE_SECS + (t / 1_000_000) as i64,
            (t % 1_000_000) as u32 * 1000,
        );
        self.w.packet(ts, frame, frame.len() as u32)?;
        self.packets += 1;
        self.bytes += 16 + frame.len() as u64;
        Ok(16 + frame.len() as u64)
    }

    /// Flushes the file; returns its size, checked against what was written.
    fn finish(self) -> io::Result<u64> {
        let mut inner = self.w.into_inner();
        inner.flush()?;
        assert_eq!(inner.bytes, self.bytes, "byte accounting");
        Ok(inner.bytes)
    }
}

/// Where a connection's packets go: the MCP capture, or the noise of a mixed one.
trait Wire {
    fn packet(&mut self, t: u64, spec: &SegmentSpec<'_>) -> io::Result<()>;
    /// Segments a reset discarded before they reached the wire (the models never do this).
    fn dropped(&mut self, n: u64);
}

impl Wire for Ctx {
    fn packet(&mut self, t: u64, spec: &SegmentSpec<'_>) -> io::Result<()> {
        self.out.packet(t, spec).map(drop)
    }
    fn dropped(&mut self, n: u64) {
        self.counts.detail.dropped_segments += n;
    }
}

#[derive(Default, Serialize)]
struct Detail {
    sessions_lf: u64,
    sessions_crlf: u64,
    sessions_priming: u64,
    sessions_deleted: u64,
    api_clients: u64,
    connections_reset: u64,
    connections_closed_by_server: u64,
    http_requests_by_method: BTreeMap<&'static str, u64>,
    http_responses_by_status: BTreeMap<u16, u64>,
    mcp_http_requests: u64,
    sse_responses: u64,
    json_rpc_json_responses: u64,
    get_streams: u64,
    resumed_post_streams: u64,
    resumed_get_streams: u64,
    /// Broken GET streams not resumed because the session ended first.
    broken_streams_not_resumed: u64,
    replayed_events: u64,
    jsonrpc_requests_by_method: BTreeMap<&'static str, u64>,
    jsonrpc_notifications_by_method: BTreeMap<&'static str, u64>,
    jsonrpc_errors: u64,
    sse_priming_events: u64,
    sse_comments: u64,
    sse_events_lf: u64,
    sse_events_crlf: u64,
    sse_events_on_post_streams: u64,
    sse_events_on_get_streams: u64,
    split_events: u64,
    tool_calls: u64,
    max_concurrent_connections: u64,
    max_concurrent_clients: u64,
    capture_seconds: f64,
    /// Measured wire bytes per estimated byte of the clients' plans (sizes the budget): MCP
    /// sessions, API clients.
    estimate_ratio: [f64; 2],
    /// Segments dropped because a connection was reset while they were queued (must be 0).
    dropped_segments: u64,
}

#[derive(Default, Serialize)]
struct Counts {
    sessions: u64,
    connections: u64,
    http_requests: u64,
    http_responses: u64,
    jsonrpc_requests: u64,
    jsonrpc_responses: u64,
    jsonrpc_notifications: u64,
    sse_events: u64,
    resumed_streams: u64,
    non_mcp_requests: u64,
    bytes: u64,
    packets: u64,
    detail: Detail,
}

impl Counts {
    fn request(&mut self, method: &'static str, mcp: bool) {
        self.http_requests += 1;
        *self
            .detail
            .http_requests_by_method
            .entry(method)
            .or_default() += 1;
        if mcp {
            self.detail.mcp_http_requests += 1;
        } else {
            self.non_mcp_requests += 1;
        }
    }
    fn response(&mut self, status: u16) {
        self.http_responses += 1;
        *self
            .detail
            .http_responses_by_status
            .entry(status)
            .or_default() += 1;
    }
    fn rpc_request(&mut self, method: &'static str) {
        self.jsonrpc_requests += 1;
        *self
            .detail
            .jsonrpc_requests_by_method
            .entry(method)
            .or_default() += 1;
    }
    fn rpc_notification(&mut self, method: &'static str) {
        self.jsonrpc_notifications += 1;
        *self
            .detail
            .jsonrpc_notifications_by_method
            .entry(method)
            .or_default() += 1;
    }
    fn sse_event(&mut self, style: Style, get_stream: bool) {
        self.sse_events += 1;
        match style {
            Style::Ts => self.detail.sse_events_lf += 1,
            Style::Py => self.detail.sse_events_crlf += 1,
        }
        if get_stream {
            self.detail.sse_events_on_get_streams += 1;
        } else {
            self.detail.sse_events_on_post_streams += 1;
        }
    }
}

/// Shared generation state: the output, the counts and text material.
struct Ctx {
    out: Out,
    counts: Counts,
    lorem: Vec<u8>,
    date_sec: u64,
    date: String,
    open_conns: u64,
    break_rate: f64,
    /// Scratch buffers (taken and given back to avoid borrowing conflicts).
    buf: Vec<u8>,
    ev: Vec<u8>,
    data: Vec<u8>,
}

impl Ctx {
    /// `len` bytes of lowercase words and spaces (JSON-safe), chosen by `key`.
    fn text(&self, key: u64, len: usize) -> &[u8] {
        let len = len.min(self.lorem.len() / 2);
        let start = (mix(key) % (self.lorem.len() - len) as u64) as usize;
        &self.lorem[start..start + len]
    }

    fn http_date(&mut self, t: u64) -> &str {
        let sec = t / 1_000_000;
        if sec != self.date_sec || self.date.is_empty() {
            self.date_sec = sec;
            self.date = http_date(BASE_SECS + sec as i64);
        }
        &self.date
    }
}

fn http_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
    let mon = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(m - 1) as usize];
    format!(
        "{wd}, {d:02} {mon} {y} {:02}:{:02}:{:02} GMT",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn make_lorem(seed: u64) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "lorem",
        "ipsum",
        "dolor",
        "sit",
        "amet",
        "consectetur",
        "adipiscing",
        "elit",
        "sed",
        "do",
        "eiusmod",
        "tempor",
        "incididunt",
        "ut",
        "labore",
        "et",
        "dolore",
        "magna",
        "aliqua",
        "enim",
        "ad",
        "minim",
        "veniam",
        "quis",
        "nostrud",
        "exercitation",
        "ullamco",
        "laboris",
        "nisi",
        "aliquip",
        "ex",
        "ea",
        "commodo",
        "consequat",
        "duis",
        "aute",
        "irure",
        "in",
        "reprehenderit",
        "voluptate",
        "velit",
        "esse",
        "cillum",
        "fugiat",
        "nulla",
        "pariatur",
        "excepteur",
        "sint",
        "occaecat",
        "cupidatat",
        "non",
        "proident",
        "sunt",
        "culpa",
        "qui",
        "officia",
        "deserunt",
        "mollit",
        "anim",
        "id",
        "est",
        "laborum",
        "query",
        "index",
        "file",
        "result",
        "search",
        "token",
        "vector",
        "schema",
        "table",
        "row",
        "commit",
        "branch",
        "deploy",
        "metric",
        "latency",
        "cluster",
        "node",
        "shard",
        "replica",
        "document",
    ];
    let mut rng = Rng::new(seed ^ 0x006c_6f72_656d);
    let mut v = Vec::with_capacity(256 * 1024);
    while v.len() < 256 * 1024 {
        v.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
        v.push(b' ');
    }
    v
}

// ---------------------------------------------------------------------------------------------
// TCP connections.

#[derive(Clone, Copy)]
struct Seg {
    t: u64,
    len: u32,
    flags: u8,
}

#[derive(Clone, Copy)]
struct Unacked {
    t: u64,
    end: u32,
    quick: bool,
}

/// One direction of a connection, from its sender's side.
struct Half {
    /// Queued payload not yet on the wire: `buf[off..]`.
    buf: Vec<u8>,
    off: usize,
    segs: VecDeque<Seg>,
    last_t: u64,
    /// Sequence number of the next byte to put on the wire.
    nxt: u32,
    /// Segments on the wire that the receiver has not been able to acknowledge yet.
    unacked: VecDeque<Unacked>,
    /// The highest sequence number the receiver can acknowledge now.
    ack_val: u32,
    /// The highest acknowledgement the receiver has sent.
    acked: u32,
    /// When the receiver sends a pure ACK for this direction.
    timer: u64,
}

impl Half {
    fn new(isn: u32) -> Self {
        Half {
            buf: Vec::new(),
            off: 0,
            segs: VecDeque::new(),
            last_t: 0,
            nxt: isn,
            unacked: VecDeque::new(),
            ack_val: isn,
            acked: isn,
            timer: NEVER,
        }
    }
}

struct Conn {
    id: u32,
    client: SocketAddrV4,
    server: SocketAddrV4,
    rtt: u64,
    h: [Half; 2],
    fins: u8,
    dead: bool,
    /// Window scale offered in both SYNs (RFC 7323): bulk transfers need windows past 64 KiB.
    wscale: Option<u8>,
}

impl Conn {
    /// A connection whose SYN leaves at `t`; returns it and when the client can send.
    fn open(
        id: u32,
        ends: (SocketAddrV4, SocketAddrV4),
        rtt: u64,
        isn: [u32; 2],
        wscale: Option<u8>,
        t: u64,
    ) -> (Conn, u64) {
        let mut c = Conn {
            id,
            client: ends.0,
            server: ends.1,
            rtt,
            h: [Half::new(isn[0]), Half::new(isn[1])],
            fins: 0,
            dead: false,
            wscale,
        };
        c.queue(SIDE_C, t, &[], F_SYN);
        let synack = c.queue(SIDE_S, t + 15, &[], F_SYN);
        (c, synack + rtt + 10)
    }

    /// Delay, as seen by the sniffer, before `receiver` can acknowledge what it was sent.
    fn lag(&self, receiver: usize) -> u64 {
        if receiver == SIDE_S {
            SRV_LAG_US
        } else {
            self.rtt
        }
    }

    fn next_time(&self) -> u64 {
        let mut t = self.h[0].timer.min(self.h[1].timer);
        for h in &self.h {
            if let Some(s) = h.segs.front() {
                t = t.min(s.t);
            }
        }
        t
    }

    fn done(&self) -> bool {
        self.dead
            || (self.fins == 2 && self.h.iter().all(|h| h.segs.is_empty() && h.timer == NEVER))
    }

    fn last_t(&self) -> u64 {
        self.h[0].last_t.max(self.h[1].last_t)
    }

    /// Queues a write (or a bare SYN/FIN/RST when `data` is empty); returns the time of its
    /// last segment.
    fn queue(&mut self, side: usize, t: u64, data: &[u8], flags: u8) -> u64 {
        let h = &mut self.h[side];
        let mut t = t.max(h.last_t);
        if data.is_empty() {
            h.segs.push_back(Seg { t, len: 0, flags });
        } else {
            debug_assert!(flags == 0);
            h.buf.extend_from_slice(data);
            for (i, c) in data.chunks(MSS).enumerate() {
                if i > 0 {
                    t += SER_US;
                }
                h.segs.push_back(Seg {
                    t,
                    len: c.len() as u32,
                    flags: 0,
                });
            }
        }
        h.last_t = t;
        t
    }

    fn close_by_client(&mut self, t: u64) -> u64 {
        let t = self.queue(SIDE_C, t, &[], F_FIN);
        self.queue(SIDE_S, t + SRV_LAG_US, &[], F_FIN)
    }

    fn close_by_server(&mut self, t: u64) -> u64 {
        let t = self.queue(SIDE_S, t, &[], F_FIN);
        self.queue(SIDE_C, t + self.rtt + 50, &[], F_FIN)
    }

    /// Moves what the receiver of direction `d` can acknowledge at `t` into `ack_val`.
    fn ackable(&mut self, d: usize, t: u64) -> u32 {
        let lag = self.lag(1 - d);
        let h = &mut self.h[d];
        while let Some(u) = h.unacked.front() {
            if u.t + lag <= t {
                h.ack_val = u.end;
                h.unacked.pop_front();
            } else {
                break;
            }
        }
        h.ack_val
    }

    /// The receiver of `d` acknowledges every second segment at once, a lone one after the
    /// delayed-ACK timeout, SYN and FIN at once.
    fn reschedule(&mut self, d: usize) {
        let lag = self.lag(1 - d);
        let h = &mut self.h[d];
        h.timer = match h.unacked.len() {
            0 => NEVER,
            1 => {
                let u = h.unacked[0];
                u.t + lag + if u.quick { 0 } else { DELACK_US }
            }
            _ => {
                let (a, b) = (h.unacked[0], h.unacked[1]);
                if a.quick { a.t + lag } else { b.t + lag }
            }
        };
    }

    fn spec<'a>(
        &self,
        side: usize,
        seq: u32,
        ack: u32,
        flags: TcpFlags,
        payload: &'a [u8],
    ) -> SegmentSpec<'a> {
        let (src, dst) = if side == SIDE_C {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let mut s = SegmentSpec::new(SocketAddr::V4(src), SocketAddr::V4(dst), seq, ack, payload);
        s.flags = flags;
        if side == SIDE_C {
            s.window = 64_240;
        }
        if flags.syn {
            s.wscale = self.wscale;
        }
        s
    }

    /// Puts the earliest queued packet on the wire.
    fn emit(&mut self, ctx: &mut impl Wire) -> io::Result<()> {
        let seg_t = |h: &Half| h.segs.front().map_or(NEVER, |s| s.t);
        let cands = [
            seg_t(&self.h[0]),
            seg_t(&self.h[1]),
            self.h[0].timer,
            self.h[1].timer,
        ];
        let mut best = 0;
        for i in 1..4 {
            if cands[i] < cands[best] {
                best = i;
            }
        }
        if best < 2 {
            self.emit_segment(best, ctx)
        } else {
            self.emit_pure_ack(best - 2, cands[best], ctx)
        }
    }

    fn emit_segment(&mut self, s: usize, ctx: &mut impl Wire) -> io::Result<()> {
        let seg = self.h[s].segs.pop_front().expect("segment");
        let other = 1 - s;
        let client_syn = s == SIDE_C && seg.flags & F_SYN != 0;
        let ack = if client_syn {
            0
        } else {
            self.ackable(other, seg.t)
        };
        let flags = TcpFlags {
            syn: seg.flags & F_SYN != 0,
            fin: seg.flags & F_FIN != 0,
            rst: seg.flags & F_RST != 0,
            ack: !client_syn,
        };
        let seq = self.h[s].nxt;
        {
            let h = &self.h[s];
            let payload = &h.buf[h.off..h.off + seg.len as usize];
            let spec = self.spec(s, seq, ack, flags, payload);
            ctx.packet(seg.t, &spec)?;
        }
        let h = &mut self.h[s];
        h.off += seg.len as usize;
        if h.off == h.buf.len() {
            h.buf.clear();
            h.off = 0;
            if h.buf.capacity() > 64 * 1024 {
                h.buf.shrink_to(4096);
            }
        }
        if flags.rst {
            ctx.dropped((self.h[0].segs.len() + self.h[1].segs.len()) as u64);
            for h in &mut self.h {
                h.segs.clear();
                h.timer = NEVER;
                h.buf = Vec::new();
            }
            self.dead = true;
            return Ok(());
        }
        let h = &mut self.h[s];
        h.nxt = (SeqNumber(h.nxt) + (seg.len + u32::from(flags.syn) + u32::from(flags.fin))).0;
        let end = h.nxt;
        if flags.fin {
            self.fins += 1;
        }
        if client_syn {
            // The SYN-ACK is queued explicitly; it acknowledges the SYN.
            self.h[s].ack_val = end;
        } else {
            self.h[other].acked = ack;
            self.reschedule(other);
            if seg.len > 0 || flags.syn || flags.fin {
                self.h[s].unacked.push_back(Unacked {
                    t: seg.t,
                    end,
                    quick: flags.syn || flags.fin,
                });
                self.reschedule(s);
            }
        }
        Ok(())
    }

    fn emit_pure_ack(&mut self, d: usize, t: u64, ctx: &mut impl Wire) -> io::Result<()> {
        let r = 1 - d;
        let ack = self.ackable(d, t);
        if ack != self.h[d].acked {
            let flags = TcpFlags {
                ack: true,
                ..TcpFlags::default()
            };
            let spec = self.spec(r, self.h[r].nxt, ack, flags, &[]);
            ctx.packet(t, &spec)?;
            self.h[d].acked = ack;
        }
        self.reschedule(d);
        if self.h[d].timer <= t {
            self.h[d].timer = t + 1;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Clients.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    /// TypeScript SDK / Express: LF SSE framing.
    Ts,
    /// Python SDK / uvicorn / sse-starlette: CRLF SSE framing.
    Py,
}

#[derive(Clone, Copy, Debug)]
enum ApiKind {
    Item,
    Search,
    Static,
    Metrics,
    Health,
}

#[derive(Clone, Copy, Debug)]
enum Req {
    OauthProbe,
    Initialize,
    Initialized,
    ToolsList {
        len: u32,
    },
    Call {
        progress: u32,
        result_len: u32,
        ivl: u64,
        brk: Option<u32>,
        rst_by_client: bool,
        error: bool,
        tool: u8,
    },
    Delete,
    Api {
        kind: ApiKind,
        len: u32,
        close: bool,
        think: u64,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum StreamKind {
    Init,
    List,
    Call,
}

/// An SSE response to a POST, possibly broken and resumed.
struct PostStream {
    kind: StreamKind,
    stream_no: u32,
    req_id: u64,
    /// Progress events before the final (result) event, which is number `total + 1`.
    total: u32,
    produced: u32,
    delivered: u32,
    next_t: u64,
    ivl: u64,
    brk: Option<u32>,
    rst_by_client: bool,
    connected: bool,
    reconnect_t: u64,
    result_len: u32,
    error: bool,
    tool: u8,
    list_len: u32,
}

enum Main {
    Connect,
    Next,
    Stream(PostStream),
    Closed,
}

#[derive(PartialEq, Eq)]
enum GetState {
    Off,
    Pending,
    Live,
    Done,
}

/// The standalone GET stream of a session.
struct GetTask {
    state: GetState,
    start_t: u64,
    conn: u32,
    produced: u32,
    delivered: u32,
    next_t: u64,
    brk: Option<u32>,
    broken: bool,
    connected: bool,
    reconnect_t: u64,
    end_t: u64,
    terminate: bool,
}

impl GetTask {
    fn next_step(&self) -> u64 {
        match self.state {
            GetState::Off | GetState::Done => NEVER,
            GetState::Pending => self.start_t,
            GetState::Live => {
                let mut t = self.next_t.min(self.end_t);
                if !self.connected {
                    t = t.min(self.reconnect_t);
                }
                t
            }
        }
    }
}

const TOOLS: &[&str] = &[
    "search_docs",
    "run_query",
    "read_file",
    "list_issues",
    "summarize",
    "fetch_url",
    "index_repo",
    "deploy_preview",
];

struct Actor {
    rng: Rng,
    api: bool,
    style: Style,
    priming: bool,
    proto: &'static str,
    json_list: bool,
    sid: String,
    host: String,
    client_ip: Ipv4Addr,
    server: SocketAddrV4,
    rtt: u64,
    conns: Vec<Conn>,
    next_conn: u32,
    plan: Vec<Req>,
    pc: usize,
    req_id: u64,
    streams: u32,
    main: Main,
    main_t: u64,
    main_conn: u32,
    deleted: bool,
    get: GetTask,
    est: f64,
    written: u64,
}

/// Client addresses: 10.64.0.0/16 (minus .0 and .255 hosts), each with its own ephemeral port
/// counter so no 4-tuple is ever reused.
struct Addrs {
    base: u32,
    next_ip: u32,
    ports: Vec<u16>,
}

const CLIENT_IPS: u32 = 16_000;

impl Addrs {
    fn new(base: Ipv4Addr) -> Self {
        Addrs {
            base: u32::from(base),
            next_ip: 0,
            ports: (0..CLIENT_IPS)
                .map(|i| 32_768 + (mix(u64::from(i)) % 20_000) as u16)
                .collect(),
        }
    }
    fn ip(&mut self) -> (Ipv4Addr, u32) {
        let i = self.next_ip % CLIENT_IPS;
        self.next_ip += 1;
        let host = i + 2 * (i / 254) + 1; // skip .0 and .255
        (Ipv4Addr::from(self.base + host), i)
    }
    /// The next ephemeral port of client `ip_index`.
    fn port(&mut self, ip_index: u32) -> u16 {
        let port = self.ports[ip_index as usize];
        self.ports[ip_index as usize] = if port >= 60_999 { 32_768 } else { port + 1 };
        port
    }
}

fn uuid(rng: &mut Rng, dashes: bool) -> String {
    let a = rng.next();
    let b = rng.next();
    let hex = format!(
        "{:016x}{:016x}",
        (a & 0xffff_ffff_ffff_0fff) | 0x4000,
        (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000
    );
    if dashes {
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    } else {
        hex
    }
}

fn pick_rtt(rng: &mut Rng) -> u64 {
    match rng.below(10) {
        0..=2 => rng.range(200, 900),
        3..=7 => rng.range(5_000, 30_000),
        _ => rng.range(30_000, 90_000),
    }
}

impl Actor {
    fn new_session(rng_seed: u64, addrs: &mut Addrs, port: u16, break_rate: f64) -> (Actor, u32) {
        let mut rng = Rng::new(rng_seed);
        let style = if rng.chance(0.5) {
            Style::Ts
        } else {
            Style::Py
        };
        let (priming, proto) = match rng.below(10) {
            0..=3 => (true, "2025-11-25"),
            4..=8 => (false, "2025-06-18"),
            _ => (false, "2025-03-26"),
        };
        let json_list = style == Style::Ts && rng.chance(0.25);
        let sid = uuid(&mut rng, style == Style::Ts);
        let mut plan = Vec::with_capacity(12);
        if rng.chance(0.35) {
            plan.push(Req::OauthProbe);
        }
        plan.push(Req::Initialize);
        plan.push(Req::Initialized);
        plan.push(Req::ToolsList {
            len: rng.range(2_000, 14_000) as u32,
        });
        for _ in 0..rng.range(1, 6) {
            let progress = rng.range(4, 60) as u32;
            let brk =
                (rng.chance(break_rate)).then(|| rng.range(1, u64::from(progress) - 1) as u32);
            plan.push(Req::Call {
                progress,
                result_len: if rng.chance(0.7) {
                    rng.range(150, 2_000)
                } else {
                    rng.range(2_000, 12_000)
                } as u32,
                ivl: rng.range(15_000, 150_000),
                brk,
                rst_by_client: rng.chance(0.5),
                error: rng.chance(0.03),
                tool: rng.below(TOOLS.len() as u64) as u8,
            });
        }
        if rng.chance(0.7) {
            plan.push(Req::Delete);
        }
        let get_brk = rng.chance(break_rate).then(|| rng.range(1, 4) as u32);
        Self::build(
            rng, false, style, priming, proto, json_list, sid, plan, get_brk, addrs, port,
        )
    }

    fn new_api(rng_seed: u64, addrs: &mut Addrs, port: u16) -> (Actor, u32) {
        let mut rng = Rng::new(rng_seed);
        let n = rng.range(1, 6);
        let close_last = rng.chance(0.25);
        let plan = (0..n)
            .map(|i| {
                let (kind, len) = match rng.below(20) {
                    0..=6 => (ApiKind::Item, rng.range(200, 3_000)),
                    7..=10 => (ApiKind::Search, rng.range(2_000, 40_000)),
                    11..=13 => (ApiKind::Static, rng.range(5_000, 48_000)),
                    14..=16 => (ApiKind::Metrics, rng.range(1_000, 8_000)),
                    _ => (ApiKind::Health, 2),
                };
                Req::Api {
                    kind,
                    len: len as u32,
                    close: close_last && i + 1 == n,
                    think: rng.range(20_000, 1_500_000),
                }
            })
            .collect();
        Self::build(
            rng,
            true,
            Style::Ts,
            false,
            "",
            false,
            String::new(),
            plan,
            None,
            addrs,
            port,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        mut rng: Rng,
        api: bool,
        style: Style,
        priming: bool,
        proto: &'static str,
        json_list: bool,
        sid: String,
        plan: Vec<Req>,
        get_brk: Option<u32>,
        addrs: &mut Addrs,
        port: u16,
    ) -> (Actor, u32) {
        let (client_ip, ip_index) = addrs.ip();
        let server = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 10 + rng.below(4) as u8), port);
        let rtt = pick_rtt(&mut rng);
        let mut a = Actor {
            rng,
            api,
            style,
            priming,
            proto,
            json_list,
            sid,
            host: format!("{}:{}", server.ip(), port),
            client_ip,
            server,
            rtt,
            conns: Vec::with_capacity(3),
            next_conn: 0,
            plan,
            pc: 0,
            req_id: 0,
            streams: 0,
            main: Main::Connect,
            main_t: 0,
            main_conn: 0,
            deleted: false,
            get: GetTask {
                state: GetState::Off,
                start_t: NEVER,
                conn: 0,
                produced: 0,
                delivered: 0,
                next_t: NEVER,
                brk: get_brk,
                broken: false,
                connected: false,
                reconnect_t: NEVER,
                end_t: NEVER,
                terminate: false,
            },
            est: 0.0,
            written: 0,
        };
        a.est = a.estimate();
        (a, ip_index)
    }

    /// Rough wire size of the whole plan (corrected at run time by the measured ratio).
    fn estimate(&self) -> f64 {
        let mut e = 700.0;
        let mut dur = 0.0;
        for r in &self.plan {
            e += 650.0;
            e += match *r {
                Req::OauthProbe => 300.0,
                Req::Initialize => 900.0,
                Req::Initialized => 150.0,
                Req::ToolsList { len } => f64::from(len) * 1.08 + 300.0,
                Req::Call {
                    progress,
                    result_len,
                    ivl,
                    brk,
                    ..
                } => {
                    dur += f64::from(progress + 1) * ivl as f64 + 600_000.0;
                    f64::from(progress) * 380.0
                        + f64::from(result_len) * 1.08
                        + 500.0
                        + if brk.is_some() { 1_500.0 } else { 0.0 }
                }
                Req::Delete => 150.0,
                Req::Api { len, .. } => f64::from(len) * 1.08 + 150.0,
            };
        }
        if !self.api {
            e += 1_400.0 + dur / 2_150_000.0 * 0.85 * 380.0;
        }
        e
    }

    fn next_time(&self) -> u64 {
        let mut t = self.main_t.min(self.get.next_step());
        for c in &self.conns {
            t = t.min(c.next_time());
        }
        t
    }

    fn done(&self) -> bool {
        matches!(self.main, Main::Closed)
            && matches!(self.get.state, GetState::Off | GetState::Done)
            && self.conns.is_empty()
    }

    fn conn(&mut self, id: u32) -> &mut Conn {
        self.conns
            .iter_mut()
            .find(|c| c.id == id)
            .expect("live connection")
    }

    fn open_conn(&mut self, t: u64, addrs: &mut Addrs, ip_index: u32, ctx: &mut Ctx) -> (u32, u64) {
        let client = SocketAddrV4::new(self.client_ip, addrs.port(ip_index));
        let id = self.next_conn;
        self.next_conn += 1;
        let isn = [self.rng.next() as u32, self.rng.next() as u32];
        let (c, ready) = Conn::open(id, (client, self.server), self.rtt, isn, None, t);
        self.conns.push(c);
        ctx.counts.connections += 1;
        ctx.open_conns += 1;
        ctx.counts.detail.max_concurrent_connections = ctx
            .counts
            .detail
            .max_concurrent_connections
            .max(ctx.open_conns);
        (id, ready)
    }

    /// Does one thing due at `now`: a packet or a step of the client's script.
    fn advance(
        &mut self,
        now: u64,
        addrs: &mut Addrs,
        ip_index: u32,
        ctx: &mut Ctx,
    ) -> io::Result<()> {
        for i in 0..self.conns.len() {
            if self.conns[i].next_time() <= now {
                self.conns[i].emit(ctx)?;
                if self.conns[i].done() {
                    self.conns.swap_remove(i);
                    ctx.open_conns -= 1;
                }
                return Ok(());
            }
        }
        if self.main_t <= now {
            self.main_step(now, addrs, ip_index, ctx);
        } else if self.get.next_step() <= now {
            self.get_step(now, addrs, ip_index, ctx);
        }
        Ok(())
    }

    fn think(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.range(lo, hi)
    }

    // --- HTTP message builders -------------------------------------------------------------

    fn mcp_request_head(
        &self,
        buf: &mut Vec<u8>,
        method: &str,
        body_len: Option<usize>,
        sse_only: bool,
        last_event_id: Option<&str>,
    ) {
        let session = !self.sid.is_empty() && self.req_id_session_known();
        let accept = if sse_only {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        match self.style {
            Style::Ts => {
                w!(
                    buf,
                    "{method} /mcp HTTP/1.1\r\nhost: {}\r\nconnection: keep-alive\r\n",
                    self.host
                );
                if body_len.is_some() {
                    buf.extend_from_slice(b"content-type: application/json\r\n");
                }
                w!(buf, "accept: {accept}\r\n");
                if session {
                    w!(buf, "mcp-session-id: {}\r\n", self.sid);
                    if self.proto != "2025-03-26" {
                        w!(buf, "mcp-protocol-version: {}\r\n", self.proto);
                    }
                }
                if let Some(id) = last_event_id {
                    w!(buf, "last-event-id: {id}\r\n");
                }
                buf.extend_from_slice(
                    b"accept-language: *\r\nsec-fetch-mode: cors\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\n",
                );
                if let Some(n) = body_len {
                    w!(buf, "content-length: {n}\r\n");
                }
                buf.extend_from_slice(b"\r\n");
            }
            Style::Py => {
                w!(
                    buf,
                    "{method} /mcp HTTP/1.1\r\nHost: {}\r\nAccept: {accept}\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\nUser-Agent: python-httpx/0.28.1\r\n",
                    self.host
                );
                if session {
                    w!(buf, "mcp-session-id: {}\r\n", self.sid);
                    if self.proto != "2025-03-26" {
                        w!(buf, "mcp-protocol-version: {}\r\n", self.proto);
                    }
                }
                if let Some(id) = last_event_id {
                    w!(buf, "last-event-id: {id}\r\n");
                }
                match body_len {
                    Some(n) => w!(
                        buf,
                        "content-type: application/json\r\nContent-Length: {n}\r\n\r\n"
                    ),
                    None => buf.extend_from_slice(b"\r\n"),
                }
            }
        }
    }

    /// The session ID is known once initialize has been sent (requests after it carry it).
    fn req_id_session_known(&self) -> bool {
        self.req_id > 0
    }

    fn response_head(
        &self,
        buf: &mut Vec<u8>,
        ctx: &mut Ctx,
        t: u64,
        status: u16,
        ctype: Option<&str>,
        len: Option<usize>,
    ) {
        let reason = match status {
            200 => "OK",
            202 => "Accepted",
            404 => "Not Found",
            _ => "Unknown",
        };
        let date = ctx.http_date(t);
        // Every MCP response from initialize on carries the session ID (not the OAuth probe).
        let mcp = !self.api && !self.sid.is_empty() && self.req_id > 0;
        match self.style {
            Style::Ts => {
                w!(
                    buf,
                    "HTTP/1.1 {status} {reason}\r\nX-Powered-By: Express\r\n"
                );
                if let Some(ct) = ctype {
                    w!(buf, "Content-Type: {ct}\r\n");
                }
                if ctype == Some("text/event-stream") {
                    buf.extend_from_slice(b"Cache-Control: no-cache\r\n");
                }
                if mcp {
                    w!(buf, "mcp-session-id: {}\r\n", self.sid);
                }
                w!(buf, "Date: {date}\r\nConnection: keep-alive\r\n");
                match len {
                    Some(n) => w!(buf, "Keep-Alive: timeout=5\r\nContent-Length: {n}\r\n\r\n"),
                    None => buf.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n"),
                }
            }
            Style::Py => {
                w!(
                    buf,
                    "HTTP/1.1 {status} {reason}\r\ndate: {date}\r\nserver: uvicorn\r\n"
                );
                let sse = ctype == Some("text/event-stream");
                if sse {
                    buf.extend_from_slice(
                        b"cache-control: no-cache, no-transform\r\nconnection: keep-alive\r\n",
                    );
                }
                if let Some(ct) = ctype {
                    w!(buf, "content-type: {ct}\r\n");
                }
                if mcp {
                    w!(buf, "mcp-session-id: {}\r\n", self.sid);
                }
                if sse {
                    buf.extend_from_slice(b"x-accel-buffering: no\r\n");
                }
                match len {
                    Some(n) => w!(buf, "content-length: {n}\r\n\r\n"),
                    None => buf.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n"),
                }
            }
        }
        ctx.counts.response(status);
    }

    /// Appends one SSE event (as one chunk, or two) to `buf`.
    fn sse_chunks(&mut self, buf: &mut Vec<u8>, ev: &[u8], ctx: &mut Ctx) {
        let split = self.rng.chance(0.06) && ev.len() > 8;
        if split {
            ctx.counts.detail.split_events += 1;
            // CRLF streams: between the CR and the LF ending the data line; LF: anywhere.
            let at = match self.style {
                Style::Py => ev.len() - 3,
                Style::Ts => 1 + self.rng.below(ev.len() as u64 - 2) as usize,
            };
            chunk(buf, &ev[..at]);
            chunk(buf, &ev[at..]);
        } else {
            chunk(buf, ev);
        }
    }

    /// Builds an event with the given id and JSON data into `ev`.
    fn sse_event(&self, ev: &mut Vec<u8>, stream: u32, n: u32, data: &[u8]) {
        ev.clear();
        match self.style {
            Style::Ts => {
                w!(ev, "event: message\nid: {stream}-{n}\ndata: ");
                ev.extend_from_slice(data);
                ev.extend_from_slice(b"\n\n");
            }
            Style::Py => {
                w!(ev, "id: {stream}-{n}\r\nevent: message\r\ndata: ");
                ev.extend_from_slice(data);
                ev.extend_from_slice(b"\r\n\r\n");
            }
        }
    }

    fn priming_event(&self, ev: &mut Vec<u8>, stream: u32) {
        ev.clear();
        match self.style {
            Style::Ts => w!(ev, "id: {stream}-0\nretry: 1000\ndata: \n\n"),
            Style::Py => w!(ev, "id: {stream}-0\r\ndata: \r\nretry: 1000\r\n\r\n"),
        }
    }

    /// JSON data of event `n` of POST stream `ps`, counting the JSON-RPC message.
    fn post_event_data(&self, data: &mut Vec<u8>, ps: &PostStream, n: u32, ctx: &mut Ctx) {
        data.clear();
        if n <= ps.total {
            w!(
                data,
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{},"progress":{n},"total":{},"message":"Processed {n} of {} items"}}}}"#,
                ps.req_id,
                ps.total,
                ps.total
            );
            ctx.counts.rpc_notification("notifications/progress");
            return;
        }
        ctx.counts.jsonrpc_responses += 1;
        let key = mix(ps.req_id ^ (u64::from(ps.stream_no) << 32) ^ self.rng.0);
        match ps.kind {
            StreamKind::Init => {
                w!(
                    data,
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"protocolVersion":"{}","capabilities":{{"logging":{{}},"tools":{{"listChanged":true}},"resources":{{"subscribe":true}}}},"serverInfo":{{"name":"bench-server","version":"2.0.1"}},"instructions":""#,
                    ps.req_id,
                    self.proto
                );
                data.extend_from_slice(ctx.text(key, 120));
                data.extend_from_slice(b"\"}}");
            }
            StreamKind::List => tools_list_result(data, ps.req_id, ps.list_len as usize, key, ctx),
            StreamKind::Call if ps.error => {
                ctx.counts.detail.jsonrpc_errors += 1;
                w!(
                    data,
                    r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32603,"message":"Tool {} failed: "#,
                    ps.req_id,
                    TOOLS[ps.tool as usize]
                );
                data.extend_from_slice(ctx.text(key, 60));
                data.extend_from_slice(b"\"}}");
            }
            StreamKind::Call => {
                w!(
                    data,
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":""#,
                    ps.req_id
                );
                data.extend_from_slice(ctx.text(key, ps.result_len as usize));
                data.extend_from_slice(br#""}],"isError":false}}"#);
            }
        }
    }

    /// Appends events `from..=to` of `ps` (the end of the body is a separate write, as servers
    /// send it when the handler returns).
    fn write_post_events(
        &mut self,
        buf: &mut Vec<u8>,
        ps: &PostStream,
        from: u32,
        to: u32,
        ctx: &mut Ctx,
    ) {
        let mut data = std::mem::take(&mut ctx.data);
        let mut ev = std::mem::take(&mut ctx.ev);
        for n in from..=to {
            self.post_event_data(&mut data, ps, n, ctx);
            self.sse_event(&mut ev, ps.stream_no, n, &data);
            self.sse_chunks(buf, &ev, ctx);
            ctx.counts.sse_event(self.style, false);
        }
        ctx.data = data;
        ctx.ev = ev;
    }

    fn get_event_data(&self, data: &mut Vec<u8>, n: u32, ctx: &mut Ctx) {
        data.clear();
        let key = mix(u64::from(n) ^ self.rng.0.rotate_left(17));
        match key % 8 {
            0 => {
                w!(
                    data,
                    r#"{{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{{"uri":"file:///srv/data/report-{}.csv"}}}}"#,
                    key % 1000
                );
                ctx.counts
                    .rpc_notification("notifications/resources/updated");
            }
            1 => {
                data.extend_from_slice(
                    br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
                );
                ctx.counts
                    .rpc_notification("notifications/tools/list_changed");
            }
            _ => {
                data.extend_from_slice(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"worker","data":""#);
                data.extend_from_slice(ctx.text(key, 40 + (key >> 8) as usize % 200));
                data.extend_from_slice(br#""}}"#);
                ctx.counts.rpc_notification("notifications/message");
            }
        }
    }

    fn write_get_events(&mut self, buf: &mut Vec<u8>, from: u32, to: u32, ctx: &mut Ctx) {
        let mut data = std::mem::take(&mut ctx.data);
        let mut ev = std::mem::take(&mut ctx.ev);
        for n in from..=to {
            self.get_event_data(&mut data, n, ctx);
            self.sse_event(&mut ev, 0, n, &data);
            self.sse_chunks(buf, &ev, ctx);
            ctx.counts.sse_event(self.style, true);
        }
        ctx.data = data;
        ctx.ev = ev;
    }

    // --- The request sequence ---------------------------------------------------------------

    fn main_step(&mut self, now: u64, addrs: &mut Addrs, ip_index: u32, ctx: &mut Ctx) {
        match std::mem::replace(&mut self.main, Main::Next) {
            Main::Connect => {
                let (id, ready) = self.open_conn(now, addrs, ip_index, ctx);
                self.main_conn = id;
                self.main_t = ready;
            }
            Main::Next => {
                if self.pc == self.plan.len() {
                    let id = self.main_conn;
                    self.conn(id).close_by_client(now);
                    if self.get.state != GetState::Off && self.get.end_t == NEVER {
                        self.get.end_t = now;
                        self.get.terminate = false;
                    }
                    self.main = Main::Closed;
                    self.main_t = NEVER;
                } else {
                    let req = self.plan[self.pc];
                    self.pc += 1;
                    self.send(req, now, ctx);
                }
            }
            Main::Stream(ps) => self.stream_step(ps, now, addrs, ip_index, ctx),
            Main::Closed => self.main_t = NEVER,
        }
    }

    /// Sends request `req` at `t` on the main connection and queues its response (or starts
    /// its SSE stream).
    fn send(&mut self, req: Req, t: u64, ctx: &mut Ctx) {
        let mut buf = std::mem::take(&mut ctx.buf);
        let mut body = std::mem::take(&mut ctx.data);
        buf.clear();
        body.clear();
        let cid = self.main_conn;
        let key = self.rng.next();
        let mut sse: Option<PostStream> = None;
        match req {
            Req::OauthProbe => {
                w!(
                    buf,
                    "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nhost: {}\r\nconnection: keep-alive\r\naccept: */*\r\naccept-language: *\r\nsec-fetch-mode: cors\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\n\r\n",
                    self.host
                );
                ctx.counts.request("GET", false);
                let t_req = self.conn(cid).queue(SIDE_C, t, &buf, 0);
                buf.clear();
                let body = br#"{"error":"not_found","error_description":"no protected resource metadata"}"#;
                self.response_head(
                    &mut buf,
                    ctx,
                    t_req,
                    404,
                    Some("application/json; charset=utf-8"),
                    Some(body.len()),
                );
                buf.extend_from_slice(body);
                let t_resp = t_req + self.think(300, 2_000);
                let end = self.conn(cid).queue(SIDE_S, t_resp, &buf, 0);
                self.main_t = end + self.rtt + self.think(500, 5_000);
            }
            Req::Initialize => {
                w!(
                    body,
                    r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{"roots":{{"listChanged":true}},"sampling":{{}},"elicitation":{{}}}},"clientInfo":{{"name":"{}","version":"1.4.2"}}}}}}"#,
                    self.req_id,
                    self.proto,
                    if self.style == Style::Ts {
                        "bench-ts-client"
                    } else {
                        "bench-py-client"
                    }
                );
                self.mcp_request_head(&mut buf, "POST", Some(body.len()), false, None);
                buf.extend_from_slice(&body);
                ctx.counts.request("POST", true);
                ctx.counts.rpc_request("initialize");
                sse = Some(self.new_stream(StreamKind::Init, 0, 0, None, false, false, 0, 0, key));
            }
            Req::Initialized => {
                body.extend_from_slice(
                    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                );
                self.mcp_request_head(&mut buf, "POST", Some(body.len()), false, None);
                buf.extend_from_slice(&body);
                ctx.counts.request("POST", true);
                ctx.counts.rpc_notification("notifications/initialized");
                let t_req = self.conn(cid).queue(SIDE_C, t, &buf, 0);
                buf.clear();
                let t_resp = t_req + self.think(300, 3_000);
                self.response_head(&mut buf, ctx, t_resp, 202, None, Some(0));
                let end = self.conn(cid).queue(SIDE_S, t_resp, &buf, 0);
                // The client opens the standalone GET stream once the 202 arrives.
                self.get.state = GetState::Pending;
                self.get.start_t = end + self.rtt + self.think(200, 3_000);
                self.main_t = end + self.rtt + self.think(200, 5_000);
            }
            Req::ToolsList { len } => {
                w!(
                    body,
                    r#"{{"jsonrpc":"2.0","id":{},"method":"tools/list","params":{{}}}}"#,
                    self.req_id
                );
                self.mcp_request_head(&mut buf, "POST", Some(body.len()), false, None);
                buf.extend_from_slice(&body);
                ctx.counts.request("POST", true);
                ctx.counts.rpc_request("tools/list");
                if self.json_list {
                    let t_req = self.conn(cid).queue(SIDE_C, t, &buf, 0);
                    buf.clear();
                    body.clear();
                    tools_list_result(&mut body, self.req_id, len as usize, key, ctx);
                    ctx.counts.jsonrpc_responses += 1;
                    ctx.counts.detail.json_rpc_json_responses += 1;
                    let t_resp = t_req + self.think(1_000, 20_000);
                    self.response_head(
                        &mut buf,
                        ctx,
                        t_resp,
                        200,
                        Some("application/json"),
                        Some(body.len()),
                    );
                    buf.extend_from_slice(&body);
                    let end = self.conn(cid).queue(SIDE_S, t_resp, &buf, 0);
                    self.main_t = end + self.rtt + self.think(1_000, 50_000);
                    self.req_id += 1;
                } else {
                    sse = Some(self.new_stream(
                        StreamKind::List,
                        0,
                        0,
                        None,
                        false,
                        false,
                        0,
                        len,
                        key,
                    ));
                }
            }
            Req::Call {
                progress,
                result_len,
                ivl,
                brk,
                rst_by_client,
                error,
                tool,
            } => {
                w!(
                    body,
                    r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{}","arguments":{{"query":""#,
                    self.req_id,
                    TOOLS[tool as usize]
                );
                body.extend_from_slice(ctx.text(key, 20 + (key % 100) as usize));
                w!(
                    body,
                    r#"","limit":{}}},"_meta":{{"progressToken":{}}}}}}}"#,
                    key % 50 + 1,
                    self.req_id
                );
                self.mcp_request_head(&mut buf, "POST", Some(body.len()), false, None);
                buf.extend_from_slice(&body);
                ctx.counts.request("POST", true);
                ctx.counts.rpc_request("tools/call");
                ctx.counts.detail.tool_calls += 1;
                sse = Some(self.new_stream(
                    StreamKind::Call,
                    progress,
                    ivl,
                    brk,
                    rst_by_client,
                    error,
                    result_len,
                    0,
                    u64::from(tool),
                ));
            }
            Req::Delete => {
                self.mcp_request_head(&mut buf, "DELETE", None, false, None);
                ctx.counts.request("DELETE", true);
                let t_req = self.conn(cid).queue(SIDE_C, t, &buf, 0);
                buf.clear();
                let t_resp = t_req + self.think(300, 2_000);
                self.response_head(&mut buf, ctx, t_resp, 200, None, Some(0));
                let end = self.conn(cid).queue(SIDE_S, t_resp, &buf, 0);
                self.deleted = true;
                ctx.counts.detail.sessions_deleted += 1;
                if self.get.state != GetState::Off && self.get.end_t == NEVER {
                    // The server ends the standalone stream of the deleted session.
                    self.get.end_t = end + 300;
                    self.get.terminate = true;
                }
                self.main_t = end + self.rtt + self.think(100, 2_000);
            }
            Req::Api {
                kind,
                len,
                close,
                think,
            } => {
                self.api_exchange(
                    &mut buf,
                    &mut body,
                    kind,
                    len as usize,
                    close,
                    think,
                    t,
                    key,
                    ctx,
                );
            }
        }
        if let Some(mut ps) = sse {
            let t_req = self.conn(cid).queue(SIDE_C, t, &buf, 0);
            buf.clear();
            let t_resp = t_req + self.think(300, 5_000);
            self.response_head(&mut buf, ctx, t_resp, 200, Some("text/event-stream"), None);
            ctx.counts.detail.sse_responses += 1;
            if self.priming {
                let mut ev = std::mem::take(&mut ctx.ev);
                self.priming_event(&mut ev, ps.stream_no);
                chunk(&mut buf, &ev);
                ctx.counts.sse_event(self.style, false);
                ctx.counts.detail.sse_priming_events += 1;
                ctx.ev = ev;
            }
            let end = self.conn(cid).queue(SIDE_S, t_resp, &buf, 0);
            ps.next_t = end
                + match ps.kind {
                    StreamKind::Init => self.think(500, 5_000),
                    StreamKind::List => self.think(1_000, 20_000),
                    StreamKind::Call => self.think(ps.ivl / 2, ps.ivl * 3 / 2),
                };
            self.main_t = ps.next_t;
            self.main = Main::Stream(ps);
        }
        buf.clear();
        ctx.buf = buf;
        ctx.data = body;
    }

    #[allow(clippy::too_many_arguments)]
    fn new_stream(
        &mut self,
        kind: StreamKind,
        total: u32,
        ivl: u64,
        brk: Option<u32>,
        rst_by_client: bool,
        error: bool,
        result_len: u32,
        list_len: u32,
        tool: u64,
    ) -> PostStream {
        self.streams += 1;
        let ps = PostStream {
            kind,
            stream_no: self.streams,
            req_id: self.req_id,
            total,
            produced: 0,
            delivered: 0,
            next_t: NEVER,
            ivl,
            brk,
            rst_by_client,
            connected: true,
            reconnect_t: NEVER,
            result_len,
            error,
            tool: tool as u8,
            list_len,
        };
        self.req_id += 1;
        ps
    }

    fn stream_step(
        &mut self,
        mut ps: PostStream,
        now: u64,
        addrs: &mut Addrs,
        ip_index: u32,
        ctx: &mut Ctx,
    ) {
        let last = ps.total + 1;
        let cid = self.main_conn;
        if ps.connected {
            debug_assert_eq!(ps.next_t, now);
            let n = ps.produced + 1;
            if ps.brk == Some(ps.delivered) && ps.delivered > 0 && n <= ps.total {
                // The connection dies right after event `delivered`; this event is stored.
                let side = if ps.rst_by_client { SIDE_C } else { SIDE_S };
                let c = self.conn(cid);
                let t = now.max(c.last_t() + 1);
                c.queue(side, t, &[], F_RST);
                ctx.counts.detail.connections_reset += 1;
                ps.brk = None;
                ps.connected = false;
                ps.produced = n;
                ps.reconnect_t = now + 1_000_000 + self.think(0, 50_000);
                ps.next_t = now + self.think(ps.ivl / 2, ps.ivl * 3 / 2);
            } else {
                let mut buf = std::mem::take(&mut ctx.buf);
                buf.clear();
                self.write_post_events(&mut buf, &ps, n, n, ctx);
                let mut end = self.conn(cid).queue(SIDE_S, now, &buf, 0);
                ctx.buf = buf;
                ps.produced = n;
                ps.delivered = n;
                if n == last {
                    let t = end + self.think(20, 300);
                    end = self.conn(cid).queue(SIDE_S, t, b"0\r\n\r\n", 0);
                    self.main_t = end + self.rtt + self.next_think(ps.kind);
                    self.main = Main::Next;
                    return;
                }
                ps.next_t = now
                    + if n == ps.total {
                        self.think(ps.ivl, ps.ivl * 3)
                    } else {
                        self.think(ps.ivl / 2, ps.ivl * 3 / 2)
                    };
            }
        } else if ps.next_t <= ps.reconnect_t {
            // Produced while the client is away: the server stores it.
            ps.produced += 1;
            ps.next_t = if ps.produced == last {
                NEVER
            } else {
                now + self.think(ps.ivl / 2, ps.ivl * 3 / 2)
            };
        } else {
            // Resume with GET + Last-Event-ID on a new connection.
            let (id, ready) = self.open_conn(now, addrs, ip_index, ctx);
            let mut buf = std::mem::take(&mut ctx.buf);
            buf.clear();
            let leid = format!("{}-{}", ps.stream_no, ps.delivered);
            self.mcp_request_head(&mut buf, "GET", None, true, Some(&leid));
            ctx.counts.request("GET", true);
            ctx.counts.resumed_streams += 1;
            ctx.counts.detail.resumed_post_streams += 1;
            let t_req = self.conn(id).queue(SIDE_C, ready, &buf, 0);
            let t_resp = t_req + self.think(300, 3_000);
            while ps.produced < last && ps.next_t <= t_resp {
                ps.produced += 1;
                ps.next_t = if ps.produced == last {
                    NEVER
                } else {
                    ps.next_t + self.think(ps.ivl / 2, ps.ivl * 3 / 2)
                };
            }
            buf.clear();
            self.response_head(&mut buf, ctx, t_resp, 200, Some("text/event-stream"), None);
            ctx.counts.detail.sse_responses += 1;
            let (from, to) = (ps.delivered + 1, ps.produced);
            ctx.counts.detail.replayed_events += u64::from(to + 1 - from);
            self.write_post_events(&mut buf, &ps, from, to, ctx);
            let mut end = self.conn(id).queue(SIDE_S, t_resp, &buf, 0);
            ctx.buf = buf;
            ps.delivered = ps.produced;
            ps.connected = true;
            ps.reconnect_t = NEVER;
            self.main_conn = id;
            if ps.produced == last {
                let t = end + self.think(20, 300);
                end = self.conn(id).queue(SIDE_S, t, b"0\r\n\r\n", 0);
                self.main_t = end + self.rtt + self.next_think(ps.kind);
                self.main = Main::Next;
                return;
            }
        }
        self.main_t = if ps.connected {
            ps.next_t
        } else {
            ps.next_t.min(ps.reconnect_t)
        };
        self.main = Main::Stream(ps);
    }

    fn next_think(&mut self, after: StreamKind) -> u64 {
        match after {
            StreamKind::Init => self.think(200, 3_000),
            StreamKind::List => self.think(1_000, 200_000),
            StreamKind::Call => self.think(50_000, 1_500_000),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn api_exchange(
        &mut self,
        buf: &mut Vec<u8>,
        body: &mut Vec<u8>,
        kind: ApiKind,
        len: usize,
        close: bool,
        think: u64,
        t: u64,
        key: u64,
        ctx: &mut Ctx,
    ) {
        let cid = self.main_conn;
        let conn_hdr = if close { "close" } else { "keep-alive" };
        let ua = ["Go-http-client/1.1", "python-requests/2.32.3", "curl/8.5.0"][(key % 3) as usize];
        let (method, target) = match kind {
            ApiKind::Item => ("GET", format!("/api/v1/items/{}", key % 100_000)),
            ApiKind::Search => ("POST", "/api/v1/search".to_string()),
            ApiKind::Static => ("GET", format!("/static/app.{:08x}.js", key as u32)),
            ApiKind::Metrics => ("GET", "/metrics".to_string()),
            ApiKind::Health => ("GET", "/healthz".to_string()),
        };
        w!(
            buf,
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {ua}\r\nAccept: */*\r\nAccept-Encoding: identity\r\nConnection: {conn_hdr}\r\n",
            self.host
        );
        if let ApiKind::Search = kind {
            w!(body, r#"{{"q":""#);
            body.extend_from_slice(ctx.text(key, 10 + (key % 40) as usize));
            w!(body, r#"","limit":{},"offset":0}}"#, key % 40 + 10);
            w!(
                buf,
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            buf.extend_from_slice(body);
        } else {
            buf.extend_from_slice(b"\r\n");
        }
        ctx.counts.request(method, false);
        let t_req = self.conn(cid).queue(SIDE_C, t, buf, 0);
        buf.clear();
        body.clear();
        let t_resp = t_req + self.think(500, 30_000);
        let mut status = 200;
        let ctype;
        match kind {
            ApiKind::Item => {
                if key.is_multiple_of(10) {
                    status = 404;
                    body.extend_from_slice(br#"{"error":"not found","code":404}"#);
                } else {
                    w!(body, r#"{{"id":{},"name":""#, key % 100_000);
                    body.extend_from_slice(ctx.text(key, 24));
                    body.extend_from_slice(br#"","tags":["alpha","beta"],"description":""#);
                    body.extend_from_slice(ctx.text(key >> 7, len));
                    body.extend_from_slice(br#""}"#);
                }
                ctype = "application/json";
            }
            ApiKind::Search => {
                let mut i = 0u64;
                w!(body, r#"{{"total":{},"results":["#, len / 300);
                while body.len() < len {
                    if i > 0 {
                        body.push(b',');
                    }
                    w!(body, r#"{{"id":{},"title":""#, (key >> 3) % 100_000 + i);
                    body.extend_from_slice(ctx.text(key + i, 30));
                    body.extend_from_slice(br#"","snippet":""#);
                    body.extend_from_slice(ctx.text(key ^ i, 200));
                    w!(body, r#"","score":0.{}}}"#, 99 - i.min(98));
                    i += 1;
                }
                body.extend_from_slice(b"]}");
                ctype = "application/json";
            }
            ApiKind::Static => {
                body.extend_from_slice(b"/*! app bundle */\n(function(){var s=\"");
                body.extend_from_slice(ctx.text(key, len));
                body.extend_from_slice(b"\";console.log(s.length);})();\n");
                ctype = "application/javascript; charset=utf-8";
            }
            ApiKind::Metrics => {
                let mut i = 0;
                while body.len() < len {
                    w!(
                        body,
                        "# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\nhttp_requests_total{{handler=\"/api/v1/items\",code=\"{}\"}} {}\n",
                        200 + i % 5,
                        mix(key + i) % 1_000_000
                    );
                    i += 1;
                }
                ctype = "text/plain; version=0.0.4";
            }
            ApiKind::Health => {
                body.extend_from_slice(b"ok");
                ctype = "text/plain; charset=utf-8";
            }
        }
        let chunked = matches!(kind, ApiKind::Search);
        // Plain responses in the TypeScript (Express) header style.
        let date = ctx.http_date(t_resp).to_string();
        let reason = if status == 200 { "OK" } else { "Not Found" };
        w!(
            buf,
            "HTTP/1.1 {status} {reason}\r\nX-Powered-By: Express\r\nContent-Type: {ctype}\r\nDate: {date}\r\nConnection: {conn_hdr}\r\n"
        );
        ctx.counts.response(status);
        let mut end;
        if chunked {
            // A streamed body: the head, each chunk and the last chunk are separate writes.
            buf.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            end = self.conn(cid).queue(SIDE_S, t_resp, buf, 0);
            let parts = 1 + (key % 3) as usize;
            let step = body.len().div_ceil(parts);
            for c in body.chunks(step) {
                buf.clear();
                chunk(buf, c);
                let t = end + self.think(50, 2_000);
                end = self.conn(cid).queue(SIDE_S, t, buf, 0);
            }
            let t = end + self.think(20, 300);
            end = self.conn(cid).queue(SIDE_S, t, b"0\r\n\r\n", 0);
        } else {
            if !close {
                buf.extend_from_slice(b"Keep-Alive: timeout=5\r\n");
            }
            w!(buf, "Content-Length: {}\r\n\r\n", body.len());
            buf.extend_from_slice(body);
            end = t_resp;
            for part in buf.chunks(MAX_WRITE) {
                end = self.conn(cid).queue(SIDE_S, end, part, 0);
            }
        }
        if close {
            self.conn(cid).close_by_server(end + 100);
            ctx.counts.detail.connections_closed_by_server += 1;
            self.main = Main::Closed;
            self.main_t = NEVER;
            self.pc = self.plan.len();
        } else {
            self.main_t = end + self.rtt + think;
        }
    }

    // --- The standalone GET stream ----------------------------------------------------------

    fn get_step(&mut self, now: u64, addrs: &mut Addrs, ip_index: u32, ctx: &mut Ctx) {
        match self.get.state {
            GetState::Pending => {
                if self.get.end_t <= now {
                    self.get.state = GetState::Done;
                    return;
                }
                let (id, ready) = self.open_conn(now, addrs, ip_index, ctx);
                let mut buf = std::mem::take(&mut ctx.buf);
                buf.clear();
                self.mcp_request_head(&mut buf, "GET", None, true, None);
                ctx.counts.request("GET", true);
                ctx.counts.detail.get_streams += 1;
                let t_req = self.conn(id).queue(SIDE_C, ready, &buf, 0);
                buf.clear();
                let t_resp = t_req + self.think(300, 3_000);
                self.response_head(&mut buf, ctx, t_resp, 200, Some("text/event-stream"), None);
                ctx.counts.detail.sse_responses += 1;
                let end = self.conn(id).queue(SIDE_S, t_resp, &buf, 0);
                ctx.buf = buf;
                self.get.conn = id;
                self.get.connected = true;
                self.get.state = GetState::Live;
                self.get.next_t = end + self.think(300_000, 4_000_000);
            }
            GetState::Live => {
                let g = &self.get;
                let reconnect_t = if g.connected { NEVER } else { g.reconnect_t };
                if g.end_t <= g.next_t.min(reconnect_t) {
                    if g.connected {
                        let id = g.conn;
                        let terminate = g.terminate;
                        let rtt = self.rtt;
                        let c = self.conn(id);
                        if terminate {
                            let end = c.queue(SIDE_S, now, b"0\r\n\r\n", 0);
                            c.close_by_client(end + rtt + 100);
                        } else {
                            c.close_by_client(now);
                        }
                    } else {
                        ctx.counts.detail.broken_streams_not_resumed += 1;
                    }
                    self.get.state = GetState::Done;
                } else if reconnect_t <= g.next_t {
                    let (id, ready) = self.open_conn(now, addrs, ip_index, ctx);
                    let mut buf = std::mem::take(&mut ctx.buf);
                    buf.clear();
                    let leid = format!("0-{}", self.get.delivered);
                    self.mcp_request_head(&mut buf, "GET", None, true, Some(&leid));
                    ctx.counts.request("GET", true);
                    ctx.counts.resumed_streams += 1;
                    ctx.counts.detail.resumed_get_streams += 1;
                    let t_req = self.conn(id).queue(SIDE_C, ready, &buf, 0);
                    let t_resp = t_req + self.think(300, 3_000);
                    while self.get.next_t <= t_resp {
                        self.get.produced += 1;
                        self.get.next_t += self.think(300_000, 4_000_000);
                    }
                    buf.clear();
                    self.response_head(&mut buf, ctx, t_resp, 200, Some("text/event-stream"), None);
                    ctx.counts.detail.sse_responses += 1;
                    let (from, to) = (self.get.delivered + 1, self.get.produced);
                    if to >= from {
                        ctx.counts.detail.replayed_events += u64::from(to + 1 - from);
                        self.write_get_events(&mut buf, from, to, ctx);
                    }
                    self.conn(id).queue(SIDE_S, t_resp, &buf, 0);
                    ctx.buf = buf;
                    self.get.delivered = to;
                    self.get.conn = id;
                    self.get.connected = true;
                    self.get.reconnect_t = NEVER;
                } else {
                    let gap = self.think(300_000, 4_000_000);
                    if self.get.connected {
                        let id = self.get.conn;
                        if self.get.brk == Some(self.get.delivered) && !self.get.broken {
                            // A proxy cuts the stream; this event is stored for the replay.
                            let c = self.conn(id);
                            let t = now.max(c.last_t() + 1);
                            c.queue(SIDE_S, t, &[], F_RST);
                            ctx.counts.detail.connections_reset += 1;
                            self.get.broken = true;
                            self.get.connected = false;
                            self.get.produced += 1;
                            self.get.reconnect_t = now + 1_000_000 + self.think(0, 50_000);
                        } else {
                            let mut buf = std::mem::take(&mut ctx.buf);
                            buf.clear();
                            if self.rng.chance(0.15) {
                                let mut ev = std::mem::take(&mut ctx.ev);
                                ev.clear();
                                match self.style {
                                    Style::Ts => ev.extend_from_slice(b": keepalive\n\n"),
                                    Style::Py => {
                                        let s = now / 1_000_000;
                                        w!(
                                            ev,
                                            ": ping - 2026-03-02 {:02}:{:02}:{:02}.{:06}+00:00\r\n\r\n",
                                            9 + s / 3600,
                                            s / 60 % 60,
                                            s % 60,
                                            now % 1_000_000
                                        );
                                    }
                                }
                                chunk(&mut buf, &ev);
                                ctx.ev = ev;
                                ctx.counts.detail.sse_comments += 1;
                            } else {
                                let n = self.get.produced + 1;
                                self.write_get_events(&mut buf, n, n, ctx);
                                self.get.produced = n;
                                self.get.delivered = n;
                            }
                            self.conn(id).queue(SIDE_S, now, &buf, 0);
                            ctx.buf = buf;
                        }
                    } else {
                        self.get.produced += 1;
                    }
                    self.get.next_t = now + gap;
                }
            }
            GetState::Off | GetState::Done => {}
        }
    }
}

fn chunk(buf: &mut Vec<u8>, data: &[u8]) {
    w!(buf, "{:x}\r\n", data.len());
    buf.extend_from_slice(data);
    buf.extend_from_slice(b"\r\n");
}

fn tools_list_result(data: &mut Vec<u8>, id: u64, len: usize, key: u64, ctx: &Ctx) {
    w!(data, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":["#);
    let start = data.len();
    let mut i = 0;
    while data.len() - start < len || i == 0 {
        if i > 0 {
            data.push(b',');
        }
        let name = TOOLS[i % TOOLS.len()];
        w!(data, r#"{{"name":"{name}_{i}","description":""#);
        data.extend_from_slice(
            ctx.text(key + i as u64, 120 + (mix(key + i as u64) % 300) as usize),
        );
        data.extend_from_slice(br#"","inputSchema":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["query"]}}"#);
        i += 1;
    }
    data.extend_from_slice(b"]}}");
}

// ---------------------------------------------------------------------------------------------
// The scheduler.

enum Slot {
    Idle,
    Active(Box<Actor>, u32),
    Retired,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "kb" => 1e3,
        "m" | "mib" => 1024.0 * 1024.0,
        "mb" => 1e6,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "gb" => 1e9,
        other => return Err(format!("unknown size unit {other:?}")),
    };
    Ok((n * mult) as u64)
}

fn main() -> io::Result<()> {
    let args = Args::parse();
    let target =
        parse_size(&args.size).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if !(0.0..1.0).contains(&args.noise_share) {
        let e = "--noise-share must be at least 0 and below 1";
        return Err(io::Error::new(io::ErrorKind::InvalidInput, e));
    }
    if args.noise_share > 0.0 {
        return noise::main(&args, target);
    }
    let started = Instant::now();
    let concurrency = args.concurrency.unwrap_or(2500);
    let counts = write_mcp(&args, &args.out, target, concurrency)?;
    write_json(
        &counts_path(&args.out),
        &mcp_doc(&args, target, concurrency, &counts),
    )?;
    say_wrote(&args.out, &counts, started);
    Ok(())
}

/// The `FILE.counts.json` next to a capture.
fn counts_path(capture: &Path) -> PathBuf {
    let mut p = capture.as_os_str().to_owned();
    p.push(".counts.json");
    PathBuf::from(p)
}

fn write_json(path: &Path, doc: &serde_json::Value) -> io::Result<()> {
    let mut f = BufWriter::new(File::create(path)?);
    serde_json::to_writer_pretty(&mut f, doc)?;
    writeln!(f)?;
    f.flush()
}

fn mcp_doc(args: &Args, target: u64, concurrency: u32, counts: &Counts) -> serde_json::Value {
    serde_json::json!({
        "generator": {
            "seed": args.seed,
            "port": args.port,
            "target_bytes": target,
            "concurrency": concurrency,
            "non_mcp_share": args.non_mcp_share,
            "break_rate": args.break_rate,
            "event_ids": "<stream>-<n>: stream 0 = standalone GET, 1.. = POST streams of the session in order; n from 1 per stream, 0 = priming",
        },
        "counts": counts,
    })
}

fn say_wrote(path: &Path, counts: &Counts, started: Instant) {
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} ({} bytes, {} packets, {} sessions, {} connections, {} HTTP requests) in {:.2}s ({:.0} MB/s); counts in {}",
        path.display(),
        counts.bytes,
        counts.packets,
        counts.sessions,
        counts.connections,
        counts.http_requests,
        secs,
        counts.bytes as f64 / secs / 1e6,
        counts_path(path).display()
    );
}

/// Writes the MCP (and plain API) traffic of about `target` bytes to `path`; returns its counts.
fn write_mcp(args: &Args, path: &Path, target: u64, concurrency: u32) -> io::Result<Counts> {
    let mut ctx = Ctx {
        out: Out::create(path)?,
        counts: Counts::default(),
        lorem: make_lorem(args.seed),
        date_sec: u64::MAX,
        date: String::new(),
        open_conns: 0,
        break_rate: args.break_rate,
        buf: Vec::with_capacity(64 * 1024),
        ev: Vec::with_capacity(16 * 1024),
        data: Vec::with_capacity(64 * 1024),
    };
    let mut addrs = Addrs::new(Ipv4Addr::new(10, 64, 0, 0));
    let mut master = Rng::new(args.seed);
    let mut slots: Vec<Slot> = Vec::with_capacity(concurrency as usize);
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::with_capacity(concurrency as usize);
    for i in 0..concurrency {
        slots.push(Slot::Idle);
        heap.push(Reverse((master.below(RAMP_US), i)));
    }
    let mut actors_started: u64 = 0;
    let mut active: u64 = 0;
    // Size budget: committed = written + estimated remaining of the active clients, per kind of
    // client (0 = MCP session, 1 = API client), the estimates corrected by the measured ratio.
    let mut est_active = [0.0f64; 2];
    let mut written_active = [0u64; 2];
    let (mut done_est, mut done_written, mut done_n) = ([0.0f64; 2], [0u64; 2], [0u64; 2]);
    let ratio = |k: usize, done_est: &[f64; 2], done_written: &[u64; 2], done_n: &[u64; 2]| {
        if done_n[k] >= 8 {
            (done_written[k] as f64 / done_est[k]).clamp(0.5, 2.0)
        } else {
            1.0
        }
    };
    // Planned requests, to keep the non-MCP share.
    let (mut planned_total, mut planned_non_mcp) = (0u64, 0u64);

    while let Some(Reverse((now, slot))) = heap.pop() {
        let s = slot as usize;
        match &mut slots[s] {
            Slot::Retired => {}
            Slot::Idle => {
                let seed = mix(args.seed.wrapping_mul(0x1000_0000_01b3) ^ actors_started);
                let api = (planned_non_mcp as f64) < args.non_mcp_share * planned_total as f64;
                let (mut actor, ip_index) = if api {
                    Actor::new_api(seed, &mut addrs, args.port)
                } else {
                    Actor::new_session(seed, &mut addrs, args.port, ctx.break_rate)
                };
                let r = [
                    ratio(0, &done_est, &done_written, &done_n),
                    ratio(1, &done_est, &done_written, &done_n),
                ];
                let remaining: f64 = (0..2)
                    .map(|k| (r[k] * est_active[k] - written_active[k] as f64).max(0.0))
                    .sum();
                if ctx.out.bytes as f64 + remaining + r[usize::from(api)] * actor.est
                    > target as f64
                {
                    slots[s] = Slot::Retired;
                    continue;
                }
                actors_started += 1;
                let reqs = actor.plan.len() as u64 + u64::from(!api);
                let non_mcp = actor
                    .plan
                    .iter()
                    .filter(|r| matches!(r, Req::Api { .. } | Req::OauthProbe))
                    .count() as u64;
                planned_total += reqs;
                planned_non_mcp += non_mcp;
                if api {
                    ctx.counts.detail.api_clients += 1;
                } else {
                    ctx.counts.sessions += 1;
                    match actor.style {
                        Style::Ts => ctx.counts.detail.sessions_lf += 1,
                        Style::Py => ctx.counts.detail.sessions_crlf += 1,
                    }
                    if actor.priming {
                        ctx.counts.detail.sessions_priming += 1;
                    }
                }
                active += 1;
                ctx.counts.detail.max_concurrent_clients =
                    ctx.counts.detail.max_concurrent_clients.max(active);
                est_active[usize::from(api)] += actor.est;
                actor.main_t = now;
                let next = actor.next_time();
                slots[s] = Slot::Active(Box::new(actor), ip_index);
                heap.push(Reverse((next, slot)));
            }
            Slot::Active(actor, ip_index) => {
                let before = ctx.out.bytes;
                actor.advance(now, &mut addrs, *ip_index, &mut ctx)?;
                let delta = ctx.out.bytes - before;
                actor.written += delta;
                let k = usize::from(actor.api);
                written_active[k] += delta;
                if actor.done() {
                    active -= 1;
                    est_active[k] -= actor.est;
                    written_active[k] -= actor.written;
                    done_est[k] += actor.est;
                    done_written[k] += actor.written;
                    done_n[k] += 1;
                    slots[s] = Slot::Idle;
                    let wake = now + master.range(1_000, 300_000);
                    heap.push(Reverse((wake, slot)));
                } else {
                    let next = actor.next_time();
                    debug_assert!(next >= now && next != NEVER, "actor stalled");
                    heap.push(Reverse((next, slot)));
                }
            }
        }
    }

    ctx.counts.packets = ctx.out.packets;
    ctx.counts.detail.capture_seconds = ctx.out.last_t as f64 / 1e6;
    ctx.counts.bytes = ctx.out.finish()?;
    ctx.counts.detail.estimate_ratio = [
        done_written[0] as f64 / done_est[0].max(1.0),
        done_written[1] as f64 / done_est[1].max(1.0),
    ];
    if ctx.counts.detail.dropped_segments != 0 {
        eprintln!(
            "warning: {} segments dropped by resets; counts may be off",
            ctx.counts.detail.dropped_segments
        );
    }
    Ok(ctx.counts)
}
