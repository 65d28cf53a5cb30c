//! `lost_in_transit`: events one observation of a session holds and another, of the same session
//! on another hop, never received. Two vantage points that both saw a session (a capture of each
//! leg of a proxy, a client-side and a server-side capture, or both legs in one capture taken on
//! the proxy host, told apart by their server endpoints) are compared stream by stream: a stream is
//! matched by what its request carried (its JSON-RPC requests, or a GET's `Last-Event-ID`), an
//! event by its ID and its bytes. A proxy cannot mint events, so the observation holding events
//! the other lacks is the nearer the server, and what it holds alone was lost between the two.
//!
//! The inputs' clocks may differ. The offset is bounded by causality over matched exchanges: the
//! far leg sees a request after the near leg, and an event before it. The bounds and their middle
//! are in the evidence, and the delay each matched stream took is measured against them.

use std::collections::VecDeque;

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::jsonrpc::Kind;
use mcpf_mcp::model::{Session, SessionIdx, Stream, StreamIdx, StreamTransport};
use mcpf_model::{InputId, Mark, WireMap};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::LostInTransit,
    severity: Severity::High,
    when: "events one vantage point saw the server send on a stream never reached the same stream at another vantage point of the same session (the next hop toward the client: another input, or the other leg of the same capture)",
    meaning: "The server sent these events and the hop nearer the client never received them: whatever sits between the two observations (a proxy, a balancer) held or dropped them.",
    why: "What the client waits for was sent but never arrived: the client gives up (a fallback, a re-send, a hang) although the server did its part. A buffering proxy in front of a streamed response does exactly this.",
    fix: "Look at the hop between the two inputs: a proxy must pass event streams through unbuffered (nginx: proxy_buffering off or X-Accel-Buffering: no, HTTP/1.1 upstream; HAProxy/Envoy: no response buffering for text/event-stream).",
    requires: &[],
};

/// Event bytes one observation copies: past it the session is not compared.
const MAX_BYTES_HELD: usize = 256 << 20;
/// Event IDs listed in a finding; the count says how many in all.
const IDS_LISTED: usize = 20;

pub(crate) use mcpf_mcp::model::Vantage;

/// What one vantage point saw of a session: its streams, keyed by what their requests carried,
/// and their events' IDs and bytes.
#[derive(Debug)]
pub(crate) struct Observation {
    pub(crate) session: SessionIdx,
    pub(crate) label: String,
    pub(crate) input: InputId,
    /// The server endpoint of the observed exchanges.
    pub(crate) server: std::net::SocketAddr,
    streams: Vec<Observed>,
    /// Its events were not kept (the budget was spent): nothing can be compared.
    dropped: bool,
}

#[derive(Debug)]
pub(crate) struct Observed {
    pub(crate) key: Key,
    pub(crate) idx: StreamIdx,
    pub(crate) label: String,
    pub(crate) opened: Mark,
    /// The response's first byte, when it came.
    pub(crate) head: Option<Mark>,
    pub(crate) ended: Option<Mark>,
    /// Bytes are missing from it, or the input did not record its body: what it lacks proves
    /// nothing.
    pub(crate) lacks_bytes: bool,
    pub(crate) events: Vec<Seen>,
}

#[derive(Debug)]
pub(crate) struct Seen {
    pub(crate) id: Option<Box<str>>,
    data: Box<[u8]>,
    pub(crate) mark: Mark,
    /// Its time is the input's estimate (a HAR spreads a body's events over its timings): no
    /// clock bound or delay rests on it.
    pub(crate) estimated: bool,
}

/// What a request carried, so the same exchange is found in another observation: the JSON-RPC
/// messages of a POST, or a GET's `Last-Event-ID`; `nth` tells apart exchanges that carried the
/// same.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) method: String,
    pub(crate) carried: String,
    nth: u32,
}

