//! HTTP/1.1 body framing (RFC 9112 §6-7) and content decoding (RFC 9110 §8.4).
//!
//! The chunked decoder is a byte-driven state machine that accepts chunk extensions and trailers
//! and hands out slices of its input, so a chunk boundary may fall anywhere (inside an SSE line
//! included). Content decoders stream: gzip, deflate (zlib or raw, told apart by the first byte)
//! and brotli, flushed after every write; the connection keeps at most `MAX_BODY` decoded bytes
//! of a body, so a crafted body cannot exhaust memory.

use crate::budget;
use mcpf_model::AnomalyKind;

/// A chunk-size or trailer line longer than this is not HTTP.
const MAX_CHUNK_LINE: usize = 4096;

/// How the end of a message body is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    None,
    Length(u64),
    Chunked,
    /// The body ends when the server closes the connection.
    UntilClose,
    /// The connection stopped carrying HTTP (CONNECT 2xx, 101 Switching Protocols).
    Tunnel,
    /// The snap length cut the request's head, and its framing with it: what the client sent
    /// next, up to the next cut or start line, is the start of its body (clients write the head
    /// and the body apart), and may be all that shows what the request was.
    UntilCut,
}

#[derive(Debug)]
enum ChunkState {
    Size,
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd {
        seen_cr: bool,
    },
    Trailer,
    /// A capture gap swallowed a chunk boundary: the next bytes must be a chunk-size line (after
    /// an optional CRLF), or the framing is lost.
    AfterGap,
}

/// What a piece of chunked input turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ChunkOutput<'a> {
    Data(&'a [u8]),
    /// The last chunk and trailers have been read: the body is complete.
    End,
}

