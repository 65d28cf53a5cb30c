//! Per-session reasoning that needs the whole session: stream order, the event-ID scheme,
//! mid-session fallbacks, which stream each resume continues, and the namespace that minted every
//! event.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::ids;
use super::model::{Attribution, Fallback, Namespace, Session, StreamIdx, StreamTransport};
use crate::jsonrpc::{Kind, RequestId};
use mcpf_model::{InputId, WireHasher, WireMap, WireSet};

/// Fills protocol version and server info from the answer to `initialize`.
/// Returns the `protocolVersion` the `initialize` result named, if one was seen.
pub(crate) fn fill_initialize(s: &mut Session) -> Option<String> {
    let mut found: Option<(Option<String>, Option<String>)> = None;
    for st in &s.streams {
        let Some(init) = st
            .requests()
            .find(|m| m.method.as_deref() == Some("initialize"))
            .and_then(|m| m.id.clone())
        else {
            continue;
        };
        let answer = st
            .response_messages
            .iter()
            .chain(st.events.iter().flat_map(|e| e.messages.iter()))
            .find(|m| m.kind == Kind::Response && m.id.as_ref() == Some(&init));
        if let Some(a) = answer {
            found = Some((a.mcp.protocol_version.clone(), a.mcp.peer_info.clone()));
        }
    }
    // Legacy transport: the answer arrives on the SSE stream of another exchange.
    if found.is_none() {
        for st in &s.streams {
            for m in st.events.iter().flat_map(|e| e.messages.iter()) {
                if m.kind == Kind::Response && m.mcp.protocol_version.is_some() {
                    found = Some((m.mcp.protocol_version.clone(), m.mcp.peer_info.clone()));
                }
            }
        }
    }
    let (version, info) = found?;
    if version.is_some() {
        s.protocol_version = version.clone();
    }
    if info.is_some() {
        s.server_info = info;
    }
    version
}

/// The revision the session is judged by: its `initialize` result's, else its requests'
/// `MCP-Protocol-Version`, else what the spec says to assume.
/// `negotiated` is what the `initialize` result named (a source without bodies has none).
pub(crate) fn fill_revision(s: &mut Session, negotiated: Option<&str>) {
    use crate::revision::{Revision, RevisionFrom};
    let negotiated = negotiated.and_then(|v| Revision::named(v, RevisionFrom::Initialize));
    let header = || {
        s.streams
            .iter()
            .filter_map(|st| st.protocol_version_header.as_deref())
            .find_map(|v| Revision::named(v, RevisionFrom::Header))
    };
    s.revision = negotiated
        .or_else(header)
        .unwrap_or_else(|| Revision::assumed(s.transport == super::model::Transport::LegacySse));
}

/// Matching key of an exchange seen by two sources.
fn match_key(
    st: &super::model::Stream,
) -> (String, String, Option<String>, Option<String>, Option<u16>) {
    (
        st.method.to_ascii_uppercase(),
        st.target.split('?').next().unwrap_or("").to_string(),
        st.session_id_sent.clone(),
        st.resume.as_ref().map(|r| r.last_event_id.clone()),
        // What the client got: a log's 499 (client closed) or 0 is a capture's exchange without
        // a response, and must not look like the upstream leg's 200.
        st.status.filter(|&c| c != 499 && c != 0),
    )
}

/// How a source session's exchanges line up with a capture session's: the clock offset (median
/// of each exchange's nearest candidate) and, for each source exchange, the capture exchange it
/// is within tolerance.
fn alignment(source: &Session, capture: &Session) -> Option<(i64, Vec<Option<usize>>)> {
    let mut diffs: Vec<i64> = Vec::new();
    for sa in &source.streams {
        let key = match_key(sa);
        let nearest = capture
            .streams
            .iter()
            .filter(|sb| match_key(sb) == key)
            .map(|sb| sb.opened.time.0 - sa.opened.time.0)
            .filter(|d| d.abs() < 3_600 * mcpf_model::Timestamp::NANOS_PER_SEC)
            .min_by_key(|d| d.abs());
        diffs.extend(nearest);
    }
    if diffs.is_empty() {
        return None;
    }
    diffs.sort_unstable();
    let offset = diffs[diffs.len() / 2];
    Some((offset, pair_exchanges(source, capture, offset)))
}

const MATCH_TOLERANCE_NS: i64 = 2 * mcpf_model::Timestamp::NANOS_PER_SEC;

/// For each source exchange, the capture exchange it is (each used once), given the offset.
fn pair_exchanges(source: &Session, capture: &Session, offset: i64) -> Vec<Option<usize>> {
    let mut used: HashSet<usize> = HashSet::default();
    let mut out = Vec::with_capacity(source.streams.len());
    for sa in &source.streams {
        let key = match_key(sa);
        let at = sa.opened.time.0 + offset;
        let hit = capture
            .streams
            .iter()
            .enumerate()
            .filter(|(i, sb)| !used.contains(i) && match_key(sb) == key)
            .map(|(i, sb)| (i, (sb.opened.time.0 - at).abs()))
            .filter(|(_, d)| *d <= MATCH_TOLERANCE_NS)
            .min_by_key(|(_, d)| *d)
            .map(|(i, _)| i);
        if let Some(i) = hit {
            used.insert(i);
        }
        out.push(hit);
    }
    out
}

