//! Mid-session fallbacks as a capture shows them: the client abandoned a POST whose response
//! had not answered its request, then opened a GET event stream without `Last-Event-ID` (the
//! transport's way back to the server's messages). Messages of the abandoned request arriving on
//! the new stream confirm it. Fallbacks an input shows only by its times are `inferred`'s; those
//! it shows by where the request's messages went, `moved`'s.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::inferred::inferred_fallbacks;
use super::moved::moved_fallbacks;
use crate::jsonrpc::{Kind, Message, RequestId};
use crate::model::{Fallback, Seq, Session, Stream, StreamIdx, StreamTransport};
use mcpf_model::WireSet;

/// Mid-session fallback: the client abandoned a POST whose response did not arrive, then opened a
/// GET event stream without `Last-Event-ID`.
pub(super) fn detect_fallbacks(s: &mut Session) {
    let mut found = observed_fallbacks(s);
    let moved = moved_fallbacks(s, &found);
    found.extend(moved);
    let (inferred, ambiguous) = inferred_fallbacks(s, &found);
    found.extend(inferred);
    if let Some(lack) = ambiguous {
        s.lacks.push(lack);
    }
    s.fallbacks.extend(found);
    let mut fallbacks = std::mem::take(&mut s.fallbacks);
    fallbacks.sort_by_key(|f| s.seq(f.mark));
    s.fallbacks = fallbacks;
}

/// The fallbacks a capture shows: each GET event stream opened without `Last-Event-ID` after a
/// POST the client abandoned, each POST replaced once.
fn observed_fallbacks(s: &Session) -> Vec<Fallback> {
    let used: HashSet<StreamIdx> = s
        .fallbacks
        .iter()
        .filter_map(|f| f.abandoned_stream)
        .collect();
    // What does not depend on the GET stream is worked out once per stream, not per pair.
    let mut abandoned = abandoned_posts(s, &used);
    let resumed = first_resumes(s);
    let mut found = Vec::new();
    for g in 0..s.streams.len() {
        let get = &s.streams[g];
        if get.transport != StreamTransport::Get
            || get.resume.is_some()
            || get.status.is_some_and(|st| !(200..300).contains(&st))
        {
            continue;
        }
        let Some(p) = replaced_post(s, &abandoned, &resumed, g) else {
            continue;
        };
        found.push(observed_fallback(p, get, g));
        abandoned.remove(&p.idx);
    }
    found
}

/// The abandoned POST the GET stream `g` replaced: of those that ended before it opened (or
/// within [`TOLERANCE_NS`] after) and were not resumed first, the last to end.
fn replaced_post<'s>(
    s: &'s Session,
    abandoned: &BTreeSet<StreamIdx>,
    resumed: &HashMap<StreamIdx, Seq>,
    g: StreamIdx,
) -> Option<&'s Stream> {
    let get = &s.streams[g];
    abandoned
        .range(..g)
        .rev()
        .map(|&p| &s.streams[p])
        .filter(|p| {
            resumed.get(&p.idx).is_none_or(|&at| at > s.seq(get.opened))
                && p.ended.is_some_and(|end| {
                    s.seq(end) <= s.seq(get.opened)
                        || end.time.0 <= get.opened.time.0 + TOLERANCE_NS
                })
        })
        .max_by_key(|p| p.ended.map(|e| s.seq(e)))
}

/// The fallback from the abandoned POST `p` to the GET stream `get` (stream `g`), with what the
/// POST got before it was abandoned and whether the GET carried its request's messages.
fn observed_fallback(p: &Stream, get: &Stream, g: StreamIdx) -> Fallback {
    let request = p.requests().next();
    let request_id = request.and_then(|m| m.id.clone());
    let abandoned_at = p.ended.unwrap_or(p.opened);
    let waited = abandoned_at.time.seconds_since(p.opened.time);
    let what = match (request.and_then(|m| m.method.as_deref()), &request_id) {
        (Some(method), Some(id)) => format!("POST {method} #{}", id.label()),
        _ => "POST".to_string(),
    };
    let got = if p.response_mark.is_some() {
        "part of the response"
    } else {
        "no response bytes"
    };
    // Messages of the abandoned request arriving on the new stream confirm the fallback.
    let confirmed = request.is_some_and(|r| carries_messages_of(get, r));
    let after = if p.end_time_unknown {
        "(when, the input does not say: its times stop at the request's sending)".to_string()
    } else {
        format!("after {waited:.1} s")
    };
    Fallback {
        mark: get.opened,
        from: "post".into(),
        to: "get".into(),
        trigger: format!("{what} abandoned by the client {after} with {got}"),
        request_id,
        abandoned_stream: Some(p.idx),
        to_stream: g,
        confirmed,
        inferred: false,
        frames: vec![p.opened, abandoned_at, get.opened],
    }
}

/// The POST streams the client abandoned before they answered its request, not yet the
/// abandoned stream of a fallback: each is that of one fallback at most, and is taken out once
/// used.
fn abandoned_posts(s: &Session, used: &HashSet<StreamIdx>) -> BTreeSet<StreamIdx> {
    s.streams
        .iter()
        .filter(|p| {
            !used.contains(&p.idx)
                && p.transport == StreamTransport::Post
                && (p.requests().next().is_some() || p.body_unknown || p.gap)
                && p.abandoned_by_client()
                // With bytes missing, the answer may have come before the client left; not
                // when a snap length cut them and no response byte came (a snap length
                // shortens packets, it never hides one).
                && (!p.gap || (p.cut_by_snaplen_only() && p.response_mark.is_none()))
                && !answered_on(p)
        })
        .map(|p| p.idx)
        .collect()
}

/// Stream → when a resume of it was first opened.
fn first_resumes(s: &Session) -> HashMap<StreamIdx, Seq> {
    let mut resumed: HashMap<StreamIdx, Seq> = HashMap::default();
    for r in &s.streams {
        if let Some(c) = r.resume.as_ref().and_then(|x| x.continues) {
            let at = s.seq(r.opened);
            resumed
                .entry(c)
                .and_modify(|q| *q = (*q).min(at))
                .or_insert(at);
        }
    }
    resumed
}

/// Every request of a POST stream was answered on it before it ended: a client that closes such
/// a stream has what it waited for (the Python SDK closes it at once), and the standalone GET
/// every SDK opens next is ordinary, not a fallback.
pub(super) fn answered_on(p: &Stream) -> bool {
    let answered: WireSet<&RequestId> = p
        .response_messages
        .iter()
        .chain(p.events.iter().flat_map(|e| e.messages.iter()))
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        .filter_map(|m| m.id.as_ref())
        .collect();
    let mut ids = p.requests().filter_map(|m| m.id.as_ref()).peekable();
    ids.peek().is_some() && ids.all(|id| answered.contains(id))
}

/// `g` carried a progress notification with the request's token, or its answer.
pub(super) fn carries_messages_of(g: &Stream, request: &Message) -> bool {
    let token = request.mcp.progress_token.as_ref();
    let id = request.id.as_ref();
    g.events.iter().flat_map(|e| e.messages.iter()).any(|m| {
        (m.kind == Kind::Notification && token.is_some() && m.mcp.progress_token.as_ref() == token)
            || (matches!(m.kind, Kind::Response | Kind::Error)
                && id.is_some()
                && m.id.as_ref() == id)
    })
}

/// A client abandons a stream and opens the fallback in quick succession; the connection close
/// that reports the abandonment may be captured a moment after the new request.
const TOLERANCE_NS: i64 = 2_000_000_000;
