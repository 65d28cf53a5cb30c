#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
//! Detectors: one file per finding kind, each tracing back to the resumption rules of the
//! incident note (a `Last-Event-ID` is only valid in the event-ID namespace that minted it) or to
//! the MCP transport specification.
//!
//! Detectors read the analysed sessions and add [`Finding`]s; they never format output. They run
//! in a fixed order so a consequence can name its cause (`caused_by`): a fallback makes a resume
//! unsafe, an unsafe resume replays the wrong namespace, the replay duplicates a response and
//! skips the events that held the answer the client then waits for forever.

#[macro_use]
mod kind;

mod clocks;
// Not a kind of its own: the replicas of a balancer as `cross_namespace_replay`.
mod cross_replica_resume;
mod finding;
mod fold;
mod index;
mod introspect;
pub mod verdict;

// Every finding kind and the module of its detector, in the order they are listed: the one
// place a kind is registered (see kind.rs for what is derived from it).
kinds! {
    CaptureGap => capture_gap,
    SseFallback => sse_fallback,
    UnsafeResumptionAfterFallback => unsafe_resumption_after_fallback,
    CrossNamespaceReplay => cross_namespace_replay,
    EventIdReset => event_id_reset,
    ResumeGap => resume_gap,
    SessionNotReaffirmed => session_not_reaffirmed,
    SessionIdChanged => session_id_changed,
    DuplicateResponse => duplicate_response,
    RequestIdReused => request_id_reused,
    SkippedEvents => skipped_events,
    UnansweredRequest => unanswered_request,
    RetryWithoutIdempotencyKey => retry_without_idempotency_key,
    LostInTransit => lost_in_transit,
    RevisionViolation => revision_violation,
    PendingAtCaptureEnd => pending_at_capture_end,
    EventIdCollision => event_id_collision,
    ResponseOnStandaloneStream => response_on_standalone_stream,
    CursorDropped => cursor_dropped,
    RetryNotHonoured => retry_not_honoured,
    StatusCodeViolation => status_code_violation,
    CrossSessionReplay => cross_session_replay,
    SessionNotFound => session_not_found,
    StreamStalled => stream_stalled,
    ResyncWithoutReconciliation => resync_without_reconciliation,
}

pub use clocks::ClockOffset;
pub use finding::{Confidence, Finding, Findings, Labels, New, SeenAt, Severity, Subject};
pub use kind::KindInfo;
pub use mcpf_mcp::model::Vantage;

use mcpf_mcp::model::{Lack, Need, Session, SessionIdx, StreamIdx};
use mcpf_model::Mark;

/// The detector stage: every detector on each session the MCP stage finalizes, then the order
/// of all findings. The same path for a run of the binary and for the tests.
#[derive(Debug, Default)]
pub struct Detector {
    findings: Findings,
    /// The clock offsets between inputs the hop comparisons bounded.
    clocks: clocks::Clocks,
    /// The inputs' names, by input index.
    inputs: Vec<String>,
    /// Observations of sessions already reported, by session ID and vantage point, for an
    /// observation of the same session elsewhere that begins after they ended (another host's
    /// clock, or a hop of the same capture whose record was released early).
    kept: std::collections::HashMap<
        String,
        Vec<(
            lost_in_transit::Vantage,
            std::collections::VecDeque<lost_in_transit::Observation>,
        )>,
    >,
    /// What they hold, and the sessions not kept once [`MAX_KEPT_BYTES`] was reached.
    kept_bytes: usize,
    not_kept: u64,
}

/// What the detectors made of one observation of a session.
#[derive(Debug)]
pub struct Outcome {
    /// Its resumption verdict: of the logical session, on the observation stated.
    pub verdict: verdict::Verdict,
    /// Handles of the findings stated with it.
    pub findings: Vec<usize>,
    /// Another observation of the same session (another vantage point) that states it: this
    /// one's findings were folded into or moved to that one's.
    pub folded_into: Option<SessionIdx>,
    /// Its calls, for the call profile: counted from the answers the detectors indexed.
    pub calls: mcpf_mcp::profile::CallProfile,
}

