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
    // The saved report is this command's input: one it cannot read exits 4, as an input of
    // `analyze` does.
    let unreadable = |e: String| {
        eprintln!("mcp-forensics: {}", terminal::diagnostic(&e));
        Ok(Exit::InputUnreadable)
    };
    let source: Box<dyn io::Read> = if job.file == "-" {
        Box::new(io::stdin())
    } else {
        match std::fs::File::open(&job.file) {
            Ok(f) => Box::new(f),
            Err(e) => return unreadable(format!("{}: cannot open: {e}", job.file)),
        }
    };
    let doc = match saved::read_saved(source) {
        Ok(doc) => doc,
        Err(e) => return unreadable(format!("{}: {e}", job.file)),
    };
    let mut out = terminal::stdout(Redactor::new(true));
    match job.format {
        SavedFormat::Table => {
            let style = report::analyze::Style {
                color: job.color,
                width: job.width,
            };
            if job.pager {
                let mut paged = crate::pager::Paged::new();
                let mut out = report::redact::Redacting::new(&mut paged, Redactor::new(true));
                saved::write_saved_table(&mut out, &doc, style)?;
                out.flush()?;
                drop(out);
                paged.finish()?;
                return Ok(Exit::Clean);
            }
            saved::write_saved_table(&mut out, &doc, style)?
        }
        SavedFormat::Markdown => report::markdown::write_markdown(&mut out, &doc)?,
        SavedFormat::Html => report::html::write_html(&mut out, &doc)?,
    }
    out.flush()?;
    Ok(Exit::Clean)
}