impl Observation {
    /// `held`: event bytes the observations of one comparison copied so far, together.
    pub(crate) fn of(s: &Session, held: &mut usize) -> Observation {
        let Vantage { input, server } = s.vantage();
        let mut obs = Observation {
            session: s.idx,
            label: s.label(),
            input,
            server,
            streams: Vec::with_capacity(s.streams.len()),
            dropped: false,
        };
        for (st, key) in s.streams.iter().zip(stream_keys(s)) {
            let Some(key) = key else { continue };
            let events = obs.events_of(s, st, held);
            obs.streams.push(Observed {
                key,
                idx: st.idx,
                label: st.label(),
                opened: st.opened,
                head: st.response_mark,
                ended: st.ended,
                lacks_bytes: st.gap || st.body_unknown || st.events_unheld > 0,
                events,
            });
        }
        obs
    }

    pub(crate) fn vantage(&self) -> Vantage {
        Vantage {
            input: self.input,
            server: self.server,
        }
    }

    /// What it holds, about: its events' bytes and a little for each stream and event.
    pub(crate) fn bytes(&self) -> usize {
        let per = |st: &Observed| {
            128 + st.key.carried.len() + st.events.iter().map(|e| 64 + e.data.len()).sum::<usize>()
        };
        self.streams.iter().map(per).sum()
    }

    fn events_of(&mut self, s: &Session, st: &Stream, held: &mut usize) -> Vec<Seen> {
        let mut out = Vec::with_capacity(st.events.len());
        for ev in &st.events {
            let data = ev.data().and_then(|at| s.payloads.read(at));
            let Some(data) = data else {
                self.dropped = true;
                continue;
            };
            if *held + data.len() > MAX_BYTES_HELD {
                self.dropped = true;
                return Vec::new();
            }
            *held += data.len();
            out.push(Seen {
                id: ev.id.clone(),
                data: data.into_boxed_slice(),
                mark: ev.mark,
                estimated: ev.estimated_time,
            });
        }
        out
    }
}

/// Each stream's key, by stream index: what its request carried, so the same exchange is found
/// at another vantage point. None for a stream of a source merged into the session (a log of the
/// same traffic is not this vantage point's).
pub(crate) fn stream_keys(s: &Session) -> Vec<Option<Key>> {
    let mut seen: WireMap<(String, String), u32> = WireMap::default();
    let input = s.vantage().input;
    s.streams
        .iter()
        .map(|st| {
            if st.opened.frame.input != input {
                return None;
            }
            let carried = carried(st);
            let nth = seen
                .entry((st.method.clone(), carried.clone()))
                .or_default();
            let key = Key {
                method: st.method.clone(),
                carried,
                nth: *nth,
            };
            *nth += 1;
            Some(key)
        })
        .collect()
}

/// The request's JSON-RPC messages (method and ID), or a GET's `Last-Event-ID`.
fn carried(st: &Stream) -> String {
    if st.transport == StreamTransport::Get {
        return st.resume.as_ref().map_or_else(String::new, |r| {
            format!("last-event-id {}", r.last_event_id)
        });
    }
    let mut parts: Vec<String> = st
        .client_messages
        .iter()
        .filter(|m| m.kind != Kind::Malformed)
        .map(|m| {
            let method = m.method.as_deref().unwrap_or("");
            match &m.id {
                Some(id) => format!("{method}#{}", id.label()),
                None => method.to_string(),
            }
        })
        .collect();
    parts.sort();
    parts.join(",")
}

/// One stream in two observations: `far` nearer the server, `near` nearer the client.
pub(crate) struct Pair<'a> {
    pub(crate) near: &'a Observed,
    pub(crate) far: &'a Observed,
}

/// The clock offset of the far input against the near one (far − near), bounded by causality:
/// a request reaches the far leg after the near one, an event the near leg after the far one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Offset {
    pub(crate) low: f64,
    pub(crate) high: f64,
    pub(crate) exchanges: usize,
}

impl Offset {
    /// No bound yet.
    pub(crate) fn unbounded() -> Offset {
        Offset {
            low: f64::NEG_INFINITY,
            high: f64::INFINITY,
            exchanges: 0,
        }
    }

    /// Both bounds hold: the tighter of each, from the exchanges of both.
    pub(crate) fn intersect(&mut self, other: Offset) {
        self.low = self.low.max(other.low);
        self.high = self.high.min(other.high);
        self.exchanges += other.exchanges;
    }

    /// The middle of the bounds, when both are known and do not cross.
    pub(crate) fn estimate(&self) -> Option<f64> {
        (self.low.is_finite() && self.high.is_finite() && self.low <= self.high)
            .then(|| (self.low + self.high) / 2.0)
    }

