//! Wiring only: validate the command line into a [`Config`], run the job it names, map the
//! outcome to an exit code. Errors get their context (which file, which flag) here.

use std::io::{self, Write};
use std::process::ExitCode;

use mcpf_capture::CaptureStage;
use mcpf_capture::tcp::{ConnSummary, TcpEvent};
use mcpf_detect::FindingKind;
use mcpf_report as report;

use crate::cli::{Cli, Format};
use crate::config::{self, Config, Generated};
use crate::pipeline::{self, Pipeline};

/// Exit codes, as documented in the README and the man page (grep convention).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Nothing at or above `--fail-on` was found.
    Clean = 0,
    /// Findings at or above `--fail-on`.
    Findings = 1,
    /// An input could not be analysed.
    Error = 2,
    /// Every input was analysed and nothing reached `--fail-on`, but part of an input could not
    /// be read: corrupt records were skipped, or the file or its gzip stream was cut. Findings
    /// (1) and unreadable inputs (2) take precedence: the warnings on standard error and the
    /// inputs' `accounting.*.lost` say what was lost in every case.
    DataLost = 3,
}

impl Exit {
    /// `Clean` becomes `DataLost` when a read input lost part of its file.
    pub fn or_data_lost(self, reports: &[mcpf_model::InputReport]) -> Exit {
        if self == Exit::Clean && pipeline::lost_data(reports) {
            Exit::DataLost
        } else {
            self
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

pub fn run(cli: Cli) -> ExitCode {
    let result = Config::from_cli(cli).and_then(|config| match config {
        Config::Flows(job) => {
            stop_reading_on_signals();
            flows(job)
        }
        Config::Http(job) => {
            stop_reading_on_signals();
            http_view(job)
        }
        Config::Analyze(job) => {
            stop_reading_on_signals();
            crate::analyze::run(job)
        }
        Config::Report(job) => saved_report(job),
        Config::Explain(kind) => explain(kind),
        Config::Generate(what) => generate(what),
    });
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            if is_broken_pipe(&e) {
                return Exit::Clean.into();
            }
            eprintln!("mcp-forensics: {}", diagnostic(&format!("{e:#}")));
            Exit::Error.into()
        }
    }
}

/// The exit code of a program ended by SIGINT (128 + 2), as shells report it.
const INTERRUPTED: i32 = 130;

/// The first SIGINT, SIGTERM or SIGHUP ends every input where it is (`tcpdump -w - | analyze -`
/// stopped with Ctrl-C: the report of what was read is still written); a second one ends the
/// program at once. Without a handler (one could not be set) a signal ends it as usual.
fn stop_reading_on_signals() {
    static SIGNALS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let _ = ctrlc::set_handler(|| {
        if SIGNALS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            std::process::exit(INTERRUPTED);
        }
        mcpf_model::interrupt::request_stop();
        eprintln!(
            "\nmcp-forensics: stopping: the inputs end here, the report of what was read follows (again to quit at once)"
        );
    });
}

/// A message for standard error. Always redacted, `--show-secrets` or not: a diagnostic is never
/// where the analyst reads a credential, and it may quote an input or a flag.
pub fn diagnostic(text: &str) -> String {
    report::redact::Redactor::new(true).text(text).into_owned()
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Standard output, buffered (a locked stdout flushes at every newline, which costs a syscall
/// per line of a pretty-printed report) and redacted unless `--show-secrets`: every command
/// writes through this one boundary, so no output path can print a credential by forgetting
/// to redact it.
pub fn stdout(
    redactor: report::redact::Redactor,
) -> report::redact::Redacting<io::BufWriter<io::StdoutLock<'static>>> {
    let out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    report::redact::Redacting::new(out, redactor)
}

fn flows(job: config::Flows) -> anyhow::Result<Exit> {
    let (mut inputs, unreadable) = pipeline::open_captures(&job.files);
    let failed = !unreadable.is_empty();
    if inputs.is_empty() {
        return Ok(Exit::Error);
    }
    let mut stage = CaptureStage::new(job.capture, job.files.len());
    let mut summaries: Vec<ConnSummary> = Vec::new();
    let mut sink = |ev: TcpEvent<'_>| {
        if let TcpEvent::Closed { summary } = ev {
            summaries.push(summary.clone());
        }
    };
    let stats = mcpf_capture::run(&mut inputs, &mut stage, &mut sink);
    summaries.sort_by_key(|s| s.conn);
    let mut reports: Vec<_> = inputs.iter().map(|i| stage.report(i)).collect();
    reports.extend(unreadable);
    reports.sort_by_key(|r| r.index);
    pipeline::print_warnings(&reports);
    let rows: Vec<_> = summaries
        .iter()
        .map(report::flows::FlowRow::from_summary)
        .collect();
    let mut out = stdout(report::redact::Redactor::new(true));
    match job.format {
        Format::Json => report::flows::write_json(&mut out, &rows, &reports, &stats)?,
        Format::Table => {
            let width =
                crate::config::output_width(std::io::IsTerminal::is_terminal(&std::io::stdout()));
            report::flows::write_table(&mut out, &rows, &reports, &stats, width)?
        }
    }
    out.flush()?;
    Ok(if failed { Exit::Error } else { Exit::Clean }.or_data_lost(&reports))
}

