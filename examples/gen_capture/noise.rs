//! The mostly-not-MCP capture (`--noise-share`, issue 32): the generator's MCP traffic, written
//! alone to `--mcp-out` first, then read back and merged packet by packet, each with its own
//! timestamp, with traffic that is not MCP. The MCP records of the mixed file are therefore the
//! records of the alone file, byte for byte, and an analysis of both must find the same sessions.
//!
//! The noise is spread evenly over the time the MCP traffic spans (new flows start as the bytes
//! they will write fall due) and is made of one-connection flows, each picked with a probability
//! that gives every kind its share of the noise bytes:
//!
//! | kind | share | what |
//! |---|---:|---|
//! | `download` | 42% | HTTP/1.1 `GET` of 128 KiB–16 MiB files (`Content-Length` or chunked), paced at 20–300 Mbit/s, 1–2 a connection |
//! | `upload` | 15% | HTTP/1.1 `PUT` of 64 KiB–8 MiB (`Content-Length`) or chunked `POST` of CSV, answered `201` with JSON |
//! | `tls` | 20% | port 443: a TLS 1.3 ClientHello (SNI, ALPN) and ServerHello, then opaque records both ways; no keys |
//! | `h2c` | 8% | HTTP/2 with prior knowledge: preface, SETTINGS, sequential streams (`GET`, JSON `POST`), HPACK heads, DATA frames, GOAWAY |
//! | `api` | 10% | keep-alive JSON REST (port 8000) and Ethereum JSON-RPC (`eth_blockNumber`, …, port 8545): JSON-RPC that is not MCP |
//! | `short` | 5% | one small request on a fresh connection (`Connection: close`), the server closes |
//!
//! Servers are `10.1.K.x` (K by kind), clients `10.80.0.0/16`, so no 4-tuple is shared with the
//! MCP traffic (`10.0.0.10–13`, clients `10.64.0.0/16`). TCP is the generator's model (handshake,
//! delayed ACKs, FINs, valid checksums), with window scaling on these connections.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufReader, Read, Write as _};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::{
    Addrs, Args, BASE_SECS, Conn, Counts, MSS, NEVER, Out, Rng, SER_US, SIDE_C, SIDE_S, Wire,
    chunk, counts_path, http_date, make_lorem, mcp_doc, mix, pick_rtt, say_wrote, write_json,
    write_mcp,
};

/// Bytes of a body written at once: a server's or client's write while it streams.
const PIECE: usize = 64 * 1024;
/// Random bytes bodies are cut from (compressed files, media, ciphertext), plus a piece so that
/// any piece can start anywhere in the first megabyte.
const BLOB_LEN: usize = 1 << 20;
/// Bytes a packet adds to its payload in the file: record header, Ethernet, IPv4, TCP.
const PER_PACKET: u64 = 16 + 14 + 20 + 20;
/// TLS 1.3 record payload limit (RFC 8446 §5.2: 2^14 plus the content type and a 16-byte tag).
const TLS_RECORD: usize = (1 << 14) + 17;
/// HTTP/2 default SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2).
const H2_FRAME: usize = 1 << 14;
/// Keeps the noise's randomness apart from the MCP traffic's of the same seed ("noise").
const SALT: u64 = 0x006e_6f69_7365;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Download,
    Upload,
    Tls,
    H2c,
    Api,
    Short,
}

const KINDS: [(Kind, &str, f64, f64); 6] = [
    // kind, name, share of the noise bytes, first guess of a flow's bytes
    (Kind::Download, "download", 0.42, 5e6),
    (Kind::Upload, "upload", 0.15, 2e6),
    (Kind::Tls, "tls", 0.20, 1e6),
    (Kind::H2c, "h2c", 0.08, 6e5),
    (Kind::Api, "api", 0.10, 7e4),
    (Kind::Short, "short", 0.05, 1.4e3),
];

#[derive(Default, Serialize)]
struct KindCounts {
    connections: u64,
    /// TCP payload bytes.
    payload_bytes: u64,
    /// File bytes (headers and ACKs included) as estimated when the flows started.
    bytes_planned: u64,
}

#[derive(Default, Serialize)]
pub(super) struct NoiseCounts {
    connections: u64,
    packets: u64,
    /// Bytes of the noise's records in the file (headers included).
    bytes: u64,
    /// HTTP/1.1 requests and HTTP/2 streams in clear: each an exchange, none of them MCP.
    http_requests: u64,
    http_responses: u64,
    http1_requests: u64,
    h2_streams: u64,
    h2_connections: u64,
    chunked_bodies: u64,
    /// Exchanges carrying JSON-RPC that is not MCP (the Ethereum API).
    jsonrpc_exchanges: u64,
    tls_connections: u64,
    tls_records: u64,
    short_connections: u64,
    by_kind: BTreeMap<&'static str, KindCounts>,
    /// What the analyzer's early classification sets aside (docs/classification.md).
    set_aside: SetAsideCounts,
    max_concurrent_connections: u64,
    /// Segments dropped by resets (the noise sends none: must be 0).
    dropped_segments: u64,
}

/// The connections the analyzer's early classification sets aside, by the rule their first
/// request meets, and what it still sees of them: every connection but HTTP/2 is set aside
/// after its first client write (a TLS ClientHello, or an HTTP/1.1 request none of whose kinds
/// here can be MCP), and only that write is examined.
#[derive(Default, Serialize)]
struct SetAsideCounts {
    connections: u64,
    tls_without_keys: u64,
    request_not_mcp: u64,
    jsonrpc_not_mcp: u64,
    json_not_jsonrpc: u64,
    /// Payload bytes after each connection's first client write.
    bytes_not_examined: u64,
    /// HTTP/1.1 requests examined on them: the first of each.
    http_requests: u64,
}

impl SetAsideCounts {
    /// Counts a connection of `kind` (`eth`: the Ethereum API) set aside after the `first`
    /// bytes of its `payload`, its client's first write (`post`: a `POST`, whose JSON body is
    /// read; any other request cannot be MCP by its method); HTTP/2 is examined whole.
    fn count(&mut self, kind: Kind, eth: bool, (first, post): (u64, bool), payload: u64) {
        let reason = match kind {
            Kind::H2c => return,
            Kind::Tls => &mut self.tls_without_keys,
            Kind::Api if eth => &mut self.jsonrpc_not_mcp,
            Kind::Api if post => &mut self.json_not_jsonrpc,
            Kind::Api | Kind::Download | Kind::Upload | Kind::Short => &mut self.request_not_mcp,
        };
        *reason += 1;
        self.connections += 1;
        self.bytes_not_examined += payload - first;
        self.http_requests += u64::from(kind != Kind::Tls);
    }
}

