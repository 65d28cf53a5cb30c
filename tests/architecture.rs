//! The pipeline's arrows point one way: each stage crate depends only on the stages before it
//! (and on `mcpf-model`). The manifests say what a crate may use; this test fails the day one
//! of them names a later stage, or a crate appears that has no place in the pipeline.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Every stage crate and the stage crates it may depend on (normal and dev dependencies).
const ALLOWED: &[(&str, &[&str])] = &[
    ("mcpf-model", &[]),
    ("mcpf-capture", &["mcpf-model"]),
    ("mcpf-http", &["mcpf-model", "mcpf-capture"]),
    // TLS sits between TCP and HTTP; its tests read captures through the capture stage.
    ("mcpf-tls", &["mcpf-model", "mcpf-capture"]),
    // Ingest is the side entrance: HAR files and logs become HTTP events.
    ("mcpf-ingest", &["mcpf-model", "mcpf-capture", "mcpf-http"]),
    // Above HTTP nothing knows packets, or which entrance an exchange came by.
    ("mcpf-mcp", &["mcpf-model", "mcpf-http"]),
    ("mcpf-detect", &["mcpf-model", "mcpf-http", "mcpf-mcp"]),
    (
        "mcpf-report",
        &[
            "mcpf-model",
            "mcpf-capture",
            "mcpf-tls",
            "mcpf-http",
            "mcpf-mcp",
            "mcpf-detect",
        ],
    ),
    // Exchange records: what HTTP hands to the MCP stage, written and read back; it knows the
    // HTTP stage's events and TLS's counts, and nothing after them.
    ("mcpf-records", &["mcpf-model", "mcpf-http", "mcpf-tls"]),
    // The run: every stage, wired.
    (
        "mcpf-engine",
        &[
            "mcpf-model",
            "mcpf-capture",
            "mcpf-tls",
            "mcpf-http",
            "mcpf-ingest",
            "mcpf-mcp",
            "mcpf-detect",
            "mcpf-report",
            "mcpf-records",
        ],
    ),
];

/// `mcpf-*` dependencies of every workspace package, from `cargo metadata`.
fn stage_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    dependencies(|name, _| name.starts_with("mcpf-"))
}

/// The dependencies of every workspace package that `keep` keeps (by name and kind: `null`
/// for normal, `"dev"`, `"build"`).
fn dependencies(keep: impl Fn(&str, &Value) -> bool) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut deps = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let uses: BTreeSet<String> = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| keep(d["name"].as_str().unwrap_or(""), &d["kind"]))
            .filter_map(|d| d["name"].as_str())
            .map(str::to_string)
            .collect();
        deps.insert(name, uses);
    }
    deps
}

#[test]
fn stages_depend_only_on_earlier_stages() {
    let deps = stage_dependencies();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    for (name, uses) in &deps {
        if name == "mcp-forensics" {
            continue; // the binary wires every stage
        }
        let Some(may) = allowed.get(name.as_str()) else {
            panic!(
                "{name} is not a stage of the pipeline: add it to ALLOWED in tests/architecture.rs and docs/architecture.md"
            );
        };
        for u in uses {
            assert!(
                may.contains(&u.as_str()),
                "{name} depends on {u}, which is not an earlier stage (see docs/architecture.md)"
            );
        }
    }
    for (name, _) in ALLOWED {
        assert!(deps.contains_key(*name), "{name} is not in the workspace");
    }
}

#[test]
fn the_rule_is_not_vacuous() {
    // The stages really are wired through each other: a test reading no dependencies at all
    // would pass whatever the manifests say.
    let deps = stage_dependencies();
    assert!(deps["mcpf-report"].contains("mcpf-detect"));
    assert!(deps["mcpf-mcp"].contains("mcpf-http"));
    assert!(deps["mcpf-model"].is_empty());
}

#[test]
fn the_binary_reaches_the_stages_through_the_engine_only() {
    // Normal dependencies: the binary's tests may read stages directly.
    let deps = dependencies(|name, kind| name.starts_with("mcpf-") && kind.is_null());
    assert_eq!(
        deps["mcp-forensics"],
        BTreeSet::from(["mcpf-engine".to_string()]),
        "the binary is the command line and the terminal over mcpf-engine (docs/architecture.md)"
    );
}

#[test]
fn the_engine_has_no_command_line_and_no_terminal() {
    const FRONT_END: &[&str] = &[
        "clap",
        "clap_complete",
        "clap_mangen",
        "indicatif",
        "terminal_size",
        "ctrlc",
        "anyhow",
    ];
    let deps = dependencies(|_, _| true);
    for (name, uses) in &deps {
        if name == "mcp-forensics" {
            continue;
        }
        for u in uses {
            assert!(
                !FRONT_END.contains(&u.as_str()),
                "{name} depends on {u}: only the binary meets the command line and the terminal"
            );
        }
    }
}

/// The modules of the binary (`src/`) each file names with `crate::…`.
fn binary_modules() -> BTreeMap<String, BTreeSet<String>> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let mut graph = BTreeMap::new();
    for f in files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // The top module a file belongs to: `cmd/analyze.rs` is part of `cmd`.
        let module = rel.split(['/', '.']).next().unwrap().to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let names = graph.entry(module.clone()).or_insert_with(BTreeSet::new);
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `use crate::{a, b}` names several.
            if word.is_empty() && rest.starts_with('{') {
                let inner = &rest[1..rest.find('}').unwrap_or(1)];
                for w in inner.split(',') {
                    let w = w.trim().split("::").next().unwrap_or("").to_string();
                    if !w.is_empty() && w != module {
                        names.insert(w);
                    }
                }
            } else if !word.is_empty() && word != module {
                names.insert(word);
            }
        }
    }
    graph
}

#[test]
fn the_binary_has_no_import_circle() {
    let graph = binary_modules();
    assert!(
        graph.get("cmd").is_some_and(|uses| uses.contains("config")),
        "the graph is read: {graph:?}"
    );
    // Depth-first, looking for a module met again on its own path.
    fn visit<'a>(
        m: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if let Some(at) = path.iter().position(|x| *x == m) {
            panic!(
                "import circle in src/: {}",
                path[at..].join(" -> ") + " -> " + m
            );
        }
        if !done.insert(m) {
            return;
        }
        path.push(m);
        for next in graph.get(m).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}
