//! What becomes of a message's body bytes once its framing is taken off, whatever framed them
//! (HTTP/1.1 lengths and chunks, HTTP/2 DATA frames): content decoding, then an event stream's
//! parser or the kept body, within the caps every message shares.

use super::body::{ContentDecoder, DecodeError};
use super::conn::{Counts, MAX_BODY};
use super::held::HeldBytes;
use super::shrink::{JsonShrinker, KEEP_STRING};
use super::sse::{SseEvent, SseParser};
use super::{Body, Headers, Problem};
use mcpf_model::{AnomalyKind, Mark};

#[derive(Debug)]
pub(crate) struct Payload {
    pub(crate) decoder: ContentDecoder,
    pub(crate) body: Body,
    /// Set for event streams, whose events are reported one by one instead of kept.
    pub(crate) sse: Option<SseParser>,
    shrink: Shrink,
    /// The most of its body kept: [`MAX_BODY`], or [`OTHER_TYPE_WINDOW`] for a media type that
    /// cannot carry MCP.
    limit: usize,
    /// What its body or event in progress holds against the budget of all messages.
    pub(crate) held: HeldBytes,
    /// The event stream yielded [`MAX_EVENTS_PER_PACKET`] events from one packet: the rest of
    /// it is not parsed.
    sse_cut: bool,
}

/// SSE events one packet (a TCP segment, a TLS record's share of one) may yield over all the
/// messages of its connection. The events of one packet are handed on together, each costing
/// a few hundred bytes until the session stage takes it, and a gzip body yields one `data: {}`
/// event per two compressed bytes: without a cap, one 60 KB segment made 6 million. A packet
/// of 64 KB of uncompressed events of 100 bytes yields 650, compressed 50:1 about 33,000.
pub(crate) const MAX_EVENTS_PER_PACKET: u64 = 65_536;

/// What a body of a media type that cannot carry MCP keeps: an MCP message is JSON (a POST's
/// body, a response's) or an event stream, so a body typed otherwise (a download, an upload, a
/// page) is kept only as far as a mistyped JSON-RPC message would show itself; the rest is
/// counted, not copied. Untyped bodies and any JSON type are kept up to [`MAX_BODY`].
pub(crate) const OTHER_TYPE_WINDOW: usize = 64 << 10;

/// How a body past [`MAX_BODY`] is kept.
#[derive(Debug)]
enum Shrink {
    /// Cut at the limit.
    NotJson,
    /// JSON: kept with its strings cut ([`JsonShrinker`]) once past the limit...
    Json,
    /// ... as it now is.
    Shrinking(Box<JsonShrinker>),
}

impl Payload {
    /// The payload of a message with these headers (its content coding and media type).
    pub(crate) fn new(headers: &Headers) -> Self {
        let content_encoding = headers.get("content-encoding");
        let json = |t: &str| {
            let suffix = t.len().checked_sub(5).map(|at| &t.as_bytes()[at..]);
            t.eq_ignore_ascii_case("application/json")
                || suffix.is_some_and(|s| s.eq_ignore_ascii_case(b"+json"))
        };
        let media = headers.media_type_as_sent();
        let (shrink, limit) = match media {
            // The usual MCP body: no search for what else it may be.
            Some(t) if json(t) => (Shrink::Json, MAX_BODY),
            Some(t) if !may_carry_mcp(t) => (Shrink::NotJson, OTHER_TYPE_WINDOW),
            _ => (Shrink::NotJson, MAX_BODY),
        };
        Payload {
            decoder: ContentDecoder::for_encoding(content_encoding),
            body: Body {
                content_encoding: content_encoding.map(str::to_string),
                ..Body::default()
            },
            sse: None,
            shrink,
            limit,
            held: HeldBytes::default(),
            sse_cut: false,
        }
    }