// ---------------------------------------------------------------------------------------------
// The plan of a flow: what each side writes, when, framed how.

#[derive(Clone, Copy)]
enum Framing {
    Raw,
    /// One HTTP/1.1 chunk (RFC 9112 §7.1).
    Chunk,
    /// TLS application-data records.
    Tls,
    /// HTTP/2 DATA frames of a stream; END_STREAM on the last frame when `end`.
    H2Data {
        stream: u32,
        end: bool,
    },
}

enum Data {
    Bytes(Vec<u8>),
    /// `len` bytes of body, random or text, chosen by `key`, then framed.
    Body {
        len: usize,
        key: u64,
        text: bool,
        framing: Framing,
    },
}

enum Step {
    /// `side` writes `data` `gap` µs after the previous step's last segment.
    Send { side: usize, gap: u64, data: Data },
    /// `side` closes with a FIN, the other answers with its own.
    Close { side: usize, gap: u64 },
}

fn framed_len(len: usize, framing: Framing) -> usize {
    match framing {
        Framing::Raw => len,
        Framing::Chunk => len + format!("{len:x}").len() + 4,
        Framing::Tls => len + 5 * len.div_ceil(TLS_RECORD),
        Framing::H2Data { .. } => len + 9 * len.div_ceil(H2_FRAME).max(1),
    }
}

/// Bytes a write of `len` payload bytes takes in the file, with the ACKs it draws.
fn wire_est(len: usize) -> u64 {
    let segs = len.div_ceil(MSS) as u64;
    len as u64 + segs * PER_PACKET + segs.div_ceil(2) * PER_PACKET
}

struct Plan {
    steps: VecDeque<Step>,
    /// Expected bytes in the file, handshake and close included.
    est: u64,
    payload: u64,
    /// The length of the client's first write, and whether it began a `POST`.
    first_client: Option<(u64, bool)>,
}

impl Plan {
    fn new() -> Self {
        Plan {
            steps: VecDeque::new(),
            est: 3 * PER_PACKET + 8 + 4 * PER_PACKET,
            payload: 0,
            first_client: None,
        }
    }
    fn send(&mut self, side: usize, gap: u64, bytes: Vec<u8>) {
        if side == SIDE_C && self.first_client.is_none() {
            self.first_client = Some((bytes.len() as u64, bytes.starts_with(b"POST ")));
        }
        self.est += wire_est(bytes.len());
        self.payload += bytes.len() as u64;
        let data = Data::Bytes(bytes);
        self.steps.push_back(Step::Send { side, gap, data });
    }
    /// A body of `len` bytes written in pieces at `rate` bits per second, the first `gap` µs
    /// after the previous step; returns the number of pieces.
    #[allow(clippy::too_many_arguments)]
    fn body(
        &mut self,
        side: usize,
        gap: u64,
        len: usize,
        rate: u64,
        key: u64,
        text: bool,
        framing: Framing,
    ) -> usize {
        let pieces = len.div_ceil(PIECE).max(1);
        let mut left = len;
        for i in 0..pieces {
            let n = left.min(PIECE);
            left -= n;
            let framing = match framing {
                Framing::H2Data { stream, end } => Framing::H2Data {
                    stream,
                    end: end && left == 0,
                },
                f => f,
            };
            let wire = framed_len(n, framing);
            // The sender's pace: the previous piece took this long at `rate`.
            let gap = if i == 0 {
                gap
            } else {
                let serialised = (wire.div_ceil(MSS) as u64) * SER_US;
                (PIECE as u64 * 8_000_000 / rate)
                    .saturating_sub(serialised)
                    .max(20)
            };
            self.est += wire_est(wire);
            self.payload += wire as u64;
            let key = mix(key ^ i as u64);
            let data = Data::Body {
                len: n,
                key,
                text,
                framing,
            };
            self.steps.push_back(Step::Send { side, gap, data });
        }
        pieces
    }
    /// An HTTP/1.1 body right after its head: identity, or chunked and ended by the last chunk.
    fn http1_body(
        &mut self,
        side: usize,
        len: usize,
        rate: u64,
        key: u64,
        text: bool,
        chunked: bool,
    ) {
        let framing = if chunked {
            Framing::Chunk
        } else {
            Framing::Raw
        };
        self.body(side, 30, len, rate, key, text, framing);
        if chunked {
            self.send(side, 50, b"0\r\n\r\n".to_vec());
        }
    }

    fn close(&mut self, side: usize, gap: u64) {
        self.steps.push_back(Step::Close { side, gap });
    }
}

/// Text and random bytes bodies are cut from.
struct Material {
    lorem: Vec<u8>,
    blob: Vec<u8>,
    date_sec: u64,
    date: String,
}

