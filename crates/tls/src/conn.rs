//! One TLS connection, both directions, sans-IO: its TCP bytes go in, in order per direction;
//! application data and what could not be decrypted come out, each at the byte offset where the
//! record that carried it began in its direction (the caller knows which frames those are).
//!
//! The handshake is followed far enough to know the keys: the ClientHello's random names the key
//! log's secrets, the ServerHello says the version and suite. TLS 1.3 then runs on the handshake
//! secrets until each side's Finished, then on its traffic secret (KeyUpdate included); TLS 1.2
//! switches each direction at its ChangeCipherSpec.

use tls_parser::{
    TlsExtension, parse_tls_extensions, parse_tls_handshake_client_hello,
    parse_tls_handshake_server_hello,
};

use mcpf_model::{AnomalyKind, Direction};

use crate::crypto::{Suite, Tls12Keys, Tls13Keys, suite};
#[cfg(test)]
use crate::keylog::KeyLog;
use crate::keylog::{Label, Lookup};

/// A side's slot in the per-direction arrays.
pub(crate) fn index(direction: Direction) -> usize {
    match direction {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}

/// Why a connection's records could not be read.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Undecryptable {
    /// The key log has no secret for this connection's client random.
    NoKey,
    /// As `NoKey`, on a connection that resumed an earlier session.
    NoKeyResumed,
    /// A suite this build does not decrypt (by its IANA number).
    UnsupportedSuite(u16),
    /// A record whose tag did not hold: wrong key, or bytes damaged.
    BadRecord,
    /// A record header that is not TLS, or a record or handshake message past the caps.
    NotTls,
    /// The handshake was not seen (the capture began after it): no random, no suite.
    HandshakeMissing,
    /// Bytes of the record stream are missing from the capture: a record cut by them cannot be
    /// authenticated, nor the next ones framed.
    Gap,
    /// The connection ended inside a record: what came of it cannot be authenticated.
    CutAtEnd,
}

impl Undecryptable {
    /// The anomaly a connection stopped for this reason is.
    pub fn kind(&self) -> AnomalyKind {
        match self {
            Undecryptable::NoKey => AnomalyKind::TlsNoKey,
            Undecryptable::NoKeyResumed => AnomalyKind::TlsNoKeyResumed,
            Undecryptable::UnsupportedSuite(_) => AnomalyKind::TlsUnsupportedCipherSuite,
            Undecryptable::BadRecord => AnomalyKind::TlsRecordNotDecrypted,
            Undecryptable::NotTls => AnomalyKind::TlsNotTls,
            Undecryptable::HandshakeMissing => AnomalyKind::TlsHandshakeMissing,
            Undecryptable::Gap => AnomalyKind::TlsGap,
            Undecryptable::CutAtEnd => AnomalyKind::TlsRecordCut,
        }
    }

    /// The reason in words: the anomaly's sentence.
    pub fn describe(&self) -> String {
        match self {
            Undecryptable::NoKey => {
                "no secret in the key log for this connection's client random".into()
            }
            Undecryptable::NoKeyResumed => "a resumed session (ticket or session ID) whose \
                secret is not in the key log for this connection's client random"
                .into(),
            Undecryptable::UnsupportedSuite(id) => {
                format!("cipher suite 0x{id:04X} is not one this build decrypts")
            }
            Undecryptable::BadRecord => {
                "a record did not decrypt (wrong key or damaged bytes)".into()
            }
            Undecryptable::NotTls => "bytes that are not TLS records".into(),
            Undecryptable::HandshakeMissing => {
                "the handshake is not in the capture (it began before the capture)".into()
            }
            Undecryptable::Gap => {
                "a gap in the record stream (bytes missing from the capture)".into()
            }
            Undecryptable::CutAtEnd => {
                "a record cut by the end of the connection (its last bytes never came)".into()
            }
        }
    }
}

