//! A report saved by `analyze --format json` or `--format ndjson`, read back and rendered
//! again without the capture (`mcp-forensics report FILE`): as the terminal report, as Markdown
//! or as HTML. The file is read once into a [`Document`]; NDJSON records are gathered into the
//! document they stand for.

use std::fmt;
use std::io::{self, Read, Write};

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use mcpf_detect::Severity;

use crate::analyze::{
    FindingText, Style, frames_text, write_finding, write_fix, write_session_table,
    write_timeline_row, write_verdict_line,
};
use crate::doc::Doc;
use crate::document::{Document, Finding, Input, Session, Summary, TimelineEntry, Tool};
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
pub fn read_saved(source: impl Read) -> Result<Document, String> {
    let mut source = std::io::BufReader::new(source);
    opens_an_object(&mut source)?;
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
    // Redacted as it is read, before Markdown or HTML escape its strings (`access\_key=…` is
    // no parameter to the redactor at standard output): a report written with --show-secrets
    // shows no more than one written without. Redaction keeps JSON valid: it replaces runs
    // of a string's characters that hold no quote or backslash.
    let bytes = crate::redact::Redactor::new(true).bytes(&bytes);
    let bytes = bytes.as_ref();
    // Which form the file is, told from its top level before anything is read into types.
    let (form, version) = match serde_json::from_slice::<Shape>(bytes) {
        Ok(top) if top.sessions => (Form::Document, top.schema_version),
        Ok(top) if top.kind.is_some() => records(bytes)?,
        Ok(_) => return Err("is JSON but not an mcp-forensics report (no sessions)".into()),
        Err(_) => records(bytes)?,
    };
    match version.as_ref().and_then(Value::as_u64) {
        Some(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "has schema_version {v}; this version of mcp-forensics reads {SCHEMA_VERSION}"
            ));
        }
        None => return Err("has no schema_version: not an mcp-forensics report".into()),
    }
    match form {
        Form::Document => {
            Document::from_json(bytes).map_err(|e| format!("does not read as a report: {e}"))
        }
        Form::Records(records) => gather(&records),
    }
}

/// Whether the first byte past leading white space opens a JSON object, as a report and each of
/// its NDJSON records do: anything else (`/dev/zero`, a capture given by mistake) is refused
/// before a byte more is read. Nothing is consumed.
fn opens_an_object(source: &mut impl std::io::BufRead) -> Result<(), String> {
    /// White space skipped at most before the first byte.
    const MAX_LEADING_SPACE: usize = 1 << 20;
    let mut skipped = 0;
    loop {
        let buf = source
            .fill_buf()
            .map_err(|e| format!("cannot read it: {e}"))?;
        let Some(&first) = buf.first() else {
            return Err("is empty: not an mcp-forensics report".into());
        };
        if first == b'{' {
            return Ok(());
        }
        if !first.is_ascii_whitespace() || skipped >= MAX_LEADING_SPACE {
            return Err("does not begin with '{': not a JSON report of mcp-forensics".into());
        }
        source.consume(1);
        skipped += 1;
    }
}

/// The two forms of a saved report.
enum Form<'a> {
    /// One JSON document (`--format json`).
    Document,
    /// NDJSON records (`--format ndjson`).
    Records(Vec<Record<'a>>),
}

/// What the top level of a JSON text is, read without building it: whether it is an object,
/// and the keys that tell a report document from an NDJSON record.
#[derive(Default)]
struct Shape {
    object: bool,
    /// It has `sessions`: a report document.
    sessions: bool,
    /// Its `type`, when it has one (an NDJSON record's).
    kind: Option<Value>,
    /// Its `schema_version`, when it has one, whatever its value.
    schema_version: Option<Value>,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shape, D::Error> {
        d.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut shape = Shape {
            object: true,
            ..Shape::default()
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "sessions" => {
                    shape.sessions = true;
                    map.next_value::<IgnoredAny>()?;
                }
                "type" => shape.kind = Some(map.next_value()?),
                "schema_version" => shape.schema_version = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(shape)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Shape::default())
    }

    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::default())
    }
}

