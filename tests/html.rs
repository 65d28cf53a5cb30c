//! The HTML report is one self-contained file that a real browser renders: headless Chromium
//! from Debian (`.ci/run` installs it) loads it from disk with the network closed, runs its
//! script without an error, and the DOM it built holds the seed incident's lanes and arrows.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "support/samples.rs"]
mod samples;

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

/// The reports whose HTML draws lanes: every sample alone, each client leg with its server leg,
/// the TLS legs with their key logs, and a saved report crafted to crowd one instant (many
/// findings at once, kinds and methods and event IDs far longer than any lane).
fn drawn_reports(dir: &Path) -> Vec<(String, String)> {
    let mut runs: Vec<(String, Vec<String>)> = Vec::new();
    let names = samples::names();
    for name in &names {
        runs.push((name.clone(), vec![format!("samples/{name}")]));
        let Some(stem) = name.strip_suffix("-client-leg.pcap") else {
            continue;
        };
        let server = format!("{stem}-server-leg.pcap");
        if names.contains(&server) {
            let mut args = vec![format!("samples/{name}"), format!("samples/{server}")];
            let keys = format!("samples/{}.keys", stem);
            if root().join(&keys).exists() {
                args.extend(["--tls-keylog".into(), keys]);
            }
            runs.push((format!("{name} + {server}"), args));
        }
    }
    let mut pages = Vec::new();
    for (i, (label, args)) in runs.iter().enumerate() {
        let out = dir.join(format!("{i}.html"));
        let mut all = vec!["analyze", "--format", "html", "-o", out.to_str().unwrap()];
        all.extend(args.iter().map(String::as_str));
        let run = Command::new(env!("CARGO_BIN_EXE_mcp-forensics"))
            .current_dir(root())
            .args(&all)
            .output()
            .unwrap();
        // Any verdict, or an input with no MCP (no page then); never a crash.
        assert!(
            run.status.code().is_some_and(|c| c < 100),
            "{label}: {run:?}"
        );
        if let Ok(html) = std::fs::read_to_string(&out) {
            pages.push((label.clone(), html));
        }
    }
    pages.push(("crowded instant".into(), crowded_report(dir)));
    pages.retain(|(_, html)| html.contains("<svg"));
    pages
}

/// The seed incident's saved report with 120 more findings at F4's instant, half on one
/// stream and half across two, of kinds named at length, and a stream's methods, a resume's
/// Last-Event-ID and a run's event IDs long and wide.
fn crowded_report(dir: &Path) -> String {
    let bin = env!("CARGO_BIN_EXE_mcp-forensics");
    let json = Command::new(bin)
        .current_dir(root())
        .args([
            "analyze",
            "--format",
            "json",
            "samples/seed-incident-any.pcap",
        ])
        .output()
        .unwrap()
        .stdout;
    let mut doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let f4 = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "F4")
        .unwrap()
        .clone();
    for i in 0..120 {
        let mut f = f4.clone();
        f["id"] = format!("X{i}").into();
        f["kind"] = format!("{}_{i}", "a_kind_no_registry_knows".repeat(4)).into();
        f["evidence"] = serde_json::Value::Null;
        f["caused_by"] = serde_json::json!([]);
        if i % 2 == 0 {
            f["streams"] = serde_json::json!(["get:s17"]);
        }
        doc["findings"].as_array_mut().unwrap().push(f);
    }
    let wide = "ＷＷＷ&<b>".repeat(20);
    for st in doc["sessions"][0]["streams"].as_array_mut().unwrap() {
        st["methods"] = serde_json::json!([wide.clone(), "tools/call".repeat(30)]);
        if !st["resume"].is_null() {
            st["resume"]["last_event_id"] = "Ω".repeat(200).into();
        }
    }
    for e in doc["timeline"].as_array_mut().unwrap() {
        if e["kind"] == "events" {
            e["event_ids"] = serde_json::json!([wide.clone(), "9".repeat(300)]);
        }
    }
    let saved = dir.join("crowded.json");
    std::fs::write(&saved, doc.to_string()).unwrap();
    let out = Command::new(bin)
        .args(["report", "--format", "html"])
        .arg(&saved)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Measures, in the page, every SVG text's box as Chromium lays it out and lists each pair of
/// one drawing whose boxes intersect; writes the count and the pairs as JSON into #result.
const MEASURE: &str = "(function(){var found=[],texts=0;\
document.querySelectorAll('[data-report]').forEach(function(sec){\
sec.querySelectorAll('svg').forEach(function(svg,k){var b=[];\
svg.querySelectorAll('text').forEach(function(t){var r=t.getBoundingClientRect();\
if(r.width>0&&r.height>0)b.push([r.left,r.top,r.right,r.bottom,t.textContent]);});\
texts+=b.length;for(var i=0;i<b.length;i++)for(var j=i+1;j<b.length;j++){var p=b[i],q=b[j];\
if(p[0]<q[2]&&q[0]<p[2]&&p[1]<q[3]&&q[1]<p[3])found.push(sec.dataset.report+' #'+k+': '+p[4]+' × '+q[4]);}});});\
var pre=document.createElement('pre');pre.id='result';\
pre.textContent=JSON.stringify({texts:texts,overlaps:found});document.body.appendChild(pre);})();";

/// No two labels of a drawing cover each other, in any report a sample gives: Chromium lays
/// out every report's SVGs (under the report's own style) on one page, and a script added to
/// that copy only measures each text's box.
#[test]
fn no_two_labels_of_a_drawing_intersect() {
    let dir = tempfile::tempdir().unwrap();
    let pages = drawn_reports(dir.path());
    assert!(pages.len() > 50, "only {} reports draw lanes", pages.len());
    // The report's head without its Content-Security-Policy, which (rightly) refuses any
    // script but the report's own: the measuring script runs in this copy only.
    let head = &pages[0].1[..pages[0].1.find("</head>").unwrap()];
    let head: String = head
        .lines()
        .filter(|l| !l.contains("Content-Security-Policy"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut page = format!("{head}</head><body>");
    for (i, (_, html)) in pages.iter().enumerate() {
        page.push_str(&format!("<section data-report=\"{i}\">"));
        for svg in html.split("<svg").skip(1) {
            let end = svg.find("</svg>").unwrap() + "</svg>".len();
            page.push_str("<svg");
            page.push_str(&svg[..end]);
        }
        page.push_str("</section>");
    }
    page.push_str(&format!("<script>{MEASURE}</script></body></html>"));
    let file = dir.path().join("all.html");
    std::fs::write(&file, page).unwrap();
    let run = chromium(&dir.path().join("profile"))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8(run.stdout).unwrap();
    let result = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_else(|| panic!("the measuring script did not run: {dom}"));
    let result = result
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let result: serde_json::Value = serde_json::from_str(&result).unwrap();
    let overlaps: Vec<String> = result["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let o = o.as_str().unwrap();
            let (report, rest) = o.split_once(' ').unwrap();
            format!("{} {rest}", pages[report.parse::<usize>().unwrap()].0)
        })
        .collect();
    assert!(
        result["texts"].as_u64().unwrap() > 1000,
        "too few labels measured: {result}"
    );
    assert!(
        overlaps.is_empty(),
        "{} pairs of labels intersect, among them:\n{}",
        overlaps.len(),
        overlaps[..overlaps.len().min(40)].join("\n")
    );
}
