//! The NSS key log format: one `LABEL <client random hex> <secret hex>` per line, `#` comments.
//! The secrets are the keys to the capture: no error, `Debug` or report ever shows one.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The secrets a key log names, as TLS 1.2 and 1.3 use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    /// TLS 1.2: the master secret.
    ClientRandom,
    ClientHandshakeTraffic,
    ServerHandshakeTraffic,
    ClientTraffic0,
    ServerTraffic0,
    ClientEarlyTraffic,
}

impl Label {
    fn parse(word: &str) -> Option<Label> {
        Some(match word {
            "CLIENT_RANDOM" => Label::ClientRandom,
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => Label::ClientHandshakeTraffic,
            "SERVER_HANDSHAKE_TRAFFIC_SECRET" => Label::ServerHandshakeTraffic,
            "CLIENT_TRAFFIC_SECRET_0" => Label::ClientTraffic0,
            "SERVER_TRAFFIC_SECRET_0" => Label::ServerTraffic0,
            "CLIENT_EARLY_TRAFFIC_SECRET" => Label::ClientEarlyTraffic,
            _ => return None,
        })
    }
}

/// Lines longer than this are not key log lines (the longest holds a 48-byte secret).
const MAX_LINE: usize = 512;
/// Secrets kept at most: a key log of a busy host holds a few per connection.
pub const MAX_SECRETS: usize = 4_000_000;
/// Bytes of a key log file read at most: 4 million secrets take about 800 MB of lines.
pub const MAX_KEYLOG_BYTES: u64 = 2 << 30;
/// A file with no secret in its first this many bytes is not a key log (`/dev/zero`, a capture
/// given by mistake): reading stops there.
pub const NO_SECRET_WITHIN: u64 = 16 << 20;

/// The secrets of a key log by client random and label.
#[derive(Clone, Default)]
pub struct KeyLog {
    /// Each secret with the point of the capture from which it may be used (0: from the start;
    /// see [`Secrets`]).
    secrets: HashMap<([u8; 32], Label), (u64, Vec<u8>)>,
    /// Lines that are neither a comment nor a secret this tool uses (other labels such as
    /// `EXPORTER_SECRET`, OpenSSL's literal `CLIENT_TRAFFIC_SECRET_N`), and malformed ones.
    pub lines_skipped: u64,
    /// Secrets past [`MAX_SECRETS`], not kept.
    pub secrets_not_kept: u64,
    /// Bytes of the file past [`MAX_KEYLOG_BYTES`], not read (at least one).
    pub bytes_not_read: bool,
}

impl std::fmt::Debug for KeyLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyLog")
            .field("secrets", &self.secrets.len())
            .field("lines_skipped", &self.lines_skipped)
            .finish()
    }
}

/// Why a file is not a key log. Names the line, never its content.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyLogError {
    #[error("no secret in it: not an NSS key log (lines like CLIENT_RANDOM <hex> <hex>)")]
    NoSecret,
    #[error(
        "no secret in its first {} MiB: not an NSS key log (lines like CLIENT_RANDOM <hex> <hex>)",
        NO_SECRET_WITHIN >> 20
    )]
    NoSecretWithin,
    #[error("cannot read it: {0}")]
    Read(String),
}

impl KeyLog {
    /// Reads a key log. Malformed lines are counted, not fatal: a key log appended to by several
    /// programs may hold a torn last line. A file with no secret at all is an error.
    pub fn parse(text: &[u8]) -> Result<KeyLog, KeyLogError> {
        let mut log = KeyLog::default();
        log.extend(text);
        if log.secrets.is_empty() {
            return Err(KeyLogError::NoSecret);
        }
        Ok(log)
    }

    /// Reads a key log file line by line, never holding more than a line of it: a line longer
    /// than any key log line is skipped (counted) without being kept, the file is read up to
    /// [`MAX_KEYLOG_BYTES`], and one with no secret in its first [`NO_SECRET_WITHIN`] bytes is
    /// refused there (`/dev/zero` ends at once).
    pub fn read(mut source: impl BufRead) -> Result<KeyLog, KeyLogError> {
        let mut log = KeyLog::default();
        let mut line = Vec::with_capacity(MAX_LINE + 1);
        let mut read: u64 = 0;
        loop {
            if log.secrets.is_empty() && read >= NO_SECRET_WITHIN {
                return Err(KeyLogError::NoSecretWithin);
            }
            if read >= MAX_KEYLOG_BYTES {
                log.bytes_not_read = !source.fill_buf().map_err(read_error)?.is_empty();
                break;
            }
            let buf = source.fill_buf().map_err(read_error)?;
            if buf.is_empty() {
                break;
            }
            let (piece, ends) = match memchr_newline(buf) {
                Some(at) => (&buf[..at], at + 1),
                None => (buf, buf.len()),
            };
            // An over-long line is marked by its one byte past MAX_LINE and not grown further.
            let room = (MAX_LINE + 1).saturating_sub(line.len());
            line.extend_from_slice(&piece[..piece.len().min(room)]);
            let complete = ends > piece.len();
            source.consume(ends);
            read += ends as u64;
            if complete {
                log.line(&line, 0);
                line.clear();
            }
        }
        log.line(&line, 0);
        if log.secrets.is_empty() {
            return Err(KeyLogError::NoSecret);
        }
        Ok(log)
    }