/// What an NDJSON record adds to the document, by its `type`.
#[derive(Clone, Copy)]
enum RecordType {
    Input,
    Session,
    Finding,
    Timeline,
    /// With `--events`, the call profile, or a type a later release writes: nothing the
    /// renderers read (record types are added within a schema version, as keys are).
    Unread,
    Summary,
}

/// One NDJSON record: its line number (from 0), its type and its text.
type Record<'a> = (usize, RecordType, &'a [u8]);

/// The NDJSON records of a file, each line told by its `type`, and the schema version the first
/// record that names one names.
fn records(bytes: &[u8]) -> Result<(Form<'_>, Option<Value>), String> {
    let mut records = Vec::new();
    let mut version = None;
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let rec = match serde_json::from_slice::<Shape>(line) {
            Ok(rec) if rec.object => rec,
            _ => {
                return Err(format!(
                    "line {} is not a JSON object: neither a report document nor NDJSON records",
                    n + 1
                ));
            }
        };
        version = version.or(rec.schema_version);
        let kind = match rec.kind.as_ref().and_then(Value::as_str) {
            Some("input") => RecordType::Input,
            Some("session") => RecordType::Session,
            Some("finding") => RecordType::Finding,
            Some("timeline") => RecordType::Timeline,
            Some("summary") => RecordType::Summary,
            Some(_) => RecordType::Unread,
            None => {
                return Err(format!(
                    "line {}: not an mcp-forensics NDJSON record",
                    n + 1
                ));
            }
        };
        records.push((n, kind, line));
    }
    Ok((Form::Records(records), version))
}

/// The `summary` record: the document's summary and tool.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
struct SummaryRecord {
    summary: Summary,
    tool: Tool,
}

/// The document NDJSON records stand for: each record into its list, the last summary's
/// summary and tool.
fn gather(records: &[Record<'_>]) -> Result<Document, String> {
    fn read<'a, T: Deserialize<'a>>((n, _, line): &Record<'a>) -> Result<T, String> {
        serde_json::from_slice(line).map_err(|e| {
            format!(
                "line {}: does not read as an mcp-forensics NDJSON record: {}",
                n + 1,
                without_position(&e)
            )
        })
    }
    let mut doc = Document::default();
    for rec in records {
        match rec.1 {
            RecordType::Input => doc.inputs.push(read::<Input>(rec)?),
            RecordType::Session => doc.sessions.push(read::<Session>(rec)?),
            RecordType::Finding => doc.findings.push(read::<Finding>(rec)?),
            RecordType::Timeline => doc.timeline.push(read::<TimelineEntry>(rec)?),
            RecordType::Unread => {}
            RecordType::Summary => {
                let r: SummaryRecord = read(rec)?;
                doc.summary = r.summary;
                doc.tool = r.tool;
            }
        }
    }
    Ok(doc)
}

/// A JSON error without its `at line 1 column N`: the line is the record's, named otherwise.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&at) {
        Some(why) => format!("{why} (column {})", e.column()),
        None => text,
    }
}

