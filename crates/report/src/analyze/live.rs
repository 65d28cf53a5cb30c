//! NDJSON written as sessions end: a session's record, its findings, its timeline and (with
//! `--events`) its events go out the moment the session is finalized by evidence, so a live pipe
//! (`tcpdump -w - | analyze --format ndjson -`) streams findings by. The inputs and the summary,
//! complete only at the end, close the output ([`super::write_ndjson_tail`]).
//!
//! Findings are numbered in the order they are written: the document orders every finding of
//! the run by time, which is known only once the input has ended.

use std::io::{self, Write};

use mcpf_detect::{Finding, finding_id};
use mcpf_mcp::model::Session;
use mcpf_model::WireMap;

use super::json::{entry_json_as, finding_json_as, for_each_event, session_record, write_line};
use super::{RecordFormat, Selection, SessionHeader};
use crate::redact::Redactor;
use crate::timeline::Entry;

/// Where live NDJSON goes, and the numbers given to the findings written so far.
pub struct LiveLines {
    out: Box<dyn Write + Send>,
    sel: Selection,
    with_events: bool,
    redactor: Redactor,
    input_paths: Vec<String>,
    /// Which inputs are packet captures, by index (display filters are for their frames only).
    captures: Vec<bool>,
    /// Finding handles (creation order) to the numbers they were written under.
    numbers: WireMap<usize, usize>,
    /// The first error writing (reported at the end; later sessions are not written).
    pub error: Option<io::Error>,
}

/// A finalized session with what is written of it besides its record.
pub struct LiveSession<'a> {
    /// Every finding of the session (shown or not: a shown one may name one that is not).
    pub findings: &'a [&'a Finding],
    /// The handles of those shown.
    pub shown: &'a [usize],
    pub timeline: &'a [Entry],
}

impl LiveLines {
    pub fn new(
        out: Box<dyn Write + Send>,
        sel: Selection,
        redactor: Redactor,
        input_paths: Vec<String>,
        captures: Vec<bool>,
    ) -> Self {
        LiveLines {
            out,
            with_events: sel.events,
            sel,
            redactor,
            input_paths,
            captures,
            numbers: WireMap::default(),
            error: None,
        }
    }

    /// The writer, for the tail of the output.
    pub fn into_inner(self) -> Box<dyn Write + Send> {
        self.out
    }

    /// Writes a session that is shown, numbering its findings first, then flushes: the lines
    /// are for whoever reads the pipe now.
    pub(super) fn session(&mut self, h: &SessionHeader, s: &Session, live: &LiveSession<'_>) {
        for f in live.findings {
            let next = self.numbers.len();
            self.numbers.entry(f.handle).or_insert(next);
        }
        if self.error.is_some() || !self.sel.selects(h) {
            return;
        }
        if let Err(e) = self.write(h, s, live).and_then(|()| self.out.flush()) {
            self.error = Some(e);
        }
    }

    /// An interim record of a session in progress, quiet since its last activity: what its own
    /// detectors find so far. Its findings are named `S3~1`, `S3~2`…, not numbered: the numbers
    /// are the final findings', given when the session ends.
    pub(super) fn interim(&mut self, s: &Session, findings: &[&Finding]) {
        if self.error.is_some() || !self.sel.names_or_all(&s.label(), s.session_id.as_deref()) {
            return;
        }
        let r = self.redactor;
        let label = s.label();
        let local: Vec<usize> = findings.iter().map(|f| f.handle).collect();
        let name = |h: usize| match local.iter().position(|&x| x == h) {
            Some(i) => format!("{label}~{}", i + 1),
            None => format!("{label}~?"),
        };
        let listed: Vec<serde_json::Value> = findings
            .iter()
            .filter(|f| self.sel.min_severity.is_none_or(|m| f.severity.at_least(m)))
            .map(|f| {
                let causes = f.caused_by.iter().map(|&c| name(c)).collect();
                finding_json_as(name(f.handle), causes, f, &r, &self.captures)
            })
            .collect();
        let open = s.streams.iter().filter(|st| st.ended.is_none()).count();
        let record = serde_json::json!({
            "session": label,
            "session_id": s.session_id.as_deref().map(|i| r.text(i)),
            "server": format!("{} {}", s.server, r.text(&s.path)),
            "quiet_since": s.end.time.rfc3339(),
            "streams_open": open,
            "findings": listed,
        });
        let written = serde_json::to_vec(&record)
            .map_err(io::Error::other)
            .and_then(|v| write_line(&mut self.out, "interim", &v))
            .and_then(|()| self.out.flush());
        if let Err(e) = written {
            self.error = Some(e);
        }
    }

    /// The number `handle` is written under: given now if it has none yet (a cause in a session
    /// written later keeps it), so a reference never names another finding.
    fn id(&mut self, handle: usize) -> String {
        let next = self.numbers.len();
        finding_id(*self.numbers.entry(handle).or_insert(next))
    }

    fn write(&mut self, h: &SessionHeader, s: &Session, live: &LiveSession<'_>) -> io::Result<()> {
        let r = self.redactor;
        let record = session_record(RecordFormat::Lines, h, s, &self.input_paths, &r);
        write_line(&mut self.out, "session", &record)?;
        for f in live
            .findings
            .iter()
            .filter(|f| live.shown.contains(&f.handle))
        {
            let causes = f.caused_by.iter().map(|&c| self.id(c)).collect();
            let v = finding_json_as(self.id(f.handle), causes, f, &r, &self.captures);
            write_line(&mut self.out, "finding", &serde_json::to_vec(&v)?)?;
        }
        for e in live.timeline {
            let findings = e.findings.iter().map(|&p| self.id(p)).collect();
            let v = entry_json_as(Some(h.label()), findings, e, &r);
            write_line(&mut self.out, "timeline", &serde_json::to_vec(&v)?)?;
        }
        if self.with_events {
            let out = &mut self.out;
            for_each_event(s, |e| write_line(out, "event", &serde_json::to_vec(e)?))?;
        }
        Ok(())
    }
}
