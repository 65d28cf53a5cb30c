#![allow(dead_code)]

//! Stress generators (issue 12): one hostile or huge input per class, of a size `n`, as a pure
//! function of `(class, n)`. Each writes one file: a capture (`.pcap`, `.pcapng`, `.pcap.gz`),
//! a HAR or an nginx JSON access log. `CLASSES` lists them with what `n` counts.
//!
//! Used by `gen_stress` (bench/stress/main.rs, for bench/stress/run.sh) and by tests/stress.rs.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;
use mcpf_capture::tcp::SeqNumber;

#[path = "wire.rs"]
pub mod wire;

use wire::*;

/// Class name, file extension, what `n` counts.
pub const CLASSES: &[(&str, &str, &str)] = &[
    (
        "brotli_bomb",
        "pcap",
        "16 MiB brotli meta-blocks, sent in 64 KB segments",
    ),
    ("gzip_bomb", "pcap", "MiB of decoded gzip body"),
    (
        "gzip_answers",
        "pcap",
        "tools/call each answered on its own connection with a 16 MiB JSON body decoded from 16 KB of gzip",
    ),
    (
        "held_bodies",
        "pcap",
        "connections each holding a gzip body or SSE line of 15 MiB in progress (100 KB on the wire)",
    ),
    (
        "brotli_windows",
        "pcap",
        "sessions each holding a brotli event stream open that asks for a 16 MiB window and fills it",
    ),
    ("syn_flood", "pcap.gz", "SYN-only connections"),
    ("sse_events", "pcap.gz", "SSE events in one stream"),
    ("many_calls", "pcap", "tools/call answered in one session"),
    ("batch", "pcap", "requests in one JSON-RPC batch"),
    ("duplicates", "pcap", "duplicate responses to one request"),
    (
        "resumes",
        "pcap",
        "interrupted tools/call streams resumed in one session",
    ),
    (
        "fallbacks",
        "pcap",
        "abandoned POST streams each followed by a GET stream",
    ),
    (
        "access_log",
        "nginx.jsonl",
        "sessions in an nginx JSON access log",
    ),
    (
        "ooo_conns",
        "pcap",
        "connections with one out-of-order segment each",
    ),
    (
        "ooo_bytes",
        "pcap.gz",
        "one-byte out-of-order pieces on one connection",
    ),
    (
        "snaplen_ooo",
        "pcap",
        "out-of-order segments cut by a 128-byte snap length",
    ),
    ("big_har", "har", "HAR entries with 64 KiB bodies"),
    ("sse_result", "pcap", "MiB of base64 in one SSE tool result"),
    (
        "json_result",
        "pcap",
        "MiB of base64 in one JSON tool result",
    ),
    (
        "ts_backwards",
        "pcap",
        "tools/call whose answers are stamped before the request",
    ),
    (
        "many_headers",
        "pcap",
        "headers on the request that carries a tools/call",
    ),
    (
        "secrets",
        "pcap",
        "sessions carrying secrets in every place",
    ),
    (
        "corrupt_pcap",
        "pcap",
        "healthy sessions on each side of a corrupt record",
    ),
    (
        "corrupt_pcapng",
        "pcapng",
        "healthy sessions on each side of a corrupt block",
    ),
    (
        "truncated_gz",
        "pcap.gz",
        "healthy sessions before the gzip stream is cut",
    ),
    (
        "h2_calls",
        "pcap",
        "tools/call streams answered in one session on one cleartext HTTP/2 connection",
    ),
    (
        "h2_continuation",
        "pcap",
        "16 KiB CONTINUATION frames after a HEADERS frame that never ends its block",
    ),
    (
        "h2_open_streams",
        "pcap",
        "HTTP/2 streams opened and never ended, on one connection",
    ),
    (
        "hpack_bomb",
        "pcap.gz",
        "thousands of one-byte references to a 4 KB :path in the HPACK table, then a healthy session",
    ),
    (
        "sse_gzip_bomb",
        "pcap",
        "MiB of `data: {}` events decoded from gzip (514:1) on HTTP/1.1 in 60 KB segments, then a healthy session",
    ),
    (
        "sse_gzip_bomb_mss",
        "pcap",
        "MiB of `data: {}` events decoded from gzip (514:1) on HTTP/1.1 in 1448-byte segments, then a healthy session",
    ),
    (
        "h2_sse_gzip_bomb",
        "pcap",
        "MiB of `data: {}` events decoded from gzip (514:1) on HTTP/2 in 60 KB segments, then a healthy session",
    ),
    (
        "pipelined_notifications",
        "pcap.gz",
        "notifications/progress POSTs pipelined on one connection, each answered 202, then a healthy session",
    ),
    (
        "har_sse_bomb",
        "har.gz",
        "MiB of `data: {}` events in one HAR entry's content.text, then healthy entries",
    ),
];

/// The file name extension of a class.
pub fn extension(class: &str) -> Option<&'static str> {
    CLASSES.iter().find(|c| c.0 == class).map(|c| c.1)
}

/// Writes the input of `class` at size `n` to `path`.
pub fn generate(class: &str, n: u64, path: &Path) -> io::Result<()> {
    let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    match extension(class) {
        Some("pcap.gz" | "har.gz") => {
            let mut gz = GzEncoder::new(file, Compression::fast());
            write_class(class, n, &mut gz)?;
            let mut file = gz.finish()?;
            if class == "truncated_gz" {
                // Cut the gzip stream inside its last quarter: no trailer, a partial block.
                file.flush()?;
                let f = file.into_inner().map_err(|e| e.into_error())?;
                let len = f.metadata()?.len();
                f.set_len(len - len / 4)?;
                return Ok(());
            }
            file.flush()
        }
        Some(_) => {
            let mut file = file;
            write_class(class, n, &mut file)?;
            file.flush()
        }
        None => Err(io::Error::other(format!("unknown class {class}"))),
    }
}

/// The bytes of `class` at size `n` (for small sizes in tests).
pub fn bytes(class: &str, n: u64) -> Vec<u8> {
    let mut v = Vec::new();
    write_class(class, n, &mut v).unwrap();
    v
}

