//! A message's body read by its framing (RFC 9112 §6): which framing a head gives it, and the
//! body's bytes taken off that framing (a length, chunks, the connection's close, or the end of
//! a segment cut by the snap length) and handed, piece by piece as they come, to the message's
//! payload, which decodes them and parses an event stream (`crate::payload`).

use super::start_line::starts_request;
use super::{Connection, HttpSink, State, di};
use crate::body::{ChunkOutput, ChunkedDecoder, ChunkedError, Framing};
use crate::{Headers, HttpEvent, Outcome, Problem};
use mcpf_model::{AnomalyKind, Direction, Mark};

/// Body bytes kept per message (the rest is counted, and the body marked truncated).
pub(crate) const MAX_BODY: usize = 16 << 20;

/// The most events' room a buffer of events is kept with.
const KEPT_EVENTS_ROOM: usize = 16;

impl Connection {
    /// Reads body bytes of the message in progress by its framing; returns the bytes used (none
    /// when the message ended before them: they belong to what follows).
    pub(super) fn read_body(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        let Some(msg) = self.half(dir).msg.as_mut() else {
            // Nothing to read a body for: look for the next message (a state change, so the
            // caller's loop still makes progress).
            self.half(dir).state = State::Start;
            return 0;
        };
        // Framing bytes (chunk sizes, the last chunk) end a message too.
        msg.last = mark;
        match msg.framing {
            Framing::None | Framing::Tunnel => {
                self.end_message(dir, Outcome::Complete, None, mark, sink);
                0
            }
            Framing::Length(_) => {
                let take = (msg.remaining.min(data.len() as u64)) as usize;
                msg.remaining -= take as u64;
                let done = msg.remaining == 0;
                self.step_used[di(dir)] = take as u64;
                self.body_bytes(dir, &data[..take], mark, sink);
                if done {
                    self.end_message(dir, Outcome::Complete, None, mark, sink);
                }
                take
            }
            Framing::UntilClose => {
                self.body_bytes(dir, data, mark, sink);
                data.len()
            }
            // Each call starts a segment: one that starts a request is the next message.
            Framing::UntilCut if starts_request(data) => {
                self.end_message(dir, Outcome::Gap, None, mark, sink);
                0
            }
            Framing::UntilCut => {
                msg.payload.body.unknown = false;
                self.body_bytes(dir, data, mark, sink);
                data.len()
            }
            Framing::Chunked => self.read_chunked(dir, data, mark, sink),
        }
    }

    /// Reads the chunks of a chunked body from `data`; returns the bytes used.
    fn read_chunked(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        let mut decoder = self
            .half(dir)
            .msg
            .as_mut()
            .and_then(|m| m.chunked.take())
            .unwrap_or_default();
        let (result, ended) = self.dechunk(dir, &mut decoder, data, mark, sink);
        if let Some(m) = self.half(dir).msg.as_mut() {
            m.chunked = Some(decoder);
        }
        let (Ok(used) | Err((used, _))) = &result;
        self.step_used[di(dir)] = *used as u64;
        match result {
            Ok(used) => {
                if ended {
                    self.end_message(dir, Outcome::Complete, None, mark, sink);
                }
                used
            }
            Err((used, e)) => {
                self.bad_chunked(dir, e, mark, sink);
                used
            }
        }
    }

    /// The chunked framing of the body broke (`e`): the message ends there, cut.
    fn bad_chunked(
        &mut self,
        dir: Direction,
        e: ChunkedError,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        // After a cut of the snap length, the framing ends where the next message begins: the
        // cut took only this one's bytes.
        let cut_only = self
            .half(dir)
            .msg
            .as_ref()
            .is_some_and(|m| m.gap && !m.lost);
        let problem = if cut_only {
            (
                AnomalyKind::ChunkedFramingCutBySnaplen,
                format!(
                    "chunked framing not found after a snap-length cut ({e}): message ended there"
                ),
            )
        } else {
            let what = format!("bad chunked framing: {e}; message cut");
            (AnomalyKind::BadChunkedFraming, what)
        };
        self.anomaly(problem, dir, mark, sink);
        if let Some(m) = self.half(dir).msg.as_mut() {
            m.gap = true;
        }
        // The rest of the packet may hold the next message: it is scanned from the start state
        // (and counted if skipped).
        self.end_message(dir, Outcome::Gap, None, mark, sink);
        self.half(dir).after_gap |= !cut_only;
    }

