//! `extract`: the per-input stages run and their exchange records written, for `analyze` on
//! another machine or in another process (docs/records.md).

use std::io::BufWriter;

use mcpf_engine::Engine;

use super::Exit;
use crate::config;
use crate::terminal::{self, Terminal};

pub fn run(job: config::Extract) -> anyhow::Result<Exit> {
    let file = std::fs::File::create(&job.output)
        .map_err(|e| anyhow::anyhow!("--output {}: cannot create it: {e}", job.output.display()))?;
    let mut observer = Terminal::new(job.progress);
    let Some(inputs) = terminal::open(&job.inputs, &job.notes, &mut observer) else {
        // Nothing to extract from: no file is left behind to be mistaken for records.
        let _ = std::fs::remove_file(&job.output);
        return Ok(Exit::InputUnreadable);
    };
    let engine = Engine::new(job.engine.clone());
    let out = BufWriter::with_capacity(1 << 20, file);
    let (_, extracted) = engine
        .extract(inputs, out, !job.redact, &mut observer)
        .map_err(|e| anyhow::anyhow!("{}: {e}", job.output.display()))?;
    eprintln!(
        "mcp-forensics: wrote {} HTTP record{} to {}",
        extracted.events,
        if extracted.events == 1 { "" } else { "s" },
        terminal::diagnostic(&job.output.display().to_string())
    );
    terminal::print_warnings(&extracted.reports);
    Ok(if extracted.failed {
        Exit::InputUnreadable
    } else {
        Exit::Clean
    }
    .or_data_lost(&extracted.reports))
}