fn write_class<W: Write>(class: &str, n: u64, w: W) -> io::Result<()> {
    match class {
        "brotli_bomb" => brotli_bomb(n, w),
        "gzip_bomb" => gzip_bomb(n, w),
        "gzip_answers" => gzip_answers(n, w),
        "brotli_windows" => brotli_windows(n, w),
        "held_bodies" => held_bodies(n, w),
        "syn_flood" => syn_flood(n, w),
        "sse_events" => sse_events(n, w),
        "many_calls" => many_calls(n, w),
        "h2_calls" => h2_calls(n, w),
        "h2_continuation" => h2_continuation(n, w),
        "h2_open_streams" => h2_open_streams(n, w),
        "hpack_bomb" => hpack_bomb(n, w),
        "sse_gzip_bomb" => sse_gzip_bomb(n, false, 60_000, w),
        "sse_gzip_bomb_mss" => sse_gzip_bomb(n, false, MSS, w),
        "h2_sse_gzip_bomb" => sse_gzip_bomb(n, true, 60_000, w),
        "har_sse_bomb" => har_sse_bomb(n, w),
        "pipelined_notifications" => pipelined_notifications(n, w),
        "batch" => batch(n, w),
        "duplicates" => duplicates(n, w),
        "resumes" => resumes(n, w),
        "fallbacks" => fallbacks(n, w),
        "access_log" => access_log(n, w),
        "ooo_conns" => ooo_conns(n, w),
        "ooo_bytes" => ooo_bytes(n, w),
        "snaplen_ooo" => snaplen_ooo(n, w),
        "big_har" => big_har(n, w),
        "sse_result" => big_result(n, true, w),
        "json_result" => big_result(n, false, w),
        "ts_backwards" => ts_backwards(n, w),
        "many_headers" => many_headers(n, w),
        "secrets" => secrets(n, w),
        "corrupt_pcap" => corrupt_pcap(n, w),
        "corrupt_pcapng" => corrupt_pcapng(n, w),
        "truncated_gz" => {
            let mut cap = Capture::pcap(w, 262_144)?;
            for k in 0..n {
                healthy_session(&mut cap, k, &session_id(k), 3)?;
            }
            Ok(())
        }
        _ => Err(io::Error::other(format!("unknown class {class}"))),
    }
}

/// A session whose `tools/call` is answered with `body` under `encoding`, sent in `seg`-byte
/// segments.
fn encoded_answer<W: Write>(body: &[u8], encoding: &str, seg: usize, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    c.client_send(
        &mut cap,
        &post("/mcp", Some(SESSION), &[], tools_call(2).as_bytes()),
    )?;
    let extra = format!("content-encoding: {encoding}\r\n");
    c.server_send_in(&mut cap, &json_response(SESSION, body, &extra), seg)?;
    c.close(&mut cap)
}

/// Many answers each within the decoding budgets (16 KB of gzip decodes to 16 MiB), one after
/// another, each on its own connection (one connection's bodies may decode 24 MiB, then 64
/// bytes per compressed byte): each is dropped once read, so memory stays that of one.
fn gzip_answers<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    c.close(&mut cap)?;
    let extra = "content-encoding: gzip\r\n";
    for id in 2..2 + n {
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        write!(
            gz,
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
        )?;
        let filler = vec![b'0'; (16 << 20) - 200];
        gz.write_all(&filler)?;
        gz.write_all(br#""}]}}"#)?;
        let body = gz.finish()?;
        let mut c = Conn::local(id);
        c.handshake(&mut cap)?;
        c.client_send(
            &mut cap,
            &post("/mcp", Some(SESSION), &[], tools_call(id).as_bytes()),
        )?;
        c.server_send_in(&mut cap, &json_response(SESSION, &body, extra), 65_535 - 40)?;
        c.close(&mut cap)?;
    }
    Ok(())
}

fn brotli_bomb<W: Write>(n: u64, w: W) -> io::Result<()> {
    encoded_answer(&brotli_zeros(n), "br", 65_535 - 40, w)
}

/// `n` sessions on their own connections, each answering its tools/call on an event stream
/// compressed with brotli that asks for a 16 MiB window and fills it, all open at once; each is
/// then ended and its connection closed.
fn brotli_windows<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut conns = Vec::new();
    for k in 0..n {
        let session = session_id(k);
        let mut c = Conn::local(k + 1);
        c.handshake(&mut cap)?;
        open_session(&mut cap, &mut c, &session)?;
        c.client_send(
            &mut cap,
            &post("/mcp", Some(&session), &[], tools_call(2).as_bytes()),
        )?;
        let mut head = sse_head(&session);
        head.truncate(head.len() - 2);
        head.extend_from_slice(b"content-encoding: br\r\n\r\n");
        // Comment lines make 16 KiB of input, so 16 MiB decoded from it is within the decoding
        // budget (1024 bytes per compressed byte).
        let mut event = sse_event("2-1", &tools_call_result(2)).into_bytes();
        while event.len() < 16 << 10 {
            event.extend_from_slice(b": padding\n");
        }
        let (open, end) = brotli_open(&event);
        chunk(&mut head, &open);
        c.server_send(&mut cap, &head)?;
        let mut last = Vec::new();
        chunk(&mut last, &end);
        last.extend_from_slice(b"0\r\n\r\n");
        conns.push((c, last));
    }
    for (c, last) in &mut conns {
        c.server_send(&mut cap, last)?;
        c.close(&mut cap)?;
    }
    Ok(())
}