/// A HAR or access log of the same traffic as a capture (the proxy's log beside the capture of
/// its client leg) observes the same exchanges: they are matched, not counted twice. The clock
/// offset between the sources is the median difference of matched request times; the source's
/// unmatched exchanges join the session on the capture's clock.
pub(crate) fn merge_sources(sessions: &mut Vec<Session>, recorded: impl Fn(InputId) -> bool) {
    let (from_logs, captured) = captured_by_id(sessions, recorded);
    let mut absorbed: HashSet<usize> = HashSet::default();
    for a in 0..sessions.len() {
        if !from_logs[a] {
            continue;
        }
        let Some(candidates) = sessions[a]
            .session_id
            .as_deref()
            .and_then(|id| captured.get(id))
        else {
            continue;
        };
        // The same session may have been captured on several legs (client side and upstream
        // of a proxy): the source joins the one whose exchanges it matches best.
        let log_server_unknown =
            sessions[a].server.ip().is_unspecified() && sessions[a].server.port() == 0;
        let best = candidates
            .iter()
            .copied()
            .filter(|&b| {
                b != a
                    && !absorbed.contains(&b)
                    && (sessions[a].server == sessions[b].server || log_server_unknown)
            })
            .filter_map(|b| alignment(&sessions[a], &sessions[b]).map(|(o, p)| (b, o, p)))
            .max_by_key(|(b, offset, pairs)| {
                (
                    pairs.iter().filter(|p| p.is_some()).count(),
                    std::cmp::Reverse(offset.abs()),
                    std::cmp::Reverse(*b),
                )
            });
        let Some((b, offset, pairs)) = best else {
            continue;
        };
        let mut matched = 0;
        let mut extra = Vec::new();
        let streams = std::mem::take(&mut sessions[a].streams);
        for (mut sa, hit) in streams.into_iter().zip(pairs) {
            if hit.is_some() {
                matched += 1;
            } else {
                shift(&mut sa, offset);
                extra.push(sa);
            }
        }
        let input = sessions[a].inputs.first().copied().unwrap_or(0);
        let added = extra.len();
        let target = &mut sessions[b];
        for st in extra {
            let mut st = st;
            st.idx = target.streams.len();
            target.streams.push(st);
        }
        if !target.inputs.contains(&input) {
            target.inputs.push(input);
        }
        target.merged_sources.push(super::model::MergedSource {
            input,
            matched,
            added,
            offset_s: offset as f64 / 1e9,
        });
        absorbed.insert(a);
    }
    if absorbed.is_empty() {
        return;
    }
    let mut kept: Vec<Session> = Vec::new();
    for (i, s) in sessions.drain(..).enumerate() {
        if !absorbed.contains(&i) {
            kept.push(s);
        }
    }
    for (i, s) in kept.iter_mut().enumerate() {
        s.idx = i;
        let (start, end) = s.streams.iter().fold((s.start, s.end), |(lo, hi), st| {
            (lo.min(st.opened), hi.max(st.ended.unwrap_or(st.opened)))
        });
        s.start = start;
        s.end = end;
    }
    *sessions = kept;
}

/// Which sessions come from logs only, and the others by session ID, built once: a log of n
/// sessions is merged in O(n), not by scanning every session for each of its own. Whether a
/// session comes from logs only is fixed before any merging: a target keeps its captured
/// streams, and a source's streams are taken only as it is absorbed.
fn captured_by_id(
    sessions: &[Session],
    recorded: impl Fn(InputId) -> bool,
) -> (Vec<bool>, HashMap<String, Vec<usize>>) {
    let from_logs: Vec<bool> = sessions
        .iter()
        .map(|s| s.streams.iter().all(|st| recorded(st.input)))
        .collect();
    let mut captured: HashMap<String, Vec<usize>> = HashMap::default();
    for (b, s) in sessions.iter().enumerate() {
        if let Some(id) = &s.session_id
            && !from_logs[b]
        {
            captured.entry(id.clone()).or_default().push(b);
        }
    }
    (from_logs, captured)
}

fn shift(st: &mut super::model::Stream, offset: i64) {
    let move_mark = |m: &mut mcpf_model::Mark| m.time = m.time.add_nanos(offset);
    move_mark(&mut st.opened);
    if let Some(m) = st.response_mark.as_mut() {
        move_mark(m);
    }
    if let Some(m) = st.ended.as_mut() {
        move_mark(m);
    }
    for e in &mut st.events {
        move_mark(&mut e.mark);
    }
}