/// What a connection yields.
#[derive(Debug, PartialEq, Eq)]
pub enum Output {
    /// Application data of `direction`, from the record that began at `offset` in it.
    Plaintext {
        direction: Direction,
        offset: u64,
        data: Vec<u8>,
    },
    /// From the record at `offset` on, `direction` cannot be read; given once per direction.
    Undecryptable {
        direction: Direction,
        offset: u64,
        why: Undecryptable,
    },
}

/// TLS 1.3's inner plaintext of at most 2^14 bytes plus its type and padding and the tag
/// (RFC 8446 §5.2); TLS 1.2's 2^14 + 2048 (RFC 5246 §6.2.3).
const MAX_RECORD: usize = (1 << 14) + 2048;
/// A handshake message held for reassembly at most (a long certificate chain is ~20 KiB).
const MAX_HANDSHAKE: usize = 1 << 18;

const HANDSHAKE: u8 = 22;
const CHANGE_CIPHER_SPEC: u8 = 20;
const APPLICATION_DATA: u8 = 23;

/// RFC 8446 §4.1.3: a ServerHello with this random is a HelloRetryRequest.
const HELLO_RETRY_RANDOM: [u8; 32] = [
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
];

/// How a direction's records are read.
enum Keys {
    /// Before any key: plaintext handshake.
    None,
    Tls13(Box<Tls13Keys>),
    Tls12(Box<Tls12Keys>),
    /// Nothing more of it is read (said once).
    Lost,
}

/// One direction: bytes not yet a whole record, the handshake message being joined, its keys.
struct Side {
    pending: Vec<u8>,
    /// The offset in the direction of `pending`'s first byte.
    offset: u64,
    /// The offset of the record being read.
    current: u64,
    handshake: Vec<u8>,
    keys: Keys,
    /// TLS 1.2: the keys its ChangeCipherSpec turns on.
    next: Option<Box<Tls12Keys>>,
}

impl Side {
    fn new() -> Side {
        Side {
            pending: Vec::new(),
            offset: 0,
            current: 0,
            handshake: Vec::new(),
            keys: Keys::None,
            next: None,
        }
    }
}

/// What the hellos said.
#[derive(Default)]
struct Hello {
    client_random: Option<[u8; 32]>,
    server_random: Option<[u8; 32]>,
    suite: Option<Suite>,
    tls13: bool,
    /// TLS 1.2: the server agreed to encrypt-then-MAC (RFC 7366).
    encrypt_then_mac: bool,
    /// The session ID the client offered (TLS 1.2 resumption echoes it), ...
    client_session_id: Vec<u8>,
    /// ... and whether the server resumed a session: its secret comes from an earlier
    /// connection, and a key log may lack it.
    resumed: bool,
}

pub struct TlsConnection {
    sides: [Side; 2],
    hello: Hello,
}

impl Default for TlsConnection {
    fn default() -> Self {
        Self::new()
    }
}

impl TlsConnection {
    pub fn new() -> Self {
        TlsConnection {
            sides: [Side::new(), Side::new()],
            hello: Hello::default(),
        }
    }

    /// At the connection's end: how many bytes of a record `direction` had begun were still to
    /// come (none when it ended between records, or was no longer read). A record header not
    /// whole yet counts as 1.
    pub fn cut_at_end(&self, direction: Direction) -> Option<u64> {
        let side = &self.sides[index(direction)];
        if side.pending.is_empty() || matches!(side.keys, Keys::Lost) {
            return None;
        }
        let declared = side
            .pending
            .get(3..5)
            .map(|l| 5 + u64::from(u16::from_be_bytes([l[0], l[1]])));
        Some(declared.map_or(1, |d| d.saturating_sub(side.pending.len() as u64).max(1)))
    }

