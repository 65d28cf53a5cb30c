//! A HAR file or access log of the same traffic as a capture (the proxy's log beside the
//! capture of its client leg) observes the same exchanges: its sessions are matched to the
//! captured ones by session ID and their exchanges paired within a tolerance, after the clock
//! offset between the sources is found, so that nothing is counted twice.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::model::{MergedSource, Session, Stream};
use mcpf_model::InputId;

/// Matching key of an exchange seen by two sources.
fn match_key(st: &Stream) -> (String, String, Option<String>, Option<String>, Option<u16>) {
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
        let Some((b, offset, pairs)) = best_capture(sessions, a, candidates, &absorbed) else {
            continue;
        };
        absorb(sessions, a, b, offset, pairs);
        absorbed.insert(a);
    }
    drop_absorbed(sessions, &absorbed);
}

/// The captured session (of `candidates`, not absorbed) that the source session `a` joins, with
/// the clock offset and the pairing of their exchanges. The same session may have been captured
/// on several legs (client side and upstream of a proxy): the source joins the one whose
/// exchanges it matches best.
fn best_capture(
    sessions: &[Session],
    a: usize,
    candidates: &[usize],
    absorbed: &HashSet<usize>,
) -> Option<(usize, i64, Vec<Option<usize>>)> {
    let log_server_unknown =
        sessions[a].server.ip().is_unspecified() && sessions[a].server.port() == 0;
    candidates
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
        })
}

/// Source session `a` joins captured session `b`: its exchanges that `pairs` matched are the
/// capture's already, the others join `b` on its clock (`offset`), and the merge is recorded.
fn absorb(sessions: &mut [Session], a: usize, b: usize, offset: i64, pairs: Vec<Option<usize>>) {
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
    target.merged_sources.push(MergedSource {
        input,
        matched,
        added,
        offset_s: offset as f64 / 1e9,
    });
}

/// Drops the sessions absorbed into others, and numbers the rest again (each spanning its
/// streams, those it took in included).
fn drop_absorbed(sessions: &mut Vec<Session>, absorbed: &HashSet<usize>) {
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

fn shift(st: &mut Stream, offset: i64) {
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