pub(crate) fn analyse(s: &mut Session) {
    order_streams(s);
    s.event_id_scheme = ids::classify(
        s.streams
            .iter()
            .flat_map(|st| st.events.iter())
            .filter_map(|e| e.id.as_deref()),
    );
    if s.event_id_scheme == super::model::EventIdScheme::None {
        // No events (an access log): the IDs clients sent back still show the scheme.
        let from_resumes = ids::classify(
            s.streams
                .iter()
                .filter_map(|st| st.resume.as_ref().map(|r| r.last_event_id.as_str())),
        );
        if from_resumes != super::model::EventIdScheme::None {
            s.event_id_scheme = from_resumes;
            s.event_id_scheme_from = "last_event_id";
        }
    }
    note_what_inputs_lack(s);
    resolve_resumes(s);
    detect_fallbacks(s);
    attribute(s);
}

/// Findings that conclude from an event's absence: none is concluded for a session whose
/// events past a cap were counted and not held.
const EVENT_ABSENCE_KINDS: [&str; 3] = ["resume_gap", "skipped_events", "unanswered_request"];

/// Findings that need what an input did not record are "not determinable", never silently
/// absent.
fn note_what_inputs_lack(s: &mut Session) {
    let unknown = s.streams.iter().filter(|st| st.body_unknown).count();
    let not_decoded = s.streams.iter().filter(|st| st.body_not_decoded).count();
    if unknown > 0 {
        let total = s.streams.len();
        let why = match unknown - not_decoded {
            0 => format!(
                "the content coding of {not_decoded} of {total} exchanges' bodies could not be undone"
            ),
            n if not_decoded == 0 => {
                format!("the input recorded no body or SSE events for {n} of {total} exchanges")
            }
            n => format!(
                "the input recorded no body or SSE events for {n} of {total} exchanges, and the content coding of {not_decoded} more could not be undone"
            ),
        };
        for kind in [
            "cross_namespace_replay",
            "event_id_reset",
            "resume_gap",
            "duplicate_response",
            "request_id_reused",
            "skipped_events",
            "unanswered_request",
            "retry_without_idempotency_key",
        ] {
            s.not_determinable.push((kind, why.clone()));
        }
    }
    let unheld: u64 = s.streams.iter().map(|st| st.events_unheld).sum();
    if unheld > 0 {
        let why = format!(
            "{unheld} events arrived after the session held as many as the cap allows (--max-session-events); they were counted, not kept"
        );
        for kind in EVENT_ABSENCE_KINDS {
            s.not_determinable.push((kind, why.clone()));
        }
    }
    let resumes_without_header = s
        .streams
        .iter()
        .filter(|st| st.resume.is_some() && !st.session_header_known)
        .count();
    if resumes_without_header > 0 || s.streams.iter().any(|st| !st.session_header_known) {
        let why = "the input did not record the responses' Mcp-Session-Id".to_string();
        s.not_determinable
            .push(("session_not_reaffirmed", why.clone()));
        s.not_determinable.push(("session_id_changed", why));
    }
}

/// Streams are numbered in the order their requests began.
fn order_streams(s: &mut Session) {
    let mut order: Vec<usize> = (0..s.streams.len()).collect();
    order.sort_by_key(|&i| (s.seq(s.streams[i].opened), s.streams[i].exchange));
    let mut new_pos = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_pos[old] = new;
    }
    let mut streams: Vec<Option<super::model::Stream>> = s.streams.drain(..).map(Some).collect();
    for &old in &order {
        if let Some(mut st) = streams[old].take() {
            st.idx = s.streams.len();
            s.streams.push(st);
        }
    }
    for f in &mut s.fallbacks {
        f.abandoned_stream = f.abandoned_stream.map(|i| new_pos[i]);
        f.to_stream = new_pos[f.to_stream];
    }
}

/// Mid-session fallback: the client abandoned a POST whose response did not arrive, then opened a
/// GET event stream without `Last-Event-ID`.
fn detect_fallbacks(s: &mut Session) {
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
        let candidate = abandoned
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
            .max_by_key(|p| p.ended.map(|e| s.seq(e)));
        let Some(p) = candidate else {
            continue;
        };
        let request = p.requests().next();
        let request_id = request.and_then(|m| m.id.clone());
        let token = request.and_then(|m| m.mcp.progress_token.clone());
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
        let confirmed = get.events.iter().flat_map(|e| e.messages.iter()).any(|m| {
            (m.kind == Kind::Notification && token.is_some() && m.mcp.progress_token == token)
                || (matches!(m.kind, Kind::Response | Kind::Error)
                    && m.id.is_some()
                    && m.id == request_id)
        });
        let after = if p.end_time_unknown {
            "(when, the input does not say: its times stop at the request's sending)".to_string()
        } else {
            format!("after {waited:.1} s")
        };
        found.push(Fallback {
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
        });
        abandoned.remove(&p.idx);
    }
    let (inferred, ambiguous) = inferred_fallbacks(s, &found);
    found.extend(inferred);
    if let Some(why) = ambiguous {
        s.not_determinable.push(("sse_fallback", why));
    }
    s.fallbacks.extend(found);
    let mut fallbacks = std::mem::take(&mut s.fallbacks);
    fallbacks.sort_by_key(|f| s.seq(f.mark));
    s.fallbacks = fallbacks;
}