    /// Reads chunked framing from `data`, each piece of body as it comes; returns the bytes
    /// used (or those read before a framing error, and the error) and whether the body ended.
    /// The decoder is out of its message meanwhile, so that the pieces need no buffer.
    fn dechunk(
        &mut self,
        dir: Direction,
        decoder: &mut ChunkedDecoder,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> (Result<usize, (usize, ChunkedError)>, bool) {
        let mut pos = 0;
        loop {
            match decoder.next(data, &mut pos) {
                Ok(Some(ChunkOutput::Data(bytes))) => self.body_bytes(dir, bytes, mark, sink),
                Ok(Some(ChunkOutput::End)) => return (Ok(pos), true),
                Ok(None) => return (Ok(pos), false),
                Err(e) => return (Err((pos, e)), false),
            }
        }
    }

    fn body_bytes(&mut self, dir: Direction, bytes: &[u8], mark: Mark, sink: &mut impl HttpSink) {
        if bytes.is_empty() {
            return;
        }
        let half = match dir {
            Direction::ClientToServer => &mut self.req,
            Direction::ServerToClient => &mut self.resp,
        };
        let Some(msg) = half.msg.as_mut() else {
            return;
        };
        msg.last = mark;
        let failed = msg.payload.write(
            bytes,
            !msg.holed,
            mark,
            &mut self.out_events,
            &mut self.counts,
        );
        self.flush_events(dir, sink);
        if let Some(e) = failed {
            self.anomaly((e.kind(), e.to_string()), dir, mark, sink);
        }
    }

    fn flush_events(&mut self, dir: Direction, sink: &mut impl HttpSink) {
        if self.out_events.is_empty() {
            return;
        }
        let exchange = match self.half(dir).msg.as_ref() {
            Some(m) => m.exchange,
            None => return,
        };
        // The buffer is kept for the rest of the call (it is the stage's, lent, see
        // [`Connection::lend_events`]), unless a packet made it large.
        let mut events = self.take_events();
        for event in events.drain(..) {
            sink.on_http(HttpEvent::SseEvent { exchange, event });
        }
        if events.capacity() <= KEPT_EVENTS_ROOM {
            self.out_events = events;
        }
    }

    /// The events completed so far, with their buffer.
    pub(super) fn take_events(&mut self) -> Vec<crate::sse::SseEvent> {
        std::mem::take(&mut self.out_events)
    }
}

/// RFC 9112 §6.3 for requests: chunked, else Content-Length, else no body.
pub(super) fn request_framing(headers: &Headers) -> (Framing, Option<Problem>) {
    if headers.has("transfer-encoding") {
        let problem = headers.has("content-length").then(|| {
            let what =
                "request has both Transfer-Encoding and Content-Length (Transfer-Encoding wins)";
            (AnomalyKind::ContentLengthAndTransferEncoding, what.into())
        });
        if last_coding_is_chunked(headers) {
            return (Framing::Chunked, problem);
        }
        let what = "request Transfer-Encoding without chunked: read until close";
        let problem = (AnomalyKind::TransferEncodingNotChunked, what.into());
        return (Framing::UntilClose, Some(problem));
    }
    match content_length(headers) {
        Ok(Some(n)) => (Framing::Length(n), None),
        Ok(None) => (Framing::None, None),
        Err(e) => (Framing::None, Some((e.kind(), e.to_string()))),
    }
}

/// RFC 9112 §6.3 for responses.
pub(super) fn response_framing(
    method: &str,
    status: u16,
    headers: &Headers,
) -> (Framing, Option<Problem>) {
    if method.eq_ignore_ascii_case("HEAD")
        || status == 204
        || status == 304
        || (100..200).contains(&status) && status != 101
    {
        return (Framing::None, None);
    }
    if status == 101 || (method.eq_ignore_ascii_case("CONNECT") && (200..300).contains(&status)) {
        return (Framing::Tunnel, None);
    }
    if headers.has("transfer-encoding") {
        let problem = headers.has("content-length").then(|| {
            let what =
                "response has both Transfer-Encoding and Content-Length (Transfer-Encoding wins)";
            (AnomalyKind::ContentLengthAndTransferEncoding, what.into())
        });
        if last_coding_is_chunked(headers) {
            return (Framing::Chunked, problem);
        }
        return (Framing::UntilClose, problem);
    }
    match content_length(headers) {
        Ok(Some(n)) => (Framing::Length(n), None),
        Ok(None) => (Framing::UntilClose, None),
        Err(e) => (Framing::UntilClose, Some((e.kind(), e.to_string()))),
    }
}

fn last_coding_is_chunked(headers: &Headers) -> bool {
    headers
        .get_all("transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"))
}

/// Why a Content-Length cannot frame a message. The text is the anomaly shown to users.
#[derive(Debug, thiserror::Error)]
enum ContentLengthError<'h> {
    #[error("invalid Content-Length {0:?}")]
    Invalid(&'h str),
    #[error("conflicting Content-Length values")]
    Conflicting,
}

impl ContentLengthError<'_> {
    fn kind(&self) -> AnomalyKind {
        match self {
            ContentLengthError::Invalid(_) => AnomalyKind::ContentLengthInvalid,
            ContentLengthError::Conflicting => AnomalyKind::ContentLengthConflicting,
        }
    }
}

/// The Content-Length, if any; several equal values are accepted (RFC 9110 §8.6).
fn content_length(headers: &Headers) -> Result<Option<u64>, ContentLengthError<'_>> {
    let mut value: Option<u64> = None;
    for v in headers.get_all("content-length").flat_map(|v| v.split(',')) {
        let v = v.trim();
        let n: u64 = v.parse().map_err(|_| ContentLengthError::Invalid(v))?;
        if value.is_some_and(|old| old != n) {
            return Err(ContentLengthError::Conflicting);
        }
        value = Some(n);
    }
    Ok(value)
}
