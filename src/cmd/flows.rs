//! `flows`: every TCP connection of the captures, as the reassembly saw it.

use std::io::Write;

use mcpf_engine::Opened;
use mcpf_engine::report::{self, redact::Redactor};

use super::Exit;
use crate::cli::Format;
use crate::config;
use crate::terminal::{self, Terminal};

pub fn run(job: config::Flows) -> anyhow::Result<Exit> {
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
    let mut out = terminal::stdout(Redactor::new(true));
    match job.format {
        Format::Json => report::flows::write_json(&mut out, &rows, &run.reports, &run.stats)?,
        Format::Table => {
            report::flows::write_table(&mut out, &rows, &run.reports, &run.stats, job.width)?
        }
    }
    out.flush()?;
    Ok(if run.failed {
        Exit::InputUnreadable
    } else {
        Exit::Clean
    }
    .or_data_lost(&run.reports))
}