/// Fallbacks an input shows only by its times. A log that does not record how a response
/// ended writes a stream the client dropped as complete (Caddy logs `200` where nginx logs
/// `499`), but an event-stream POST of the session whose logged end is the moment, within the
/// log's time resolution, a GET stream began was dropped for it: what a client falling back
/// does. Stated as inferred, with the two lines that show it. Only when that moment is one: if
/// another exchange of the session began or ended within the resolution too (an SDK sends
/// several requests within a second), the times cannot single the POST out, and the second
/// value says why the fallback is not determinable.
fn inferred_fallbacks(s: &Session, found: &[Fallback]) -> (Vec<Fallback>, Option<String>) {
    let all = || s.fallbacks.iter().chain(found);
    let mut posts_used: HashSet<StreamIdx> = all().filter_map(|f| f.abandoned_stream).collect();
    let gets_used: HashSet<StreamIdx> = all().map(|f| f.to_stream).collect();
    // The candidates once, by end: a GET then looks only at those ending near its start.
    let mut dropped: Vec<(i64, &super::model::Stream)> = s
        .streams
        .iter()
        .filter(|p| !posts_used.contains(&p.idx) && may_have_been_dropped(p))
        .filter_map(|p| Some((p.ended?.time.0, p)))
        .collect();
    if dropped.is_empty() {
        return (Vec::new(), None);
    }
    dropped.sort_unstable_by_key(|&(end, p)| (end, p.idx));
    let widest = dropped.iter().map(|(_, p)| within(p)).max().unwrap_or(0);
    let moments = moments(s);
    let mut out = Vec::new();
    let mut ambiguous: Option<String> = None;
    for get in &s.streams {
        if get.transport != StreamTransport::Get
            || get.resume.is_some()
            || gets_used.contains(&get.idx)
            || !get.status.is_some_and(|st| (200..300).contains(&st))
        {
            continue;
        }
        let at = get.opened.time.0;
        let from = dropped.partition_point(|&(end, _)| end < at - widest);
        let Some(&(_, p)) = dropped[from..]
            .iter()
            .take_while(|&&(end, _)| end <= at + widest)
            .filter(|(end, p)| !posts_used.contains(&p.idx) && (end - at).abs() <= within(p))
            // The nearest; of equals, the first opened, as a scan in order would pick.
            .min_by_key(|(end, p)| ((end - at).abs(), p.idx))
        else {
            continue;
        };
        posts_used.insert(p.idx);
        if another_exchange_within(&moments, at, within(p), [p.idx, get.idx]) {
            ambiguous.get_or_insert_with(|| {
                format!(
                    "{} (logged as complete) ended within {} of the start of {}, but so did \
                     other exchanges of the session: the log's times cannot tell a POST \
                     dropped for the GET from one that had ended",
                    p.label(),
                    resolution(within(p)),
                    get.label()
                )
            });
            continue;
        }
        out.push(inferred_fallback(p, get));
    }
    (out, ambiguous)
}

/// Every start and end of the session's exchanges, by time.
fn moments(s: &Session) -> Vec<(i64, StreamIdx)> {
    let mut m: Vec<(i64, StreamIdx)> = s
        .streams
        .iter()
        .flat_map(|st| {
            let end = st.ended.map(|e| (e.time.0, st.idx));
            std::iter::once((st.opened.time.0, st.idx)).chain(end)
        })
        .collect();
    m.sort_unstable();
    m
}

/// Whether an exchange other than `not` began or ended within `w` of `at`. Each of the two
/// has two moments at most, so the scan stops by the fifth.
fn another_exchange_within(
    moments: &[(i64, StreamIdx)],
    at: i64,
    w: i64,
    not: [StreamIdx; 2],
) -> bool {
    let from = moments.partition_point(|&(t, _)| t < at.saturating_sub(w));
    moments[from..]
        .iter()
        .take_while(|&&(t, _)| t <= at.saturating_add(w))
        .any(|(_, idx)| !not.contains(idx))
}

/// How close a POST's logged end and a GET's start must be to be one moment: the input's time
/// resolution, at least 1 ms.
fn within(p: &super::model::Stream) -> i64 {
    p.ending_unknown.unwrap_or(0).max(1_000_000)
}

