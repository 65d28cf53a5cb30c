//! `analyze`: the run handed to the engine, the report written in the chosen format, what a
//! person needs to know said on standard error, and the exit code the findings call for.

use std::io::Write;

use mcpf_engine::pcaps::PcapRequest;
use mcpf_engine::report::analyze::{self as report, LiveLines, RecordFormat, SessionWriter};
use mcpf_engine::report::redact::{Redacting, Redactor};
use mcpf_engine::{Engine, Opened, Run, model};

use super::Exit;
use crate::cli::ReportFormat;
use crate::config;
use crate::terminal::{self, Terminal};

pub fn run(job: config::Analyze) -> anyhow::Result<Exit> {
    let output = terminal::create_output(job.output.as_deref())?;
    if let Some(request) = &job.pcaps {
        pcap_dir(request, &job.inputs.files)?;
    }
    let mut observer = Terminal::new(job.progress);
    let Some(inputs) = terminal::open(&job.inputs, &job.notes, &mut observer) else {
        return Ok(Exit::InputUnreadable);
    };
    let redactor = Redactor::new(job.redact);
    // NDJSON from a live stream goes out as each session ends: the output is needed from the
    // start. From files it is written at the end, its findings numbered as every other format
    // numbers them (by time over the whole run, which a stream cannot wait for).
    let (writer, output) = match job.format {
        ReportFormat::Ndjson if reads_a_stream(&inputs.paths) => {
            (live_writer(&job, &inputs, redactor, output), None)
        }
        _ => (session_writer(&job, &inputs, redactor), output),
    };
    // Read again after the run by --write-pcap, which the run does not give back.
    let inputs_paths = inputs.paths.clone();
    let engine = Engine::new(job.engine.clone());
    let mut run = engine.run(inputs, writer, &mut observer)?;
    if job.shard_stats {
        eprintln!("{}", run.shard_work);
    }
    if let Some(mut live) = run.report.sessions.take_live() {
        // Kept as the error it is: a reader gone away (`| head -1`) ends the program quietly.
        if let Some(e) = live.error.take() {
            return Err(anyhow::Error::new(e).context("cannot write the report"));
        }
        let mut out = live.into_inner();
        report::write_ndjson_tail(&mut out, &run.report, &job.engine.selection, &redactor)?;
        out.flush()?;
        return Ok(exit(run, &job));
    }
    if output.is_none() && job.pager && job.format == ReportFormat::Table {
        let mut paged = crate::pager::Paged::new();
        write(
            &mut run.report,
            &job,
            &redactor,
            Redacting::new(&mut paged, redactor),
        )?;
        paged.finish()?;
    } else {
        let out = terminal::report_out(output, redactor);
        write(&mut run.report, &job, &redactor, out)?;
    }
    if let Some(request) = &job.pcaps {
        write_pcaps(&run, &job, &inputs_paths, request)?;
    }
    Ok(exit(run, &job))
}

/// Before the analysis: `--write-pcap` reads the inputs again, which a stream cannot give, and
/// writes into a directory that must be there.
fn pcap_dir(request: &PcapRequest, paths: &[String]) -> anyhow::Result<()> {
    if let Some(p) = paths.iter().find(|p| mcpf_engine::ingest::streamed(p)) {
        anyhow::bail!(
            "--write-pcap reads the inputs a second time, and {p} is a stream (standard input or a FIFO) that cannot be read again: save it to a file first"
        );
    }
    std::fs::create_dir_all(&request.dir).map_err(|e| {
        anyhow::anyhow!(
            "--write-pcap {}: cannot create it: {e}",
            request.dir.display()
        )
    })
}

/// After the report: the captures `--write-pcap` asks for, and one line saying what was written.
fn write_pcaps(
    run: &Run,
    job: &config::Analyze,
    paths: &[String],
    request: &PcapRequest,
) -> anyhow::Result<()> {
    let tunnels = &job.engine.capture.tunnels;
    let written =
        mcpf_engine::pcaps::write_pcaps(run, &job.engine.selection, paths, tunnels, request)
            .map_err(|e| anyhow::anyhow!("--write-pcap: {e}"))?;
    for note in &written.notes {
        eprintln!("mcp-forensics: {note}");
    }
    eprintln!(
        "mcp-forensics: wrote {} pcap{} ({} frame{}) to {}",
        written.files,
        if written.files == 1 { "" } else { "s" },
        written.frames,
        if written.frames == 1 { "" } else { "s" },
        request.dir.display()
    );
    Ok(())
}

/// Some input is a stream that gives its bytes once (standard input, a FIFO, `/dev/fd/N`).
fn reads_a_stream(paths: &[String]) -> bool {
    paths.iter().any(|p| mcpf_engine::ingest::streamed(p))
}