    /// Adds the secrets of more key log lines (a capture's Decryption Secrets Blocks).
    pub fn extend(&mut self, text: &[u8]) {
        self.extend_from(text, 0);
    }

    /// The same, usable from the capture's point `since` on.
    fn extend_from(&mut self, text: &[u8], since: u64) {
        for line in text.split(|&b| b == b'\n') {
            self.line(line, since);
        }
    }

    fn line(&mut self, line: &[u8], since: u64) {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            return;
        }
        match parse_line(line) {
            // A secret already known keeps the point it was first known from.
            Some((key, _)) if self.secrets.contains_key(&key) => {}
            Some((key, secret)) if self.secrets.len() < MAX_SECRETS => {
                self.secrets.insert(key, (since, secret));
            }
            Some(_) => self.secrets_not_kept += 1,
            None => self.lines_skipped += 1,
        }
    }

    /// The secret `label` of the connection whose ClientHello carried `client_random`.
    pub fn get(&self, client_random: &[u8; 32], label: Label) -> Option<&[u8]> {
        self.get_at(client_random, label, u64::MAX)
    }

    /// The same, among the secrets usable at the capture's point `at`.
    fn get_at(&self, client_random: &[u8; 32], label: Label, at: u64) -> Option<&[u8]> {
        self.secrets
            .get(&(*client_random, label))
            .filter(|(since, _)| *since <= at)
            .map(|(_, s)| s.as_slice())
    }

    /// How many secrets it holds.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }
}

/// Where a connection's secrets are looked up: a key log, or the run's shared secrets as usable
/// at one point of the capture ([`At`]).
pub trait Lookup {
    fn secret(&self, client_random: &[u8; 32], label: Label) -> Option<Vec<u8>>;
}

impl Lookup for KeyLog {
    fn secret(&self, client_random: &[u8; 32], label: Label) -> Option<Vec<u8>> {
        self.get(client_random, label).map(<[u8]>::to_vec)
    }
}

/// The shared secrets as usable at one point of the capture.
pub struct At<'a>(pub &'a Secrets, pub u64);

impl Lookup for At<'_> {
    fn secret(&self, client_random: &[u8; 32], label: Label) -> Option<Vec<u8>> {
        self.0.get(client_random, label, self.1)
    }
}

