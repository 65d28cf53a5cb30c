//! `stream_stalled`: a hop held a stream's events. With two observations of a session (a leg
//! nearer the client and one nearer the server, told apart by what one lost or by causality),
//! each event the two carry (the same ID and bytes) took some time to cross; the fastest of all
//! (an event or a response head) bounds the inputs' clock offset, and every other event took at
//! least its own time minus that. An event that took a second or more longer than the fastest was
//! held by the hop: a buffering proxy's signature, seen also when the server asked it not to
//! buffer (`X-Accel-Buffering: no`). One finding per stream, with how long the near side was
//! silent before the held events came, how many came at once, and how long each was held.

use super::lost_in_transit::{ClockBounds, Hop, Leg, Pair, matching};
use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{Session, SessionIdx};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::StreamStalled,
    severity: Severity::Info,
    when: "events of a stream crossed a hop a second or more slower than the fastest event did (a proxy held them), measured from two observations of the session",
    meaning: "Between the two legs the events of this stream were held: the server sent them over time, the leg nearer the client got them late, typically in one burst. A buffering proxy does this to an event stream; progress and notifications then arrive when the response ends or a buffer fills.",
    why: "A client waiting on a held stream sees silence: it times out, falls back or reconnects, and progress is useless when it arrives with the result.",
    fix: "Proxy: do not buffer event streams (nginx: proxy_buffering off for MCP, or honour the server's X-Accel-Buffering: no; no gzip on text/event-stream); the same for any CDN or gateway on the path.",
    requires: &[],
};

/// An event held this much longer than the fastest crossing was held by the hop.
const HELD_S: f64 = 1.0;

