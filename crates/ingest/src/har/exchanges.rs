//! The events of each HAR entry, pushed onto the input's timeline: a `Request` at the
//! request's first byte, then a `NoResponse` at the end, or a `ResponseHead` at the first byte
//! of the response, its SSE events and a `ResponseEnd` at its end.

use mcpf_http::sse::{SseEvent, SseStats};
use mcpf_http::{
    Body, ExchangeId, HttpEvent, HttpSink, Outcome, Request, ResponseEnd, ResponseHead,
};
use mcpf_model::{Capabilities, Direction, FrameRef, InputId, Mark, Timestamp};

use super::CLIENT_UNKNOWN;
use super::bodies::Content;
use super::entries::{Entry, Resp};
use super::sse::{messages_to_events, spread_events};
use crate::timeline::Timeline;

/// What the entries left unknown, counted for what the file lacks.
#[derive(Default)]
pub(super) struct Holes {
    pub(super) clamped_messages: u64,
    pub(super) unknown_streams: u64,
    pub(super) empty_streams_unknown: u64,
    pub(super) unknown_plain_bodies: u64,
    /// Entries without a `response` object (nor an `_error`): their numbers, the first few,
    /// and how many.
    pub(super) without_response: Vec<u64>,
    pub(super) without_response_count: u64,
}

/// Pushes the events of entries (each under its rank, so they may come in any order); the
/// bodies move into the events, so an entry is held once.
pub(super) struct Exchanges<'a> {
    caps: &'a mut Capabilities,
    input: InputId,
    /// Some entry of the file keeps an event stream's bytes or messages.
    stores_streams: bool,
    holes: Holes,
}

impl<'a> Exchanges<'a> {
    pub(super) fn new(caps: &'a mut Capabilities, input: InputId, stores_streams: bool) -> Self {
        Exchanges {
            caps,
            input,
            stores_streams,
            holes: Holes::default(),
        }
    }

    /// Puts the events of entry `e` in `timeline` (which hands the earliest to `sink` past
    /// what it may hold).
    pub(super) fn entry(
        &mut self,
        timeline: &mut Timeline,
        e: &mut Entry,
        id: ExchangeId,
        sink: &mut impl HttpSink,
    ) {
        let frame = FrameRef::new(self.input, e.number);
        let mark = |time: Timestamp| Mark { time, frame };
        self.caps.exchanges += 1;
        self.caps.request_bodies.add(!e.req_body.unknown);
        timeline.push(
            e.req_first,
            HttpEvent::Request(Box::new(Request {
                exchange: id,
                client: CLIENT_UNKNOWN,
                server: e.server,
                method: e.method.clone(),
                target: e.target.clone(),
                version: e.version,
                headers: std::mem::take(&mut e.req_headers),
                body: std::mem::take(&mut e.req_body),
                first: mark(e.req_first),
                last: mark(e.req_last),
                outcome: Outcome::Complete,
                head_complete: true,
            })),
        );
        let ending = e
            .error
            .as_deref()
            .map(error_outcome)
            .unwrap_or((Outcome::Complete, None));
        match e.response.take() {
            None => {
                let (outcome, closed_by) = ending;
                let outcome = if outcome == Outcome::Complete {
                    Outcome::ClosedEarly
                } else {
                    outcome
                };
                // No `response` and no `_error`: the exporter recorded nothing of how it ended.
                let unknown = e.response_missing && e.error.is_none();
                if unknown {
                    self.holes.without_response_count += 1;
                    if self.holes.without_response.len() < 10 {
                        self.holes.without_response.push(e.number);
                    }
                }
                timeline.push(
                    e.end,
                    HttpEvent::NoResponse {
                        exchange: id,
                        outcome,
                        closed_by,
                        mark: mark(e.end),
                        unknown,
                        // Timings that stop at the request's sending (mitmproxy's for a client
                        // that went away) say nothing of when it went.
                        when_unknown: e.end <= e.req_last,
                        gap_bytes: 0,
                        snaplen_bytes: 0,
                    },
                );
            }
            Some(mut r) => {
                let ending = if r.whole {
                    (Outcome::Complete, None)
                } else {
                    ending
                };
                self.response(timeline, e, &mut r, id, ending, sink)
            }
        }
    }