/// `n` sessions on their own connections, each with a response in progress holding 15 MiB of
/// decoded bytes from about 100 KB of gzip (a JSON result, or an SSE event whose data line has
/// not ended), all open at once; each is then completed and its connection closed.
fn held_bodies<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut open = Vec::new();
    // A letter of a fixed pseudo-random sequence every 512 bytes keeps gzip near 150:1, under
    // the decoding budget's 1024:1, so every body decodes whole when the budget allows.
    let mut text = vec![b'A'; 15 << 20];
    let mut x = 1u32;
    for i in (0..text.len()).step_by(512) {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        text[i] = b'a' + (x >> 16) as u8 % 26;
    }
    let mut bodies = Vec::new();
    for sse in [false, true] {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        if sse {
            gz.write_all(b"event: message\r\nid: 1\r\ndata: ")?;
        }
        gz.write_all(br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":""#)?;
        gz.write_all(&text)?;
        gz.write_all(br#""}]}}"#)?;
        if sse {
            gz.write_all(b"\r\n\r\n")?;
        }
        bodies.push(gz.finish()?);
    }
    for k in 0..n {
        let session = session_id(k);
        let mut c = Conn::local(k + 1);
        c.handshake(&mut cap)?;
        open_session(&mut cap, &mut c, &session)?;
        c.client_send(
            &mut cap,
            &post("/mcp", Some(&session), &[], tools_call(2).as_bytes()),
        )?;
        let sse = k % 2 == 1;
        let mut body = bodies[usize::from(sse)].clone();
        // The end of the deflate stream and the trailer come once every response is open.
        let tail = body.split_off(body.len() - 16);
        let (head, end) = if sse {
            let mut head = sse_head(&session);
            head.truncate(head.len() - 2);
            head.extend_from_slice(b"content-encoding: gzip\r\n\r\n");
            chunk(&mut head, &body);
            let mut end = Vec::new();
            chunk(&mut end, &tail);
            end.extend_from_slice(b"0\r\n\r\n");
            (head, end)
        } else {
            let whole = body.len() + tail.len();
            let mut head = json_response(&session, &[], "content-encoding: gzip\r\n");
            head.truncate(head.len() - "content-length: 0\r\n\r\n".len());
            head.extend_from_slice(format!("content-length: {whole}\r\n\r\n").as_bytes());
            head.extend_from_slice(&body);
            (head, tail)
        };
        c.server_send(&mut cap, &head)?;
        open.push((c, end));
    }
    for (c, end) in &mut open {
        c.server_send(&mut cap, end)?;
        c.close(&mut cap)?;
    }
    Ok(())
}

/// A brotli stream asking for a 16 MiB window (WBITS 24) that fills it: `data` in an
/// uncompressed meta-block, then 16 MiB of newlines (blank lines to an SSE parser, which hold
/// nothing) from a few bytes, and an empty uncompressed meta-block to end on a byte; the
/// stream's last meta-block is left for later (the second part).
pub fn brotli_open(data: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut b = Bits::default();
    b.put(1, 1);
    b.put(7, 3); // WBITS = 17 + 7
    uncompressed_header(&mut b, data.len());
    let mut out = b.bytes();
    out.extend_from_slice(data);
    let mut b = Bits::default();
    b.put(0, 1); // ISLAST
    b.put(2, 2); // MNIBBLES = 6
    b.put((1 << 24) - 1, 24); // MLEN - 1
    b.put(0, 1); // ISUNCOMPRESSED
    one_copy_meta_block(&mut b, u64::from(b'\n'));
    uncompressed_header(&mut b, 1);
    out.extend_from_slice(&b.bytes());
    out.push(b'\n');
    let mut end = Bits::default();
    end.put(0b11, 2); // ISLAST, ISLASTEMPTY
    (out, end.bytes())
}

/// The header of a meta-block of `len` (at most 65536) uncompressed bytes, which is padded to
/// the next byte (RFC 7932 section 9.2).
fn uncompressed_header(b: &mut Bits, len: usize) {
    b.put(0, 1); // ISLAST
    b.put(0, 2); // MNIBBLES = 4
    b.put(len as u64 - 1, 16); // MLEN - 1
    b.put(1, 1); // ISUNCOMPRESSED
    b.align();
}

/// The rest of a compressed meta-block of 2^24 bytes: one `literal`, then a copy of
/// 2^24 - 1 bytes at distance 1. Every prefix code has one symbol, so symbols cost no bits
/// (RFC 7932 section 3.4); only the extra bits are written.
fn one_copy_meta_block(b: &mut Bits, literal: u64) {
    b.put(0, 3); // NBLTYPESL, NBLTYPESI, NBLTYPESD = 1
    b.put(0, 2); // NPOSTFIX
    b.put(0, 4); // NDIRECT
    b.put(0, 2); // context mode of the one literal block type
    b.put(0, 2); // NTREESL, NTREESD = 1
    for (symbol, alphabet_bits) in [(literal, 8), (399, 10), (16, 6)] {
        b.put(1, 2); // HSKIP = 1: a simple prefix code
        b.put(0, 2); // NSYM - 1
        b.put(symbol, alphabet_bits);
    }
    // Command 399: insert code 1 (one literal), copy code 23 (2118 + 24 extra bits),
    // explicit distance code 16 (1 extra bit: distance 1).
    b.put((1 << 24) - 1 - 2118, 24);
    b.put(0, 1);
}

/// A brotli stream of `n` meta-blocks of 16 MiB zeros each, about 13 bytes per meta-block.
pub fn brotli_zeros(n: u64) -> Vec<u8> {
    let mut b = Bits::default();
    b.put(0, 1); // WBITS = 16
    for _ in 0..n {
        b.put(0, 1); // ISLAST
        b.put(2, 2); // MNIBBLES = 6
        b.put((1 << 24) - 1, 24); // MLEN - 1
        b.put(0, 1); // ISUNCOMPRESSED
        one_copy_meta_block(&mut b, 0);
    }
    b.put(0b11, 2); // ISLAST, ISLASTEMPTY
    b.bytes()
}

#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, v: u64, bits: u32) {
        self.acc |= v << self.n;
        self.n += bits;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// Pads with zero bits to the next byte.
    fn align(&mut self) {
        if !self.n.is_multiple_of(8) {
            self.put(0, 8 - self.n % 8);
        }
    }

    fn bytes(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

fn gzip_bomb<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":""#)?;
    let zeros = vec![b'0'; 1 << 20];
    for _ in 0..n {
        gz.write_all(&zeros)?;
    }
    gz.write_all(br#""}]}}"#)?;
    encoded_answer(&gz.finish()?, "gzip", 65_535 - 40, w)
}

fn syn_flood<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    healthy_session(&mut cap, 0, &session_id(0), 2)?;
    for k in 0..n {
        // Every (address, port) once: ports 1024..65535 of 127.0.x.y.
        let port = 1024 + (k % 64_512) as u16;
        let host = 2 + k / 64_512;
        let mut c = Conn::new([127, 0, (host >> 8) as u8, host as u8], port);
        cap.now_us += 90;
        c.syn(&mut cap)?;
    }
    healthy_session(&mut cap, 1, &session_id(1), 2)
}

fn sse_events<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"long","arguments":{},"_meta":{"progressToken":7}}}"#;
    c.client_send(&mut cap, &post("/mcp", Some(SESSION), &[], body.as_bytes()))?;
    c.server_send(&mut cap, &sse_head(SESSION))?;
    // Events in batches of 64 per segment burst, so the file stays small and the count large.
    let mut buf = Vec::new();
    for i in 0..n {
        let data = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":7,"progress":{i}}}}}"#
        );
        chunk(&mut buf, sse_event(&format!("e{i}"), &data).as_bytes());
        if buf.len() > 16 * MSS {
            c.server_send(&mut cap, &buf)?;
            buf.clear();
        }
    }
    chunk(&mut buf, sse_event("end", &tools_call_result(2)).as_bytes());
    buf.extend_from_slice(b"0\r\n\r\n");
    c.server_send(&mut cap, &buf)?;
    c.close(&mut cap)
}

fn many_calls<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    healthy_session(&mut cap, 1, SESSION, n)
}

/// An HTTP/2 frame.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.push(kind);
    f.push(flags);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A header block of literal fields, never indexed and never Huffman-coded (RFC 7541 §6.2.3):
/// what any HPACK decoder reads without a table.
fn hpack_literal(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x10);
        hpack_string(&mut out, name);
        hpack_string(&mut out, value);
    }
    out
}

/// An HPACK string literal, not Huffman-coded (RFC 7541 §5.2).
fn hpack_string(out: &mut Vec<u8>, s: &str) {
    {
        let n = s.len();
        if n < 127 {
            out.push(n as u8);
        } else {
            out.push(127);
            let mut rest = n - 127;
            while rest >= 128 {
                out.push((rest % 128) as u8 | 0x80);
                rest /= 128;
            }
            out.push(rest as u8);
        }
        out.extend_from_slice(s.as_bytes());
    }
}