    /// The next bytes of `direction`, in order: what the whole records among them yield.
    pub fn feed(&mut self, direction: Direction, bytes: &[u8], keys: &dyn Lookup) -> Vec<Output> {
        let mut out = Vec::new();
        let d = index(direction);
        if matches!(self.sides[d].keys, Keys::Lost) {
            return out;
        }
        self.sides[d].pending.extend_from_slice(bytes);
        loop {
            let side = &mut self.sides[d];
            if side.pending.len() < 5 {
                break;
            }
            let len = usize::from(u16::from_be_bytes([side.pending[3], side.pending[4]]));
            let ok_type = (CHANGE_CIPHER_SPEC..=APPLICATION_DATA).contains(&side.pending[0]);
            if !ok_type || side.pending[1] != 3 || len > MAX_RECORD {
                side.current = side.offset;
                self.lose(direction, Undecryptable::NotTls, &mut out);
                break;
            }
            if side.pending.len() < 5 + len {
                break;
            }
            let mut record: Vec<u8> = side.pending.drain(..5 + len).collect();
            let offset = side.offset;
            side.current = offset;
            side.offset += (5 + len) as u64;
            self.record(direction, offset, &mut record, keys, &mut out);
            if matches!(self.sides[d].keys, Keys::Lost) {
                break;
            }
        }
        out
    }

    fn lose(&mut self, direction: Direction, why: Undecryptable, out: &mut Vec<Output>) {
        let side = &mut self.sides[index(direction)];
        side.keys = Keys::Lost;
        side.pending = Vec::new();
        side.handshake = Vec::new();
        out.push(Output::Undecryptable {
            direction,
            offset: side.current,
            why,
        });
    }

    fn record(
        &mut self,
        direction: Direction,
        offset: u64,
        record: &mut [u8],
        keys: &dyn Lookup,
        out: &mut Vec<Output>,
    ) {
        let header: [u8; 5] = [record[0], record[1], record[2], record[3], record[4]];
        let body = &mut record[5..];
        let d = index(direction);
        match (&mut self.sides[d].keys, header[0]) {
            (Keys::None, HANDSHAKE) => {
                let body = body.to_vec();
                self.handshake(direction, &body, keys, out);
            }
            (Keys::None, CHANGE_CIPHER_SPEC) => {
                // TLS 1.2: this direction's keys start with its next record. TLS 1.3: a
                // compatibility record, protecting nothing.
                if let Some(next) = self.sides[d].next.take() {
                    self.sides[d].keys = Keys::Tls12(next);
                }
            }
            (Keys::None, APPLICATION_DATA) => {
                let why = if self.hello.client_random.is_none() {
                    Undecryptable::HandshakeMissing
                } else {
                    self.no_key()
                };
                self.lose(direction, why, out);
            }
            (Keys::Tls13(k), APPLICATION_DATA) => match k.open(&header, body) {
                Some((inner, len)) => {
                    let content = body[..len].to_vec();
                    self.inner(direction, offset, inner, content, keys, out);
                }
                None => self.lose(direction, Undecryptable::BadRecord, out),
            },
            (Keys::Tls13(_), _) => {} // change_cipher_spec for compatibility; alerts in clear
            (Keys::Tls12(k), kind) if kind != CHANGE_CIPHER_SPEC => match k.open(&header, body) {
                Some(range) if kind == APPLICATION_DATA => out.push(Output::Plaintext {
                    direction,
                    offset,
                    data: body[range].to_vec(),
                }),
                Some(_) => {} // the encrypted Finished, an alert
                None => self.lose(direction, Undecryptable::BadRecord, out),
            },
            _ => {}
        }
    }

    /// A TLS 1.3 record's content: application data out, handshake messages followed.
    fn inner(
        &mut self,
        direction: Direction,
        offset: u64,
        inner: u8,
        content: Vec<u8>,
        keys: &dyn Lookup,
        out: &mut Vec<Output>,
    ) {
        match inner {
            APPLICATION_DATA => out.push(Output::Plaintext {
                direction,
                offset,
                data: content,
            }),
            HANDSHAKE => self.handshake(direction, &content, keys, out),
            _ => {}
        }
    }