/// Observations of one session ID kept per vantage point (an input, and the server endpoint
/// there), and compared per vantage point in a group: one ID named again and again (a server
/// with a constant ID) must not make the comparison quadratic.
/// The latest are kept; those left out are counted.
const PER_INPUT: usize = 4;

/// What the kept observations may hold together (their events' bytes, about).
const MAX_KEPT_BYTES: usize = 512 << 20;

impl Detector {
    pub fn new() -> Detector {
        Detector::default()
    }

    /// The inputs' names by index: with two or more, observations of one session in different
    /// inputs are compared (`lost_in_transit`), see [`Detector::group`].
    pub fn with_inputs(mut self, inputs: Vec<String>) -> Detector {
        self.inputs = inputs;
        self
    }

    /// Runs every detector on a finalized session (its events still present); returns its
    /// resumption verdict and the handles of the findings it got.
    pub fn session(&mut self, s: &Session) -> (verdict::Verdict, Vec<usize>) {
        let one = self.group(&[s]).swap_remove(0);
        (one.verdict, one.findings)
    }

    /// [`Detector::session`] on each observation of one session (the same session ID in
    /// different inputs: the hops of its traffic), then each pair of them compared.
    /// The observations are then one logical session: each finding is stated once, on the
    /// observation nearest the client, the others [`Outcome::folded_into`] it.
    pub fn group(&mut self, sessions: &[&Session]) -> Vec<Outcome> {
        // The verdict rests on the session's own detectors (a hop's finding is no resumption).
        let mut calls: Vec<mcpf_mcp::profile::CallProfile> = Vec::with_capacity(sessions.len());
        let mut out: Vec<(verdict::Verdict, Vec<usize>)> = sessions
            .iter()
            .map(|s| {
                let first = self.findings.list.len();
                calls.push(run_detectors(s, &mut self.findings));
                let own = first..self.findings.list.len();
                let v = verdict::resumption(s, &self.findings.list[own.clone()]);
                (v, own.collect())
            })
            .collect();
        // Whether the session was alive may show in another observation (a replica): searched
        // once for the group.
        for (session, h) in session_not_found::detect_group(sessions, &mut self.findings) {
            if let Some(at) = sessions.iter().position(|s| s.idx == session) {
                out[at].1.push(h);
            }
        }
        // Replicas of one session seen as servers of their own (the server legs of a balancer).
        if sessions.len() > 1 {
            let first = self.findings.list.len();
            cross_replica_resume::detect_across(sessions, &mut self.findings);
            for h in first..self.findings.list.len() {
                let session = self.findings.list[h].session;
                if let Some(at) = sessions.iter().position(|s| s.idx == session) {
                    out[at].1.push(h);
                    // A crossed namespace makes its resumption unsafe.
                    let of: Vec<Finding> = out[at]
                        .1
                        .iter()
                        .map(|&h| self.findings.list[h].clone())
                        .collect();
                    out[at].0 = verdict::resumption(sessions[at], &of);
                }
            }
        }
        // Another vantage point: another input, or another server endpoint of this one in the
        // group (both legs of a proxy in one capture). A lone observation in a one-input run
        // has nothing to be compared with, now or later, and is not copied.
        let mut hops = Vec::new();
        if self.inputs.len() > 1 || sessions.len() > 1 {
            for (s, handles) in self.compare_hops(sessions, &mut hops) {
                if let Some(at) = sessions.iter().position(|x| x.idx == s) {
                    out[at].1.push(handles);
                }
            }
        }
        let primary = fold::fold(sessions, &hops, &mut out, &mut self.findings);
        out.into_iter()
            .zip(calls)
            .enumerate()
            .map(|(at, ((verdict, findings), calls))| Outcome {
                verdict,
                findings,
                folded_into: (at != primary).then(|| sessions[primary].idx),
                calls,
            })
            .collect()
    }