const H2_END_STREAM: u8 = 0x1;
const H2_END_HEADERS: u8 = 0x4;

/// A request's HEADERS frame (and its DATA, ending the stream, when it has a body).
fn h2_post(stream: u32, session: Option<&str>, body: &str) -> Vec<u8> {
    let mut fields = vec![
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "127.0.0.1"),
        (":path", "/mcp"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if let Some(s) = session {
        fields.push(("mcp-session-id", s));
        fields.push(("mcp-protocol-version", "2025-06-18"));
    }
    let mut out = h2_frame(1, H2_END_HEADERS, stream, &hpack_literal(&fields));
    out.extend(h2_frame(0, H2_END_STREAM, stream, body.as_bytes()));
    out
}

/// The client's preface and both sides' SETTINGS (with windows large enough that nothing waits).
fn h2_open<W: Write>(cap: &mut Capture<W>, c: &mut Conn) -> io::Result<()> {
    c.handshake(cap)?;
    let settings = {
        let mut p = 4u16.to_be_bytes().to_vec();
        p.extend((1u32 << 30).to_be_bytes());
        h2_frame(4, 0, 0, &p)
    };
    let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    preface.extend(&settings);
    preface.extend(h2_frame(8, 0, 0, &(1u32 << 30).to_be_bytes()));
    c.client_send(cap, &preface)?;
    let mut server = settings;
    server.extend(h2_frame(8, 0, 0, &(1u32 << 30).to_be_bytes()));
    c.server_send(cap, &server)
}

fn h2_calls<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    h2_open(&mut cap, &mut c)?;
    c.client_send(&mut cap, &h2_post(1, None, &initialize_request(1)))?;
    let head = hpack_literal(&[
        (":status", "200"),
        ("content-type", "application/json"),
        ("mcp-session-id", SESSION),
    ]);
    let mut answer = h2_frame(1, H2_END_HEADERS, 1, &head);
    answer.extend(h2_frame(
        0,
        H2_END_STREAM,
        1,
        initialize_result(1).as_bytes(),
    ));
    c.server_send(&mut cap, &answer)?;
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    c.client_send(&mut cap, &h2_post(3, Some(SESSION), note))?;
    let accepted = hpack_literal(&[(":status", "202"), ("mcp-session-id", SESSION)]);
    c.server_send(
        &mut cap,
        &h2_frame(1, H2_END_HEADERS | H2_END_STREAM, 3, &accepted),
    )?;
    let sse = hpack_literal(&[
        (":status", "200"),
        ("content-type", "text/event-stream"),
        ("mcp-session-id", SESSION),
    ]);
    // Two calls in flight at a time, answered in the other order: streams interleave.
    for pair in 0..n.div_ceil(2) {
        let ids: Vec<u64> = (2 + 2 * pair..(2 + 2 * pair + 2).min(2 + n)).collect();
        let mut req = Vec::new();
        for &id in &ids {
            req.extend(h2_post(3 + 2 * id as u32, Some(SESSION), &tools_call(id)));
        }
        c.client_send(&mut cap, &req)?;
        let mut resp = Vec::new();
        for &id in ids.iter().rev() {
            let stream = 3 + 2 * id as u32;
            resp.extend(h2_frame(1, H2_END_HEADERS, stream, &sse));
            let event = sse_event(&format!("{id}-1"), &tools_call_result(id));
            resp.extend(h2_frame(0, H2_END_STREAM, stream, event.as_bytes()));
        }
        c.server_send(&mut cap, &resp)?;
    }
    c.close(&mut cap)
}

fn h2_continuation<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    h2_open(&mut cap, &mut c)?;
    let block = hpack_literal(&[(":method", "POST"), (":path", "/mcp")]);
    c.client_send(&mut cap, &h2_frame(1, 0, 1, &block))?;
    let filler = vec![0x10u8; 16 << 10];
    for _ in 0..n {
        c.client_send(&mut cap, &h2_frame(9, 0, 1, &filler))?;
    }
    c.close(&mut cap)
}

fn h2_open_streams<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    h2_open(&mut cap, &mut c)?;
    let block = hpack_literal(&[
        (":method", "POST"),
        (":path", "/mcp"),
        ("mcp-session-id", SESSION),
    ]);
    let mut buf = Vec::new();
    for i in 0..n {
        buf.extend(h2_frame(1, H2_END_HEADERS, 1 + 2 * i as u32, &block));
        if buf.len() > 16 * MSS {
            c.client_send(&mut cap, &buf)?;
            buf.clear();
        }
    }
    c.client_send(&mut cap, &buf)?;
    c.close(&mut cap)
}

/// A header block sent as a HEADERS frame and CONTINUATIONs of at most 16 KiB (the default
/// SETTINGS_MAX_FRAME_SIZE), ending the stream.
fn h2_headers(stream: u32, block: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let pieces: Vec<&[u8]> = block.chunks(16 << 10).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let (kind, mut flags) = if i == 0 { (1, H2_END_STREAM) } else { (9, 0) };
        if i + 1 == pieces.len() {
            flags |= H2_END_HEADERS;
        }
        out.extend(h2_frame(kind, flags, stream, piece));
    }
    out
}

/// Issue 29: a 4 KB `:path` put into the client's HPACK table once, then referenced by one
/// byte each (index 62) `n` thousand times, in header blocks of at most 512 Ki references each;
/// then a healthy session on its own connection.
fn hpack_bomb<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    h2_open(&mut cap, &mut c)?;
    let path = format!("/{}", "a".repeat(3999));
    // :method POST, :scheme http, then :path (static name 4) with incremental indexing.
    let mut first = vec![0x83, 0x86, 0x44];
    hpack_string(&mut first, &path);
    c.client_send(&mut cap, &h2_headers(1, &first))?;
    let (mut left, mut stream) = (n * 1000, 3u32);
    while left > 0 {
        let refs = left.min(512 << 10);
        let mut block = vec![0x83, 0x86];
        block.resize(2 + refs as usize, 0xbe);
        c.client_send(&mut cap, &h2_headers(stream, &block))?;
        left -= refs;
        stream += 2;
    }
    c.close(&mut cap)?;
    healthy_session(&mut cap, 2, &session_id(2), 2)
}

/// `n` MiB of `data: {}` events, gzip-compressed (514:1).
fn empty_events_gzip(n: u64) -> io::Result<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    let events = b"data: {}\n\n".repeat((1 << 20) / 10);
    for _ in 0..n {
        gz.write_all(&events)?;
    }
    gz.finish()
}

