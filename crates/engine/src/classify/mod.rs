//! Early classification: on the reading thread, between TCP reassembly and the per-connection
//! stages, each connection is examined whole or set aside as not MCP from its first client
//! bytes and from what its server's other connections showed. The bytes of a connection set
//! aside cost only TCP's bookkeeping and this stage's count: they are not copied into rounds,
//! parsed as HTTP, read as JSON or seen by the MCP stage.
//!
//! The rules (docs/classification.md; `rules` decides by them):
//! - A connection picked up mid-stream, HTTP/2, TLS when the run has secrets, a request with an
//!   MCP header, asking for an event stream, upgrading, a CORS preflight, or posting JSON-RPC
//!   that may be MCP: examined whole (maybe MCP).
//! - TLS without any secret, bytes that begin no HTTP request, a first request that cannot be
//!   MCP (its method, its media type, no body, JSON that is not JSON-RPC, JSON-RPC calling
//!   methods MCP does not have): set aside, unless its server is known to carry MCP.
//! - A server is known to carry MCP once a first request to it showed MCP itself (a header,
//!   an MCP method). Its connections are not set aside, and those set aside are resumed.
//! - A connection set aside is resumed when its client bytes show a sign of MCP (`signs`) or
//!   its server becomes known to carry MCP. When its windows kept every byte since, they are
//!   handed on as they came, only late; otherwise from the first request nothing let go had
//!   answered, parsing picking up as on a connection captured mid-stream, and what came before
//!   is lost to the analysis, and counted.
//!
//! Everything here depends only on the events in the order the reassembler makes them, so the
//! report is the same whatever the threads.

mod body;
mod rules;
mod signs;
mod window;

use std::net::SocketAddr;

use mcpf_capture::held::conn_of;
use mcpf_capture::tcp::{TcpEvent, TcpSink};
use mcpf_http::sniff::SetAside as Stats;
use mcpf_model::{ConnId, Direction, Mark};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::feed::{CaptureSink, TcpLoss};
use rules::{Reason, Verdict};
use signs::{Carry, Signs};
use window::Window;

/// Servers remembered as carrying MCP. Past it nothing more is set aside: a server not
/// remembered could be one whose connections should have been examined.
const MAX_MCP_SERVERS: usize = 65_536;
/// Bytes the windows of all the connections set aside hold together (512 connections' full
/// windows both ways); past it a connection set aside keeps none.
const MAX_WINDOW_BYTES: usize = 64 << 20;
/// Bytes of first requests held while they come in pieces, over all connections (820
/// connections at the 80 KiB a first request is read to); past it a connection whose first
/// request is not whole yet is examined.
const MAX_SNIFF_BYTES: usize = 64 << 20;

/// A connection this stage has not finished with. Connections examined whole are not kept.
enum Class {
    /// Its first client bytes so far, and the bytes of each direction (passed on as they
    /// came).
    Sniffing {
        server: SocketAddr,
        first: Vec<u8>,
        seen: [u64; 2],
        /// The length `first` must reach before it is judged again (its body's end, once the
        /// head is whole); 0: at the next line end.
        need: usize,
    },
    Aside(Box<Aside>),
}

/// A connection set aside.
struct Aside {
    server: SocketAddr,
    /// Per direction, the bytes passed on before it was set aside: where `unseen` starts.
    base: [u64; 2],
    /// The first request's body still to come, skipped by its framing (`body`): it holds no
    /// request, so its bytes are neither searched for signs nor kept (an upload's are most of
    /// its connection's). A window without them cannot be handed on whole: the resume is then
    /// from the first request line after them.
    body: body::Skip,
    /// Per direction (client's first): bytes not passed on since it was set aside, and the
    /// window of the last of them (none kept past [`MAX_WINDOW_BYTES`]).
    unseen: [u64; 2],
    windows: Option<[Window; 2]>,
    carry: Carry,
}

/// The classification, in front of the sink that takes the TCP events on.
pub(crate) struct Classify<'a, S: CaptureSink> {
    next: &'a mut S,
    conns: FxHashMap<ConnId, Class>,
    mcp_servers: FxHashSet<SocketAddr>,
    /// The run has a TLS secret (a key log given, or one a capture carried so far).
    secrets: bool,
    window_bytes: usize,
    sniff_bytes: usize,
    signs: Signs,
    pub(crate) stats: Stats,
}