fn inferred_fallback(p: &super::model::Stream, get: &super::model::Stream) -> Fallback {
    Fallback {
        mark: get.opened,
        from: "post".into(),
        to: "get".into(),
        trigger: format!(
            "{} ({}) ended within {} of the start of {}: taken as abandoned by \
             the client, inferred from the times (the input does not record how responses \
             ended)",
            p.label(),
            p.status
                .map_or("no response logged".to_string(), |st| format!(
                    "logged {st}"
                )),
            resolution(within(p)),
            get.label()
        ),
        request_id: p.requests().next().and_then(|m| m.id.clone()),
        abandoned_stream: Some(p.idx),
        to_stream: get.idx,
        confirmed: false,
        inferred: true,
        frames: vec![p.opened, p.ended.unwrap_or(p.opened), get.opened],
    }
}

/// `1 ms`, `1 s`.
fn resolution(ns: i64) -> String {
    if ns >= 1_000_000_000 {
        format!("{} s", ns / 1_000_000_000)
    } else {
        format!("{} ms", (ns / 1_000_000).max(1))
    }
}

/// A POST of the session (it named the session: not initialize) that the input says ended
/// without knowing how: its response an event stream logged as complete, or no response with
/// no word of who left (Caddy logs status 0 when the client went first).
fn may_have_been_dropped(p: &super::model::Stream) -> bool {
    let stream_logged_complete =
        p.event_stream && p.status.is_some_and(|st| (200..300).contains(&st));
    let nothing_came = p.status.is_none() && p.closed_by.is_none();
    p.transport == StreamTransport::Post
        && p.ending_unknown.is_some()
        && (stream_logged_complete || nothing_came)
        && p.session_id_sent.is_some()
        && !p.gap
        && !answered_on(p)
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
                && (p.requests().next().is_some() || p.body_unknown)
                && p.abandoned_by_client()
                // With bytes missing, the answer may have come before the client left.
                && !p.gap
                && !answered_on(p)
        })
        .map(|p| p.idx)
        .collect()
}

/// Stream → when a resume of it was first opened.
fn first_resumes(s: &Session) -> HashMap<StreamIdx, super::model::Seq> {
    let mut resumed: HashMap<StreamIdx, super::model::Seq> = HashMap::default();
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
fn answered_on(p: &super::model::Stream) -> bool {
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

/// A client abandons a stream and opens the fallback in quick succession; the connection close
/// that reports the abandonment may be captured a moment after the new request.
const TOLERANCE_NS: i64 = 2_000_000_000;

/// Which stream each resume continues: the interrupted stream whose last delivered ID equals the
/// `Last-Event-ID` sent; with colliding counters, the other streams that delivered the same ID
/// are recorded.
fn resolve_resumes(s: &mut Session) {
    let index = ResumeIndex::new(s);
    for r in 0..s.streams.len() {
        let Some(lei) = s.streams[r]
            .resume
            .as_ref()
            .map(|x| x.last_event_id.as_str())
        else {
            continue;
        };
        let opened = s.seq(s.streams[r].opened);
        let mut delivered: Vec<StreamIdx> = index
            .carrying(lei)
            .iter()
            .filter(|&&(t, first)| t < r && first <= opened)
            .map(|&(t, _)| t)
            .collect();
        delivered.sort_unstable();
        let last_is = |t: &StreamIdx| index.last_id_by(s, *t, opened) == Some(lei);
        let pick = delivered
            .iter()
            .filter(|t| last_is(t) && s.streams[**t].interrupted())
            .max_by_key(|t| s.streams[**t].ended.map(|e| s.seq(e)))
            .or_else(|| delivered.iter().filter(|t| last_is(t)).max())
            .or_else(|| delivered.iter().max())
            .copied();
        if let Some(resume) = s.streams[r].resume.as_mut() {
            resume.continues = pick;
            resume.also_seen_on = delivered.into_iter().filter(|t| Some(*t) != pick).collect();
        }
    }
}

/// What [`resolve_resumes`] asks of the events, worked out in one pass: a session with 30,000
/// resumes must not scan every event for each.
struct ResumeIndex {
    /// A `Last-Event-ID` some resume sent → each stream that carried it, with the first time it
    /// did.
    carried: HashMap<String, Vec<(StreamIdx, super::model::Seq)>>,
    /// Per stream that carried one, when its events are in session order: the positions of its
    /// events with a non-empty ID. `None` otherwise (times from several inputs that go back):
    /// then it is scanned.
    with_id: Vec<Option<Vec<u32>>>,
}

impl ResumeIndex {
    fn new(s: &Session) -> Self {
        let mut carried: HashMap<String, Vec<(StreamIdx, super::model::Seq)>> = s
            .streams
            .iter()
            .filter_map(|st| st.resume.as_ref())
            .map(|r| (r.last_event_id.clone(), Vec::new()))
            .collect();
        let mut with_id = Vec::with_capacity(s.streams.len());
        for st in &s.streams {
            let mut carries = false;
            for e in &st.events {
                let Some(v) = e.id.as_deref().and_then(|i| carried.get_mut(i)) else {
                    continue;
                };
                carries = true;
                let seq = s.seq(e.mark);
                match v.last_mut() {
                    Some((t, first)) if *t == st.idx => *first = (*first).min(seq),
                    _ => v.push((st.idx, seq)),
                }
            }
            // Only a stream that carried a `Last-Event-ID` is asked about.
            let ordered = carries
                && st
                    .events
                    .windows(2)
                    .all(|w| s.seq(w[0].mark) <= s.seq(w[1].mark));
            with_id.push(ordered.then(|| {
                (0..st.events.len() as u32)
                    .filter(|&i| {
                        st.events[i as usize]
                            .id
                            .as_deref()
                            .is_some_and(|x| !x.is_empty())
                    })
                    .collect()
            }));
        }
        ResumeIndex { carried, with_id }
    }

    fn carrying(&self, id: &str) -> &[(StreamIdx, super::model::Seq)] {
        self.carried.get(id).map(Vec::as_slice).unwrap_or_default()
    }

    /// The last non-empty ID stream `t` delivered by `at`.
    fn last_id_by<'s>(
        &self,
        s: &'s Session,
        t: StreamIdx,
        at: super::model::Seq,
    ) -> Option<&'s str> {
        let events = &s.streams[t].events;
        match &self.with_id[t] {
            Some(pos) => {
                let n = pos.partition_point(|&i| s.seq(events[i as usize].mark) <= at);
                n.checked_sub(1)
                    .and_then(|k| events[pos[k] as usize].id.as_deref())
            }
            None => events
                .iter()
                .filter(|e| s.seq(e.mark) <= at)
                .rev()
                .find_map(|e| e.id.as_deref().filter(|i| !i.is_empty())),
        }
    }
}