    /// Joins handshake messages across records and acts on each whole one.
    fn handshake(
        &mut self,
        direction: Direction,
        bytes: &[u8],
        keys: &dyn Lookup,
        out: &mut Vec<Output>,
    ) {
        let d = index(direction);
        self.sides[d].handshake.extend_from_slice(bytes);
        loop {
            let buf = &self.sides[d].handshake;
            if buf.len() < 4 {
                return;
            }
            let len =
                (usize::from(buf[1]) << 16) | (usize::from(buf[2]) << 8) | usize::from(buf[3]);
            if len > MAX_HANDSHAKE {
                return self.lose(direction, Undecryptable::NotTls, out);
            }
            if buf.len() < 4 + len {
                return;
            }
            let message: Vec<u8> = self.sides[d].handshake.drain(..4 + len).collect();
            self.message(direction, &message, keys, out);
            if matches!(self.sides[d].keys, Keys::Lost) {
                return;
            }
        }
    }

    fn message(
        &mut self,
        direction: Direction,
        message: &[u8],
        keys: &dyn Lookup,
        out: &mut Vec<Output>,
    ) {
        const CLIENT_HELLO: u8 = 1;
        const SERVER_HELLO: u8 = 2;
        const FINISHED: u8 = 20;
        const KEY_UPDATE: u8 = 24;
        let d = index(direction);
        match message[0] {
            CLIENT_HELLO => {
                if let Ok((_, ch)) = parse_tls_handshake_client_hello(&message[4..]) {
                    self.hello.client_random = ch.random.try_into().ok();
                    self.hello.client_session_id = ch.session_id.unwrap_or_default().to_vec();
                }
            }
            SERVER_HELLO => self.server_hello(&message[4..], keys, out),
            FINISHED if self.hello.tls13 => {
                // This side's next records are under its traffic secret.
                let label = match direction {
                    Direction::ClientToServer => Label::ClientTraffic0,
                    Direction::ServerToClient => Label::ServerTraffic0,
                };
                self.switch13(direction, label, keys, out);
            }
            KEY_UPDATE if self.hello.tls13 => {
                if let Keys::Tls13(k) = &self.sides[d].keys {
                    match k.updated() {
                        Some(next) => self.sides[d].keys = Keys::Tls13(Box::new(next)),
                        None => self.lose(direction, Undecryptable::BadRecord, out),
                    }
                }
            }
            _ => {}
        }
    }

    fn server_hello(&mut self, body: &[u8], keys: &dyn Lookup, out: &mut Vec<Output>) {
        let Ok((_, sh)) = parse_tls_handshake_server_hello(body) else {
            return;
        };
        let Ok(random) = <[u8; 32]>::try_from(sh.random) else {
            return;
        };
        if random == HELLO_RETRY_RANDOM {
            return; // a second ClientHello and ServerHello follow
        }
        // The generic parser: ServerHello's own maps encrypt_then_mac to the wrong number.
        let exts = sh
            .ext
            .and_then(|e| parse_tls_extensions(e).ok())
            .map(|(_, x)| x)
            .unwrap_or_default();
        let tls13 = exts.iter().any(
            |e| matches!(e, TlsExtension::SupportedVersions(v) if v.iter().any(|x| x.0 == 0x0304)),
        );
        let id = sh.cipher.0;
        self.hello.server_random = Some(random);
        self.hello.tls13 = tls13;
        self.hello.encrypt_then_mac = exts
            .iter()
            .any(|e| matches!(e, TlsExtension::EncryptThenMac));
        let echoed = sh.session_id.unwrap_or_default();
        self.hello.resumed = if tls13 {
            exts.iter()
                .any(|e| matches!(e, TlsExtension::PreSharedKey(_)))
        } else {
            !echoed.is_empty() && echoed == self.hello.client_session_id.as_slice()
        };
        let Some(suite) = suite(id) else {
            for direction in [Direction::ClientToServer, Direction::ServerToClient] {
                self.lose(direction, Undecryptable::UnsupportedSuite(id), out);
            }
            return;
        };
        self.hello.suite = Some(suite);
        if tls13 && !suite.bulk_is_aead() {
            for direction in [Direction::ClientToServer, Direction::ServerToClient] {
                self.lose(direction, Undecryptable::UnsupportedSuite(id), out);
            }
            return;
        }
        if tls13 {
            self.switch13(
                Direction::ServerToClient,
                Label::ServerHandshakeTraffic,
                keys,
                out,
            );
            self.switch13(
                Direction::ClientToServer,
                Label::ClientHandshakeTraffic,
                keys,
                out,
            );
        } else {
            self.prepare12(keys, out);
        }
    }