impl Material {
    fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ SALT);
        let mut blob = Vec::with_capacity(BLOB_LEN + PIECE);
        while blob.len() < BLOB_LEN + PIECE {
            blob.extend_from_slice(&rng.next().to_le_bytes());
        }
        Material {
            lorem: make_lorem(seed ^ SALT),
            blob,
            date_sec: NEVER,
            date: String::new(),
        }
    }

    fn source(&self, key: u64, len: usize, text: bool) -> &[u8] {
        let src = if text { &self.lorem } else { &self.blob };
        let start = (mix(key) % (src.len() - len) as u64) as usize;
        &src[start..start + len]
    }

    fn date(&mut self, t: u64) -> &str {
        if t / 1_000_000 != self.date_sec {
            self.date_sec = t / 1_000_000;
            self.date = http_date(BASE_SECS + self.date_sec as i64);
        }
        &self.date
    }

    fn fill(&self, data: &Data, buf: &mut Vec<u8>) {
        let (len, key, text, framing) = match data {
            Data::Bytes(b) => return buf.extend_from_slice(b),
            Data::Body {
                len,
                key,
                text,
                framing,
            } => (*len, *key, *text, *framing),
        };
        let src = self.source(key, len, text);
        match framing {
            Framing::Raw => buf.extend_from_slice(src),
            Framing::Chunk => chunk(buf, src),
            Framing::Tls => {
                for rec in src.chunks(TLS_RECORD) {
                    buf.extend_from_slice(&[0x17, 0x03, 0x03]);
                    buf.extend_from_slice(&(rec.len() as u16).to_be_bytes());
                    buf.extend_from_slice(rec);
                }
            }
            Framing::H2Data { stream, end } => {
                let frames = src.len().div_ceil(H2_FRAME).max(1);
                for i in 0..frames {
                    let part = &src[(i * H2_FRAME).min(len)..((i + 1) * H2_FRAME).min(len)];
                    let flags = if end && i + 1 == frames { 0x1 } else { 0 };
                    h2_frame(buf, 0x0, flags, stream, part);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Flows.

/// One noise connection and what is left of its plan.
struct Flow {
    conn: Conn,
    steps: VecDeque<Step>,
    next_t: u64,
    est: u64,
    written: u64,
}

impl Flow {
    fn next_time(&self) -> u64 {
        self.conn.next_time().min(self.next_t)
    }

    fn done(&self) -> bool {
        self.steps.is_empty() && self.next_t == NEVER && self.conn.done()
    }

    fn advance(
        &mut self,
        now: u64,
        sink: &mut Sink,
        mat: &Material,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        if self.conn.next_time() <= now {
            return self.conn.emit(sink);
        }
        let end = match self.steps.pop_front() {
            Some(Step::Send { side, data, .. }) => {
                buf.clear();
                mat.fill(&data, buf);
                self.conn.queue(side, now, buf, 0)
            }
            Some(Step::Close { side, .. }) if side == SIDE_C => self.conn.close_by_client(now),
            Some(Step::Close { .. }) => self.conn.close_by_server(now),
            None => NEVER,
        };
        self.next_t = match self.steps.front() {
            Some(Step::Send { gap, .. } | Step::Close { gap, .. }) => end + gap,
            None => NEVER,
        };
        Ok(())
    }
}

/// The mixed file as the noise's connections see it.
struct Sink {
    out: Out,
    packets: u64,
    bytes: u64,
    dropped: u64,
}

impl Wire for Sink {
    fn packet(&mut self, t: u64, spec: &super::SegmentSpec<'_>) -> io::Result<()> {
        self.bytes += self.out.packet(t, spec)?;
        self.packets += 1;
        Ok(())
    }
    fn dropped(&mut self, n: u64) {
        self.dropped += n;
    }
}

fn unit(rng: &mut Rng) -> f64 {
    (rng.next() >> 11) as f64 / (1u64 << 53) as f64
}

/// Log-uniform in `lo..hi`: many small, a few large, as file and response sizes are.
fn log_uniform(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    (lo as f64 * (hi as f64 / lo as f64).powf(unit(rng))) as u64
}

/// Megabits per second in `lo..hi`, as bits per second.
fn rate(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    log_uniform(rng, lo, hi) * 1_000_000
}

/// What the plan builders share: the flow's randomness and where counts go.
struct Build<'a> {
    rng: Rng,
    rtt: u64,
    host: String,
    counts: &'a mut NoiseCounts,
    mat: &'a mut Material,
    /// Capture time the flow starts at, for `Date` headers.
    t: u64,
}

impl Build<'_> {
    fn think(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.range(lo, hi)
    }
    /// When a client sends its next request after an answer: an RTT and some thought.
    fn client_gap(&mut self, lo: u64, hi: u64) -> u64 {
        self.rtt + self.think(lo, hi)
    }
    fn http1(&mut self, jsonrpc: bool) {
        self.counts.http_requests += 1;
        self.counts.http_responses += 1;
        self.counts.http1_requests += 1;
        self.counts.jsonrpc_exchanges += u64::from(jsonrpc);
    }
    fn date(&mut self) -> String {
        self.mat.date(self.t).to_string()
    }

    fn download(&mut self, p: &mut Plan) {
        const UA: [&str; 4] = [
            "curl/8.5.0",
            "Wget/1.21.4",
            "Debian APT-HTTP/1.3 (2.6.1)",
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        ];
        const FILES: [(&str, &str); 4] = [
            ("releases/app-{}.tar.gz", "application/gzip"),
            ("video/seg-{}.mp4", "video/mp4"),
            ("datasets/part-{}.parquet", "application/octet-stream"),
            (
                "pool/main/lib{}.deb",
                "application/vnd.debian.binary-package",
            ),
        ];
        let ua = UA[self.rng.below(4) as usize];
        let files = self.rng.range(1, 2);
        for i in 0..files {
            let (name, ctype) = FILES[self.rng.below(4) as usize];
            let name = name.replace("{}", &format!("{:05}", self.rng.below(100_000)));
            let mut head = Vec::with_capacity(256);
            w!(
                head,
                "GET /{name} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {ua}\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n",
                self.host
            );
            let gap = if i == 0 {
                0
            } else {
                self.client_gap(1_000, 400_000)
            };
            p.send(SIDE_C, gap, head);
            let len = log_uniform(&mut self.rng, 128 << 10, 16 << 20) as usize;
            let chunked = self.rng.chance(0.3);
            let date = self.date();
            let etag = self.rng.next();
            let mut head = Vec::with_capacity(320);
            w!(
                head,
                "HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: {date}\r\nContent-Type: {ctype}\r\n"
            );
            if chunked {
                head.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
                self.counts.chunked_bodies += 1;
            } else {
                w!(head, "Content-Length: {len}\r\nAccept-Ranges: bytes\r\n");
            }
            w!(
                head,
                "Last-Modified: Mon, 02 Feb 2026 10:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"{etag:016x}\"\r\n\r\n"
            );
            let think = self.think(200, 20_000);
            p.send(SIDE_S, think, head);
            let speed = rate(&mut self.rng, 20, 300);
            let key = self.rng.next();
            p.http1_body(SIDE_S, len, speed, key, false, chunked);
            self.http1(false);
        }
        let gap = self.client_gap(100, 5_000);
        p.close(SIDE_C, gap);
    }

    fn upload(&mut self, p: &mut Plan) {
        let uploads = self.rng.range(1, 2);
        for i in 0..uploads {
            let gap = if i == 0 {
                0
            } else {
                self.client_gap(1_000, 400_000)
            };
            let len = log_uniform(&mut self.rng, 64 << 10, 8 << 20) as usize;
            let chunked = self.rng.chance(0.3);
            let id = self.rng.next();
            let mut head = Vec::with_capacity(320);
            if chunked {
                w!(
                    head,
                    "POST /api/v1/ingest/batch-{:08x}.csv HTTP/1.1\r\nHost: {}\r\nUser-Agent: python-requests/2.32.3\r\nContent-Type: text/csv\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n",
                    id as u32,
                    self.host
                );
                self.counts.chunked_bodies += 1;
            } else {
                w!(
                    head,
                    "PUT /upload/backup-{:016x}.bin HTTP/1.1\r\nHost: {}\r\nUser-Agent: rclone/v1.66.0\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\nConnection: keep-alive\r\n\r\n",
                    id,
                    self.host
                );
            }
            p.send(SIDE_C, gap, head);
            let speed = rate(&mut self.rng, 10, 100);
            let key = self.rng.next();
            p.http1_body(SIDE_C, len, speed, key, chunked, chunked);
            let body = format!(r#"{{"id":"{id:016x}","size":{len},"status":"stored"}}"#);
            let date = self.date();
            let mut resp = Vec::with_capacity(256);
            w!(
                resp,
                "HTTP/1.1 201 Created\r\nServer: nginx/1.24.0\r\nDate: {date}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n{body}",
                body.len()
            );
            let think = self.think(1_000, 50_000);
            p.send(SIDE_S, think, resp);
            self.http1(false);
        }
        let gap = self.client_gap(100, 5_000);
        p.close(SIDE_C, gap);
    }

    fn tls(&mut self, p: &mut Plan) {
        const SNI: [&str; 5] = [
            "www.example.com",
            "api.github.com",
            "cdn.jsdelivr.net",
            "storage.googleapis.com",
            "login.microsoftonline.com",
        ];
        self.counts.tls_connections += 1;
        let sni = SNI[self.rng.below(5) as usize];
        let hello = client_hello(&mut self.rng, sni);
        p.send(SIDE_C, 0, hello);
        // ServerHello and ChangeCipherSpec in clear; EncryptedExtensions, Certificate,
        // CertificateVerify and Finished as opaque records.
        let mut flight = server_hello(&mut self.rng);
        flight.extend_from_slice(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
        for len in [self.rng.range(2_000, 5_000) as usize, 281, 69] {
            tls_record(&mut flight, self.mat.source(self.rng.next(), len, false));
        }
        self.counts.tls_records += 5;
        let think = self.think(500, 5_000);
        p.send(SIDE_S, think, flight);
        let mut fin = vec![0x14, 0x03, 0x03, 0x00, 0x01, 0x01];
        tls_record(&mut fin, self.mat.source(self.rng.next(), 53, false));
        self.counts.tls_records += 2;
        let gap = self.rtt + 100;
        p.send(SIDE_C, gap, fin);
        for i in 0..self.rng.range(1, 12) {
            let gap = if i == 0 {
                50
            } else {
                self.client_gap(1_000, 800_000)
            };
            let req = self.rng.range(200, 800) as usize;
            self.counts.tls_records += 1;
            let key = self.rng.next();
            p.body(SIDE_C, gap, req, 100_000_000, key, false, Framing::Tls);
            let len = log_uniform(&mut self.rng, 512, 1 << 20) as usize;
            self.counts.tls_records += len.div_ceil(TLS_RECORD) as u64;
            let speed = rate(&mut self.rng, 5, 200);
            let key = self.rng.next();
            let think = self.think(500, 80_000);
            p.body(SIDE_S, think, len, speed, key, false, Framing::Tls);
        }
        let mut alert = Vec::with_capacity(24);
        tls_record(&mut alert, self.mat.source(self.rng.next(), 19, false));
        self.counts.tls_records += 1;
        let gap = self.client_gap(100, 5_000);
        p.send(SIDE_C, gap, alert);
        p.close(SIDE_C, 20);
    }

    fn h2c(&mut self, p: &mut Plan) {
        self.counts.h2_connections += 1;
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // No push; 16 MiB stream windows and 1 GiB more for the connection, so that the
        // server never waits for a WINDOW_UPDATE (RFC 9113 §6.9).
        let mut settings = Vec::with_capacity(12);
        settings.extend_from_slice(&[0x00, 0x02, 0, 0, 0, 0]);
        settings.extend_from_slice(&[0x00, 0x04]);
        settings.extend_from_slice(&(1u32 << 24).to_be_bytes());
        h2_frame(&mut hello, 0x4, 0, 0, &settings);
        h2_frame(&mut hello, 0x8, 0, 0, &(1u32 << 30).to_be_bytes());
        p.send(SIDE_C, 0, hello);
        let mut srv = Vec::with_capacity(32);
        h2_frame(&mut srv, 0x4, 0, 0, &[0x00, 0x03, 0, 0, 0, 128]);
        h2_frame(&mut srv, 0x4, 0x1, 0, &[]);
        let think = self.think(100, 2_000);
        p.send(SIDE_S, think, srv);
        let streams = self.rng.range(1, 30) as u32;
        for i in 0..streams {
            let stream = 2 * i + 1;
            let mut req = Vec::with_capacity(128);
            if i == 0 {
                h2_frame(&mut req, 0x4, 0x1, 0, &[]);
            }
            let post = self.rng.chance(0.3);
            let path = if post {
                "/v1/telemetry".to_string()
            } else {
                format!("/v1/catalog/items/{}", self.rng.below(50_000))
            };
            let mut block = vec![if post { 0x83 } else { 0x82 }, 0x86];
            hpack(&mut block, &[4], path.as_bytes());
            hpack(&mut block, &[1], self.host.as_bytes());
            hpack(&mut block, &[0x0f, 0x2b], b"grpc-gateway-client/2.0");
            hpack(&mut block, &[0x0f, 0x04], b"application/json");
            if post {
                hpack(&mut block, &[0x0f, 0x10], b"application/json");
                h2_frame(&mut req, 0x1, 0x4, stream, &block);
                let body = format!(
                    r#"{{"device":"{:08x}","cpu":{},"mem":{},"events":[{{"kind":"tick","n":{}}}]}}"#,
                    self.rng.next() as u32,
                    self.rng.below(100),
                    self.rng.below(1 << 20),
                    i
                );
                h2_frame(&mut req, 0x0, 0x1, stream, body.as_bytes());
            } else {
                h2_frame(&mut req, 0x1, 0x5, stream, &block);
            }
            let gap = if i == 0 {
                self.rtt + 50
            } else {
                self.client_gap(500, 300_000)
            };
            p.send(SIDE_C, gap, req);
            let len = log_uniform(&mut self.rng, 200, 256 << 10) as usize;
            let text = len < 16 << 10;
            let ctype: &[u8] = if text {
                b"application/json"
            } else {
                b"image/webp"
            };
            let date = self.date();
            let mut block = vec![0x88];
            hpack(&mut block, &[0x0f, 0x10], ctype);
            hpack(&mut block, &[0x0f, 0x0d], len.to_string().as_bytes());
            hpack(&mut block, &[0x0f, 0x27], b"envoy");
            hpack(&mut block, &[0x0f, 0x12], date.as_bytes());
            let mut head = Vec::with_capacity(64);
            h2_frame(&mut head, 0x1, 0x4, stream, &block);
            let think = self.think(300, 30_000);
            p.send(SIDE_S, think, head);
            let speed = rate(&mut self.rng, 50, 500);
            let key = self.rng.next();
            p.body(
                SIDE_S,
                20,
                len,
                speed,
                key,
                text,
                Framing::H2Data { stream, end: true },
            );
            self.counts.http_requests += 1;
            self.counts.http_responses += 1;
            self.counts.h2_streams += 1;
        }
        let mut bye = Vec::with_capacity(17);
        h2_frame(&mut bye, 0x7, 0, 0, &[0; 8]);
        let gap = self.client_gap(1_000, 50_000);
        p.send(SIDE_C, gap, bye);
        p.close(SIDE_C, 30);
    }

    fn api(&mut self, p: &mut Plan, eth: bool) {
        let n = self.rng.range(2, 40);
        for i in 0..n {
            let gap = if i == 0 {
                0
            } else {
                self.client_gap(5_000, 900_000)
            };
            let (req, resp) = if eth {
                self.eth_exchange(i)
            } else {
                self.rest_exchange(i)
            };
            p.send(SIDE_C, gap, req);
            let think = self.think(300, 40_000);
            p.send(SIDE_S, think, resp);
            self.http1(eth);
        }
        let gap = self.client_gap(100, 5_000);
        p.close(SIDE_C, gap);
    }

    /// An Ethereum node's JSON-RPC API: JSON-RPC 2.0 over HTTP POST, not MCP.
    fn eth_exchange(&mut self, id: u64) -> (Vec<u8>, Vec<u8>) {
        let addr = format!(
            "0x{:016x}{:016x}{:08x}",
            self.rng.next(),
            self.rng.next(),
            self.rng.next() as u32
        );
        let (method, params, result) = match self.rng.below(6) {
            0 | 1 => (
                "eth_blockNumber",
                "[]".to_string(),
                format!("\"0x{:x}\"", 0x15_0000 + self.rng.below(1 << 20)),
            ),
            2 => (
                "eth_getBalance",
                format!(r#"["{addr}","latest"]"#),
                format!("\"0x{:x}\"", self.rng.next()),
            ),
            3 => (
                "eth_call",
                format!(
                    r#"[{{"to":"{addr}","data":"0x70a08231000000000000000000000000{:016x}"}},"latest"]"#,
                    self.rng.next()
                ),
                format!("\"0x{:064x}\"", self.rng.next()),
            ),
            4 => ("net_version", "[]".to_string(), "\"1\"".to_string()),
            _ => {
                let mut txs = String::new();
                for j in 0..self.rng.range(10, 120) {
                    if j > 0 {
                        txs.push(',');
                    }
                    w!(
                        txs,
                        "\"0x{:016x}{:016x}{:016x}{:016x}\"",
                        self.rng.next(),
                        self.rng.next(),
                        self.rng.next(),
                        self.rng.next()
                    );
                }
                let n = self.rng.below(1 << 20);
                (
                    "eth_getBlockByNumber",
                    format!(r#"["0x{n:x}",false]"#),
                    format!(
                        r#"{{"number":"0x{n:x}","hash":"0x{:016x}","gasUsed":"0x{:x}","transactions":[{txs}]}}"#,
                        self.rng.next(),
                        self.rng.below(30_000_000)
                    ),
                )
            }
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"{method}","params":{params}}}"#,
            id + 1
        );
        let mut req = Vec::with_capacity(256 + body.len());
        w!(
            req,
            "POST / HTTP/1.1\r\nHost: {}\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: {}\r\nContent-Type: application/json\r\nAccept-Encoding: identity\r\n\r\n{body}",
            self.host,
            body.len()
        );
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id + 1);
        let date = self.date();
        let mut resp = Vec::with_capacity(256 + body.len());
        w!(
            resp,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nVary: Origin\r\nDate: {date}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        (req, resp)
    }

    fn rest_exchange(&mut self, i: u64) -> (Vec<u8>, Vec<u8>) {
        let mut req = Vec::with_capacity(512);
        let date = self.date();
        let mut resp = Vec::with_capacity(4096);
        if self.rng.chance(0.3) {
            let body = format!(
                r#"{{"type":"page_view","session":"{:016x}","seq":{i},"path":"/products/{}","ts":{}}}"#,
                self.rng.next(),
                self.rng.below(10_000),
                self.t
            );
            w!(
                req,
                "POST /v2/events HTTP/1.1\r\nHost: {}\r\nUser-Agent: okhttp/4.12.0\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n{body}",
                self.host,
                body.len()
            );
            let body = br#"{"accepted":true}"#;
            w!(
                resp,
                "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nDate: {date}\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
                body.len()
            );
            resp.extend_from_slice(body);
        } else {
            let id = self.rng.below(1_000_000);
            w!(
                req,
                "GET /v2/orders/{id} HTTP/1.1\r\nHost: {}\r\nUser-Agent: okhttp/4.12.0\r\nAccept: application/json\r\nConnection: keep-alive\r\n\r\n",
                self.host
            );
            let mut body = Vec::with_capacity(4096);
            w!(body, r#"{{"id":{id},"status":"shipped","items":["#);
            let want = log_uniform(&mut self.rng, 200, 8 << 10) as usize;
            let mut j = 0;
            while body.len() < want {
                if j > 0 {
                    body.push(b',');
                }
                w!(
                    body,
                    r#"{{"sku":"SKU-{:06}","qty":{},"note":""#,
                    self.rng.below(1_000_000),
                    1 + j % 4
                );
                body.extend_from_slice(self.mat.source(self.rng.next(), 60, true));
                body.extend_from_slice(b"\"}");
                j += 1;
            }
            body.extend_from_slice(b"]}");
            w!(
                resp,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nDate: {date}\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
                body.len()
            );
            resp.extend_from_slice(&body);
        }
        (req, resp)
    }

    fn short(&mut self, p: &mut Plan) {
        self.counts.short_connections += 1;
        let (target, status, ctype, body): (&str, &str, &str, &[u8]) = match self.rng.below(5) {
            0 => ("/ping", "200 OK", "text/plain", b"pong"),
            1 => ("/healthz", "200 OK", "text/plain", b"ok"),
            2 => (
                "/favicon.ico",
                "404 Not Found",
                "text/html",
                b"<html><body><h1>404 Not Found</h1></body></html>",
            ),
            3 => (
                "/robots.txt",
                "200 OK",
                "text/plain",
                b"User-agent: *\nDisallow: /admin/\n",
            ),
            _ => (
                "/api/status",
                "200 OK",
                "application/json",
                br#"{"status":"up","version":"3.2.1"}"#,
            ),
        };
        let mut req = Vec::with_capacity(160);
        w!(
            req,
            "GET {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: kube-probe/1.29\r\nAccept: */*\r\nConnection: close\r\n\r\n",
            self.host
        );
        p.send(SIDE_C, 0, req);
        let date = self.date();
        let mut resp = Vec::with_capacity(256);
        w!(
            resp,
            "HTTP/1.1 {status}\r\nServer: nginx/1.24.0\r\nDate: {date}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        resp.extend_from_slice(body);
        let think = self.think(100, 3_000);
        p.send(SIDE_S, think, resp);
        p.close(SIDE_S, 50);
        self.http1(false);
    }
}

fn h2_frame(buf: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    buf.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    buf.extend_from_slice(&[kind, flags]);
    buf.extend_from_slice(&stream.to_be_bytes());
    buf.extend_from_slice(payload);
}

/// An HPACK literal field without indexing whose name is the static-table entry `name`
/// (RFC 7541 §6.2.2, the index already encoded with its 4-bit prefix), value not Huffman-coded.
fn hpack(block: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    debug_assert!(value.len() < 127, "one-byte length");
    block.extend_from_slice(name);
    block.push(value.len() as u8);
    block.extend_from_slice(value);
}

fn tls_record(buf: &mut Vec<u8>, payload: &[u8]) {
    buf.extend_from_slice(&[0x17, 0x03, 0x03]);
    buf.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    buf.extend_from_slice(payload);
}

/// A handshake record: `msg` of handshake type `kind` (RFC 8446 §4).
fn handshake(version: [u8; 2], kind: u8, msg: &[u8]) -> Vec<u8> {
    let mut rec = vec![0x16, version[0], version[1]];
    rec.extend_from_slice(&((msg.len() + 4) as u16).to_be_bytes());
    rec.push(kind);
    rec.extend_from_slice(&(msg.len() as u32).to_be_bytes()[1..]);
    rec.extend_from_slice(msg);
    rec
}

fn extension(buf: &mut Vec<u8>, kind: u16, data: &[u8]) {
    buf.extend_from_slice(&kind.to_be_bytes());
    buf.extend_from_slice(&(data.len() as u16).to_be_bytes());
    buf.extend_from_slice(data);
}

fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n.div_ceil(8))
        .flat_map(|_| rng.next().to_le_bytes())
        .take(n)
        .collect()
}

/// A TLS 1.3 ClientHello as browsers and curl send it: SNI, ALPN h2 and http/1.1, x25519.
fn client_hello(rng: &mut Rng, sni: &str) -> Vec<u8> {
    let mut m = vec![0x03, 0x03];
    m.extend_from_slice(&random_bytes(rng, 32));
    m.push(32);
    m.extend_from_slice(&random_bytes(rng, 32));
    let suites: [u16; 9] = [
        0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8,
    ];
    m.extend_from_slice(&((suites.len() * 2) as u16).to_be_bytes());
    suites
        .iter()
        .for_each(|s| m.extend_from_slice(&s.to_be_bytes()));
    m.extend_from_slice(&[1, 0]);
    let mut ext = Vec::with_capacity(256);
    let mut name = vec![0];
    name.extend_from_slice(&(sni.len() as u16).to_be_bytes());
    name.extend_from_slice(sni.as_bytes());
    let mut list = ((name.len()) as u16).to_be_bytes().to_vec();
    list.extend_from_slice(&name);
    extension(&mut ext, 0x0000, &list);
    extension(&mut ext, 0x000a, &[0, 4, 0x00, 0x1d, 0x00, 0x17]);
    extension(
        &mut ext,
        0x000d,
        &[0, 6, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01],
    );
    extension(&mut ext, 0x0010, b"\x00\x0c\x02h2\x08http/1.1");
    extension(&mut ext, 0x002b, &[4, 0x03, 0x04, 0x03, 0x03]);
    extension(&mut ext, 0x002d, &[1, 1]);
    let mut share = vec![0, 36, 0x00, 0x1d, 0, 32];
    share.extend_from_slice(&random_bytes(rng, 32));
    extension(&mut ext, 0x0033, &share);
    m.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    m.extend_from_slice(&ext);
    handshake([0x03, 0x01], 1, &m)
}

fn server_hello(rng: &mut Rng) -> Vec<u8> {
    let mut m = vec![0x03, 0x03];
    m.extend_from_slice(&random_bytes(rng, 32));
    m.push(32);
    m.extend_from_slice(&random_bytes(rng, 32));
    m.extend_from_slice(&[0x13, 0x01, 0]);
    let mut ext = Vec::with_capacity(64);
    extension(&mut ext, 0x002b, &[0x03, 0x04]);
    let mut share = vec![0x00, 0x1d, 0, 32];
    share.extend_from_slice(&random_bytes(rng, 32));
    extension(&mut ext, 0x0033, &share);
    m.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    m.extend_from_slice(&ext);
    handshake([0x03, 0x03], 2, &m)
}

// ---------------------------------------------------------------------------------------------
// The merge.

/// Reads back the records of a classic little-endian microsecond pcap this generator wrote.
struct Records {
    r: BufReader<File>,
    frame: Vec<u8>,
}

impl Records {
    fn open(path: &Path) -> io::Result<Records> {
        let mut r = BufReader::with_capacity(1 << 20, File::open(path)?);
        let mut header = [0u8; 24];
        r.read_exact(&mut header)?;
        if header[..4] != 0xa1b2_c3d4u32.to_le_bytes() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not this generator's pcap",
            ));
        }
        Ok(Records {
            r,
            frame: Vec::new(),
        })
    }

    /// The next record's time in µs of the capture (its frame in `self.frame`), or NEVER.
    fn next(&mut self) -> io::Result<u64> {
        let mut h = [0u8; 16];
        match self.r.read_exact(&mut h) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(NEVER),
            Err(e) => return Err(e),
        }
        let field = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        self.frame.resize(field(8) as usize, 0);
        self.r.read_exact(&mut self.frame)?;
        let secs = i64::from(field(0)) - BASE_SECS;
        Ok(secs as u64 * 1_000_000 + u64::from(field(4)))
    }
}

