//! A report saved by `analyze --format json` or `--format ndjson`, read back and rendered
//! again without the capture (`mcp-forensics report FILE`): as the terminal report, as Markdown
//! or as HTML. NDJSON records are gathered into the document they stand for.

use std::io::{self, Read, Write};

use serde_json::{Map, Value};

use mcpf_detect::{FindingKind, Severity};

use crate::analyze::{
    FindingText, Style, frames_text, write_finding, write_fix, write_session_table,
    write_timeline_row, write_verdict_line,
};
use crate::doc::Doc;
use crate::markdown::clock;
use crate::sanitize::terminal;
use crate::table::wrap;

/// The schema version this build reads.
const SCHEMA_VERSION: u64 = 1;
/// A saved report larger than this is refused: it is read whole (a report is a few hundred
/// bytes per session and finding; `--events` makes it larger).
pub const MAX_SAVED_BYTES: u64 = 1 << 30;

/// Reads a saved report: a JSON document, or NDJSON records (then gathered into one). The error
/// says what is wrong with the file (the caller names it).
pub fn read_saved(source: impl Read) -> Result<Value, String> {
    let mut bytes = Vec::new();
    source
        .take(MAX_SAVED_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_SAVED_BYTES {
        return Err(format!(
            "larger than {} GiB: not read (a report is read whole)",
            MAX_SAVED_BYTES >> 30
        ));
    }
    let doc = match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.get("sessions").is_some() => v,
        Ok(v) if v.get("type").is_some() => gather(&bytes)?,
        Ok(_) => return Err("is JSON but not an mcp-forensics report (no sessions)".into()),
        Err(_) => gather(&bytes)?,
    };
    match doc["schema_version"].as_u64() {
        Some(SCHEMA_VERSION) => Ok(doc),
        Some(v) => Err(format!(
            "has schema_version {v}; this version of mcp-forensics reads {SCHEMA_VERSION}"
        )),
        None => Err("has no schema_version: not an mcp-forensics report".into()),
    }
}

/// The document NDJSON records stand for: each record by its `type` into its list.
fn gather(bytes: &[u8]) -> Result<Value, String> {
    let mut doc = Map::new();
    for key in ["inputs", "sessions", "findings", "timeline", "events"] {
        doc.insert(key.into(), Value::Array(Vec::new()));
    }
    let mut version = None;
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(Value::Object(mut rec)) = serde_json::from_slice::<Value>(line) else {
            return Err(format!(
                "line {} is not a JSON object: neither a report document nor NDJSON records",
                n + 1
            ));
        };
        let kind = rec.remove("type");
        version = version.or(rec.remove("schema_version"));
        let list = match kind.as_ref().and_then(Value::as_str) {
            Some("input") => "inputs",
            Some("session") => "sessions",
            Some("finding") => "findings",
            Some("timeline") => "timeline",
            Some("event") => "events",
            Some("summary") => {
                doc.insert("summary".into(), rec.remove("summary").unwrap_or_default());
                doc.insert("tool".into(), rec.remove("tool").unwrap_or_default());
                continue;
            }
            _ => {
                return Err(format!(
                    "line {}: not an mcp-forensics NDJSON record",
                    n + 1
                ));
            }
        };
        if let Some(Value::Array(v)) = doc.get_mut(list) {
            v.push(Value::Object(rec));
        }
    }
    doc.insert("schema_version".into(), version.unwrap_or(Value::Null));
    Ok(Value::Object(doc))
}

/// The terminal report of a saved document: the verdict, the sessions, the findings worst
/// first, the timelines and what to do, fitted to the width.
pub fn write_saved_table(out: &mut dyn Write, doc: &Value, style: Style) -> io::Result<()> {
    let d = Doc::new(doc);
    let tool = &doc["tool"];
    writeln!(
        out,
        "{} {} (a saved report, rendered again)",
        terminal(tool["name"].as_str().unwrap_or("mcp-forensics")),
        terminal(tool["version"].as_str().unwrap_or("?"))
    )?;
    for input in doc["inputs"].as_array().into_iter().flatten() {
        let line = format!(
            "{} ({}): {} packets or records, {} bytes",
            input["path"].as_str().unwrap_or("?"),
            input["format"].as_str().unwrap_or("?"),
            input["packets"],
            input["bytes"]
        );
        writeln!(out, "{}", wrap(&terminal(&line), style.width, "", "  "))?;
    }
    for l in doc["summary"]["limits"].as_array().into_iter().flatten() {
        let line = format!("note: {}", terminal(l.as_str().unwrap_or("")));
        writeln!(out, "{}", wrap(&line, style.width, "  ", "    "))?;
    }
    writeln!(out, "\n{}", style.heading("VERDICT"))?;
    let verdicts = d.verdicts();
    if verdicts.is_empty() {
        writeln!(
            out,
            " no finding above info in {} sessions",
            d.sessions().count()
        )?;
    }
    for v in &verdicts {
        let sev = Severity::parse(&v.severity).unwrap_or(Severity::Info);
        write_verdict_line(out, &terminal(&v.session), sev, &terminal(&v.text), style)?;
    }
    write_sessions(out, &d, style)?;
    let shown = d.sessions_with_findings();
    for s in &shown {
        write_findings(out, &d, s, style)?;
    }
    for s in &shown {
        write_timeline(out, &d, s, style)?;
    }
    write_what_to_do(out, doc, style)
}

