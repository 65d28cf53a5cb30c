//! Fallbacks an input shows by where a request's messages went: a HAR written by the proxy that
//! held the response (mitmproxy buffering an event stream records it as `200` with empty
//! content and times that stop at the request's sending) does not say the client gave the POST
//! up, but the request's own progress or answer arriving on a GET stream the client opened
//! afterwards, without `Last-Event-ID`, says where the client went to read them.

use rustc_hash::FxHashSet as HashSet;

use super::fallbacks::{answered_on, carries_messages_of};
use crate::jsonrpc::Message;
use crate::model::{Fallback, Session, Stream, StreamIdx, StreamTransport};

/// Fallbacks shown by the request's messages: a POST whose response holds no event, its
/// content not recorded or its end not known, and the first GET event stream opened after it
/// without `Last-Event-ID` that carries the request's progress or answer.
pub(super) fn moved_fallbacks(s: &Session, found: &[Fallback]) -> Vec<Fallback> {
    let all = || s.fallbacks.iter().chain(found);
    let posts_used: HashSet<StreamIdx> = all().filter_map(|f| f.abandoned_stream).collect();
    let mut gets_used: HashSet<StreamIdx> = all().map(|f| f.to_stream).collect();
    let mut out = Vec::new();
    for p in s.streams.iter().filter(|p| silent_post(p, &posts_used)) {
        let Some(request) = p.requests().find(|m| m.id.is_some()) else {
            continue;
        };
        let Some(get) = s.streams.iter().find(|g| {
            !gets_used.contains(&g.idx)
                && fresh_get(g)
                && s.seq(g.opened) > s.seq(p.opened)
                && carries_messages_of(g, request)
        }) else {
            continue;
        };
        gets_used.insert(get.idx);
        out.push(moved(p, request, get));
    }
    out
}

/// A POST whose response delivered nothing the input knows of, where the input cannot say how
/// it ended: what it carried was not recorded (a HAR's empty content), or its end was not.
fn silent_post(p: &Stream, used: &HashSet<StreamIdx>) -> bool {
    p.transport == StreamTransport::Post
        && !used.contains(&p.idx)
        && p.events.is_empty()
        && p.response_messages.is_empty()
        && (p.body_unknown || p.end_time_unknown)
        && !p.gap
        && !answered_on(p)
}

/// A GET event stream opened without `Last-Event-ID` and accepted.
fn fresh_get(g: &Stream) -> bool {
    g.transport == StreamTransport::Get
        && g.resume.is_none()
        && g.event_stream
        && g.status.is_some_and(|st| (200..300).contains(&st))
}

fn moved(p: &Stream, request: &Message, get: &Stream) -> Fallback {
    let what = match (request.method.as_deref(), &request.id) {
        (Some(method), Some(id)) => format!("POST {method} #{}", id.label()),
        _ => "POST".to_string(),
    };
    let recorded = match p.status {
        Some(st) => format!("recorded as {st} with no event"),
        None => "recorded with no response".to_string(),
    };
    Fallback {
        mark: get.opened,
        from: "post".into(),
        to: "get".into(),
        trigger: format!(
            "{what} ({}, {recorded}): its messages arrived on {}, the stream the client \
             opened next; inferred from where they went (the input does not record how the \
             POST ended)",
            p.label(),
            get.label()
        ),
        request_id: request.id.clone(),
        abandoned_stream: Some(p.idx),
        to_stream: get.idx,
        confirmed: true,
        inferred: true,
        frames: vec![p.opened, p.ended.unwrap_or(p.opened), get.opened],
    }
}
