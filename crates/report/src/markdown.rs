//! The report as Markdown for a postmortem: the verdict, the sessions, the findings worst first
//! with a Wireshark display filter each, a Mermaid `sequenceDiagram` of each incident and its
//! timeline, ready to paste into an incident document.
//!
//! Rendered from the JSON document (`docs/report-format.md`) read as a [`Document`], so a saved
//! `report.json` renders the same as the run that wrote it. Every string from a capture is escaped for where it goes:
//! table cells (`|`, HTML), Mermaid messages (`;`, `#`, angle brackets).

use std::io::{self, Write};

use crate::doc::{Doc, Legs};
use crate::document::{Document, Session};

/// Messages drawn per sequence diagram at most: past it the diagram says how many rows of the
/// timeline it leaves out.
const DIAGRAM_MESSAGES: usize = 80;
/// Timeline rows listed per session at most (here and in the HTML report).
pub(crate) const TIMELINE_ROWS: usize = 200;

/// The Markdown of a run: rendered from its JSON document, as a saved one is, so both render
/// alike. The document is held in memory while it is rendered (without `--events`, a few
/// hundred bytes per session and finding).
pub fn write_markdown_report(
    out: &mut dyn Write,
    rep: &mut crate::analyze::Report,
    sel: &crate::analyze::Selection,
    r: &crate::redact::Redactor,
) -> io::Result<()> {
    write_markdown(out, &document(rep, sel, r)?)
}

/// The JSON document of a run, read back as the document the renderers draw from: written and
/// read as a saved one is.
pub fn document(
    rep: &mut crate::analyze::Report,
    sel: &crate::analyze::Selection,
    r: &crate::redact::Redactor,
) -> io::Result<Document> {
    let mut json = Vec::new();
    crate::analyze::write_json(&mut json, rep, sel, r)?;
    Ok(Document::from_json(&json)?)
}

pub fn write_markdown(out: &mut dyn Write, doc: &Document) -> io::Result<()> {
    let d = Doc::new(doc);
    writeln!(out, "# MCP incident report\n")?;
    let labelled = d.inputs().count() > 1;
    let inputs: Vec<String> = d
        .inputs()
        .enumerate()
        .map(|(i, p)| match labelled {
            true => format!("{} `{}`", crate::input_label(i as u32), code(p)),
            false => format!("`{}`", code(p)),
        })
        .collect();
    writeln!(
        out,
        "{} {} · inputs: {}\n",
        cell(doc.tool.name.as_deref().unwrap_or("mcp-forensics")),
        cell(doc.tool.version.as_deref().unwrap_or("")),
        inputs.join(", ")
    )?;
    for l in &doc.summary.limits {
        writeln!(out, "> note: {}\n", cell(l))?;
    }
    write_verdict(out, &d)?;
    write_sessions(out, &d)?;
    for s in d.sessions_with_findings() {
        write_findings(out, &d, s)?;
        if let Some((kind, fix)) = d.what_to_do(&s.key) {
            writeln!(
                out,
                "**What to do** (`mcp-forensics explain {}`): {}\n",
                code(&kind),
                cell(fix)
            )?;
        }
        if let Some(legs) = d.legs(s) {
            write_diagram(out, &d, &legs)?;
        }
        write_timeline(out, &d, s)?;
    }
    Ok(())
}

fn write_verdict(out: &mut dyn Write, d: &Doc<'_>) -> io::Result<()> {
    writeln!(out, "## Verdict\n")?;
    let lines = d.verdicts();
    if lines.is_empty() {
        return writeln!(out, "{}\n", cell(&d.nothing_above_info()));
    }
    for v in lines {
        writeln!(
            out,
            "- **{}** {}: {}",
            cell(&v.session),
            cell(&v.severity.name().to_uppercase()),
            cell(&v.text)
        )?;
    }
    writeln!(out)
}

fn write_sessions(out: &mut dyn Write, d: &Doc<'_>) -> io::Result<()> {
    writeln!(out, "## Sessions\n")?;
    writeln!(
        out,
        "| S | Mcp-Session-Id | server | client | revision | fell back | IDs | resumption | findings |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|---|---|")?;
    for s in d.sessions() {
        let fell = s
            .fell_back
            .as_ref()
            .map_or("no".into(), |f| cell(&clock(&f.time)));
        writeln!(
            out,
            "| {} | `{}` | {} {} | {} | {} | {} | {} | {} | {} |",
            cell(&s.key),
            code(&short(s.session_id.as_deref().unwrap_or("—"))),
            cell(&s.server),
            cell(&s.endpoint),
            cell(s.client_info.as_deref().unwrap_or("")),
            cell(s.revision.date.as_deref().unwrap_or("")),
            fell,
            cell(&s.event_id_scheme),
            cell(s.resumption.verdict.as_deref().unwrap_or("")),
            d.findings_of(&s.key).count(),
        )?;
    }
    writeln!(out)
}

