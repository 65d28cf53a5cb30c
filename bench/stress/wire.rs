//! The wire under the stress generators: a classic pcap and a pcapng writer, Ethernet/IPv4/TCP
//! frames with valid checksums, TCP connections that keep their own sequence numbers, and the
//! HTTP messages of the MCP Python SDK (httpx client, uvicorn + sse-starlette server).

use std::io::{self, Write};

/// Microseconds since the epoch of the first packet (2026-11-30T00:00:00Z).
pub const EPOCH_US: u64 = 1_795_996_800_000_000;
pub const SERVER_PORT: u16 = 3000;
pub const MSS: usize = 1448;

/// Where frames go: a classic pcap (Ethernet, microseconds) or a pcapng.
pub struct Capture<W: Write> {
    w: W,
    snaplen: u32,
    pcapng: bool,
    /// The clock of the next frame, advanced 10 µs per frame unless a generator sets it.
    pub now_us: u64,
}

impl<W: Write> Capture<W> {
    pub fn pcap(mut w: W, snaplen: u32) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&[0; 8]);
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        w.write_all(&h)?;
        Ok(Capture {
            w,
            snaplen,
            pcapng: false,
            now_us: EPOCH_US,
        })
    }

    pub fn pcapng(mut w: W) -> io::Result<Self> {
        // Section header block, then one Ethernet interface (microsecond resolution by default).
        let mut shb = Vec::new();
        shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        write_block(&mut w, 0x0a0d_0d0a, &shb)?;
        let mut idb = Vec::new();
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&262_144u32.to_le_bytes());
        write_block(&mut w, 1, &idb)?;
        Ok(Capture {
            w,
            snaplen: 262_144,
            pcapng: true,
            now_us: EPOCH_US,
        })
    }

    /// Writes one frame at the current clock, cut to the snap length, and advances the clock.
    pub fn frame(&mut self, data: &[u8]) -> io::Result<()> {
        let caplen = data.len().min(self.snaplen as usize);
        let ts = self.now_us;
        self.now_us += 10;
        if self.pcapng {
            let mut b = Vec::with_capacity(20 + caplen + 3);
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
            b.extend_from_slice(&(ts as u32).to_le_bytes());
            b.extend_from_slice(&(caplen as u32).to_le_bytes());
            b.extend_from_slice(&(data.len() as u32).to_le_bytes());
            b.extend_from_slice(&data[..caplen]);
            while b.len() % 4 != 0 {
                b.push(0);
            }
            return write_block(&mut self.w, 6, &b);
        }
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((ts / 1_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((ts % 1_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(caplen as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(data.len() as u32).to_le_bytes());
        self.w.write_all(&h)?;
        self.w.write_all(&data[..caplen])
    }

    /// Raw bytes into the file, outside any record (for corrupt-record generators).
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.w.write_all(bytes)
    }
}

fn write_block<W: Write>(w: &mut W, kind: u32, body: &[u8]) -> io::Result<()> {
    let len = (12 + body.len()) as u32;
    w.write_all(&kind.to_le_bytes())?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(body)?;
    w.write_all(&len.to_le_bytes())
}

pub const SYN: u8 = 0x02;
pub const ACK: u8 = 0x10;
pub const PSH_ACK: u8 = 0x18;
pub const FIN_ACK: u8 = 0x11;
pub const SYN_ACK: u8 = 0x12;

/// An Ethernet/IPv4/TCP frame with valid IP and TCP checksums.
pub fn tcp_frame(
    (src, sport): ([u8; 4], u16),
    (dst, dport): ([u8; 4], u16),
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(54 + payload.len());
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00]);
    let total = (40 + payload.len()) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let c = !fold(sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let mut tcp = [0u8; 20];
    tcp[0..2].copy_from_slice(&sport.to_be_bytes());
    tcp[2..4].copy_from_slice(&dport.to_be_bytes());
    tcp[4..8].copy_from_slice(&seq.to_be_bytes());
    tcp[8..12].copy_from_slice(&ack.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = flags;
    tcp[14..16].copy_from_slice(&65_535u16.to_be_bytes());
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src);
    pseudo[4..8].copy_from_slice(&dst);
    pseudo[9] = 6;
    pseudo[10..12].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    let s = sum(payload, sum(&tcp, sum(&pseudo, 0)));
    tcp[16..18].copy_from_slice(&(!fold(s)).to_be_bytes());
    f.extend_from_slice(&tcp);
    f.extend_from_slice(payload);
    f
}

fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// One TCP connection between a loopback client and the server on [`SERVER_PORT`].
pub struct Conn {
    pub client: [u8; 4],
    pub port: u16,
    /// Next sequence number of each side.
    pub cseq: u32,
    pub sseq: u32,
}

impl Conn {
    pub fn new(client: [u8; 4], port: u16) -> Self {
        let isn = u32::from(port).wrapping_mul(2_654_435_761) ^ u32::from_be_bytes(client);
        Conn {
            client,
            port,
            cseq: isn,
            sseq: isn.rotate_left(13),
        }
    }

    /// A connection from 127.0.0.1 (port in the ephemeral range, chosen by `k`).
    pub fn local(k: u64) -> Self {
        Conn::new([127, 0, 0, 1], 32_768 + (k % 28_000) as u16)
    }

    pub fn client_frame(&self, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let server = ([127, 0, 0, 1], SERVER_PORT);
        tcp_frame(
            (self.client, self.port),
            server,
            seq,
            self.sseq,
            flags,
            payload,
        )
    }

    pub fn server_frame(&self, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let server = ([127, 0, 0, 1], SERVER_PORT);
        tcp_frame(
            server,
            (self.client, self.port),
            seq,
            self.cseq,
            flags,
            payload,
        )
    }

    pub fn syn<W: Write>(&mut self, cap: &mut Capture<W>) -> io::Result<()> {
        cap.frame(&self.client_frame(self.cseq, SYN, &[]))?;
        self.cseq = self.cseq.wrapping_add(1);
        Ok(())
    }

    pub fn handshake<W: Write>(&mut self, cap: &mut Capture<W>) -> io::Result<()> {
        self.syn(cap)?;
        cap.frame(&self.server_frame(self.sseq, SYN_ACK, &[]))?;
        self.sseq = self.sseq.wrapping_add(1);
        cap.frame(&self.client_frame(self.cseq, ACK, &[]))
    }

    /// The client sends `data` in segments of at most `seg` bytes; the server acknowledges.
    pub fn client_send<W: Write>(&mut self, cap: &mut Capture<W>, data: &[u8]) -> io::Result<()> {
        for c in data.chunks(MSS) {
            cap.frame(&self.client_frame(self.cseq, PSH_ACK, c))?;
            self.cseq = self.cseq.wrapping_add(c.len() as u32);
        }
        cap.frame(&self.server_frame(self.sseq, ACK, &[]))
    }

    pub fn server_send<W: Write>(&mut self, cap: &mut Capture<W>, data: &[u8]) -> io::Result<()> {
        self.server_send_in(cap, data, MSS)
    }

    /// The server sends `data` in segments of `seg` bytes (more than the MSS: a capture taken
    /// before segmentation offload splits them).
    pub fn server_send_in<W: Write>(
        &mut self,
        cap: &mut Capture<W>,
        data: &[u8],
        seg: usize,
    ) -> io::Result<()> {
        let pieces = data.chunks(seg).len();
        for (i, c) in data.chunks(seg).enumerate() {
            cap.frame(&self.server_frame(self.sseq, PSH_ACK, c))?;
            self.sseq = self.sseq.wrapping_add(c.len() as u32);
            if i % 2 == 1 {
                cap.frame(&self.client_frame(self.cseq, ACK, &[]))?;
            }
        }
        // The last piece is acknowledged once: the same ACK twice would be a copy of a frame.
        if pieces % 2 == 1 || pieces == 0 {
            cap.frame(&self.client_frame(self.cseq, ACK, &[]))?;
        }
        Ok(())
    }

    pub fn close<W: Write>(&mut self, cap: &mut Capture<W>) -> io::Result<()> {
        cap.frame(&self.client_frame(self.cseq, FIN_ACK, &[]))?;
        self.cseq = self.cseq.wrapping_add(1);
        cap.frame(&self.server_frame(self.sseq, FIN_ACK, &[]))?;
        self.sseq = self.sseq.wrapping_add(1);
        cap.frame(&self.client_frame(self.cseq, ACK, &[]))
    }
}

/// A `POST /mcp` as the Python SDK's httpx client writes it.
pub fn post(path: &str, session: Option<&str>, extra: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut h = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept-Encoding: gzip, deflate\r\n\
         Connection: keep-alive\r\nUser-Agent: python-httpx/0.28.1\r\n\
         accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n"
    );
    if let Some(s) = session {
        h.push_str(&format!(
            "mcp-session-id: {s}\r\nmcp-protocol-version: 2025-06-18\r\n"
        ));
    }
    for (k, v) in extra {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut m = h.into_bytes();
    m.extend_from_slice(body);
    m
}

/// Response headers of uvicorn, without the blank line.
pub fn response_head(status: &str, session: &str, content_type: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ndate: Mon, 30 Nov 2026 00:00:00 GMT\r\nserver: uvicorn\r\n\
         content-type: {content_type}\r\nmcp-session-id: {session}\r\n"
    )
}