/// The terminal report of a saved document: the verdict, the sessions, the findings worst
/// first, the timelines and what to do, fitted to the width.
pub fn write_saved_table(out: &mut dyn Write, doc: &Document, style: Style) -> io::Result<()> {
    let d = Doc::new(doc);
    writeln!(
        out,
        "{} {} (a saved report, rendered again)",
        terminal(doc.tool.name.as_deref().unwrap_or("mcp-forensics")),
        terminal(doc.tool.version.as_deref().unwrap_or("?"))
    )?;
    let labelled = doc.inputs.len() > 1;
    for (i, input) in doc.inputs.iter().enumerate() {
        let label = match labelled {
            true => format!("{} ", crate::input_label(i as u32)),
            false => String::new(),
        };
        let line = format!(
            "{label}{} ({}): {} packets or records, {} bytes",
            input.path, input.format, input.packets, input.bytes
        );
        writeln!(out, "{}", wrap(&terminal(&line), style.width, "", "  "))?;
    }
    for l in &doc.summary.limits {
        let line = format!("note: {}", terminal(l));
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
        write_verdict_line(
            out,
            &terminal(&v.session),
            v.severity,
            &terminal(&v.text),
            style,
        )?;
    }
    write_sessions(out, &d, style)?;
    // One block per session with findings, as the live report has them: for an incident (a
    // finding above info) the findings as a tree, then the timeline; for info findings only,
    // the findings.
    for s in d.sessions() {
        let Some(worst) = d.worst_first(&s.key).first().map(|f| f.rank()) else {
            continue;
        };
        let heading = crate::analyze::block_heading(&terminal(&s.key), worst, style);
        writeln!(out, "\n{heading}")?;
        write_findings(out, &d, s, style)?;
        if worst.at_least(Severity::Low) {
            write_timeline(out, &d, s, style)?;
        }
    }
    write_what_to_do(out, doc, style)
}

fn write_sessions(out: &mut dyn Write, d: &Doc<'_>, style: Style) -> io::Result<()> {
    writeln!(out, "\n{}", style.heading("SESSIONS"))?;
    let rows: Vec<Vec<String>> = d
        .sessions()
        .map(|s| {
            let text = |t: &str| terminal(t).into_owned();
            vec![
                text(&s.key),
                s.session_id.as_deref().map_or("—".into(), |i| {
                    terminal(&mcpf_mcp::model::short_id(i)).into_owned()
                }),
                format!("{} {}", text(&s.server), text(&s.endpoint)),
                text(&s.transport),
                text(s.revision.date.as_deref().unwrap_or("")),
                text(s.client_info.as_deref().unwrap_or("")),
                s.fell_back.as_ref().map_or("no".into(), |f| clock(&f.time)),
                text(&s.event_id_scheme),
                match s.resumption.verdict.as_deref().unwrap_or("") {
                    "unsafe" => "UNSAFE".into(),
                    "not_attempted" => "not tried".into(),
                    other => terminal(other).into_owned(),
                },
            ]
        })
        .collect();
    write_session_table(out, &rows, style, "the saved file has them")?;
    let several = d.inputs().count() > 1;
    for s in d.sessions() {
        let texts: Vec<(String, String)> = s
            .vantage_points
            .iter()
            .map(|v| {
                (
                    terminal(&v.server).into_owned(),
                    terminal(&v.observation).into_owned(),
                )
            })
            .collect();
        let points: Vec<crate::VantageText<'_>> = s
            .vantage_points
            .iter()
            .zip(&texts)
            .map(|(v, (server, observation))| crate::VantageText {
                input: u32::try_from(v.input).unwrap_or(u32::MAX),
                server,
                observation,
                streams: v.streams,
                events: v.events,
            })
            .collect();
        if let Some(line) = crate::vantage_line(&terminal(&s.key), &points, several) {
            writeln!(out, "{}", wrap(&line, style.width, " ", "   "))?;
        }
    }
    Ok(())
}

