//! The detector stage behind the MCP stage, run on each session as it is finalized.

use mcpf_detect::{Detector, Finding, FindingKind, Severity};
use mcpf_mcp::model::{Session, VantagePoint, session_label};
use mcpf_model::{Mark, Note, NoteKind};
use mcpf_report::analyze::{LiveSession, Selection, SessionWriter};
use mcpf_report::timeline::{self, Entry};

/// The detector stage behind the MCP stage: runs the detectors on each session as it is
/// finalized, computes its verdict, builds its timeline when the report will show it, renders
/// its record, then lets the session drop its records.
pub(crate) struct Finalizer {
    detector: Detector,
    /// With several inputs: sessions waiting for their other observations (the same session ID
    /// in another input) to be finalized, so the hops are compared and each finding goes where
    /// it belongs before any of them is rendered.
    /// By session ID. Boxed as the MCP stage hands them over and the writer takes them: a
    /// session is large.
    #[allow(clippy::vec_box)]
    held: std::collections::HashMap<String, Vec<Box<Session>>>,
    done: std::collections::HashSet<usize>,
    /// Events the held sessions hold, and the sessions released early to stay under
    /// [`MAX_EVENTS_HELD`].
    held_events: usize,
    max_held_events: usize,
    released_early: u64,
    timelines: Vec<(usize, Vec<Entry>)>,
    /// The calls of the sessions shown, counted as each is finalized.
    profile: mcpf_mcp::profile::CallProfile,
    sel: Selection,
    writer: SessionWriter,
    timelines_for_any: usize,
    tap: Option<Tap>,
}

/// What sees each session as it is finalized, with its verdict and its findings, before its
/// events are dropped (the detector tests keep the sessions this way).
pub type Tap = Box<dyn FnMut(&Session, &mcpf_detect::verdict::Verdict, &[&Finding]) + Send>;

/// Events the sessions held for their other observations may hold together. Past it the oldest
/// are reported at once; their observations are kept by the detector, so the comparison still
/// happens when the others end (the finding then goes to the later one).
pub const MAX_EVENTS_HELD: usize = 2_000_000;

/// Sessions whose timeline is kept although nothing was found in them: small captures show
/// every session; large ones show the sessions with findings.
const TIMELINES_FOR_ANY_SESSION: usize = 20;

impl Finalizer {
    pub(crate) fn new(sel: Selection, writer: SessionWriter) -> Self {
        Finalizer {
            detector: Detector::new(),
            held: Default::default(),
            done: Default::default(),
            held_events: 0,
            max_held_events: MAX_EVENTS_HELD,
            released_early: 0,
            timelines: Vec::new(),
            profile: Default::default(),
            sel,
            writer,
            timelines_for_any: 0,
            tap: None,
        }
    }

