//! `explain [KIND]`: what a finding kind means, why it matters and what to change, from the
//! detectors' registry.

use std::io::Write;

use mcpf_engine::detect::FindingKind;
use mcpf_engine::report::{self, redact::Redactor};

use super::Exit;
use crate::terminal;

pub fn run(job: crate::config::Explain) -> anyhow::Result<Exit> {
    let (kind, width) = (job.kind, job.width);
    let wrap = report::wrap;
    let mut out = terminal::stdout(Redactor::new(false));
    match kind {
        None => {
            writeln!(out, "{:<34} {:<8} WHEN", "KIND", "SEVERITY")?;
            let hang = " ".repeat(44);
            for k in FindingKind::ALL.iter().map(|k| k.info()) {
                let lead = format!("{:<34} {:<8} ", k.kind.name(), k.severity.name());
                writeln!(out, "{}", wrap(k.when, width.max(80), &lead, &hang))?;
            }
            writeln!(
                out,
                "\nmcp-forensics explain KIND: what a finding means, why it matters, what to change"
            )?;
        }
        Some(kind) => {
            // Kinds as people type them: any case, `-` for `_`.
            let name = kind.trim().to_ascii_lowercase().replace('-', "_");
            let Some(k) = FindingKind::from_name(&name).map(FindingKind::info) else {
                anyhow::bail!("{}", unknown_kind(&kind));
            };
            writeln!(out, "{} ({})\n", k.kind, k.severity.name())?;
            for (title, text) in [
                ("When", k.when),
                ("What it means", k.meaning),
                ("Why it matters", k.why),
                ("What to change", k.fix),
            ] {
                writeln!(
                    out,
                    "{}\n",
                    wrap(&format!("{title}: {text}"), width, "", "  ")
                )?;
            }
            let evidence = format!("Evidence: {}", k.kind.evidence_keys().join(", "));
            writeln!(out, "{}", wrap(&evidence, width, "", "  "))?;
        }
    }
    out.flush()?;
    Ok(Exit::Clean)
}

/// Why `explain` cannot take `kind`, and what it would.
fn unknown_kind(kind: &str) -> String {
    let known: Vec<&str> = FindingKind::ALL.iter().map(|k| k.name()).collect();
    let is_id = kind.len() > 1
        && kind.starts_with(['F', 'f'])
        && kind[1..].bytes().all(|b| b.is_ascii_digit());
    if is_id {
        return format!(
            "{kind:?} is a finding of one report, not a kind: explain takes its kind (the word after the severity in the report, e.g. cross_namespace_replay), or run `mcp-forensics explain` for the list"
        );
    }
    let lower = kind.to_ascii_lowercase();
    // A part of a name, or a name a few typos away (one in eight letters, at least two).
    let typos = |k: &str| strsim::damerau_levenshtein(&lower, k) <= (k.len() / 8).max(2);
    let near: Vec<&str> = known
        .iter()
        .copied()
        .filter(|k| k.contains(lower.as_str()) || lower.contains(k) || typos(k))
        .collect();
    match near.as_slice() {
        [] => format!(
            "unknown finding kind {kind:?}; known kinds: {}",
            known.join(", ")
        ),
        some => format!(
            "unknown finding kind {kind:?}; did you mean {}?",
            some.join(", ")
        ),
    }
}