/// Starts noise flows as their bytes fall due and interleaves their packets with the MCP ones.
struct Mixer {
    sink: Sink,
    counts: NoiseCounts,
    mat: Material,
    rng: Rng,
    addrs: Addrs,
    budget: u64,
    span: u64,
    committed: u64,
    spawn_t: u64,
    /// Estimated and written bytes of the flows done, and their number: the estimates are
    /// corrected by their ratio (ACK timers and framing the estimate does not model).
    done: (f64, f64, u64),
    /// Bytes planned and flows started by kind: a flow's kind is drawn so that each kind gets
    /// its share of the bytes, whatever its flows' sizes.
    planned: [(f64, u64); 6],
    flows: Vec<Option<Box<Flow>>>,
    free: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    open: u64,
    buf: Vec<u8>,
}

impl Mixer {
    fn new(seed: u64, budget: u64, span: u64, out: Out) -> Mixer {
        Mixer {
            sink: Sink {
                out,
                packets: 0,
                bytes: 0,
                dropped: 0,
            },
            counts: NoiseCounts::default(),
            mat: Material::new(seed),
            rng: Rng::new(mix(seed ^ SALT)),
            addrs: Addrs::new(Ipv4Addr::new(10, 80, 0, 0)),
            budget,
            span: span.max(1),
            committed: 0,
            done: (0.0, 0.0, 0),
            spawn_t: if budget > 0 { 0 } else { NEVER },
            planned: [(0.0, 0); 6],
            flows: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            open: 0,
            buf: Vec::with_capacity(PIECE + 4096),
        }
    }