/// Labels every event with the namespace that minted its ID.
fn attribute(s: &mut Session) {
    if s.streams.iter().all(|st| st.resume.is_none()) {
        // Nothing was replayed: every event was minted by the stream that delivered it, and no
        // index of what was delivered is needed (it costs tens of bytes an event).
        for st in &mut s.streams {
            let si = st.idx;
            for ev in &mut st.events {
                ev.namespace = Namespace::Stream(si);
                ev.attribution = Attribution::Own;
            }
        }
        return;
    }
    // Events in capture order across streams.
    let view: &Session = s;
    let mut order: Vec<(super::model::Seq, StreamIdx, usize)> = view
        .streams
        .iter()
        .flat_map(|st| {
            st.events
                .iter()
                .enumerate()
                .map(move |(i, e)| (view.seq(e.mark), st.idx, i))
        })
        .collect();
    order.sort();
    let mut known = Delivered::new(s);
    // Only resume streams look back at what was delivered before them.
    let last_replay = order
        .iter()
        .rposition(|&(_, si, _)| s.streams[si].resume.is_some());
    for (n, (_, si, ei)) in order.into_iter().enumerate() {
        let resume = s.streams[si].resume.as_ref().map(|r| r.continues);
        let ev = &s.streams[si].events[ei];
        let id: Option<&str> = ev.id.as_deref().filter(|i| !i.is_empty());
        let (ns, how) = match resume {
            None => (Namespace::Stream(si), Attribution::Own),
            Some(continues) => {
                let prev = s.streams[si].events[..ei]
                    .iter()
                    .rev()
                    .find(|e| e.id.as_deref().is_some_and(|i| !i.is_empty()));
                known.replayed(s, si, ev, id, continues, prev)
            }
        };
        if last_replay.is_some_and(|last| n < last) {
            known.learn(s, (si, ei), id, ns);
        }
        let ev = &mut s.streams[si].events[ei];
        ev.namespace = ns;
        ev.attribution = how;
    }
}

/// What the events delivered so far tell about who mints which IDs. A seeded hash of an ID,
/// a token or an event's data picks the earlier events that may be the same; the IDs and the
/// data bytes decide. Positions are kept, not strings: no string is copied per event, and
/// nothing is allocated per event either (see [`Few`]).
struct Delivered {
    hasher: WireHasher,
    /// Stream token → the events that carried it first, and the stream that minted them.
    token_owner: HashMap<u64, Few<(Pos32, u32)>>,
    /// (ID, data) → the first delivery of that event and its namespace.
    first_seen: HashMap<(u64, u64), Few<Delivery>>,
    /// ID → an event that carried it.
    id_seen: HashMap<u64, Few<Pos32>>,
    /// Where each request's messages were last being delivered (its POST stream until then).
    request_stream: WireMap<RequestId, StreamIdx>,
    progress_owner: WireMap<String, RequestId>,
    last_integer: HashMap<StreamIdx, u64>,
}

/// An event of the session: stream, position in it.
type Pos = (StreamIdx, usize);

/// A [`Pos`] as the per-event indexes keep it: a stream's events are counted in `u32` already
/// ([`super::model::EventRec::index`]), and these indexes hold an entry per event.
type Pos32 = (u32, u32);