#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: ChunkState,
    line: Vec<u8>,
    pub(crate) chunks: u64,
    /// Trailer fields received (name, value).
    pub(crate) trailers: Vec<(String, String)>,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedDecoder {
    pub(crate) fn new() -> Self {
        ChunkedDecoder {
            state: ChunkState::Size,
            line: Vec::new(),
            chunks: 0,
            trailers: Vec::new(),
        }
    }

    /// A decoder that starts inside a chunk with `left` data bytes still to come: a body picked
    /// up in the middle, where the distance to the next chunk boundary was found.
    pub(crate) fn in_chunk(left: u64) -> Self {
        let state = if left == 0 {
            ChunkState::DataEnd { seen_cr: false }
        } else {
            ChunkState::Data(left)
        };
        ChunkedDecoder {
            state,
            ..ChunkedDecoder::new()
        }
    }

    /// Bytes still owed by the chunk being read, if inside chunk data (lets a capture gap of a
    /// known size be skipped without losing the framing).
    pub(crate) fn remaining_in_chunk(&self) -> Option<u64> {
        match self.state {
            ChunkState::Data(n) => Some(n),
            _ => None,
        }
    }

    /// A gap covered the rest of the current chunk and more: resynchronise on the next chunk-size
    /// line (SSE servers write one chunk per event, so a lost segment is usually whole chunks).
    pub(crate) fn after_gap(&mut self) {
        self.line.clear();
        self.state = ChunkState::AfterGap;
    }

    /// Skips `n` bytes of chunk data lost in a gap. Only valid when `n <= remaining_in_chunk()`.
    pub(crate) fn skip_data(&mut self, n: u64) {
        if let ChunkState::Data(left) = self.state {
            let left = left - n.min(left);
            self.state = if left == 0 {
                ChunkState::DataEnd { seen_cr: false }
            } else {
                ChunkState::Data(left)
            };
        }
    }

    /// Consumes input; returns how much was used and what it held. Stops after the end of the
    /// body (the rest of the input belongs to the next message).
    /// On an error, says how many bytes were read before it, so the caller can look for the next
    /// message in the rest.
    pub(crate) fn decode<'a>(
        &mut self,
        input: &'a [u8],
        out: &mut Vec<ChunkOutput<'a>>,
    ) -> Result<usize, (usize, ChunkedError)> {
        let mut pos = 0;
        loop {
            match self.next(input, &mut pos) {
                Ok(Some(ChunkOutput::End)) => {
                    out.push(ChunkOutput::End);
                    return Ok(pos);
                }
                Ok(Some(piece)) => out.push(piece),
                Ok(None) => return Ok(pos),
                Err(e) => return Err((pos, e)),
            }
        }
    }

    /// [`Self::decode`] one piece at a time, from `input[*pos..]`: the next piece of output, or
    /// None once the input is used up. After [`ChunkOutput::End`] the rest of the input is not
    /// read.
    pub(crate) fn next<'a>(
        &mut self,
        input: &'a [u8],
        pos: &mut usize,
    ) -> Result<Option<ChunkOutput<'a>>, ChunkedError> {
        while *pos < input.len() {
            match &mut self.state {
                ChunkState::Size => {
                    if let Some(size) = self.read_size_line(input, pos)? {
                        self.begin_chunk(size);
                    }
                }
                ChunkState::Data(left) => {
                    let take = (*left).min((input.len() - *pos) as u64) as usize;
                    let data = &input[*pos..*pos + take];
                    *pos += take;
                    *left -= take as u64;
                    if *left == 0 {
                        self.state = ChunkState::DataEnd { seen_cr: false };
                    }
                    return Ok(Some(ChunkOutput::Data(data)));
                }
                ChunkState::DataEnd { seen_cr } => {
                    match input[*pos] {
                        b'\r' if !*seen_cr => *seen_cr = true,
                        b'\n' => self.state = ChunkState::Size,
                        other => return Err(ChunkedError::NoCrlfAfterData(other)),
                    }
                    *pos += 1;
                }
                ChunkState::AfterGap => self.resync(input, pos)?,
                ChunkState::Trailer => {
                    if self.read_line(input, pos)? && self.end_trailer_line() {
                        return Ok(Some(ChunkOutput::End));
                    }
                }
            }
        }
        Ok(None)
    }

    /// A chunk-size line, when it is complete: read where it lies when the input holds all of
    /// it (as it mostly does), else gathered across inputs.
    fn read_size_line(
        &mut self,
        input: &[u8],
        pos: &mut usize,
    ) -> Result<Option<u64>, ChunkedError> {
        let rest = &input[*pos..];
        if self.line.is_empty()
            && let Some(i) = memchr::memchr(b'\n', rest)
            && i <= MAX_CHUNK_LINE
        {
            *pos += i + 1;
            return parse_chunk_size(&rest[..i]).map(Some);
        }
        if !self.read_line(input, pos)? {
            return Ok(None);
        }
        parse_chunk_size(&self.line).map(Some)
    }

    /// Adds the input up to the next LF to the line being read, consuming it (and the LF).
    /// Returns whether the line is complete.
    #[inline]
    fn read_line(&mut self, input: &[u8], pos: &mut usize) -> Result<bool, ChunkedError> {
        let rest = &input[*pos..];
        match memchr::memchr(b'\n', rest) {
            Some(i) => {
                self.push_line(&rest[..i])?;
                *pos += i + 1;
                Ok(true)
            }
            None => {
                self.push_line(rest)?;
                *pos = input.len();
                Ok(false)
            }
        }
    }

    /// After a chunk-size line: the chunk's data, or the trailer after the last chunk.
    fn begin_chunk(&mut self, size: u64) {
        self.line.clear();
        if size == 0 {
            self.state = ChunkState::Trailer;
        } else {
            self.chunks += 1;
            self.state = ChunkState::Data(size);
        }
    }

    /// Looks for the chunk-size line that must follow a capture gap.
    fn resync(&mut self, input: &[u8], pos: &mut usize) -> Result<(), ChunkedError> {
        if self.line.is_empty() && (input[*pos] == b'\r' || input[*pos] == b'\n') {
            *pos += 1;
            return Ok(());
        }
        let at = *pos;
        // A line still open at the end of the input and already too long cannot be a chunk
        // boundary; a complete one that is too long is reported as in any other state.
        let complete = self.read_line(input, pos).map_err(|e| {
            if input[at..].contains(&b'\n') {
                e
            } else {
                ChunkedError::NoBoundaryAfterGap
            }
        })?;
        if complete {
            let Ok(size) = parse_chunk_size(&self.line) else {
                // Not a chunk boundary: the line is left unread, for it may start the next
                // message (a response whose body's end the gap took is followed by the next).
                *pos = at;
                return Err(ChunkedError::NoBoundaryAfterGap);
            };
            self.begin_chunk(size);
        }
        Ok(())
    }

    /// Takes a complete trailer line; returns whether it was the blank line that ends the body.
    fn end_trailer_line(&mut self) -> bool {
        let line = std::mem::take(&mut self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            self.state = ChunkState::Size;
            return true;
        }
        let text = String::from_utf8_lossy(line);
        if let Some((name, value)) = text.split_once(':') {
            self.trailers
                .push((name.trim().to_string(), value.trim().to_string()));
        }
        false
    }

    fn push_line(&mut self, bytes: &[u8]) -> Result<(), ChunkedError> {
        if self.line.len() + bytes.len() > MAX_CHUNK_LINE {
            return Err(ChunkedError::LineTooLong);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }
}

/// Why a chunked body could not be followed. The text is shown to users as anomaly text
/// (`bad chunked framing: ...`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ChunkedError {
    #[error("chunk-size or trailer line too long")]
    LineTooLong,
    /// The line, cut to 32 bytes.
    #[error("invalid chunk size {0:?}")]
    InvalidSize(String),
    #[error("chunk size out of range")]
    SizeOutOfRange,
    #[error("chunk data not followed by CRLF (byte {0:#04x})")]
    NoCrlfAfterData(u8),
    #[error("no chunk boundary after the capture gap")]
    NoBoundaryAfterGap,
}

/// `1a;name=value\r` → 26. Chunk extensions are allowed and ignored (RFC 9112 §7.1.1).
pub(crate) fn parse_chunk_size(line: &[u8]) -> Result<u64, ChunkedError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let invalid = || {
        ChunkedError::InvalidSize(String::from_utf8_lossy(&line[..line.len().min(32)]).into_owned())
    };
    // One pass: the digits up to the first `;`, space or tab, at most 16 of them.
    let (mut size, mut digits) = (0u64, 0);
    for &b in line {
        let digit = match b {
            b';' | b' ' | b'\t' => break,
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(invalid()),
        };
        digits += 1;
        if digits > 16 {
            return Err(invalid());
        }
        size = size.checked_mul(16).ok_or(ChunkedError::SizeOutOfRange)? | u64::from(digit);
    }
    if digits == 0 {
        return Err(invalid());
    }
    Ok(size)
}

