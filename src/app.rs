//! Wiring only: open inputs, run the stages, choose the reporter, map the outcome to an exit
//! code. Errors get their context (which file, which flag) here.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{
    AnalyzeArgs, Cli, ColorChoice, Command, ExplainArgs, FlowsArgs, Format, GenerateArgs, HttpArgs,
    ReportFormat,
};
use mcpf_capture::tcp::{ConnSummary, TcpEvent};
use mcpf_capture::{self as capture, CaptureInput, CaptureStage};
use mcpf_http as http;
use mcpf_model::{InputReport, OpenError, SourceFormat};
use mcpf_report as report;

/// Exit codes, as documented in the README and the man page (grep convention).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Nothing at or above `--fail-on` was found.
    Clean = 0,
    /// Findings at or above `--fail-on`.
    Findings = 1,
    /// An input could not be analysed.
    Error = 2,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Flows(args) => flows(args),
        Command::Http(args) => http_view(args),
        Command::Analyze(args) => analyze(args),
        Command::Explain(args) => explain(args),
        Command::Generate(args) => generate(args),
    };
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            if is_broken_pipe(&e) {
                return Exit::Clean.into();
            }
            eprintln!("mcp-forensics: {e:#}");
            Exit::Error.into()
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Prints a per-file error the ripgrep way: the run goes on, the exit code says it happened.
fn report_open_error(e: &OpenError) {
    let path = report::sanitize::terminal(&e.path);
    eprintln!("mcp-forensics: {path}: {}", e.message);
    if let Some(hint) = &e.hint {
        eprintln!("  hint: {hint}");
    }
}

/// Opens every capture named; those that fail are reported, and listed as unreadable.
fn open_captures(files: &[String]) -> (Vec<CaptureInput>, Vec<InputReport>) {
    let mut inputs = Vec::new();
    let mut unreadable = Vec::new();
    for (i, path) in files.iter().enumerate() {
        match capture::open_capture(path, i as u32) {
            Ok(input) => inputs.push(input),
            Err(e) => {
                report_open_error(&e);
                unreadable.push(InputReport::failed(i as u32, &e));
            }
        }
    }
    (inputs, unreadable)
}

fn flows(args: FlowsArgs) -> anyhow::Result<Exit> {
    let (mut inputs, unreadable) = open_captures(&args.files);
    let failed = !unreadable.is_empty();
    if inputs.is_empty() {
        return Ok(Exit::Error);
    }
    let mut stage = CaptureStage::new(args.capture.limits(), args.files.len());
    let mut summaries: Vec<ConnSummary> = Vec::new();
    let mut sink = |ev: TcpEvent<'_>| {
        if let TcpEvent::Closed { summary } = ev {
            summaries.push(summary.clone());
        }
    };
    let stats = capture::run(&mut inputs, &mut stage, &mut sink);
    summaries.sort_by_key(|s| s.conn);
    let mut reports: Vec<_> = inputs.iter().map(|i| stage.report(i)).collect();
    reports.extend(unreadable);
    reports.sort_by_key(|r| r.index);
    let rows: Vec<_> = summaries
        .iter()
        .map(report::flows::FlowRow::from_summary)
        .collect();
    let stdout = io::stdout();
    // Buffered: a locked stdout flushes at every newline, which costs a syscall per line of a
    // pretty-printed report.
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match args.format {
        Format::Json => report::flows::write_json(&mut out, &rows, &reports, &stats)?,
        Format::Table => report::flows::write_table(&mut out, &rows, &reports, &stats)?,
    }
    out.flush()?;
    Ok(if failed { Exit::Error } else { Exit::Clean })
}

/// The inputs of a run, each opened as what its content says it is.
struct Inputs {
    captures: Vec<CaptureInput>,
    /// HAR files and access logs: (input index, path, format).
    others: Vec<(u32, String, SourceFormat)>,
    log_map: Option<mcpf_ingest::LogMap>,
    failed: bool,
    /// Entries for the inputs that could not be opened, so the report lists every input.
    unreadable: Vec<InputReport>,
}

