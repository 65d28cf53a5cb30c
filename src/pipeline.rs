//! Opening the inputs and feeding them through the first stages: captures through capture and
//! TCP reassembly into HTTP, HAR files and access logs through ingest into the same HTTP stage.

use mcpf_capture::tcp::{TcpEvent, TcpSink};
use mcpf_capture::{self as capture, CaptureInput, CaptureStage};
use mcpf_http as http;
use mcpf_ingest::LogMap;
use mcpf_model::{Capabilities, InputId, InputReport, OpenError, SourceFormat};

use crate::config;

/// Prints a per-file error the ripgrep way: the run goes on, the exit code says it happened.
fn report_open_error(e: &OpenError) {
    let path = crate::app::diagnostic(&mcpf_report::sanitize::terminal(&e.path));
    eprintln!(
        "mcp-forensics: {path}: {}",
        crate::app::diagnostic(&e.message)
    );
    if let Some(hint) = &e.hint {
        eprintln!("  hint: {}", crate::app::diagnostic(hint));
    }
}

/// Prints every capture input's warnings on standard error (they are in the report's `inputs`
/// entries too): what was skipped, cut or lost reading a file is said where a script or a
/// terminal sees it. A HAR file's or log's warnings are mostly what such a source never records
/// (`lacks …`), the same for every file of its kind: they stay in the report.
pub fn print_warnings(reports: &[InputReport]) {
    for r in reports.iter().filter(|r| r.format.starts_with("pcap")) {
        let path = mcpf_report::sanitize::terminal(&r.path);
        for w in &r.warnings {
            eprintln!(
                "mcp-forensics: {path}: warning: {}",
                mcpf_report::sanitize::terminal(w)
            );
        }
    }
}

/// Whether a read input lost part of its file: corrupt records skipped, or a cut file or gzip
/// stream. (Bytes the wire had and the file never held, gaps and snap length, are not lost
/// reading the input.)
pub fn lost_data(reports: &[InputReport]) -> bool {
    use mcpf_model::bucket::{CORRUPT_RECORD, TRUNCATED};
    reports.iter().any(|r| {
        let lost = &r.accounting.bytes.lost;
        lost.get(CORRUPT_RECORD).is_some_and(|&n| n > 0)
            || lost.get(TRUNCATED).is_some_and(|&n| n > 0)
    })
}

/// Opens every capture named; those that fail are reported, and listed as unreadable.
pub fn open_captures(files: &[String]) -> (Vec<CaptureInput>, Vec<InputReport>) {
    let mut inputs = Vec::new();
    let mut unreadable = Vec::new();
    for (i, path) in files.iter().enumerate() {
        match capture::open_capture(path, i as InputId) {
            Ok(input) => inputs.push(input),
            Err(e) => {
                report_open_error(&e);
                unreadable.push(InputReport::failed(i as InputId, &e));
            }
        }
    }
    (inputs, unreadable)
}

/// The inputs of a run, each opened as what its content says it is.
pub struct Opened {
    /// Every input named on the command line, in order.
    pub paths: Vec<String>,
    pub captures: Vec<CaptureInput>,
    /// HAR files and access logs: (input index, path, format).
    pub others: Vec<(InputId, String, SourceFormat)>,
    log_map: Option<LogMap>,
    failed: bool,
    /// Entries for the inputs that could not be opened, so the report lists every input.
    unreadable: Vec<InputReport>,
}

impl Opened {
    /// Nothing could be opened.
    pub fn is_empty(&self) -> bool {
        self.captures.is_empty() && self.others.is_empty()
    }

    /// The format of every input, by index (unreadable ones count as captures: they feed
    /// nothing).
    pub fn sources(&self) -> Vec<SourceFormat> {
        let mut sources = vec![SourceFormat::Capture; self.paths.len()];
        for (i, _, format) in &self.others {
            sources[*i as usize] = *format;
        }
        sources
    }
}

