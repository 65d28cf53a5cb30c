//! Every format names a finding by the same label: on every sample, the finding IDs of the
//! table, NDJSON, Markdown, HTML and `report` of the saved JSON are those of the JSON document,
//! each for the same kind, and the sessions they are in by the same keys.

#[path = "support/samples.rs"]
mod samples;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> String {
    let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn samples() -> Vec<String> {
    samples::paths()
}

/// `F3` → (kind, session key) of a JSON findings list.
fn of_json(findings: &[Value]) -> BTreeMap<String, (String, String)> {
    findings
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (s("id"), (s("kind"), s("session")))
        })
        .collect()
}

/// `F3` → kind, from lines where a label is followed, within a few words, by a kind.
fn of_text(
    text: &str,
    label_then_kind: &dyn Fn(&str) -> Option<(String, String)>,
) -> BTreeMap<String, String> {
    text.lines().filter_map(label_then_kind).collect()
}

fn table_line(line: &str) -> Option<(String, String)> {
    // A consequence is drawn under its cause after `↳`.
    let line = line.trim_start().trim_start_matches("↳ ");
    let mut words = line.split_whitespace();
    let id = words.next()?;
    if !(id.starts_with('F') && id[1..].chars().all(|c| c.is_ascii_digit()) && id.len() > 1) {
        return None;
    }
    let _severity = words.next()?;
    let kind = words.next()?;
    kind.chars()
        .all(|c| c.is_ascii_lowercase() || c == '_')
        .then(|| (id.to_string(), kind.to_string()))
}

fn markdown_line(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("| <a id=\"")?;
    let id = &rest[..rest.find('"')?];
    let kind = rest.split('`').nth(1)?;
    Some((id.to_string(), kind.to_string()))
}

fn html_rows(html: &str) -> BTreeMap<String, String> {
    html.split("<tr id=\"")
        .skip(1)
        .filter_map(|row| {
            let id = &row[..row.find('"')?];
            let kind = row.split("<code>").nth(1)?.split("</code>").next()?;
            id.starts_with('F')
                .then(|| (id.to_string(), kind.to_string()))
        })
        .collect()
}

fn check(
    file: &str,
    want: &BTreeMap<String, (String, String)>,
    format: &str,
    got: &BTreeMap<String, String>,
) {
    for (id, kind) in got {
        let Some((k, _)) = want.get(id) else {
            panic!("{file}: {format} names {id} ({kind}), which the JSON does not");
        };
        assert_eq!(kind, k, "{file}: {format} {id}");
    }
}

#[test]
fn labels_are_the_same_in_every_format() {
    let dir = std::env::temp_dir().join(format!("mcpf-labels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut compared = 0;
    for file in samples() {
        let doc: Value =
            serde_json::from_str(&run(&["analyze", "--format", "json", &file])).unwrap();
        let want = of_json(doc["findings"].as_array().unwrap());
        let ndjson: Vec<Value> = run(&["analyze", "--format", "ndjson", &file])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ndjson_findings: Vec<Value> = ndjson
            .iter()
            .filter(|r| r["type"] == "finding")
            .cloned()
            .collect();
        assert_eq!(of_json(&ndjson_findings), want, "{file}: ndjson");
        let sessions = |records: &mut dyn Iterator<Item = &Value>| -> Vec<(String, String)> {
            records
                .map(|s| {
                    let k = |x: &str| s[x].as_str().unwrap_or_default().to_string();
                    (k("key"), k("session_id"))
                })
                .collect()
        };
        assert_eq!(
            sessions(&mut ndjson.iter().filter(|r| r["type"] == "session")),
            sessions(&mut doc["sessions"].as_array().unwrap().iter()),
            "{file}: ndjson sessions"
        );
        let table = run(&["analyze", "--color", "never", &file]);
        let shown = of_text(&table, &table_line);
        let above_info = want
            .iter()
            .filter(|(id, _)| {
                doc["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["id"] == id.as_str() && f["severity"] != "info")
            })
            .count();
        assert!(
            shown.len() >= above_info.min(1),
            "{file}: table shows {shown:?}"
        );
        check(&file, &want, "table", &shown);
        // Every finding is in the table's tree, and in the saved report's.
        let every = |got: &BTreeMap<String, String>| got.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            every(&shown),
            want.keys().cloned().collect::<Vec<_>>(),
            "{file}: table"
        );
        check(
            &file,
            &want,
            "markdown",
            &of_text(
                &run(&["analyze", "--format", "markdown", &file]),
                &markdown_line,
            ),
        );
        check(
            &file,
            &want,
            "html",
            &html_rows(&run(&["analyze", "--format", "html", &file])),
        );
        let saved = dir
            .join(Path::new(&file).file_name().unwrap())
            .with_extension("json");
        std::fs::write(&saved, doc.to_string()).unwrap();
        let again = run(&["report", "--color", "never", saved.to_str().unwrap()]);
        let from_saved = of_text(&again, &table_line);
        check(&file, &want, "report", &from_saved);
        assert_eq!(every(&from_saved), every(&shown), "{file}: report");
        // The same blocks, under the same headings.
        let blocks = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.starts_with("INCIDENT ") || l.starts_with("FINDINGS ("))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(blocks(&again), blocks(&table), "{file}: report blocks");
        compared += want.len();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(compared > 100, "only {compared} findings compared");
}

#[test]
fn postmortem_formats_say_what_to_do_and_cannot_read_as_clean_without_mcp() {
    for format in ["markdown", "html"] {
        let seed = run(&[
            "analyze",
            "-f",
            format,
            "samples/seed-incident-client-leg.pcap",
        ]);
        assert!(
            seed.contains("What to do") && seed.contains("mcp-forensics explain sse_fallback"),
            "{format}: no WHAT TO DO"
        );
        let none = run(&["analyze", "-f", format, "samples/not-mcp.pcap"]);
        assert!(
            none.contains("No MCP session found in the inputs")
                && none.contains("not a clean result")
                && !none.contains("No finding above info"),
            "{format}: {none}"
        );
        let healthy = run(&["analyze", "-f", format, "samples/python-sdk-healthy.pcap"]);
        assert!(
            healthy.contains("No finding above info in the 1 session checked: S1"),
            "{format}: the sessions checked are named"
        );
    }
}

#[test]
fn the_streams_findings_name_are_said_once_in_words() {
    let table = run(&[
        "analyze",
        "--color",
        "never",
        "samples/seed-incident-client-leg.pcap",
    ]);
    let findings = &table[table.find("INCIDENT").unwrap()..table.find("TIMELINE").unwrap()];
    let legend: String = findings
        .split("streams: ")
        .nth(1)
        .expect("a legend of the streams")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for said in [
        "post:s3 is POST tools/call #7 reindex",
        "get:s4 is GET /mcp (fallback stream)",
        "get:s17 is GET /mcp Last-Event-ID: 41 (resume)",
    ] {
        assert!(legend.contains(said), "{said}: {legend}");
    }
}