fn http_view(job: config::Http) -> anyhow::Result<Exit> {
    let inputs = pipeline::open_inputs(&job.inputs);
    if inputs.is_empty() {
        return Ok(Exit::Error);
    }
    let mut stage = CaptureStage::new(job.capture, inputs.paths.len());
    let redactor = report::redact::Redactor::new(job.redact);
    let view = match job.format {
        Format::Json => report::http::View::Json,
        Format::Table => report::http::View::Table,
    };
    let mut pipeline =
        Pipeline::new(report::http::Spool::new(view, redactor)).with_tls(job.tls_keys.clone());
    let fed = pipeline::feed(inputs, &mut stage, &mut pipeline, job.progress);
    if fed.reports.is_empty() {
        return Ok(Exit::Error);
    }
    pipeline::print_warnings(&fed.reports);
    if let Some(t) = pipeline.tls.as_ref().filter(|t| t.stats.connections > 0) {
        eprintln!(
            "mcp-forensics: note: {}",
            crate::analyze::tls_line(&t.stats)
        );
    }
    let stats = pipeline.http.stats.clone();
    let mut out = stdout(redactor);
    let width = crate::config::output_width(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    pipeline
        .http
        .sink
        .write(&mut out, &fed.reports, &stats, width)?;
    out.flush()?;
    Ok(if fed.failed { Exit::Error } else { Exit::Clean }.or_data_lost(&fed.reports))
}

/// `report FILE`: a saved report rendered again. Its strings were redacted when it was written
/// (unless `--show-secrets` was given then): they are printed as they are in the file, sanitized.
fn saved_report(job: config::Saved) -> anyhow::Result<Exit> {
    let source: Box<dyn io::Read> = if job.file == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(
            std::fs::File::open(&job.file)
                .map_err(|e| anyhow::anyhow!("{}: cannot open: {e}", job.file))?,
        )
    };
    let doc =
        report::saved::read_saved(source).map_err(|e| anyhow::anyhow!("{}: {e}", job.file))?;
    let mut out = stdout(report::redact::Redactor::new(true));
    match job.format {
        crate::cli::SavedFormat::Table => {
            let style = report::analyze::Style {
                color: job.color,
                width: job.width,
            };
            report::saved::write_saved_table(&mut out, &doc, style)?
        }
        crate::cli::SavedFormat::Markdown => report::markdown::write_markdown(&mut out, &doc)?,
        crate::cli::SavedFormat::Html => report::html::write_html(&mut out, &doc)?,
    }
    out.flush()?;
    Ok(Exit::Clean)
}

fn explain(kind: Option<String>) -> anyhow::Result<Exit> {
    use std::io::IsTerminal;
    let width = crate::config::output_width(std::io::stdout().is_terminal());
    let wrap = report::wrap;
    let mut out = stdout(report::redact::Redactor::new(false));
    match kind {
        None => {
            writeln!(out, "{:<34} {:<8} WHEN", "KIND", "SEVERITY")?;
            let hang = " ".repeat(44);
            for k in FindingKind::ALL.map(FindingKind::info) {
                let lead = format!("{:<34} {:<8} ", k.kind.name(), k.severity.name());
                writeln!(out, "{}", wrap(k.when, width.max(80), &lead, &hang))?;
            }
            writeln!(
                out,
                "\nmcp-forensics explain KIND: what a finding means, why it matters, what to change"
            )?;
        }
        Some(kind) => {
            // Kinds as people type them: any case, `-` for `_`.
            let name = kind.trim().to_ascii_lowercase().replace('-', "_");
            let Some(k) = FindingKind::from_name(&name).map(FindingKind::info) else {
                anyhow::bail!("{}", unknown_kind(&kind));
            };
            writeln!(out, "{} ({})\n", k.kind, k.severity.name())?;
            for (title, text) in [
                ("When", k.when),
                ("What it means", k.meaning),
                ("Why it matters", k.why),
                ("What to change", k.fix),
            ] {
                writeln!(
                    out,
                    "{}\n",
                    wrap(&format!("{title}: {text}"), width, "", "  ")
                )?;
            }
            let evidence = format!("Evidence: {}", k.evidence.join(", "));
            writeln!(out, "{}", wrap(&evidence, width, "", "  "))?;
        }
    }
    out.flush()?;
    Ok(Exit::Clean)
}

/// Why `explain` cannot take `kind`, and what it would.
fn unknown_kind(kind: &str) -> String {
    let known: Vec<&str> = FindingKind::ALL.map(FindingKind::name).to_vec();
    let is_id = kind.len() > 1
        && kind.starts_with(['F', 'f'])
        && kind[1..].bytes().all(|b| b.is_ascii_digit());
    if is_id {
        return format!(
            "{kind:?} is a finding of one report, not a kind: explain takes its kind (the word after the severity in the report, e.g. cross_namespace_replay), or run `mcp-forensics explain` for the list"
        );
    }
    let lower = kind.to_ascii_lowercase();
    let near: Vec<&str> = known
        .iter()
        .copied()
        .filter(|k| k.contains(lower.as_str()) || lower.contains(k))
        .collect();
    match near.as_slice() {
        [] => format!(
            "unknown finding kind {kind:?}; known kinds: {}",
            known.join(", ")
        ),
        some => format!(
            "unknown finding kind {kind:?}; did you mean {}?",
            some.join(", ")
        ),
    }
}

fn generate(what: Generated) -> anyhow::Result<Exit> {
    let text = match what {
        Generated::Man => crate::manpage::render(),
        Generated::Completions(shell) => crate::manpage::completions(shell),
    };
    let mut out = stdout(report::redact::Redactor::new(false));
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Exit::Clean)
}