fn open_inputs(
    files: &[String],
    choice: crate::cli::InputFormat,
    log_map: &Option<String>,
) -> anyhow::Result<Inputs> {
    let log_map = match log_map {
        Some(spec) => {
            Some(mcpf_ingest::LogMap::load(spec).map_err(|e| anyhow::anyhow!("--log-map: {e}"))?)
        }
        None => None,
    };
    let mut opened = Inputs {
        captures: Vec::new(),
        others: Vec::new(),
        log_map,
        failed: false,
        unreadable: Vec::new(),
    };
    for (i, path) in files.iter().enumerate() {
        let format = mcpf_ingest::resolve(path, choice.into(), opened.log_map.is_some()).and_then(
            |f| match f {
                SourceFormat::Capture => capture::open_capture(path, i as u32).map(|c| {
                    opened.captures.push(c);
                    f
                }),
                _ => Ok(f),
            },
        );
        match format {
            Ok(SourceFormat::Capture) => {}
            Ok(f) => opened.others.push((i as u32, path.clone(), f)),
            Err(e) => {
                report_open_error(&e);
                opened.failed = true;
                opened.unreadable.push(InputReport::failed(i as u32, &e));
            }
        }
    }
    Ok(opened)
}

/// What feeding the inputs produced besides the events.
struct Fed {
    reports: Vec<InputReport>,
    capabilities: Vec<(u32, mcpf_model::Capabilities)>,
    failed: bool,
}

/// Runs every input through the capture stage (captures, merged by time) or the ingest (HAR
/// files and logs, each in time order) into `pipeline`.
fn feed<S: http::HttpSink>(
    mut inputs: Inputs,
    stage: &mut CaptureStage,
    pipeline: &mut Pipeline<S>,
    progress: bool,
) -> Fed {
    let mut reports: Vec<(u32, InputReport)> = Vec::new();
    if !inputs.captures.is_empty() {
        let total = inputs.captures.iter().map(|i| i.size).sum::<Option<u64>>();
        let bar = crate::progress::Progress::start(
            progress,
            total,
            inputs
                .captures
                .iter()
                .map(|i| i.bytes_read.clone())
                .collect(),
            stage.frames.clone(),
        );
        capture::run(&mut inputs.captures, stage, pipeline);
        bar.finish();
        reports.extend(
            inputs
                .captures
                .iter()
                .map(|i| (i.reader.input_id(), stage.report(i))),
        );
    }
    let mut capabilities = Vec::new();
    let mut failed = inputs.failed;
    for (i, path, format) in &inputs.others {
        let mut connections = 0u64;
        let http_stage = &mut pipeline.http;
        let mut sink = |ev: http::HttpEvent| {
            if matches!(ev, http::HttpEvent::ConnectionEnd { .. }) {
                connections += 1;
            }
            http::HttpSink::on_http(&mut http_stage.sink, ev);
        };
        match mcpf_ingest::read(path, *i, *format, inputs.log_map.as_ref(), &mut sink) {
            Ok((mut rep, caps)) => {
                rep.index = *i;
                pipeline.http.stats.connections_http += connections;
                rep.warnings
                    .extend(caps.lacks.iter().map(|l| format!("lacks {l}")));
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

fn http_view(args: HttpArgs) -> anyhow::Result<Exit> {
    let inputs = open_inputs(&args.files, args.input_format, &args.log_map)?;
    if inputs.captures.is_empty() && inputs.others.is_empty() {
        return Ok(Exit::Error);
    }
    let mut stage = CaptureStage::new(args.capture.limits(), args.files.len());
    let mut pipeline = Pipeline::new(http::exchange::Collector::default());
    let fed = feed(
        inputs,
        &mut stage,
        &mut pipeline,
        use_color(ColorChoice::Auto, &io::stderr()),
    );
    if fed.reports.is_empty() {
        return Ok(Exit::Error);
    }
    let stats = pipeline.http.stats.clone();
    let collector = pipeline.http.sink;
    let anomalies = collector.anomalies.clone();
    let exchanges = collector.into_exchanges();
    let redactor = report::redact::Redactor::new(!args.show_secrets);
    let stdout = io::stdout();
    // Buffered: a locked stdout flushes at every newline, which costs a syscall per line of a
    // pretty-printed report.
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match args.format {
        Format::Json => report::http::write_json(
            &mut out,
            &exchanges,
            &anomalies,
            &fed.reports,
            &stats,
            &redactor,
        )?,
        Format::Table => {
            report::http::write_table(&mut out, &exchanges, &fed.reports, &stats, &redactor)?
        }
    }
    out.flush()?;
    Ok(if fed.failed { Exit::Error } else { Exit::Clean })
}

/// The HTTP stage (and what it feeds) behind the capture stage, counting what TCP lost.
struct Pipeline<S: http::HttpSink> {
    http: http::Stage<S>,
    connections: u64,
    connections_with_gaps: u64,
    gap_bytes: u64,
}

impl<S: http::HttpSink> Pipeline<S> {
    fn new(sink: S) -> Self {
        Pipeline {
            http: http::Stage::new(sink),
            connections: 0,
            connections_with_gaps: 0,
            gap_bytes: 0,
        }
    }
}

impl<S: http::HttpSink> mcpf_capture::tcp::TcpSink for Pipeline<S> {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        if let TcpEvent::Closed { summary } = &event {
            self.connections += 1;
            let gap = summary.c2s.gap_bytes + summary.s2c.gap_bytes;
            if gap > 0 {
                self.connections_with_gaps += 1;
                self.gap_bytes += gap;
            }
        }
        self.http.on_tcp(event);
    }
}

/// Colour and progress bars: only on a terminal, and never with `NO_COLOR` or `--color never`.
fn use_color(choice: ColorChoice, stream: &impl std::io::IsTerminal) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

fn parse_time(flag: &str, value: &Option<String>) -> anyhow::Result<Option<mcpf_model::Timestamp>> {
    match value {
        None => Ok(None),
        Some(v) => mcpf_model::Timestamp::parse_rfc3339(v)
            .map(Some)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{flag} {v:?}: expected an RFC 3339 time such as 2026-11-02T12:00:00Z"
                )
            }),
    }
}