/// How far bodies may be decoded, as a bucket of credit: it starts with `start` decoded bytes,
/// each compressed byte read adds `ratio` more, it never holds more than `cap`, and each decoded
/// byte takes one. Real bodies (JSON, text, base64 images, event streams) compress by 5 to 50
/// times, while a bomb decodes a few bytes into gigabytes. The cap bounds what one write (one
/// packet) can decode however long the body saved credit at a low ratio, and so the SSE events
/// one packet yields; the ratio bounds the work a capture of a given size can cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(crate) start: u64,
    pub(crate) ratio: u64,
    pub(crate) cap: u64,
}

/// The budget of every body: 1 MiB at any ratio, then 1024 decoded bytes per compressed byte,
/// at most 24 MiB of credit saved (a 16 MiB brotli window filled from a few bytes after 16 KiB
/// of text), and 4 GiB in all ([`MAX_DECODED`]).
pub(crate) const BUDGET: Budget = Budget {
    start: 1 << 20,
    ratio: 1024,
    cap: 24 << 20,
};

/// The budget of all the bodies of one connection together: 24 MiB at any ratio, then 64
/// decoded bytes per compressed byte (an event stream of progress notifications compresses
/// 20 to 45 times with gzip), at most 24 MiB saved. Without it, each of many small bodies
/// would decode its own first MiB at any ratio, and a connection its bodies' 1024:1.
pub(crate) const CONN_BUDGET: Budget = Budget {
    start: 24 << 20,
    ratio: 64,
    cap: 24 << 20,
};

/// Bytes one body may decode whatever its ratio (an event stream compressed 10:1 that ran for
/// days).
const MAX_DECODED: u64 = 4 << 30;

/// What is left of a [`Budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Credit {
    budget: Budget,
    left: u64,
}

impl Credit {
    pub(crate) const fn new(budget: Budget) -> Self {
        Credit {
            budget,
            left: budget.start,
        }
    }

    /// `read` more compressed bytes were read, `decoded` more handed out; false when that was
    /// more than the credit (which is then spent).
    fn spend(&mut self, read: u64, decoded: u64) -> bool {
        let b = self.budget;
        let earned = self
            .left
            .saturating_add(read.saturating_mul(b.ratio))
            .min(b.cap);
        match earned.checked_sub(decoded) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.left = 0;
                false
            }
        }
    }
}

impl Default for Credit {
    /// A connection's.
    fn default() -> Self {
        Credit::new(CONN_BUDGET)
    }
}

/// Decoded bytes handed out at a time: the budget is checked after each piece.
const PIECE: usize = 32 << 10;

/// Streaming decoder for one `Content-Encoding`. Output is handed out in pieces of at most a
/// few tens of KiB, and the [`Budget`] is checked after each: no codec can make one packet
/// allocate more than a piece.
pub(crate) struct ContentDecoder {
    codec: Codec,
    credit: Credit,
    /// Compressed bytes the codec has read, and decoded bytes it has handed out.
    read: u64,
    out: u64,
}

enum Codec {
    Identity,
    Gzip(Box<flate2::write::MultiGzDecoder<Vec<u8>>>),
    /// Undecided until the first byte says zlib or raw deflate.
    DeflatePending,
    Zlib(Box<flate2::write::ZlibDecoder<Vec<u8>>>),
    RawDeflate(Box<flate2::write::DeflateDecoder<Vec<u8>>>),
    Brotli(Box<BrotliStream>),
    /// An encoding we do not decode; the body is kept as sent.
    Unsupported(String),
    /// Decoding failed, or stopped at the budget; the rest is not decoded.
    Failed,
}

type BrotliState = brotli_decompressor::BrotliState<
    brotli_decompressor::StandardAlloc,
    brotli_decompressor::StandardAlloc,
    brotli_decompressor::StandardAlloc,
>;

/// Takes a decoded piece and how many compressed bytes of the write are read by then; an error
/// stops decoding.
type Emit<'a> = dyn FnMut(&[u8], usize) -> Result<(), DecodeError> + 'a;

/// Brotli driven by hand: the library's writer decodes a whole write at once.
struct BrotliStream {
    state: BrotliState,
    buf: Box<[u8]>,
    /// The stream's last metablock was read.
    done: bool,
    /// Window bytes reserved from the stage's budget, once the stream's first byte named them.
    window: Option<u64>,
}

/// The window a brotli stream's first byte asks for (RFC 7932 section 9.1: WBITS read from the
/// low bits up), or None for the reserved code.
fn brotli_window(first: u8) -> Option<u64> {
    let wbits = if first & 1 == 0 {
        16
    } else if (first >> 1) & 7 != 0 {
        17 + u32::from((first >> 1) & 7)
    } else {
        match (first >> 4) & 7 {
            0 => 17,
            1 => return None,
            n => 8 + u32::from(n),
        }
    };
    Some(1u64 << wbits)
}