impl<'a, S: CaptureSink> Classify<'a, S> {
    pub(crate) fn new(next: &'a mut S, secrets: bool) -> Self {
        Classify {
            next,
            conns: FxHashMap::default(),
            mcp_servers: FxHashSet::default(),
            secrets,
            window_bytes: 0,
            sniff_bytes: 0,
            signs: Signs::new(),
            stats: Stats::default(),
        }
    }

    fn opened(&mut self, conn: ConnId, server: SocketAddr, handshake_seen: bool) {
        // Picked up mid-stream, its first bytes may be anywhere in a message: examined.
        if !handshake_seen || self.mcp_servers.contains(&server) {
            return;
        }
        if self.mcp_servers.len() >= MAX_MCP_SERVERS {
            self.stats.examined_past_server_cap += 1;
            return;
        }
        let first = Vec::new();
        let seen = [0; 2];
        let class = Class::Sniffing {
            server,
            first,
            seen,
            need: 0,
        };
        self.conns.insert(conn, class);
    }

    /// Bytes of a connection being sniffed, already passed on: the client's are judged.
    fn sniff(&mut self, conn: ConnId, dir: Direction, data: &[u8], mark: Mark) {
        let Some(Class::Sniffing {
            server,
            first,
            seen,
            need,
        }) = self.conns.get_mut(&conn)
        else {
            return;
        };
        seen[di(dir)] += data.len() as u64;
        if dir == Direction::ServerToClient {
            return;
        }
        let (server, base) = (*server, *seen);
        let held = first.len();
        let (verdict, body) = if first.is_empty() {
            // Most first requests come whole in one segment: judged without a copy.
            let (v, skip) = rules::judge(data, self.secrets);
            if v == Verdict::NeedMore {
                first.extend_from_slice(&data[..data.len().min(rules::MAX_SNIFF)]);
            }
            (v, skip)
        } else {
            let room = rules::MAX_SNIFF.saturating_sub(first.len());
            first.extend_from_slice(&data[..data.len().min(room)]);
            // A head can end only at a line end, a body only at its length: judged again only
            // then, so that a first request in tiny segments is not read again for each.
            let full = first.len() >= rules::MAX_SNIFF;
            let due = match *need {
                0 => memchr::memchr(b'\n', data).is_some(),
                n => first.len() >= n,
            };
            let over = self.sniff_bytes + (first.len() - held) > MAX_SNIFF_BYTES;
            if !due && !full && !over {
                self.sniff_bytes += first.len() - held;
                return;
            }
            let (v, skip) = rules::judge(first, self.secrets);
            // Read to the bound and still short: left to the parser.
            let v = match v {
                Verdict::NeedMore if full => Verdict::Examine { mcp: false },
                v => v,
            };
            // Bytes seen past what the buffer kept were not read for the body's framing: the
            // skipping starts nowhere it can trust.
            let whole = base[0] == first.len() as u64;
            (v, if whole { skip } else { body::Skip::Done })
        };
        let grown = first.len() - held;
        let verdict = match verdict {
            Verdict::NeedMore if self.sniff_bytes + grown > MAX_SNIFF_BYTES => {
                self.stats.examined_past_sniff_budget += 1;
                Verdict::Examine { mcp: false }
            }
            Verdict::NeedMore => {
                self.sniff_bytes += grown;
                *need = match body {
                    body::Skip::Length(left) => first.len() + left as usize,
                    _ => 0,
                };
                return;
            }
            v => v,
        };
        // Judged: the first bytes held are let go.
        self.sniff_bytes -= held.min(self.sniff_bytes);
        match verdict {
            Verdict::NeedMore => {}
            Verdict::Examine { mcp } => {
                self.conns.remove(&conn);
                if mcp {
                    self.mcp_servers.insert(server);
                }
            }
            // Its server became known to carry MCP since it opened: examined.
            Verdict::SetAside(_) if self.mcp_servers.contains(&server) => {
                self.conns.remove(&conn);
            }
            Verdict::SetAside(reason) => self.set_aside(conn, (server, base, body), reason, mark),
        }
    }

