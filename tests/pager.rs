//! The terminal report in a pager: a report taller than the terminal goes through `$PAGER`,
//! one that fits, `--no-pager`, a pipe and `PAGER=cat` print straight, and the exit code is the
//! findings' whatever the pager does. Run in a real pseudo-terminal (util-linux `script`) of 24
//! rows, with a pager that copies what it is given to a file.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `mcp-forensics ARGS` on a 24×80 terminal with `PAGER` as given: what the terminal
/// showed, and the exit code.
fn on_terminal(args: &str, pager: &str) -> (String, i32) {
    let bin = assert_cmd::cargo::cargo_bin("mcp-forensics");
    let inner = format!("stty rows 24 cols 80; exec {} {args}", bin.display());
    let out = Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .current_dir(root())
        .env("PAGER", pager)
        .env_remove("COLUMNS")
        .env_remove("LINES")
        .output()
        .expect("util-linux script runs (Debian: bsdutils)");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn pager_into(file: &Path) -> String {
    format!("cat > {}", file.display())
}

#[test]
fn a_report_taller_than_the_terminal_goes_through_the_pager_and_keeps_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let paged = dir.path().join("paged.txt");
    let (screen, code) = on_terminal(
        "analyze samples/seed-incident-client-leg.pcap",
        &pager_into(&paged),
    );
    assert_eq!(code, 1, "the findings' exit code: {screen}");
    let text = std::fs::read_to_string(&paged).expect("the pager was given the report");
    assert!(text.starts_with("mcp-forensics "), "{text}");
    assert!(text.contains("VERDICT") && text.contains("INCIDENT S1"));
    assert!(!screen.contains("VERDICT"), "printed as well: {screen}");
    // Coloured (less -R shows it) and fitted to the terminal the pager shows it on.
    assert!(text.contains("\x1b["), "{text}");
    let plain = without_colour(&text);
    assert!(plain.lines().all(|l| l.chars().count() <= 80), "{plain}");
}

#[test]
fn no_pager_when_asked_when_it_fits_or_when_pager_is_cat() {
    let dir = tempfile::tempdir().unwrap();
    let paged = dir.path().join("paged.txt");
    let pager = pager_into(&paged);
    let (screen, code) = on_terminal(
        "analyze --no-pager samples/seed-incident-client-leg.pcap",
        &pager,
    );
    assert_eq!(code, 1);
    assert!(screen.contains("VERDICT") && screen.contains("WHAT TO DO"));
    // A report shorter than the screen: exit 5 on a capture with no MCP in it.
    let (screen, code) = on_terminal("analyze samples/not-mcp.pcap", &pager);
    assert_eq!(code, 5);
    assert!(screen.contains("no MCP session found"), "{screen}");
    assert!(!paged.exists(), "the pager ran");
    let (screen, _) = on_terminal("analyze samples/seed-incident-client-leg.pcap", "cat");
    assert!(screen.contains("WHAT TO DO"), "{screen}");
    // A pipe is not a terminal: never a pager.
    let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .args(["analyze", "samples/seed-incident-client-leg.pcap"])
        .current_dir(root())
        .env("PAGER", &pager)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("VERDICT"));
    assert!(!paged.exists(), "the pager ran");
}

#[test]
fn a_saved_report_is_paged_as_the_live_one() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("seed.json");
    let out = Command::new(assert_cmd::cargo::cargo_bin("mcp-forensics"))
        .args([
            "analyze",
            "-f",
            "json",
            "samples/seed-incident-client-leg.pcap",
            "-o",
        ])
        .arg(&saved)
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let paged = dir.path().join("paged.txt");
    let (_, code) = on_terminal(&format!("report {}", saved.display()), &pager_into(&paged));
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(&paged).expect("the pager was given the report");
    assert!(text.contains("INCIDENT S1"), "{text}");
}

/// `text` without its SGR colour sequences (`ESC [ … m`).
fn without_colour(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