impl Drop for BrotliStream {
    fn drop(&mut self) {
        if let Some(w) = self.window.take() {
            budget::update(|b| b.windows_held = b.windows_held.saturating_sub(w));
        }
    }
}

impl BrotliStream {
    fn new() -> Self {
        use brotli_decompressor::StandardAlloc;
        // Strict: `br` is RFC 7932 (a window of at most 16 MiB), not the large-window
        // extension, whose 1 GiB ring buffer a few crafted bytes could ask for.
        let state = BrotliState::new_strict(
            StandardAlloc::default(),
            StandardAlloc::default(),
            StandardAlloc::default(),
        );
        BrotliStream {
            state,
            buf: vec![0u8; PIECE].into_boxed_slice(),
            done: false,
            window: None,
        }
    }

    /// Reserves the window the stream's first byte asks for, before the decoder allocates it.
    fn reserve_window(&mut self, input: &[u8]) -> Result<(), DecodeError> {
        let (None, Some(&first)) = (self.window, input.first()) else {
            return Ok(());
        };
        // The reserved code is the decoder's to refuse, as corrupt.
        let window = brotli_window(first).unwrap_or(0);
        let b = budget::current();
        if b.windows_held + window > b.max_windows_held {
            return Err(DecodeError::WindowsHeld {
                window,
                held: b.windows_held,
                max: b.max_windows_held,
            });
        }
        budget::update(|b| b.windows_held += window);
        self.window = Some(window);
        Ok(())
    }

    /// Decodes `input`, each piece to `emit` (which may stop it); returns the bytes read.
    fn write(&mut self, input: &[u8], emit: &mut Emit<'_>) -> Result<(), DecodeError> {
        use brotli_decompressor::{BrotliDecompressStream, BrotliResult};
        self.reserve_window(input)?;
        let (mut avail_in, mut at) = (input.len(), 0usize);
        loop {
            if self.done {
                return match avail_in {
                    0 => Ok(()),
                    _ => Err(DecodeError::Corrupt(write_zero())),
                };
            }
            let (mut avail_out, mut produced, mut total) = (self.buf.len(), 0usize, 0usize);
            let result = BrotliDecompressStream(
                &mut avail_in,
                &mut at,
                input,
                &mut avail_out,
                &mut produced,
                &mut self.buf,
                &mut total,
                &mut self.state,
            );
            emit(&self.buf[..produced], at)?;
            match result {
                BrotliResult::NeedsMoreOutput => {}
                BrotliResult::NeedsMoreInput => return Ok(()),
                BrotliResult::ResultSuccess => self.done = true,
                BrotliResult::ResultFailure => {
                    let e = std::io::Error::new(std::io::ErrorKind::InvalidData, "Invalid Data");
                    return Err(DecodeError::Corrupt(e));
                }
            }
        }
    }
}

/// What `write_all` says of a writer that takes no more: bytes after the end of the stream.
fn write_zero() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::WriteZero,
        "failed to write whole buffer",
    )
}

impl std::fmt::Debug for ContentDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match &self.codec {
            Codec::Identity => "identity",
            Codec::Gzip(_) => "gzip",
            Codec::DeflatePending | Codec::Zlib(_) | Codec::RawDeflate(_) => "deflate",
            Codec::Brotli(_) => "br",
            Codec::Unsupported(e) => e.as_str(),
            Codec::Failed => "failed",
        };
        f.write_str(name)
    }
}

/// A flate2 writer, one `write` at a time: each decodes at most its 32 KiB buffer, handed to
/// the inner `Vec` by the next call (or the flush), so what it holds is taken after each.
macro_rules! flate_write {
    ($d:expr, $input:expr, $emit:expr) => {{
        let d = $d;
        let input: &[u8] = $input;
        let mut at = 0;
        while at < input.len() {
            let n = d.write(&input[at..]).map_err(DecodeError::Corrupt)?;
            at += n;
            let piece = std::mem::take(d.get_mut());
            $emit(&piece, at)?;
            *d.get_mut() = reuse(piece);
            if n == 0 {
                return Err(DecodeError::Corrupt(write_zero()));
            }
        }
        // Flushing hands out what this packet decoded now, not with the next packet: SSE
        // events must come with the packet that completed them.
        d.flush().map_err(DecodeError::Corrupt)?;
        let piece = std::mem::take(d.get_mut());
        $emit(&piece, at)?;
        *d.get_mut() = reuse(piece);
        Ok(())
    }};
}

/// A buffer emptied for the next piece, keeping its allocation.
fn reuse(mut piece: Vec<u8>) -> Vec<u8> {
    piece.clear();
    piece
}

impl ContentDecoder {
    /// The decoder for a `Content-Encoding` header value (the last coding applied is listed last;
    /// a single coding is what proxies and servers send in practice).
    pub(crate) fn for_encoding(value: Option<&str>) -> ContentDecoder {
        ContentDecoder {
            codec: Codec::for_encoding(value),
            credit: Credit::new(BUDGET),
            read: 0,
            out: 0,
        }
    }

    #[cfg(test)]
    fn with_budget(mut self, budget: Budget) -> Self {
        self.credit = Credit::new(budget);
        self
    }

