//! `flows`: every TCP connection of the captures, as the reassembly saw it.

use std::io::Write;

use mcpf_engine::Opened;
use mcpf_engine::report::{self, redact::Redactor};

use super::Exit;
use crate::cli::Format;
use crate::config;
use crate::terminal::{self, Terminal};

pub fn run(job: config::Flows) -> anyhow::Result<Exit> {
    let output = terminal::create_output(job.output.as_deref())?;
    let mut observer = Terminal::new(false);
    let inputs = Opened::captures_only(&job.files, &mut observer);
    if inputs.is_empty() {
        return Ok(Exit::InputUnreadable);
    }
    let run = mcpf_engine::flows(inputs, job.capture);
    terminal::print_warnings(&run.reports);
    let rows: Vec<_> = run
        .connections
        .iter()
        .map(report::flows::FlowRow::from_summary)
        .collect();
    let mut out = terminal::report_out(output, Redactor::new(true));
    let (reports, stats) = (&run.reports, &run.stats);
    match job.format {
        Format::Json => report::flows::write_json(&mut out, &rows, reports, stats)?,
        Format::Ndjson => report::flows::write_ndjson(&mut out, &rows, reports, stats)?,
        Format::Table => report::flows::write_table(&mut out, &rows, reports, stats, job.width)?,
    }
    out.flush()?;
    Ok(if run.failed {
        Exit::InputUnreadable
    } else {
        Exit::Clean
    }
    .or_data_lost(&run.reports))
}