    fn set_aside(
        &mut self,
        conn: ConnId,
        (server, base, body): (SocketAddr, [u64; 2], body::Skip),
        reason: Reason,
        mark: Mark,
    ) {
        let s = &mut self.stats;
        s.connections += 1;
        *match reason {
            Reason::TlsWithoutKeys => &mut s.tls_without_keys,
            Reason::NotHttp => &mut s.not_http,
            Reason::RequestNotMcp => &mut s.request_not_mcp,
            Reason::JsonRpcNotMcp => &mut s.jsonrpc_not_mcp,
            Reason::JsonNotJsonRpc => &mut s.json_not_jsonrpc,
        } += 1;
        // TLS cannot be read if resumed, so it keeps no window.
        let keep = reason != Reason::TlsWithoutKeys && self.window_bytes < MAX_WINDOW_BYTES;
        if reason != Reason::TlsWithoutKeys && !keep {
            s.windows_not_kept += 1;
        }
        let aside = Aside {
            server,
            base,
            body,
            unseen: [0; 2],
            windows: keep.then(Default::default),
            carry: Carry::default(),
        };
        self.conns.insert(conn, Class::Aside(Box::new(aside)));
        self.next.on_tcp(TcpEvent::SetAside { conn, mark });
    }

    /// Bytes of a connection set aside: kept in its window, searched for a sign; the
    /// connection is resumed when one shows or its server became known to carry MCP.
    fn aside_data(
        &mut self,
        conn: ConnId,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        acked: Option<u64>,
    ) {
        let Some(Class::Aside(a)) = self.conns.get_mut(&conn) else {
            return;
        };
        let d = di(dir);
        a.unseen[d] += data.len() as u64;
        let data = match dir {
            Direction::ClientToServer => &data[a.body.skip(data)..],
            Direction::ServerToClient => data,
        };
        if let Some(w) = &mut a.windows {
            // Once the server sent more than its window holds, a resume loses bytes anyway:
            // it is from the first client request that no server byte let go answered (by
            // their ACKs), and the server's bytes after it are sent after the resume. The
            // server's older bytes need no copy (a download's are most of the noise).
            let grown = match dir {
                Direction::ServerToClient if a.unseen[d] > window::WINDOW as u64 => {
                    w[d].let_go(acked);
                    -(w[d].clear() as isize)
                }
                _ => w[d].push(data, mark, acked),
            };
            self.window_bytes = self.window_bytes.saturating_add_signed(grown);
            if self.window_bytes > MAX_WINDOW_BYTES {
                // The windows hold all they may together: this connection keeps none.
                self.window_bytes -= (w[0].cost() + w[1].cost()).min(self.window_bytes);
                a.windows = None;
                self.stats.windows_not_kept += 1;
            }
        }
        let sign = dir == Direction::ClientToServer && self.signs.found(&mut a.carry, data);
        if sign || self.mcp_servers.contains(&a.server) {
            self.resume(conn, mark);
        }
    }

    /// Hands on each direction's window, the client's first, and examines the connection
    /// from here on. With every byte since it was set aside kept, they are handed on as they
    /// came, only late. Else the client's window is handed on from its first request line and
    /// the server's from its first segment acknowledging past it: what the server sent before
    /// answered requests not handed on, and taken for answers to the next ones it would pair
    /// them wrongly (RFC 9112 §9.3: answers come in the order of the requests).
    fn resume(&mut self, conn: ConnId, mark: Mark) {
        let Some(Class::Aside(mut a)) = self.conns.remove(&conn) else {
            return;
        };
        self.stats.resumed += 1;
        let mut windows = a.windows.take().unwrap_or_default();
        self.window_bytes -= (windows[0].cost() + windows[1].cost()).min(self.window_bytes);
        let whole = (0..2).all(|d| a.unseen[d] == windows[d].len() as u64);
        if !whole {
            let [client, server] = &mut windows;
            // Server bytes let go answered requests up to the highest ACK they carried: the
            // client is handed on from the first request line past it, whose answer is all
            // still to come or kept. A let-go segment without an ACK leaves only the request
            // that resumed the connection, the last one.
            let client_start = a.base[0] + a.unseen[0] - client.len() as u64;
            let dropped = server.dropped();
            let from = dropped
                .max_ack
                .map_or(0, |ack| ack.saturating_sub(client_start) as usize);
            let start = client.request_line(from, dropped.unknown);
            client.skip(start.unwrap_or(client.len()));
            // The client's offset of the first byte handed on.
            let from = a.base[0] + a.unseen[0] - client.len() as u64;
            server.skip_while(|acked| acked.is_none_or(|ack| ack <= from));
        }
        let skipped = [0, 1].map(|d| a.unseen[d] - windows[d].len() as u64);
        let lost: u64 = skipped.iter().sum();
        self.stats.resumed_with_loss += u64::from(!whole);
        self.stats.bytes_not_examined += lost;
        self.stats.resumed_bytes_not_kept += lost;
        self.next.on_tcp(TcpEvent::Resumed {
            conn,
            skipped,
            mark,
        });
        for dir in [Direction::ClientToServer, Direction::ServerToClient] {
            for (data, mark, acked) in windows[di(dir)].segments() {
                let data = &data[..];
                let ev = TcpEvent::Data {
                    conn,
                    dir,
                    data,
                    mark,
                    acked,
                };
                self.next.on_tcp(ev);
            }
        }
    }