/// Finds the held streams of two observations' matched streams; returns the findings with their
/// sessions (the one nearer the client when at hand, else the other).
pub(crate) fn detect(
    pairs: &[Pair<'_>],
    hop: &Hop<'_>,
    near_s: Option<&Session>,
    far_s: Option<&Session>,
    f: &mut Findings,
) -> Vec<(SessionIdx, usize)> {
    // The offset's lower bound is the fastest crossing: every delay is measured against it,
    // and only while the bounds meet (crossing bounds are drift, or legs not of one path).
    let (low, high) = (hop.clock.low, hop.clock.high);
    if !low.is_finite() || low > high {
        return Vec::new();
    }
    let mut added = Vec::new();
    for p in pairs {
        let Some(held) = held(p, low) else { continue };
        let (s, own) = match (near_s, far_s) {
            (Some(s), _) => (s, p.near),
            (None, Some(s)) => (s, p.far),
            _ => continue,
        };
        let new = finding(p, hop, &held, own.idx, own.opened);
        added.push((s.idx, f.add(s, new)));
    }
    added
}

/// What the hop did to a pair's events.
struct Held {
    /// How long at least each matched event was held: (near mark, far mark, seconds).
    matched: Vec<(Mark, Mark, f64)>,
    /// The most held one, and the burst it came in: near events (of `matched`) each within
    /// [`BURST_GAP_S`] of the next.
    worst: usize,
    burst: std::ops::Range<usize>,
    /// The near side's last byte before the burst (an event, or the head), else its request.
    before: Mark,
}

/// Events a hop releases at once come this close together.
const BURST_GAP_S: f64 = 0.010;

fn held(p: &Pair<'_>, low: f64) -> Option<Held> {
    let matched: Vec<(Mark, Mark, f64)> = matching(p.far, p.near)
        .iter()
        .enumerate()
        .filter_map(|(i, j)| {
            let (far, near) = (&p.far.events[i], &p.near.events[(*j)?]);
            // An event without an ID is matched by its bytes alone, and may be another copy;
            // an estimated time is no time to measure a hold by.
            if far.id.is_none() || far.estimated || near.estimated {
                return None;
            }
            let (far, near) = (far.mark, near.mark);
            Some((near, far, near.time.seconds_since(far.time) + low))
        })
        .collect();
    let worst = (0..matched.len()).max_by(|&a, &b| matched[a].2.total_cmp(&matched[b].2))?;
    if matched[worst].2 < HELD_S {
        return None;
    }
    let close =
        |a: usize, b: usize| matched[b].0.time.seconds_since(matched[a].0.time) <= BURST_GAP_S;
    let mut start = worst;
    while start > 0 && close(start - 1, start) {
        start -= 1;
    }
    let mut end = worst + 1;
    while end < matched.len() && close(end - 1, end) {
        end += 1;
    }
    // The silence the client saw: since the last byte before the burst (a head that came with
    // the burst was held with it, so then since the request).
    let first = matched[start].0;
    let before = match start {
        0 => p
            .near
            .head
            .filter(|h| first.time.seconds_since(h.time) > BURST_GAP_S)
            .unwrap_or(p.near.opened),
        k => matched[k - 1].0,
    };
    Some(Held {
        matched,
        worst,
        burst: start..end,
        before,
    })
}

fn finding(p: &Pair<'_>, hop: &Hop<'_>, h: &Held, own: usize, opened: Mark) -> New {
    let burst = &h.matched[h.burst.clone()];
    let (first_near, first_far, _) = burst[0];
    let (last_near, last_far, _) = burst[burst.len() - 1];
    let max = h.matched[h.worst].2;
    let held = h.matched.iter().filter(|e| e.2 >= HELD_S).count();
    let silent = first_near.time.seconds_since(h.before.time).max(0.0);
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    let n = burst.len();
    New {
        kind: FindingKind::StreamStalled,
        severity: INFO.severity,
        time: first_near,
        frames: vec![first_far, first_near],
        streams: vec![own],
        summary: format!(
            "{held} of {} events of {} were held {:.1} s or more between {} and {} (at most {:.1} s): after {:.1} s of silence {n} came at once, which the server had sent over {:.1} s",
            h.matched.len(),
            p.near.label,
            HELD_S,
            hop.name(hop.far),
            hop.name(hop.near),
            max,
            silent,
            last_far.time.seconds_since(first_far.time),
        ),
        evidence: crate::Evidence::StreamStalled(Evidence {
            stream: p.near.label.clone(),
            far_stream: p.far.label.clone(),
            silent_s: r(silent),
            burst_events: n,
            burst_span_s: r(last_near.time.seconds_since(first_near.time)),
            sent_span_s: r(last_far.time.seconds_since(first_far.time)),
            held_s: r(max),
            held_events: held,
            matched_events: h.matched.len(),
            near: hop.side(hop.near, p.near),
            far: hop.side(hop.far, p.far),
            opened: opened.time.rfc3339(),
            clock_offset_s: hop.clock.bounds(),
        }),
        caused_by: Vec::new(),
        subject: Subject::Stream(own),
    }
}

/// The evidence of a `stream_stalled`: the stream whose events a hop held, the burst the held
/// events came in and the silence before it, both observations, and the inputs' clock offset.
/// Durations are in seconds, to the millisecond.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// The stream nearer the client.
    pub stream: String,
    /// The same stream nearer the server.
    pub far_stream: String,
    /// The near side's silence before the burst: since its last byte, or since its request
    /// when the head came with the burst.
    pub silent_s: f64,
    /// Events the near side got within 10 ms of each other around the most held one.
    pub burst_events: usize,
    /// From the first to the last of them, near the client.
    pub burst_span_s: f64,
    /// From the first to the last of them, as the server sent them.
    pub sent_span_s: f64,
    /// The longest hold.
    pub held_s: f64,
    /// Events held a second or more.
    pub held_events: usize,
    /// Events both observations carry.
    pub matched_events: usize,
    pub near: Leg,
    pub far: Leg,
    /// When the stream of the finding's session was opened.
    pub opened: String,
    pub clock_offset_s: ClockBounds,
}
