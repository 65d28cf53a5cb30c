//! The report as Markdown for a postmortem: the verdict, the sessions, the findings worst first
//! with a Wireshark display filter each, a Mermaid `sequenceDiagram` of each incident and its
//! timeline, ready to paste into an incident document.
//!
//! Rendered from the JSON document (`docs/report-format.md`), so a saved `report.json` renders
//! the same as the run that wrote it. Every string from a capture is escaped for where it goes:
//! table cells (`|`, HTML), Mermaid messages (`;`, `#`, angle brackets).

use std::io::{self, Write};

use serde_json::Value;

use crate::doc::{Doc, Legs};

/// Messages drawn per sequence diagram at most: past it the diagram says how many rows of the
/// timeline it leaves out.
const DIAGRAM_MESSAGES: usize = 80;
/// Timeline rows listed per session at most.
const TIMELINE_ROWS: usize = 200;

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

/// The JSON document of a run, as a value for the renderers that draw from it.
pub fn document(
    rep: &mut crate::analyze::Report,
    sel: &crate::analyze::Selection,
    r: &crate::redact::Redactor,
) -> io::Result<Value> {
    let mut json = Vec::new();
    crate::analyze::write_json(&mut json, rep, sel, r)?;
    Ok(serde_json::from_slice(&json)?)
}

pub fn write_markdown(out: &mut dyn Write, doc: &Value) -> io::Result<()> {
    let d = Doc::new(doc);
    let tool = &doc["tool"];
    writeln!(out, "# MCP incident report\n")?;
    let inputs: Vec<String> = d.inputs().map(|p| format!("`{}`", code(p))).collect();
    writeln!(
        out,
        "{} {} · inputs: {}\n",
        cell(tool["name"].as_str().unwrap_or("mcp-forensics")),
        cell(tool["version"].as_str().unwrap_or("")),
        inputs.join(", ")
    )?;
    for l in doc["summary"]["limits"].as_array().into_iter().flatten() {
        writeln!(out, "> note: {}\n", cell(l.as_str().unwrap_or("")))?;
    }
    write_verdict(out, &d)?;
    write_sessions(out, &d)?;
    for s in d.sessions_with_findings() {
        write_findings(out, &d, s)?;
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
        let n = d.sessions().count();
        return writeln!(
            out,
            "No finding above info in {n} session{}.\n",
            if n == 1 { "" } else { "s" }
        );
    }
    for v in lines {
        writeln!(
            out,
            "- **{}** {}: {}",
            cell(&v.session),
            cell(&v.severity.to_uppercase()),
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
        let fell = s["fell_back"]["time"]
            .as_str()
            .map_or("no".into(), |t| cell(&clock(t)));
        writeln!(
            out,
            "| {} | `{}` | {} {} | {} | {} | {} | {} | {} | {} |",
            cell(d.key(s)),
            code(&short(s["session_id"].as_str().unwrap_or("—"))),
            cell(s["server"].as_str().unwrap_or("")),
            cell(s["endpoint"].as_str().unwrap_or("")),
            cell(s["client_info"].as_str().unwrap_or("")),
            cell(s["revision"]["date"].as_str().unwrap_or("")),
            fell,
            cell(s["event_id_scheme"].as_str().unwrap_or("")),
            cell(s["resumption"]["verdict"].as_str().unwrap_or("")),
            d.findings_of(d.key(s)).count(),
        )?;
    }
    writeln!(out)
}

fn write_findings(out: &mut dyn Write, d: &Doc<'_>, s: &Value) -> io::Result<()> {
    let key = d.key(s);
    writeln!(out, "## Findings ({})\n", cell(key))?;
    writeln!(
        out,
        "| ID | severity | kind | time (UTC) | cause | what | Wireshark |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    for f in d.worst_first(key) {
        let causes: Vec<&str> = f["caused_by"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        writeln!(
            out,
            "| <a id=\"{anchor}\"></a>{id} | **{}** | `{}` | {} | {} | {} | {} |",
            cell(&f["severity"].as_str().unwrap_or("").to_uppercase()),
            code(f["kind"].as_str().unwrap_or("")),
            cell(&clock(f["time"].as_str().unwrap_or(""))),
            causes
                .iter()
                .map(|c| link(c))
                .collect::<Vec<_>>()
                .join(", "),
            cell(f["summary"].as_str().unwrap_or("")),
            d.display_filter(f)
                .map(|x| format!("`{}`", code(&x)))
                .unwrap_or_default(),
            id = cell(f["id"].as_str().unwrap_or("")),
            anchor = slug(f["id"].as_str().unwrap_or("")),
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

fn write_timeline(out: &mut dyn Write, d: &Doc<'_>, s: &Value) -> io::Result<()> {
    let key = d.key(s);
    let rows: Vec<&Value> = d.timeline_of(key).collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "### Timeline ({}), UTC\n", cell(key))?;
    writeln!(out, "| time | frame | | what |")?;
    writeln!(out, "|---|---|---|---|")?;
    for e in rows.iter().take(TIMELINE_ROWS) {
        let findings: Vec<String> = crate::doc::entry_findings(e)
            .into_iter()
            .map(link)
            .collect();
        let what = if findings.is_empty() {
            cell(e["summary"].as_str().unwrap_or(""))
        } else {
            format!(
                "{} {}",
                findings.join(", "),
                cell(e["summary"].as_str().unwrap_or(""))
            )
        };
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&clock(e["time"].as_str().unwrap_or(""))),
            e["frame"].as_u64().unwrap_or(0),
            cell(e["direction"].as_str().unwrap_or("")),
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