/// An SSE response (sse-starlette: CRLF framing, one chunk per event), ending the stream.
pub fn sse_response(session: &str, events: &[String]) -> Vec<u8> {
    let mut m = sse_head(session);
    for e in events {
        chunk(&mut m, e.as_bytes());
    }
    m.extend_from_slice(b"0\r\n\r\n");
    m
}

pub fn sse_head(session: &str) -> Vec<u8> {
    let mut h = response_head("200 OK", session, "text/event-stream");
    h.push_str(
        "cache-control: no-cache, no-transform\r\nconnection: keep-alive\r\n\
         x-accel-buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    h.into_bytes()
}

/// One SSE event carrying `data` (a JSON-RPC message) with its event id.
pub fn sse_event(id: &str, data: &str) -> String {
    format!("event: message\r\nid: {id}\r\ndata: {data}\r\n\r\n")
}

pub fn chunk(m: &mut Vec<u8>, data: &[u8]) {
    m.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    m.extend_from_slice(data);
    m.extend_from_slice(b"\r\n");
}

/// A JSON response with a Content-Length.
pub fn json_response(session: &str, body: &[u8], extra: &str) -> Vec<u8> {
    let mut h = response_head("200 OK", session, "application/json");
    h.push_str(extra);
    h.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut m = h.into_bytes();
    m.extend_from_slice(body);
    m
}

pub fn accepted(session: &str) -> Vec<u8> {
    let mut h = response_head("202 Accepted", session, "application/json");
    h.push_str("content-length: 0\r\n\r\n");
    h.into_bytes()
}

pub const SESSION: &str = "5f0c2a9e7d3b4c18a6e1f2d3c4b5a697";

pub fn initialize_request(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"mcp","version":"0.1.0"}}}}}}"#
    )
}

