//! The HTML report is one self-contained file that a real browser renders: headless Chromium
//! from Debian (`.ci/run` installs it) loads it from disk with the network closed, runs its
//! script without an error, and the DOM it built holds the seed incident's lanes and arrows.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn html_of(args: &[&str], out: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
        .current_dir(root())
        .args(["analyze", "--format", "html", "-o"])
        .arg(out)
        .args(args)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "the seed has high findings");
}

/// Chromium with what it needs to start on a closed network, on its own empty profile.
fn chromium(profile: &Path) -> Command {
    let bin = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok())
        .expect("headless Chromium is needed for this test (Debian: apt-get install chromium)");
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

#[test]
fn the_html_report_renders_in_chromium_with_the_incident_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("seed.html");
    html_of(&["samples/seed-incident-client-leg.pcap"], &page);
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing is fetched.
    for outside in ["src=", "<link", "@import", "http://", "https://"] {
        assert!(
            !html.contains(outside),
            "the page refers outside itself: {outside}"
        );
    }
    let url = format!("file://{}", page.display());
    let run = chromium(&dir.path().join("profile"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let dom = String::from_utf8(run.stdout).unwrap();
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(
        dom.contains("data-rendered=\"1\""),
        "the script ran to its end"
    );
    assert!(!dom.contains("data-errors"), "script errors: {dom}");
    for l in log.lines().filter(|l| l.contains(":CONSOLE")) {
        assert!(
            !l.contains("Uncaught") && !l.contains("Error"),
            "console: {l}"
        );
    }
    // The lanes of the incident's streams, and what crosses them.
    for stream in ["post:s3", "get:s4", "post:s16", "get:s17"] {
        let lane = format!("\" data-stream=\"{stream}\"><text class=\"head\"");
        assert!(dom.contains(&lane), "no lane for {stream}");
    }
    for kind in [
        "sse_fallback",
        "cross_namespace_replay",
        "unsafe_resumption_after_fallback",
    ] {
        assert!(
            dom.contains(&format!("data-kind=\"{kind}\"")),
            "no {kind} drawn"
        );
    }
    assert!(
        dom.contains("class=\"arrow resume\" data-stream=\"get:s17\""),
        "the resume"
    );
    assert!(
        dom.contains("class=\"drop\" data-stream=\"get:s4\""),
        "the dropped GET"
    );
    // Every finding drawn is a link to its evidence row.
    assert!(dom.contains("<a href=\"#F4\"><g class=\"arrow finding critical\""));
    assert!(dom.contains("<tr id=\"F4\""));
    // And it draws: a screenshot of it is a picture, not an empty page.
    let shot = dir.path().join("seed.png");
    let run = chromium(&dir.path().join("profile2"))
        .arg("--window-size=1100,1000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    // The committed screenshot the README shows is one such picture (docs/make-screenshot.sh).
    let committed = std::fs::read(root().join("docs/html-report.png")).unwrap();
    assert!(committed.starts_with(b"\x89PNG\r\n\x1a\n"));
}
