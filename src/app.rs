//! Wiring only: open inputs, run the stages, choose the reporter, map the outcome to an exit
//! code. Errors get their context (which file, which flag) here.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::capture::tcp::{ConnSummary, TcpEvent};
use crate::capture::{self, CaptureInput, CaptureStage, OpenError};
use crate::cli::{Cli, Command, FlowsArgs, Format, HttpArgs};
use crate::http;
use crate::report;

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

/// Opens every capture named; those that fail are reported and left out.
fn open_captures(files: &[String]) -> (Vec<CaptureInput>, bool) {
    let mut inputs = Vec::new();
    let mut failed = false;
    for (i, path) in files.iter().enumerate() {
        match capture::open_capture(path, i as u32) {
            Ok(input) => inputs.push(input),
            Err(e) => {
                report_open_error(&e);
                failed = true;
            }
        }
    }
    (inputs, failed)
}

fn flows(args: FlowsArgs) -> anyhow::Result<Exit> {
    let (mut inputs, failed) = open_captures(&args.files);
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
    let reports: Vec<_> = inputs.iter().map(|i| stage.report(i)).collect();
    let rows: Vec<_> = summaries
        .iter()
        .map(report::flows::FlowRow::from_summary)
        .collect();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Json => report::flows::write_json(&mut out, &rows, &reports, &stats)?,
        Format::Table => report::flows::write_table(&mut out, &rows, &reports, &stats)?,
    }
    out.flush()?;
    Ok(if failed { Exit::Error } else { Exit::Clean })
}

fn http_view(args: HttpArgs) -> anyhow::Result<Exit> {
    let (mut inputs, failed) = open_captures(&args.files);
    if inputs.is_empty() {
        return Ok(Exit::Error);
    }
    let mut stage = CaptureStage::new(args.capture.limits(), args.files.len());
    let mut http_stage = http::Stage::new(http::exchange::Collector::default());
    capture::run(&mut inputs, &mut stage, &mut http_stage);
    let reports: Vec<_> = inputs.iter().map(|i| stage.report(i)).collect();
    let stats = http_stage.stats.clone();
    let collector = http_stage.sink;
    let anomalies = collector.anomalies.clone();
    let exchanges = collector.into_exchanges();
    let redactor = report::redact::Redactor::new(!args.show_secrets);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Json => {
            report::http::write_json(&mut out, &exchanges, &anomalies, &reports, &stats, &redactor)?
        }
        Format::Table => report::http::write_table(&mut out, &exchanges, &reports, &stats, &redactor)?,
    }
    out.flush()?;
    Ok(if failed { Exit::Error } else { Exit::Clean })
}