/// Opens every input; those that fail are reported, and listed as unreadable.
pub fn open_inputs(inputs: &config::Inputs) -> Opened {
    for note in &inputs.notes {
        eprintln!(
            "mcp-forensics: {}",
            crate::app::diagnostic(&mcpf_report::sanitize::terminal(note))
        );
    }
    let mut opened = Opened {
        paths: inputs.files.clone(),
        captures: Vec::new(),
        others: Vec::new(),
        log_map: inputs.log_map.clone(),
        failed: false,
        unreadable: Vec::new(),
    };
    let have_map = opened.log_map.is_some();
    for (i, path) in inputs.files.iter().enumerate() {
        let i = i as InputId;
        let resolved = match &opened.log_map {
            Some(m) if m.is_text() => mcpf_ingest::resolve_text_log(path),
            _ => mcpf_ingest::resolve(path, inputs.format, have_map),
        };
        let format = resolved.and_then(|f| match f {
            SourceFormat::Capture => capture::open_capture(path, i).map(|c| {
                opened.captures.push(c);
                f
            }),
            _ => Ok(f),
        });
        match format {
            Ok(SourceFormat::Capture) => {}
            Ok(f) => opened.others.push((i, path.clone(), f)),
            Err(e) => {
                report_open_error(&e);
                opened.failed = true;
                opened.unreadable.push(InputReport::failed(i, &e));
            }
        }
    }
    opened
}

/// What feeding the inputs produced besides the events.
pub struct Fed {
    pub reports: Vec<InputReport>,
    pub capabilities: Vec<(InputId, Capabilities)>,
    pub failed: bool,
}

/// A TCP sink that counts what TCP lost: what the capture stage feeds.
pub trait CaptureSink: TcpSink {
    fn tcp_loss(&self) -> &TcpLoss;
}

/// Runs every input through the capture stage (captures, merged by time) or the ingest (HAR
/// files and logs, each in time order) into `pipeline`.
pub fn feed<S: http::HttpSink>(
    mut inputs: Opened,
    stage: &mut CaptureStage,
    pipeline: &mut Pipeline<S>,
    progress: bool,
) -> Fed {
    let captured = feed_captures(&mut inputs, stage, pipeline, progress);
    let http = &mut pipeline.http;
    feed_others(inputs, captured, &mut http.sink, &mut http.stats)
}

/// Runs the captures through the capture stage, merged by time, into `front`; returns their
/// reports.
pub fn feed_captures(
    inputs: &mut Opened,
    stage: &mut CaptureStage,
    front: &mut impl CaptureSink,
    progress: bool,
) -> Vec<(InputId, InputReport)> {
    if inputs.captures.is_empty() {
        return Vec::new();
    }
    let total = inputs.captures.iter().map(|i| i.size).sum::<Option<u64>>();
    let counters = inputs
        .captures
        .iter()
        .map(|i| i.bytes_read.clone())
        .collect();
    let bar = crate::progress::Progress::start(progress, total, counters, stage.frames.clone());
    capture::run(&mut inputs.captures, stage, front);
    bar.finish();
    let unseen_by_input = &front.tcp_loss().unseen_by_input;
    inputs
        .captures
        .iter()
        .map(|i| {
            let mut rep = stage.report(i);
            let unseen = unseen_by_input.get(&rep.index);
            rep.accounting
                .missing(mcpf_model::bucket::GAP, unseen.copied().unwrap_or(0));
            (i.reader.input_id(), rep)
        })
        .collect()
}

/// Runs the HAR files and logs through the ingest into `sink` (after the captures, whose
/// reports `captured` holds); puts every input's report together.
pub fn feed_others(
    inputs: Opened,
    mut reports: Vec<(InputId, InputReport)>,
    sink: &mut impl http::HttpSink,
    stats: &mut http::HttpStats,
) -> Fed {
    let mut capabilities = Vec::new();
    let mut failed = inputs.failed;
    for (i, path, format) in &inputs.others {
        match ingest_one(path, *i, *format, inputs.log_map.as_ref(), sink, stats) {
            Ok((rep, caps)) => {
                reports.push((*i, rep));
                capabilities.push((*i, caps));
            }
            Err(e) => {
                report_open_error(&e);
                failed = true;
                reports.push((*i, InputReport::failed(*i, &e)));
            }
        }
    }
    reports.extend(inputs.unreadable.iter().map(|r| (r.index, r.clone())));
    reports.sort_by_key(|(i, _)| *i);
    Fed {
        reports: reports.into_iter().map(|(_, r)| r).collect(),
        capabilities,
        failed,
    }
}