    /// Body bytes as framed on the wire (`kept`: false after a hole, when only their count and
    /// an event stream's parser, which resynchronises itself, may use them). Returns why they
    /// could not be decoded, for an anomaly, when they could not.
    pub(crate) fn write(
        &mut self,
        bytes: &[u8],
        kept: bool,
        mark: Mark,
        events: &mut Vec<SseEvent>,
        counts: &mut Counts,
    ) -> Option<DecodeError> {
        self.body.wire_bytes += bytes.len() as u64;
        if !kept && self.sse.is_none() {
            return None;
        }
        let (was_cut, before) = (self.sse_cut, events.len());
        let room = MAX_EVENTS_PER_PACKET.saturating_sub(counts.events_in_packet) as usize;
        let failed = self.write_decoded(bytes, before + room, mark, events, counts);
        counts.events_in_packet += (events.len() - before) as u64;
        if self.sse_cut && !was_cut {
            counts.sse_streams_cut_in_packet += 1;
            let e = DecodeError::EventsPerPacket {
                max: MAX_EVENTS_PER_PACKET,
            };
            self.body.truncated = true;
            self.body.not_decoded = true;
            self.body.decode_error = Some(e.to_string());
            return Some(e);
        }
        failed
    }

    /// [`Self::write`] past its checks: the bytes decoded and kept, with `room` for as many
    /// events.
    fn write_decoded(
        &mut self,
        bytes: &[u8],
        room: usize,
        mark: Mark,
        events: &mut Vec<SseEvent>,
        counts: &mut Counts,
    ) -> Option<DecodeError> {
        if self.decoder.is_identity() {
            // Nothing to decode, nothing that can fail: the bytes go straight to be kept.
            let Payload {
                body,
                sse,
                shrink,
                held,
                sse_cut,
                limit,
                ..
            } = self;
            let mut sink = Events {
                out: events,
                room,
                cut: sse_cut,
            };
            keep(body, sse, shrink, held, *limit, bytes, mark, &mut sink);
            return None;
        }
        let conn = &mut counts.decoding;
        let e = self.decode(room, mark, events, |d, out| d.write(bytes, conn, out))?;
        if e.is_bomb() {
            self.body.truncated = true;
            count_cut(&e, counts);
        }
        counts.brotli_bodies_refused += u64::from(e.is_windows_held());
        self.body.not_decoded = true;
        self.body.decode_error = Some(e.to_string());
        Some(e)
    }

    /// The end of the body (`complete`: by its own framing, with no hole): what the content
    /// decoder still holds, and the end of the event stream. Returns what a reader should be
    /// told of how it was kept, one anomaly each.
    pub(crate) fn finish(
        &mut self,
        complete: bool,
        mark: Mark,
        events: &mut Vec<SseEvent>,
        counts: &mut Counts,
    ) -> Vec<Problem> {
        let mut notes = Vec::new();
        // A coding not decoded hides only the bytes that came.
        self.body.not_decoded |= self.decoder.is_unsupported() && self.body.wire_bytes > 0;
        if complete && let Some(e) = self.finish_decoding(mark, events, counts) {
            // What the decoder still held at the end is decoded under the same budget.
            if e.is_bomb() {
                count_cut(&e, counts);
            }
            notes.push((e.kind(), e.to_string()));
        }
        if let Some(sse) = self.sse.as_mut() {
            sse.finish();
        }
        if self.limit < MAX_BODY && self.body.truncated && self.sse.is_none() {
            counts.other_type_bodies_cut += 1;
        }
        if self.held.cut {
            counts.messages_cut_by_held += 1;
            let what = format!(
                "the body or an event of this message was kept shorter than its own cap (JSON \
                 with its strings cut to {} KiB, other bytes cut): the messages in progress held \
                 the {} MiB allowed together",
                KEEP_STRING >> 10,
                crate::budget::current().max_bytes_held >> 20
            );
            notes.push((AnomalyKind::MessageCutByHeldBytes, what));
        } else if let Shrink::Shrinking(s) = &self.shrink {
            counts.json_bodies_shrunk += 1;
            let what = format!(
                "JSON body of {} bytes, over the {} MiB a message keeps: kept with every string \
                 cut to {} KiB ({} bytes dropped), so that its JSON-RPC envelope is whole",
                self.body.decoded_bytes,
                MAX_BODY >> 20,
                KEEP_STRING >> 10,
                s.dropped
            );
            notes.push((AnomalyKind::JsonBodyShrunk, what));
        }
        notes
    }

    fn finish_decoding(
        &mut self,
        mark: Mark,
        events: &mut Vec<SseEvent>,
        counts: &mut Counts,
    ) -> Option<DecodeError> {
        let conn = &mut counts.decoding;
        let e = self.decode(usize::MAX, mark, events, |d, out| d.finish(conn, out))?;
        self.body.truncated |= e.is_bomb();
        self.body.not_decoded = true;
        self.body.decode_error = Some(e.to_string());
        Some(e)
    }