    /// Each pair of observations at hand, then each against those kept from sessions already
    /// reported; then theirs are kept in turn.
    /// `hops`: each pair of observations whose order is known, the one nearer the client first.
    fn compare_hops(
        &mut self,
        sessions: &[&Session],
        hops: &mut Vec<(SessionIdx, SessionIdx)>,
    ) -> Vec<(SessionIdx, usize)> {
        let at_hand = self.observe(sessions);
        let mut added = Vec::new();
        for i in 0..at_hand.len() {
            for j in i + 1..at_hand.len() {
                let (a, b) = (
                    (&at_hand[i].1, Some(at_hand[i].0)),
                    (&at_hand[j].1, Some(at_hand[j].0)),
                );
                added.extend(lost_in_transit::detect(
                    a,
                    b,
                    &self.inputs,
                    &mut self.clocks,
                    hops,
                    &mut self.findings,
                ));
            }
            let (s, o) = &at_hand[i];
            let Some(id) = &s.session_id else {
                continue;
            };
            let kept = self.kept.get(id).into_iter().flatten();
            for (_, list) in kept.filter(|(v, _)| *v != o.vantage()) {
                for old in list {
                    added.extend(lost_in_transit::detect(
                        (o, Some(*s)),
                        (old, None),
                        &self.inputs,
                        &mut self.clocks,
                        hops,
                        &mut self.findings,
                    ));
                }
            }
        }
        for (s, o) in at_hand {
            self.keep(s, o);
        }
        added
    }

    /// The observations of a group that take part: at most [`PER_INPUT`] of each vantage point,
    /// with one budget for their copies.
    fn observe<'s>(
        &mut self,
        sessions: &[&'s Session],
    ) -> Vec<(&'s Session, lost_in_transit::Observation)> {
        let mut per_vantage: std::collections::HashMap<lost_in_transit::Vantage, usize> =
            Default::default();
        let mut copied = 0;
        let mut at_hand = Vec::new();
        for s in sessions {
            let o = lost_in_transit::Observation::of(s, &mut copied);
            let n = per_vantage.entry(o.vantage()).or_default();
            *n += 1;
            if *n > PER_INPUT {
                self.not_kept += 1;
                continue;
            }
            at_hand.push((*s, o));
        }
        at_hand
    }

    /// Keeps an observation for the later sessions of its ID at other vantage points, within
    /// the budget.
    fn keep(&mut self, s: &Session, o: lost_in_transit::Observation) {
        let Some(id) = &s.session_id else { return };
        if self.kept_bytes + o.bytes() > MAX_KEPT_BYTES {
            self.not_kept += 1;
            return;
        }
        self.kept_bytes += o.bytes();
        let vantages = self.kept.entry(id.clone()).or_default();
        let at = match vantages.iter().position(|(v, _)| *v == o.vantage()) {
            Some(at) => at,
            None => {
                vantages.push((o.vantage(), Default::default()));
                vantages.len() - 1
            }
        };
        let list = &mut vantages[at].1;
        list.push_back(o);
        if list.len() > PER_INPUT
            && let Some(old) = list.pop_front()
        {
            self.kept_bytes -= old.bytes();
        }
    }

    /// What a cap of the hop comparison left out, for the report's limits.
    pub fn limits(&self) -> Vec<mcpf_model::Note> {
        let kind = mcpf_model::NoteKind::ObservationsNotCompared {
            held_mib: (MAX_KEPT_BYTES >> 20) as u64,
            per_input: PER_INPUT as u64,
        };
        (self.not_kept > 0)
            .then(|| mcpf_model::Note::new(kind, self.not_kept))
            .into_iter()
            .collect()
    }

    /// Each pair of inputs whose clocks the hop comparisons related: the far input's clock minus
    /// the near one's, bounded over every session the two share.
    pub fn clock_offsets(&self) -> Vec<ClockOffset> {
        self.clocks.list()
    }

    /// Every finding so far, by handle.
    pub fn findings(&self) -> &[Finding] {
        &self.findings.list
    }

