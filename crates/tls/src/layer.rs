//! The TLS layer between TCP and HTTP: each connection whose client opens with a TLS record is
//! decrypted with the key log, and the HTTP stage downstream gets its plaintext as if it had
//! crossed the wire in clear, at the frame of the segment that completed each record: the
//! moment its bytes could be read, and the frame Wireshark shows the decrypted data in. What
//! cannot be decrypted is counted per reason and passed on as nothing (its records never reach
//! HTTP as if they were plaintext).

use std::collections::{BTreeMap, HashMap};

use mcpf_capture::tcp::TcpSink;
use mcpf_capture::tcp::{CloseReason, ConnSummary, TcpEvent};
use mcpf_model::{Anomaly, ConnId, Direction, Mark, Note, NoteKind};

use crate::conn::{Output, TlsConnection, Undecryptable};
use crate::keylog::{At, Secrets};

/// What the layer did, for the report.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TlsStats {
    /// Connections that opened with a TLS record.
    pub connections: u64,
    /// Of them, those with plaintext out of both directions.
    pub decrypted: u64,
    /// Connections not (wholly) decrypted, by reason.
    /// As pairs in a record file: a reason with a number is no JSON key.
    #[serde(with = "pairs")]
    pub undecryptable: BTreeMap<Undecryptable, u64>,
    /// The first [`MAX_FAILURES_LISTED`] of them, each an anomaly of its connection where
    /// reading stopped, of the kind its reason is.
    pub failures: Vec<Anomaly>,
    /// Connections inside a record when the capture ended (or the connection was given up as
    /// idle or evicted), and the bytes of those records still to come.
    pub cut_by_capture_end: (u64, u64),
}

/// A map as a list of `[key, value]` pairs.
mod pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        map: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub(super) fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

impl TlsStats {
    /// Adds what another layer counted (a shard of the same run); [`Self::order_failures`]
    /// then puts the list in order.
    pub fn merge(&mut self, other: &TlsStats) {
        self.connections += other.connections;
        self.decrypted += other.decrypted;
        for (why, n) in &other.undecryptable {
            *self.undecryptable.entry(*why).or_default() += n;
        }
        self.failures.extend(other.failures.iter().cloned());
        self.cut_by_capture_end.0 += other.cut_by_capture_end.0;
        self.cut_by_capture_end.1 += other.cut_by_capture_end.1;
    }

    /// What the run's limits say of TLS (`TLS: 6 of 7 connections decrypted with the key log;
    /// not decrypted: …`): the connections, those decrypted, and the others by reason.
    pub fn note(&self) -> Note {
        let kind = NoteKind::Tls {
            connections: self.connections,
            not_decrypted: self
                .undecryptable
                .iter()
                .map(|(why, n)| (why.describe(), *n))
                .collect(),
        };
        Note::new(kind, self.decrypted)
    }

    /// Every note of TLS: [`Self::note`], and the records the capture's end cut.
    pub fn notes(&self) -> Vec<Note> {
        let mut out = vec![self.note()];
        let (conns, bytes) = self.cut_by_capture_end;
        if conns > 0 {
            out.push(Note::new(
                NoteKind::TlsRecordsCutByCaptureEnd { bytes },
                conns,
            ));
        }
        out
    }

    /// The failures by when reading stopped, the first [`MAX_FAILURES_LISTED`] kept. Each
    /// shard kept its own first ones, so the run's first ones are among them.
    pub fn order_failures(&mut self) {
        self.failures
            .sort_by_key(|f| (f.mark.time, f.mark.frame.input, f.mark.frame.frame, f.conn));
        self.failures.truncate(MAX_FAILURES_LISTED);
    }
}

/// Undecryptable connections listed one by one (the counts by reason are whole).
pub const MAX_FAILURES_LISTED: usize = 256;