    /// The response's head, its events and its end (`ending` is how the entry's `_error` says
    /// it ended).
    fn response(
        &mut self,
        timeline: &mut Timeline,
        e: &Entry,
        r: &mut Resp,
        id: ExchangeId,
        (outcome, closed_by): (Outcome, Option<Direction>),
        sink: &mut impl HttpSink,
    ) {
        let frame = FrameRef::new(self.input, e.number);
        let mark = |time: Timestamp| Mark { time, frame };
        timeline.push(
            e.head,
            HttpEvent::ResponseHead(Box::new(ResponseHead {
                exchange: id,
                status: r.status,
                reason: r.reason.clone(),
                version: r.version,
                headers: r.headers.clone(),
                interim: Vec::new(),
                first: mark(e.head),
                event_stream: r.event_stream,
                head_complete: true,
                upstream: None,
            })),
        );
        // An empty event stream is a hole when this writer stores no stream bytes.
        let mut known = matches!(r.content, Content::Known(_));
        // So is one whose times stop at the sending: the writer never had its bytes.
        if r.event_stream && r.empty_text && (!self.stores_streams || e.end_unknown) {
            known = false;
            self.holes.empty_streams_unknown += 1;
        }
        let mut body = Body {
            wire_bytes: r.wire_size.or(r.size).unwrap_or(0),
            decoded_bytes: r.size.unwrap_or(0),
            content_encoding: r.headers.get("content-encoding").map(str::to_string),
            chunked: r.headers.has_token("transfer-encoding", "chunked"),
            decode_error: r.decode_error.clone(),
            not_decoded: r.decode_error.is_some(),
            truncated: r.text_cut,
            unknown: !known,
            ..Body::default()
        };
        let mut sse = None;
        if r.event_stream {
            sse = self.stream(timeline, e, r, known, id, &mut body, sink);
        } else if let Content::Known(bytes) = &mut r.content {
            body.decoded_bytes = bytes.len() as u64;
            if r.wire_size.is_none() && r.size.is_none() {
                body.wire_bytes = bytes.len() as u64;
            }
            body.data = std::mem::take(bytes);
        }
        self.caps.response_bodies.add(!body.unknown);
        if body.unknown && !r.event_stream {
            self.holes.unknown_plain_bodies += 1;
        }
        timeline.push(
            e.end,
            HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                exchange: id,
                body,
                last: mark(e.end),
                outcome,
                closed_by,
                sse,
                when_unknown: e.end_unknown && !r.whole,
            })),
        );
    }

    /// The SSE events of an event-stream response: from `_eventSourceMessages` when the entry
    /// has them (or the body is unknown), else parsed from the body, each put in the timeline
    /// as it is parsed.
    #[allow(clippy::too_many_arguments)]
    fn stream(
        &mut self,
        timeline: &mut Timeline,
        e: &Entry,
        r: &Resp,
        known: bool,
        id: ExchangeId,
        body: &mut Body,
        sink: &mut impl HttpSink,
    ) -> Option<SseStats> {
        let frame = FrameRef::new(self.input, e.number);
        let mut put = |ev: SseEvent| {
            timeline.push(
                ev.mark.time,
                HttpEvent::SseEvent {
                    exchange: id,
                    event: ev,
                },
            );
            // One entry's events are held within the timeline's window too.
            timeline.trim(sink);
        };
        let stats = match (&e.messages, &r.content) {
            (Some(msgs), _) if !msgs.is_empty() || !known => {
                let (events, clamped) = messages_to_events(msgs, e.head, e.end, frame);
                self.holes.clamped_messages += clamped;
                let stats = SseStats {
                    events: events.len() as u64,
                    ..SseStats::default()
                };
                self.caps.sse_times_estimated |= events.iter().any(|ev| ev.estimated);
                events.into_iter().for_each(&mut put);
                stats
            }
            (_, Content::Known(bytes)) if known => {
                body.decoded_bytes = bytes.len() as u64;
                let stats = spread_events(bytes, e.head, e.end, frame, &mut put);
                self.caps.sse_times_estimated |= stats.events > 0;
                stats
            }
            _ => {
                self.caps.sse_streams.add(false);
                self.holes.unknown_streams += 1;
                return None;
            }
        };
        self.caps.sse_streams.add(true);
        Some(stats)
    }

    /// What the entries left unknown.
    pub(super) fn finish(self) -> Holes {
        self.holes
    }
}

/// How a HAR `_error` (Chrome `net::ERR_*`, mitmproxy messages) ended the exchange.
fn error_outcome(err: &str) -> (Outcome, Option<Direction>) {
    let e = err.to_ascii_lowercase();
    if e.contains("reset") {
        (Outcome::Reset, None)
    } else if e.contains("abort") || e.contains("cancel") || e.contains("client") {
        (Outcome::ClosedEarly, Some(Direction::ClientToServer))
    } else if e.contains("server") || e.contains("empty_response") || e.contains("closed") {
        (Outcome::ClosedEarly, Some(Direction::ServerToClient))
    } else {
        (Outcome::ClosedEarly, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_outcomes() {
        assert_eq!(error_outcome("net::ERR_CONNECTION_RESET").0, Outcome::Reset);
        assert_eq!(
            error_outcome("net::ERR_ABORTED"),
            (Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(
            error_outcome("Server disconnected."),
            (Outcome::ClosedEarly, Some(Direction::ServerToClient))
        );
    }
}