    /// The bounds as the evidence gives them, to the microsecond.
    pub(crate) fn bounds(&self) -> ClockBounds {
        let r = |x: f64| x.is_finite().then(|| (x * 1e6).round() / 1e6);
        ClockBounds {
            estimate: self.estimate().and_then(r),
            min: r(self.low),
            max: r(self.high),
            from_exchanges: self.exchanges,
        }
    }
}

/// For each event of `a`, the event of `b` it is, matched in order, each of `b`'s once: the same
/// ID and the same bytes. An index of `b` by both finds the candidates (its keys compare the
/// bytes), so the matching is linear however many events are missing.
pub(crate) fn matching(a: &Observed, b: &Observed) -> Vec<Option<usize>> {
    let mut at: WireMap<(Option<&str>, &[u8]), VecDeque<usize>> = WireMap::default();
    for (j, e) in b.events.iter().enumerate() {
        at.entry((e.id.as_deref(), &e.data))
            .or_default()
            .push_back(j);
    }
    let mut from = 0;
    a.events
        .iter()
        .map(|e| {
            let queue = at.get_mut(&(e.id.as_deref(), &e.data[..]))?;
            while queue.front().is_some_and(|&j| j < from) {
                queue.pop_front();
            }
            let j = queue.pop_front()?;
            from = j + 1;
            Some(j)
        })
        .collect()
}

/// The events of `a` that `b` lacks, as indexes into `a.events`.
fn missing(a: &Observed, b: &Observed) -> Vec<usize> {
    matching(a, b)
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.is_none().then_some(i))
        .collect()
}

/// Streams of `a` and `b` that carried the same, matched in order. A key one observation has
/// more often than the other (a GET without `Last-Event-ID` missing from one input) cannot say
/// which is which, and is left out.
fn pairs<'a>(a: &'a Observation, b: &'a Observation) -> Vec<(&'a Observed, &'a Observed)> {
    let count = |o: &'a Observation| {
        let mut n: WireMap<(&'a str, &'a str), u32> = WireMap::default();
        for st in &o.streams {
            *n.entry((st.key.method.as_str(), st.key.carried.as_str()))
                .or_default() += 1;
        }
        n
    };
    let (na, nb) = (count(a), count(b));
    let by_key: WireMap<&Key, &Observed> = b.streams.iter().map(|o| (&o.key, o)).collect();
    a.streams
        .iter()
        .filter(|x| {
            let k = (x.key.method.as_str(), x.key.carried.as_str());
            na.get(&k) == nb.get(&k)
        })
        .filter_map(|x| by_key.get(&x.key).map(|y| (x, *y)))
        .collect()
}

/// Whether the first of each pair is nearer the server: the one holding events the other lacks,
/// when the other holds none it lacks. None: neither lost anything, or each lacks some (then it
/// is not a hop that lost them).
fn first_nearer_server(matched: &[(&Observed, &Observed)]) -> Option<bool> {
    let comparable = matched
        .iter()
        .filter(|(x, y)| !x.lacks_bytes && !y.lacks_bytes);
    let (mut a_alone, mut b_alone) = (0, 0);
    for (x, y) in comparable {
        a_alone += missing(x, y).len();
        b_alone += missing(y, x).len();
    }
    match (a_alone, b_alone) {
        (0, 0) => None,
        (_, 0) => Some(true),
        (0, _) => Some(false),
        _ => None,
    }
}

/// The matched streams as pairs, the first of each nearer the server when `a_far`.
fn oriented<'a>(matched: &[(&'a Observed, &'a Observed)], a_far: bool) -> Vec<Pair<'a>> {
    matched
        .iter()
        .map(|&(x, y)| {
            if a_far {
                Pair { near: y, far: x }
            } else {
                Pair { near: x, far: y }
            }
        })
        .collect()
}

/// Whether the first of each pair is nearer the server, by causality alone: a request reaches
/// the leg nearer the server after the other, a response byte the leg nearer the client after
/// the other. Taken the right way round the bounds these put on the clock offset meet whatever
/// the offset; the wrong way round they cross by the two legs' delays. None when both or neither
/// fit (too few exchanges with responses to tell).
fn nearer_server_by_causality(matched: &[(&Observed, &Observed)]) -> Option<bool> {
    let fits = |a_far: bool| {
        let o = offset(&oriented(matched, a_far));
        o.low.is_finite() && o.high.is_finite() && o.low <= o.high
    };
    match (fits(true), fits(false)) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    }
}

