//! Connections: who is on which side, which way bytes travel, and how a connection is named.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use crate::InputId;

/// Which way bytes travel on a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

impl Direction {
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
        }
    }

    pub fn arrow(self) -> &'static str {
        match self {
            Direction::ClientToServer => "c→s",
            Direction::ServerToClient => "s→c",
        }
    }
}

/// A connection of the run: a TCP connection numbered in capture order from 0 (Wireshark's
/// `tcp.stream`), or a connection of a HAR file or access log (the exchanges its source says
/// shared one).
///
/// Both kinds share one number space so they can be keyed and sorted together; the number is
/// what reports print. Where an exchange came from is the input's [`SourceFormat`](crate::SourceFormat),
/// never read back from this number.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct ConnId(u64);

/// Connections of HAR files and logs are numbered from here, above any TCP connection count.
const RECORDED_BASE: u64 = 1 << 48;

impl ConnId {
    /// The `n`-th TCP connection of the run, from 0.
    pub fn tcp(n: u64) -> ConnId {
        ConnId(n.min(RECORDED_BASE - 1))
    }

    /// The `n`-th connection (from 0) of the HAR file or access log `input`.
    pub fn recorded(input: InputId, n: u64) -> ConnId {
        ConnId(RECORDED_BASE | (u64::from(input) & 0xff_ffff) << 24 | (n & 0xff_ffff))
    }

    /// The input and number of a HAR file's or log's connection; `None` for a TCP connection.
    pub fn recorded_parts(self) -> Option<(InputId, u64)> {
        (self.0 & RECORDED_BASE != 0)
            .then_some((((self.0 >> 24) & 0xff_ffff) as InputId, self.0 & 0xff_ffff))
    }

    /// The number reports print.
    pub fn number(self) -> u64 {
        self.0
    }

    /// The connection whose [`number`](ConnId::number) this is: for a record read back from
    /// storage, never to make up an identity.
    pub fn from_number(n: u64) -> ConnId {
        ConnId(n)
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An endpoint formatted as tools print it: `ip:port`, IPv6 as `[addr]:port`.
pub fn endpoint(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() && addr.port() == 0 {
        // A source that does not record addresses (an access log, a HAR).
        return "unknown".into();
    }
    match addr.ip() {
        IpAddr::V4(ip) => format!("{ip}:{}", addr.port()),
        IpAddr::V6(ip) => format!("[{ip}]:{}", addr.port()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_connections_name_their_input() {
        assert_eq!(ConnId::recorded(7, 42).recorded_parts(), Some((7, 42)));
        assert_eq!(ConnId::tcp(42).recorded_parts(), None);
    }

    #[test]
    fn formats_endpoints() {
        assert_eq!(
            endpoint("127.0.0.1:8080".parse().unwrap()),
            "127.0.0.1:8080"
        );
        assert_eq!(endpoint("[::1]:3000".parse().unwrap()), "[::1]:3000");
        assert_eq!(endpoint("0.0.0.0:0".parse().unwrap()), "unknown");
    }

    #[test]
    fn recorded_connections_never_meet_tcp_ones() {
        let a = ConnId::recorded(0, 0);
        let b = ConnId::recorded(1, 0);
        let c = ConnId::recorded(0, 1);
        assert!(a != b && b != c && a != c);
        assert!(ConnId::tcp(u64::MAX) < a);
        assert!(ConnId::tcp(5) < ConnId::tcp(6));
    }
}
