//! `event_id_reset`: integer event IDs went backwards where the incident note's decision
//! boundary says they must not — on the stream a fallback opened (not greater than the highest ID
//! the client saw before it: a second counter), or at the start of a resume (not greater than
//! the `Last-Event-ID` sent).


use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::ids;
use mcpf_mcp::model::{Seq, Session, StreamIdx, Need};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::EventIdReset,
    severity: Severity::High,
    when: "integer IDs: after a fallback, IDs on the new stream not greater than the highest the client saw before it; or a resume whose first ID is not greater than Last-Event-ID",
    meaning: "The event counter the client is now reading restarted below what it already saw: the server keeps more than one counter (one per transport or per stream), or reset its counter.",
    why: "Two counters mean the same ID names two different events. Any later Last-Event-ID is ambiguous, and a server that resolves it in the wrong counter replays the wrong events (the seed incident).",
    fix: "Server: one namespace per stream, visible in the ID (get:41, post:41), or a single monotonic counter per session. Client: treat a non-increasing ID after a fallback as a reason to re-initialize rather than resume.",
    requires: &[Need::Bodies],
};

/// The highest integer event ID the client had received at each point of the session, sorted
/// once: every fallback and resume asks, and a session can hold 30,000 of them.
struct Highest {
    /// Events with an integer ID, in session order.
    seqs: Vec<Seq>,
    /// `best[k]`: the highest (ID, stream) among the first `k + 1` events (the later stream on
    /// a tie); `other[k]`: the highest among them on a stream other than `best[k]`'s.
    best: Vec<(u64, StreamIdx)>,
    other: Vec<Option<(u64, StreamIdx)>>,
}

impl Highest {
    fn new(s: &Session) -> Self {
        let mut events: Vec<(Seq, u64, StreamIdx)> = s
            .streams
            .iter()
            .flat_map(|st| st.events.iter().map(move |e| (st.idx, e)))
            .filter_map(|(t, e)| {
                let n = e.id.as_deref().and_then(ids::integer)?;
                Some((s.seq(e.mark), n, t))
            })
            .collect();
        events.sort_unstable_by_key(|&(seq, _, _)| seq);
        let mut h = Highest {
            seqs: Vec::with_capacity(events.len()),
            best: Vec::with_capacity(events.len()),
            other: Vec::with_capacity(events.len()),
        };
        let mut best: Option<(u64, StreamIdx)> = None;
        let mut other: Option<(u64, StreamIdx)> = None;
        for (seq, n, t) in events {
            let x = (n, t);
            match best {
                Some(b) if x <= b => {
                    if t != b.1 && other.is_none_or(|o| x > o) {
                        other = Some(x);
                    }
                }
                Some(b) => {
                    if t != b.1 {
                        other = Some(b);
                    }
                    best = Some(x);
                }
                None => best = Some(x),
            }
            h.seqs.push(seq);
            h.best.push(best.unwrap_or(x));
            h.other.push(other);
        }
        h
    }

    /// Highest integer event ID the client received before `before`, on a stream other than
    /// `except`, and where.
    fn before(&self, s: &Session, before: Mark, except: StreamIdx) -> Option<(u64, String)> {
        let k = self.seqs.partition_point(|&q| q < s.seq(before));
        let k = k.checked_sub(1)?;
        let (n, t) = if self.best[k].1 != except {
            self.best[k]
        } else {
            self.other[k]?
        };
        Some((n, s.streams[t].label()))
    }
}

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    let mut index = None;
    after_fallbacks(s, f, &mut index);
    on_resumes(s, f, &mut index);
}

/// Built only when a fallback or a resume asks.
fn highest_before(
    index: &mut Option<Highest>,
    s: &Session,
    before: Mark,
    except: StreamIdx,
) -> Option<(u64, String)> {
    index
        .get_or_insert_with(|| Highest::new(s))
        .before(s, before, except)
}

