//! `CALL PROFILE`, the terminal report's section of `--profile`: per server and per tool or
//! method, the calls, how they failed, those with no answer in the inputs, and the answered
//! ones' latency.

use std::io::{self, Write};

use mcpf_mcp::profile::{CallKey, Calls};

use super::Report;
use super::human::Style;
use crate::redact::Redactor;
use crate::sanitize::terminal;
use crate::table::{content_widths, drawn_width, new_table, wrap};

const COLUMNS: [&str; 9] = [
    "server",
    "method",
    "calls",
    "errors",
    "no answer",
    "p50",
    "p95",
    "p99",
    "max",
];

/// The section, when asked for: nothing when no call was seen. A table when every column fits
/// the width (but the server's, when there is one and the title names it), else a line per
/// row wrapped: a narrow terminal loses no number and no tool's name.
pub(crate) fn write_profile(
    out: &mut dyn Write,
    rep: &Report,
    r: &Redactor,
    style: Style,
) -> io::Result<()> {
    let rows: Vec<(&CallKey, &Calls)> = rep.profile.rows().collect();
    let text = |t: &str| terminal(&r.text(t)).into_owned();
    let mut servers: Vec<&str> = rows.iter().map(|(k, _)| k.server.as_str()).collect();
    servers.dedup();
    let title = style.heading("CALL PROFILE");
    match servers.as_slice() {
        [] => return writeln!(out, "\n{title}\n no request seen"),
        [one] => writeln!(out, "\n{title}  {}", text(one))?,
        _ => writeln!(out, "\n{title}")?,
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(key, calls)| row(key, calls, &text))
        .collect();
    let kept: Vec<usize> = (0..COLUMNS.len())
        .filter(|&c| c != 0 || servers.len() > 1)
        .collect();
    let widths = content_widths(&COLUMNS, &cells);
    if drawn_width(kept.iter().map(|&c| widths[c])) <= style.width {
        let header: Vec<&str> = kept.iter().map(|&c| COLUMNS[c]).collect();
        let mut table = new_table(&header);
        for cells in &cells {
            table.add_row(kept.iter().map(|&c| cells[c].clone()).collect::<Vec<_>>());
        }
        writeln!(out, "{table}")?;
    } else {
        for cells in &cells {
            let line = kept
                .iter()
                .skip(1)
                .map(|&c| format!("{} {}", COLUMNS[c], cells[c]))
                .collect::<Vec<_>>()
                .join(", ");
            writeln!(
                out,
                "{}",
                wrap(
                    &format!("{}: {line}", cells[kept[0]]),
                    style.width,
                    " ",
                    "   "
                )
            )?;
        }
    }
    let mut notes = vec![
        "latency from the request to its first answer; no answer: none in the inputs (still pending at their end, or lost), a count, not a finding".to_string(),
    ];
    if rep.profile.folded_calls > 0 {
        notes.push(format!(
            "{} calls past the first {} rows are counted as {} {}",
            rep.profile.folded_calls,
            mcpf_mcp::profile::MAX_KEYS,
            mcpf_mcp::profile::OTHER_SERVERS,
            mcpf_mcp::profile::OTHER_METHODS
        ));
    }
    for note in notes {
        writeln!(
            out,
            "{}",
            wrap(&format!("({note})"), style.width, " ", "  ")
        )?;
    }
    Ok(())
}

fn row(key: &CallKey, calls: &Calls, text: &dyn Fn(&str) -> String) -> Vec<String> {
    let latency = calls.latency();
    let at = |pick: fn(&mcpf_mcp::profile::Percentiles) -> u64| {
        latency.as_ref().map_or("—".to_string(), |p| {
            let approx = if p.approximate { "≈" } else { "" };
            format!("{approx}{}", duration(pick(p)))
        })
    };
    vec![
        text(&key.server),
        text(&key.method),
        calls.calls.to_string(),
        errors(calls),
        calls.no_answer_seen.to_string(),
        at(|p| p.p50),
        at(|p| p.p95),
        at(|p| p.p99),
        latency.map_or("—".into(), |p| duration(p.max)),
    ]
}

/// `3: -32603×2 isError×1 HTTP 502×1`, or `0`.
fn errors(calls: &Calls) -> String {
    let total = calls.errors();
    if total == 0 {
        return "0".into();
    }
    let mut parts: Vec<String> = calls
        .jsonrpc_errors
        .iter()
        .map(|(code, n)| match code {
            Some(c) => format!("{c}×{n}"),
            None => format!("error×{n}"),
        })
        .collect();
    if calls.tool_errors > 0 {
        parts.push(format!("isError×{}", calls.tool_errors));
    }
    parts.extend(
        calls
            .http_errors
            .iter()
            .map(|(status, n)| format!("HTTP {status}×{n}")),
    );
    format!("{total}: {}", parts.join(" "))
}

/// `0.9 ms`, `412 ms`, `12.6 s`.
fn duration(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_their_scale() {
        assert_eq!(duration(950_000), "0.9 ms");
        assert_eq!(duration(412_300_000), "412 ms");
        assert_eq!(duration(12_600_000_000), "12.6 s");
    }
}
