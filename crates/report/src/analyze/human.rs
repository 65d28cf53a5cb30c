//! The terminal report of `analyze`: what was read, the sessions table, what could not be
//! determined, the findings as cause → consequence trees, each session's timeline, what to do,
//! and the exit code the findings call for. Every string that came from a capture goes through
//! `sanitize` (and the redactor) before it is printed.

use std::io::{self, Write};

use mcpf_detect::{Severity, finding_id};
use mcpf_mcp::model::short_id;
use mcpf_model::{Mark, endpoint};

use super::{Report, Selection, SessionHeader};
use crate::redact::Redactor;
use crate::sanitize::terminal;
use crate::table::{bytes, count, new_table};
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

/// The terminal report, section by section.
pub fn write_human(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    r: &Redactor,
    style: Style,
    fail_on: Severity,
) -> io::Result<()> {
    write_header(out, rep)?;
    if rep.session_count() == 0 {
        return writeln!(
            out,
            "\nno MCP session found\n\nexit 2: no MCP session in the inputs (why, and a hint, on standard error)"
        );
    }
    let all: Vec<&SessionHeader> = rep.selected_headers(sel).collect();
    if all.is_empty() {
        return writeln!(
            out,
            "\nno session matches the selection (--session, --since, --until)"
        );
    }
    let shown = rep.shown_findings(sel);
    let sessions = listed(rep, sel, &all, &shown);
    write_sessions(out, &sessions, all.len(), r, style)?;
    write_rollups(out, rep, sel, &shown, r)?;
    for s in &sessions {
        write_not_determinable(out, s)?;
        write_findings(out, rep, s, &shown, r, style)?;
    }
    for s in &sessions {
        write_timeline(out, rep, s, r, style)?;
    }
    write_what_to_do(out, rep, &shown, style)?;
    write_exit_line(out, rep, sel, fail_on)
}

/// The revision a session is judged by, and "(assumed)" when nothing in the input named it.
fn revision_cell(rev: &mcpf_mcp::revision::Revision, r: &Redactor) -> String {
    let date = r.cell(&rev.date, 12);
    match rev.from {
        mcpf_mcp::revision::RevisionFrom::Default => format!("{date} (assumed)"),
        _ => date,
    }
}

/// Sessions and findings per input and per server, when there are several of either.
fn write_rollups(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    shown: &[usize],
    r: &Redactor,
) -> io::Result<()> {
    let (by_input, by_server) = super::rollup::rollups(rep, sel, shown);
    for (title, rows) in [("BY INPUT", by_input), ("BY SERVER", by_server)] {
        if rows.len() < 2 {
            continue;
        }
        writeln!(out, "\n{title}")?;
        let width = rows
            .iter()
            .map(|x| x.name.chars().count())
            .max()
            .unwrap_or(0)
            .min(60);
        for row in rows {
            let redacted = r.text(&row.name);
            let name = crate::sanitize::terminal(&redacted);
            let sessions = plural(row.sessions, "session");
            writeln!(
                out,
                " {name:<width$}  {sessions:>12}  {}",
                findings_text(rep, &row.findings)
            )?;
        }
    }
    Ok(())
}

