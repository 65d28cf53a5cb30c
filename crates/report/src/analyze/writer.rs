//! The session writer: each session is rendered to its JSON record the moment it is finalized
//! and spilled, and only its header stays in memory. Rendering can run on a background thread
//! of its own (the `Renderer`), which yields the same records in the same order as rendering
//! inline.

use mcpf_detect::verdict::Verdict;
use mcpf_mcp::model::Session;

use super::json;
use super::live::{LiveLines, LiveSession};
use super::spill::{Range, Ranges, Records, Spills};
use super::{RecordFormat, SessionHeader};
use crate::redact::Redactor;

/// How session records are rendered: shared by the writer and its background thread.
#[derive(Clone)]
struct RenderConfig {
    format: RecordFormat,
    with_events: bool,
    redactor: Redactor,
    input_paths: Vec<String>,
}

impl RenderConfig {
    /// Renders a session's record (and its events when asked) and spills them.
    fn render(&self, spills: &mut Spills, header: &SessionHeader, s: &Session) -> Ranges {
        let mut clean = false;
        let record = spills.append_with(Records::Sessions, &mut |out| {
            let (r, paths) = (&self.redactor, &self.input_paths);
            let spool =
                json::write_session_record(self.format, header, s, paths, r, Spool::new(out))?;
            // Scanned here, on the renderer's thread, so that the document, written when the
            // run is over, can pass the record on unscanned.
            clean =
                spool.finish(|held| self.format == RecordFormat::Pretty && r.leaves_alone(held))?;
            Ok(())
        });
        if clean {
            spills.mark_clean(record);
        }
        let mut events = None;
        if self.with_events {
            // Rendered one event at a time straight into the spill: a stream can hold millions.
            events = spills.append_with(Records::Events, &mut |out| {
                json::write_event_records(self.format, s, out)
            });
        }
        (record, events)
    }
}

/// A record up to this size is held while it is made, and scanned for secrets whole.
const SPOOL_MAX: usize = 4 << 20;

/// Holds a record as it is made up to [`SPOOL_MAX`] bytes, then passes it on as it comes: a
/// small record is scanned for secrets once, here, and a big one (a session of hundreds of
/// thousands of exchanges) is never held whole; the output's redactor scans it as it goes out.
struct Spool<'w> {
    out: &'w mut dyn std::io::Write,
    held: Vec<u8>,
    passed_on: bool,
}

impl<'w> Spool<'w> {
    fn new(out: &'w mut dyn std::io::Write) -> Self {
        Spool {
            out,
            held: Vec::new(),
            passed_on: false,
        }
    }

    /// Writes what is held; whether the record was held whole and `clean` says it is.
    fn finish(self, clean: impl FnOnce(&[u8]) -> bool) -> std::io::Result<bool> {
        if self.passed_on {
            return Ok(false);
        }
        let found = clean(&self.held);
        self.out.write_all(&self.held)?;
        Ok(found)
    }
}

impl Spool<'_> {
    /// Past [`SPOOL_MAX`]: what is held goes out, and from now on all that comes.
    #[cold]
    fn pass_on(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if !self.passed_on {
            self.passed_on = true;
            self.out.write_all(&std::mem::take(&mut self.held))?;
        }
        self.out.write_all(buf)
    }
}

impl std::io::Write for Spool<'_> {
    #[inline(always)]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    // The serializer writes a record in thousands of small pieces: the common one is a copy.
    #[inline(always)]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if self.passed_on || self.held.len() + buf.len() > SPOOL_MAX {
            return self.pass_on(buf);
        }
        self.held.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The connections that carried a session's streams, and those of the observations folded into
/// it (its other vantage points), each once, in order.
fn connections(s: &Session) -> Vec<mcpf_model::ConnId> {
    let seen = s
        .vantage_points
        .iter()
        .flat_map(|v| v.conns.iter().copied());
    let mut conns: Vec<_> = s.connections().into_iter().chain(seen).collect();
    conns.sort_unstable();
    conns.dedup();
    conns
}

/// Sessions waiting for the background renderer; few, since each holds its streams.
const RENDER_QUEUE: usize = 16;

/// A thread that renders and spills session records while analysis goes on: the JSON writer is
/// a tenth of a run's work, and the analysis thread need not wait for it.
struct Renderer {
    tx: std::sync::mpsc::SyncSender<(SessionHeader, Box<Session>)>,
    handle: std::thread::JoinHandle<(Spills, Vec<(usize, Ranges)>)>,
}

/// Renders finalized sessions into the spill and keeps their headers.
pub struct SessionWriter {
    cfg: RenderConfig,
    spills: Spills,
    renderer: Option<Renderer>,
    pub(super) headers: mcpf_model::PagedVec<Option<SessionHeader>>,
    /// NDJSON written as each session ends, instead of spilled for the end.
    live: Option<LiveLines>,
    /// The first error writing the spill (reported at the end).
    pub error: Option<String>,
}

impl SessionWriter {
    pub fn new(
        format: RecordFormat,
        with_events: bool,
        redactor: Redactor,
        input_paths: Vec<String>,
    ) -> Self {
        SessionWriter {
            cfg: RenderConfig {
                format,
                with_events,
                redactor,
                input_paths,
            },
            spills: Spills::default(),
            renderer: None,
            headers: Default::default(),
            live: None,
            error: None,
        }
    }

    /// Writes NDJSON as each session ends to `live`, and spills nothing.
    pub fn live(live: LiveLines, redactor: Redactor) -> Self {
        let mut w = SessionWriter::new(RecordFormat::None, false, redactor, Vec::new());
        w.live = Some(live);
        w
    }