/// Issue 29: a tools/call answered by an event stream of `n` MiB of `data: {}` events from
/// gzip, in 60 KB segments (a capture taken with segmentation offload), on HTTP/1.1 or HTTP/2;
/// then a healthy session on its own connection.
fn sse_gzip_bomb<W: Write>(n: u64, h2: bool, seg: usize, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    let gz = empty_events_gzip(n)?;
    if h2 {
        h2_open(&mut cap, &mut c)?;
        c.client_send(&mut cap, &h2_post(1, None, &tools_call(2)))?;
        let head = hpack_literal(&[
            (":status", "200"),
            ("content-type", "text/event-stream"),
            ("content-encoding", "gzip"),
        ]);
        let mut answer = h2_frame(1, H2_END_HEADERS, 1, &head);
        let pieces: Vec<&[u8]> = gz.chunks(16 << 10).collect();
        for (i, piece) in pieces.iter().enumerate() {
            let flags = if i + 1 == pieces.len() {
                H2_END_STREAM
            } else {
                0
            };
            answer.extend(h2_frame(0, flags, 1, piece));
        }
        c.server_send_in(&mut cap, &answer, seg)?;
    } else {
        c.handshake(&mut cap)?;
        open_session(&mut cap, &mut c, SESSION)?;
        c.client_send(
            &mut cap,
            &post("/mcp", Some(SESSION), &[], tools_call(2).as_bytes()),
        )?;
        let mut answer = sse_head(SESSION);
        answer.truncate(answer.len() - 2);
        answer.extend_from_slice(b"content-encoding: gzip\r\n\r\n");
        for piece in gz.chunks(16 << 10) {
            chunk(&mut answer, piece);
        }
        answer.extend_from_slice(b"0\r\n\r\n");
        c.server_send_in(&mut cap, &answer, seg)?;
    }
    c.close(&mut cap)?;
    healthy_session(&mut cap, 2, &session_id(2), 2)
}

/// Issue 29: `n` notifications POSTed back to back on one keep-alive connection before any answer
/// (HTTP/1.1 pipelining), then `n` `202 Accepted` in a row: each is an exchange with nothing to
/// wait for, so what the tool holds for them must not grow with `n`.
fn pipelined_notifications<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    // Sent in batches of 4096 so the generator holds a few MB, not the whole pipeline.
    let mut sent = 0;
    while sent < n {
        let k = (n - sent).min(4096);
        let mut burst = Vec::new();
        for i in sent..sent + k {
            let note = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t","progress":{i}}}}}"#
            );
            burst.extend(post("/mcp", Some(SESSION), &[], note.as_bytes()));
        }
        c.client_send(&mut cap, &burst)?;
        sent += k;
    }
    let mut answered = 0;
    while answered < n {
        let k = (n - answered).min(4096);
        let burst: Vec<u8> = (0..k).flat_map(|_| accepted(SESSION)).collect();
        c.server_send_in(&mut cap, &burst, 60_000)?;
        answered += k;
    }
    c.close(&mut cap)?;
    healthy_session(&mut cap, 2, &session_id(2), 2)
}

/// Issue 29: a HAR whose one event-stream entry holds `n` MiB of `data: {}` events in its
/// `content.text`, then a healthy session's entries.
fn har_sse_bomb<W: Write>(n: u64, mut w: W) -> io::Result<()> {
    w.write_all(
        br#"{"log":{"version":"1.2","creator":{"name":"mitmproxy","version":"11.0.0"},"entries":["#,
    )?;
    let entry = |w: &mut W,
                 i: u64,
                 req: &str,
                 sid: Option<&str>,
                 status: u16,
                 mime: &str|
     -> io::Result<()> {
        let session_hdr = sid
            .map(|s| {
                format!(
                    r#",{{"name":"mcp-session-id","value":"{s}"}},{{"name":"mcp-protocol-version","value":"2025-06-18"}}"#
                )
            })
            .unwrap_or_default();
        write!(
            w,
            concat!(
                r#"{}{{"startedDateTime":"2026-11-30T00:00:{:02}.000000+00:00","time":2.0,"#,
                r#""request":{{"method":"POST","url":"http://127.0.0.1:3000/mcp","httpVersion":"HTTP/1.1","cookies":[],"#,
                r#""headers":[{{"name":"content-type","value":"application/json"}}{}],"queryString":[],"headersSize":-1,"bodySize":{},"#,
                r#""postData":{{"mimeType":"application/json","text":{}}}}},"#,
                r#""response":{{"status":{},"statusText":"OK","httpVersion":"HTTP/1.1","cookies":[],"#,
                r#""headers":[{{"name":"content-type","value":"{}"}},{{"name":"mcp-session-id","value":"{}"}}],"#,
                r#""content":{{"mimeType":"{}","text":""#
            ),
            if i == 0 { "" } else { "," },
            i,
            session_hdr,
            req.len(),
            json_string(req),
            status,
            mime,
            SESSION,
            mime,
        )
    };
    let end = |w: &mut W| -> io::Result<()> {
        w.write_all(br#""},"redirectURL":"","headersSize":-1,"bodySize":-1},"cache":{},"timings":{"send":0.1,"wait":1.8,"receive":0.1}}"#)
    };
    let json = |w: &mut W, i: u64, req: &str, sid: Option<&str>, resp: &str| -> io::Result<()> {
        let status = if resp.is_empty() { 202 } else { 200 };
        entry(w, i, req, sid, status, "application/json")?;
        let text = json_string(resp);
        w.write_all(&text.as_bytes()[1..text.len() - 1])?;
        end(w)
    };
    json(
        &mut w,
        0,
        &initialize_request(1),
        None,
        &initialize_result(1),
    )?;
    json(&mut w, 1, INITIALIZED, Some(SESSION), "")?;
    entry(
        &mut w,
        2,
        &tools_call(2),
        Some(SESSION),
        200,
        "text/event-stream",
    )?;
    let events = "data: {}\\n\\n".repeat((1 << 20) / 10);
    for _ in 0..n {
        w.write_all(events.as_bytes())?;
    }
    end(&mut w)?;
    json(
        &mut w,
        3,
        &tools_call(3),
        Some(SESSION),
        &tools_call_result(3),
    )?;
    w.write_all(b"]}}\n")
}

fn batch<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    // The one revision with batches: a legitimate input, so no finding.
    open_session_at(&mut cap, &mut c, SESSION, "2025-03-26")?;
    let join = |f: &dyn Fn(u64) -> String| {
        let items: Vec<String> = (2..2 + n).map(f).collect();
        format!("[{}]", items.join(","))
    };
    let req = join(&tools_call);
    c.client_send(&mut cap, &post("/mcp", Some(SESSION), &[], req.as_bytes()))?;
    let resp = join(&tools_call_result);
    c.server_send(&mut cap, &json_response(SESSION, resp.as_bytes(), ""))?;
    c.close(&mut cap)
}