/// Reads one HAR file or access log into the HTTP stage's sink, counting its connections.
fn ingest_one(
    path: &str,
    input: InputId,
    format: SourceFormat,
    log_map: Option<&LogMap>,
    http_sink: &mut impl http::HttpSink,
    stats: &mut http::HttpStats,
) -> Result<(InputReport, Capabilities), OpenError> {
    let mut connections = 0u64;
    let mut sink = |ev: http::HttpEvent| {
        if matches!(ev, http::HttpEvent::ConnectionEnd { .. }) {
            connections += 1;
        }
        http_sink.on_http(ev);
    };
    let (mut rep, caps) = mcpf_ingest::read(path, input, format, log_map, &mut sink)?;
    rep.index = input;
    stats.connections_http += connections;
    rep.warnings
        .extend(caps.lacks.iter().map(|l| format!("lacks {l}")));
    Ok((rep, caps))
}

/// The HTTP stage (and what it feeds) behind the capture stage, counting what TCP lost.
pub struct Pipeline<S: http::HttpSink> {
    pub http: http::Stage<S>,
    pub tcp: TcpLoss,
    /// TLS connections decrypted with a key log, between TCP and HTTP.
    pub tls: Option<mcpf_tls::TlsLayer>,
}

/// Connections the capture stage closed, and the bytes missing from them.
#[derive(Clone, Debug, Default)]
pub struct TcpLoss {
    pub connections: u64,
    pub connections_with_gaps: u64,
    pub gap_bytes: u64,
    /// Of `gap_bytes`, those the snap length cut from captured frames.
    pub snaplen_bytes: u64,
    /// Bytes of sequence space no frame carried (gaps less snap-length cuts), by the input of
    /// the connection's last frame: the input's `missing_bytes.gap`.
    pub unseen_by_input: std::collections::BTreeMap<InputId, u64>,
}

impl TcpLoss {
    /// Counts a connection that closed, with what its directions missed.
    pub fn count(&mut self, event: &TcpEvent<'_>) {
        let TcpEvent::Closed { summary } = event else {
            return;
        };
        self.connections += 1;
        let gap = summary.c2s.gap_bytes + summary.s2c.gap_bytes;
        if gap > 0 {
            self.connections_with_gaps += 1;
            self.gap_bytes += gap;
            let snaplen = summary.c2s.snaplen_bytes + summary.s2c.snaplen_bytes;
            self.snaplen_bytes += snaplen;
            *self
                .unseen_by_input
                .entry(summary.end.frame.input)
                .or_default() += gap.saturating_sub(snaplen);
        }
    }
}

impl<S: http::HttpSink> Pipeline<S> {
    pub fn new(sink: S) -> Self {
        Pipeline {
            http: http::Stage::new(sink),
            tcp: TcpLoss::default(),
            tls: None,
        }
    }

    /// Decrypts the TLS connections `keys` has secrets for.
    pub fn with_tls(mut self, keys: Option<std::sync::Arc<mcpf_tls::KeyLog>>) -> Self {
        self.tls = keys.map(|k| mcpf_tls::TlsLayer::new((*k).clone()));
        self
    }
}

impl<S: http::HttpSink> CaptureSink for Pipeline<S> {
    fn tcp_loss(&self) -> &TcpLoss {
        &self.tcp
    }
}

impl<S: http::HttpSink> TcpSink for Pipeline<S> {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        self.tcp.count(&event);
        through_tls(&mut self.tls, &mut self.http, event);
    }

    fn on_tls_secrets(&mut self, key_log: &[u8]) {
        add_secrets(&mut self.tls, key_log);
    }
}

/// A TCP event into the HTTP stage, through the TLS layer when there is one.
pub fn through_tls<S: http::HttpSink>(
    tls: &mut Option<mcpf_tls::TlsLayer>,
    http: &mut http::Stage<S>,
    event: TcpEvent<'_>,
) {
    match tls {
        Some(tls) => tls.on_tcp(event, http),
        None => http.on_tcp(event),
    }
}

/// Key log lines an input carried, for the TLS layer (made for them when there was none).
pub fn add_secrets(tls: &mut Option<mcpf_tls::TlsLayer>, key_log: &[u8]) {
    tls.get_or_insert_with(|| mcpf_tls::TlsLayer::new(Default::default()))
        .add_secrets(key_log);
}