/// "2 findings: 1 critical, 1 high", or "no findings".
fn findings_text(rep: &Report, findings: &[usize]) -> String {
    if findings.is_empty() {
        return "no findings".into();
    }
    let by: Vec<String> = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ]
    .into_iter()
    .filter_map(|sev| {
        let n = findings
            .iter()
            .filter(|&&p| rep.findings[p].severity == sev)
            .count();
        (n > 0).then(|| format!("{n} {}", sev.name()))
    })
    .collect();
    format!("{}: {}", plural(findings.len(), "finding"), by.join(", "))
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The tool, each input, what was read (connections, for captures, and exchanges), and the
/// notes on what an input format could not support.
fn write_header(out: &mut dyn Write, rep: &Report) -> io::Result<()> {
    writeln!(out, "{} {}", rep.tool.name, rep.tool.version)?;
    for input in &rep.inputs {
        crate::write_input_line(out, input)?;
    }
    let lost = if rep.connections_with_gaps > 0 && rep.snaplen_bytes == rep.gap_bytes {
        format!(
            "{} with bytes cut by the snap length ({}), none lost",
            rep.connections_with_gaps,
            bytes(rep.gap_bytes)
        )
    } else if rep.connections_with_gaps > 0 && rep.snaplen_bytes > 0 {
        format!(
            "{} lost data ({}, of it {} cut by the snap length)",
            rep.connections_with_gaps,
            bytes(rep.gap_bytes),
            bytes(rep.snaplen_bytes)
        )
    } else if rep.connections_with_gaps > 0 {
        format!(
            "{} lost data ({})",
            rep.connections_with_gaps,
            bytes(rep.gap_bytes)
        )
    } else {
        "none lost data".to_string()
    };
    let mut exchanges = format!(
        "{}, {} speaking MCP",
        count(rep.mcp.exchanges_total, "HTTP exchange", "HTTP exchanges"),
        rep.mcp.exchanges_mcp
    );
    let not_mcp = rep.mcp.jsonrpc_not_mcp + rep.mcp.event_streams_not_mcp;
    if not_mcp > 0 {
        exchanges.push_str(&format!(
            " ({} JSON-RPC and {} not MCP)",
            rep.mcp.jsonrpc_not_mcp,
            count(
                rep.mcp.event_streams_not_mcp,
                "event stream",
                "event streams"
            )
        ));
    }
    if rep.mcp.requests_cut > 0 {
        exchanges.push_str(&format!(
            " ({} MCP but cut before naming a session)",
            rep.mcp.requests_cut
        ));
    }
    // Logs and HAR files have no TCP: the line speaks of connections only for captures.
    let captures = rep
        .inputs
        .iter()
        .any(|i| i.error.is_none() && i.format.starts_with("pcap"));
    if captures {
        writeln!(
            out,
            "{} ({lost}); {exchanges}",
            count(rep.connections, "TCP connection", "TCP connections")
        )?;
    } else {
        writeln!(out, "{exchanges}")?;
    }
    for l in &rep.limits {
        writeln!(out, "  note: {}", terminal(l))?;
    }
    for c in &rep.clock_offsets {
        writeln!(out, "  clock: {}", terminal(&clock_line(rep, c)))?;
    }
    if rep.mcp.unattributed > 0 {
        writeln!(
            out,
            "  note: {} that nothing on the wire ties to a session (no session ID, no shared connection, no resume naming its events): {}",
            count(rep.mcp.unattributed, "MCP exchange", "MCP exchanges"),
            rep.mcp.unattributed_examples.join(", ")
        )?;
    }
    Ok(())
}

/// Sessions the table lists whatever they hold: small captures show every session.
const LISTED_ANYWAY: usize = 20;

/// The sessions the terminal report covers. A large capture has thousands of healthy sessions:
/// the table lists those with findings, those asked for, and the first few; the JSON report
/// lists them all.
fn listed<'a>(
    rep: &Report,
    sel: &Selection,
    all: &[&'a SessionHeader],
    shown: &[usize],
) -> Vec<&'a SessionHeader> {
    let with_findings: std::collections::BTreeSet<usize> =
        shown.iter().map(|&p| rep.findings[p].session).collect();
    all.iter()
        .enumerate()
        .filter(|(i, s)| {
            *i < LISTED_ANYWAY || with_findings.contains(&s.head.idx) || sel.sessions.is_some()
        })
        .map(|(_, s)| *s)
        .collect()
}

