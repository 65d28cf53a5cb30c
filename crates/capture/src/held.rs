//! TCP events kept past the call that made them, to be handed on later (to another thread).
//!
//! A [`TcpEvent`] borrows its bytes from the reassembler, valid for one call. [`HeldEvents`]
//! copies each event's bytes into one buffer shared by a batch, so a batch of thousands of
//! events costs two allocations, and gives the same events back, borrowed from that buffer.

use mcpf_model::{ConnId, Direction, Mark};

use crate::tcp::{ConnSummary, TcpEvent};

/// One held event: a [`TcpEvent`] whose bytes are a range of its batch's buffer.
#[derive(Debug)]
enum Held {
    Opened {
        conn: ConnId,
        client: std::net::SocketAddr,
        server: std::net::SocketAddr,
        mark: Mark,
        handshake_seen: bool,
    },
    Data {
        conn: ConnId,
        dir: Direction,
        at: usize,
        len: usize,
        mark: Mark,
        acked: Option<u64>,
    },
    Gap {
        conn: ConnId,
        dir: Direction,
        len: u64,
        mark: Mark,
        snaplen: bool,
    },
    Inconsistent {
        conn: ConnId,
        dir: Direction,
        offset: u64,
        len: u64,
        first: Mark,
        second: Mark,
    },
    Fin {
        conn: ConnId,
        dir: Direction,
        mark: Mark,
    },
    Closed(Box<ConnSummary>),
    SetAside {
        conn: ConnId,
        mark: Mark,
    },
    Resumed {
        conn: ConnId,
        skipped: [u64; 2],
        mark: Mark,
    },
}

/// A batch of TCP events with their bytes, in the order they were pushed.
#[derive(Debug, Default)]
pub struct HeldEvents {
    events: Vec<Held>,
    bytes: Vec<u8>,
}

impl HeldEvents {
    pub fn with_capacity(events: usize, bytes: usize) -> Self {
        HeldEvents {
            events: Vec::with_capacity(events),
            bytes: Vec::with_capacity(bytes),
        }
    }

    /// Keeps `event`, copying what it borrows.
    pub fn push(&mut self, event: TcpEvent<'_>) {
        let held = match event {
            TcpEvent::Opened {
                conn,
                client,
                server,
                mark,
                handshake_seen,
            } => Held::Opened {
                conn,
                client,
                server,
                mark,
                handshake_seen,
            },
            TcpEvent::Data {
                conn,
                dir,
                data,
                mark,
                acked,
            } => {
                let at = self.bytes.len();
                self.bytes.extend_from_slice(data);
                Held::Data {
                    conn,
                    dir,
                    at,
                    len: data.len(),
                    mark,
                    acked,
                }
            }
            TcpEvent::Gap {
                conn,
                dir,
                len,
                mark,
                snaplen,
            } => Held::Gap {
                conn,
                dir,
                len,
                mark,
                snaplen,
            },
            TcpEvent::Inconsistent {
                conn,
                dir,
                offset,
                len,
                first,
                second,
            } => Held::Inconsistent {
                conn,
                dir,
                offset,
                len,
                first,
                second,
            },
            TcpEvent::Fin { conn, dir, mark } => Held::Fin { conn, dir, mark },
            TcpEvent::Closed { summary } => Held::Closed(Box::new(summary.clone())),
            TcpEvent::SetAside { conn, mark } => Held::SetAside { conn, mark },
            TcpEvent::Resumed {
                conn,
                skipped,
                mark,
            } => Held::Resumed {
                conn,
                skipped,
                mark,
            },
        };
        self.events.push(held);
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Bytes the batch holds.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The `i`-th event pushed, as it was.
    pub fn get(&self, i: usize) -> TcpEvent<'_> {
        match &self.events[i] {
            &Held::Opened {
                conn,
                client,
                server,
                mark,
                handshake_seen,
            } => TcpEvent::Opened {
                conn,
                client,
                server,
                mark,
                handshake_seen,
            },
            &Held::Data {
                conn,
                dir,
                at,
                len,
                mark,
                acked,
            } => TcpEvent::Data {
                conn,
                dir,
                data: &self.bytes[at..at + len],
                mark,
                acked,
            },
            &Held::Gap {
                conn,
                dir,
                len,
                mark,
                snaplen,
            } => TcpEvent::Gap {
                conn,
                dir,
                len,
                mark,
                snaplen,
            },
            &Held::Inconsistent {
                conn,
                dir,
                offset,
                len,
                first,
                second,
            } => TcpEvent::Inconsistent {
                conn,
                dir,
                offset,
                len,
                first,
                second,
            },
            &Held::Fin { conn, dir, mark } => TcpEvent::Fin { conn, dir, mark },
            Held::Closed(summary) => TcpEvent::Closed { summary },
            &Held::SetAside { conn, mark } => TcpEvent::SetAside { conn, mark },
            &Held::Resumed {
                conn,
                skipped,
                mark,
            } => TcpEvent::Resumed {
                conn,
                skipped,
                mark,
            },
        }
    }

    /// Empties the batch, keeping its buffers for the next.
    pub fn clear(&mut self) {
        self.events.clear();
        self.bytes.clear();
    }
}

/// The connection an event is about.
pub fn conn_of(event: &TcpEvent<'_>) -> ConnId {
    match event {
        TcpEvent::Opened { conn, .. }
        | TcpEvent::Data { conn, .. }
        | TcpEvent::Gap { conn, .. }
        | TcpEvent::Inconsistent { conn, .. }
        | TcpEvent::Fin { conn, .. }
        | TcpEvent::SetAside { conn, .. }
        | TcpEvent::Resumed { conn, .. } => *conn,
        TcpEvent::Closed { summary } => summary.conn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{FrameRef, Timestamp};

    fn mark(frame: u64) -> Mark {
        Mark {
            time: Timestamp(frame as i64),
            frame: FrameRef::new(0, frame),
        }
    }

    #[test]
    fn events_come_back_as_they_were_pushed_with_their_bytes() {
        let mut batch = HeldEvents::default();
        let conn = ConnId::tcp(3);
        let dir = Direction::ClientToServer;
        batch.push(TcpEvent::Data {
            conn,
            dir,
            data: b"GET / HTTP/1.1\r\n",
            mark: mark(1),
            acked: Some(7),
        });
        batch.push(TcpEvent::Fin {
            conn,
            dir,
            mark: mark(2),
        });
        batch.push(TcpEvent::Data {
            conn,
            dir: Direction::ServerToClient,
            data: b"HTTP/1.1 200 OK\r\n",
            mark: mark(3),
            acked: None,
        });
        assert_eq!(batch.len(), 3);
        let TcpEvent::Data { data, acked, .. } = batch.get(0) else {
            panic!("not data");
        };
        assert_eq!((data, acked), (&b"GET / HTTP/1.1\r\n"[..], Some(7)));
        assert!(matches!(batch.get(1), TcpEvent::Fin { mark: m, .. } if m == mark(2)));
        let TcpEvent::Data { data, dir, .. } = batch.get(2) else {
            panic!("not data");
        };
        assert_eq!(
            (data, dir),
            (&b"HTTP/1.1 200 OK\r\n"[..], Direction::ServerToClient)
        );
        assert_eq!(conn_of(&batch.get(2)), conn);
        batch.clear();
        assert!(batch.is_empty() && batch.byte_len() == 0);
    }
}
