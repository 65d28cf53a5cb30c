//! Who is the client and who the server of a connection. The handshake tells when it was
//! captured (the SYN's sender is the client, the SYN-ACK's the server); a connection picked up
//! mid-stream is told by its first bytes (an HTTP request line or status line), and failing
//! those by its ports (a server usually listens on the lower one). `--server` ([`ServerSpec`])
//! wins over every heuristic. The connection is reported opened once its roles are decided.

use std::net::SocketAddr;

use super::{Conn, TcpSink};
use crate::decode::TcpSegment;

/// How the client and server of a connection were told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleBasis {
    Syn,
    SynAck,
    HttpRequestLine,
    HttpStatusLine,
    LowerPort,
    /// `--server` named this endpoint.
    UserServer,
}

impl RoleBasis {
    pub fn name(self) -> &'static str {
        match self {
            RoleBasis::Syn => "syn",
            RoleBasis::SynAck => "syn-ack",
            RoleBasis::HttpRequestLine => "http-request-line",
            RoleBasis::HttpStatusLine => "http-status-line",
            RoleBasis::LowerPort => "lower-port",
            RoleBasis::UserServer => "--server",
        }
    }
}

/// An endpoint the user says is a server (`--server`): it wins over every heuristic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerSpec {
    Port(u16),
    Addr(std::net::IpAddr),
    Endpoint(SocketAddr),
}

impl ServerSpec {
    fn matches(&self, e: SocketAddr) -> bool {
        match self {
            ServerSpec::Port(p) => e.port() == *p,
            ServerSpec::Addr(a) => e.ip() == *a,
            ServerSpec::Endpoint(x) => *x == e,
        }
    }
}

/// Decides the roles from a segment when they are still open: a SYN or SYN-ACK, or the first
/// bytes when they are an HTTP request or status line; failing those, the first segment that
/// carries bytes (or cut bytes), a FIN or a RST leaves it to the ports: what it carries cannot
/// be reported before the roles are.
pub(super) fn decide_roles(
    conn: &mut Conn,
    side: usize,
    seg: &TcpSegment<'_>,
    sink: &mut impl TcpSink,
) {
    if conn.a_is_client.is_some() {
        return;
    }
    let sender_is_a = side == 0;
    let verdict = if seg.flags.syn && !seg.flags.ack {
        conn.handshake_seen = true;
        Some((sender_is_a, RoleBasis::Syn))
    } else if seg.flags.syn && seg.flags.ack {
        conn.handshake_seen = true;
        Some((!sender_is_a, RoleBasis::SynAck))
    } else if !seg.payload.is_empty() {
        if crate::request_line::begins_request(seg.payload) {
            Some((sender_is_a, RoleBasis::HttpRequestLine))
        } else if seg.payload.starts_with(b"HTTP/") {
            Some((!sender_is_a, RoleBasis::HttpStatusLine))
        } else {
            None
        }
    } else {
        None
    };
    match verdict {
        Some((a_is_client, basis)) => {
            conn.a_is_client = Some(a_is_client);
            conn.role_basis = basis;
        }
        None if !seg.payload.is_empty() || seg.missing > 0 || seg.flags.fin || seg.flags.rst => {
            decide_by_port(conn)
        }
        None => return,
    }
    conn.report_opened(sink);
}

/// `--server` named one end of the connection: that decides the roles before any heuristic.
pub(super) fn decide_by_user(
    conn: &mut Conn,
    servers: &[ServerSpec],
    syn: bool,
    sink: &mut impl TcpSink,
) {
    if servers.iter().any(|sv| sv.matches(conn.b)) {
        conn.a_is_client = Some(true);
    } else if servers.iter().any(|sv| sv.matches(conn.a)) {
        conn.a_is_client = Some(false);
    } else {
        return;
    }
    conn.role_basis = RoleBasis::UserServer;
    conn.handshake_seen |= syn;
    conn.report_opened(sink);
}

/// The roles by port, when nothing else told them.
pub(super) fn decide_by_port(conn: &mut Conn) {
    // The server usually listens on the lower port; on a tie, the first packet went to it.
    conn.a_is_client = Some(conn.a.port() >= conn.b.port());
    conn.role_basis = RoleBasis::LowerPort;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::Direction::ServerToClient as S2C;
    use crate::tcp::trace::*;
    use crate::tcp::{Limits, Reassembler};

    #[test]
    fn picks_up_mid_stream_and_tells_roles_by_content() {
        let mut r = Reassembler::new(Limits::default());
        let mut k = Collector::default();
        // No handshake; the server speaks first in the capture, from the higher port.
        let segs = vec![
            data(false, 9000, b"HTTP/1.1 200 OK\r\n"),
            data(true, 300, b"POST /mcp HTTP/1.1\r\n"),
        ];
        feed_with(&mut r, &mut k, &segs, "10.0.0.1:80", "10.0.0.2:50000");
        r.finish(&mut k);
        assert_eq!(k.opened[0].1, "10.0.0.1:80".parse().unwrap());
        assert_eq!(k.closed[0].role_basis, RoleBasis::HttpStatusLine);
        assert!(!k.closed[0].handshake_seen);
        assert_eq!(
            k.stream(0, S2C),
            vec![Item::Bytes(b"HTTP/1.1 200 OK\r\n".to_vec())]
        );
    }
}