    pub(crate) fn is_identity(&self) -> bool {
        matches!(self.codec, Codec::Identity | Codec::Unsupported(_))
    }

    /// A coding this decoder cannot undo: the body is kept as sent.
    pub(crate) fn is_unsupported(&self) -> bool {
        matches!(self.codec, Codec::Unsupported(_))
    }

    /// Decodes `input`, handing the decoded bytes to `out` piece by piece, within the body's
    /// budget and its connection's (`conn`). On failure, or at a budget, the decoder stops and
    /// says why; it then stays quiet.
    pub(crate) fn write(
        &mut self,
        input: &[u8],
        conn: &mut Credit,
        out: &mut dyn FnMut(&[u8]),
    ) -> Result<(), DecodeError> {
        let result = self.run(input, false, conn, out);
        if result.is_err() {
            self.codec = Codec::Failed;
        }
        result
    }

    /// Flushes what the decoder still holds at the end of the body.
    pub(crate) fn finish(
        &mut self,
        conn: &mut Credit,
        out: &mut dyn FnMut(&[u8]),
    ) -> Result<(), DecodeError> {
        let result = self.run(&[], true, conn, out).map_err(|e| match e {
            DecodeError::Corrupt(e) => DecodeError::EndsEarly(e),
            other => other,
        });
        if result.is_err() {
            self.codec = Codec::Failed;
        }
        result
    }

    fn run(
        &mut self,
        input: &[u8],
        end: bool,
        conn: &mut Credit,
        out: &mut dyn FnMut(&[u8]),
    ) -> Result<(), DecodeError> {
        if let Codec::DeflatePending = self.codec {
            let Some(&first) = input.first() else {
                return Ok(());
            };
            // RFC 9110 says "deflate" is zlib-wrapped, but some servers send raw deflate: a zlib
            // stream starts with a CMF byte whose method nibble is 8.
            self.codec = if first & 0x0f == 8 {
                Codec::Zlib(Box::new(flate2::write::ZlibDecoder::new(Vec::new())))
            } else {
                Codec::RawDeflate(Box::new(flate2::write::DeflateDecoder::new(Vec::new())))
            };
        }
        if self.is_identity() {
            out(input);
            return Ok(());
        }
        let read0 = self.read;
        let (read, produced, credit) = (&mut self.read, &mut self.out, &mut self.credit);
        let mut emit = |piece: &[u8], at: usize| -> Result<(), DecodeError> {
            let now = read0 + at as u64;
            let (more_read, more_out) = (now.saturating_sub(*read), piece.len() as u64);
            *read = now;
            *produced += more_out;
            out(piece);
            let body_ok = credit.spend(more_read, more_out) && *produced <= MAX_DECODED;
            let conn_ok = conn.spend(more_read, more_out);
            match (body_ok, conn_ok) {
                (true, true) => Ok(()),
                (false, _) => Err(DecodeError::Bomb {
                    decoded: *produced,
                    read: *read,
                }),
                (true, false) => Err(DecodeError::ConnectionBudget {
                    decoded: *produced,
                    read: *read,
                }),
            }
        };
        use std::io::Write;
        match &mut self.codec {
            Codec::Identity | Codec::Unsupported(_) | Codec::Failed | Codec::DeflatePending => {
                Ok(())
            }
            Codec::Gzip(d) if end => finish_flate(d.try_finish(), d.get_mut(), &mut emit),
            Codec::Zlib(d) if end => finish_flate(d.try_finish(), d.get_mut(), &mut emit),
            Codec::RawDeflate(d) if end => finish_flate(d.try_finish(), d.get_mut(), &mut emit),
            Codec::Gzip(d) => flate_write!(d, input, emit),
            Codec::Zlib(d) => flate_write!(d, input, emit),
            Codec::RawDeflate(d) => flate_write!(d, input, emit),
            Codec::Brotli(b) if end && !b.done => Err(DecodeError::EndsEarly(
                std::io::ErrorKind::UnexpectedEof.into(),
            )),
            Codec::Brotli(_) if end => Ok(()),
            Codec::Brotli(b) => b.write(input, &mut emit),
        }
    }
}

/// The end of a deflate body: what `try_finish` flushed, or why the stream is incomplete.
fn finish_flate(
    result: std::io::Result<()>,
    held: &mut Vec<u8>,
    emit: &mut Emit<'_>,
) -> Result<(), DecodeError> {
    result.map_err(DecodeError::Corrupt)?;
    let piece = std::mem::take(held);
    emit(&piece, 0)
}

impl Codec {
    fn for_encoding(value: Option<&str>) -> Codec {
        let Some(value) = value else {
            return Codec::Identity;
        };
        let codings: Vec<String> = value
            .split(',')
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity")
            .collect();
        match codings.as_slice() {
            [] => Codec::Identity,
            [one] => match one.as_str() {
                "gzip" | "x-gzip" => {
                    Codec::Gzip(Box::new(flate2::write::MultiGzDecoder::new(Vec::new())))
                }
                "deflate" => Codec::DeflatePending,
                "br" => Codec::Brotli(Box::new(BrotliStream::new())),
                other => Codec::Unsupported(other.to_string()),
            },
            _ => Codec::Unsupported(value.to_string()),
        }
    }
}