pub fn initialize_result(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{"listChanged":false}}}},"serverInfo":{{"name":"stress","version":"1.0.0"}}}}}}"#
    )
}

pub fn tools_call(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"call {id}"}}}}}}"#
    )
}

pub fn tools_call_result(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"echo: call {id}"}}],"isError":false}}}}"#
    )
}

pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// `initialize` (SSE answer naming the session) and `notifications/initialized` (202) on `c`.
pub fn open_session<W: Write>(cap: &mut Capture<W>, c: &mut Conn, session: &str) -> io::Result<()> {
    open_session_at(cap, c, session, "2025-06-18")
}

/// [`open_session`] negotiating revision `version` (2025-03-26 for a batch, which only it allows).
pub fn open_session_at<W: Write>(
    cap: &mut Capture<W>,
    c: &mut Conn,
    session: &str,
    version: &str,
) -> io::Result<()> {
    let init = initialize_request(1).replace("2025-06-18", version);
    c.client_send(cap, &post("/mcp", None, &[], init.as_bytes()))?;
    let result = initialize_result(1).replace("2025-06-18", version);
    c.server_send(cap, &sse_response(session, &[sse_event("1-1", &result)]))?;
    c.client_send(
        cap,
        &post("/mcp", Some(session), &[], INITIALIZED.as_bytes()),
    )?;
    c.server_send(cap, &accepted(session))
}

/// A `tools/call` answered by a one-event SSE stream, on `c`.
pub fn call<W: Write>(
    cap: &mut Capture<W>,
    c: &mut Conn,
    session: &str,
    id: u64,
) -> io::Result<()> {
    c.client_send(
        cap,
        &post("/mcp", Some(session), &[], tools_call(id).as_bytes()),
    )?;
    let ev = sse_event(&format!("{id}-1"), &tools_call_result(id));
    c.server_send(cap, &sse_response(session, &[ev]))
}

/// A whole healthy session on its own connection: initialize, `calls` tools/call, close.
pub fn healthy_session<W: Write>(
    cap: &mut Capture<W>,
    k: u64,
    session: &str,
    calls: u64,
) -> io::Result<()> {
    let mut c = Conn::local(k);
    c.handshake(cap)?;
    open_session(cap, &mut c, session)?;
    for id in 2..2 + calls {
        call(cap, &mut c, session, id)?;
    }
    c.close(cap)
}

/// A 32-hex session id for session number `k`.
pub fn session_id(k: u64) -> String {
    let a = (k ^ 0x5bd1_e995).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!("{a:016x}{:016x}", a.rotate_left(29) ^ k)
}
