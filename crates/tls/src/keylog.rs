//! The NSS key log format: one `LABEL <client random hex> <secret hex>` per line, `#` comments.
//! The secrets are the keys to the capture: no error, `Debug` or report ever shows one.

use std::collections::HashMap;

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

/// The secrets of a key log by client random and label.
#[derive(Clone, Default)]
pub struct KeyLog {
    secrets: HashMap<([u8; 32], Label), Vec<u8>>,
    /// Lines that are neither a comment nor a secret this tool uses (other labels such as
    /// `EXPORTER_SECRET`, OpenSSL's literal `CLIENT_TRAFFIC_SECRET_N`), and malformed ones.
    pub lines_skipped: u64,
    /// Secrets past [`MAX_SECRETS`], not kept.
    pub secrets_not_kept: u64,
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

    /// Adds the secrets of more key log lines (a capture's Decryption Secrets Blocks).
    pub fn extend(&mut self, text: &[u8]) {
        for line in text.split(|&b| b == b'\n') {
            self.line(line);
        }
    }

    fn line(&mut self, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            return;
        }
        match parse_line(line) {
            Some(key) if self.secrets.len() < MAX_SECRETS || self.secrets.contains_key(&key.0) => {
                self.secrets.insert(key.0, key.1);
            }
            Some(_) => self.secrets_not_kept += 1,
            None => self.lines_skipped += 1,
        }
    }

    /// The secret `label` of the connection whose ClientHello carried `client_random`.
    pub fn get(&self, client_random: &[u8; 32], label: Label) -> Option<&[u8]> {
        self.secrets
            .get(&(*client_random, label))
            .map(Vec::as_slice)
    }

    /// How many secrets it holds.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
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
}