/// Why a body could not be content-decoded. The text is shown to users (as anomaly text and as
/// the body's decode error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("cannot decode the body: {0}")]
    Corrupt(std::io::Error),
    #[error("the compressed body ends early: {0}")]
    EndsEarly(std::io::Error),
    #[error(
        "decoding stopped at {decoded} bytes decoded from {read} compressed bytes (past the \
         decoding budget: the first MiB, then 1024 bytes per compressed byte with at most 24 MiB \
         saved, a decompression bomb, or 4 GiB in all); the rest of the body is not decoded"
    )]
    Bomb { decoded: u64, read: u64 },
    #[error(
        "decoding stopped at {decoded} bytes decoded from {read} compressed bytes: the bodies \
         of this connection used its decoding budget (24 MiB, then 64 bytes per compressed \
         byte); the rest of the body is not decoded"
    )]
    ConnectionBudget { decoded: u64, read: u64 },
    #[error(
        "the event stream yielded more than {max} events from one packet; the rest of it is not \
         read"
    )]
    EventsPerPacket { max: u64 },
    #[error(
        "the brotli body asks for a window of {} KiB while other bodies in progress hold {} KiB \
         of windows (at most {} MiB together); it is not decoded",
        window >> 10, held >> 10, max >> 20
    )]
    WindowsHeld { window: u64, held: u64, max: u64 },
}

impl DecodeError {
    /// The anomaly it is.
    pub(crate) fn kind(&self) -> AnomalyKind {
        match self {
            DecodeError::Corrupt(_) => AnomalyKind::BodyNotDecodable,
            DecodeError::EndsEarly(_) => AnomalyKind::CompressedBodyEndsEarly,
            DecodeError::Bomb { .. } => AnomalyKind::DecodingBudgetReached,
            DecodeError::ConnectionBudget { .. } => AnomalyKind::ConnectionDecodingBudgetReached,
            DecodeError::EventsPerPacket { .. } => AnomalyKind::SseEventsPerPacket,
            DecodeError::WindowsHeld { .. } => AnomalyKind::BrotliWindowsHeld,
        }
    }

    /// Decoding stopped at a budget, the body's or its connection's (the body was not
    /// damaged, only too large to decode).
    pub(crate) fn is_bomb(&self) -> bool {
        matches!(
            self,
            DecodeError::Bomb { .. } | DecodeError::ConnectionBudget { .. }
        )
    }

    /// Decoding stopped at the connection's budget.
    pub(crate) fn is_connection_budget(&self) -> bool {
        matches!(self, DecodeError::ConnectionBudget { .. })
    }