    pub(crate) fn set_tap(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    /// The inputs' paths by index: with several, sessions seen in more than one are compared
    /// hop by hop.
    pub(crate) fn with_inputs(mut self, paths: Vec<String>) -> Self {
        self.detector = std::mem::take(&mut self.detector).with_inputs(paths);
        self
    }

    /// Events the held sessions may hold together (`--max-held-events`).
    pub(crate) fn with_max_held_events(mut self, n: usize) -> Self {
        self.max_held_events = n;
        self
    }

    /// A finalized session: analysed at once, or, while other observations of it are still in
    /// progress, when the last of them is finalized.
    pub(crate) fn run(&mut self, s: Box<Session>) {
        // Other observations of it: other inputs (hops), or other servers in one input (the
        // replicas of a balancer's server leg).
        if s.same_session_as.is_empty() {
            return self.release(vec![s]);
        }
        self.done.insert(s.idx);
        let waits = s.same_session_as.iter().any(|p| !self.done.contains(p));
        let id = s.session_id.clone().unwrap_or_default();
        self.held_events += events(&s);
        self.held.entry(id.clone()).or_default().push(s);
        if waits {
            return self.stay_under_the_cap();
        }
        let group = self.held.remove(&id).unwrap_or_default();
        self.held_events -= group.iter().map(|s| events(s)).sum::<usize>();
        self.release(group);
    }

    /// Releases the oldest held sessions while they hold more than the cap.
    fn stay_under_the_cap(&mut self) {
        while self.held_events > self.max_held_events {
            let Some(oldest) = self
                .held
                .iter()
                .filter_map(|(id, v)| Some((v.iter().map(|s| s.idx).min()?, id.clone())))
                .min()
                .map(|(_, id)| id)
            else {
                return;
            };
            let group = self.held.remove(&oldest).unwrap_or_default();
            self.held_events -= group.iter().map(|s| events(s)).sum::<usize>();
            self.released_early += group.len() as u64;
            for s in group {
                self.release(vec![s]);
            }
        }
    }

    /// A session in progress, quiet for `--live-flush`: the session's own detectors run on it
    /// (apart from the run's, whose cross-session state it must not touch) and what they find so
    /// far is written as an interim record. The session goes on and is reported when it ends.
    pub(crate) fn interim(&mut self, s: &Session) {
        let mut detector = Detector::new();
        let outcomes = detector.group(&[s]);
        let all = detector.findings();
        let findings: Vec<&Finding> = outcomes
            .first()
            .map(|o| o.findings.iter().map(|&h| &all[h]).collect())
            .unwrap_or_default();
        self.writer.interim(s, &findings);
    }

    /// Runs the detectors on a group (the observations of one session), then writes its one
    /// record: the observation nearest the client, the others its vantage points.
    #[allow(clippy::vec_box)]
    fn release(&mut self, group: Vec<Box<Session>>) {
        let refs: Vec<&Session> = group.iter().map(|s| &**s).collect();
        let outcomes = self.detector.group(&refs);
        let points: Vec<VantagePoint> = match group.len() {
            1 => Vec::new(),
            _ => group.iter().map(|s| VantagePoint::of(s)).collect(),
        };
        for (mut s, o) in group.into_iter().zip(outcomes) {
            if let Some(tap) = &mut self.tap {
                let all = self.detector.findings();
                let findings: Vec<&Finding> = o.findings.iter().map(|&h| &all[h]).collect();
                tap(&s, &o.verdict, &findings);
            }
            if o.folded_into.is_some() {
                continue;
            }
            // Its own first, then the others in the order they were observed.
            s.vantage_points = points.clone();
            s.vantage_points
                .sort_by_key(|v| (v.session != s.idx, v.session));
            self.emit(s, o.verdict, &o.findings, o.calls);
        }
    }

    fn emit(
        &mut self,
        mut s: Box<Session>,
        verdict: mcpf_detect::verdict::Verdict,
        mine: &[usize],
        calls: mcpf_mcp::profile::CallProfile,
    ) {
        let sel = &self.sel;
        let start = s.start.time;
        let in_window = |m: Mark| sel.in_window(m, start);
        let all = self.detector.findings();
        let shown: Vec<(usize, &Finding)> = mine
            .iter()
            .map(|&h| &all[h])
            .filter(|f| in_window(f.time))
            .filter(|f| sel.min_severity.is_none_or(|m| f.severity.at_least(m)))
            .map(|f| (f.handle, f))
            .collect();
        let selected = sel.names(&s.label(), s.session_id.as_deref());
        let notable = shown
            .iter()
            .any(|(_, f)| f.severity.at_least(Severity::Low));
        let mut entries: Vec<Entry> = Vec::new();
        if selected
            || notable
            || sel.all_timelines
            || self.timelines_for_any < TIMELINES_FOR_ANY_SESSION
        {
            if !selected && !notable {
                self.timelines_for_any += 1;
            }
            entries = timeline::build(&s, &shown, sel.all_events)
                .into_iter()
                .filter(|e| in_window(e.time))
                .collect();
        }
        // The profile of the sessions shown.
        if sel.sessions.is_none() || selected {
            self.profile.merge(calls);
        }
        s.summarize();
        // Other records of the same ID: an observation folded into this one is a vantage point
        // of it, not another record.
        let same: Vec<String> = s
            .same_session_as
            .iter()
            .filter(|&&i| !s.vantage_points.iter().any(|v| v.session == i))
            .map(|&i| session_label(i))
            .collect();
        if !self.sel.events {
            // The record needs summaries only: what waits for the renderer stays small.
            s.compact();
        }
        // Kinds the session has findings of above info: determined (an info one may say it
        // is not).
        let mut found: Vec<FindingKind> = mine
            .iter()
            .map(|&h| &all[h])
            .filter(|f| f.severity.at_least(Severity::Low))
            .map(|f| f.kind)
            .collect();
        found.sort_unstable();
        found.dedup();
        if self.writer.is_live() {
            let findings: Vec<&Finding> = mine.iter().map(|&h| &all[h]).collect();
            let handles: Vec<usize> = shown.iter().map(|(h, _)| *h).collect();
            // Written now, so not kept: a live pipe runs for as long as it runs.
            let live = LiveSession {
                findings: &findings,
                shown: &handles,
                timeline: &entries,
            };
            self.writer.write(s, verdict, same, found, Some(&live));
            return;
        }
        if !entries.is_empty() {
            self.timelines.push((s.idx, entries));
        }
        self.writer.write(s, verdict, same, found, None);
    }

    /// The final order of findings (finding references in timelines follow it), the rendered
    /// sessions and the timelines.
    /// What a cap of the detector stage left out, for the report's limits.
    /// The clock offsets between inputs that the hop comparisons bounded.
    fn clock_offsets(&self) -> Vec<mcpf_detect::ClockOffset> {
        self.detector.clock_offsets()
    }

    fn limits(&self) -> Vec<Note> {
        let mut out = self.detector.limits();
        if self.released_early > 0 {
            let max_events = self.max_held_events as u64;
            let kind = NoteKind::ReleasedEarly { max_events };
            out.push(Note::new(kind, self.released_early));
        }
        out
    }

    /// Releases what is still held, then hands over everything: the findings in order, the
    /// session records, the timelines, and (known only now) the limits reached and the clock
    /// offsets between inputs.
    pub(crate) fn finish(mut self) -> Finished {
        // Observations whose others never ended (none should be left: every session is
        // finalized at the end of the input).
        let mut left: Vec<Box<Session>> = std::mem::take(&mut self.held)
            .into_values()
            .flatten()
            .collect();
        left.sort_by_key(|s| s.idx);
        for s in left {
            self.release(vec![s]);
        }
        let limits = self.limits();
        let clock_offsets = self.clock_offsets();
        let (findings, position) = self.detector.finish();
        self.writer.finish();
        let sessions = self.writer.session_slots();
        let mut timelines: Vec<Vec<Entry>> = vec![Vec::new(); sessions];
        for (idx, mut entries) in self.timelines {
            for e in &mut entries {
                for f in &mut e.findings {
                    *f = position[*f];
                }
            }
            if let Some(slot) = timelines.get_mut(idx) {
                *slot = entries;
            }
        }
        Finished {
            findings,
            sessions: self.writer,
            timelines,
            profile: self.profile,
            limits,
            clock_offsets,
        }
    }
}

/// What the detector stage hands over at the end.
pub(crate) struct Finished {
    pub(crate) findings: Vec<Finding>,
    pub(crate) sessions: SessionWriter,
    pub(crate) timelines: Vec<Vec<Entry>>,
    pub(crate) profile: mcpf_mcp::profile::CallProfile,
    pub(crate) limits: Vec<Note>,
    pub(crate) clock_offsets: Vec<mcpf_detect::ClockOffset>,
}

/// Events a session holds.
fn events(s: &Session) -> usize {
    s.streams.iter().map(|st| st.events.len()).sum()
}