    /// Why a connection whose key is not in the key log cannot be read.
    fn no_key(&self) -> Undecryptable {
        if self.hello.resumed {
            Undecryptable::NoKeyResumed
        } else {
            Undecryptable::NoKey
        }
    }

    /// TLS 1.3: `direction` reads its next records under the secret `label`.
    fn switch13(
        &mut self,
        direction: Direction,
        label: Label,
        keys: &dyn Lookup,
        out: &mut Vec<Output>,
    ) {
        let (Some(random), Some(suite)) = (self.hello.client_random, self.hello.suite) else {
            return self.lose(direction, Undecryptable::HandshakeMissing, out);
        };
        match keys
            .secret(&random, label)
            .and_then(|secret| Tls13Keys::new(suite, &secret))
        {
            Some(k) => self.sides[index(direction)].keys = Keys::Tls13(Box::new(k)),
            None => self.lose(direction, self.no_key(), out),
        }
    }

    /// TLS 1.2: both directions' keys, each turned on by its ChangeCipherSpec.
    fn prepare12(&mut self, keys: &dyn Lookup, out: &mut Vec<Output>) {
        let (Some(cr), Some(sr), Some(suite)) = (
            self.hello.client_random,
            self.hello.server_random,
            self.hello.suite,
        ) else {
            return;
        };
        let pair = keys.secret(&cr, Label::ClientRandom).and_then(|master| {
            Tls12Keys::pair(suite, &master, &cr, &sr, self.hello.encrypt_then_mac)
        });
        match pair {
            Some((client, server)) => {
                self.sides[0].next = Some(Box::new(client));
                self.sides[1].next = Some(Box::new(server));
            }
            None => {
                for direction in [Direction::ClientToServer, Direction::ServerToClient] {
                    self.lose(direction, self.no_key(), out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_tls_are_said_once() {
        let log = KeyLog::parse(
            format!("CLIENT_RANDOM {} {}", "00".repeat(32), "11".repeat(48)).as_bytes(),
        )
        .unwrap();
        let mut c = TlsConnection::new();
        let out = c.feed(Direction::ClientToServer, b"GET / HTTP/1.1\r\n\r\n", &log);
        assert_eq!(out.len(), 1);
        assert!(matches!(
            out[0],
            Output::Undecryptable {
                why: Undecryptable::NotTls,
                ..
            }
        ));
        assert!(c.feed(Direction::ClientToServer, b"more", &log).is_empty());
    }

    #[test]
    fn application_data_before_any_handshake_is_a_capture_begun_late() {
        let log = KeyLog::parse(
            format!("CLIENT_RANDOM {} {}", "00".repeat(32), "11".repeat(48)).as_bytes(),
        )
        .unwrap();
        let mut c = TlsConnection::new();
        let mut record = vec![23, 3, 3, 0, 20];
        record.extend([0u8; 20]);
        let out = c.feed(Direction::ServerToClient, &record, &log);
        assert_eq!(
            out,
            vec![Output::Undecryptable {
                direction: Direction::ServerToClient,
                offset: 0,
                why: Undecryptable::HandshakeMissing
            }]
        );
    }
}