fn write_findings(out: &mut dyn Write, d: &Doc<'_>, s: &Session) -> io::Result<()> {
    let key = &s.key;
    writeln!(out, "## Findings ({})\n", cell(key))?;
    writeln!(
        out,
        "| ID | severity | kind | time (UTC) | cause | what | Wireshark |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    for f in d.worst_first(key) {
        writeln!(
            out,
            "| <a id=\"{anchor}\"></a>{id} | **{}** | `{}` | {} | {} | {} | {} |",
            cell(&f.severity_name().to_uppercase()),
            code(f.kind.name()),
            cell(&clock(&f.time)),
            f.caused_by
                .iter()
                .map(|c| link(c))
                .collect::<Vec<_>>()
                .join(", "),
            cell(&f.summary),
            [
                d.display_filter(f).map(|x| format!("`{}`", code(&x))),
                d.other_records(f).map(|x| cell(&x)),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; "),
            id = cell(&f.id),
            anchor = slug(&f.id),
        )?;
    }
    writeln!(out)
}

fn write_diagram(out: &mut dyn Write, d: &Doc<'_>, legs: &Legs<'_>) -> io::Result<()> {
    writeln!(out, "### Sequence ({})\n", cell(&legs.title()))?;
    writeln!(out, "```mermaid\nsequenceDiagram")?;
    for (id, name) in legs.participants() {
        writeln!(out, "    participant {id} as {}", mermaid(&name))?;
    }
    let rows = legs.rows(d);
    for row in rows.iter().take(DIAGRAM_MESSAGES) {
        writeln!(out, "    {}", row.mermaid())?;
    }
    if rows.len() > DIAGRAM_MESSAGES {
        let (a, b) = legs.span();
        writeln!(
            out,
            "    Note over {a},{b}: {} more rows in the timeline",
            rows.len() - DIAGRAM_MESSAGES
        )?;
    }
    writeln!(out, "```\n")
}

fn write_timeline(out: &mut dyn Write, d: &Doc<'_>, s: &Session) -> io::Result<()> {
    let key = &s.key;
    let rows: Vec<_> = d.timeline_of(key).collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "### Timeline ({}), UTC\n", cell(key))?;
    writeln!(out, "| time | frame | | what |")?;
    writeln!(out, "|---|---|---|---|")?;
    for e in rows.iter().take(TIMELINE_ROWS) {
        let frame = d.record_ref(u64::from(e.input), e.frame);
        let findings: Vec<String> = e.findings.iter().map(|f| link(f)).collect();
        let what = if findings.is_empty() {
            cell(&e.summary)
        } else {
            format!("{} {}", findings.join(", "), cell(&e.summary))
        };
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&clock(&e.time)),
            frame,
            cell(&e.direction),
            what
        )?;
    }
    if rows.len() > TIMELINE_ROWS {
        writeln!(
            out,
            "\n({} more rows: `--format json` has them all)",
            rows.len() - TIMELINE_ROWS
        )?;
    }
    writeln!(out)
}

/// `04:36:07.294` of an RFC 3339 time; anything else (a saved report may hold anything) as
/// the terminal report shows capture text.
pub(crate) fn clock(t: &str) -> String {
    match t.get(11..23) {
        Some(c)
            if c.bytes()
                .all(|b| b.is_ascii_digit() || b == b':' || b == b'.') =>
        {
            c.into()
        }
        _ => crate::sanitize::terminal(t).into_owned(),
    }
}

/// A finding ID as an anchor: its letters, digits, `-` and `_` only.
pub(crate) fn slug(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

/// `[F5](#F5)`: a link to a finding's row.
fn link(id: &str) -> String {
    format!("[{}](#{})", cell(id), slug(id))
}

/// `2665…92a9`, as the terminal table shortens a session ID.
fn short(id: &str) -> String {
    mcpf_mcp::model::short_id(id)
}

/// Text for a Markdown table cell: one line, no column break, no HTML.
pub(crate) fn cell(text: &str) -> String {
    let text = crate::sanitize::terminal(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '*' | '_' | '`' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text inside a code span: no backtick to end it, no column break, one line.
fn code(text: &str) -> String {
    crate::sanitize::terminal(text)
        .chars()
        .map(|c| match c {
            '`' => '\'',
            '|' => '¦',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// Text for a Mermaid message or name: Mermaid reads `;` and `#…;` as syntax and `<br>` as HTML.
pub(crate) fn mermaid(text: &str) -> String {
    let text = crate::sanitize::terminal(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '%' => out.push_str("#37;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_text_cannot_break_a_table_or_a_diagram() {
        assert_eq!(cell("a|b<script>"), "a\\|b&lt;script&gt;");
        // A newline is shown as the terminal report shows it, its backslash kept by Markdown.
        assert_eq!(cell("x\ny"), "x\\\\ny");
        assert_eq!(mermaid("#7; <b>"), "#35;7#59; #lt;b#gt;");
        assert_eq!(code("a`b|c"), "a'b¦c");
        assert_eq!(clock("2026-11-30T04:36:07.294984Z"), "04:36:07.294");
    }
}
