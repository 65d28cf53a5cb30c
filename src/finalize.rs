//! The detector stage behind the MCP stage, run on each session as it is finalized.

use mcpf_detect::{Detector, Finding, Severity};
use mcpf_mcp::model::{Session, session_label};
use mcpf_model::Mark;
use mcpf_report::analyze::{Selection, SessionWriter};
use mcpf_report::timeline::{self, Entry};

/// The detector stage behind the MCP stage: runs the detectors on each session as it is
/// finalized, computes its verdict, builds its timeline when the report will show it, renders
/// its record, then lets the session drop its records.
pub struct Finalizer {
    detector: Detector,
    timelines: Vec<(usize, Vec<Entry>)>,
    sel: Selection,
    writer: SessionWriter,
    timelines_for_any: usize,
}

/// Sessions whose timeline is kept although nothing was found in them: small captures show
/// every session; large ones show the sessions with findings.
const TIMELINES_FOR_ANY_SESSION: usize = 20;

impl Finalizer {
    pub fn new(sel: Selection, writer: SessionWriter) -> Self {
        Finalizer {
            detector: Detector::new(),
            timelines: Vec::new(),
            sel,
            writer,
            timelines_for_any: 0,
        }
    }

    pub fn run(&mut self, mut s: Box<Session>) {
        let (verdict, mine) = self.detector.session(&s);
        let sel = &self.sel;
        let in_window = |m: Mark| {
            !(sel.since.is_some_and(|t| m.time < t) || sel.until.is_some_and(|t| m.time > t))
        };
        let shown: Vec<(usize, &Finding)> = self.detector.findings()[mine]
            .iter()
            .filter(|f| in_window(f.time))
            .filter(|f| sel.min_severity.is_none_or(|m| f.severity.at_least(m)))
            .map(|f| (f.handle, f))
            .collect();
        let selected = sel.sessions.as_ref().is_some_and(|keys| {
            keys.iter().any(|k| {
                k.eq_ignore_ascii_case(&s.label()) || s.session_id.as_deref() == Some(k.as_str())
            })
        });
        let notable = shown
            .iter()
            .any(|(_, f)| f.severity.at_least(Severity::Low));
        if selected || notable || self.timelines_for_any < TIMELINES_FOR_ANY_SESSION {
            if !selected && !notable {
                self.timelines_for_any += 1;
            }
            let entries: Vec<Entry> = timeline::build(&s, &shown, sel.all_events)
                .into_iter()
                .filter(|e| in_window(e.time))
                .collect();
            self.timelines.push((s.idx, entries));
        }
        s.summarize();
        let same: Vec<String> = s
            .same_session_as
            .iter()
            .map(|&i| session_label(i))
            .collect();
        if !self.sel.events {
            // The record needs summaries only: what waits for the renderer stays small.
            s.compact();
        }
        self.writer.write(s, verdict, same);
    }

    /// The final order of findings (finding references in timelines follow it), the rendered
    /// sessions and the timelines.
    pub fn finish(mut self) -> (Vec<Finding>, SessionWriter, Vec<Vec<Entry>>) {
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
        (findings, self.writer, timelines)
    }
}