/// A fallback stream whose first integer ID is not above the highest the client already saw.
fn after_fallbacks(s: &Session, f: &mut Findings, index: &mut Option<Highest>) {
    for fb in &s.fallbacks {
        let to = &s.streams[fb.to_stream];
        let Some((ei, first)) = to
            .events
            .iter()
            .enumerate()
            .find_map(|(i, e)| e.id.as_deref().and_then(ids::integer).map(|n| (i, n)))
        else {
            continue;
        };
        let Some((highest, where_)) = highest_before(index, s, fb.mark, to.idx) else {
            continue;
        };
        if first > highest {
            continue;
        }
        let cause = f.find(
            s.idx,
            FindingKind::SseFallback,
            &Subject::FallbackTo(fb.to_stream),
        );
        let mark = to.events[ei].mark;
        f.add(
            s,
            New {
                kind: FindingKind::EventIdReset,
                severity: INFO.severity,
                time: mark,
                frames: vec![fb.mark, mark],
                streams: vec![to.idx],
                summary: format!(
                    "after the fallback, {} started at event ID {first}, not above {highest} already seen on {where_}: a second counter",
                    to.label()
                ),
                evidence: crate::Evidence::EventIdReset(Evidence {
                    last_event_id: None,
                    first_event_id: first.to_string(),
                    highest_before: Some(highest.to_string()),
                    highest_seen_on: Some(where_),
                    stream: to.label(),
                    ids_minted_twice: 0,
                    crossed_by: Vec::new(),
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::FallbackTo(fb.to_stream),
            },
        );
    }
}

/// A resume whose first integer ID is not greater than the `Last-Event-ID` it sent.
fn on_resumes(s: &Session, f: &mut Findings, index: &mut Option<Highest>) {
    for r in s.streams.iter().filter(|st| st.resume.is_some()) {
        let Some(resume) = &r.resume else { continue };
        let Some(lei) = ids::integer(&resume.last_event_id) else {
            continue;
        };
        let Some((ei, first)) = r
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.priming)
            .find_map(|(i, e)| e.id.as_deref().and_then(ids::integer).map(|n| (i, n)))
        else {
            continue;
        };
        if first > lei {
            continue;
        }
        let before = highest_before(index, s, r.opened, r.idx);
        let highest = before.as_ref().map(|(n, _)| n.to_string());
        let highest_seen_on = before.map(|(_, w)| w);
        let cause = f.find(
            s.idx,
            FindingKind::UnsafeResumptionAfterFallback,
            &Subject::Resume(r.idx),
        );
        let mark = r.events[ei].mark;
        f.add(
            s,
            New {
                kind: FindingKind::EventIdReset,
                severity: INFO.severity,
                time: mark,
                frames: vec![r.opened, mark],
                streams: vec![r.idx],
                summary: format!(
                    "resume with Last-Event-ID {lei} began at event ID {first}, not after it",
                ),
                evidence: crate::Evidence::EventIdReset(Evidence {
                    last_event_id: Some(resume.last_event_id.clone()),
                    first_event_id: first.to_string(),
                    highest_before: highest,
                    highest_seen_on,
                    stream: r.label(),
                    ids_minted_twice: 0,
                    crossed_by: Vec::new(),
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The evidence of an `event_id_reset`: the stream whose IDs started again, and the highest ID
/// the client had seen before it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// The `Last-Event-ID` of a resume that began at or below it; none for a fallback stream.
    pub last_event_id: Option<String>,
    pub first_event_id: String,
    pub highest_before: Option<String>,
    /// The stream that carried `highest_before`.
    pub highest_seen_on: Option<String>,
    pub stream: String,
    /// After a fallback: how many IDs both counters minted (0 when none collided, or for a
    /// resume) ...
    pub ids_minted_twice: u64,
    /// ... and the resumes whose `Last-Event-ID` was one of them: the reset is the incident's
    /// root when a resume crossed it, a latent defect (medium) when none did.
    pub crossed_by: Vec<String>,
}