    fn run(&mut self, mcp: &Path) -> io::Result<()> {
        let mut records = Records::open(mcp)?;
        let mut tm = records.next()?;
        loop {
            let tn = self.heap.peek().map_or(NEVER, |r| r.0.0);
            if tm == NEVER && tn == NEVER && self.spawn_t == NEVER {
                return Ok(());
            }
            if tm <= tn && tm <= self.spawn_t {
                self.sink.out.frame(tm, &records.frame)?;
                tm = records.next()?;
            } else if self.spawn_t <= tn {
                self.spawn(self.spawn_t);
            } else {
                self.step()?;
            }
        }
    }

    fn step(&mut self) -> io::Result<()> {
        let Some(Reverse((now, slot))) = self.heap.pop() else {
            return Ok(());
        };
        let flow = self.flows[slot as usize].as_mut().expect("scheduled flow");
        let before = self.sink.bytes;
        flow.advance(now, &mut self.sink, &self.mat, &mut self.buf)?;
        flow.written += self.sink.bytes - before;
        if flow.done() {
            self.done.0 += flow.est as f64;
            self.done.1 += flow.written as f64;
            self.done.2 += 1;
            self.flows[slot as usize] = None;
            self.free.push(slot);
            self.open -= 1;
        } else {
            let next = flow.next_time();
            debug_assert!(next >= now && next != NEVER, "flow stalled");
            self.heap.push(Reverse((next, slot)));
        }
        Ok(())
    }

