//! The JSON report against its documented schema, `docs/report.schema.json`.
//!
//! `analyze --format json --events` runs on every committed capture under `samples/` (pcap and
//! pcapng), `--format ndjson --events` on the seed incident, and each output is validated with a
//! small JSON Schema validator written here for exactly the subset the schema uses: `type`
//! (string or array), `properties`, `required`, `additionalProperties` (boolean), `items`,
//! `enum`, `const`, `$defs` with local `$ref`, and `oneOf`. Annotations (`$schema`, `title`,
//! `description`) are ignored; any other keyword is an error, so the schema cannot silently grow
//! beyond what is checked. Negative tests prove the validator rejects broken documents, and the
//! schema's finding kinds are compared with what `mcp-forensics explain` lists.

use std::collections::BTreeSet;
use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The validator
// ---------------------------------------------------------------------------------------------

const ANNOTATIONS: &[&str] = &["$schema", "title", "description"];
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "string", "number", "integer",
];

struct Validator<'a> {
    root: &'a Value,
}

impl<'a> Validator<'a> {
    fn new(root: &'a Value) -> Self {
        Validator { root }
    }

    /// Resolves a local reference `#/a/b` (JSON Pointer, with `~0` and `~1` escapes).
    fn resolve(&self, reference: &str) -> Result<&'a Value, String> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| format!("only local references are supported: {reference}"))?;
        if pointer.is_empty() {
            return Ok(self.root);
        }
        let mut cur = self.root;
        for token in pointer
            .strip_prefix('/')
            .ok_or_else(|| format!("bad reference {reference}"))?
            .split('/')
        {
            let token = token.replace("~1", "/").replace("~0", "~");
            cur = cur
                .get(token.as_str())
                .ok_or_else(|| format!("unresolvable reference {reference}"))?;
        }
        Ok(cur)
    }

    /// Errors of `instance` against the whole schema.
    fn validate(&self, instance: &Value) -> Vec<String> {
        let mut errs = Vec::new();
        self.check(self.root, instance, "$", &mut errs, 0);
        errs
    }

    /// Errors of `instance` against the schema at a local reference (`#/$defs/event`).
    fn validate_ref(&self, reference: &str, instance: &Value, path: &str) -> Vec<String> {
        let mut errs = Vec::new();
        match self.resolve(reference) {
            Ok(s) => self.check(s, instance, path, &mut errs, 0),
            Err(e) => errs.push(format!("{path}: {e}")),
        }
        errs
    }

    fn check(
        &self,
        schema: &Value,
        inst: &Value,
        path: &str,
        errs: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 64 {
            errs.push(format!(
                "{path}: $ref nesting too deep (a reference cycle?)"
            ));
            return;
        }
        let Some(obj) = schema.as_object() else {
            errs.push(format!(
                "{path}: the schema here is not an object: {schema}"
            ));
            return;
        };
        for (key, val) in obj {
            match key.as_str() {
                "$ref" => match val.as_str().map(|r| self.resolve(r)) {
                    Some(Ok(target)) => self.check(target, inst, path, errs, depth + 1),
                    Some(Err(e)) => errs.push(format!("{path}: {e}")),
                    None => errs.push(format!("{path}: $ref is not a string")),
                },
                "type" => {
                    let names: Vec<&str> = match val {
                        Value::String(s) => vec![s.as_str()],
                        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                        _ => {
                            errs.push(format!("{path}: schema type is neither string nor array"));
                            continue;
                        }
                    };
                    if let Some(bad) = names.iter().find(|n| !TYPES.contains(n)) {
                        errs.push(format!("{path}: unknown type name {bad} in the schema"));
                        continue;
                    }
                    if !names.iter().any(|n| type_matches(n, inst)) {
                        errs.push(format!(
                            "{path}: expected {}, found {} ({})",
                            names.join(" or "),
                            type_name(inst),
                            short(inst)
                        ));
                    }
                }
                "enum" => {
                    let Some(options) = val.as_array() else {
                        errs.push(format!("{path}: schema enum is not an array"));
                        continue;
                    };
                    if !options.iter().any(|o| json_eq(o, inst)) {
                        errs.push(format!(
                            "{path}: {} is not one of {}",
                            short(inst),
                            Value::Array(options.clone())
                        ));
                    }
                }
                "const" => {
                    if !json_eq(val, inst) {
                        errs.push(format!("{path}: expected {val}, found {}", short(inst)));
                    }
                }
                "properties" => {
                    let (Some(props), Some(o)) = (val.as_object(), inst.as_object()) else {
                        if !val.is_object() {
                            errs.push(format!("{path}: schema properties is not an object"));
                        }
                        continue;
                    };
                    for (name, sub) in props {
                        if let Some(v) = o.get(name) {
                            self.check(sub, v, &format!("{path}.{name}"), errs, depth);
                        }
                    }
                }
                "required" => {
                    let Some(names) = val.as_array() else {
                        errs.push(format!("{path}: schema required is not an array"));
                        continue;
                    };
                    if let Some(o) = inst.as_object() {
                        for n in names.iter().filter_map(Value::as_str) {
                            if !o.contains_key(n) {
                                errs.push(format!("{path}: required key {n:?} is missing"));
                            }
                        }
                    }
                }
                "additionalProperties" => match val {
                    Value::Bool(true) => {}
                    Value::Bool(false) => {
                        if let Some(o) = inst.as_object() {
                            let known = obj.get("properties").and_then(Value::as_object);
                            for k in o.keys() {
                                if !known.is_some_and(|p| p.contains_key(k)) {
                                    errs.push(format!("{path}: key {k:?} is not in the schema"));
                                }
                            }
                        }
                    }
                    _ => errs.push(format!(
                        "{path}: only boolean additionalProperties is supported"
                    )),
                },
                "items" => {
                    if let Some(a) = inst.as_array() {
                        for (i, v) in a.iter().enumerate() {
                            self.check(val, v, &format!("{path}[{i}]"), errs, depth);
                        }
                    }
                }
                "oneOf" => {
                    let Some(branches) = val.as_array() else {
                        errs.push(format!("{path}: schema oneOf is not an array"));
                        continue;
                    };
                    let results: Vec<Vec<String>> = branches
                        .iter()
                        .map(|b| {
                            let mut e = Vec::new();
                            self.check(b, inst, path, &mut e, depth);
                            e
                        })
                        .collect();
                    let passing = results.iter().filter(|e| e.is_empty()).count();
                    if passing == 0 {
                        // Report the branch that came closest: usually the one selected by a
                        // `const` discriminator, failing on what it describes.
                        let best = results.iter().min_by_key(|e| e.len()).cloned();
                        errs.push(format!("{path}: matches no branch of oneOf"));
                        errs.extend(
                            best.unwrap_or_default()
                                .into_iter()
                                .map(|e| format!("  {e}")),
                        );
                    } else if passing > 1 {
                        errs.push(format!(
                            "{path}: matches {passing} branches of oneOf, not one"
                        ));
                    }
                }
                "$defs" => {}
                k if ANNOTATIONS.contains(&k) => {}
                other => errs.push(format!("{path}: unsupported schema keyword {other:?}")),
            }
        }
    }
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        // JSON Schema: any number with a zero fractional part.
        "integer" => {
            v.is_i64()
                || v.is_u64()
                || v.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Equality as JSON Schema defines it: numbers by value (1 equals 1.0).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// Structural problems of a schema: keywords outside the subset, malformed keyword values,
/// references that do not resolve, `required` keys the `properties` of a closed object do not
/// describe.
fn schema_problems(v: &Validator<'_>, schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        out.push(format!("{path}: a schema must be an object"));
        return;
    };
    for (key, val) in obj {
        let here = format!("{path}/{key}");
        match key.as_str() {
            "type" => {
                let names: Vec<&Value> = match val {
                    Value::Array(a) => a.iter().collect(),
                    other => vec![other],
                };
                for n in names {
                    if !n.as_str().is_some_and(|n| TYPES.contains(&n)) {
                        out.push(format!("{here}: bad type {n}"));
                    }
                }
            }
            "properties" | "$defs" => match val.as_object() {
                Some(m) => {
                    for (name, sub) in m {
                        schema_problems(v, sub, &format!("{here}/{name}"), out);
                    }
                }
                None => out.push(format!("{here}: must be an object")),
            },
            "required" => {
                if !val
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string))
                {
                    out.push(format!("{here}: must be an array of strings"));
                }
            }
            "additionalProperties" => {
                if !val.is_boolean() {
                    out.push(format!("{here}: must be a boolean in this subset"));
                }
            }
            "items" => schema_problems(v, val, &here, out),
            "enum" => {
                if val.as_array().is_none_or(|a| a.is_empty()) {
                    out.push(format!("{here}: must be a non-empty array"));
                }
            }
            "const" => {}
            "$ref" => match val.as_str() {
                Some(r) if r.starts_with("#/") => {
                    if let Err(e) = v.resolve(r) {
                        out.push(format!("{here}: {e}"));
                    }
                }
                _ => out.push(format!("{here}: must be a local reference #/...")),
            },
            "oneOf" => match val.as_array() {
                Some(a) if !a.is_empty() => {
                    for (i, b) in a.iter().enumerate() {
                        schema_problems(v, b, &format!("{here}/{i}"), out);
                    }
                }
                _ => out.push(format!("{here}: must be a non-empty array")),
            },
            k if ANNOTATIONS.contains(&k) => {}
            other => out.push(format!(
                "{here}: keyword {other:?} is outside the supported subset"
            )),
        }
    }
    if obj.get("additionalProperties") == Some(&Value::Bool(false)) {
        let props = obj.get("properties").and_then(Value::as_object);
        for r in obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !props.is_some_and(|p| p.contains_key(r)) {
                out.push(format!(
                    "{path}: required {r:?} is not among its properties"
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------------

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn schema() -> Value {
    let path = root().join("docs/report.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The committed captures, as paths relative to the package root (sorted).
fn sample_captures() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join("samples"))
        .expect("samples/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pcap") || n.ends_with(".pcapng"))
        .map(|n| format!("samples/{n}"))
        .collect();
    out.sort();
    out
}

/// Runs the binary from the package root; returns stdout, stderr and the exit code.
fn run(args: &[&str]) -> (String, String, i32) {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .current_dir(root())
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// `analyze --format json --events` on inputs. Exit 0 or 1 (findings), or 5 when the capture
/// holds no MCP session (http-basic.pcap): the document is printed in every case.
fn analyze_json(inputs: &[&str]) -> Value {
    let mut args = vec!["analyze", "--format", "json", "--events"];
    args.extend_from_slice(inputs);
    let (stdout, stderr, code) = run(&args);
    assert!(
        [0, 1, 5].contains(&code),
        "analyze {inputs:?} exited {code}: {stderr}"
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("analyze {inputs:?} printed no JSON document ({e}): {stderr}"))
}

// ---------------------------------------------------------------------------------------------
// Checks the subset cannot express
// ---------------------------------------------------------------------------------------------

/// `2026-11-30T04:36:05.787761Z`: RFC 3339, UTC, microseconds.
fn is_report_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.into_iter().all(|i| b[i].is_ascii_digit());
    b.len() == 27
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..26)
        && b[26] == b'Z'
}

/// Cross-references, time formats, 1-based frames: the stability rules of the documentation.
fn semantic_problems(doc: &Value) -> Vec<String> {
    let mut p = Vec::new();
    let inputs = doc["inputs"].as_array().map(Vec::len).unwrap_or(0);
    let sessions: BTreeSet<&str> = doc["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["key"].as_str())
        .collect();
    let findings: BTreeSet<&str> = doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["id"].as_str())
        .collect();
    let mut time = |what: String, v: &Value| {
        if let Some(s) = v.as_str()
            && !is_report_time(s)
        {
            p.push(format!(
                "{what}: {s:?} is not RFC 3339 UTC with microseconds"
            ));
        }
    };
    for (i, s) in doc["sessions"].as_array().into_iter().flatten().enumerate() {
        for k in ["start", "end", "deleted"] {
            time(format!("sessions[{i}].{k}"), &s[k]);
        }
        time(
            format!("sessions[{i}].fell_back.time"),
            &s["fell_back"]["time"],
        );
        for (j, st) in s["streams"].as_array().into_iter().flatten().enumerate() {
            for k in ["opened", "ended"] {
                time(format!("sessions[{i}].streams[{j}].{k}"), &st[k]);
            }
        }
    }
    for (i, f) in doc["findings"].as_array().into_iter().flatten().enumerate() {
        time(format!("findings[{i}].time"), &f["time"]);
    }
    for (i, e) in doc["timeline"].as_array().into_iter().flatten().enumerate() {
        time(format!("timeline[{i}].time"), &e["time"]);
    }
    for (i, e) in doc["events"].as_array().into_iter().flatten().enumerate() {
        time(format!("events[{i}].time"), &e["time"]);
    }

    let frame_ok = |v: &Value| v.as_u64().is_some_and(|n| n >= 1);
    let input_ok = |v: &Value| v.as_u64().is_some_and(|n| (n as usize) < inputs);
    for (i, s) in doc["sessions"].as_array().into_iter().flatten().enumerate() {
        for other in s["same_session_as"].as_array().into_iter().flatten() {
            if !other.as_str().is_some_and(|o| sessions.contains(o)) {
                p.push(format!(
                    "sessions[{i}].same_session_as names unknown {other}"
                ));
            }
        }
        for (j, st) in s["streams"].as_array().into_iter().flatten().enumerate() {
            if !input_ok(&st["input"]) || !frame_ok(&st["opened_frame"]) {
                p.push(format!(
                    "sessions[{i}].streams[{j}]: bad input or opened_frame"
                ));
            }
            if !st["ended_frame"].is_null() && !frame_ok(&st["ended_frame"]) {
                p.push(format!(
                    "sessions[{i}].streams[{j}]: ended_frame is not 1-based"
                ));
            }
        }
    }
    for (i, f) in doc["findings"].as_array().into_iter().flatten().enumerate() {
        if !f["session"].as_str().is_some_and(|s| sessions.contains(s)) {
            p.push(format!("findings[{i}].session is not a reported session"));
        }
        for c in f["caused_by"].as_array().into_iter().flatten() {
            if !c.as_str().is_some_and(|c| findings.contains(c)) {
                p.push(format!("findings[{i}].caused_by names unknown {c}"));
            }
        }
        let frames = f["frames"].as_array().cloned().unwrap_or_default();
        let refs = f["frame_refs"].as_array().cloned().unwrap_or_default();
        if frames.len() != refs.len() || frames.iter().zip(&refs).any(|(n, r)| *n != r["frame"]) {
            p.push(format!("findings[{i}]: frames and frame_refs disagree"));
        }
        if refs
            .iter()
            .any(|r| !input_ok(&r["input"]) || !frame_ok(&r["frame"]))
        {
            p.push(format!(
                "findings[{i}].frame_refs: bad input index or frame"
            ));
        }
    }
    for (i, e) in doc["timeline"].as_array().into_iter().flatten().enumerate() {
        if !e["session"].as_str().is_some_and(|s| sessions.contains(s)) {
            p.push(format!("timeline[{i}].session is not a reported session"));
        }
        if !input_ok(&e["input"])
            || !frame_ok(&e["frame"])
            || !e["frames"]
                .as_array()
                .is_some_and(|a| a.iter().all(frame_ok))
        {
            p.push(format!("timeline[{i}]: bad input index or frame"));
        }
        if let Some(ids) = e["event_ids"].as_array()
            && ids.len() != 2
        {
            p.push(format!("timeline[{i}].event_ids is not [first, last]"));
        }
        for f in e["findings"].as_array().into_iter().flatten() {
            if !f.as_str().is_some_and(|f| findings.contains(f)) {
                p.push(format!("timeline[{i}].findings names unknown {f}"));
            }
        }
    }
    for (i, e) in doc["events"].as_array().into_iter().flatten().enumerate() {
        if !e["session"].as_str().is_some_and(|s| sessions.contains(s)) {
            p.push(format!("events[{i}].session is not a reported session"));
        }
        if !input_ok(&e["input"]) || !frame_ok(&e["frame"]) {
            p.push(format!("events[{i}]: bad input index or frame"));
        }
    }
    p
}

/// Schema errors and broken stability rules of a document.
fn problems(doc: &Value) -> Vec<String> {
    let schema = schema();
    let mut errs = Validator::new(&schema).validate(doc);
    errs.extend(semantic_problems(doc));
    errs
}

fn report(what: &str, errs: &[String]) -> String {
    format!(
        "{what} does not match docs/report.schema.json ({} problems):\n{}",
        errs.len(),
        errs.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    )
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn schema_stays_within_the_validated_subset() {
    let schema = schema();
    let v = Validator::new(&schema);
    let mut problems = Vec::new();
    schema_problems(&v, &schema, "#", &mut problems);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every finding kind has exactly one oneOf branch selecting its evidence.
    let kinds = schema_kinds(&schema);
    let branches = finding_branches(&schema);
    let branch_kinds: BTreeSet<String> = branches.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(
        branches.len(),
        branch_kinds.len(),
        "a kind has two oneOf branches"
    );
    assert_eq!(
        kinds, branch_kinds,
        "kind enum and finding oneOf branches differ"
    );
}

#[test]
fn the_schema_names_every_anomaly_kind() {
    let schema = schema();
    let listed: Vec<&str> = schema["$defs"]["anomaly_kind"]["enum"]
        .as_array()
        .expect("$defs.anomaly_kind.enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let kinds: Vec<&str> = mcpf_model::AnomalyKind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    assert_eq!(
        listed, kinds,
        "$defs.anomaly_kind and AnomalyKind::ALL differ"
    );
}

#[test]
fn every_sample_report_matches_the_schema() {
    let samples = sample_captures();
    assert!(
        samples.len() >= 5,
        "expected the committed captures under samples/, found {samples:?}"
    );
    let mut failures = Vec::new();
    let mut kinds_seen = BTreeSet::new();
    for sample in &samples {
        let doc = analyze_json(&[sample]);
        assert!(
            doc["events"].is_array(),
            "{sample}: --events added no events array"
        );
        for f in doc["findings"].as_array().into_iter().flatten() {
            kinds_seen.insert(f["kind"].as_str().unwrap_or("").to_string());
        }
        let errs = problems(&doc);
        if !errs.is_empty() {
            failures.push(report(sample, &errs));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The samples exercise the incident's chain at least.
    for k in [
        "sse_fallback",
        "unsafe_resumption_after_fallback",
        "cross_namespace_replay",
        "duplicate_response",
        "skipped_events",
        "unanswered_request",
    ] {
        assert!(
            kinds_seen.contains(k),
            "no sample produced {k}: {kinds_seen:?}"
        );
    }
}

#[test]
fn a_two_leg_report_matches_the_schema() {
    let doc = analyze_json(&[
        "samples/seed-incident-client-leg.pcap",
        "samples/seed-incident-server-leg.pcap",
    ]);
    assert_eq!(doc["inputs"].as_array().map(Vec::len), Some(2));
    let errs = problems(&doc);
    assert!(
        errs.is_empty(),
        "{}",
        report("the seed incident's two legs", &errs)
    );
}

#[test]
fn ndjson_records_match_the_schema() {
    for sample in [
        "samples/seed-incident-client-leg.pcap",
        "samples/concurrent-nginx-client-leg.pcap",
    ] {
        ndjson_matches_the_document(sample);
    }
}

/// NDJSON is written as sessions end: each session's record, its findings, its timeline and its
/// events together; then the inputs and the summary. Every record validates, the records are
/// those of the document (findings numbered in the order written), and every finding a record
/// names was written.
fn ndjson_matches_the_document(sample: &str) {
    let (stdout, stderr, code) = run(&["analyze", "--format", "ndjson", "--events", sample]);
    assert!(code == 0 || code == 1, "exit {code}: {stderr}");
    let schema = schema();
    let v = Validator::new(&schema);
    let def_of = |t: &str| match t {
        "input" => "#/$defs/input",
        "session" => "#/$defs/session",
        "finding" => "#/$defs/finding",
        "timeline" => "#/$defs/timeline_entry",
        "profile" => "#/$defs/profile_row",
        "interim" => "#/$defs/interim",
        "event" => "#/$defs/event",
        "summary" => "#/$defs/ndjson_summary",
        other => panic!("record type {other} has no definition"),
    };
    let mut errs = Vec::new();
    let mut types: Vec<String> = Vec::new();
    let mut records: Vec<Value> = Vec::new();
    for (n, line) in stdout.lines().enumerate() {
        let path = format!("{sample} line {}", n + 1);
        let rec: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{path} is not one JSON value ({e}): {line}"));
        let Some(mut obj) = rec.as_object().cloned() else {
            errs.push(format!("{path}: not an object"));
            continue;
        };
        let t = obj.remove("type").unwrap_or(Value::Null);
        errs.extend(v.validate_ref("#/$defs/ndjson_type", &t, &format!("{path}.type")));
        let version = obj.remove("schema_version");
        if version != Some(json!(1)) {
            errs.push(format!("{path}: schema_version is {version:?}, not 1"));
        }
        let Some(t) = t.as_str() else { continue };
        errs.extend(v.validate_ref(def_of(t), &Value::Object(obj.clone()), &path));
        types.push(t.to_string());
        records.push(Value::Object(obj));
    }
    assert!(
        errs.is_empty(),
        "{}",
        errs.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
    // Per session: its record, then its findings, timeline and events; then the profile,
    // inputs, summary.
    let group = ["session", "finding", "timeline", "event"];
    let tail = types
        .iter()
        .position(|t| t == "input" || t == "profile")
        .expect("input records");
    let mut rank = 0;
    for (i, t) in types[..tail].iter().enumerate() {
        let r = group
            .iter()
            .position(|g| g == t)
            .unwrap_or_else(|| panic!("{sample}: a {t} record (line {}) before the inputs", i + 1));
        assert!(
            r == 0 || r >= rank,
            "{sample}: a {t} record after a later kind (line {})",
            i + 1
        );
        assert!(
            i > 0 || r == 0,
            "{sample}: the first record is not a session"
        );
        rank = r;
    }
    let end: Vec<&str> = types[tail..types.len() - 1]
        .iter()
        .map(String::as_str)
        .collect();
    let inputs_from = end.iter().position(|t| *t == "input").expect("inputs");
    assert!(
        end[..inputs_from].iter().all(|t| *t == "profile"),
        "{end:?}"
    );
    assert!(end[inputs_from..].iter().all(|t| *t == "input"), "{end:?}");
    assert_eq!(types.iter().filter(|t| *t == "summary").count(), 1);
    assert_eq!(types.last().map(String::as_str), Some("summary"));
    // One record per element of the JSON document.
    let doc = analyze_json(&[sample]);
    for (key, t) in [
        ("inputs", "input"),
        ("sessions", "session"),
        ("findings", "finding"),
        ("timeline", "timeline"),
        ("profile", "profile"),
        ("events", "event"),
    ] {
        assert_eq!(
            types.iter().filter(|x| *x == t).count(),
            doc[key].as_array().map(Vec::len).unwrap_or(0),
            "{sample}: {t} records vs the document's {key}"
        );
    }
    // The same findings as the document, whatever their numbers.
    let key = |f: &Value| {
        (
            f["kind"].to_string(),
            f["time"].to_string(),
            f["session"].to_string(),
        )
    };
    let of_type = |t: &str| -> Vec<&Value> {
        types
            .iter()
            .zip(&records)
            .filter(|(x, _)| *x == t)
            .map(|(_, r)| r)
            .collect()
    };
    let mut written: Vec<_> = of_type("finding").into_iter().map(key).collect();
    let mut documented: Vec<_> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    written.sort();
    documented.sort();
    assert_eq!(written, documented, "{sample}");
    let ids: BTreeSet<&str> = of_type("finding")
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    for f in of_type("finding") {
        for c in f["caused_by"].as_array().unwrap() {
            assert!(
                ids.contains(c.as_str().unwrap()),
                "{sample}: cause {c} not written"
            );
        }
    }
    for e in of_type("timeline") {
        for c in e["findings"].as_array().unwrap() {
            assert!(
                ids.contains(c.as_str().unwrap()),
                "{sample}: {c} not written"
            );
        }
    }
}

#[test]
fn the_validator_rejects_broken_documents() {
    let schema = schema();
    let v = Validator::new(&schema);
    let doc = analyze_json(&["samples/seed-incident-client-leg.pcap"]);
    assert!(
        v.validate(&doc).is_empty(),
        "the unmodified document must pass"
    );
    let has = |errs: &[String], path: &str, words: &str| {
        errs.iter()
            .any(|e| e.trim_start().starts_with(path) && e.contains(words))
    };

    // A missing required key at the top.
    let mut d = doc.clone();
    d.as_object_mut().unwrap().remove("schema_version");
    let errs = v.validate(&d);
    assert!(
        has(&errs, "$:", "\"schema_version\" is missing"),
        "{errs:?}"
    );

    // A missing required key deep down.
    let mut d = doc.clone();
    d["sessions"][0]["streams"][0]
        .as_object_mut()
        .unwrap()
        .remove("outcome");
    let errs = v.validate(&d);
    assert!(
        has(&errs, "$.sessions[0].streams[0]:", "\"outcome\" is missing"),
        "{errs:?}"
    );

    // Wrong types.
    let mut d = doc.clone();
    d["sessions"][0]["start"] = json!(1_790_000_000);
    d["summary"]["gap_bytes"] = json!("0");
    d["timeline"][0]["frame"] = json!(4.5);
    let errs = v.validate(&d);
    assert!(
        has(
            &errs,
            "$.sessions[0].start:",
            "expected string, found integer"
        ),
        "{errs:?}"
    );
    assert!(
        has(
            &errs,
            "$.summary.gap_bytes:",
            "expected integer, found string"
        ),
        "{errs:?}"
    );
    assert!(
        has(
            &errs,
            "$.timeline[0].frame:",
            "expected integer, found number"
        ),
        "{errs:?}"
    );

    // null where null is not allowed, and a value outside an enum.
    let mut d = doc.clone();
    d["sessions"][0]["key"] = Value::Null;
    d["findings"][0]["severity"] = json!("urgent");
    d["sessions"][0]["event_id_scheme"] = json!("uuid");
    let errs = v.validate(&d);
    assert!(has(&errs, "$.sessions[0].key:", "found null"), "{errs:?}");
    assert!(
        has(&errs, "$.findings[0].severity:", "not one of"),
        "{errs:?}"
    );
    assert!(
        has(&errs, "$.sessions[0].event_id_scheme:", "not one of"),
        "{errs:?}"
    );

    // A request ID must stay a JSON number or string.
    let mut d = doc.clone();
    let dup = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| f["kind"] == "duplicate_response")
        .expect("the seed incident has a duplicate response");
    d["findings"][dup]["evidence"]["request_id"] = json!(true);
    let errs = v.validate(&d);
    let p = format!("$.findings[{dup}]");
    assert!(
        has(&errs, &format!("{p}:"), "matches no branch of oneOf"),
        "{errs:?}"
    );
    assert!(
        has(
            &errs,
            &format!("{p}.evidence.request_id:"),
            "expected number or string"
        ),
        "{errs:?}"
    );

    // Evidence is checked per kind: a key the issue requires, removed.
    let mut d = doc.clone();
    d["findings"][dup]["evidence"]
        .as_object_mut()
        .unwrap()
        .remove("same_payload");
    let errs = v.validate(&d);
    assert!(
        has(
            &errs,
            &format!("{p}.evidence:"),
            "\"same_payload\" is missing"
        ),
        "{errs:?}"
    );

    // ...and the evidence of one kind does not pass under another kind.
    let mut d = doc.clone();
    d["findings"][dup]["kind"] = json!("request_id_reused");
    d["findings"][dup]["severity"] = json!("medium");
    assert!(
        !v.validate(&d).is_empty(),
        "duplicate_response evidence passed as request_id_reused"
    );

    // An undocumented field is drift.
    let mut d = doc.clone();
    d["findings"][0]["evidence_v2"] = json!({});
    d["extra"] = json!(1);
    let errs = v.validate(&d);
    assert!(
        has(&errs, "$:", "\"extra\" is not in the schema"),
        "{errs:?}"
    );
    assert!(
        has(
            &errs,
            "$.findings[0]:",
            "\"evidence_v2\" is not in the schema"
        ),
        "{errs:?}"
    );

    // Optional events are still checked when present.
    let mut d = doc.clone();
    d["events"] = json!([{ "session": "S1" }]);
    let errs = v.validate(&d);
    assert!(
        has(&errs, "$.events[0]:", "\"namespace\" is missing"),
        "{errs:?}"
    );
}

#[test]
fn the_validator_implements_its_subset() {
    let schema = json!({
        "type": "object",
        "required": ["a"],
        "additionalProperties": false,
        "properties": {
            "a": { "type": "integer" },
            "b": { "type": ["string", "null"] },
            "c": { "items": { "$ref": "#/$defs/small" } },
            "d": { "oneOf": [ { "type": "string" }, { "enum": ["x", 1] } ] },
            "e": { "const": 2 }
        },
        "$defs": { "small": { "enum": [1, 2, 3] } }
    });
    let v = Validator::new(&schema);
    assert!(v.validate(&json!({ "a": 1 })).is_empty());
    assert!(
        v.validate(&json!({ "a": 1.0, "b": null, "c": [1, 3], "d": 1, "e": 2.0 }))
            .is_empty()
    );
    assert!(
        v.validate(&json!({ "a": 1, "d": "y" })).is_empty(),
        "one branch only"
    );
    assert_eq!(v.validate(&json!({})).len(), 1);
    assert_eq!(v.validate(&json!({ "a": 1.5 })).len(), 1);
    assert_eq!(v.validate(&json!({ "a": 1, "b": 2 })).len(), 1);
    assert_eq!(v.validate(&json!({ "a": 1, "c": [4] })).len(), 1);
    assert_eq!(v.validate(&json!({ "a": 1, "e": 3 })).len(), 1);
    assert_eq!(v.validate(&json!({ "a": 1, "z": 3 })).len(), 1);
    assert_eq!(v.validate(&json!([])).len(), 1, "not an object");
    // "x" is a string and in the enum: two branches, so oneOf fails.
    assert_eq!(v.validate(&json!({ "a": 1, "d": "x" })).len(), 1);
    // d = 2 matches neither branch.
    assert!(!v.validate(&json!({ "a": 1, "d": 2 })).is_empty());
    // Keywords outside the subset are refused, not ignored.
    let wider = json!({ "type": "string", "pattern": "^a" });
    assert!(!Validator::new(&wider).validate(&json!("b")).is_empty());
    let mut problems = Vec::new();
    schema_problems(&Validator::new(&wider), &wider, "#", &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    // Time format check.
    assert!(is_report_time("2026-11-30T04:36:05.787761Z"));
    assert!(!is_report_time("2026-11-30T04:36:05.787Z"));
    assert!(!is_report_time("2026-11-30T04:36:05.787761+00:00"));
}

fn schema_kinds(schema: &Value) -> BTreeSet<String> {
    schema["$defs"]["kind"]["enum"]
        .as_array()
        .expect("$defs/kind/enum")
        .iter()
        .map(|k| k.as_str().expect("kind names are strings").to_string())
        .collect()
}

/// (kind, allowed severities) of each branch of the finding's oneOf.
fn finding_branches(schema: &Value) -> Vec<(String, BTreeSet<String>)> {
    schema["$defs"]["finding"]["oneOf"]
        .as_array()
        .expect("$defs/finding/oneOf")
        .iter()
        .map(|b| {
            let kind = b["properties"]["kind"]["const"]
                .as_str()
                .expect("each branch selects a kind with const")
                .to_string();
            let sev = &b["properties"]["severity"];
            let sevs: BTreeSet<String> = match (sev.get("const"), sev.get("enum")) {
                (Some(c), _) => [c.as_str().unwrap().to_string()].into(),
                (None, Some(e)) => e
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect(),
                _ => panic!("branch {kind} does not pin its severity"),
            };
            (kind, sevs)
        })
        .collect()
}

#[test]
fn schema_kinds_are_the_kinds_explain_lists() {
    let (stdout, stderr, code) = run(&["explain"]);
    assert_eq!(code, 0, "explain failed: {stderr}");
    // `explain` without a kind lists one kind per line: `kind  severity  when`.
    let listed: Vec<(String, String)> = stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let kind = words.next()?;
            let severity = words.next()?;
            (kind.contains('_') && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
                .then(|| (kind.to_string(), severity.to_string()))
        })
        .collect();
    let explained: BTreeSet<String> = listed.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(explained.len(), 25, "explain lists {explained:?}");
    let schema = schema();
    let in_schema = schema_kinds(&schema);
    let missing: Vec<_> = explained.difference(&in_schema).collect();
    let extra: Vec<_> = in_schema.difference(&explained).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "kinds explained but not in the schema: {missing:?}; in the schema but not explained: {extra:?}"
    );
    // The default severity explain gives is one the schema allows for the kind.
    let branches = finding_branches(&schema);
    for (kind, severity) in &listed {
        let allowed = &branches
            .iter()
            .find(|(k, _)| k == kind)
            .unwrap_or_else(|| panic!("no oneOf branch for {kind}"))
            .1;
        assert!(
            allowed.contains(severity),
            "explain gives {kind} severity {severity}; the schema allows {allowed:?}"
        );
    }
    // And each kind can be explained on its own.
    for kind in &explained {
        let (out, err, code) = run(&["explain", kind]);
        assert_eq!(code, 0, "explain {kind}: {err}");
        assert!(
            out.contains(kind.as_str()),
            "explain {kind} does not name it"
        );
    }
}