    /// Orders every finding: by time, a cause before its consequences. Returns them with the
    /// position each handle got.
    pub fn finish(self) -> (Vec<Finding>, Vec<usize>) {
        order(self.findings.list)
    }
}

/// The kinds the session's inputs leave not determinable, each with what they lack: for each
/// lack in order, the kinds that require it, in the registry's order.
pub fn not_determinable(lacks: &[Lack]) -> Vec<(FindingKind, &Lack)> {
    lacks
        .iter()
        .flat_map(|l| {
            FindingKind::ALL
                .iter()
                .filter(|k| k.info().requires.contains(&l.need()))
                .map(move |&k| (k, l))
        })
        .collect()
}

/// The kinds that require `need`, in the registry's order.
pub fn requiring(need: Need) -> impl Iterator<Item = FindingKind> {
    FindingKind::ALL
        .iter()
        .copied()
        .filter(move |k| k.info().requires.contains(&need))
}

/// Every detector of one session, in the order that lets a consequence name its cause.
fn run_detectors(s: &Session, f: &mut Findings) -> mcpf_mcp::profile::CallProfile {
    let ix = index::Index::new(s);
    let mut calls = mcpf_mcp::profile::CallProfile::default();
    calls.add_session_with(s, &ix.answers);
    // Events past the cap were counted, not held: nothing is concluded from an event's absence
    // (the session says so under "not determinable"). Other lacks are partial (some exchanges
    // kept their bodies): those detectors run on what there is.
    let lacking = not_determinable(&s.lacks);
    let determinable = |k: FindingKind| {
        !lacking
            .iter()
            .any(|(x, l)| *x == k && l.need() == Need::EveryEvent)
    };
    capture_gap::detect(s, f);
    sse_fallback::detect(s, f);
    unsafe_resumption_after_fallback::detect(s, &ix, f);
    cross_namespace_replay::detect(s, &ix, f);
    cross_replica_resume::detect(s, &ix, f);
    cross_session_replay::detect(s, f);
    event_id_reset::detect(s, f);
    event_id_collision::detect(s, f);
    response_on_standalone_stream::detect(s, f);
    cursor_dropped::detect(s, f);
    retry_not_honoured::detect(s, f);
    status_code_violation::detect(s, f);
    if determinable(FindingKind::ResumeGap) {
        resume_gap::detect(s, f);
    }
    session_not_reaffirmed::detect(s, f);
    session_id_changed::detect(s, f);
    duplicate_response::detect(s, &ix, f);
    request_id_reused::detect(s, &ix, f);
    if determinable(FindingKind::SkippedEvents) {
        skipped_events::detect(s, &ix, f);
    }
    if determinable(FindingKind::UnansweredRequest) {
        unanswered_request::detect(s, &ix, f);
    }
    retry_without_idempotency_key::detect(s, &ix, f);
    revision_violation::detect(s, f);
    resync_without_reconciliation::detect(s, &ix, f);
    calls
}

/// Depth in the causal chain, so a consequence sorts after its cause at the same time.
fn depth(list: &[Finding], handle: usize, seen: &mut Vec<usize>) -> usize {
    if seen.contains(&handle) {
        return 0;
    }
    seen.push(handle);
    list[handle]
        .caused_by
        .iter()
        .map(|&c| 1 + depth(list, c, seen))
        .max()
        .unwrap_or(0)
}

/// The finding a handle stands for: itself, or the finding it was folded into (another vantage
/// point's sight of it).
fn stated(list: &[Finding], mut h: usize) -> usize {
    // A fold goes to a finding that is not folded itself; the bound only guards the walk.
    for _ in 0..list.len() {
        match list[h].folded_into {
            Some(into) if into != h => h = into,
            _ => break,
        }
    }
    h
}

