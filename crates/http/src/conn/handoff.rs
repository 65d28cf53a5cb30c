//! What a connection speaks when it is not HTTP/1.1, and the hand-off to the HTTP/2 reader.
//!
//! The client's first bytes tell TLS (a handshake record) and HTTP/2 with prior knowledge (its
//! preface, RFC 9113 §3.4) from the rest; a server's bytes captured before them are kept
//! (bounded) so that an HTTP/2 server's first SETTINGS are not lost. An HTTP/1.1 connection may
//! still become HTTP/2 by a 101 to `Upgrade: h2c` (RFC 7540 §3.2), whose `HTTP2-Settings` the
//! request carried.

use super::{ConnKind, Connection, HttpSink, State};
use crate::h2::{H2Connection, PREFACE};
use crate::{ExchangeId, Headers};
use mcpf_model::{Direction, Mark};

/// The start of the HTTP/2 preface that tells it (`PRI * HTTP/2.0`).
pub(crate) const PREFACE_START: &[u8] = PREFACE.split_at(14).0;

/// Whether `data` starts with a TLS handshake record (a ClientHello), of any TLS version.
pub(crate) fn is_tls_record_start(data: &[u8]) -> bool {
    data.len() >= 2 && data[0] == 0x16 && data[1] == 0x03
}

/// Bytes of a connection's start looked at to tell TLS and HTTP/2 apart from HTTP/1.1.
const PROBE_BYTES: usize = 24;
/// Server bytes kept while the client has sent none (an HTTP/2 server's first frames).
const MAX_EARLY_SERVER_BYTES: usize = 64 << 10;

impl Connection {
    /// Looks at the client's first bytes (up to [`PROBE_BYTES`] of them) for TLS or HTTP/2,
    /// which leave nothing here for an HTTP/1.1 parser; returns true when they began HTTP/2,
    /// whose reader has then taken them.
    pub(super) fn probe_first_bytes(
        &mut self,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> bool {
        if self.probe.len() >= PROBE_BYTES {
            return false;
        }
        let before = self.probe.len();
        let take = (PROBE_BYTES - before).min(data.len());
        self.probe.extend_from_slice(&data[..take]);
        if let Some(kind) = classify_first_bytes(&self.probe) {
            // TLS or HTTP/2 from the first byte on: nothing here for an HTTP/1.1 parser.
            self.kind = Some(kind);
            self.req.state = State::Opaque;
            self.resp.state = State::Opaque;
            if kind == ConnKind::Http2 {
                self.become_h2(before, data, mark, sink);
                return true;
            }
        }
        false
    }

    /// The server's early bytes are kept no longer once the client's tell what the connection
    /// speaks.
    pub(super) fn forget_early_server_bytes(&mut self) {
        if self.kind.is_some() || self.probe.len() >= PROBE_BYTES {
            self.early_server = None;
        }
    }

    /// A 101 switched to cleartext HTTP/2 (RFC 7540 §3.2): HTTP/2 from here on. The 101 is
    /// interim, and the response to the request that asked for it (`exchange`) comes on stream
    /// 1, read with the client's settings that request carried.
    pub(super) fn upgrade_to_h2c(&mut self, exchange: ExchangeId) {
        self.interim.push(101);
        let interim = std::mem::take(&mut self.interim);
        let settings = self.h2c_settings.take();
        let h2 = H2Connection::upgraded(
            self.id,
            self.client,
            self.server,
            exchange,
            interim,
            settings.as_deref(),
        );
        self.h2 = Some(Box::new(h2));
        self.req.state = State::Opaque;
        self.resp.state = State::Opaque;
    }

    /// Server bytes that came before the client's first: kept (bounded) until the client's bytes
    /// tell what the connection speaks, for an HTTP/2 server sends its SETTINGS as soon as the
    /// TLS handshake is done, often before the client's preface is captured.
    pub(super) fn keep_early_server_bytes(&mut self, data: &[u8], mark: Mark) {
        if !self.probe.is_empty() || self.early_server_bytes > MAX_EARLY_SERVER_BYTES {
            return;
        }
        // Past the cap nothing more is kept, so that what is replayed has no hole in it.
        self.early_server_bytes += data.len();
        if self.early_server_bytes > MAX_EARLY_SERVER_BYTES {
            self.early_server = None;
            return;
        }
        let early = self.early_server.get_or_insert_with(Vec::new);
        match early.last_mut() {
            // Many tiny segments are kept as one piece (at the first one's mark).
            Some((last, _)) if last.len() < 1024 => last.extend_from_slice(data),
            _ => early.push((data.to_vec(), mark)),
        }
    }

    /// The client's bytes began with the HTTP/2 preface: from here on the connection is read
    /// as HTTP/2, from the server's early bytes and the probe's on.
    pub(super) fn become_h2(
        &mut self,
        before: usize,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let mut h2 = Box::new(H2Connection::new(self.id, self.client, self.server));
        for (bytes, m) in self.early_server.take().unwrap_or_default() {
            h2.data(Direction::ServerToClient, &bytes, m, sink);
        }
        // The probe's bytes before these were the client's, the preface's start.
        h2.data(Direction::ClientToServer, &self.probe[..before], mark, sink);
        h2.data(Direction::ClientToServer, data, mark, sink);
        self.h2 = Some(h2);
    }
}

/// The SETTINGS payload an `HTTP2-Settings` header carries: base64url, padding optional (RFC
/// 7540 §3.2.1); at most a few hundred settings are read.
pub(super) fn decode_http2_settings(value: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const URL_SAFE_ANY_PADDING: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let value = value.trim();
    (value.len() <= 4096)
        .then(|| URL_SAFE_ANY_PADDING.decode(value).ok())
        .flatten()
}

/// A 101 response switching to cleartext HTTP/2 (RFC 7540 §3.2).
pub(super) fn headers_upgrade_to_h2c(headers: &Headers) -> bool {
    headers.has_token("upgrade", "h2c")
}

fn classify_first_bytes(data: &[u8]) -> Option<ConnKind> {
    if is_tls_record_start(data) {
        return Some(ConnKind::Tls);
    }
    if data.starts_with(PREFACE_START) {
        return Some(ConnKind::Http2);
    }
    None
}