    /// Bytes lost from a connection set aside: counted as not passed on; its windows no
    /// longer join what follows.
    fn aside_gap(&mut self, conn: ConnId, dir: Direction, len: u64) {
        let Some(Class::Aside(a)) = self.conns.get_mut(&conn) else {
            return;
        };
        a.unseen[di(dir)] += len;
        if dir == Direction::ClientToServer {
            a.body.gap(len);
        }
        if let Some(w) = &mut a.windows {
            self.window_bytes -= w[di(dir)].clear().min(self.window_bytes);
            if dir == Direction::ServerToClient {
                w[1].let_go(None);
            }
        }
        a.carry = Carry::default();
    }

    /// A connection ended: resumed first if its server became known to carry MCP since its last
    /// bytes, else what it had set aside is counted.
    fn closed(&mut self, conn: ConnId, mark: Mark) {
        self.forget_sniffing(conn);
        if let Some(Class::Aside(a)) = self.conns.get(&conn)
            && self.mcp_servers.contains(&a.server)
        {
            self.resume(conn, mark);
        }
        if let Some(Class::Aside(a)) = self.conns.remove(&conn) {
            self.stats.bytes_not_examined += a.unseen[0] + a.unseen[1];
            if let Some(w) = &a.windows {
                self.window_bytes -= (w[0].cost() + w[1].cost()).min(self.window_bytes);
            }
        }
    }

    /// A connection being sniffed is examined (or gone): its first bytes held are let go.
    fn forget_sniffing(&mut self, conn: ConnId) {
        if let Some(Class::Sniffing { first, .. }) = self.conns.get(&conn) {
            self.sniff_bytes -= first.len().min(self.sniff_bytes);
            self.conns.remove(&conn);
        }
    }

    fn is_aside(&self, conn: ConnId) -> bool {
        matches!(self.conns.get(&conn), Some(Class::Aside(_)))
    }
}

/// What the classification could not do as its rules say, a line of `summary.limits` each.
pub(crate) fn limits(s: &Stats) -> Vec<mcpf_model::Note> {
    use mcpf_model::{Note, NoteKind};
    let resumed = NoteKind::SetAsideResumed {
        window_kib: (window::WINDOW >> 10) as u64,
        lost_bytes: s.resumed_bytes_not_kept,
    };
    let without_window = NoteKind::SetAsideWithoutWindow {
        max_mib: (MAX_WINDOW_BYTES >> 20) as u64,
    };
    let servers_full = NoteKind::ClassificationServersFull {
        max: MAX_MCP_SERVERS as u64,
    };
    let sniff_full = NoteKind::ClassificationSniffFull {
        max_mib: (MAX_SNIFF_BYTES >> 20) as u64,
    };
    [
        (resumed, s.resumed_with_loss),
        (without_window, s.windows_not_kept),
        (servers_full, s.examined_past_server_cap),
        (sniff_full, s.examined_past_sniff_budget),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(kind, n)| Note::new(kind, n))
    .collect()
}

fn di(dir: Direction) -> usize {
    match dir {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}

impl<S: CaptureSink> TcpSink for Classify<'_, S> {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        let conn = conn_of(&event);
        // One lookup per event: most events are of connections examined, which are not kept.
        let (sniffing, aside) = match self.conns.get(&conn) {
            Some(Class::Sniffing { .. }) => (true, false),
            Some(Class::Aside(_)) => (false, true),
            None => (false, false),
        };
        match event {
            TcpEvent::Opened {
                server,
                handshake_seen,
                ..
            } => self.opened(conn, server, handshake_seen),
            TcpEvent::Data {
                dir,
                data,
                mark,
                acked,
                ..
            } if aside => return self.aside_data(conn, dir, data, mark, acked),
            TcpEvent::Data {
                dir, data, mark, ..
            } if sniffing => {
                self.next.on_tcp(event);
                return self.sniff(conn, dir, data, mark);
            }
            TcpEvent::Gap { dir, len, .. } if aside => return self.aside_gap(conn, dir, len),
            // A gap in the first bytes leaves nothing to judge by: examined.
            TcpEvent::Gap { .. } if sniffing => self.forget_sniffing(conn),
            TcpEvent::Inconsistent { .. } if aside => return,
            TcpEvent::Closed { summary } if sniffing || aside => self.closed(conn, summary.end),
            _ => {}
        }
        self.next.on_tcp(event);
    }

    fn on_tls_secrets(&mut self, key_log: &[u8]) {
        self.secrets = true;
        self.next.on_tls_secrets(key_log);
    }

    fn reads(&self, conn: ConnId) -> bool {
        !self.is_aside(conn)
    }
}