fn offset(pairs: &[Pair<'_>]) -> Offset {
    let mut o = Offset::unbounded();
    for p in pairs {
        o.exchanges += 1;
        o.high = o
            .high
            .min(p.far.opened.time.seconds_since(p.near.opened.time));
        // A response head reaches the far leg before the near one, as an event does.
        if let (Some(f), Some(n)) = (p.far.head, p.near.head) {
            o.low = o.low.max(f.time.seconds_since(n.time));
        }
        let matched = matching(p.far, p.near);
        for (i, j) in matched.iter().enumerate() {
            if let Some(j) = j
                && !p.far.events[i].estimated
                && !p.near.events[*j].estimated
            {
                let d = p.far.events[i]
                    .mark
                    .time
                    .seconds_since(p.near.events[*j].mark.time);
                o.low = o.low.max(d);
            }
        }
    }
    o
}

/// One observation of a session, and the session itself while it is still at hand (an
/// observation kept from a session already reported has none).
pub(crate) type Side<'a> = (&'a Observation, Option<&'a Session>);

/// Compares two observations of one session from different inputs. A finding goes to the
/// session nearer the client, the one that lacks the events, and the fallback its client made
/// for that stream names it as its cause; when that session was already reported, it goes to
/// the one nearer the server. Returns the new findings' handles, with their sessions.
pub(crate) fn detect(
    a: Side<'_>,
    b: Side<'_>,
    inputs: &[String],
    clocks: &mut super::clocks::Clocks,
    hops: &mut Vec<(SessionIdx, SessionIdx)>,
    f: &mut Findings,
) -> Vec<(SessionIdx, usize)> {
    let ((oa, sa), (ob, sb)) = (a, b);
    if oa.dropped || ob.dropped || oa.vantage() == ob.vantage() {
        return Vec::new();
    }
    let matched = pairs(oa, ob);
    let by_loss = first_nearer_server(&matched);
    let Some(a_far) = by_loss.or_else(|| nearer_server_by_causality(&matched)) else {
        return Vec::new();
    };
    let ((near, near_s), (far, far_s)) = if a_far {
        ((ob, sb), (oa, sa))
    } else {
        ((oa, sa), (ob, sb))
    };
    hops.push((near.session, far.session));
    let pairs = oriented(&matched, a_far);
    // Two hops of one input are on one clock: the offset is nought, not merely bounded.
    let clock = match near.input == far.input {
        true => Offset {
            low: 0.0,
            high: 0.0,
            exchanges: pairs.len(),
        },
        false => offset(&pairs),
    };
    let hop = Hop {
        near,
        far,
        inputs,
        clock,
    };
    if near.input != far.input {
        clocks.add(far.input, near.input, hop.clock);
    }
    let mut added = super::stream_stalled::detect(&pairs, &hop, near_s, far_s, f);
    if by_loss.is_none() {
        return added;
    }
    for p in pairs
        .iter()
        .filter(|p| !p.near.lacks_bytes && !p.far.lacks_bytes)
    {
        let lost = before_the_end(p, missing(p.far, p.near), hop.clock);
        if lost.is_empty() {
            continue;
        }
        if let Some(s) = near_s {
            let h = f.add(s, finding(p, &lost, &hop, p.near));
            f.list[h].seen_at.push(seen_far(p, &lost, far));
            f.name_as_cause(s, FindingKind::SseFallback, p.near.idx, h);
            name_as_why_unanswered(s, p.near.idx, h, &hop, f);
            added.push((s.idx, h));
        } else if let Some(s) = far_s {
            added.push((s.idx, f.add(s, finding(p, &lost, &hop, p.far))));
        }
    }
    added
}

/// The lost events where the far observation saw them: the hop finding cites frames at both
/// vantage points.
fn seen_far(p: &Pair<'_>, lost: &[usize], far: &Observation) -> crate::finding::SeenAt {
    let mut frames = vec![p.far.opened];
    frames.extend(lost.iter().take(IDS_LISTED).map(|&i| p.far.events[i].mark));
    crate::finding::SeenAt {
        vantage: far.vantage(),
        session: far.session,
        time: p.far.opened,
        frames,
        streams: vec![p.far.label.clone()],
    }
}

/// A request the near session never got an answer to, on a stream whose events the hop lost:
/// that is why, unless its own session already shows a replay that skipped the answer.
fn name_as_why_unanswered(
    s: &Session,
    stream: StreamIdx,
    cause: usize,
    hop: &Hop<'_>,
    f: &mut Findings,
) {
    let text = format!(
        "the hop between {} and {} lost the events of {}",
        hop.name(hop.far),
        hop.name(hop.near),
        s.streams[stream].label()
    );
    f.update_resting_on(s, FindingKind::UnansweredRequest, stream, |u| {
        let crate::Evidence::UnansweredRequest(e) = &mut u.evidence else {
            return;
        };
        if u.severity == Severity::Info {
            return;
        }
        if let Some(summary) = e.lost_in_transit(s.streams[stream].label(), &text) {
            u.caused_by.push(cause);
            u.summary = summary;
        }
    });
}

/// Of the events `lost`, those that reached the far leg while the near stream was still open:
/// one sent after the client left was not lost by the hop. An event at far time `t` was at the
/// hop by near time `t − low` at the latest (the offset is at least `low`); without a lower
/// bound, one at `t − high` or later after the end certainly came too late, and the rest are
/// kept.
fn before_the_end(p: &Pair<'_>, lost: Vec<usize>, clock: Offset) -> Vec<usize> {
    let Some(end) = p.near.ended else {
        return lost;
    };
    let bound = if clock.low.is_finite() {
        clock.low
    } else {
        clock.high
    };
    if !bound.is_finite() {
        return lost;
    }
    let strict = clock.low.is_finite();
    lost.into_iter()
        .filter(|&i| {
            let late = p.far.events[i].mark.time.seconds_since(end.time) - bound;
            if strict { late < 0.0 } else { late <= 0.0 }
        })
        .collect()
}

/// The two observations and their inputs' names, for the evidence.
pub(crate) struct Hop<'a> {
    pub(crate) near: &'a Observation,
    pub(crate) far: &'a Observation,
    inputs: &'a [String],
    pub(crate) clock: Offset,
}

