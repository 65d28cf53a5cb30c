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
            "mcpf-http",
            "mcpf-mcp",
            "mcpf-detect",
        ],
    ),
];

/// `mcpf-*` dependencies of every workspace package, from `cargo metadata`.
fn stage_dependencies() -> BTreeMap<String, BTreeSet<String>> {
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
            .filter_map(|d| d["name"].as_str())
            .filter(|d| d.starts_with("mcpf-"))
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