impl<S: CaptureSink> CaptureSink for Classify<'_, S> {
    fn tcp_loss(&self) -> &TcpLoss {
        self.next.tcp_loss()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{FrameRef, Timestamp};

    /// What the classification hands on, as lines.
    #[derive(Default)]
    struct Seen {
        lines: Vec<String>,
        loss: TcpLoss,
    }

    impl TcpSink for Seen {
        fn on_tcp(&mut self, event: TcpEvent<'_>) {
            self.lines.push(match event {
                TcpEvent::Data { dir, data, .. } => {
                    format!("{dir:?} {}", String::from_utf8_lossy(data))
                }
                TcpEvent::SetAside { .. } => "set aside".into(),
                TcpEvent::Resumed { skipped, .. } => format!("resumed {skipped:?}"),
                other => format!("{:?}", conn_of(&other)),
            });
        }
    }

    impl CaptureSink for Seen {
        fn tcp_loss(&self) -> &TcpLoss {
            &self.loss
        }
    }

    fn mark(n: u64) -> Mark {
        Mark {
            time: Timestamp::from_secs_nanos(n as i64, 0),
            frame: FrameRef::new(0, n),
        }
    }

    fn open(c: &mut Classify<'_, Seen>, n: u64) {
        c.on_tcp(TcpEvent::Opened {
            conn: ConnId::tcp(n),
            client: "10.0.0.1:40000".parse().unwrap(),
            server: "10.0.0.2:8080".parse().unwrap(),
            mark: mark(n),
            handshake_seen: true,
        });
    }

    fn data(c: &mut Classify<'_, Seen>, n: u64, dir: Direction, bytes: &[u8], ack: u64) {
        c.on_tcp(TcpEvent::Data {
            conn: ConnId::tcp(n),
            dir,
            data: bytes,
            mark: mark(n),
            acked: Some(ack),
        });
    }

    #[test]
    fn a_download_then_mcp_on_one_connection_is_handed_on_whole_and_late() {
        let mut seen = Seen::default();
        let mut c = Classify::new(&mut seen, false);
        open(&mut c, 0);
        let get = b"GET /file HTTP/1.1\r\n\r\n";
        data(&mut c, 0, Direction::ClientToServer, get, 0);
        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        data(
            &mut c,
            0,
            Direction::ServerToClient,
            answer,
            get.len() as u64,
        );
        let init = b"POST /mcp HTTP/1.1\r\nContent-Length: 12\r\n\r\n\"initialize\"";
        data(
            &mut c,
            0,
            Direction::ClientToServer,
            init,
            answer.len() as u64,
        );
        assert_eq!(c.stats.resumed, 1);
        assert_eq!(c.stats.resumed_with_loss, 0);
        drop(c);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert_eq!(
            seen.lines[1..],
            [
                format!("ClientToServer {}", text(get)),
                "set aside".into(),
                "resumed [0, 0]".into(),
                format!("ClientToServer {}", text(init)),
                format!("ServerToClient {}", text(answer)),
            ]
        );
    }

    #[test]
    fn first_requests_in_pieces_hold_no_more_than_their_budget() {
        let mut seen = Seen::default();
        let mut c = Classify::new(&mut seen, false);
        let mut piece = b"GET / HTTP/1.1\r\nX-Long: ".to_vec();
        piece.resize(12 << 10, b'a');
        let conns = (MAX_SNIFF_BYTES / piece.len()) as u64 + 10;
        for n in 0..conns {
            open(&mut c, n);
            data(&mut c, n, Direction::ClientToServer, &piece, 0);
            assert!(c.sniff_bytes <= MAX_SNIFF_BYTES);
        }
        assert_eq!(c.stats.examined_past_sniff_budget, 10);
        for n in 0..conns {
            c.forget_sniffing(ConnId::tcp(n));
        }
        assert_eq!(c.sniff_bytes, 0);
    }
}