enum Conn {
    /// Not known yet: no byte seen.
    Undecided,
    Plain,
    Tls {
        tls: Box<TlsConnection>,
        plaintext: [bool; 2],
        failed: bool,
        /// Per direction: its records stopped being read after the connection had carried
        /// plaintext; what more it carries goes on as bytes missing (a gap), so the exchange it
        /// belonged to is known to have lost bytes, not to have ended.
        lost: [bool; 2],
        /// The header of the client's first record, handed on at the connection's end when
        /// nothing of it could be decrypted: downstream then counts it as the TLS it is.
        first: [u8; 5],
    },
}

pub struct TlsLayer {
    keys: Secrets,
    /// The point of the capture the events fed now are at (see [`Secrets`]).
    at: u64,
    conns: HashMap<ConnId, Conn>,
    pub stats: TlsStats,
}

impl TlsLayer {
    pub fn new(keys: Secrets) -> Self {
        TlsLayer {
            keys,
            at: u64::MAX,
            conns: HashMap::new(),
            stats: TlsStats::default(),
        }
    }

    /// The point of the capture (the sequence number of the TCP event) the next events are at:
    /// secrets the capture carried are usable from where they were.
    pub fn at(&mut self, point: u64) {
        self.at = point;
    }

    /// One TCP event: passed on as it is, or, on a TLS connection, as the plaintext it held.
    pub fn on_tcp(&mut self, event: TcpEvent<'_>, next: &mut impl TcpSink) {
        match event {
            TcpEvent::Data {
                conn,
                dir,
                data,
                mark,
                acked,
            } => self.data(conn, dir, data, mark, acked, next),
            TcpEvent::Gap {
                conn,
                dir,
                len,
                mark,
                ..
            } if self.is_tls(conn) => {
                // A record cut by lost bytes cannot be authenticated, nor the next ones framed.
                self.fail(conn, dir, mark, Undecryptable::Gap);
                self.lose(conn, dir, len, mark, next);
            }
            TcpEvent::Closed { summary } => {
                self.cut_at_end(summary, next);
                if let Some(Conn::Tls {
                    plaintext,
                    failed,
                    first,
                    ..
                }) = self.conns.remove(&summary.conn)
                {
                    if plaintext == [true, true] && !failed {
                        self.stats.decrypted += 1;
                    }
                    if plaintext == [false, false] && failed {
                        // Nothing of it could be read: downstream counts it as the TLS it is.
                        next.on_tcp(TcpEvent::Data {
                            conn: summary.conn,
                            dir: mcpf_model::Direction::ClientToServer,
                            data: &first[..],
                            mark: summary.end,
                            acked: None,
                        });
                    }
                }
                next.on_tcp(event);
            }
            other => next.on_tcp(other),
        }
    }

    /// At a connection's end, a record either direction had begun and not finished. Ended by
    /// the capture (or given up as idle): counted, the exchange is open at the capture's end as
    /// it would be in plaintext. Ended by the connection (FIN, reset): a failure with its reason
    /// (never a silent loss), and its missing bytes a gap downstream.
    fn cut_at_end(&mut self, summary: &ConnSummary, next: &mut impl TcpSink) {
        let (conn, end) = (summary.conn, summary.end);
        let Some(Conn::Tls { tls, .. }) = self.conns.get(&conn) else {
            return;
        };
        let cut: Vec<(Direction, u64)> = [Direction::ClientToServer, Direction::ServerToClient]
            .into_iter()
            .filter_map(|d| Some((d, tls.cut_at_end(d)?)))
            .collect();
        let by_capture = matches!(
            summary.close,
            CloseReason::CaptureEnd | CloseReason::Idle | CloseReason::Evicted
        );
        if by_capture && !cut.is_empty() {
            self.stats.cut_by_capture_end.0 += 1;
            self.stats.cut_by_capture_end.1 += cut.iter().map(|(_, n)| n).sum::<u64>();
            return;
        }
        for (dir, len) in cut {
            self.fail(conn, dir, end, Undecryptable::CutAtEnd);
            self.lose(conn, dir, len, end, next);
        }
    }