fn write_findings(out: &mut dyn Write, d: &Doc<'_>, s: &Session, style: Style) -> io::Result<()> {
    let key = &s.key;
    let mine = d.worst_first(key);
    let ids: Vec<&str> = mine.iter().map(|f| f.id.as_str()).collect();
    let id_width = ids.iter().map(|i| i.len()).max().unwrap_or(2);
    let nodes: Vec<crate::tree::Node<_>> = mine
        .iter()
        .enumerate()
        .map(|(i, f)| crate::tree::Node {
            severity: f.rank(),
            when: (f.time.as_str(), i),
            causes: f
                .caused_by
                .iter()
                .filter_map(|c| ids.iter().position(|id| id == c))
                .collect(),
        })
        .collect();
    let order = crate::tree::causal_order(&nodes);
    for placed in &order {
        let f = mine[placed.at];
        let summary = terminal(&f.summary).into_owned();
        let id = terminal(&f.id).into_owned();
        let kind = terminal(f.kind.name()).into_owned();
        let text = FindingText {
            id: &id,
            severity: f.rank(),
            kind: &kind,
            time: clock(&f.time),
            frames: frames_text(
                f.frame_refs
                    .iter()
                    .map(|r| (u32::try_from(r.input).unwrap_or(u32::MAX), r.frame)),
                d.inputs().count() > 1,
                &|i| d.unit(u64::from(i)),
            ),
            depth: placed.depth,
            also_follows: placed
                .also_follows
                .iter()
                .map(|&c| terminal(ids[c]).into_owned())
                .collect(),
            summary: &summary,
            note: f.confidence_note.as_deref(),
            seen: saved_seen_lines(f, d),
        };
        write_finding(out, &text, id_width, style)?;
    }
    // The streams in the order the tree names them, as the live report.
    let summaries: Vec<&str> = order
        .iter()
        .map(|placed| mine[placed.at].summary.as_str())
        .collect();
    let opened = |label: &str| {
        let own = d
            .timeline_of(key)
            .find(|e| {
                e.stream.as_deref() == Some(label)
                    && matches!(e.kind.as_str(), "request" | "resume")
            })
            .map(|e| e.summary.clone());
        own.or_else(|| {
            d.timeline_of(key)
                .filter(|e| e.kind == "request")
                .find_map(|e| {
                    let ids: Vec<String> = e.request_ids.iter().map(request_label).collect();
                    crate::analyze::opened_in_run(label, &e.summary, &ids)
                })
        })
    };
    if let Some(text) = crate::analyze::stream_legend(&summaries, &opened) {
        writeln!(out, "{}", wrap(&terminal(&text), style.width, " ", "   "))?;
    }
    Ok(())
}

fn write_timeline(out: &mut dyn Write, d: &Doc<'_>, s: &Session, style: Style) -> io::Result<()> {
    let key = &s.key;
    let rows: Vec<&TimelineEntry> = d.timeline_of(key).collect();
    if rows.is_empty() {
        return Ok(());
    }
    let date = s.start.get(..10).unwrap_or("");
    let title = format!("TIMELINE ({})", terminal(key));
    writeln!(out, "\n{}  {} UTC", style.heading(&title), terminal(date))?;
    for e in rows {
        let marker = match e.direction.as_str() {
            "▲" => format!("▲ {}", e.findings.join(",")),
            other => other.to_string(),
        };
        let mut time = clock(&e.time);
        if d.inputs().count() > 1 {
            time = format!("{time} {}", crate::input_label(e.input));
        }
        // The finding's words are in the tree above: its row names it.
        let text = match e.direction.as_str() {
            "▲" => {
                let named = e
                    .findings
                    .iter()
                    .filter_map(|id| d.findings_of(key).find(|f| &f.id == id))
                    .map(|f| (f.severity_name(), f.kind.name()));
                terminal(&crate::analyze::finding_row(named)).into_owned()
            }
            _ => terminal(&e.summary).into_owned(),
        };
        write_timeline_row(out, &time, &terminal(&marker), &text, style.width)?;
    }
    let r = &s.resumption;
    let reason = r
        .reason
        .as_deref()
        .map(|x| format!(" — {}", terminal(x)))
        .unwrap_or_default();
    let line = format!(
        "resumption: {}{reason}",
        terminal(r.verdict.as_deref().unwrap_or("unknown"))
    );
    writeln!(out, "{}", wrap(&line, style.width, " ", "   "))
}