fn analyze(args: AnalyzeArgs) -> anyhow::Result<Exit> {
    let since = parse_time("--since", &args.since)?;
    let until = parse_time("--until", &args.until)?;
    let mut servers = Vec::new();
    for s in &args.server {
        servers.push(mcpf_capture::tcp::ServerSpec::parse(s).ok_or_else(|| {
            anyhow::anyhow!("--server {s:?}: expected a port, an address or address:port")
        })?);
    }
    let inputs = open_inputs(&args.files, args.input_format, &args.log_map)?;
    if inputs.captures.is_empty() && inputs.others.is_empty() {
        return Ok(Exit::Error);
    }
    let sel = report::analyze::Selection {
        sessions: (!args.session.is_empty()).then(|| args.session.clone()),
        since,
        until,
        min_severity: args.min_severity.map(|s| s.severity()),
        events: args.events,
        all_events: args.all_events,
    };
    // Sessions are finalized as they end (detectors run, events dropped) so memory follows the
    // sessions in progress; a HAR or log must first be matched with the capture of the same
    // traffic, and --events keeps everything, so those runs finalize at the end.
    let early = inputs.others.is_empty() && !args.events;
    let redactor = report::redact::Redactor::new(!args.show_secrets);
    let record_format = match args.format {
        ReportFormat::Json => report::analyze::RecordFormat::Pretty,
        ReportFormat::Ndjson => report::analyze::RecordFormat::Lines,
        ReportFormat::Table => report::analyze::RecordFormat::None,
    };
    let mut writer = report::analyze::SessionWriter::new(
        record_format,
        args.events,
        redactor,
        args.files.clone(),
    );
    if args.capture.threaded() {
        // A third thread renders the JSON records while the analysis goes on.
        writer = writer.in_background();
    }
    let finalizer = std::sync::Arc::new(std::sync::Mutex::new(Finalizer::new(sel.clone(), writer)));
    let callback = {
        let finalizer = finalizer.clone();
        Box::new(move |s: Box<mcpf_mcp::model::Session>| {
            if let Ok(mut f) = finalizer.lock() {
                f.run(s);
            }
        })
    };
    let mut sources = vec![SourceFormat::Capture; args.files.len()];
    for (i, _, format) in &inputs.others {
        sources[*i as usize] = *format;
    }
    let builder = mcpf_mcp::Builder::new()
        .with_early_finalize(early)
        .with_sources(sources)
        .with_session_callback(callback);
    let mut stage = CaptureStage::with_servers(args.capture.limits(), args.files.len(), servers);
    let progress = use_color(args.color, &io::stderr());
    // Two cores: packets, TCP and HTTP on this thread; sessions and detectors on another.
    let (fed, mut builder, http_stats, tcp) = if args.capture.threaded() {
        let (forwarder, rx) = http::threaded::channel();
        std::thread::scope(|scope| {
            let consumer = scope.spawn(move || {
                let mut builder = builder;
                http::threaded::replay(rx, &mut builder);
                builder
            });
            let mut pipeline = Pipeline::new(forwarder);
            let fed = feed(inputs, &mut stage, &mut pipeline, progress);
            pipeline.http.sink.flush();
            let tcp = (
                pipeline.connections,
                pipeline.connections_with_gaps,
                pipeline.gap_bytes,
            );
            let http_stats = pipeline.http.stats.clone();
            // Dropping the forwarder closes the channel: the consumer drains it and returns.
            drop(pipeline);
            consumer
                .join()
                .map(|builder| (fed, builder, http_stats, tcp))
                .map_err(|_| anyhow::anyhow!("internal error: the session stage failed"))
        })?
    } else {
        let mut pipeline = Pipeline::new(builder);
        let fed = feed(inputs, &mut stage, &mut pipeline, progress);
        let tcp = (
            pipeline.connections,
            pipeline.connections_with_gaps,
            pipeline.gap_bytes,
        );
        let http_stats = pipeline.http.stats.clone();
        (fed, pipeline.http.sink, http_stats, tcp)
    };
    let failed = fed.failed;
    let reports = fed.reports;
    for (input, caps) in fed.capabilities {
        builder.set_capabilities(input, caps);
    }
    let (sessions, anomalies, mcp_stats) = builder.finish();
    drop(sessions);
    let fin = std::mem::replace(
        &mut *finalizer
            .lock()
            .map_err(|_| anyhow::anyhow!("internal error: the detector stage failed"))?,
        Finalizer::new(
            sel.clone(),
            report::analyze::SessionWriter::new(
                report::analyze::RecordFormat::None,
                false,
                redactor,
                Vec::new(),
            ),
        ),
    );
    let (findings, session_writer, timelines) = fin.finish();
    if let Some(e) = &session_writer.error {
        anyhow::bail!("{e}");
    }
    let mut rep = report::analyze::Report {
        inputs: reports,
        sessions: session_writer,
        findings,
        timelines,
        http: http_stats,
        mcp: mcp_stats,
        anomalies,
        connections: tcp.0,
        connections_with_gaps: tcp.1,
        gap_bytes: tcp.2,
        limits: Vec::new(),
        tool: report::analyze::Tool {
            name: env!("CARGO_PKG_NAME"),
            version: env!("CARGO_PKG_VERSION"),
        },
    };
    let fail_on = args.fail_on.severity();
    let stdout = io::stdout();
    // Buffered: a locked stdout flushes at every newline, which costs a syscall per line of a
    // pretty-printed report.
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match args.format {
        ReportFormat::Json => report::analyze::write_json(&mut out, &mut rep, &sel, &redactor)?,
        ReportFormat::Ndjson => report::analyze::write_ndjson(&mut out, &mut rep, &sel, &redactor)?,
        ReportFormat::Table => {
            let color = use_color(args.color, &io::stdout());
            report::analyze::write_human(
                &mut out,
                &rep,
                &sel,
                &redactor,
                report::analyze::Style { color },
                fail_on,
            )?
        }
    }
    out.flush()?;
    if rep.session_count() == 0 {
        // Nothing to analyse: say why, in words a newcomer can act on.
        for h in report::hints::no_session(&rep.inputs, rep.connections, &rep.http) {
            eprintln!("mcp-forensics: no MCP session found: {}", h.problem);
            eprintln!("  hint: {}", h.hint);
        }
        return Ok(Exit::Error);
    }
    if failed {
        return Ok(Exit::Error);
    }
    let failing = rep
        .counted_findings(&sel)
        .any(|f| f.severity.at_least(fail_on));
    // The process ends here: freeing every record of a large analysis one by one would only
    // cost time.
    std::mem::forget(rep);
    Ok(if failing { Exit::Findings } else { Exit::Clean })
}