/// The findings stated, by time and a cause before its consequences; a folded finding takes the
/// position of the one it was folded into.
fn order(mut list: Vec<Finding>) -> (Vec<Finding>, Vec<usize>) {
    let resolved: Vec<Vec<usize>> = list
        .iter()
        .map(|f| {
            f.caused_by
                .iter()
                .map(|&c| stated(&list, c))
                .filter(|&c| !list[c].withdrawn)
                .collect()
        })
        .collect();
    for (f, causes) in list.iter_mut().zip(resolved) {
        f.caused_by = causes;
        let own = f.handle;
        f.caused_by.retain(|&c| c != own);
    }
    let mut keyed: Vec<(Mark, usize, usize)> = list
        .iter()
        .filter(|f| f.folded_into.is_none() && !f.withdrawn)
        .map(|f| (f.time, depth(&list, f.handle, &mut Vec::new()), f.handle))
        .collect();
    keyed.sort();
    let mut position = vec![0; list.len()];
    for (pos, (_, _, h)) in keyed.iter().enumerate() {
        position[*h] = pos;
    }
    for h in 0..list.len() {
        position[h] = position[stated(&list, h)];
    }
    let mut slots: Vec<Option<Finding>> = list.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(keyed.len());
    for (_, _, h) in keyed {
        if let Some(mut f) = slots[h].take() {
            f.caused_by = f.caused_by.iter().map(|c| position[*c]).collect();
            f.caused_by.sort_unstable();
            f.caused_by.dedup();
            f.handle = out.len();
            out.push(f);
        }
    }
    (out, position)
}

/// The public ID of the finding at `pos` in the ordered list.
pub fn finding_id(pos: usize) -> String {
    format!("F{}", pos + 1)
}

/// An event as a person can find it: part of the evidence of `duplicate_response` and
/// `cross_session_replay`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventRef {
    pub stream: String,
    pub exchange: String,
    /// As on the wire; none for an event without an ID (or an answer in a JSON body).
    pub event_id: Option<String>,
    pub time: String,
    pub frame: u64,
}

impl EventRef {
    /// The event at `event` of the session's stream `stream`.
    pub(crate) fn of(s: &Session, stream: StreamIdx, event: usize) -> EventRef {
        let st = &s.streams[stream];
        let ev = &st.events[event];
        EventRef {
            stream: st.label(),
            exchange: st.exchange.to_string(),
            event_id: ev.id.as_deref().map(str::to_string),
            time: ev.mark.time.rfc3339(),
            frame: ev.mark.frame.frame,
        }
    }
}

/// Where a stream broke a rule of the session's revision: what the evidence of
/// `revision_violation` and of `status_code_violation` begins with. Each kind's struct has
/// these fields first, then its own, so that [`FindingKind::evidence_keys`] reads every key (a
/// `#[serde(flatten)]` field hides its keys from it).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RuleBroken<R> {
    /// The rule, by name (each kind has its own set).
    pub(crate) rule: R,
    /// The session's revision, by its date.
    pub(crate) revision: String,
    pub(crate) stream: String,
    pub(crate) time: String,
    pub(crate) frame: u64,
}

/// A finding that a stream broke a rule of the session's revision, at `at`: its summary names
/// the stream and the revision, and its evidence is what `evidence` makes of the rule broken
/// there (the kind is the evidence's).
pub(crate) fn revision_rule<R>(
    s: &Session,
    st: &mcpf_mcp::model::Stream,
    at: Mark,
    (rule, what): (R, String),
    evidence: impl FnOnce(RuleBroken<R>) -> Evidence,
) -> New {
    let evidence = evidence(RuleBroken {
        rule,
        revision: s.revision.date.to_string(),
        stream: st.label(),
        time: at.time.rfc3339(),
        frame: at.frame.frame,
    });
    let kind = evidence.kind();
    New {
        kind,
        severity: kind.severity(),
        time: at,
        frames: vec![st.opened, at],
        streams: vec![st.idx],
        summary: format!("{} under revision {}: {what}", st.label(), s.revision),
        evidence,
        caused_by: Vec::new(),
        subject: Subject::Stream(st.idx),
    }
}

/// The exchange was refused at the HTTP level (4xx/5xx): its requests were never processed.
pub(crate) fn rejected(s: &Session, stream: StreamIdx) -> bool {
    s.streams[stream].status.is_some_and(|c| c >= 400)
}
