//! The terminal report of `analyze`: what was read, a verdict line per session with findings,
//! the sessions table, what could not be determined, the findings most severe first (each naming
//! its cause), each session's timeline, what to do, and the exit code the findings call for.
//! Everything fits the output's width: tables leave columns out, text wraps between words.
//! Every string that came from a capture goes through `sanitize` (and the redactor) before it is
//! printed.

use std::io::{self, Write};

use mcpf_detect::{Severity, finding_id};
use mcpf_mcp::model::short_id;
use mcpf_model::{RecordUnit, endpoint};

use super::{Report, Selection, SessionHeader};
use crate::redact::Redactor;
use crate::sanitize::terminal;
use crate::table::{bytes, count, fitted_table, wrap};
use crate::timeline::Entry;

/// Terminal styling: colour only when asked for and on a terminal, and the width to fit.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
    /// Columns: the terminal's, `COLUMNS`, or 100 when the output is not a terminal.
    pub width: usize,
}

/// The width reports fit when nothing says otherwise.
pub const DEFAULT_WIDTH: usize = 100;

impl Style {
    pub(crate) fn severity(&self, sev: Severity) -> String {
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

    pub(crate) fn heading(&self, text: &str) -> String {
        if self.color {
            format!("\x1b[1m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// `frame 10`, `frames 10, 15, 18`, `frames 10…158` (more than four): the frame numbers, in
/// order, once each, 0 (unknown) left out.
pub(crate) fn frames_text(
    frames: impl IntoIterator<Item = (u32, u64)>,
    labelled: bool,
    unit: &dyn Fn(u32) -> RecordUnit,
) -> String {
    let mut refs: Vec<(u32, u64)> = frames.into_iter().filter(|&(_, n)| n > 0).collect();
    refs.sort_unstable();
    refs.dedup();
    let groups: Vec<(RecordUnit, bool, String)> = refs
        .chunk_by(|a, b| a.0 == b.0)
        .map(|group| {
            let nums: Vec<u64> = group.iter().map(|&(_, n)| n).collect();
            let list = frame_list(&nums);
            let text = match labelled {
                true => format!("{}:{list}", crate::input_label(group[0].0)),
                false => list,
            };
            (unit(group[0].0), nums.len() > 1, text)
        })
        .collect();
    if groups.is_empty() {
        return String::new();
    }
    // One word for all when every input counts frames (`frames I1:10; I2:16`); else each
    // input's numbers say what they count (`frame I1:10; lines I2:16, 17`).
    if groups.iter().all(|(u, _, _)| *u == RecordUnit::Frame) {
        let many = refs.len() > 1;
        let lists: Vec<&str> = groups.iter().map(|(_, _, t)| t.as_str()).collect();
        return format!("{} {}", RecordUnit::Frame.word(many), lists.join("; "));
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(u, many, text)| format!("{} {text}", u.word(*many)))
        .collect();
    parts.join("; ")
}

/// Frame numbers of one input: `114`, `114, 142`, or `114…340` past four.
fn frame_list(nums: &[u64]) -> String {
    match nums {
        [first, .., last] if nums.len() > 4 => format!("{first}…{last}"),
        many => many
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", "),
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
    write_header(out, rep, style.width)?;
    if rep.session_count() == 0 {
        let exit = if rep.inputs.iter().any(|i| i.error.is_some()) {
            "exit 4: an input could not be read, and the others hold no MCP session (why, on standard error)"
        } else {
            "exit 5: no MCP session in the inputs (why, and a hint, on standard error)"
        };
        return writeln!(
            out,
            "\nno MCP session found\n\n{}",
            wrap(exit, style.width, "", "  ")
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
    write_verdicts(out, rep, &all, &shown, r, style)?;
    let sessions = listed(rep, sel, &all, &shown);
    write_sessions(out, &sessions, all.len(), r, style)?;
    write_rollups(out, rep, sel, &shown, r, style)?;
    let mut quiet = Vec::new();
    for s in &sessions {
        if !write_block(out, rep, s, &shown, sel, r, style)? {
            quiet.push(*s);
        }
    }
    write_not_determinable_of(out, &quiet, style)?;
    let quiet: Vec<String> = quiet.iter().map(|s| s.label()).collect();
    // Those the table leaves out are without findings too.
    let unlisted = all.len() - sessions.len();
    write_quiet_hint(out, &quiet, quiet.len() + unlisted, style)?;
    if sel.profile {
        super::profile::write_profile(out, rep, r, style)?;
    }
    write_what_to_do(out, rep, &shown, style)?;
    write_exit_line(out, rep, sel, fail_on, style.width)
}

/// One session's block: for an incident (a finding above info) its findings, root cause first
/// with what it caused under it, then its condensed timeline; for a session with info findings
/// only, those; for a healthy session nothing, unless `--session` names it or `--all` asks.
/// Whether anything was written.
fn write_block(
    out: &mut dyn Write,
    rep: &Report,
    s: &SessionHeader,
    shown: &[usize],
    sel: &Selection,
    r: &Redactor,
    style: Style,
) -> io::Result<bool> {
    let mine: Vec<usize> = shown
        .iter()
        .copied()
        .filter(|&p| rep.findings[p].session == s.head.idx)
        .collect();
    let worst = mine.iter().map(|&p| rep.findings[p].severity).min();
    let incident = worst.is_some_and(|w| w.at_least(Severity::Low));
    let asked = sel.all_timelines || sel.names(&s.label(), s.head.session_id.as_deref());
    if mine.is_empty() && !asked {
        return Ok(false);
    }
    if let Some(text) = not_determinable_text(s) {
        writeln!(
            out,
            "\n{}",
            wrap(&format!("{} {text}", s.label()), style.width, "", "  ")
        )?;
    }
    if let Some(w) = worst {
        writeln!(out, "\n{}", block_heading(&s.label(), w, style))?;
        write_findings(out, rep, s, &mine, r, style)?;
    }
    if incident || asked {
        write_timeline(out, rep, s, r, style)?;
    }
    Ok(true)
}

/// A session's block heading (also of a saved report): `INCIDENT S2  CRITICAL` for a finding
/// above info, its worst severity coloured, `FINDINGS (S5)` for info findings only; then what
/// it says of the order under it, when the line has room for that.
pub(crate) fn block_heading(label: &str, worst: Severity, style: Style) -> String {
    const HINT: &str = "  root cause first; ↳ what it caused";
    let (title, plain) = if worst.at_least(Severity::Low) {
        let t = format!("INCIDENT {label}");
        let plain = format!("{t}  {}", worst.name().to_uppercase());
        (
            format!("{}  {}", style.heading(&t), style.severity(worst)),
            plain,
        )
    } else {
        let t = format!("FINDINGS ({label})");
        (style.heading(&t), t)
    };
    let width = |t: &str| textwrap::core::display_width(t);
    let hint = if width(&plain) + width(HINT) <= style.width {
        HINT
    } else {
        ""
    };
    format!("{title}{hint}")
}

/// A finding row of a condensed timeline: the findings placed there by severity and kind
/// (`CRITICAL cross_namespace_replay; HIGH duplicate_response`); their words are in the tree.
pub(crate) fn finding_row<'a>(named: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    named
        .map(|(severity, kind)| format!("{} {kind}", severity.to_uppercase()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Where the timelines of the `count` sessions without one are to be had (`quiet`: those of
/// them the table lists).
fn write_quiet_hint(
    out: &mut dyn Write,
    quiet: &[String],
    count: usize,
    style: Style,
) -> io::Result<()> {
    let Some(first) = quiet.first() else {
        return Ok(());
    };
    let which = match count {
        1 => first.clone(),
        n => format!("{n} sessions"),
    };
    let line = format!(
        "{which} without findings: timelines with --session {first} (one) or --all (every session)"
    );
    writeln!(out, "\n{}", wrap(&line, style.width, "", "  "))
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
    style: Style,
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
            .min(60)
            .min(style.width / 2);
        for row in rows {
            let redacted = r.text(&row.name);
            let name = crate::sanitize::terminal(&redacted);
            let sessions = plural(row.sessions, "session");
            let line = format!(
                "{name:<width$}  {sessions:>12}  {}",
                findings_text(rep, &row.findings)
            );
            let hang = " ".repeat(width + 17);
            writeln!(out, "{}", wrap(&line, style.width, " ", &hang))?;
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
fn write_header(out: &mut dyn Write, rep: &Report, width: usize) -> io::Result<()> {
    writeln!(out, "{} {}", rep.tool.name, rep.tool.version)?;
    let labelled = rep.inputs.len() > 1;
    for input in &rep.inputs {
        let label = if labelled {
            format!("{} ", crate::input_label(input.index))
        } else {
            String::new()
        };
        crate::write_input_line(out, input, &label, width)?;
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
    let aside = &rep.http.set_aside;
    if aside.connections > 0 {
        exchanges.push_str(&format!(
            "; {} set aside as not MCP by their first bytes ({} not examined)",
            count(aside.connections, "connection", "connections"),
            bytes(aside.bytes_not_examined)
        ));
    }
    // Logs and HAR files have no TCP: the line speaks of connections only for captures.
    let captures = rep
        .inputs
        .iter()
        .any(|i| i.error.is_none() && i.format.is_capture());
    let read = if captures {
        format!(
            "{} ({lost}); {exchanges}",
            count(rep.connections, "TCP connection", "TCP connections")
        )
    } else {
        exchanges
    };
    writeln!(out, "{}", wrap(&read, width, "", "  "))?;
    if rep.http.connections_http2 > 0 {
        let line = format!(
            "note: HTTP/2: {}, {}",
            count(rep.http.connections_http2, "connection", "connections"),
            crate::http::h2_parts(&rep.http).join(", ")
        );
        writeln!(out, "{}", wrap(&line, width, "  ", "    "))?;
    }
    for l in &rep.limits {
        let line = format!("note: {}", terminal(&crate::note::sentence(l)));
        writeln!(out, "{}", wrap(&line, width, "  ", "    "))?;
        if matches!(l.kind, mcpf_model::NoteKind::Tls { .. }) {
            write_tls_not_decrypted(out, rep, width)?;
        }
    }
    for c in &rep.clock_offsets {
        let line = format!("clock: {}", terminal(&clock_line(rep, c)));
        writeln!(out, "{}", wrap(&line, width, "  ", "    "))?;
    }
    if let Some(line) = anomalies_line(&rep.anomalies) {
        writeln!(out, "{}", wrap(&line, width, "  ", "    "))?;
    }
    write_conflicts(out, rep, width)?;
    if rep.mcp.unattributed > 0 {
        let line = format!(
            "note: {} that nothing on the wire ties to a session (no session ID, no shared connection, no resume naming its events): {}",
            count(rep.mcp.unattributed, "MCP exchange", "MCP exchanges"),
            rep.mcp.unattributed_examples.join(", ")
        );
        writeln!(out, "{}", wrap(&line, width, "  ", "    "))?;
    }
    Ok(())
}

/// Kinds the anomalies line names; the JSON report lists every kind.
const ANOMALY_KINDS_NAMED: usize = 5;

/// `HTTP anomalies: 3 (midstream_resync 2, h2_goaway 1)`, the most frequent kinds first; none
/// when the run had none.
fn anomalies_line(anomalies: &mcpf_mcp::Anomalies) -> Option<String> {
    let by_kind = anomalies.by_kind();
    if by_kind.is_empty() {
        return None;
    }
    let mut kinds: Vec<String> = by_kind
        .iter()
        .take(ANOMALY_KINDS_NAMED)
        .map(|(k, c)| format!("{} {}", k.name(), c.count))
        .collect();
    if by_kind.len() > ANOMALY_KINDS_NAMED {
        kinds.push("…".into());
    }
    Some(format!(
        "HTTP anomalies: {} ({})",
        anomalies.total(),
        kinds.join(", ")
    ))
}

/// Verdict lines shown at most: the rest are counted (their findings follow below).
const VERDICTS_SHOWN: usize = 8;

/// Under the TLS note: the first connections the key log did not open, where and why.
fn write_tls_not_decrypted(out: &mut dyn Write, rep: &Report, width: usize) -> io::Result<()> {
    const SHOWN: usize = 5;
    for f in rep.tls_not_decrypted.iter().take(SHOWN) {
        let line = format!(
            "tcp{}{} from frame {}: {}",
            f.conn.number(),
            match rep.inputs.len() {
                1 => String::new(),
                _ => format!(" of input {}", f.mark.frame.input + 1),
            },
            f.mark.frame.frame,
            terminal(&f.detail)
        );
        writeln!(out, "{}", wrap(&line, width, "    ", "      "))?;
    }
    let more = rep.tls_not_decrypted.len().saturating_sub(SHOWN);
    if more > 0 {
        writeln!(out, "    … {more} more (--format json lists them)")?;
    }
    Ok(())
}

/// Under the anomalies line: where the capture says two things (a retransmission with other
/// content than the first copy), each with both frames: the report rests on the first copy.
fn write_conflicts(out: &mut dyn Write, rep: &Report, width: usize) -> io::Result<()> {
    const SHOWN: usize = 5;
    let all: Vec<&mcpf_model::Anomaly> = rep.anomalies.conflicts().collect();
    for a in all.iter().take(SHOWN) {
        let line = format!(
            "the capture says two things: tcp{}{} frame {}: {}",
            a.conn.number(),
            match rep.inputs.len() {
                1 => String::new(),
                _ => format!(" of input {}", a.mark.frame.input + 1),
            },
            a.mark.frame.frame,
            terminal(&a.detail)
        );
        writeln!(out, "{}", wrap(&line, width, "    ", "      "))?;
    }
    if all.len() > SHOWN {
        writeln!(
            out,
            "    … {} more (--format json lists them)",
            all.len() - SHOWN
        )?;
    }
    Ok(())
}

/// One line per session whose findings go above info, the worst first: how bad, since when,
/// what broke (the most severe finding in its own words) and the request it left hanging.
fn write_verdicts(
    out: &mut dyn Write,
    rep: &Report,
    all: &[&SessionHeader],
    shown: &[usize],
    r: &Redactor,
    style: Style,
) -> io::Result<()> {
    let mut bad: Vec<(Severity, &SessionHeader, usize)> = all
        .iter()
        .filter_map(|s| {
            let worst = worst_of(rep, shown, s.head.idx)?;
            let sev = rep.findings[worst].severity;
            sev.at_least(Severity::Low).then_some((sev, *s, worst))
        })
        .collect();
    bad.sort_by_key(|(sev, s, _)| (*sev, s.head.idx));
    writeln!(out, "\n{}", style.heading("VERDICT"))?;
    if bad.is_empty() {
        let n = all.len() as u64;
        return writeln!(
            out,
            " no finding above info in {}",
            count(n, "session", "sessions")
        );
    }
    for (sev, s, worst) in bad.iter().take(VERDICTS_SHOWN) {
        let text = verdict_text(rep, shown, s, *worst);
        let text = terminal(&r.text(&text)).into_owned();
        write_verdict_line(out, &s.label(), *sev, &text, style)?;
    }
    if bad.len() > VERDICTS_SHOWN {
        writeln!(
            out,
            " … and {} more sessions with findings above info (below)",
            bad.len() - VERDICTS_SHOWN
        )?;
    }
    Ok(())
}

/// The most severe shown finding of a session, the earliest of equals.
fn worst_of(rep: &Report, shown: &[usize], session: usize) -> Option<usize> {
    shown
        .iter()
        .copied()
        .filter(|&p| rep.findings[p].session == session)
        .min_by_key(|&p| (rep.findings[p].severity, rep.findings[p].time.time, p))
}

/// The verdict line's words ([`crate::doc::verdict_sentence`], shared with the Markdown).
fn verdict_text(rep: &Report, shown: &[usize], s: &SessionHeader, worst: usize) -> String {
    let f = &rep.findings[worst];
    let root = root_cause(rep, worst);
    let c = &rep.findings[root];
    let hung = shown.iter().copied().find_map(|p| {
        let u = &rep.findings[p];
        let mcpf_detect::Evidence::UnansweredRequest(e) = &u.evidence else {
            return None;
        };
        (p != worst && u.session == s.head.idx && u.severity.at_least(Severity::Low))
            .then(|| (crate::doc::hung_request(e), finding_id(p)))
    });
    let id = finding_id(worst);
    crate::doc::verdict_sentence(&crate::doc::Verdict {
        session_id: s.head.session_id.as_deref(),
        at: f.time.time.clock_millis(),
        since: (root != worst).then(|| (c.time.time.clock_millis(), c.kind.to_string())),
        summary: &f.summary,
        id: &id,
        kind: f.kind.name(),
        hung,
    })
}

/// The first cause of a finding, following `caused_by` (a cycle cannot be built, but a
/// bound costs nothing).
fn root_cause(rep: &Report, mut p: usize) -> usize {
    for _ in 0..rep.findings.len() {
        match rep.findings[p].caused_by.first() {
            Some(&c) if c < rep.findings.len() => p = c,
            _ => break,
        }
    }
    p
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
            *i < LISTED_ANYWAY
                || with_findings.contains(&s.head.idx)
                || sel.sessions.is_some()
                || sel.all_timelines
        })
        .map(|(_, s)| *s)
        .collect()
}

/// Columns of the sessions table, in the order they are left out when it is too wide.
const SESSION_COLUMNS: [&str; 9] = [
    "S",
    "Mcp-Session-Id",
    "server",
    "transport",
    "revision",
    "client",
    "fell back",
    "IDs",
    "resumption",
];
pub(crate) const SESSION_COLUMNS_DROPPED: [usize; 6] = [5, 3, 4, 7, 6, 2];

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
    let rows: Vec<Vec<String>> = sessions.iter().map(|s| session_row(s, r)).collect();
    write_session_table(out, &rows, style, "--format json has them")?;
    if total > sessions.len() {
        let more = format!(
            "… and {} more sessions without findings (--format json lists every session)",
            total - sessions.len()
        );
        writeln!(out, "{}", wrap(&more, style.width, " ", "   "))?;
    }
    let several = sessions
        .iter()
        .flat_map(|s| s.vantage_points.iter().map(|v| v.input))
        .any(|i| i > 0);
    for s in sessions {
        if let Some(line) = vantage_line(s, several) {
            writeln!(out, "{}", wrap(&line, style.width, " ", "   "))?;
        }
        for (_, path, matched, added, offset) in &s.merged {
            let line = format!(
                "{}: {} matched {} exchanges of the capture (clock offset {:+.3} s applied), added {}",
                s.label(),
                terminal(path),
                matched,
                offset,
                added
            );
            writeln!(out, "{}", wrap(&line, style.width, " ", "   "))?;
        }
    }
    Ok(())
}

/// Where a session was seen, when at more than one vantage point.
fn vantage_line(s: &SessionHeader, several_inputs: bool) -> Option<String> {
    let keys: Vec<(String, String)> = s
        .vantage_points
        .iter()
        .map(|v| {
            (
                mcpf_mcp::model::session_label(v.session),
                endpoint(v.server),
            )
        })
        .collect();
    let points: Vec<crate::VantageText<'_>> = s
        .vantage_points
        .iter()
        .zip(&keys)
        .map(|(v, (key, server))| crate::VantageText {
            input: v.input,
            server,
            observation: key,
            streams: v.streams as u64,
            events: v.events as u64,
        })
        .collect();
    crate::vantage_line(&s.label(), &points, several_inputs)
}

/// The sessions table fitted to the width, and which columns it left out (`elsewhere` says where
/// they are to be had).
pub(crate) fn write_session_table(
    out: &mut dyn Write,
    rows: &[Vec<String>],
    style: Style,
    elsewhere: &str,
) -> io::Result<()> {
    let (table, dropped) = fitted_table(
        &SESSION_COLUMNS,
        rows,
        &SESSION_COLUMNS_DROPPED,
        &[2],
        style.width,
    );
    writeln!(out, "{table}")?;
    if !dropped.is_empty() {
        let note = format!(
            "(left out to fit {} columns: {}; {elsewhere})",
            style.width,
            dropped.join(", ")
        );
        writeln!(out, "{}", wrap(&note, style.width, " ", "  "))?;
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

/// What the inputs could not tell about a session, and why: `not determinable from these
/// inputs: <kinds> (<reasons>)`.
fn not_determinable_text(s: &SessionHeader) -> Option<String> {
    let undecided = s.not_determinable(&s.head.lacks);
    if undecided.is_empty() {
        return None;
    }
    let kinds: Vec<&str> = undecided.iter().map(|(k, _)| k.name()).collect();
    let mut reasons: Vec<String> = undecided
        .iter()
        .map(|(_, lack)| crate::lacks::reason(lack))
        .collect();
    reasons.dedup();
    Some(format!(
        "not determinable from these inputs: {} ({})",
        kinds.join(", "),
        reasons.join("; ")
    ))
}

/// The same of the sessions without a block, one line for each set of sessions it is the same
/// for (a HAR file lacks the same for each of its sessions).
fn write_not_determinable_of(
    out: &mut dyn Write,
    sessions: &[&SessionHeader],
    style: Style,
) -> io::Result<()> {
    let mut said: Vec<(String, Vec<String>)> = Vec::new();
    for s in sessions {
        let Some(text) = not_determinable_text(s) else {
            continue;
        };
        match said.iter_mut().find(|(t, _)| *t == text) {
            Some((_, labels)) => labels.push(s.label()),
            None => said.push((text, vec![s.label()])),
        }
    }
    for (text, labels) in said {
        let line = format!("{} {text}", labels.join(", "));
        writeln!(out, "\n{}", wrap(&line, style.width, "", "  "))?;
    }
    Ok(())
}

/// A session's shown findings (`mine`, not empty) as a tree: each root cause, then what it
/// caused indented under it, and the streams they name said in words.
fn write_findings(
    out: &mut dyn Write,
    rep: &Report,
    s: &SessionHeader,
    mine: &[usize],
    r: &Redactor,
    style: Style,
) -> io::Result<()> {
    let nodes: Vec<crate::tree::Node<_>> = mine
        .iter()
        .map(|&p| {
            let f = &rep.findings[p];
            crate::tree::Node {
                severity: f.severity,
                when: (f.time.time, p),
                causes: f
                    .caused_by
                    .iter()
                    .filter_map(|c| mine.iter().position(|m| m == c))
                    .collect(),
            }
        })
        .collect();
    let id_width = mine.iter().map(|&p| finding_id(p).len()).max().unwrap_or(2);
    let order = crate::tree::causal_order(&nodes);
    for placed in &order {
        let p = mine[placed.at];
        let f = &rep.findings[p];
        let summary = terminal(&r.text(&f.summary)).into_owned();
        let text = FindingText {
            id: &finding_id(p),
            severity: f.severity,
            kind: f.kind.name(),
            time: f.time.time.clock_millis(),
            frames: frames_text(
                f.frames.iter().map(|m| (m.frame.input, m.frame.frame)),
                rep.inputs.len() > 1,
                &|i| rep.unit(i),
            ),
            depth: placed.depth,
            also_follows: placed
                .also_follows
                .iter()
                .map(|&c| finding_id(mine[c]))
                .collect(),
            summary: &summary,
            note: f.confidence_note.as_deref(),
            seen: live_seen_lines(rep, f, s),
        };
        write_finding(out, &text, id_width, style)?;
    }
    // The streams in the order the tree names them.
    let summaries: Vec<&str> = order
        .iter()
        .map(|placed| rep.findings[mine[placed.at]].summary.as_str())
        .collect();
    write_stream_legend(out, rep, s, &summaries, r, style)
}

/// The streams the findings name, said once in words: `post:s3 is POST tools/call #7 reindex`
/// (what its request was, from the row that opened it in the timeline).
fn write_stream_legend(
    out: &mut dyn Write,
    rep: &Report,
    s: &SessionHeader,
    summaries: &[&str],
    r: &Redactor,
    style: Style,
) -> io::Result<()> {
    let entries: &[Entry] = rep.timelines.get(s.head.idx).map_or(&[], Vec::as_slice);
    let opened = |label: &str| {
        let own = entries
            .iter()
            .find(|e| e.stream.as_deref() == Some(label) && matches!(e.kind, "request" | "resume"))
            .map(|e| e.text.clone());
        own.or_else(|| {
            entries
                .iter()
                .filter(|e| e.kind == "request")
                .find_map(|e| {
                    let ids: Vec<String> = e.request_ids.iter().map(|i| i.label()).collect();
                    opened_in_run(label, &e.text, &ids)
                })
        })
    };
    match stream_legend(summaries, &opened) {
        Some(text) => {
            let text = terminal(&r.text(&text)).into_owned();
            writeln!(out, "{}", wrap(&text, style.width, " ", "   "))
        }
        None => Ok(()),
    }
}

/// `streams: get:s4 is GET /mcp (fallback stream); …` for the stream labels `summaries` name,
/// in the order they first appear, each said by what opened it (`opened`: the text of its
/// opening timeline row); none when no label can be said.
pub(crate) fn stream_legend(
    summaries: &[&str],
    opened: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let mut labels: Vec<&str> = Vec::new();
    let words = summaries
        .iter()
        .flat_map(|t| t.split(|c: char| !(c.is_ascii_alphanumeric() || c == ':' || c == '-')));
    for word in words {
        let is_label = word.split_once(":s").is_some_and(|(t, n)| {
            !t.is_empty()
                && t.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
        });
        if is_label && !labels.contains(&word) {
            labels.push(word);
        }
    }
    // The row's text up to the response it got (`POST tools/call #7 reindex  → 200 SSE`).
    let said: Vec<String> = labels
        .iter()
        .filter_map(|label| {
            let text = opened(label)?;
            let what = text
                .split("  ")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            Some(format!("{label} is {what}"))
        })
        .collect();
    (!said.is_empty()).then(|| format!("streams: {}", said.join("; ")))
}

/// What opened `label` when its request is one of a condensed row's (`POST tools/call #8–#19
/// (12 requests) on post:s5…post:s16, each answered on its own stream`, with `ids` its request
/// IDs): `POST tools/call #19` for post:s16. Only when the run's streams are exactly one a
/// request (as many stream numbers as requests): otherwise which is which is not said.
pub(crate) fn opened_in_run(label: &str, text: &str, ids: &[String]) -> Option<String> {
    let (_, after) = text.split_once(" on ")?;
    let range = after.split([',', ' ']).next()?;
    let (first, last) = range.split_once('…')?;
    let number = |l: &str| -> Option<(String, u64)> {
        let (kind, n) = l.split_once(":s")?;
        Some((kind.to_string(), n.parse().ok()?))
    };
    let ((kind, a), (kind_b, b)) = (number(first)?, number(last)?);
    let (want, n) = number(label)?;
    if kind != kind_b || kind != want || !(a..=b).contains(&n) {
        return None;
    }
    if usize::try_from(b - a + 1).ok()? != ids.len() {
        return None;
    }
    let method = text.split(" #").next()?;
    Some(format!("{method} #{}", ids[usize::try_from(n - a).ok()?]))
}

/// Where a finding of the session `s` was seen, from the run's typed findings.
fn live_seen_lines(rep: &Report, f: &mcpf_detect::Finding, s: &SessionHeader) -> Vec<String> {
    let several = rep.inputs.len() > 1;
    let own = (s.head.start.frame.input, s.head.server);
    let at = (own != (f.vantage.input, f.vantage.server)).then(|| {
        let server = f.vantage.server.to_string();
        crate::seen_at_text(f.vantage.input, &server, None, several)
    });
    let also = f.seen_at.iter().map(|x| {
        let server = x.vantage.server.to_string();
        let obs = mcpf_mcp::model::session_label(x.session);
        let frames = x.frames.iter().map(|m| (m.frame.input, m.frame.frame));
        (
            crate::seen_at_text(x.vantage.input, &server, Some(&obs), several),
            frames_text(frames, several, &|i| rep.unit(i)),
        )
    });
    seen_lines(at, also)
}

/// A finding as the terminal report prints it (also for a saved report).
pub(crate) struct FindingText<'a> {
    pub id: &'a str,
    pub severity: Severity,
    pub kind: &'a str,
    pub time: String,
    pub frames: String,
    /// How deep in its session's cause → consequence tree it is drawn (0: a root cause).
    pub depth: usize,
    /// The IDs of its causes other than the one it is drawn under.
    pub also_follows: Vec<String>,
    /// Sanitized and redacted already.
    pub summary: &'a str,
    pub note: Option<&'a str>,
    /// Where else it was seen (sanitized already): one line each under the summary.
    pub seen: Vec<String>,
}

/// A finding's head line (ID, severity, kind, time, frames, its other causes), indented as
/// deep as it is in the tree with `↳` marking a consequence, and its summary under it, wrapped
/// at the width.
pub(crate) fn write_finding(
    out: &mut dyn Write,
    f: &FindingText<'_>,
    id_width: usize,
    style: Style,
) -> io::Result<()> {
    let also = if f.also_follows.is_empty() {
        String::new()
    } else {
        format!("  (also follows {})", f.also_follows.join(", "))
    };
    let lead = match f.depth {
        0 => " ".to_string(),
        d => format!(" {}↳ ", " ".repeat(crate::tree::indent(d) - 2)),
    };
    let lead_width = textwrap::core::display_width(&lead);
    let indent = " ".repeat(lead_width + id_width + 1);
    // Wrapped as plain text, then the severity coloured: colour codes take no columns.
    let sev = format!("{:<8}", f.severity.name().to_uppercase());
    let line = format!(
        "{:<id_width$} {sev} {}  {}  {}{also}",
        f.id, f.kind, f.time, f.frames
    );
    let line = wrap(&line, style.width, &lead, &indent);
    let colored = style.severity(f.severity);
    writeln!(out, "{}", line.replacen(sev.trim_end(), &colored, 1))?;
    writeln!(out, "{}", wrap(f.summary, style.width, &indent, &indent))?;
    if let Some(note) = f.note {
        let note = format!("confidence reduced: {}", terminal(note));
        writeln!(out, "{}", wrap(&note, style.width, &indent, &indent))?;
    }
    for line in &f.seen {
        writeln!(out, "{}", wrap(line, style.width, &indent, &indent))?;
    }
    Ok(())
}

/// The lines saying where a finding was seen: at a vantage point other than its session
/// record's own (`at`), and at each other vantage point that saw it too, with the frames there.
pub(crate) fn seen_lines(
    at: Option<String>,
    also: impl IntoIterator<Item = (String, String)>,
) -> Vec<String> {
    let mut out: Vec<String> = at.map(|v| format!("seen at {v}")).into_iter().collect();
    out.extend(
        also.into_iter()
            .map(|(v, frames)| format!("also seen at {v}: {frames}")),
    );
    out
}

/// A timeline row: time, marker, and the text wrapped under itself.
pub(crate) fn write_timeline_row(
    out: &mut dyn Write,
    time: &str,
    marker: &str,
    text: &str,
    width: usize,
) -> io::Result<()> {
    let lead = format!(" {time}  {marker:<6} ");
    let hang = " ".repeat(textwrap::core::display_width(&lead));
    writeln!(out, "{}", wrap(text, width, &lead, &hang))
}

/// A verdict line: the session, its worst severity (coloured), the words wrapped under them.
pub(crate) fn write_verdict_line(
    out: &mut dyn Write,
    label: &str,
    severity: Severity,
    text: &str,
    style: Style,
) -> io::Result<()> {
    let head = format!(" {label} {} ", style.severity(severity));
    // The colour codes take no columns: wrap as if the heading were plain.
    let plain = format!(" {label} {} ", severity.name().to_uppercase());
    let wrapped = wrap(text, style.width, &plain, "     ");
    writeln!(out, "{head}{}", &wrapped[plain.len()..])
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
    // Rows wrap under their text, so the time and marker columns stay clear.
    for e in entries {
        let text = match e.kind {
            // The finding's words are in the tree above: its row names it.
            "finding" => finding_row(
                e.findings
                    .iter()
                    .filter_map(|&p| rep.findings.get(p))
                    .map(|f| (f.severity.name(), f.kind.name())),
            ),
            _ => terminal(&r.text(&e.text)).into_owned(),
        };
        let mut time = e.time.time.clock_millis();
        if rep.inputs.len() > 1 {
            time = format!("{time} {}", crate::input_label(e.time.frame.input));
        }
        write_timeline_row(out, &time, &marker(e), &text, style.width)?;
    }
    let v = &s.verdict;
    let line = format!(
        "resumption: {}{}",
        v.verdict,
        v.reason
            .as_deref()
            .map(|r| format!(" — {}", terminal(r)))
            .unwrap_or_default()
    );
    writeln!(out, "{}", wrap(&line, style.width, " ", "   "))
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
    match worst {
        Some(p) => write_fix(out, rep.findings[p].kind, style),
        None => Ok(()),
    }
}

/// `WHAT TO DO`: the fix of a finding kind, and the command that explains it.
pub(crate) fn write_fix(
    out: &mut dyn Write,
    kind: mcpf_detect::FindingKind,
    style: Style,
) -> io::Result<()> {
    // The command beside the heading when it fits, else under it.
    let explain = format!("(mcp-forensics explain {kind})");
    let sep = if "WHAT TO DO  ".len() + explain.len() <= style.width {
        "  "
    } else {
        "\n "
    };
    writeln!(out, "\n{}{sep}{explain}", style.heading("WHAT TO DO"))?;
    writeln!(out, "{}", wrap(kind.info().fix, style.width, " ", " "))
}

/// The exit code the findings call for, and why.
fn write_exit_line(
    out: &mut dyn Write,
    rep: &Report,
    sel: &Selection,
    fail_on: Severity,
    width: usize,
) -> io::Result<()> {
    let failing = rep
        .counted_findings(sel)
        .filter(|f| f.severity.at_least(fail_on))
        .count();
    let unread = rep.inputs.iter().filter(|i| i.error.is_some()).count();
    let unmatched = rep.unmatched_session_keys(sel);
    let line = if !unmatched.is_empty() {
        format!(
            "exit 2: --session {} names no session of these inputs",
            unmatched.join(", ")
        )
    } else if unread > 0 {
        format!(
            "exit 4: {} could not be read; in the others {} at or above --fail-on {}",
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
    };
    // Wrapped like every line (a script reads the exit status, not this line).
    writeln!(out, "\n{}", wrap(&line, width, "", "  "))
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

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{Anomaly, AnomalyKind, ConnId, Direction, FrameRef, Mark, Timestamp};

    fn anomalies(kinds: &[AnomalyKind]) -> mcpf_mcp::Anomalies {
        let mut a = mcpf_mcp::Anomalies::default();
        for (i, &kind) in kinds.iter().enumerate() {
            a.add(Anomaly {
                kind,
                conn: ConnId::tcp(0),
                dir: Direction::ServerToClient,
                mark: Mark {
                    time: Timestamp(i as i64),
                    frame: FrameRef::new(0, i as u64 + 1),
                },
                detail: String::new(),
            });
        }
        a
    }

    #[test]
    fn a_stream_of_a_condensed_run_is_said_by_its_request_only_when_one_stream_a_request() {
        let text = "POST tools/call #8–#19 (12 requests) on post:s5…post:s16, each answered on its own stream";
        let ids: Vec<String> = (8..=19).map(|i| i.to_string()).collect();
        assert_eq!(
            opened_in_run("post:s16", text, &ids).as_deref(),
            Some("POST tools/call #19")
        );
        assert_eq!(
            opened_in_run("post:s5", text, &ids).as_deref(),
            Some("POST tools/call #8")
        );
        assert_eq!(opened_in_run("post:s17", text, &ids), None);
        assert_eq!(opened_in_run("get:s6", text, &ids), None);
        // A stream between them that is not one of the requests': which is which is unknown.
        assert_eq!(opened_in_run("post:s16", text, &ids[1..]), None);
    }

    #[test]
    fn the_anomalies_line_names_the_most_frequent_kinds_first() {
        use AnomalyKind::*;
        assert_eq!(anomalies_line(&anomalies(&[])), None);
        let a = anomalies(&[H2Goaway, MidstreamResync, MidstreamResync]);
        assert_eq!(
            anomalies_line(&a).as_deref(),
            Some("HTTP anomalies: 3 (midstream_resync 2, h2_goaway 1)")
        );
        let many = anomalies(&[
            H2Goaway,
            H2StreamReset,
            MalformedHead,
            IncompleteHead,
            MidstreamResync,
            HeadCutByGap,
        ]);
        assert_eq!(
            anomalies_line(&many).as_deref(),
            Some(
                "HTTP anomalies: 6 (h2_goaway 1, h2_stream_reset 1, head_cut_by_gap 1, \
                 incomplete_head 1, malformed_head 1, …)"
            )
        );
    }
}
