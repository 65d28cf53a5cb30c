//! The documentation stays true: the committed man page and completions are what the code
//! generates, and every `mcp-forensics` command shown in README.md runs.

use assert_cmd::Command;

fn generated(what: &str) -> String {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["generate", what])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn committed_man_page_is_generated_from_the_code() {
    let committed = std::fs::read_to_string("man/mcp-forensics.1").unwrap();
    assert!(
        committed == generated("man"),
        "man/mcp-forensics.1 is stale: run `cargo run -- generate man > man/mcp-forensics.1`"
    );
    assert!(
        committed.contains(".SH ENVIRONMENT"),
        "the man page has an ENVIRONMENT section"
    );
    // No indent written as a tag (`.IP  4` printed a stray "4" before every example).
    assert!(!committed.contains(".IP  "), "an .IP with an empty tag");
    // Every finding kind is documented in it.
    for k in mcpf_detect::FindingKind::ALL {
        assert!(
            committed.contains(k.name()),
            "{k} missing from the man page"
        );
    }
}

#[test]
fn every_anomaly_kind_is_documented() {
    let doc = std::fs::read_to_string("docs/report-format.md").unwrap();
    for k in mcpf_model::AnomalyKind::ALL {
        assert!(
            doc.contains(&format!("| `{}` |", k.name())),
            "{} missing from docs/report-format.md (Anomaly kinds)",
            k.name()
        );
    }
}

#[test]
fn committed_completions_are_generated_from_the_code() {
    for shell in ["bash", "zsh", "fish"] {
        let path = format!("completions/mcp-forensics.{shell}");
        let committed = std::fs::read_to_string(&path).unwrap();
        assert!(
            committed == generated(shell),
            "{path} is stale: run `cargo run -- generate {shell} > {path}`"
        );
        assert!(committed.contains("analyze") && committed.contains("fail-on"));
    }
}

/// What bash completes for the words of `line`, the last one being completed, with the
/// committed completion loaded (as bash-completion would call it).
fn bash_completes(line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let cword = line.len() - 1;
    let script = format!(
        "source completions/mcp-forensics.bash
COMP_WORDS=({words}); COMP_CWORD={cword}
_mcp__forensics mcp-forensics '{cur}' '{prev}'
printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words = words.join(" "),
        cur = line[cword],
        prev = line[cword - 1],
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &script])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_past_the_subcommand_and_offers_nothing_hidden() {
    assert_eq!(
        bash_completes(&["mcp-forensics", "analyze", "--for"]),
        ["--format"]
    );
    assert_eq!(
        bash_completes(&["mcp-forensics", "analyze", "--format", ""]),
        ["table", "json", "ndjson", "markdown", "html"]
    );
    assert_eq!(
        bash_completes(&["mcp-forensics", "analyze", "--fail-on", "cr"]),
        ["critical"]
    );
    let options = bash_completes(&["mcp-forensics", "analyze", "--"]);
    assert!(
        options.contains(&"--min-severity".to_string()),
        "{options:?}"
    );
    for hidden in ["--workers", "--shard-stats"] {
        assert!(!options.contains(&hidden.to_string()), "{hidden} offered");
    }
    let commands = bash_completes(&["mcp-forensics", ""]);
    assert!(commands.contains(&"analyze".to_string()), "{commands:?}");
    assert!(!commands.contains(&"generate".to_string()), "{commands:?}");
}

/// Runs `shell` with `args`; `None` (said on standard error) when it is not installed here:
/// `.ci/run` installs bash, zsh and fish from Debian.
fn shell(shell: &str, args: &[&str]) -> Option<std::process::Output> {
    match std::process::Command::new(shell).args(args).output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("{shell} is not installed: its completion is not checked here");
            None
        }
        Err(e) => panic!("{shell}: {e}"),
    }
}

#[test]
fn zsh_loads_its_completion_and_registers_it() {
    let Some(out) = shell("zsh", &["-n", "completions/mcp-forensics.zsh"]) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = std::env::temp_dir().join(format!("mcpf-zcompdump-{}", std::process::id()));
    let script = format!(
        "autoload -U compinit; compinit -u -d {}; source completions/mcp-forensics.zsh; \
         (( $+functions[_mcp-forensics] )) && print -l ${{(k)_comps[(R)_mcp-forensics]}}",
        dump.display()
    );
    let out = shell("zsh", &["-f", "-c", &script]).unwrap();
    let _ = std::fs::remove_file(&dump);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "mcp-forensics");
    let text = std::fs::read_to_string("completions/mcp-forensics.zsh").unwrap();
    assert!(!text.contains("--workers") && !text.contains("shard-stats"));
}

