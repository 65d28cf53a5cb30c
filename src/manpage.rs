//! The man page and shell completions, generated from the clap definitions (one definition per
//! flag feeds `--help`, the page and the completions) with hand-written sections spliced in; the
//! FINDINGS section comes from the same registry as `mcp-forensics explain`.
//!
//! `mcp-forensics generate man` prints the page; a test fails when the committed
//! `man/mcp-forensics.1` differs from it.

use clap::CommandFactory;
use roff::{Roff, bold, italic, roman};

use crate::cli::Cli;
use mcpf_engine::detect::FindingKind;

fn section(title: &str) -> Roff {
    let mut r = Roff::new();
    r.control("SH", [title]);
    r
}

fn paragraph(r: &mut Roff, text: &str) {
    r.control("PP", []);
    r.text([roman(text)]);
}

fn example(r: &mut Roff, what: &str, command: &str) {
    r.control("PP", []);
    r.text([roman(what)]);
    // Indented by .RS/.RE: `.IP "" 4` would need a quoted empty tag, which the roff crate
    // writes as nothing, so the indent became a tag ("4") printed before the command.
    r.control("RS", ["4"]);
    r.text([bold(command)]);
    r.control("RE", []);
}

/// The whole page, in roff: clap's title, name and synopsis, then our sections.
pub fn render() -> String {
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone())
        .date("")
        .source(format!("mcp-forensics {}", env!("CARGO_PKG_VERSION")))
        .manual("mcp-forensics manual");
    let mut out: Vec<u8> = Vec::new();
    // The renders write to a Vec, which cannot fail.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = description().to_writer(&mut out);
    let _ = commands(&cmd).to_writer(&mut out);
    command_options(&cmd, &mut out);
    for part in [
        examples(),
        exit_status(),
        environment(),
        findings(),
        files_and_formats(),
    ] {
        let _ = part.to_writer(&mut out);
    }
    let _ = man.render_version_section(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn description() -> Roff {
    let mut d = section("DESCRIPTION");
    d.text([roman(
        "mcp-forensics analyzes captured Model Context Protocol (MCP) traffic after an incident. It reads pcap and pcapng captures (plain or gzip-compressed), HAR files and JSON access logs; reassembles TCP and HTTP/1.1; parses Server-Sent Events and JSON-RPC; rebuilds MCP sessions over Streamable HTTP and the legacy HTTP+SSE transport; labels every SSE event with the event-ID namespace (the stream) that minted it; and reports what went wrong, in order, with the frames that prove it.",
    )]);
    paragraph(
        &mut d,
        "Its central check is the validity of Last-Event-ID resumption: a resume is only sound when the ID is resolved in the namespace that minted it. After a client falls back from streamable POST responses to a GET event stream, servers with per-transport counters can replay the wrong stream without any error. The analyzer reports the fallback, the unsafe resumption, the cross-namespace replay, the duplicate response it causes, the events it skipped and the request left waiting, linked cause to consequence.",
    );
    d
}

fn commands(cmd: &clap::Command) -> Roff {
    let mut c = section("COMMANDS");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        c.control("TP", []);
        c.text([bold(format!("mcp-forensics {}", sub.get_name()))]);
        c.text([roman(
            sub.get_about().map(|a| a.to_string()).unwrap_or_default(),
        )]);
    }
    c
}

/// One OPTIONS section per command, from clap, under a heading that names the command.
fn command_options(cmd: &clap::Command, out: &mut Vec<u8>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut h = section(&format!("{} OPTIONS", sub.get_name().to_uppercase()));
        h.text([roman(
            sub.get_long_about()
                .or(sub.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default(),
        )]);
        let _ = h.to_writer(&mut *out);
        let sub_man = clap_mangen::Man::new(sub.clone());
        let mut opts: Vec<u8> = Vec::new();
        let _ = sub_man.render_options_section(&mut opts);
        // Drop the generic heading clap_mangen writes; ours names the command.
        let text = String::from_utf8_lossy(&opts).replacen(".SH OPTIONS\n", "", 1);
        out.extend_from_slice(text.as_bytes());
    }
}

fn examples() -> Roff {
    let mut e = section("EXAMPLES");
    example(
        &mut e,
        "Capture an MCP server's traffic on port 8080, every byte of every packet:",
        "tcpdump -i any -U -s 0 -w mcp.pcap 'tcp port 8080'",
    );
    example(
        &mut e,
        "Print the incident timeline:",
        "mcp-forensics analyze mcp.pcap",
    );
    example(
        &mut e,
        "Analyze while capturing:",
        "tcpdump -i lo -U -s 0 -w - 'tcp port 3000' | mcp-forensics analyze -",
    );
    example(
        &mut e,
        "The capture of a proxy's client leg together with its access log and the server leg:",
        "mcp-forensics analyze client-leg.pcap access.jsonl server-leg.pcap",
    );
    example(
        &mut e,
        "Critical findings as JSON, with jq:",
        "mcp-forensics analyze --format json mcp.pcap | jq '.findings[] | select(.severity == \"critical\")'",
    );
    example(
        &mut e,
        "Fail a CI job on any finding of medium severity or above:",
        "mcp-forensics analyze --fail-on medium --format ndjson mcp.pcap > report.ndjson",
    );
    example(
        &mut e,
        "What a finding means:",
        "mcp-forensics explain cross_namespace_replay",
    );
    e
}