fn write_sessions(out: &mut dyn Write, d: &Doc<'_>, style: Style) -> io::Result<()> {
    writeln!(out, "\n{}", style.heading("SESSIONS"))?;
    let rows: Vec<Vec<String>> = d
        .sessions()
        .map(|s| {
            let text = |k: &str| terminal(s[k].as_str().unwrap_or("")).into_owned();
            vec![
                text("key"),
                s["session_id"].as_str().map_or("—".into(), |i| {
                    terminal(&mcpf_mcp::model::short_id(i)).into_owned()
                }),
                format!("{} {}", text("server"), text("endpoint")),
                text("transport"),
                terminal(s["revision"]["date"].as_str().unwrap_or("")).into_owned(),
                text("client_info"),
                s["fell_back"]["time"].as_str().map_or("no".into(), clock),
                text("event_id_scheme"),
                match s["resumption"]["verdict"].as_str().unwrap_or("") {
                    "unsafe" => "UNSAFE".into(),
                    "not_attempted" => "not tried".into(),
                    other => terminal(other).into_owned(),
                },
            ]
        })
        .collect();
    write_session_table(out, &rows, style, "the saved file has them")
}

fn write_findings(out: &mut dyn Write, d: &Doc<'_>, s: &Value, style: Style) -> io::Result<()> {
    let key = d.key(s);
    let mine = d.worst_first(key);
    writeln!(
        out,
        "\n{}  worst first; ← its cause",
        style.heading(&format!("FINDINGS ({})", terminal(key)))
    )?;
    let ids: Vec<&str> = mine.iter().filter_map(|f| f["id"].as_str()).collect();
    let id_width = ids.iter().map(|i| i.len()).max().unwrap_or(2);
    for f in &mine {
        let causes = f["caused_by"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|c| ids.contains(c))
            .map(|c| terminal(c).into_owned())
            .collect();
        let summary = terminal(f["summary"].as_str().unwrap_or("")).into_owned();
        let id = terminal(f["id"].as_str().unwrap_or("")).into_owned();
        let kind = terminal(f["kind"].as_str().unwrap_or("")).into_owned();
        let text = FindingText {
            id: &id,
            severity: Severity::parse(f["severity"].as_str().unwrap_or(""))
                .unwrap_or(Severity::Info),
            kind: &kind,
            time: clock(f["time"].as_str().unwrap_or("")),
            frames: frames_text(
                f["frames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64),
            ),
            causes,
            summary: &summary,
            note: f["confidence_note"].as_str(),
        };
        write_finding(out, &text, id_width, style)?;
    }
    Ok(())
}

fn write_timeline(out: &mut dyn Write, d: &Doc<'_>, s: &Value, style: Style) -> io::Result<()> {
    let key = d.key(s);
    let rows: Vec<&Value> = d.timeline_of(key).collect();
    if rows.is_empty() {
        return Ok(());
    }
    let date = s["start"].as_str().and_then(|t| t.get(..10)).unwrap_or("");
    let title = format!("TIMELINE ({})", terminal(key));
    writeln!(out, "\n{}  {} UTC", style.heading(&title), terminal(date))?;
    for e in rows {
        let marker = match e["direction"].as_str().unwrap_or("") {
            "▲" => format!("▲ {}", crate::doc::entry_findings(e).join(",")),
            other => other.to_string(),
        };
        let time = clock(e["time"].as_str().unwrap_or(""));
        let text = terminal(e["summary"].as_str().unwrap_or("")).into_owned();
        write_timeline_row(out, &time, &terminal(&marker), &text, style.width)?;
    }
    let r = &s["resumption"];
    let reason = r["reason"]
        .as_str()
        .map(|x| format!(" — {}", terminal(x)))
        .unwrap_or_default();
    let line = format!(
        "resumption: {}{reason}",
        terminal(r["verdict"].as_str().unwrap_or("unknown"))
    );
    writeln!(out, "{}", wrap(&line, style.width, " ", "   "))
}

/// The fix for the most severe finding (medium or above), the earliest of equals: the live
/// report's choice, the document's findings being in its order.
fn write_what_to_do(out: &mut dyn Write, doc: &Value, style: Style) -> io::Result<()> {
    let worst = doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let sev = Severity::parse(f["severity"].as_str()?)?;
            let kind = FindingKind::from_name(f["kind"].as_str()?)?;
            sev.at_least(Severity::Medium).then_some((sev, kind))
        })
        .min_by_key(|(sev, _)| *sev);
    match worst {
        Some((_, kind)) => write_fix(out, kind, style),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_back_from_json_or_ndjson_and_nothing_else() {
        let doc = br#"{"schema_version":1,"sessions":[],"findings":[]}"#;
        assert!(read_saved(&doc[..]).is_ok());
        let lines = concat!(
            r#"{"type":"session","schema_version":1,"key":"S1"}"#,
            "\n",
            r#"{"type":"finding","schema_version":1,"id":"F1","session":"S1"}"#,
            "\n",
            r#"{"type":"summary","schema_version":1,"summary":{"sessions":1},"tool":{"name":"mcp-forensics"}}"#,
            "\n"
        );
        let d = read_saved(lines.as_bytes()).unwrap();
        assert_eq!(d["sessions"][0]["key"], "S1");
        assert_eq!(d["findings"][0]["id"], "F1");
        assert_eq!(d["summary"]["sessions"], 1);
        let later = br#"{"schema_version":2,"sessions":[]}"#;
        assert!(
            read_saved(&later[..])
                .unwrap_err()
                .contains("schema_version 2")
        );
        assert!(
            read_saved(&b"{\"log\":\"x\"}"[..])
                .unwrap_err()
                .contains("not an mcp-forensics report")
        );
        assert!(
            read_saved(&b"GET / HTTP/1.1\n"[..])
                .unwrap_err()
                .contains("line 1")
        );
    }
}