/// The sessions table, how many sessions it leaves out of the `total` selected, and the
/// sources merged into each session listed.
fn write_sessions(
    out: &mut dyn Write,
    sessions: &[&SessionHeader],
    total: usize,
    r: &Redactor,
    style: Style,
) -> io::Result<()> {
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
    for s in sessions {
        table.add_row(session_row(s, r));
    }
    writeln!(out, "{table}")?;
    if total > sessions.len() {
        writeln!(
            out,
            " … and {} more sessions without findings (--format json lists every session; --session S9 shows one)",
            total - sessions.len()
        )?;
    }
    for s in sessions {
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
    Ok(())
}

/// A session's row of the sessions table.
fn session_row(s: &SessionHeader, r: &Redactor) -> Vec<String> {
    let id = match &s.head.session_id {
        Some(id) => terminal(&short_id(id)).into_owned(),
        None if s.head.stateless => "(stateless)".into(),
        None => "—".into(),
    };
    let mut server = format!("{} {}", endpoint(s.head.server), r.cell(&s.head.path, 20));
    if let Some(c) = s.head.continues {
        server.push_str(&format!(
            " (continues {})",
            mcpf_mcp::model::session_label(c)
        ));
    } else if !s.same_session_as.is_empty() {
        server.push_str(&format!(" (= {})", s.same_session_as.join(", ")));
    }
    vec![
        s.label(),
        id,
        server,
        match s.head.transport {
            mcpf_mcp::model::Transport::StreamableHttp => "streamable".into(),
            mcpf_mcp::model::Transport::LegacySse => "legacy SSE".into(),
        },
        revision_cell(&s.head.revision, r),
        s.head
            .client_info
            .as_deref()
            .map(|c| r.cell(c, 24))
            .unwrap_or_default(),
        s.head
            .fell_back
            .map(|m| m.time.clock_millis())
            .unwrap_or_else(|| "no".into()),
        s.head.event_id_scheme.name().into(),
        match s.verdict.verdict {
            "unsafe" => "UNSAFE".into(),
            "not_attempted" => "not tried".into(),
            other => other.into(),
        },
    ]
}

/// What the inputs could not tell about a session, and why.
fn write_not_determinable(out: &mut dyn Write, s: &SessionHeader) -> io::Result<()> {
    if s.head.not_determinable.is_empty() {
        return Ok(());
    }
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
    )
}

/// A session's shown findings as cause → consequence trees, root cause first.
fn write_findings(
    out: &mut dyn Write,
    rep: &Report,
    s: &SessionHeader,
    shown: &[usize],
    r: &Redactor,
    style: Style,
) -> io::Result<()> {
    let mine: Vec<usize> = shown
        .iter()
        .copied()
        .filter(|&p| rep.findings[p].session == s.head.idx)
        .collect();
    if mine.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\n{}  root cause first, consequences indented",
        style.heading(&format!("FINDINGS ({})", s.label()))
    )?;
    let id_width = mine.iter().map(|&p| finding_id(p).len()).max().unwrap_or(2);
    for (p, depth) in cause_trees(rep, &mine) {
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
    }
    Ok(())
}