fn explain(args: ExplainArgs) -> anyhow::Result<Exit> {
    let stdout = io::stdout();
    // Buffered: a locked stdout flushes at every newline, which costs a syscall per line of a
    // pretty-printed report.
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match args.kind {
        None => {
            writeln!(out, "{:<34} {:<8} WHEN", "KIND", "SEVERITY")?;
            for k in mcpf_detect::KINDS {
                writeln!(out, "{:<34} {:<8} {}", k.kind, k.severity.name(), k.when)?;
            }
            writeln!(
                out,
                "\nmcp-forensics explain KIND: what a finding means, why it matters, what to change"
            )?;
        }
        Some(kind) => {
            let Some(k) = mcpf_detect::kind_info(&kind) else {
                let known: Vec<&str> = mcpf_detect::KINDS.iter().map(|k| k.kind).collect();
                anyhow::bail!(
                    "unknown finding kind {kind:?}; known kinds: {}",
                    known.join(", ")
                );
            };
            writeln!(out, "{} ({})\n", k.kind, k.severity.name())?;
            writeln!(out, "When: {}\n", k.when)?;
            writeln!(out, "What it means: {}\n", k.meaning)?;
            writeln!(out, "Why it matters: {}\n", k.why)?;
            writeln!(out, "What to change: {}\n", k.fix)?;
            writeln!(out, "Evidence: {}", k.evidence.join(", "))?;
        }
    }
    out.flush()?;
    Ok(Exit::Clean)
}