#[test]
fn fish_completes_options_values_and_commands() {
    let Some(out) = shell("fish", &["--no-execute", "completions/mcp-forensics.fish"]) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let complete = |line: &str| -> Vec<String> {
        let script = format!("source completions/mcp-forensics.fish; complete -C '{line}'");
        let out = shell("fish", &["--no-config", "-c", &script]).unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(complete("mcp-forensics analyze --for"), ["--format"]);
    let formats = complete("mcp-forensics analyze --format ");
    assert_eq!(formats, ["html", "json", "markdown", "ndjson", "table"]);
    let commands = complete("mcp-forensics ");
    assert!(commands.contains(&"analyze".to_string()), "{commands:?}");
    assert!(!commands.contains(&"generate".to_string()), "{commands:?}");
    // A log format's `$variables` stay text: fish expands nothing in a description.
    let text = std::fs::read_to_string("completions/mcp-forensics.fish").unwrap();
    let expands = text
        .lines()
        .any(|l| l.contains("\"$http_mcp_session_id") && !l.contains("'The nginx log_format"));
    assert!(!expands);
}

/// Splits a shell command line with single and double quotes (enough for the README).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn every_readme_command_runs() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let mut in_block = false;
    let mut ran = 0;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_block = line.starts_with("```sh") && !in_block;
            if !line.starts_with("```sh") {
                in_block = false;
            }
            continue;
        }
        if !in_block {
            continue;
        }
        let line = line.split(" #").next().unwrap_or("").trim();
        let line = line.strip_prefix("$ ").unwrap_or(line);
        // `cargo run --release -- ARGS` is the same binary.
        let args = if let Some(rest) = line.strip_prefix("cargo run --release -- ") {
            words(rest)
        } else if let Some(rest) = line.strip_prefix("mcp-forensics ") {
            words(rest)
        } else {
            continue;
        };
        // Pipelines from tcpdump and into jq need those tools; the command itself is run.
        let args: Vec<String> = args
            .into_iter()
            .take_while(|a| a != "|" && a != ">")
            .collect();
        if args
            .iter()
            .any(|a| a == "-" || a.contains("trace.pcap") || a.contains("mcp.pcap"))
        {
            continue;
        }
        let out = Command::cargo_bin("mcp-forensics")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        assert!(
            code == 0 || code == 1,
            "README command `{line}` exited {code}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out.stdout.is_empty(),
            "README command `{line}` printed nothing"
        );
        ran += 1;
    }
    assert!(ran >= 3, "only {ran} README commands found");
}

/// The example outputs in README.md are what the binary prints: every line of a block that opens
/// with `$ mcp-forensics …` (but the `...` that stands for lines left out) is a line of that
/// command's output, in order.
#[test]
fn readme_example_outputs_are_what_the_binary_prints() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let mut lines = readme.lines();
    let mut checked = 0;
    while let Some(line) = lines.next() {
        let Some(cmd) = line.strip_prefix("$ mcp-forensics ") else {
            continue;
        };
        // The width reports fit when the output is not a terminal, whatever the test's shell says.
        let out = Command::cargo_bin("mcp-forensics")
            .unwrap()
            .args(words(cmd))
            .env("COLUMNS", "100")
            .output()
            .unwrap();
        let printed = String::from_utf8(out.stdout).unwrap();
        let mut printed = printed.lines().map(str::trim_end);
        for want in lines.by_ref().take_while(|l| !l.starts_with("```")) {
            let want = want.trim_end();
            if want.trim() == "..." || want.is_empty() {
                continue;
            }
            assert!(
                printed.any(|l| l == want),
                "README example of `mcp-forensics {cmd}` has a line the binary does not print (in this order):\n{want}"
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} example lines checked");
}

/// The keys documented for a kind under its `#### \`kind\`` heading of docs/report-format.md:
/// the backticked names in the first cell of each table row.
fn documented_keys(doc: &str, kind: &str) -> Vec<String> {
    let heading = format!("#### `{kind}`");
    let Some(start) = doc.find(&heading) else {
        return Vec::new();
    };
    let section = &doc[start + heading.len()..];
    let end = ["\n#### ", "\n### ", "\n## "]
        .iter()
        .filter_map(|h| section.find(h))
        .min()
        .unwrap_or(section.len());
    let section = &section[..end];
    let mut keys = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| ")) {
        let cell = row[2..].split(" |").next().unwrap_or("");
        for (i, part) in cell.split('`').enumerate() {
            if i % 2 == 1 && part != "key" {
                keys.push(part.to_string());
            }
        }
    }
    keys
}

/// Every finding kind's evidence keys, as its struct declares them (the registry), are the keys
/// docs/report-format.md documents for it and the properties docs/report.schema.json allows,
/// in both directions: a key added to a detector's evidence without its documentation fails here.
#[test]
fn evidence_keys_are_documented_and_in_the_schema() {
    use mcpf_detect::FindingKind;
    let doc = std::fs::read_to_string("docs/report-format.md").unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("docs/report.schema.json").unwrap()).unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for &k in FindingKind::ALL {
        let declared: std::collections::BTreeSet<String> =
            k.evidence_keys().iter().map(|s| s.to_string()).collect();
        // A pending request's evidence is an unanswered one's, documented there.
        let documented_as = match k {
            FindingKind::PendingAtCaptureEnd => FindingKind::UnansweredRequest,
            other => other,
        };
        assert!(
            !declared.is_empty(),
            "{k}: its evidence struct declares no key"
        );
        checked += 1;
        let documented: std::collections::BTreeSet<String> =
            documented_keys(&doc, documented_as.name())
                .into_iter()
                .collect();
        if declared != documented {
            wrong.push(format!(
                "{k}: docs/report-format.md lacks {:?}, has more {:?}",
                declared.difference(&documented).collect::<Vec<_>>(),
                documented.difference(&declared).collect::<Vec<_>>()
            ));
        }
        let def = &schema["$defs"][format!("evidence_{}", documented_as.name())];
        let allowed: std::collections::BTreeSet<String> = def["properties"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.keys().cloned())
            .collect();
        if declared != allowed {
            wrong.push(format!(
                "{k}: docs/report.schema.json lacks {:?}, has more {:?}",
                declared.difference(&allowed).collect::<Vec<_>>(),
                allowed.difference(&declared).collect::<Vec<_>>()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(checked, FindingKind::ALL.len());
}

/// README's table of findings lists every kind of the registry.
#[test]
fn readme_lists_every_finding_kind() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    for k in mcpf_detect::FindingKind::ALL {
        let row = format!("| `{}` | {} |", k.name(), k.severity().name());
        assert!(
            readme.contains(&row),
            "README.md lacks the row of {k}: {row}"
        );
    }
}