impl Hop<'_> {
    /// An observation as a person finds it: its input's path, and the server it reached when
    /// both hops are in that one input.
    pub(crate) fn name(&self, o: &Observation) -> String {
        let path = self.path(o.input);
        match self.near.input == self.far.input {
            true => format!("{path} (the hop to {})", o.server),
            false => path,
        }
    }

    fn path(&self, input: InputId) -> String {
        self.inputs
            .get(input as usize)
            .cloned()
            .unwrap_or_else(|| format!("input {input}"))
    }

    pub(crate) fn side(&self, o: &Observation, st: &Observed) -> Leg {
        Leg {
            input: o.input,
            input_path: self.path(o.input),
            session: o.label.clone(),
            stream: st.label.clone(),
            opened: st.opened.time.rfc3339(),
            frame: st.opened.frame.frame,
        }
    }
}

/// The finding, on the session of the stream `own` (either side).
fn finding(p: &Pair<'_>, lost: &[usize], hop: &Hop<'_>, own: &Observed) -> New {
    let evs: Vec<&Seen> = lost.iter().map(|&i| &p.far.events[i]).collect();
    let ids: Vec<Option<String>> = evs
        .iter()
        .take(IDS_LISTED)
        .map(|e| e.id.as_deref().map(str::to_string))
        .collect();
    let delivered = p.near.events.len();
    let what = match (p.far.key.method.as_str(), p.far.key.carried.as_str()) {
        (m, "") => m.to_string(),
        (m, c) => format!("{m} {c}"),
    };
    let how = if delivered == 0 {
        "none of them arrived"
    } else {
        "the rest arrived"
    };
    let summary = format!(
        "{} event{} the server sent on {} ({what}), seen in {}, never reached {} ({how}): lost between the two",
        evs.len(),
        if evs.len() == 1 { "" } else { "s" },
        p.far.label,
        hop.name(hop.far),
        hop.name(hop.near),
    );
    let mark = |m: Option<&&Seen>| {
        m.map(|e| EventAt {
            time: e.mark.time.rfc3339(),
            frame: e.mark.frame.frame,
            input: e.mark.frame.input,
        })
    };
    New {
        kind: FindingKind::LostInTransit,
        severity: INFO.severity,
        // A moment of its own session's input: when its stream was opened.
        time: own.opened,
        frames: vec![own.opened],
        streams: vec![own.idx],
        summary,
        evidence: crate::Evidence::LostInTransit(Evidence {
            events: evs.len(),
            event_ids: ids,
            first_lost: mark(evs.first()),
            last_lost: mark(evs.last()),
            seen_in: hop.side(hop.far, p.far),
            missing_from: hop.side(hop.near, p.near),
            delivered,
            clock_offset_s: hop.clock.bounds(),
        }),
        caused_by: Vec::new(),
        subject: Subject::Stream(own.idx),
    }
}