fn generate(args: GenerateArgs) -> anyhow::Result<Exit> {
    let text = match args.what.as_str() {
        "man" => crate::manpage::render(),
        shell => {
            let shell: clap_complete::Shell = shell.parse().map_err(|_| {
                anyhow::anyhow!(
                    "generate {shell:?}: expected man, bash, zsh, fish, elvish or powershell"
                )
            })?;
            crate::manpage::completions(shell)
        }
    };
    let stdout = io::stdout();
    // Buffered: a locked stdout flushes at every newline, which costs a syscall per line of a
    // pretty-printed report.
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Exit::Clean)
}

/// The detector stage behind the MCP stage: runs the detectors on each session as it is
/// finalized, computes its verdict, builds its timeline when the report will show it, renders
/// its record, then lets the session drop its records.
struct Finalizer {
    findings: mcpf_detect::Findings,
    calls: mcpf_model::PagedVec<mcpf_detect::retry_without_idempotency_key::ToolCall>,
    timelines: Vec<(usize, Vec<report::timeline::Entry>)>,
    sel: report::analyze::Selection,
    writer: report::analyze::SessionWriter,
    timelines_for_any: usize,
}

/// Sessions whose timeline is kept although nothing was found in them: small captures show
/// every session; large ones show the sessions with findings.
const TIMELINES_FOR_ANY_SESSION: usize = 20;

impl Finalizer {
    fn new(sel: report::analyze::Selection, writer: report::analyze::SessionWriter) -> Self {
        Finalizer {
            findings: mcpf_detect::Findings::default(),
            calls: Default::default(),
            timelines: Vec::new(),
            sel,
            writer,
            timelines_for_any: 0,
        }
    }

    fn run(&mut self, mut s: Box<mcpf_mcp::model::Session>) {
        let first = self.findings.list.len();
        mcpf_detect::session(&s, &mut self.findings);
        let verdict = mcpf_detect::verdict::resumption(&s, &self.findings.list);
        self.calls
            .extend(mcpf_detect::retry_without_idempotency_key::calls(&s));
        let sel = &self.sel;
        let in_window = |m: mcpf_model::Mark| {
            !(sel.since.is_some_and(|t| m.time < t) || sel.until.is_some_and(|t| m.time > t))
        };
        let shown: Vec<(usize, &mcpf_detect::Finding)> = self.findings.list[first..]
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
            .any(|(_, f)| f.severity.at_least(mcpf_detect::Severity::Low));
        if selected || notable || self.timelines_for_any < TIMELINES_FOR_ANY_SESSION {
            if !selected && !notable {
                self.timelines_for_any += 1;
            }
            let entries: Vec<report::timeline::Entry> =
                report::timeline::build(&s, &shown, sel.all_events)
                    .into_iter()
                    .filter(|e| in_window(e.time))
                    .collect();
            self.timelines.push((s.idx, entries));
        }
        s.summarize();
        let same: Vec<String> = s
            .same_session_as
            .iter()
            .map(|&i| mcpf_mcp::model::session_label(i))
            .collect();
        if !self.sel.events {
            // The record needs summaries only: what waits for the renderer stays small.
            s.compact();
        }
        self.writer.write(s, verdict, same);
    }

    /// Cross-session detectors, the final order of findings (finding references in timelines
    /// follow it), the rendered sessions and the timelines.
    fn finish(
        mut self,
    ) -> (
        Vec<mcpf_detect::Finding>,
        report::analyze::SessionWriter,
        Vec<Vec<report::timeline::Entry>>,
    ) {
        let mut calls = self.calls.into_vec();
        let (findings, position) = mcpf_detect::finish(self.findings, &mut calls);
        self.writer.finish();
        let sessions = self.writer.headers.len();
        let mut timelines: Vec<Vec<report::timeline::Entry>> = vec![Vec::new(); sessions];
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
