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
mod layout;
pub mod markdown;
mod ndjson;
pub mod note;
pub mod redact;
pub mod sanitize;
pub mod saved;
mod table;
mod tree;
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

/// One vantage point as the vantage line lists it.
pub struct VantageText<'a> {
    pub input: u32,
    pub server: &'a str,
    /// The key its observation had (the record's own for the first).
    pub observation: &'a str,
    pub streams: u64,
    pub events: u64,
}

/// Where a session was seen, when at more than one vantage point, as every text format says
/// it: `S2 seen at 2 vantage points: I1 127.0.0.1:8080 (this record: 18 streams, 67 events), I2
/// 127.0.0.1:9000 (as S1: 18 streams, 84 events)`.
pub fn vantage_line(
    label: &str,
    points: &[VantageText<'_>],
    several_inputs: bool,
) -> Option<String> {
    if points.len() < 2 {
        return None;
    }
    let each: Vec<String> = points
        .iter()
        .map(|v| {
            let place = seen_at_text(v.input, v.server, None, several_inputs);
            let whose = match v.observation == label {
                true => "this record".to_string(),
                false => format!("as {}", v.observation),
            };
            format!(
                "{place} ({whose}: {} streams, {} events)",
                v.streams, v.events
            )
        })
        .collect();
    Some(format!(
        "{label} seen at {} vantage points: {}",
        each.len(),
        each.join(", ")
    ))
}

/// The account of an input printed above every human report after `first` (its label, when
/// there are several), then its warnings, each wrapped at `width` columns (a line of its own,
/// the lines after it indented under it).
pub(crate) fn write_input_line(
    out: &mut dyn Write,
    input: &InputReport,
    first: &str,
    width: usize,
) -> io::Result<()> {
    let path = sanitize::terminal(&input.path);
    if let Some(e) = &input.error {
        return writeln!(out, "{first}{path}: not read: {}", sanitize::terminal(e));
    }
    let mut line = format!(
        "{path} ({}): {} {}, {}",
        input.format,
        input.packets,
        if input.format.is_capture() {
            "packets"
        } else {
            "records"
        },
        table::bytes(input.bytes)
    );
    if input.skipped.values().any(|&n| n > 0) {
        let reasons: Vec<String> = input
            .skipped
            .iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        line.push_str(&format!("; skipped {}", reasons.join(", ")));
    }
    writeln!(out, "{}", table::wrap(&line, width, first, "    "))?;
    if !input.read_as.is_empty() {
        let pairs: Vec<String> = input
            .read_as
            .iter()
            .map(|(k, v)| format!("{k} as {v}"))
            .collect();
        let text = format!(
            "keys read as (a guess from their names and values; check it): {}",
            sanitize::terminal(&pairs.join(", "))
        );
        writeln!(out, "{}", table::wrap(&text, width, "  ", "    "))?;
    }
    for w in &input.warnings {
        let sentence = note::sentence(w);
        let w = sanitize::terminal(&sentence);
        writeln!(out, "{}", table::wrap(&w, width, "  warning: ", "    "))?;
    }
    Ok(())
}