/// The evidence of a `lost_in_transit`: the events one observation of a session holds and the
/// other, nearer the client, never received, both observations, and the inputs' clock offset.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// How many events were lost.
    pub events: usize,
    /// The first 20 of their IDs (none for an event without one).
    pub event_ids: Vec<Option<String>>,
    /// The first and last lost event, as the far input saw them.
    pub first_lost: Option<EventAt>,
    pub last_lost: Option<EventAt>,
    /// The observation nearer the server.
    pub seen_in: Leg,
    /// The observation nearer the client.
    pub missing_from: Leg,
    /// Events the near stream did receive.
    pub delivered: usize,
    pub clock_offset_s: ClockBounds,
}

/// When and where an input saw an event.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventAt {
    pub time: String,
    pub frame: u64,
    pub input: InputId,
}

/// A stream as one input observed it: the input, the session's observation in it, the stream
/// and when it was opened.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Leg {
    pub input: InputId,
    /// The input's name, as given on the command line.
    pub input_path: String,
    /// The observation's session key.
    pub session: String,
    pub stream: String,
    pub opened: String,
    /// The frame it was opened in.
    pub frame: u64,
}

/// The far input's clock minus the near one's, in seconds, bounded by causality over matched
/// exchanges (a request reaches the far leg after the near one, an event the near leg after the
/// far one), to the microsecond.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClockBounds {
    /// The middle of the bounds; none when a bound is missing or they cross.
    pub estimate: Option<f64>,
    /// The lower bound (from events and response heads); none when unbounded.
    pub min: Option<f64>,
    /// The upper bound (from requests); none when unbounded.
    pub max: Option<f64>,
    /// How many matched exchanges bounded it.
    pub from_exchanges: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{FrameRef, Timestamp};

    fn at(input: InputId, ms: i64) -> Mark {
        Mark {
            time: Timestamp(ms * 1_000_000),
            frame: FrameRef::new(input, ms as u64),
        }
    }

    /// A stream opened at `opened` ms whose events are `(id, data, ms)`.
    fn stream(input: InputId, opened: i64, events: &[(&str, &str, i64)]) -> Observed {
        Observed {
            key: Key {
                method: "POST".into(),
                carried: "tools/call#7".into(),
                nth: 0,
            },
            idx: 0,
            label: "post:s1".into(),
            opened: at(input, opened),
            head: None,
            ended: None,
            lacks_bytes: false,
            events: events
                .iter()
                .map(|(id, data, ms)| Seen {
                    id: Some((*id).into()),
                    data: data.as_bytes().into(),
                    mark: at(input, *ms),
                    estimated: false,
                })
                .collect(),
        }
    }

    #[test]
    fn an_event_is_the_same_by_its_id_and_its_bytes_in_order() {
        let far = stream(
            1,
            0,
            &[("1", "a", 1), ("2", "b", 2), ("2", "b", 3), ("3", "c", 4)],
        );
        let near = stream(0, 0, &[("1", "a", 5), ("2", "b", 6), ("3", "other", 7)]);
        // The second "2" and "3" (other bytes under the same ID) never arrived.
        assert_eq!(missing(&far, &near), vec![2, 3]);
        assert_eq!(missing(&near, &far), vec![2]);
    }

    #[test]
    fn matching_many_events_with_half_of_them_lost_stays_linear() {
        // 200,000 events, every other one lost: a scan per lost event would be 10^10 steps.
        let n = 200_000;
        let ids: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let far_events: Vec<(&str, &str, i64)> = ids.iter().map(|i| (i.as_str(), "x", 1)).collect();
        let near_events: Vec<(&str, &str, i64)> = far_events.iter().step_by(2).copied().collect();
        let (far, near) = (stream(1, 0, &far_events), stream(0, 0, &near_events));
        let lost = missing(&far, &near);
        assert_eq!(lost.len(), n / 2);
        assert!(lost.iter().all(|i| i % 2 == 1));
    }

    #[test]
    fn the_side_holding_what_the_other_lacks_is_nearer_the_server() {
        let far = stream(1, 0, &[("1", "a", 1), ("2", "b", 2)]);
        let near = stream(0, 0, &[("1", "a", 5)]);
        assert_eq!(first_nearer_server(&[(&far, &near)]), Some(true));
        assert_eq!(first_nearer_server(&[(&near, &far)]), Some(false));
        assert_eq!(first_nearer_server(&[(&near, &near)]), None, "nothing lost");
        // Each lacking some is no hop's loss (the matching is wrong, or both were cut).
        let other = stream(0, 0, &[("1", "a", 5), ("9", "z", 6)]);
        assert_eq!(first_nearer_server(&[(&far, &other)]), None);
        // What a stream with missing bytes lacks proves nothing.
        let cut = Observed {
            lacks_bytes: true,
            ..stream(0, 0, &[])
        };
        assert_eq!(first_nearer_server(&[(&far, &cut)]), None);
    }

    #[test]
    fn the_offset_is_bounded_by_requests_and_events() {
        // The far clock runs 1000 ms ahead; the proxy takes 2 ms each way.
        let far = stream(1, 1_002, &[("1", "a", 1_010)]);
        let near = stream(0, 0, &[("1", "a", 12)]);
        let o = offset(&[Pair {
            near: &near,
            far: &far,
        }]);
        assert_eq!((o.low, o.high), (0.998, 1.002));
        assert!((o.estimate().unwrap() - 1.0).abs() < 1e-9);
        let none = offset(&[Pair {
            near: &stream(0, 0, &[]),
            far: &far,
        }]);
        assert_eq!(
            none.estimate(),
            None,
            "no event seen on both: no lower bound"
        );
    }

    #[test]
    fn events_that_reached_the_hop_after_the_client_left_were_not_lost_by_it() {
        let far = stream(1, 0, &[("1", "a", 10), ("2", "b", 500)]);
        let near = Observed {
            ended: Some(at(0, 100)),
            ..stream(0, 0, &[])
        };
        let clock = Offset {
            low: 0.0,
            high: 0.001,
            exchanges: 1,
        };
        let p = Pair {
            near: &near,
            far: &far,
        };
        assert_eq!(before_the_end(&p, vec![0, 1], clock), vec![0]);
        // Only an upper bound: an event certainly after the end is left out.
        let upper = Offset {
            low: f64::NEG_INFINITY,
            ..clock
        };
        assert_eq!(before_the_end(&p, vec![0, 1], upper), vec![0]);
        let unbounded = Offset {
            high: f64::INFINITY,
            ..upper
        };
        assert_eq!(before_the_end(&p, vec![0, 1], unbounded), vec![0, 1]);
    }

    #[test]
    fn a_key_one_side_has_more_often_is_not_paired() {
        let obs = |input, n: u32| Observation {
            session: 0,
            label: "S1".into(),
            input,
            server: "127.0.0.1:9000".parse().unwrap(),
            streams: (0..n)
                .map(|nth| Observed {
                    key: Key {
                        method: "GET".into(),
                        carried: String::new(),
                        nth,
                    },
                    ..stream(input, 0, &[])
                })
                .collect(),
            dropped: false,
        };
        assert_eq!(pairs(&obs(0, 2), &obs(1, 2)).len(), 2);
        assert!(
            pairs(&obs(0, 2), &obs(1, 3)).is_empty(),
            "which GET is which is unknown"
        );
    }
}
