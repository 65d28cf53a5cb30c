#![forbid(unsafe_code)]
//! Reporters: turn analysed data into tables, timelines, JSON and NDJSON. Reporters never
//! analyse; every string that came from a capture is sanitised before it reaches a terminal.

pub mod analyze;
mod doc;
pub mod document;
pub mod flows;
pub mod hints;
pub mod html;
pub mod http;
mod lacks;
pub mod markdown;
pub mod note;
pub mod redact;
pub mod sanitize;
pub mod saved;
mod table;
pub use table::wrap;
pub mod timeline;

use std::io::{self, Write};

use mcpf_model::InputReport;

/// The short name of an input in every format where several inputs' frames meet: `I1`, `I2`…
/// (1-based, as the command line gives them), shown once with its path in the header.
pub fn input_label(index: u32) -> String {
    format!("I{}", u64::from(index) + 1)
}

/// A vantage point as every text format names it: `127.0.0.1:18702 (observed as S1)`, with the
/// input's label when there are several.
pub fn seen_at_text(
    input: u32,
    server: &str,
    observation: Option<&str>,
    several_inputs: bool,
) -> String {
    let input = match several_inputs {
        true => format!("{} ", input_label(input)),
        false => String::new(),
    };
    match observation {
        Some(o) => format!("{input}{server} (observed as {o})"),
        None => format!("{input}{server}"),
    }
}

/// The one-line account of an input printed above every human report, then its warnings.
pub(crate) fn write_input_line(out: &mut dyn Write, input: &InputReport) -> io::Result<()> {
    let skipped: u64 = input.skipped.values().sum();
    let path = sanitize::terminal(&input.path);
    if let Some(e) = &input.error {
        return writeln!(out, "{path}: not read: {}", sanitize::terminal(e));
    }
    let unit = if input.format.is_capture() {
        "packets"
    } else {
        "records"
    };
    write!(
        out,
        "{path} ({}): {} {unit}, {}",
        input.format,
        input.packets,
        table::bytes(input.bytes)
    )?;
    if skipped > 0 {
        let reasons: Vec<String> = input
            .skipped
            .iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        write!(out, "; skipped {}", reasons.join(", "))?;
    }
    writeln!(out)?;
    if !input.read_as.is_empty() {
        let pairs: Vec<String> = input
            .read_as
            .iter()
            .map(|(k, v)| format!("{k} as {v}"))
            .collect();
        writeln!(
            out,
            "  keys read as (a guess from their names and values; check it): {}",
            sanitize::terminal(&pairs.join(", "))
        )?;
    }
    for w in &input.warnings {
        let w = note::sentence(w);
        writeln!(out, "  warning: {}", sanitize::terminal(&w))?;
    }
    Ok(())
}