    fn pick_kind(&mut self) -> usize {
        let weight = |k: usize, planned: &[(f64, u64); 6]| {
            let (bytes, n) = planned[k];
            let mean = if n >= 8 { bytes / n as f64 } else { KINDS[k].3 };
            KINDS[k].2 / mean
        };
        let total: f64 = (0..6).map(|k| weight(k, &self.planned)).sum();
        let mut x = unit(&mut self.rng) * total;
        for k in 0..5 {
            x -= weight(k, &self.planned);
            if x < 0.0 {
                return k;
            }
        }
        5
    }

    fn spawn(&mut self, t: u64) {
        let k = self.pick_kind();
        let (kind, name, ..) = KINDS[k];
        let seed = self.rng.next();
        let mut rng = Rng::new(seed);
        let rtt = pick_rtt(&mut rng);
        let (server_net, port) = match kind {
            Kind::Download | Kind::Upload | Kind::Short => (0, 80),
            Kind::Api if rng.chance(0.5) => (2, 8545),
            Kind::Api => (1, 8000),
            Kind::Tls => (3, 443),
            Kind::H2c => (4, 80),
        };
        let server = SocketAddrV4::new(
            Ipv4Addr::new(10, 1, server_net, 10 + rng.below(20) as u8),
            port,
        );
        let host = match (kind, port) {
            (Kind::Download, _) => "downloads.example.net".to_string(),
            (Kind::Upload, _) => "storage.internal".to_string(),
            (Kind::H2c, _) => "catalog.internal".to_string(),
            (_, 8545) => format!("{}:8545", server.ip()),
            (_, 8000) => "api.internal:8000".to_string(),
            _ => format!("{}", server.ip()),
        };
        let isn = [rng.next() as u32, rng.next() as u32];
        let mut plan = Plan::new();
        let mut b = Build {
            rng,
            rtt,
            host,
            counts: &mut self.counts,
            mat: &mut self.mat,
            t,
        };
        match kind {
            Kind::Download => b.download(&mut plan),
            Kind::Upload => b.upload(&mut plan),
            Kind::Tls => b.tls(&mut plan),
            Kind::H2c => b.h2c(&mut plan),
            Kind::Api => b.api(&mut plan, port == 8545),
            Kind::Short => b.short(&mut plan),
        }
        let (ip, ip_index) = self.addrs.ip();
        let client = SocketAddrV4::new(ip, self.addrs.port(ip_index));
        let id = self.counts.connections as u32;
        let (conn, ready) = Conn::open(id, (client, server), rtt, isn, Some(7), t);
        let first_gap = match plan.steps.front() {
            Some(Step::Send { gap, .. } | Step::Close { gap, .. }) => *gap,
            None => 0,
        };
        let flow = Box::new(Flow {
            conn,
            steps: plan.steps,
            next_t: ready + first_gap,
            est: plan.est,
            written: 0,
        });
        let next = flow.next_time();
        let slot = match self.free.pop() {
            Some(s) => {
                self.flows[s as usize] = Some(flow);
                s
            }
            None => {
                self.flows.push(Some(flow));
                (self.flows.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((next, slot)));
        self.counts.connections += 1;
        self.open += 1;
        self.counts.max_concurrent_connections =
            self.counts.max_concurrent_connections.max(self.open);
        let by = self.counts.by_kind.entry(name).or_default();
        let ratio = if self.done.2 >= 8 {
            (self.done.1 / self.done.0).clamp(0.5, 2.0)
        } else {
            1.0
        };
        let est = (plan.est as f64 * ratio) as u64;
        by.connections += 1;
        by.payload_bytes += plan.payload;
        let first = plan.first_client.unwrap_or((0, false));
        let eth = port == 8545;
        self.counts.set_aside.count(kind, eth, first, plan.payload);
        by.bytes_planned += est;
        self.planned[k].0 += est as f64;
        self.planned[k].1 += 1;
        self.committed += est;
        // The next flow starts when the bytes planned so far fall due over the MCP span.
        self.spawn_t = if self.committed >= self.budget {
            NEVER
        } else {
            let due = (u128::from(self.committed) * u128::from(self.span) / u128::from(self.budget))
                as u64;
            due.max(t)
        };
    }
}

/// `--noise-share`: the MCP traffic alone to `--mcp-out`, then the mixed file to `--out`.
pub(super) fn main(args: &Args, target: u64) -> io::Result<()> {
    let started = Instant::now();
    let mcp_path = args.mcp_out.clone().unwrap_or_else(|| {
        let mut p = args.out.as_os_str().to_owned();
        p.push(".mcp.pcap");
        PathBuf::from(p)
    });
    let share = args.noise_share;
    let concurrency = args
        .concurrency
        .unwrap_or(((2500.0 * (1.0 - share)).round() as u32).max(1));
    let mcp_target = (target as f64 * (1.0 - share)) as u64;
    let mcp = write_mcp(args, &mcp_path, mcp_target, concurrency)?;
    write_json(
        &counts_path(&mcp_path),
        &mcp_doc(args, mcp_target, concurrency, &mcp),
    )?;
    say_wrote(&mcp_path, &mcp, started);

    let started = Instant::now();
    let span = (mcp.detail.capture_seconds * 1e6) as u64;
    let budget = target.saturating_sub(mcp.bytes);
    let mut mixer = Mixer::new(args.seed, budget, span, Out::create(&args.out)?);
    mixer.run(&mcp_path)?;
    let Mixer {
        sink, mut counts, ..
    } = mixer;
    counts.packets = sink.packets;
    counts.bytes = sink.bytes;
    counts.dropped_segments = sink.dropped;
    let seconds = sink.out.last_t as f64 / 1e6;
    let packets = sink.out.packets;
    let bytes = sink.out.finish()?;
    if counts.dropped_segments != 0 {
        eprintln!(
            "warning: {} noise segments dropped",
            counts.dropped_segments
        );
    }
    let doc = serde_json::json!({
        "generator": {
            "seed": args.seed,
            "port": args.port,
            "target_bytes": target,
            "noise_share": share,
            "mcp_out": mcp_path,
            "concurrency": concurrency,
        },
        "counts": totals(&mcp, &counts, bytes, packets, seconds),
        "mcp": &mcp,
        "noise": &counts,
    });
    write_json(&counts_path(&args.out), &doc)?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} ({bytes} bytes, {packets} packets; MCP {:.1}% of the bytes; {} noise connections, {} noise HTTP exchanges) in {secs:.2}s ({:.0} MB/s); counts in {}",
        args.out.display(),
        100.0 * (mcp.bytes - 24) as f64 / (bytes - 24) as f64,
        counts.connections,
        counts.http_requests,
        bytes as f64 / secs / 1e6,
        counts_path(&args.out).display()
    );
    Ok(())
}