/// Where an event was first delivered, and the stream that minted it (none: unknown).
type Delivery = (Pos32, Option<u32>);

fn pos32((si, ei): Pos) -> Pos32 {
    (si as u32, ei as u32)
}

fn ns32(ns: Namespace) -> Option<u32> {
    match ns {
        Namespace::Stream(si) => Some(si as u32),
        Namespace::Unknown => None,
    }
}

fn ns_of(ns: Option<u32>) -> Namespace {
    ns.map_or(Namespace::Unknown, |si| Namespace::Stream(si as StreamIdx))
}

/// The entries under one hash: almost always one, kept inline so that an index with an entry
/// per event allocates nothing per event.
enum Few<T> {
    One(T),
    /// A boxed slice, not a `Vec`: the enum stays as small as its one entry.
    More(Box<[T]>),
}

impl<T: Copy> Few<T> {
    fn as_slice(&self) -> &[T] {
        match self {
            Few::One(x) => std::slice::from_ref(x),
            Few::More(v) => v,
        }
    }

    /// Adds `x` under `key` unless an entry `dup` says is the same is there already.
    fn add<K: std::hash::Hash + Eq>(
        map: &mut HashMap<K, Few<T>>,
        key: K,
        x: T,
        dup: impl Fn(&T) -> bool,
    ) {
        use std::collections::hash_map::Entry;
        match map.entry(key) {
            Entry::Vacant(v) => {
                v.insert(Few::One(x));
            }
            Entry::Occupied(mut o) => {
                let few = o.get_mut();
                if few.as_slice().iter().any(dup) {
                    return;
                }
                let more: Box<[T]> = few.as_slice().iter().copied().chain([x]).collect();
                *few = Few::More(more);
            }
        }
    }
}

fn event_id(s: &Session, (si, ei): Pos32) -> Option<&str> {
    s.streams[si as usize].events[ei as usize].id.as_deref()
}

impl Delivered {
    fn new(s: &Session) -> Delivered {
        let mut d = Delivered {
            hasher: WireHasher::default(),
            token_owner: HashMap::default(),
            first_seen: HashMap::default(),
            id_seen: HashMap::default(),
            request_stream: WireMap::default(),
            progress_owner: WireMap::default(),
            last_integer: HashMap::default(),
        };
        for st in &s.streams {
            for m in st.requests() {
                if let Some(id) = &m.id {
                    d.request_stream.entry(id.clone()).or_insert(st.idx);
                    if let Some(t) = &m.mcp.progress_token {
                        d.progress_owner.insert(t.clone(), id.clone());
                    }
                }
            }
        }
        d
    }