    /// Decoding was refused for the windows other bodies hold.
    pub(crate) fn is_windows_held(&self) -> bool {
        matches!(self, DecodeError::WindowsHeld { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl ContentDecoder {
        fn write_to(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
            self.write(input, &mut Credit::default(), &mut |p| {
                out.extend_from_slice(p)
            })
        }

        fn finish_to(&mut self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
            self.finish(&mut Credit::default(), &mut |p| out.extend_from_slice(p))
        }
    }

    fn dechunk(chunks: &[&[u8]]) -> (Vec<u8>, bool, usize) {
        let mut d = ChunkedDecoder::new();
        let mut body = Vec::new();
        let mut ended = false;
        let mut leftover = 0;
        for c in chunks {
            let mut out = Vec::new();
            let used = d.decode(c, &mut out).unwrap();
            for o in out {
                match o {
                    ChunkOutput::Data(b) => body.extend_from_slice(b),
                    ChunkOutput::End => ended = true,
                }
            }
            leftover += c.len() - used;
        }
        (body, ended, leftover)
    }

    #[test]
    fn decodes_chunks_with_extensions_and_trailers() {
        let wire = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Checksum: abc\r\n\r\nGET";
        let (body, ended, leftover) = dechunk(&[wire]);
        assert_eq!(body, b"Wikipedia");
        assert!(ended);
        assert_eq!(leftover, 3, "the next message is not consumed");
        // One byte at a time gives the same result.
        let bytes: Vec<&[u8]> = wire[..wire.len() - 3].chunks(1).collect();
        let (body, ended, _) = dechunk(&bytes);
        assert_eq!(body, b"Wikipedia");
        assert!(ended);
    }

    #[test]
    fn accepts_bare_lf_and_rejects_garbage() {
        let (body, ended, _) = dechunk(&[b"3\nabc\n0\n\n"]);
        assert_eq!(body, b"abc");
        assert!(ended);
        let mut d = ChunkedDecoder::new();
        assert!(d.decode(b"zz\r\n", &mut Vec::new()).is_err());
        let mut d = ChunkedDecoder::new();
        let err = d
            .decode(b"3\r\nabcXHTTP/1.1 200", &mut Vec::new())
            .unwrap_err();
        assert_eq!(
            err.0, 6,
            "stops at the bad byte; the rest is for the caller"
        );
    }

    #[test]
    fn error_texts_stay_as_users_see_them() {
        let text = |wire: &[u8], after_gap: bool| {
            let mut d = ChunkedDecoder::new();
            if after_gap {
                d.after_gap();
            }
            d.decode(wire, &mut Vec::new()).unwrap_err().1.to_string()
        };
        let long_line = [b'1'; 5000];
        let mut long_line_ended = long_line.to_vec();
        long_line_ended.push(b'\n');
        let cases: [(&[u8], bool, &str); 6] = [
            (b"zz;x\r\n", false, "invalid chunk size \"zz;x\""),
            (
                b"3\r\nabcX",
                false,
                "chunk data not followed by CRLF (byte 0x58)",
            ),
            (&long_line, false, "chunk-size or trailer line too long"),
            (b"xyz\r\n", true, "no chunk boundary after the capture gap"),
            // After a gap, a line cut by the end of the input is no boundary; a whole line that
            // is too long is reported as anywhere else.
            (&long_line, true, "no chunk boundary after the capture gap"),
            (
                &long_line_ended,
                true,
                "chunk-size or trailer line too long",
            ),
        ];
        for (wire, after_gap, want) in cases {
            assert_eq!(text(wire, after_gap), want);
        }
        let mut d = ContentDecoder::for_encoding(Some("gzip"));
        let err = d
            .write_to(b"this is not gzip at all", &mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().starts_with("cannot decode the body: "));
        let mut d = ContentDecoder::for_encoding(Some("gzip"));
        d.write_to(&[0x1f, 0x8b], &mut Vec::new()).unwrap();
        let err = d.finish_to(&mut Vec::new()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the compressed body ends early: ")
        );
    }

    #[test]
    fn decodes_gzip_deflate_and_brotli() {
        use std::io::Write;
        let text = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".repeat(20);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zl.write_all(&text).unwrap();
        let mut raw =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        raw.write_all(&text).unwrap();
        for (enc, bytes) in [
            ("gzip", gz.finish().unwrap()),
            ("deflate", zl.finish().unwrap()),
            ("deflate", raw.finish().unwrap()),
        ] {
            let mut d = ContentDecoder::for_encoding(Some(enc));
            let mut out = Vec::new();
            for piece in bytes.chunks(7) {
                d.write_to(piece, &mut out).unwrap();
            }
            d.finish_to(&mut out).unwrap();
            assert_eq!(out, text, "{enc}");
        }
        // A small brotli stream of "hello" (quality 0, from the reference encoder).
        let br: &[u8] = &[0x0b, 0x02, 0x80, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x03];
        let mut d = ContentDecoder::for_encoding(Some("br"));
        let mut out = Vec::new();
        d.write_to(br, &mut out).unwrap();
        d.finish_to(&mut out).unwrap();
        assert_eq!(out, b"hello");
    }

    #[test]
    fn bad_compressed_data_is_reported_not_fatal() {
        let mut d = ContentDecoder::for_encoding(Some("gzip"));
        let mut out = Vec::new();
        let err = d.write_to(b"this is not gzip at all", &mut out);
        assert!(err.is_err());
        assert!(
            d.write_to(b"more", &mut out).is_ok(),
            "a failed decoder stays quiet"
        );
        assert!(matches!(
            ContentDecoder::for_encoding(Some("zstd")).codec,
            Codec::Unsupported(_)
        ));
    }

    fn brotli_of(data: &[u8], lgwin: u32) -> Vec<u8> {
        use std::io::Write;
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, lgwin);
            w.write_all(data).unwrap();
        }
        out
    }

    #[test]
    fn the_window_a_brotli_stream_asks_for_is_read_from_its_first_byte() {
        for lgwin in 10..=24 {
            let first = brotli_of(b"hello, window", lgwin)[0];
            assert_eq!(brotli_window(first), Some(1 << lgwin), "lgwin {lgwin}");
        }
    }

    #[test]
    fn brotli_windows_held_together_are_capped() {
        let body = brotli_of(&[7u8; 100_000], 24);
        let open = |n: usize| -> Vec<Result<ContentDecoder, DecodeError>> {
            (0..n)
                .map(|_| {
                    let mut d = ContentDecoder::for_encoding(Some("br"));
                    d.write_to(&body[..body.len() / 2], &mut Vec::new())
                        .map(|()| d)
                })
                .collect()
        };
        let fit = (crate::budget::MAX_WINDOWS_HELD >> 24) as usize;
        let mut held: Vec<ContentDecoder> = open(fit).into_iter().map(Result::unwrap).collect();
        let refused = open(1).pop().unwrap().expect_err("past the cap");
        assert!(
            matches!(refused, DecodeError::WindowsHeld { .. }),
            "{refused}"
        );
        // A body that ends gives its window back.
        held.pop();
        assert!(open(1).pop().unwrap().is_ok());
        drop(held);
        assert_eq!(budget::current().windows_held, 0);
    }

    /// `len` zero bytes, compressed by `enc` as a body's bytes on the wire.
    pub(crate) fn bomb(enc: &str, len: usize) -> Vec<u8> {
        use std::io::Write;
        let zeros = vec![0u8; 1 << 20];
        let mut out = Vec::new();
        {
            let mut w: Box<dyn Write + '_> = match enc {
                "gzip" => Box::new(flate2::write::GzEncoder::new(
                    &mut out,
                    flate2::Compression::best(),
                )),
                "deflate" => Box::new(flate2::write::ZlibEncoder::new(
                    &mut out,
                    flate2::Compression::best(),
                )),
                "br" => Box::new(brotli::CompressorWriter::new(&mut out, 1 << 16, 5, 22)),
                _ => unreachable!(),
            };
            for _ in 0..len >> 20 {
                w.write_all(&zeros).unwrap();
            }
        }
        out
    }