    /// Runs the content decoder (`step`: a write or the finish), its output kept as [`keep`]
    /// keeps it; returns why it failed, when it did.
    fn decode(
        &mut self,
        room: usize,
        mark: Mark,
        events: &mut Vec<SseEvent>,
        step: impl FnOnce(&mut ContentDecoder, &mut dyn FnMut(&[u8])) -> Result<(), DecodeError>,
    ) -> Option<DecodeError> {
        let Payload {
            decoder,
            body,
            sse,
            shrink,
            held,
            sse_cut,
            limit,
        } = self;
        let mut sink = Events {
            out: events,
            room,
            cut: sse_cut,
        };
        let limit = *limit;
        let mut keep = |piece: &[u8]| keep(body, sse, shrink, held, limit, piece, mark, &mut sink);
        step(decoder, &mut keep).err()
    }
}

/// Whether a body of this media type may be an MCP message: any JSON type or an event stream
/// (what the transport sends), and text (a mistyped JSON body is text more often than not).
/// Read without a copy: it is asked of every message.
pub(crate) fn may_carry_mcp(media: &str) -> bool {
    // Trimmed already ([`Headers::media_type_as_sent`]).
    let t = media.as_bytes();
    let has = |part: &[u8]| t.windows(part.len()).any(|w| w.eq_ignore_ascii_case(part));
    let starts = |part: &[u8]| {
        t.get(..part.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(part))
    };
    has(b"json") || t.eq_ignore_ascii_case(b"text/event-stream") || starts(b"text/plain")
}

/// Counts a body whose decoding stopped at a budget, the body's own or its connection's.
fn count_cut(e: &DecodeError, counts: &mut Counts) {
    if e.is_connection_budget() {
        counts.bodies_past_conn_budget += 1;
    } else {
        counts.bodies_not_decoded_past_budget += 1;
    }
}

/// Where an event stream's events go: `out`, until it holds `room` of them; then the stream
/// is `cut`.
struct Events<'a> {
    out: &'a mut Vec<SseEvent>,
    room: usize,
    cut: &'a mut bool,
}

/// Takes decoded body bytes: an event stream's go to its parser, any other body is kept up to
/// [`MAX_BODY`] (the rest counted, and the body marked truncated). A JSON body past it is kept
/// shrunk: what was kept and what follows with every string cut ([`JsonShrinker`]), so that its
/// JSON-RPC envelope is still read whole.
#[inline]
#[allow(clippy::too_many_arguments)]
fn keep(
    body: &mut Body,
    sse: &mut Option<SseParser>,
    shrink: &mut Shrink,
    held: &mut HeldBytes,
    most: usize,
    decoded: &[u8],
    mark: Mark,
    events: &mut Events<'_>,
) {
    body.decoded_bytes += decoded.len() as u64;
    let allowed = held.allowed();
    if let Some(sse) = sse.as_mut() {
        if *events.cut {
            return;
        }
        sse.set_allowed(allowed);
        sse.feed(decoded, mark, events.out);
        *events.cut = events.out.len() >= events.room;
        held.set(sse.held() as u64);
        held.cut |= sse.stats.cut_by_held > 0;
        return;
    }
    let limit = most.min(allowed);
    let room = limit.saturating_sub(body.data.len());
    held.cut |= decoded.len() > room && allowed < most;
    match shrink {
        Shrink::Json if decoded.len() > room => {
            let mut s = Box::new(JsonShrinker::default());
            let head = std::mem::take(&mut body.data);
            s.feed(&head, &mut body.data);
            s.feed(decoded, &mut body.data);
            *shrink = Shrink::Shrinking(s);
            body.truncated = true;
        }
        Shrink::Shrinking(s) => s.feed(decoded, &mut body.data),
        _ => {
            body.data
                .extend_from_slice(&decoded[..decoded.len().min(room)]);
            body.truncated |= decoded.len() > room;
        }
    }
    // Shrunk, it may still be too large (many strings, or none): then it is cut.
    body.data.truncate(limit);
    held.set(body.data.len() as u64);
}