/// The fix for the most severe finding (medium or above), the earliest of equals: the live
/// report's choice, the document's findings being in its order.
fn write_what_to_do(out: &mut dyn Write, doc: &Document, style: Style) -> io::Result<()> {
    let worst = doc
        .findings
        .iter()
        .filter_map(|f| {
            let sev = f.severity?;
            let kind = f.kind.known()?;
            sev.at_least(Severity::Medium).then_some((sev, kind))
        })
        .min_by_key(|(sev, _)| *sev);
    match worst {
        Some((_, kind)) => write_fix(out, kind, style),
        None => Ok(()),
    }
}

/// Where a finding of a saved report was seen, as the live report says it.
fn saved_seen_lines(f: &Finding, d: &Doc<'_>) -> Vec<String> {
    let several = d.inputs().count() > 1;
    let input = |i: u64| u32::try_from(i).unwrap_or(u32::MAX);
    let own = d.sessions().find(|s| s.key == f.session);
    let at = f.vantage.as_ref().and_then(|v| {
        let same = own.is_none_or(|s| s.server == v.server);
        (!same).then(|| crate::seen_at_text(input(v.input), &terminal(&v.server), None, several))
    });
    let also = f.seen_at.iter().map(|x| {
        let frames = x.frame_refs.iter().map(|r| (input(r.input), r.frame));
        (
            crate::seen_at_text(
                input(x.input),
                &terminal(&x.server),
                Some(&terminal(&x.observation)),
                several,
            ),
            frames_text(frames, several, &|i| d.unit(u64::from(i))),
        )
    });
    crate::analyze::seen_lines(at, also)
}

/// A request ID of a saved report as the live report labels it: `7`, `"7"`, or the text of a
/// number JSON's doubles cannot give back (`{"number": "…"}`).
fn request_label(id: &serde_json::Value) -> String {
    match id.get("number").and_then(serde_json::Value::as_str) {
        Some(text) => text.to_string(),
        None => id.to_string(),
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
        assert_eq!(d.sessions[0].key, "S1");
        assert_eq!(d.findings[0].id, "F1");
        assert_eq!(d.tool.name.as_deref(), Some("mcp-forensics"));
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
                .contains("does not begin with '{'")
        );
        assert!(read_saved(&b""[..]).unwrap_err().contains("is empty"));
        // White space before the object is fine; a second line that is not a record is named.
        assert!(
            read_saved(&b"\n {\"type\":\"x\"}\nGET /\n"[..])
                .unwrap_err()
                .contains("line")
        );
    }

    /// Fields this build does not know, or that an earlier 1.x report lacks, are no error; an
    /// evidence that does not read as its kind's renders without it; a value of the wrong type
    /// is refused, naming where.
    #[test]
    fn a_saved_report_reads_what_it_can_and_names_what_it_cannot() {
        let doc = br#"{"schema_version":1,"later":{"x":1},"sessions":[{"key":"S1","later":2}],
            "findings":[{"id":"F1","session":"S1","kind":"unanswered_request","severity":"high",
            "evidence":{"request_id":null}},{"id":"F2","session":"S1","kind":"later_kind",
            "severity":"critical"}]}"#;
        let d = read_saved(&doc[..]).unwrap();
        assert_eq!(d.findings[0].evidence, None);
        let mut out = Vec::new();
        let style = Style {
            color: false,
            width: 100,
        };
        write_saved_table(&mut out, &d, style).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("(F2 later_kind)\n"), "{text}");
        let wrong = br#"{"schema_version":1,"sessions":[{"key":5}]}"#;
        let e = read_saved(&wrong[..]).unwrap_err();
        assert!(
            e.starts_with("does not read as a report: invalid type"),
            "{e}"
        );
        let wrong = "{\"type\":\"session\",\"schema_version\":1,\"key\":\"S1\"}\n\
                     {\"type\":\"finding\",\"schema_version\":1,\"frames\":\"1\"}\n";
        let e = read_saved(wrong.as_bytes()).unwrap_err();
        assert!(e.starts_with("line 2: does not read as"), "{e}");
        assert!(e.ends_with("expected a sequence (column 49)"), "{e}");
    }
}
