//! `http`: every HTTP exchange of the inputs, MCP or not.

use std::io::Write;

use mcpf_engine::Engine;
use mcpf_engine::report::{self, redact::Redactor};

use super::Exit;
use crate::cli::Format;
use crate::config;
use crate::terminal::{self, Terminal};

pub fn run(job: config::Http) -> anyhow::Result<Exit> {
    let output = terminal::create_output(job.output.as_deref())?;
    let mut observer = Terminal::new(job.progress);
    let Some(inputs) = terminal::open(&job.inputs, &job.notes, &mut observer) else {
        return Ok(Exit::InputUnreadable);
    };
    let redactor = Redactor::new(job.redact);
    let view = match job.format {
        Format::Json => report::http::View::Json,
        Format::Ndjson => report::http::View::Ndjson,
        Format::Table => report::http::View::Table,
    };
    let engine = Engine::new(job.engine);
    let run = engine.http(
        inputs,
        report::http::Spool::new(view, redactor),
        &mut observer,
    );
    if run.reports.is_empty() {
        return Ok(Exit::InputUnreadable);
    }
    terminal::print_warnings(&run.reports);
    if let Some(t) = &run.tls {
        let line = report::note::sentence(&t.note());
        eprintln!("mcp-forensics: note: {line}");
    }
    let mut out = terminal::report_out(output, redactor);
    run.sink
        .write(&mut out, &run.reports, &run.stats, job.width)?;
    out.flush()?;
    Ok(if run.failed {
        Exit::InputUnreadable
    } else {
        Exit::Clean
    }
    .or_data_lost(&run.reports))
}