fn duplicates<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    c.client_send(
        &mut cap,
        &post("/mcp", Some(SESSION), &[], tools_call(2).as_bytes()),
    )?;
    c.server_send(&mut cap, &sse_head(SESSION))?;
    let mut buf = Vec::new();
    for i in 0..=n {
        chunk(
            &mut buf,
            sse_event(&format!("2-{i}"), &tools_call_result(2)).as_bytes(),
        );
        if buf.len() > 16 * MSS {
            c.server_send(&mut cap, &buf)?;
            buf.clear();
        }
    }
    buf.extend_from_slice(b"0\r\n\r\n");
    c.server_send(&mut cap, &buf)?;
    c.close(&mut cap)
}

/// A connection of its own for stream `k` of one session: more than the ephemeral ports.
fn stream_conn(k: u64) -> Conn {
    Conn::new([127, 1, (k >> 8) as u8, k as u8], 40_000)
}

/// A standalone `GET /mcp` of the session, resuming after `last_event_id` when given.
fn get_stream(last_event_id: Option<&str>) -> Vec<u8> {
    let mut h = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept: text/event-stream\r\n\
         mcp-session-id: {SESSION}\r\nmcp-protocol-version: 2025-06-18\r\n"
    );
    if let Some(id) = last_event_id {
        h.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    h.push_str("\r\n");
    h.into_bytes()
}

fn progress(id: u64, n: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{id},"progress":{n}}}}}"#
    )
}

/// `n` `tools/call` streams of one session, each cut by the client after two events with
/// integer IDs (one counter for the session), each resumed on a new connection with
/// `Last-Event-ID`; the server's counter restarts at 1 on every resume (`event_id_reset`).
fn resumes<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut main = Conn::local(1);
    main.handshake(&mut cap)?;
    open_session(&mut cap, &mut main, SESSION)?;
    for i in 0..n {
        let id = i + 2;
        let mut c = stream_conn(2 * i);
        c.handshake(&mut cap)?;
        c.client_send(
            &mut cap,
            &post("/mcp", Some(SESSION), &[], tools_call(id).as_bytes()),
        )?;
        let mut m = sse_head(SESSION);
        for k in 1..=2 {
            chunk(
                &mut m,
                sse_event(&(2 * i + k).to_string(), &progress(id, k)).as_bytes(),
            );
        }
        c.server_send(&mut cap, &m)?;
        c.close(&mut cap)?;
        let mut r = stream_conn(2 * i + 1);
        r.handshake(&mut cap)?;
        r.client_send(&mut cap, &get_stream(Some(&(2 * i + 2).to_string())))?;
        r.server_send(
            &mut cap,
            &sse_response(SESSION, &[sse_event("1", &tools_call_result(id))]),
        )?;
        r.close(&mut cap)?;
    }
    main.close(&mut cap)
}

/// `n` `tools/call` streams of one session abandoned by the client after one progress event,
/// each followed by a standalone GET stream that carries the call's result (`sse_fallback`)
/// under an event ID of a second counter (`event_id_reset`).
fn fallbacks<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut main = Conn::local(1);
    main.handshake(&mut cap)?;
    open_session(&mut cap, &mut main, SESSION)?;
    for i in 0..n {
        let id = i + 2;
        let mut c = stream_conn(2 * i);
        c.handshake(&mut cap)?;
        c.client_send(
            &mut cap,
            &post("/mcp", Some(SESSION), &[], tools_call(id).as_bytes()),
        )?;
        let mut m = sse_head(SESSION);
        chunk(
            &mut m,
            sse_event(&(i + 10).to_string(), &progress(id, 1)).as_bytes(),
        );
        c.server_send(&mut cap, &m)?;
        c.close(&mut cap)?;
        let mut g = stream_conn(2 * i + 1);
        g.handshake(&mut cap)?;
        g.client_send(&mut cap, &get_stream(None))?;
        g.server_send(
            &mut cap,
            &sse_response(SESSION, &[sse_event("1", &tools_call_result(id))]),
        )?;
        g.close(&mut cap)?;
    }
    main.close(&mut cap)
}

/// `n` sessions of three requests each (initialize, initialized, tools/call) in nginx's JSON
/// log format (samples/*.nginx.jsonl), one connection per session, interleaved by pairs.
fn access_log<W: Write>(n: u64, mut w: W) -> io::Result<()> {
    for k in 0..n {
        let sid = session_id(k);
        for (i, (status, sent_type, req_sid)) in [
            ("200", "text/event-stream", ""),
            ("202", "application/json", sid.as_str()),
            ("200", "text/event-stream", sid.as_str()),
        ]
        .into_iter()
        .enumerate()
        {
            let ms = 1_795_996_800_000 + k * 50 + i as u64 * 3;
            writeln!(
                w,
                concat!(
                    r#"{{"msec":"{}.{:03}","time_iso8601":"2026-11-30T00:00:00+00:00","remote_addr":"127.0.0.1","remote_port":"{}","#,
                    r#""connection":"{}","connection_requests":"{}","request_id":"{:032x}","request_method":"POST","request_uri":"/mcp","#,
                    r#""server_protocol":"HTTP/1.1","status":"{}","request_length":"300","request_time":"0.002","bytes_sent":"400","#,
                    r#""body_bytes_sent":"200","upstream_addr":"127.0.0.1:9000","upstream_status":"{}","upstream_response_time":"0.002","#,
                    r#""upstream_header_time":"0.002","upstream_bytes_received":"400","http_mcp_session_id":"{}","#,
                    r#""sent_http_mcp_session_id":"{}","http_mcp_protocol_version":"{}","http_last_event_id":"","#,
                    r#""http_accept":"application/json, text/event-stream","content_type":"application/json","#,
                    r#""sent_http_content_type":"{}","upstream_http_x_accel_buffering":"","http_user_agent":"stress/1.0"}}"#
                ),
                ms / 1000,
                ms % 1000,
                1024 + k % 60_000,
                k + 1,
                i + 1,
                k * 3 + i as u64,
                status,
                status,
                req_sid,
                sid,
                if req_sid.is_empty() { "" } else { "2025-06-18" },
                sent_type,
            )?;
        }
    }
    Ok(())
}

/// `n` connections that each send a request whose first segment the capture never saw: the
/// second one (1.4 KB, so 190,000 of them fill a 256 MiB out-of-order budget) waits out of
/// order until the end.
fn ooo_conns<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    healthy_session(&mut cap, 0, &session_id(0), 2)?;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"write_file","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(1_100)
    );
    let req = post("/mcp", Some(SESSION), &[], body.as_bytes());
    let (first, second) = req.split_at(req.len() - MSS);
    for k in 0..n {
        let port = 1024 + (k % 64_512) as u16;
        let host = 2 + k / 64_512;
        let mut c = Conn::new([127, 0, (host >> 8) as u8, host as u8], port);
        c.handshake(&mut cap)?;
        let later = (SeqNumber(c.cseq) + first.len() as u32).0;
        cap.frame(&c.client_frame(later, PSH_ACK, second))?;
    }
    healthy_session(&mut cap, 1, &session_id(1), 2)
}