    /// Whether sessions are written as they end: the finalizer then hands over their findings.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// The live writer, for the tail of the output, and the first error it met.
    pub fn take_live(&mut self) -> Option<LiveLines> {
        self.live.take()
    }

    /// Renders records on a thread of their own from now on (same records, same order).
    pub fn in_background(mut self) -> Self {
        if self.cfg.format == RecordFormat::None {
            return self;
        }
        let (tx, rx) = std::sync::mpsc::sync_channel::<(SessionHeader, Box<Session>)>(RENDER_QUEUE);
        let cfg = self.cfg.clone();
        let mut spills = std::mem::take(&mut self.spills);
        let handle = std::thread::spawn(move || {
            let mut ranges = Vec::new();
            for (header, s) in rx {
                ranges.push((header.head.idx, cfg.render(&mut spills, &header, &s)));
            }
            (spills, ranges)
        });
        self.renderer = Some(Renderer { tx, handle });
        self
    }

    fn header(
        &self,
        s: &Session,
        verdict: Verdict,
        same_session_as: Vec<String>,
        found: Vec<mcpf_detect::FindingKind>,
    ) -> SessionHeader {
        let merged: Vec<(u32, String, usize, usize, f64)> = s
            .merged_sources
            .iter()
            .map(|m| {
                (
                    m.input,
                    self.cfg
                        .input_paths
                        .get(m.input as usize)
                        .cloned()
                        .unwrap_or_default(),
                    m.matched,
                    m.added,
                    m.offset_s,
                )
            })
            .collect();
        SessionHeader {
            head: s.head(),
            verdict,
            same_session_as,
            found,
            vantage_points: s.vantage_points.clone(),
            merged,
            conns: connections(s),
            record: None,
            events: None,
        }
    }

    fn keep(&mut self, mut header: SessionHeader) {
        if self.cfg.format != RecordFormat::None {
            // The record has been rendered (or its copy is queued): what only the terminal
            // tables show is dropped, since a header is kept for every session of the run.
            header.head.path = String::new();
            header.head.protocol_version = None;
            header.head.client_info = None;
            header.head.lacks = Vec::new();
            header.merged = Vec::new();
            header.same_session_as = Vec::new();
            header.verdict.reason = None;
        }
        let idx = header.head.idx;
        self.headers.resize_with(idx + 1, || None);
        if let Some(slot) = self.headers.get_mut(idx) {
            *slot = Some(header);
        }
    }

    /// Renders a finalized, summarized session and keeps its header. The session is consumed:
    /// a background renderer takes it.
    /// An interim report of a session in progress (`--live-flush`), when sessions are written
    /// live: nothing is kept of it.
    pub fn interim(&mut self, s: &Session, findings: &[&mcpf_detect::Finding]) {
        if let Some(l) = self.live.as_mut() {
            l.interim(s, findings);
        }
    }

    pub fn write(
        &mut self,
        s: Box<Session>,
        verdict: Verdict,
        same_session_as: Vec<String>,
        found: Vec<mcpf_detect::FindingKind>,
        live: Option<&LiveSession<'_>>,
    ) {
        let mut header = self.header(&s, verdict, same_session_as, found);
        if let (Some(l), Some(extras)) = (self.live.as_mut(), live) {
            l.session(&header, &s, extras);
        }
        if self.cfg.format == RecordFormat::None {
            self.keep(header);
            return;
        }
        if let Some(r) = &self.renderer {
            if r.tx.send((header.clone(), s)).is_err() {
                // The renderer is gone (it only stops by panicking): the run ends with this
                // error, so the session is not rendered.
                self.error
                    .get_or_insert("internal error: the record renderer stopped".into());
            }
            self.keep(header);
            return;
        }
        (header.record, header.events) = self.cfg.render(&mut self.spills, &header, &s);
        self.keep(header);
    }

    /// Waits for the background renderer, then hands the spills to the report.
    pub fn finish(&mut self) {
        if let Some(r) = self.renderer.take() {
            drop(r.tx);
            match r.handle.join() {
                Ok((spills, ranges)) => {
                    self.spills = spills;
                    for (idx, (record, events)) in ranges {
                        if let Some(Some(h)) = self.headers.get_mut(idx) {
                            h.record = record;
                            h.events = events;
                        }
                    }
                }
                Err(_) => {
                    self.error
                        .get_or_insert("internal error: the record renderer failed".into());
                }
            }
        }
        if let Some(e) = self.spills.error.take() {
            self.error.get_or_insert(e);
        }
    }

    /// One past the highest session index written: the length of the per-session tables the
    /// report lays out (the timelines).
    pub fn session_slots(&self) -> usize {
        self.headers.len()
    }

    /// Calls `line` with each record line a session spilled at `range` (NDJSON).
    pub(super) fn spilled_lines(
        &mut self,
        which: Records,
        range: Option<Range>,
        line: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.spills.lines(which, range, line)
    }

    /// Whether the session record at `range` was found free of secrets when it was spilled.
    pub(super) fn is_clean(&self, range: Option<Range>) -> bool {
        self.spills.is_clean(range)
    }

    /// Copies the records a session spilled at `range` to `out`.
    pub(super) fn copy_spilled(
        &mut self,
        which: Records,
        range: Option<Range>,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        self.spills.copy(which, range, out)
    }

    /// The records a session spilled at `range`; empty when it spilled none.
    pub(super) fn spilled(
        &mut self,
        which: Records,
        range: Option<Range>,
    ) -> std::io::Result<Vec<u8>> {
        self.spills.read(which, range)
    }
}