/// The findings at positions `mine` in print order, each with its depth: a finding is printed
/// under its first shown cause, and roots and the consequences of each keep their order.
fn cause_trees(rep: &Report, mine: &[usize]) -> Vec<(usize, usize)> {
    let parent = |p: usize| {
        rep.findings[p]
            .caused_by
            .iter()
            .copied()
            .find(|c| mine.contains(c))
    };
    let mut order = Vec::with_capacity(mine.len());
    let mut stack: Vec<(usize, usize)> = mine
        .iter()
        .rev()
        .copied()
        .filter(|&p| parent(p).is_none())
        .map(|p| (p, 0))
        .collect();
    while let Some((p, depth)) = stack.pop() {
        order.push((p, depth));
        let children = mine.iter().rev().copied().filter(|&c| parent(c) == Some(p));
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    order
}

/// A session's timeline, and its resumption verdict with the reason.
fn write_timeline(
    out: &mut dyn Write,
    rep: &Report,
    s: &SessionHeader,
    r: &Redactor,
    style: Style,
) -> io::Result<()> {
    let entries: &[Entry] = rep
        .timelines
        .get(s.head.idx)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if entries.is_empty() {
        return Ok(());
    }
    // Times are UTC, on this date: `--since`/`--until` take them as printed.
    writeln!(
        out,
        "\n{}  {} UTC",
        style.heading(&format!("TIMELINE ({})", s.label())),
        s.head.start.time.date()
    )?;
    for e in entries {
        let text = terminal(&r.text(&e.text)).into_owned();
        writeln!(
            out,
            " {}  {:<6} {}",
            e.time.time.clock_millis(),
            marker(e),
            text
        )?;
    }
    let v = &s.verdict;
    writeln!(
        out,
        " resumption: {}{}",
        v.verdict,
        v.reason
            .as_deref()
            .map(|r| format!(" — {}", terminal(r)))
            .unwrap_or_default()
    )
}

/// The marker column of a timeline row: the direction, or the findings placed there.
fn marker(e: &Entry) -> String {
    if e.kind == "finding" {
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
    }
}

/// What to do: the fix for the root cause of the most severe chain.
fn write_what_to_do(
    out: &mut dyn Write,
    rep: &Report,
    shown: &[usize],
    style: Style,
) -> io::Result<()> {
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
    Ok(())
}

/// The exit code the findings call for, and why.
fn write_exit_line(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    fail_on: Severity,
) -> io::Result<()> {
    let failing = rep
        .counted_findings(sel)
        .filter(|f| f.severity.at_least(fail_on))
        .count();
    let unread = rep.inputs.iter().filter(|i| i.error.is_some()).count();
    let unmatched = rep.unmatched_session_keys(sel);
    writeln!(
        out,
        "\n{}",
        if !unmatched.is_empty() {
            format!(
                "exit 2: --session {} names no session of these inputs",
                unmatched.join(", ")
            )
        } else if unread > 0 {
            format!(
                "exit 2: {} could not be read (the report is of the others: {} at or above --fail-on {})",
                count(unread as u64, "input", "inputs"),
                count(failing as u64, "finding", "findings"),
                fail_on.name()
            )
        } else if failing > 0 {
            format!(
                "exit 1: {} at or above --fail-on {}",
                count(failing as u64, "finding", "findings"),
                fail_on.name()
            )
        } else {
            format!(
                "exit 0: no finding at or above --fail-on {}",
                fail_on.name()
            )
        }
    )
}

/// `samples/b.pcap runs 0.000037 s ahead of samples/a.pcap (between …, from 18 exchanges of 1
/// session)`: how the hop comparison related two inputs' clocks.
fn clock_line(rep: &Report, c: &mcpf_detect::ClockOffset) -> String {
    let name = |i: u32| {
        rep.inputs
            .get(i as usize)
            .map_or_else(|| format!("input {i}"), |x| x.path.clone())
    };
    let (far, near) = (name(c.far_input), name(c.near_input));
    let bound = |x: Option<f64>| x.map_or("?".to_string(), |v| format!("{v:+.6} s"));
    let between = format!("between {} and {}", bound(c.min), bound(c.max));
    let of = format!(
        "from {} exchanges of {} session{}",
        c.from_exchanges,
        c.from_sessions,
        if c.from_sessions == 1 { "" } else { "s" }
    );
    match c.estimate {
        Some(e) => {
            format!("{far} (nearer the server) reads {e:+.6} s against {near} ({between}, {of})")
        }
        None if c.min.is_some() && c.max.is_some() => format!(
            "{far} (nearer the server) against {near}: no single offset fits ({between}, {of}): the clocks drifted, or the legs are not of one path"
        ),
        None => format!(
            "{far} (nearer the server) against {near}: bounded on one side only ({between}, {of})"
        ),
    }
}