/// One connection whose request starts with a hole, followed by `n` one-byte pieces with a
/// one-byte hole between each (so no two pieces touch).
fn ooo_bytes<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    healthy_session(&mut cap, 0, &session_id(0), 2)?;
    let mut c = Conn::local(9);
    c.handshake(&mut cap)?;
    let base = SeqNumber(c.cseq) + 1;
    for i in 0..n {
        let seq = (base + (2 * i) as u32).0;
        cap.frame(&c.client_frame(seq, PSH_ACK, b"x"))?;
    }
    healthy_session(&mut cap, 1, &session_id(1), 2)
}

/// A capture with a 128-byte snap length: one connection sends `n` full segments after a hole,
/// a hole between each, every frame cut to its headers and 74 payload bytes.
fn snaplen_ooo<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 128)?;
    let mut c = Conn::local(9);
    c.handshake(&mut cap)?;
    let seg = vec![b'a'; MSS];
    let base = SeqNumber(c.cseq) + MSS as u32;
    for i in 0..n {
        let seq = (base + (i as u32).wrapping_mul(2 * MSS as u32)).0;
        cap.frame(&c.client_frame(seq, PSH_ACK, &seg))?;
    }
    Ok(())
}

/// A HAR of one session: initialize, initialized, then `n` tools/call whose results carry
/// 64 KiB of text each.
fn big_har<W: Write>(n: u64, mut w: W) -> io::Result<()> {
    w.write_all(br#"{"log":{"version":"1.2","creator":{"name":"mitmproxy","version":"11.0.0"},"pages":[],"entries":["#)?;
    let text = "lorem ipsum ".repeat(65_536 / 12);
    let entry = |w: &mut W, i: u64, req: &str, status: u16, sid: Option<&str>, resp: &str| {
        let ms = i * 5;
        let session_hdr = sid
            .map(|s| {
                format!(
                    r#",{{"name":"mcp-session-id","value":"{s}"}},{{"name":"mcp-protocol-version","value":"2025-06-18"}}"#
                )
            })
            .unwrap_or_default();
        let sep = if i == 0 { "" } else { "," };
        write!(
            w,
            concat!(
                r#"{}{{"startedDateTime":"2026-11-30T00:{:02}:{:02}.{:03}000+00:00","time":2.0,"#,
                r#""request":{{"method":"POST","url":"http://127.0.0.1:3000/mcp","httpVersion":"HTTP/1.1","cookies":[],"#,
                r#""headers":[{{"name":"Host","value":"127.0.0.1:3000"}},{{"name":"accept","value":"application/json, text/event-stream"}},"#,
                r#"{{"name":"content-type","value":"application/json"}}{}],"queryString":[],"headersSize":-1,"bodySize":{},"#,
                r#""postData":{{"mimeType":"application/json","text":{}}}}},"#,
                r#""response":{{"status":{},"statusText":"OK","httpVersion":"HTTP/1.1","cookies":[],"#,
                r#""headers":[{{"name":"content-type","value":"application/json"}},{{"name":"mcp-session-id","value":"{}"}}],"#,
                r#""content":{{"size":{},"mimeType":"application/json","text":{}}},"redirectURL":"","headersSize":-1,"bodySize":{}}},"#,
                r#""cache":{{}},"timings":{{"send":0.1,"wait":1.8,"receive":0.1}},"serverIPAddress":"127.0.0.1"}}"#
            ),
            sep,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000,
            session_hdr,
            req.len(),
            json_string(req),
            status,
            SESSION,
            resp.len(),
            json_string(resp),
            resp.len(),
        )
    };
    entry(
        &mut w,
        0,
        &initialize_request(1),
        200,
        None,
        &initialize_result(1),
    )?;
    entry(&mut w, 1, INITIALIZED, 202, Some(SESSION), "")?;
    for id in 2..2 + n {
        let result = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        entry(&mut w, id, &tools_call(id), 200, Some(SESSION), &result)?;
    }
    w.write_all(b"]}}\n")
}

fn json_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            _ => o.push(ch),
        }
    }
    o.push('"');
    o
}

/// Deterministic base64 text of `len` bytes.
fn base64_text(len: usize) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            A[(x & 63) as usize] as char
        })
        .collect()
}

/// A screenshot tool: the result carries `n` MiB of base64 PNG, as SSE or as JSON.
fn big_result<W: Write>(n: u64, sse: bool, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    c.client_send(
        &mut cap,
        &post("/mcp", Some(SESSION), &[], tools_call(2).as_bytes()),
    )?;
    let result = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"image","data":"{}","mimeType":"image/png"}}],"isError":false}}}}"#,
        base64_text((n << 20) as usize)
    );
    let resp = if sse {
        sse_response(SESSION, &[sse_event("2-1", &result)])
    } else {
        json_response(SESSION, result.as_bytes(), "")
    };
    c.server_send(&mut cap, &resp)?;
    call(&mut cap, &mut c, SESSION, 3)?;
    c.close(&mut cap)
}

/// `n` tools/call on one connection; after each request the capture clock steps back 2 s (a
/// clock adjusted during the capture), so every answer is stamped before its request.
fn ts_backwards<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    cap.now_us += n * 3_000_000;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    for id in 2..2 + n {
        c.client_send(
            &mut cap,
            &post("/mcp", Some(SESSION), &[], tools_call(id).as_bytes()),
        )?;
        cap.now_us -= 2_000_000;
        let ev = sse_event(&format!("{id}-1"), &tools_call_result(id));
        c.server_send(&mut cap, &sse_response(SESSION, &[ev]))?;
    }
    c.close(&mut cap)
}

/// A tools/call whose request has `n` extra headers (a proxy's tracing headers, or padding to
/// hide it), answered; then an ordinary tools/call.
fn many_headers<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let mut c = Conn::local(1);
    c.handshake(&mut cap)?;
    open_session(&mut cap, &mut c, SESSION)?;
    let extra: Vec<(String, String)> = (0..n)
        .map(|i| (format!("x-trace-{i}"), format!("{i:08x}")))
        .collect();
    let hidden = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_repository","arguments":{"name":"prod"}}}"#;
    c.client_send(
        &mut cap,
        &post("/mcp", Some(SESSION), &extra, hidden.as_bytes()),
    )?;
    let ev = sse_event("2-1", &tools_call_result(2));
    c.server_send(&mut cap, &sse_response(SESSION, &[ev]))?;
    call(&mut cap, &mut c, SESSION, 3)?;
    c.close(&mut cap)
}

