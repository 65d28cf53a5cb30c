//! `report FILE`: a report saved as JSON or NDJSON, rendered again without the capture.

use std::io::{self, Write};

use mcpf_engine::report::{self, redact::Redactor, saved};

use super::Exit;
use crate::cli::SavedFormat;
use crate::config;
use crate::terminal;

/// `report FILE`: a saved report rendered again. Its strings were redacted when it was written,
/// unless `--show-secrets` was given then: they are redacted again as the file is read
/// (`saved::read_saved`), and printed sanitized.
pub fn run(job: config::Saved) -> anyhow::Result<Exit> {
    let source: Box<dyn io::Read> = if job.file == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(
            std::fs::File::open(&job.file)
                .map_err(|e| anyhow::anyhow!("{}: cannot open: {e}", job.file))?,
        )
    };
    let doc = saved::read_saved(source).map_err(|e| anyhow::anyhow!("{}: {e}", job.file))?;
    let mut out = terminal::stdout(Redactor::new(true));
    match job.format {
        SavedFormat::Table => {
            let style = report::analyze::Style {
                color: job.color,
                width: job.width,
            };
            saved::write_saved_table(&mut out, &doc, style)?
        }
        SavedFormat::Markdown => report::markdown::write_markdown(&mut out, &doc)?,
        SavedFormat::Html => report::html::write_html(&mut out, &doc)?,
    }
    out.flush()?;
    Ok(Exit::Clean)
}