    fn hash(&self, text: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, text)
    }

    /// Learns from the event at `at`, delivered in namespace `ns`.
    fn learn(&mut self, s: &Session, at: Pos, id: Option<&str>, ns: Namespace) {
        let ev = &s.streams[at.0].events[at.1];
        if let Some(id) = id {
            let h = self.hash(id);
            let at32 = pos32(at);
            if let (Some(tok), Namespace::Stream(owner)) = (ids::stream_token(id), ns) {
                let th = self.hash(tok);
                let same_token =
                    |p: &(Pos32, u32)| event_id(s, p.0).and_then(ids::stream_token) == Some(tok);
                Few::add(&mut self.token_owner, th, (at32, owner as u32), same_token);
            }
            let same_event = |(p, _): &Delivery| {
                let e = &s.streams[p.0 as usize].events[p.1 as usize];
                e.id.as_deref() == Some(id) && s.payloads.same(e.data(), ev.data()) == Some(true)
            };
            let key = (h, ev.data_hash);
            Few::add(&mut self.first_seen, key, (at32, ns32(ns)), same_event);
            let same_id = |p: &Pos32| event_id(s, *p) == Some(id);
            Few::add(&mut self.id_seen, h, at32, same_id);
            if let (Some(n), Namespace::Stream(owner)) = (ids::counter(id), ns) {
                self.last_integer.insert(owner, n);
            }
        }
        let Namespace::Stream(owner) = ns else { return };
        for m in &ev.messages {
            match m.kind {
                Kind::Notification => {
                    if let Some(req) = m
                        .mcp
                        .progress_token
                        .as_ref()
                        .and_then(|t| self.progress_owner.get(t))
                    {
                        self.request_stream.insert(req.clone(), owner);
                    }
                }
                Kind::Response | Kind::Error => {
                    if let Some(id) = &m.id {
                        self.request_stream.insert(id.clone(), owner);
                    }
                }
                _ => {}
            }
        }
    }

    /// The namespace of an event a resume stream delivered: by its ID's stream token, by an
    /// identical event seen before, by the request its message answers, or by counter
    /// continuity; unknown when nothing says.
    fn replayed(
        &self,
        s: &Session,
        si: StreamIdx,
        ev: &super::model::EventRec,
        id: Option<&str>,
        continues: Option<StreamIdx>,
        prev: Option<&super::model::EventRec>,
    ) -> (Namespace, Attribution) {
        let Some(id) = id else {
            // No ID: it was minted by no sequence; it belongs to the stream that delivered it.
            return (Namespace::Stream(si), Attribution::Own);
        };
        let seen_before = self
            .id_seen
            .get(&self.hash(id))
            .is_some_and(|v| v.as_slice().iter().any(|p| event_id(s, *p) == Some(id)));
        if ev.priming && !seen_before {
            // Python SDK servers prime every replay connection afresh.
            return (Namespace::Stream(si), Attribution::Own);
        }
        if let Some(found) = self.by_token(s, id, continues) {
            return found;
        }
        if let Some(ns) = self.identical(s, id, ev) {
            return (ns, Attribution::IdenticalEvent);
        }
        if let Some(owner) = self.by_request(ev) {
            return (Namespace::Stream(owner), Attribution::RequestStream);
        }
        ids::integer(id)
            .and_then(|n| self.by_counter(n, continues, prev))
            .unwrap_or((Namespace::Unknown, Attribution::Unknown))
    }

    fn by_token(
        &self,
        s: &Session,
        id: &str,
        continues: Option<StreamIdx>,
    ) -> Option<(Namespace, Attribution)> {
        let tok = ids::stream_token(id)?;
        if let Some(c) = continues
            && s.streams[c]
                .events
                .iter()
                .filter_map(|e| e.id.as_deref())
                .any(|i| ids::stream_token(i) == Some(tok))
        {
            return Some((Namespace::Stream(c), Attribution::IdToken));
        }
        let (_, owner) = self
            .token_owner
            .get(&self.hash(tok))?
            .as_slice()
            .iter()
            .find(|(p, _)| event_id(s, *p).and_then(ids::stream_token) == Some(tok))?;
        Some((Namespace::Stream(*owner as StreamIdx), Attribution::IdToken))
    }

    /// The namespace of the first delivery of the same event: the same ID and the same data,
    /// byte for byte.
    fn identical(&self, s: &Session, id: &str, ev: &super::model::EventRec) -> Option<Namespace> {
        let candidates = self.first_seen.get(&(self.hash(id), ev.data_hash))?;
        candidates.as_slice().iter().find_map(|(p, ns)| {
            let e = &s.streams[p.0 as usize].events[p.1 as usize];
            let same =
                e.id.as_deref() == Some(id) && s.payloads.same(e.data(), ev.data()) == Some(true);
            same.then_some(ns_of(*ns))
        })
    }

    /// The stream where the request an event's message answers (or reports progress on) was
    /// last being delivered.
    fn by_request(&self, ev: &super::model::EventRec) -> Option<StreamIdx> {
        ev.messages.iter().find_map(|m| {
            let owner = match m.kind {
                Kind::Response | Kind::Error => {
                    m.id.as_ref().and_then(|i| self.request_stream.get(i))
                }
                Kind::Notification => m
                    .mcp
                    .progress_token
                    .as_ref()
                    .and_then(|t| self.progress_owner.get(t))
                    .and_then(|r| self.request_stream.get(r)),
                _ => None,
            };
            owner.copied()
        })
    }

    /// Integer IDs: the sequence whose last ID is one less.
    fn by_counter(
        &self,
        n: u64,
        continues: Option<StreamIdx>,
        prev: Option<&super::model::EventRec>,
    ) -> Option<(Namespace, Attribution)> {
        if let Some(p) = prev
            && p.id.as_deref().and_then(ids::integer) == Some(n.wrapping_sub(1))
            && let Namespace::Stream(_) = p.namespace
        {
            return Some((p.namespace, Attribution::CounterContinuity));
        }
        if let Some(c) = continues
            && self.last_integer.get(&c) == Some(&n.wrapping_sub(1))
        {
            return Some((Namespace::Stream(c), Attribution::CounterContinuity));
        }
        let mut owners = self
            .last_integer
            .iter()
            .filter(|(_, v)| **v == n.wrapping_sub(1))
            .map(|(k, _)| *k);
        match (owners.next(), owners.next()) {
            (Some(one), None) => Some((Namespace::Stream(one), Attribution::CounterContinuity)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::another_exchange_within;

    const S: i64 = 1_000_000_000;

    #[test]
    fn a_moment_is_one_only_when_no_other_exchange_shares_it() {
        // POST 0 ends, GET 1 opens at the same second; exchange 2 opens 0.4 s later.
        let moments = [(0, 0), (10 * S, 0), (10 * S, 1), (10 * S + 4 * S / 10, 2)];
        assert!(another_exchange_within(&moments, 10 * S, S, [0, 1]));
        // At millisecond resolution exchange 2 is another moment.
        assert!(!another_exchange_within(
            &moments,
            10 * S,
            1_000_000,
            [0, 1]
        ));
    }
}
