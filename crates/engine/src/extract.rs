//! The `extract` run: the stages that depend on one input's bytes (capture, TLS, HTTP, SSE, the
//! ingest of HAR files and logs), their HTTP events written as exchange records in the order the
//! session stage would take them, then what the run counted (`mcpf_records`).

use std::io::Write;

use mcpf_capture::CaptureStage;
use mcpf_http::{HttpEvent, HttpSink};
use mcpf_records::{Header, InputEntry, RecordWriter, RunStats};

use crate::analyze::{Consumer, Front, Stages};
use crate::{Engine, EngineError, Observer, Opened};

/// What an extract run wrote.
#[derive(Clone, Debug)]
pub struct Extracted {
    /// HTTP records written.
    pub events: u64,
    /// An input could not be read (its report in the file says why).
    pub failed: bool,
    /// Each input's report, as written (for the warnings the caller prints).
    pub reports: Vec<mcpf_model::InputReport>,
}

/// The session stage's place in an extract run: each event to the record file.
struct ToRecords<W: Write> {
    writer: RecordWriter<W>,
    redactor: mcpf_report::redact::Redactor,
    events: u64,
    /// The first write error: the run goes on to its end (the stages must drain), then fails.
    error: Option<std::io::Error>,
}

impl<W: Write + Send> Consumer for ToRecords<W> {
    type Item = HttpEvent;
    fn prepare(event: HttpEvent) -> HttpEvent {
        event
    }
    fn weigh(item: &HttpEvent) -> usize {
        item.payload_bytes()
    }
    fn take(&mut self, mut event: HttpEvent) {
        if self.error.is_some() {
            return;
        }
        crate::redact_records::event(&self.redactor, &mut event);
        self.events += 1;
        if let Err(e) = self.writer.event(event) {
            self.error = Some(e);
        }
    }
}

impl<W: Write + Send> HttpSink for ToRecords<W> {
    fn on_http(&mut self, event: HttpEvent) {
        self.take(event);
    }
}

impl Engine {
    /// Runs the per-input stages on `inputs` and writes their records to `out`; secrets are
    /// redacted in them unless `show_secrets`.
    pub fn extract<W: Write + Send>(
        &self,
        inputs: Opened,
        out: W,
        show_secrets: bool,
        observer: &mut dyn Observer,
    ) -> Result<(W, Extracted), EngineError> {
        let settings = self.settings();
        let header = header(&inputs, settings, !show_secrets);
        let writer = RecordWriter::new(out, &header).map_err(write_error)?;
        let consumer = ToRecords {
            writer,
            redactor: mcpf_report::redact::Redactor::new(!show_secrets),
            events: 0,
            error: None,
        };
        let mut stage = CaptureStage::new(settings.capture.clone(), inputs.paths.len());
        let front = Front {
            tls: settings.tls_keys.clone(),
            spans: None,
            classify: settings.classify,
        };
        let stages = self.front(inputs, &mut stage, consumer, observer, front)?;
        finish(stages)
    }
}

fn header(inputs: &Opened, settings: &crate::Settings, redacted: bool) -> Header {
    let entries = inputs
        .paths
        .iter()
        .zip(inputs.sources())
        .enumerate()
        .map(|(i, (path, source))| InputEntry {
            index: i as u32,
            path: path.clone(),
            source,
        })
        .collect();
    let tool = settings.tool;
    let mut header = Header::new(format!("{} {}", tool.name, tool.version), entries);
    header.redacted = redacted;
    header.classified = settings.classify;
    header.tls_key_log = settings.tls_keys.is_some();
    header
}

/// The run's counts after its events, and the end of the file.
fn finish<W: Write + Send>(stages: Stages<ToRecords<W>>) -> Result<(W, Extracted), EngineError> {
    let Stages {
        fed,
        sessions: sink,
        http,
        tcp,
        tls,
        ..
    } = stages;
    if let Some(e) = sink.error {
        return Err(write_error(e));
    }
    let stats = RunStats {
        http,
        tcp: tcp.counts(),
        tls,
        failed: fed.failed,
    };
    let extracted = Extracted {
        events: sink.events,
        failed: fed.failed,
        reports: fed.reports.clone(),
    };
    let out = sink
        .writer
        .finish(fed.reports, fed.capabilities, stats)
        .map_err(write_error)?;
    Ok((out, extracted))
}

fn write_error(e: std::io::Error) -> EngineError {
    EngineError::Writer(format!("writing the records: {e}"))
}