fn exit_status() -> Roff {
    let mut x = section("EXIT STATUS");
    for (code, meaning) in [
        ("0", "No finding at or above --fail-on (default high)."),
        ("1", "At least one finding at or above --fail-on."),
        (
            "2",
            "The command line cannot be carried out: a usage error, an unusable option value or file (--output, --tls-keylog), or a --session that names no session.",
        ),
        (
            "3",
            "Every input was analysed and no finding reached --fail-on, but part of an input was lost reading it: corrupt records skipped, or the file or its gzip stream cut short (each said in a warning on standard error). 1, 2 and 4 take precedence.",
        ),
        (
            "4",
            "An input could not be read: missing, unreadable, or not a capture, HAR or log. The report of the others is still written. Takes precedence over 1.",
        ),
        (
            "5",
            "Every input was read and none holds an MCP session (why, with a hint, on standard error).",
        ),
        (
            "130",
            "Interrupted by a signal before the report of what was read was finished.",
        ),
    ] {
        x.control("TP", []);
        x.text([bold(code)]);
        x.text([roman(meaning)]);
    }
    x
}

/// The variables the program reads.
fn environment() -> Roff {
    let mut e = section("ENVIRONMENT");
    for (name, meaning) in [
        (
            "COLUMNS",
            "The width the terminal report, http, flows and explain fit (tables leave columns out, text wraps between words). Unset: the width of the terminal (standard output's, else standard error's, else the controlling terminal's), else 100.",
        ),
        (
            "SSLKEYLOGFILE",
            "An NSS key log analyze decrypts TLS connections with, when --tls-keylog is not given (the variable clients write their key log to). Its secrets are never written to any output.",
        ),
        (
            "NO_COLOR",
            "When set and not empty, the terminal report is not coloured (as --color never). The progress bar does not depend on it: --progress and -q decide.",
        ),
        (
            "TMPDIR",
            "Where the payload and spill files are made (event and body bytes, quiet sessions): unnamed files, removed by the system when the program ends.",
        ),
    ] {
        e.control("TP", []);
        e.text([bold(name)]);
        e.text([roman(meaning)]);
    }
    e
}

/// Every finding kind, from the registry `explain` reads.
fn findings() -> Roff {
    let mut f = section("FINDINGS");
    f.text([roman(
        "Each finding has a kind, a severity, the session, a time, the frames and exchanges it rests on, kind-specific evidence, and caused_by links to the findings that explain it.",
    )]);
    for k in FindingKind::ALL.iter().map(|k| k.info()) {
        f.control("TP", []);
        f.text([
            bold(k.kind.name()),
            roman(" ("),
            italic(k.severity.name()),
            roman(")"),
        ]);
        f.text([roman(format!(
            "Raised when {}. {} {} {}",
            k.when, k.meaning, k.why, k.fix
        ))]);
    }
    f
}

fn files_and_formats() -> Roff {
    let mut fm = section("FILES AND FORMATS");
    for (name, what) in [
        (
            "Captures",
            "pcap (either byte order, microsecond or nanosecond), pcapng (several sections and interfaces, enhanced, simple and obsolete packet blocks), optionally gzip-compressed, detected by content. Link types: Ethernet with stacked VLAN tags, Linux cooked v1 and v2, raw IPv4 and IPv6, BSD and Linux loopback.",
        ),
        (
            "HAR",
            "HAR 1.2 from browsers and proxies (mitmproxy); text/event-stream bodies are parsed into events with estimated times, or taken from _eventSourceMessages when present. Missing headers or bodies are unknown, never absent.",
        ),
        (
            "Access logs",
            "JSON Lines from nginx (log_format escape=json), Envoy (json_format), Caddy, Traefik (accessLog.format json; request_ and downstream_ header fields) and HAProxy (a JSON log-format with a termination state, or frontend and backend names; %tr, %Ta and %ts are read with their meaning), recognised by their keys. An nginx log whose keys the operator named (method, uri, time, duration, a $request line, mcp_session_id, McpSessionId...) is recognised by names and values; how each key was read is printed under the input (JSON: inputs[].read_as) to be checked. For a log nothing can be placed in, the error gives a ready --log-map built from its keys. Text logs (nginx combined, or any log_format with extra quoted fields for the MCP headers) are read with --log-format. A log that writes 200 or 0 for a stream the client dropped still shows the fallback when the POST's end is the GET's start (inferred_from_times); a resume served by another upstream replica than the streams that could have minted its Last-Event-ID is a cross_namespace_replay. Findings that need events are reported as not determinable.",
        ),
        (
            "JSON report",
            "--format json prints one document with schema_version 1, described in docs/report-format.md and docs/report.schema.json in the source repository; --format ndjson prints one record per line.",
        ),
    ] {
        fm.control("TP", []);
        fm.text([bold(name)]);
        fm.text([roman(what)]);
    }
    fm
}

/// Completions for a shell (`bash`, `zsh`, `fish`, `elvish`, `powershell`), of what a person is
/// meant to type: hidden commands and options left out.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut cmd = visible(&Cli::command());
    let mut out: Vec<u8> = Vec::new();
    clap_complete::generate(shell, &mut cmd, "mcp-forensics", &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    match shell {
        // clap_complete names the subcommands' cases from the binary's name with its `-` made
        // `__subcmd__` (`mcp__subcmd__forensics__subcmd__analyze`), while the loop that picks
        // the case names it `mcp__forensics__subcmd__analyze`: nothing past the subcommand
        // would complete.
        clap_complete::Shell::Bash => text.replace("mcp__subcmd__forensics", "mcp__forensics"),
        _ => text,
    }
}

/// `cmd` without its hidden arguments and subcommands (the generators offer them).
fn visible(cmd: &clap::Command) -> clap::Command {
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(visible)
        .collect();
    let mut rebuilt = clap::Command::new(cmd.get_name().to_string());
    if let Some(v) = cmd.get_version() {
        rebuilt = rebuilt.version(v.to_string());
    }
    if let Some(about) = cmd.get_about() {
        rebuilt = rebuilt.about(about.clone());
    }
    rebuilt
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned())
        .subcommands(subs)
}