/// Writes NDJSON to the output (standard output, or the `--output` file) as each session ends.
fn live_writer(
    job: &config::Analyze,
    inputs: &Opened,
    redactor: Redactor,
    output: Option<std::fs::File>,
) -> SessionWriter {
    let out = Box::new(terminal::report_out(output, redactor));
    let captures = inputs
        .sources()
        .iter()
        .map(|f| *f == model::SourceFormat::Capture)
        .collect();
    let live = LiveLines::new(
        out,
        job.engine.selection.clone(),
        redactor,
        inputs.paths.clone(),
        captures,
    );
    SessionWriter::live(live, redactor)
}

/// Renders each session's record as it is finalized (on a thread of its own when there are
/// threads to spare).
fn session_writer(job: &config::Analyze, inputs: &Opened, redactor: Redactor) -> SessionWriter {
    let format = match job.format {
        ReportFormat::Json | ReportFormat::Markdown | ReportFormat::Html => RecordFormat::Pretty,
        ReportFormat::Ndjson => RecordFormat::Lines,
        ReportFormat::Table => RecordFormat::None,
    };
    let events = job.engine.selection.events;
    let writer = SessionWriter::new(format, events, redactor, inputs.paths.clone());
    if job.engine.threads > 1 {
        writer.in_background()
    } else {
        writer
    }
}

/// Writes the report through `out` (standard output, or the --output file), redacted.
fn write<W: std::io::Write>(
    rep: &mut report::Report,
    job: &config::Analyze,
    redactor: &Redactor,
    mut out: Redacting<W>,
) -> anyhow::Result<()> {
    let sel = &job.engine.selection;
    match job.format {
        ReportFormat::Json => report::write_json(&mut out, rep, sel, redactor)?,
        ReportFormat::Ndjson => report::write_ndjson(&mut out, rep, sel, redactor)?,
        ReportFormat::Markdown => {
            mcpf_engine::report::markdown::write_markdown_report(&mut out, rep, sel, redactor)?
        }
        ReportFormat::Html => {
            let doc = mcpf_engine::report::markdown::document(rep, sel, redactor)?;
            mcpf_engine::report::html::write_html(&mut out, &doc)?
        }
        ReportFormat::Table => {
            let style = report::Style {
                color: job.color,
                width: job.width,
            };
            report::write_human(&mut out, rep, sel, redactor, style, job.fail_on)?
        }
    }
    out.flush()?;
    Ok(())
}
/// The exit code of a run, with what a person needs to know on standard error.
fn exit(run: Run, job: &config::Analyze) -> Exit {
    let Run {
        report,
        failed,
        tls,
        ..
    } = run;
    let sel = &job.engine.selection;
    terminal::print_warnings(&report.inputs);
    if report.session_count() == 0 {
        // Nothing to analyse: say why, in words a newcomer can act on.
        for h in mcpf_engine::report::hints::no_session(
            &report.inputs,
            report.connections,
            &report.http,
            &report.mcp,
        ) {
            eprintln!("mcp-forensics: no MCP session found: {}", h.problem);
            eprintln!("  hint: {}", h.hint);
        }
        // Connections the key log did not open are not passed on as bytes: say so here.
        let no_key = mcpf_engine::tls::Undecryptable::NoKey;
        if let Some(t) = tls.filter(|t| t.undecryptable.contains_key(&no_key)) {
            let line = mcpf_engine::report::note::sentence(&t.note());
            eprintln!("mcp-forensics: no MCP session found: {line}");
            eprintln!(
                "  hint: the key log must be the one the client wrote during this capture (each connection's secrets are keyed by its ClientHello random)"
            );
        }
        return if failed {
            Exit::InputUnreadable
        } else {
            Exit::NoSession
        };
    }
    let unmatched = report.unmatched_session_keys(sel);
    if !unmatched.is_empty() {
        let labels = report.session_labels();
        eprintln!(
            "mcp-forensics: --session {} names no session of these inputs; they have {} (a session ID may be given whole, or as the table shortens it)",
            unmatched.join(", "),
            match labels.as_slice() {
                [one] => one.clone(),
                [first, .., last] => format!("{first} to {last}"),
                [] => "none".into(),
            }
        );
        return Exit::Error;
    }
    if failed {
        return Exit::InputUnreadable;
    }
    let failing = report
        .counted_findings(sel)
        .any(|f| f.severity.at_least(job.fail_on));
    // The process ends here: freeing every record of a large analysis one by one would only
    // cost time.
    let exit = if failing { Exit::Findings } else { Exit::Clean }.or_data_lost(&report.inputs);
    std::mem::forget(report);
    exit
}