/// What an analysis of the mixed file should count (the keys of `Counts`): the MCP traffic's
/// sessions, messages and events, and every connection and HTTP exchange of both.
fn totals(
    mcp: &Counts,
    noise: &NoiseCounts,
    bytes: u64,
    packets: u64,
    seconds: f64,
) -> serde_json::Value {
    serde_json::json!({
        "sessions": mcp.sessions,
        "connections": mcp.connections + noise.connections,
        "http_requests": mcp.http_requests + noise.http_requests,
        "http_responses": mcp.http_responses + noise.http_responses,
        "jsonrpc_requests": mcp.jsonrpc_requests,
        "jsonrpc_responses": mcp.jsonrpc_responses,
        "jsonrpc_notifications": mcp.jsonrpc_notifications,
        "sse_events": mcp.sse_events,
        "resumed_streams": mcp.resumed_streams,
        "non_mcp_requests": mcp.non_mcp_requests + noise.http_requests,
        "jsonrpc_not_mcp": noise.jsonrpc_exchanges,
        "bytes": bytes,
        "packets": packets,
        "detail": {
            "capture_seconds": seconds,
            "mcp_bytes_share": (mcp.bytes - 24) as f64 / (bytes - 24) as f64,
            "max_concurrent_clients": mcp.detail.max_concurrent_clients,
            "max_concurrent_connections": mcp.detail.max_concurrent_connections + noise.max_concurrent_connections,
        },
    })
}
