//! The session stage of a run: the MCP builder files every HTTP event under its session, and
//! each session, once the wire shows it over, goes to the finalizer (detectors, verdict,
//! timeline, its record rendered), on a thread of its own when the run has threads.
//!
//! The same stage behind the shards of [`Engine::run`](crate::Engine::run) and behind the
//! hand-built HTTP events of the detector tests, so both exercise the production path.

use std::sync::{Arc, Mutex};

use mcpf_detect::{ClockOffset, Finding};
use mcpf_http::{HttpEvent, HttpSink};
use mcpf_mcp::model::Session;
use mcpf_mcp::{Builder, McpStats, Prepared};
use mcpf_model::{Capabilities, InputId, SourceFormat};
use mcpf_report::analyze::{RecordFormat, SessionWriter};
use mcpf_report::redact::Redactor;
use mcpf_report::timeline::Entry;

use crate::finalize::{Finalizer, Tap};
use crate::{EngineError, Settings};

/// The MCP builder and the finalizer behind it.
pub struct SessionStage {
    builder: Builder,
    finalizer: Arc<Mutex<Finalizer>>,
    /// The finalizer's thread, when it has one: joined once the builder is done.
    finishing: Option<std::thread::JoinHandle<()>>,
    selection: mcpf_report::analyze::Selection,
}

/// What the session stage hands over at the end of a run.
pub struct Analysed {
    /// Every finding, cause before consequence.
    pub findings: Vec<Finding>,
    /// The sessions' records, rendered as they were finalized.
    pub sessions: SessionWriter,
    /// The timeline of each session (empty when the report does not show it).
    pub timelines: Vec<Vec<Entry>>,
    /// The calls of the sessions shown, per server and method.
    pub profile: mcpf_mcp::profile::CallProfile,
    /// What a cap of the detector stage left out.
    pub limits: Vec<mcpf_model::Note>,
    /// The clock offsets between inputs that the hop comparisons bounded.
    pub clock_offsets: Vec<ClockOffset>,
    /// The HTTP anomalies the MCP stage saw: the first ones kept whole, every one counted by kind.
    pub anomalies: mcpf_mcp::Anomalies,
    pub mcp: McpStats,
}

impl SessionStage {
    /// The stage of a run over inputs of these `sources` (by input index, named `paths`),
    /// each session's record going to `writer`; `threaded` runs the finalizer on a thread of
    /// its own.
    pub fn new(
        settings: &Settings,
        paths: Vec<String>,
        sources: Vec<SourceFormat>,
        writer: SessionWriter,
        threaded: bool,
    ) -> SessionStage {
        let finalizer = Arc::new(Mutex::new(
            Finalizer::new(settings.selection.clone(), writer)
                .with_inputs(paths)
                .with_max_held_events(settings.max_held_events),
        ));
        // Sessions are finalized as they end (detectors run, events dropped) so memory follows
        // the sessions in progress; a HAR or log must first be matched with the capture of the
        // same traffic, so those runs finalize at the end. Either way a session ends at the same
        // point (the builder closes it on evidence), so its findings do not depend on the choice.
        let early = sources.iter().all(|s| *s == SourceFormat::Capture);
        let (callback, finishing) = finalizing(finalizer.clone(), threaded);
        let mut builder = Builder::new()
            .with_early_finalize(early)
            .with_sources(sources)
            .with_session_callback(callback)
            .with_max_session_events(settings.max_session_events)
            .with_max_session_exchanges(settings.max_session_exchanges);
        if let Some(ns) = settings.live_flush_ns {
            let f = finalizer.clone();
            builder = builder.with_live_flush(
                ns,
                Box::new(move |s| {
                    if let Ok(mut f) = f.lock() {
                        f.interim(&s);
                    }
                }),
            );
        }
        SessionStage {
            builder,
            finalizer,
            finishing,
            selection: settings.selection.clone(),
        }
    }

    /// A stage that renders no record (the detector tests, and views that read findings only).
    pub fn without_records(settings: &Settings, sources: Vec<SourceFormat>) -> SessionStage {
        let paths = (0..sources.len()).map(|i| format!("input{i}")).collect();
        let writer = SessionWriter::new(RecordFormat::None, false, Redactor::new(true), Vec::new());
        SessionStage::new(settings, paths, sources, writer, false)
    }

    /// `tap` sees each session as it is finalized, with its verdict and findings, before its
    /// events are dropped.
    pub fn with_tap(self, tap: Tap) -> SessionStage {
        if let Ok(mut f) = self.finalizer.lock() {
            f.set_tap(tap);
        }
        self
    }

    /// An event the shards prepared, in wire order.
    pub fn on_prepared(&mut self, event: Prepared) {
        self.builder.on_prepared(event);
    }

    /// What a HAR file or log can and cannot support.
    pub fn set_capabilities(&mut self, input: InputId, caps: Capabilities) {
        self.builder.set_capabilities(input, caps);
    }

    /// Ends every session still open, runs the detectors that wait for the end, and hands over
    /// what the stage made.
    pub fn finish(self) -> Result<Analysed, EngineError> {
        let SessionStage {
            builder,
            finalizer,
            finishing,
            selection,
        } = self;
        let (left, anomalies, mcp) = builder.finish();
        // The builder is gone, and with it the finalizer thread's input: it ends once it has
        // run the detectors of every session.
        if let Some(handle) = finishing {
            handle
                .join()
                .map_err(|_| EngineError::StageFailed("detector"))?;
        }
        drop(left);
        // Nothing is written through it: it only takes the finalizer's place.
        let idle = Finalizer::new(
            selection,
            SessionWriter::new(RecordFormat::None, false, Redactor::new(true), Vec::new()),
        );
        let fin = std::mem::replace(
            &mut *finalizer
                .lock()
                .map_err(|_| EngineError::StageFailed("detector"))?,
            idle,
        );
        let f = fin.finish();
        Ok(Analysed {
            findings: f.findings,
            sessions: f.sessions,
            timelines: f.timelines,
            profile: f.profile,
            limits: f.limits,
            clock_offsets: f.clock_offsets,
            anomalies,
            mcp,
        })
    }
}

impl HttpSink for SessionStage {
    fn on_http(&mut self, event: HttpEvent) {
        self.builder.on_http(event);
    }
}

/// The builder's callback for each finalized session: the finalizer, on a thread of its own
/// when there are threads (returned, to be joined once the builder is done), so the detectors
/// of a session that ended run while the builder files the events of the others.
fn finalizing(
    finalizer: Arc<Mutex<Finalizer>>,
    threaded: bool,
) -> (
    mcpf_mcp::SessionCallback,
    Option<std::thread::JoinHandle<()>>,
) {
    let finalize = move |s: Box<Session>| {
        if let Ok(mut f) = finalizer.lock() {
            f.run(s);
        }
    };
    if !threaded {
        return (Box::new(finalize), None);
    }
    // A few sessions at most wait: each holds its events until its detectors have run.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Box<Session>>(4);
    let handle = std::thread::spawn(move || rx.into_iter().for_each(finalize));
    let send = move |s: Box<Session>| {
        // The finalizer thread only stops by panicking, which joining it reports.
        let _ = tx.send(s);
    };
    (Box::new(send), Some(handle))
}