    #[test]
    fn a_bomb_stops_at_the_budget_in_small_pieces() {
        for (enc, len) in [
            ("br", 1usize << 30),
            ("gzip", 256 << 20),
            ("deflate", 256 << 20),
        ] {
            let wire = bomb(enc, len);
            let mut d = ContentDecoder::for_encoding(Some(enc));
            let (mut total, mut largest, mut err) = (0u64, 0usize, None);
            // Fed as 64 KiB segments: no piece handed out may be larger than PIECE.
            for seg in wire.chunks(64 << 10) {
                let r = d.write(seg, &mut Credit::new(BUDGET), &mut |p| {
                    total += p.len() as u64;
                    largest = largest.max(p.len());
                });
                if let Err(e) = r {
                    err = Some(e);
                    break;
                }
            }
            let err = err.unwrap_or_else(|| panic!("{enc}: a {len}-byte bomb decoded whole"));
            assert!(err.is_bomb(), "{enc}: {err}");
            // A flush hands out the decoder's buffer and what its window still owed.
            assert!(largest <= 2 * PIECE, "{enc}: a {largest}-byte piece");
            let bound = BUDGET.start + (BUDGET.ratio * wire.len() as u64) + 2 * PIECE as u64;
            assert!(
                total <= bound,
                "{enc}: {total} bytes decoded from {}",
                wire.len()
            );
            assert!(total > BUDGET.start, "{enc}");
        }
    }

    #[test]
    fn large_real_bodies_decode_whole() {
        // 8 MiB of JSON-like text compresses by tens, not a thousand, to one.
        let mut text = Vec::new();
        let mut n = 0u64;
        while text.len() < 8 << 20 {
            text.extend_from_slice(
                format!(r#"{{"row":{n},"name":"item-{}"}},"#, n * 7919 % 100_003).as_bytes(),
            );
            n += 1;
        }
        for enc in ["gzip", "br"] {
            let mut wire = Vec::new();
            {
                use std::io::Write;
                let mut w: Box<dyn Write + '_> = match enc {
                    "gzip" => Box::new(flate2::write::GzEncoder::new(
                        &mut wire,
                        flate2::Compression::default(),
                    )),
                    _ => Box::new(brotli::CompressorWriter::new(&mut wire, 1 << 16, 5, 22)),
                };
                w.write_all(&text).unwrap();
            }
            let mut d = ContentDecoder::for_encoding(Some(enc));
            let mut out = Vec::new();
            for seg in wire.chunks(64 << 10) {
                d.write_to(seg, &mut out).unwrap();
            }
            d.finish_to(&mut out).unwrap();
            assert!(out == text, "{enc}: {} of {} bytes", out.len(), text.len());
        }
    }

    #[test]
    fn a_smaller_budget_is_the_one_applied() {
        let wire = bomb("gzip", 8 << 20);
        let budget = Budget {
            start: 1 << 16,
            ratio: 0,
            cap: 1 << 20,
        };
        let mut d = ContentDecoder::for_encoding(Some("gzip")).with_budget(budget);
        let mut total = 0u64;
        let err = d
            .write(&wire, &mut Credit::default(), &mut |p| {
                total += p.len() as u64
            })
            .unwrap_err();
        assert!(err.is_bomb() && !err.is_connection_budget());
        assert!(
            total > 1 << 16 && total <= (1 << 16) + PIECE as u64,
            "{total}"
        );
    }

    #[test]
    fn credit_saved_at_a_low_ratio_is_capped() {
        let mut c = Credit::new(Budget {
            start: 10,
            ratio: 4,
            cap: 100,
        });
        // 4,010 bytes earned, 100 held: one packet cannot decode what the body saved.
        assert!(c.spend(1000, 0));
        assert!(c.spend(0, 100));
        assert!(!c.spend(0, 1));
        assert!(c.spend(1, 4));
    }

    #[test]
    fn bodies_of_one_connection_share_its_budget() {
        // Each body is within its own budget (1 MiB at any ratio); 40 of them are not within
        // their connection's.
        let wire = bomb("gzip", 1 << 20);
        let mut conn = Credit::default();
        let mut decoded = 0u64;
        let mut stopped = None;
        for i in 0..40 {
            let mut d = ContentDecoder::for_encoding(Some("gzip"));
            let r = d.write(&wire, &mut conn, &mut |p| decoded += p.len() as u64);
            if let Err(e) = r {
                assert!(e.is_connection_budget(), "{e}");
                stopped = Some(i);
                break;
            }
        }
        let bound = CONN_BUDGET.start + CONN_BUDGET.ratio * 40 * wire.len() as u64;
        assert!(
            stopped.is_some() && decoded <= bound + PIECE as u64,
            "{decoded}"
        );
    }
}
