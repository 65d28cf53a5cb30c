//! Fallbacks an input shows only by its times: a log that does not record how a response ended
//! (Caddy logs `200` where nginx logs `499`) still shows an event-stream POST whose logged end is
//! the moment a GET stream began. Taken as a fallback, stated as inferred, only when that moment
//! is one; otherwise it is not determinable, and why.

use rustc_hash::FxHashSet as HashSet;

use super::fallbacks::answered_on;
use crate::model::{Fallback, Lack, Session, Stream, StreamIdx, StreamTransport};

/// Fallbacks an input shows only by its times. A log that does not record how a response
/// ended writes a stream the client dropped as complete (Caddy logs `200` where nginx logs
/// `499`), but an event-stream POST of the session whose logged end is the moment, within the
/// log's time resolution, a GET stream began was dropped for it: what a client falling back
/// does. Stated as inferred, with the two lines that show it. Only when that moment is one: if
/// another exchange of the session began or ended within the resolution too (an SDK sends
/// several requests within a second), the times cannot single the POST out, and the second
/// value says why the fallback is not determinable.
pub(super) fn inferred_fallbacks(s: &Session, found: &[Fallback]) -> (Vec<Fallback>, Option<Lack>) {
    let all = || s.fallbacks.iter().chain(found);
    let mut posts_used: HashSet<StreamIdx> = all().filter_map(|f| f.abandoned_stream).collect();
    let gets_used: HashSet<StreamIdx> = all().map(|f| f.to_stream).collect();
    let dropped = maybe_dropped(s, &posts_used);
    if dropped.is_empty() {
        return (Vec::new(), None);
    }
    let widest = dropped.iter().map(|(_, p)| within(p)).max().unwrap_or(0);
    let moments = moments(s);
    let mut out = Vec::new();
    let mut ambiguous: Option<Lack> = None;
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
            ambiguous.get_or_insert_with(|| not_one_moment(p, get));
            continue;
        }
        out.push(inferred_fallback(p, get));
    }
    (out, ambiguous)
}

/// The POSTs not yet taken that may have been dropped ([`may_have_been_dropped`]), by when they
/// ended: worked out once, so that a GET looks only at those ending near its start.
fn maybe_dropped<'s>(s: &'s Session, posts_used: &HashSet<StreamIdx>) -> Vec<(i64, &'s Stream)> {
    let mut dropped: Vec<(i64, &Stream)> = s
        .streams
        .iter()
        .filter(|p| !posts_used.contains(&p.idx) && may_have_been_dropped(p))
        .filter_map(|p| Some((p.ended?.time.0, p)))
        .collect();
    dropped.sort_unstable_by_key(|&(end, p)| (end, p.idx));
    dropped
}

/// Why the fallback from `p` to `get` is not determinable: their moment was not theirs alone.
fn not_one_moment(p: &Stream, get: &Stream) -> Lack {
    Lack::ResponseEnds {
        post: p.label(),
        within_ns: within(p),
        get: get.label(),
    }
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
fn within(p: &Stream) -> i64 {
    p.ending_unknown.unwrap_or(0).max(1_000_000)
}

fn inferred_fallback(p: &Stream, get: &Stream) -> Fallback {
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
fn may_have_been_dropped(p: &Stream) -> bool {
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