/// Secrets that must never be printed without `--show-secrets`.
pub const SECRETS: &[&str] = &[
    "legacy-url-token-DO-NOT-LEAK",
    "endpoint-token-DO-NOT-LEAK",
    "sk-proj-DoNotLeak0123456789abcdefABCDEF",
    "ghp_DoNotLeak0123456789abcdefABCDEFghij",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkby1ub3QtbGVhayJ9.c2lnbmF0dXJlLWRvLW5vdC1sZWFr",
    "bearer-header-DO-NOT-LEAK",
    "api-key-header-DO-NOT-LEAK",
];

/// `n` copies of: a legacy HTTP+SSE session (`GET /sse?token=…`, its `endpoint` event naming a
/// tokened URL, POSTs to it, answers on the stream carrying sk-/ghp_/JWT text and a JSON-RPC
/// error quoting a token) and a Streamable HTTP session with the same in SSE and JSON.
fn secrets<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    let [url_tok, ep_tok, sk, ghp, jwt, bearer, api_key] = SECRETS else {
        unreachable!()
    };
    let auth = vec![
        ("Authorization".to_string(), format!("Bearer {bearer}")),
        ("x-api-key".to_string(), api_key.to_string()),
    ];
    for k in 0..n {
        let mut get = Conn::local(4 * k);
        get.handshake(&mut cap)?;
        let mut req = format!(
            "GET /sse?token={url_tok} HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept: text/event-stream\r\n\
             Authorization: Bearer {bearer}\r\nCache-Control: no-store\r\n\r\n"
        );
        get.client_send(&mut cap, req.as_bytes())?;
        let sid = session_id(k);
        let mut head =
            "HTTP/1.1 200 OK\r\ndate: Mon, 30 Nov 2026 00:00:00 GMT\r\nserver: uvicorn\r\n\
             cache-control: no-store\r\nconnection: keep-alive\r\nx-accel-buffering: no\r\n\
             content-type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
                .as_bytes()
                .to_vec();
        let endpoint = format!("/messages/?session_id={sid}&token={ep_tok}");
        chunk(
            &mut head,
            format!("event: endpoint\r\ndata: {endpoint}\r\n\r\n").as_bytes(),
        );
        get.server_send(&mut cap, &head)?;
        let mut post_conn = Conn::local(4 * k + 1);
        post_conn.handshake(&mut cap)?;
        let leaky_text = format!("found {sk} and {ghp} and {jwt}");
        let bodies = [
            initialize_request(1),
            INITIALIZED.to_string(),
            tools_call(2),
            tools_call(3),
        ];
        let answers = [
            Some(initialize_result(1)),
            None,
            Some(format!(
                r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"text","text":"{leaky_text}"}}]}}}}"#
            )),
            Some(format!(
                r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":-32603,"message":"upstream rejected {sk} (token {ghp})"}}}}"#
            )),
        ];
        for (body, answer) in bodies.iter().zip(&answers) {
            req = String::from_utf8(post(&endpoint, None, &auth, body.as_bytes())).unwrap();
            post_conn.client_send(&mut cap, req.as_bytes())?;
            let accepted = "HTTP/1.1 202 Accepted\r\ndate: Mon, 30 Nov 2026 00:00:00 GMT\r\n\
                 server: uvicorn\r\ncontent-length: 8\r\n\r\nAccepted";
            post_conn.server_send(&mut cap, accepted.as_bytes())?;
            if let Some(a) = answer {
                let mut ev = Vec::new();
                chunk(
                    &mut ev,
                    format!("event: message\r\ndata: {a}\r\n\r\n").as_bytes(),
                );
                get.server_send(&mut cap, &ev)?;
            }
        }
        post_conn.close(&mut cap)?;
        get.close(&mut cap)?;
        streamable_secrets(&mut cap, k, &auth, &leaky_text)?;
    }
    Ok(())
}

fn streamable_secrets<W: Write>(
    cap: &mut Capture<W>,
    k: u64,
    auth: &[(String, String)],
    leaky_text: &str,
) -> io::Result<()> {
    let sid = session_id(1_000_000 + k);
    let mut c = Conn::local(4 * k + 2);
    c.handshake(cap)?;
    c.client_send(
        cap,
        &post("/mcp", None, auth, initialize_request(1).as_bytes()),
    )?;
    c.server_send(
        cap,
        &sse_response(&sid, &[sse_event("1-1", &initialize_result(1))]),
    )?;
    c.client_send(cap, &post("/mcp", Some(&sid), auth, INITIALIZED.as_bytes()))?;
    c.server_send(cap, &accepted(&sid))?;
    c.client_send(
        cap,
        &post("/mcp", Some(&sid), auth, tools_call(2).as_bytes()),
    )?;
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"text","text":"{leaky_text}"}}]}}}}"#
    );
    c.server_send(cap, &sse_response(&sid, &[sse_event("2-1", &text)]))?;
    c.client_send(
        cap,
        &post("/mcp", Some(&sid), auth, tools_call(3).as_bytes()),
    )?;
    let err =
        format!(r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":-32001,"message":"{leaky_text}"}}}}"#);
    c.server_send(cap, &json_response(&sid, err.as_bytes(), ""))?;
    c.close(cap)
}

/// `n` healthy sessions, a record header claiming 3 GB, 1000 bytes of garbage, `n` more.
fn corrupt_pcap<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcap(w, 262_144)?;
    for k in 0..n {
        healthy_session(&mut cap, k, &session_id(k), 2)?;
    }
    let mut bad = vec![0u8; 16];
    bad[0..4].copy_from_slice(&1_795_996_900u32.to_le_bytes());
    bad[8..12].copy_from_slice(&3_000_000_000u32.to_le_bytes());
    bad[12..16].copy_from_slice(&3_000_000_000u32.to_le_bytes());
    cap.raw(&bad)?;
    cap.raw(&garbage(1000))?;
    for k in n..2 * n {
        healthy_session(&mut cap, k, &session_id(k), 2)?;
    }
    Ok(())
}

/// `n` healthy sessions, a block with a wrong trailing length and garbage, `n` more.
fn corrupt_pcapng<W: Write>(n: u64, w: W) -> io::Result<()> {
    let mut cap = Capture::pcapng(w)?;
    for k in 0..n {
        healthy_session(&mut cap, k, &session_id(k), 2)?;
    }
    let mut bad = Vec::new();
    bad.extend_from_slice(&6u32.to_le_bytes());
    bad.extend_from_slice(&64u32.to_le_bytes());
    bad.extend_from_slice(&garbage(52));
    bad.extend_from_slice(&0xdead_beefu32.to_le_bytes());
    cap.raw(&bad)?;
    cap.raw(&garbage(997))?;
    for k in n..2 * n {
        healthy_session(&mut cap, k, &session_id(k), 2)?;
    }
    Ok(())
}

/// Bytes that form no plausible record header or block (no zero bytes, no small lengths).
fn garbage(len: usize) -> Vec<u8> {
    (0..len).map(|i| 0xa5 ^ (i as u8 & 0x3f) | 0x80).collect()
}