    /// `len` bytes of `dir` that will not be decrypted: a gap downstream once the connection has
    /// carried plaintext (the HTTP stage then knows its exchange lost bytes); before that, the
    /// connection was never read and is counted as the TLS it is at its end.
    fn lose(
        &mut self,
        conn: ConnId,
        dir: Direction,
        len: u64,
        mark: Mark,
        next: &mut impl TcpSink,
    ) {
        let Some(Conn::Tls {
            plaintext, lost, ..
        }) = self.conns.get_mut(&conn)
        else {
            return;
        };
        if plaintext == &[false, false] {
            return;
        }
        lost[crate::conn::index(dir)] = true;
        next.on_tcp(TcpEvent::Gap {
            conn,
            dir,
            len,
            mark,
            snaplen: false,
        });
    }

    fn is_tls(&self, conn: ConnId) -> bool {
        matches!(self.conns.get(&conn), Some(Conn::Tls { .. }))
    }

    /// The connection's first failure: counted by reason, and listed (up to the cap) as an
    /// anomaly of `dir`, the direction whose records stopped being read.
    fn fail(&mut self, conn: ConnId, dir: Direction, mark: Mark, why: Undecryptable) {
        if let Some(Conn::Tls { failed, .. }) = self.conns.get_mut(&conn)
            && !*failed
        {
            *failed = true;
            *self.stats.undecryptable.entry(why).or_default() += 1;
            if self.stats.failures.len() < MAX_FAILURES_LISTED {
                self.stats.failures.push(Anomaly {
                    kind: why.kind(),
                    conn,
                    dir,
                    mark,
                    detail: why.describe(),
                });
            }
        }
    }

    fn data(
        &mut self,
        conn: ConnId,
        dir: mcpf_model::Direction,
        data: &[u8],
        mark: mcpf_model::Mark,
        acked: Option<u64>,
        next: &mut impl TcpSink,
    ) {
        let state = self.conns.entry(conn).or_insert(Conn::Undecided);
        if matches!(state, Conn::Undecided) {
            // A client opening with a handshake record: 0x16, major version 3.
            let tls = dir == mcpf_model::Direction::ClientToServer && data.starts_with(&[0x16, 3]);
            *state = if tls {
                self.stats.connections += 1;
                let mut first = [0; 5];
                let n = data.len().min(5);
                first[..n].copy_from_slice(&data[..n]);
                Conn::Tls {
                    tls: Box::default(),
                    plaintext: [false, false],
                    failed: false,
                    lost: [false, false],
                    first,
                }
            } else {
                Conn::Plain
            };
        }
        let Conn::Tls {
            tls,
            plaintext,
            lost,
            ..
        } = state
        else {
            return next.on_tcp(TcpEvent::Data {
                conn,
                dir,
                data,
                mark,
                acked,
            });
        };
        if lost[crate::conn::index(dir)] {
            let len = data.len() as u64;
            return self.lose(conn, dir, len, mark, next);
        }
        let outs = tls.feed(dir, data, &At(&self.keys, self.at));
        let mut reasons = Vec::new();
        for out in outs {
            match out {
                Output::Plaintext { data: plain, .. } => {
                    plaintext[crate::conn::index(dir)] = true;
                    // The acknowledgment counts ciphertext bytes: it says nothing of plaintext.
                    next.on_tcp(TcpEvent::Data {
                        conn,
                        dir,
                        data: &plain,
                        mark,
                        acked: None,
                    });
                }
                Output::Undecryptable { direction, why, .. } => reasons.push((direction, why)),
            }
        }
        for (direction, why) in reasons {
            self.fail(conn, direction, mark, why);
            // What of these bytes was not plaintext is lost to the exchange (at most all of it).
            let len = if direction == dir {
                data.len() as u64
            } else {
                1
            };
            self.lose(conn, direction, len, mark, next);
        }
    }
}