fn read_error(e: std::io::Error) -> KeyLogError {
    KeyLogError::Read(e.to_string())
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// The secrets every TLS layer of a run reads, shared (never copied per shard or thread): the
/// key log file's, read once, and those the capture carried in Decryption Secrets Blocks, added
/// once as the reader meets them. A carried secret is usable from the point of the capture
/// where its block was (the sequence number of the next TCP event), so a layer that runs behind
/// the reader on another thread decrypts exactly what it would have in order.
#[derive(Clone, Default)]
pub struct Secrets(Arc<Shared>);

#[derive(Default)]
struct Shared {
    file: Option<Arc<KeyLog>>,
    carried: RwLock<KeyLog>,
    /// The point from which the first carried secret is usable (`u64::MAX`: none yet).
    first_carried: AtomicU64,
}

impl Secrets {
    pub fn new(file: Option<Arc<KeyLog>>) -> Self {
        Secrets(Arc::new(Shared {
            file,
            carried: RwLock::default(),
            first_carried: AtomicU64::new(u64::MAX),
        }))
    }

    /// Adds a Decryption Secrets Block's key log lines, usable from the point `since`.
    pub fn carry(&self, key_log: &[u8], since: u64) {
        let mut carried = self.0.carried.write().unwrap_or_else(|e| e.into_inner());
        carried.extend_from(key_log, since);
        if !carried.is_empty() {
            self.0.first_carried.fetch_min(since, Ordering::Release);
        }
    }

    /// Whether any secret is usable at the point `at`: a TLS layer is needed from there.
    pub fn any_at(&self, at: u64) -> bool {
        self.0.file.as_ref().is_some_and(|f| !f.is_empty())
            || self.0.first_carried.load(Ordering::Acquire) <= at.min(u64::MAX - 1)
    }

    /// The secret `label` of the connection whose ClientHello carried `client_random`, as
    /// usable at the point `at`.
    pub fn get(&self, client_random: &[u8; 32], label: Label, at: u64) -> Option<Vec<u8>> {
        if let Some(s) = self
            .0
            .file
            .as_ref()
            .and_then(|f| f.get(client_random, label))
        {
            return Some(s.to_vec());
        }
        let carried = self.0.carried.read().unwrap_or_else(|e| e.into_inner());
        carried.get_at(client_random, label, at).map(<[u8]>::to_vec)
    }

    /// Carried lines that were not secrets this tool uses, and carried secrets past the cap.
    pub fn carried_counts(&self) -> (u64, u64) {
        let carried = self.0.carried.read().unwrap_or_else(|e| e.into_inner());
        (carried.lines_skipped, carried.secrets_not_kept)
    }
}

type Entry = (([u8; 32], Label), Vec<u8>);

fn parse_line(line: &[u8]) -> Option<Entry> {
    if line.len() > MAX_LINE {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split_ascii_whitespace();
    let label = Label::parse(words.next()?)?;
    let random: [u8; 32] = hex(words.next()?)?.try_into().ok()?;
    let secret = hex(words.next()?)?;
    // TLS 1.2 master secrets are 48 bytes; TLS 1.3 secrets the hash's length (32 or 48).
    if words.next().is_some() || !matches!(secret.len(), 32 | 48) {
        return None;
    }
    Some(((random, label), secret))
}

fn hex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = text.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const R: &str = "0101010101010101010101010101010101010101010101010101010101010101";

    #[test]
    fn reads_the_secrets_it_uses_and_counts_the_rest() {
        let s32 = "ab".repeat(32);
        let s48 = "cd".repeat(48);
        let text = format!(
            "# comment\nCLIENT_RANDOM {R} {s48}\nSERVER_TRAFFIC_SECRET_0 {R} {s32}\nEXPORTER_SECRET {R} {s32}\nCLIENT_TRAFFIC_SECRET_N {R} {s32}\nCLIENT_RANDOM {R} zz\r\nSERVER_HANDSHAKE_TRAFFIC_SECRET {R} {s32}"
        );
        let log = KeyLog::parse(text.as_bytes()).unwrap();
        let r = [1u8; 32];
        assert_eq!(log.len(), 3);
        assert_eq!(log.get(&r, Label::ClientRandom).unwrap(), &[0xcd; 48][..]);
        assert_eq!(log.get(&r, Label::ServerTraffic0).unwrap(), &[0xab; 32][..]);
        assert!(log.get(&r, Label::ClientTraffic0).is_none());
        assert_eq!(log.lines_skipped, 3);
        // Debug never shows a secret.
        assert!(!format!("{log:?}").contains("ab"));
    }

    #[test]
    fn a_file_without_secrets_is_not_a_key_log() {
        assert!(matches!(
            KeyLog::parse(b"hello\nworld"),
            Err(KeyLogError::NoSecret)
        ));
        assert!(matches!(
            KeyLog::parse(&[0xff; 4096]),
            Err(KeyLogError::NoSecret)
        ));
    }

    #[test]
    fn a_file_is_read_a_line_at_a_time_and_over_long_lines_are_skipped() {
        let s48 = "cd".repeat(48);
        let long = "x".repeat(100_000);
        let text = format!("{long}\nCLIENT_RANDOM {R} {s48}\n{long}");
        // A reader that hands out a few bytes at a time, as a pipe does.
        let reader = std::io::BufReader::with_capacity(7, text.as_bytes());
        let log = KeyLog::read(reader).unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log.lines_skipped, 2);
        assert!(!log.bytes_not_read);
    }

    #[test]
    fn zeros_are_refused_after_a_bounded_read() {
        let zeros = std::io::repeat(0).take(NO_SECRET_WITHIN * 4);
        let r = KeyLog::read(std::io::BufReader::new(zeros));
        assert!(matches!(r, Err(KeyLogError::NoSecretWithin)));
        let empty: &[u8] = b"";
        assert!(matches!(KeyLog::read(empty), Err(KeyLogError::NoSecret)));
    }

    #[test]
    fn a_carried_secret_is_usable_from_where_it_was_carried() {
        let s32 = "ab".repeat(32);
        let secrets = Secrets::new(None);
        assert!(!secrets.any_at(u64::MAX));
        secrets.carry(format!("SERVER_TRAFFIC_SECRET_0 {R} {s32}").as_bytes(), 10);
        let r = [1u8; 32];
        assert!(!secrets.any_at(9));
        assert!(secrets.any_at(10));
        assert!(secrets.get(&r, Label::ServerTraffic0, 9).is_none());
        assert_eq!(
            secrets.get(&r, Label::ServerTraffic0, 10).as_deref(),
            Some(&[0xab; 32][..])
        );
        // Carried again later, it keeps the earlier point; a clone shares, never copies.
        secrets.carry(format!("SERVER_TRAFFIC_SECRET_0 {R} {s32}").as_bytes(), 50);
        let other = secrets.clone();
        assert!(other.get(&r, Label::ServerTraffic0, 20).is_some());
        assert!(Arc::ptr_eq(&secrets.0, &other.0));
    }
}
