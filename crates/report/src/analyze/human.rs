//! The terminal report of `analyze`: what was read, the sessions table, what could not be
//! determined, the findings as cause → consequence trees, each session's timeline, what to do,
//! and the exit code the findings call for. Every string that came from a capture goes through
//! `sanitize` (and the redactor) before it is printed.

use std::io::{self, Write};

use mcpf_detect::{Severity, finding_id};
use mcpf_model::{Mark, endpoint};

use super::{Report, Selection, SessionHeader};
use crate::redact::Redactor;
use crate::sanitize::{terminal, terminal_truncated};
use crate::table::{bytes, new_table};
use crate::timeline::Entry;

/// Terminal styling: colour only when asked for and on a terminal.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
}

impl Style {
    fn severity(&self, sev: Severity) -> String {
        let name = sev.name().to_uppercase();
        if !self.color {
            return name;
        }
        let code = match sev {
            Severity::Critical => "1;97;41",
            Severity::High => "1;31",
            Severity::Medium => "33",
            Severity::Low => "36",
            Severity::Info => "2",
        };
        format!("\x1b[{code}m{name}\x1b[0m")
    }

    fn heading(&self, text: &str) -> String {
        if self.color {
            format!("\x1b[1m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

fn short_id(id: &str) -> String {
    if id.chars().count() <= 14 {
        return id.to_string();
    }
    let head: String = id.chars().take(4).collect();
    let tail: String = id
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{head}…{tail}")
}

fn frames_text(frames: &[Mark]) -> String {
    let mut nums: Vec<u64> = frames
        .iter()
        .map(|m| m.frame.frame)
        .filter(|&n| n > 0)
        .collect();
    nums.sort_unstable();
    nums.dedup();
    match nums.as_slice() {
        [] => String::new(),
        [one] => format!("frame {one}"),
        [first, .., last] if nums.len() > 4 => format!("frames {first}…{last}"),
        many => format!(
            "frames {}",
            many.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub fn write_human(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    r: &Redactor,
    style: Style,
    fail_on: Severity,
) -> io::Result<()> {
    writeln!(out, "{} {}", rep.tool.name, rep.tool.version)?;
    for input in &rep.inputs {
        crate::write_input_line(out, input)?;
    }
    let lost = if rep.connections_with_gaps > 0 {
        format!(
            "{} lost data ({})",
            rep.connections_with_gaps,
            bytes(rep.gap_bytes)
        )
    } else {
        "none lost data".to_string()
    };
    let exchanges = format!(
        "{}, {} speaking MCP",
        crate::table::count(rep.mcp.exchanges_total, "HTTP exchange", "HTTP exchanges"),
        rep.mcp.exchanges_mcp
    );
    // Logs and HAR files have no TCP: the line speaks of connections only for captures.
    let captures = rep
        .inputs
        .iter()
        .any(|i| i.error.is_none() && i.format.starts_with("pcap"));
    if captures {
        writeln!(
            out,
            "{} ({lost}); {exchanges}",
            crate::table::count(rep.connections, "TCP connection", "TCP connections")
        )?;
    } else {
        writeln!(out, "{exchanges}")?;
    }
    for l in &rep.limits {
        writeln!(out, "  note: {}", terminal(l))?;
    }
    let shown = rep.shown_findings(sel);
    let all: Vec<&SessionHeader> = rep
        .headers()
        .filter(|s| rep.session_selected(s, sel))
        .collect();
    if rep.session_count() == 0 {
        writeln!(
            out,
            "\nno MCP session found\n\nexit 2: no MCP session in the inputs (why, and a hint, on standard error)"
        )?;
        return Ok(());
    }
    if all.is_empty() {
        writeln!(
            out,
            "\nno session matches the selection (--session, --since, --until)"
        )?;
        return Ok(());
    }
    // A large capture has thousands of healthy sessions: the table lists those with findings,
    // those asked for, and the first few; the JSON report lists them all.
    let with_findings: std::collections::BTreeSet<usize> =
        shown.iter().map(|&p| rep.findings[p].session).collect();
    let listed: Vec<&SessionHeader> = all
        .iter()
        .enumerate()
        .filter(|(i, s)| *i < 20 || with_findings.contains(&s.head.idx) || sel.sessions.is_some())
        .map(|(_, s)| *s)
        .collect();
    let sessions = listed;
    writeln!(out, "\n{}", style.heading("SESSIONS"))?;
    let mut table = new_table(&[
        "S",
        "Mcp-Session-Id",
        "server",
        "transport",
        "revision",
        "client",
        "fell back",
        "IDs",
        "resumption",
    ]);
    for s in &sessions {
        let v = &s.verdict;
        let id = match &s.head.session_id {
            Some(id) => terminal(&short_id(id)).into_owned(),
            None if s.head.stateless => "(stateless)".into(),
            None => "—".into(),
        };
        let mut server = format!(
            "{} {}",
            endpoint(s.head.server),
            terminal_truncated(&s.head.path, 20)
        );
        if !s.same_session_as.is_empty() {
            server.push_str(&format!(" (= {})", s.same_session_as.join(", ")));
        }
        table.add_row(vec![
            s.label(),
            id,
            server,
            match s.head.transport {
                mcpf_mcp::model::Transport::StreamableHttp => "streamable".into(),
                mcpf_mcp::model::Transport::LegacySse => "legacy SSE".into(),
            },
            s.head
                .protocol_version
                .as_deref()
                .map(|p| terminal_truncated(p, 12))
                .unwrap_or_else(|| "?".into()),
            s.head
                .client_info
                .as_deref()
                .map(|c| terminal_truncated(&r.text(c), 24))
                .unwrap_or_default(),
            s.head
                .fell_back
                .map(|m| m.time.clock_millis())
                .unwrap_or_else(|| "no".into()),
            s.head.event_id_scheme.name().into(),
            match v.verdict {
                "unsafe" => "UNSAFE".into(),
                "not_attempted" => "not tried".into(),
                other => other.into(),
            },
        ]);
    }
    writeln!(out, "{table}")?;
    if all.len() > sessions.len() {
        writeln!(
            out,
            " … and {} more sessions without findings (--format json lists every session; --session S9 shows one)",
            all.len() - sessions.len()
        )?;
    }
    for s in &sessions {
        for (_, path, matched, added, offset) in &s.merged {
            writeln!(
                out,
                " {}: {} matched {} exchanges of the capture (clock offset {:+.3} s applied), added {}",
                s.label(),
                terminal(path),
                matched,
                offset,
                added
            )?;
        }
    }

    for s in &sessions {
        let mine: Vec<usize> = shown
            .iter()
            .copied()
            .filter(|&p| rep.findings[p].session == s.head.idx)
            .collect();
        if !s.head.not_determinable.is_empty() {
            let kinds: Vec<&str> = s.head.not_determinable.iter().map(|(k, _)| *k).collect();
            let mut reasons: Vec<&str> = s
                .head
                .not_determinable
                .iter()
                .map(|(_, r)| r.as_str())
                .collect();
            reasons.dedup();
            writeln!(
                out,
                "\n{} not determinable from these inputs: {} ({})",
                s.label(),
                kinds.join(", "),
                reasons.join("; ")
            )?;
        }
        if mine.is_empty() {
            continue;
        }
        writeln!(
            out,
            "\n{}  root cause first, consequences indented",
            style.heading(&format!("FINDINGS ({})", s.label()))
        )?;
        // Cause → consequence trees: a finding is printed under its first shown cause.
        let parent = |p: usize| {
            rep.findings[p]
                .caused_by
                .iter()
                .copied()
                .find(|c| mine.contains(c))
        };
        let roots: Vec<usize> = mine
            .iter()
            .copied()
            .filter(|&p| parent(p).is_none())
            .collect();
        let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&p| (p, 0)).collect();
        let id_width = mine.iter().map(|&p| finding_id(p).len()).max().unwrap_or(2);
        while let Some((p, depth)) = stack.pop() {
            let f = &rep.findings[p];
            let indent = "  ".repeat(depth);
            writeln!(
                out,
                " {indent}{:<id_width$} {:<8} {}  {}  {}",
                finding_id(p),
                style.severity(f.severity),
                f.kind,
                f.time.time.clock_millis(),
                frames_text(&f.frames)
            )?;
            writeln!(out, " {indent}     {}", terminal(&r.text(&f.summary)))?;
            if let Some(note) = &f.confidence_note {
                writeln!(out, " {indent}     confidence reduced: {}", terminal(note))?;
            }
            let children: Vec<usize> = mine
                .iter()
                .copied()
                .filter(|&c| parent(c) == Some(p))
                .collect();
            for c in children.into_iter().rev() {
                stack.push((c, depth + 1));
            }
        }
    }

    for s in &sessions {
        let entries: &[Entry] = rep
            .timelines
            .get(s.head.idx)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if entries.is_empty() {
            continue;
        }
        let v = &s.verdict;
        writeln!(
            out,
            "\n{}  {}",
            style.heading(&format!("TIMELINE ({})", s.label())),
            s.head.start.time.date()
        )?;
        for e in entries {
            let text = terminal(&r.text(&e.text)).into_owned();
            let marker = if e.kind == "finding" {
                format!(
                    "▲ {}",
                    e.findings
                        .iter()
                        .map(|&p| finding_id(p))
                        .collect::<Vec<_>>()
                        .join(",")
                )
            } else {
                e.arrow.to_string()
            };
            writeln!(
                out,
                " {}  {:<6} {}",
                e.time.time.clock_millis(),
                marker,
                text
            )?;
        }
        writeln!(
            out,
            " resumption: {}{}",
            v.verdict,
            v.reason
                .as_deref()
                .map(|r| format!(" — {}", terminal(r)))
                .unwrap_or_default()
        )?;
    }

    // What to do: the root cause of the most severe chain.
    let worst = shown
        .iter()
        .copied()
        .filter(|&p| rep.findings[p].severity.at_least(Severity::Medium))
        .min_by_key(|&p| (rep.findings[p].severity, p));
    if let Some(p) = worst {
        let f = &rep.findings[p];
        writeln!(
            out,
            "\n{}  (mcp-forensics explain {})",
            style.heading("WHAT TO DO"),
            f.kind
        )?;
        writeln!(out, " {}", f.kind.info().fix)?;
    }
    let failing = rep
        .counted_findings(sel)
        .filter(|f| f.severity.at_least(fail_on))
        .count();
    writeln!(
        out,
        "\n{}",
        if failing > 0 {
            format!(
                "exit 1: {} at or above --fail-on {}",
                crate::table::count(failing as u64, "finding", "findings"),
                fail_on.name()
            )
        } else {
            format!(
                "exit 0: no finding at or above --fail-on {}",
                fail_on.name()
            )
        }
    )?;
    Ok(())
}
