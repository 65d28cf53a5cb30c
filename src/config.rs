//! The command line, validated once: every flag is parsed here (times, server endpoints, log
//! maps, thread counts, terminal decisions) into one [`Config`], and each stage is later given
//! only its own typed settings. Nothing past this module reads a flag or the environment.

use std::io::IsTerminal;

use anyhow::{Context, bail};
use mcpf_engine::capture::tcp::{Limits, ServerSpec};
use mcpf_engine::capture::tunnel::{UdpTunnel, UdpTunnelKind};
use mcpf_engine::detect::Severity;
use mcpf_engine::ingest::LogMap;
use mcpf_engine::model::Timestamp;
use mcpf_engine::report::analyze::{Selection, TimeBound};
use mcpf_engine::{InputSpec, Settings};

use crate::terminal::output_width;

use crate::cli::{
    AnalyzeArgs, CaptureArgs, Cli, ColorChoice, Command, ExtractArgs, FlowsArgs, Format, HttpArgs,
    InputArgs, ProgressChoice, ReportFormat, SeverityArg, ViewOutput,
};

/// What one run of the program is to do.
pub enum Config {
    Flows(Flows),
    Http(Http),
    Analyze(Analyze),
    Extract(Extract),
    /// `report FILE`.
    Report(Saved),
    /// `explain [KIND]`.
    Explain(Explain),
    /// `generate man|bash|zsh|...` (hidden): the man page or a completion script.
    Generate(Generated),
}

/// `report FILE`: a saved report rendered again.
pub struct Saved {
    pub file: String,
    pub format: crate::cli::SavedFormat,
    pub width: usize,
    pub color: bool,
    /// A table taller than the terminal may be shown in a pager.
    pub pager: bool,
}

/// `explain [KIND]`.
pub struct Explain {
    pub kind: Option<String>,
    /// The width the text fits.
    pub width: usize,
}

/// `flows FILE...`.
pub struct Flows {
    pub files: Vec<String>,
    pub format: Format,
    /// Where the view goes instead of standard output.
    pub output: Option<std::path::PathBuf>,
    /// The width the table fits.
    pub width: usize,
    pub capture: mcpf_engine::capture::Settings,
}

/// `http FILE...`.
pub struct Http {
    pub inputs: InputSpec,
    /// What expanding the input arguments left out, one line each.
    pub notes: Vec<String>,
    /// The capture stage's settings and the key log; the rest is the engine's defaults.
    pub engine: Settings,
    pub format: Format,
    /// Where the view goes instead of standard output.
    pub output: Option<std::path::PathBuf>,
    pub redact: bool,
    /// Show a progress bar on standard error.
    pub progress: bool,
    /// The width the table fits.
    pub width: usize,
}

/// `analyze FILE...`.
pub struct Analyze {
    pub inputs: InputSpec,
    /// What expanding the input arguments left out, one line each.
    pub notes: Vec<String>,
    /// Everything the run needs: capture settings, key log, threads, caps, the selection.
    pub engine: Settings,
    pub format: ReportFormat,
    pub fail_on: Severity,
    pub redact: bool,
    /// Print each shard's work on standard error at the end (`--shard-stats`).
    pub shard_stats: bool,
    /// Colour the terminal report.
    pub color: bool,
    /// The width the human report fits.
    pub width: usize,
    /// Show a progress bar on standard error.
    pub progress: bool,
    /// Where the report goes instead of standard output.
    pub output: Option<std::path::PathBuf>,
    /// The captures `--write-pcap` writes after the report.
    pub pcaps: Option<mcpf_engine::pcaps::PcapRequest>,
    /// A table taller than the terminal may be shown in a pager.
    pub pager: bool,
}

/// `extract`: the inputs, the run's settings, where the records go.
pub struct Extract {
    pub inputs: InputSpec,
    pub notes: Vec<String>,
    pub engine: Settings,
    pub redact: bool,
    /// The record file to write.
    pub output: std::path::PathBuf,
    pub progress: bool,
}

/// What `generate` prints.
pub enum Generated {
    Man,
    Completions(clap_complete::Shell),
}

impl Config {
    /// Validates the parsed command line; errors name the flag and what it expects.
    pub fn from_cli(cli: Cli) -> anyhow::Result<Config> {
        Ok(match cli.command {
            Command::Flows(a) => Config::Flows(flows(a)?),
            Command::Http(a) => Config::Http(http(a)?),
            Command::Analyze(a) => Config::Analyze(analyze(a)?),
            Command::Extract(a) => Config::Extract(extract(a)?),
            Command::Report(a) => Config::Report(Saved {
                width: output_width(),
                color: terminal_decoration(a.color, &std::io::stdout()),
                pager: crate::pager::wanted(a.no_pager),
                file: a.file,
                format: a.format,
            }),
            Command::Explain(a) => Config::Explain(Explain {
                kind: a.kind,
                width: output_width(),
            }),
            Command::Generate(a) => Config::Generate(generated(&a.what)?),
        })
    }
}

fn flows(a: FlowsArgs) -> anyhow::Result<Flows> {
    Ok(Flows {
        files: a.files,
        format: view_format(&a.output),
        output: a.output.output,
        width: output_width(),
        capture: capture_settings(&a.capture, Vec::new())?,
    })
}

fn http(a: HttpArgs) -> anyhow::Result<Http> {
    let (inputs, notes) = inputs(a.files, &a.input)?;
    Ok(Http {
        inputs,
        notes,
        engine: Settings {
            capture: capture_settings(&a.capture, Vec::new())?,
            tls_keys: tls_keys(a.input.tls_keylog.as_deref())?,
            ..Settings::default()
        },
        format: view_format(&a.output),
        output: a.output.output,
        redact: !a.show_secrets,
        progress: terminal_decoration(ColorChoice::Auto, &std::io::stderr()),
        width: output_width(),
    })
}

fn analyze(a: AnalyzeArgs) -> anyhow::Result<Analyze> {
    let selection = Selection {
        sessions: (!a.session.is_empty()).then(|| a.session.clone()),
        since: time_flag("--since", a.since.as_deref())?,
        until: time_flag("--until", a.until.as_deref())?,
        min_severity: a.min_severity.map(SeverityArg::severity),
        events: a.events,
        all_events: a.all_events,
        all_timelines: a.all,
        profile: a.profile,
    };
    let servers = a
        .server
        .iter()
        .map(|s| {
            server_spec(s).with_context(|| {
                format!("--server {s:?}: expected a port, an address or address:port")
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // A live pipe is analysed on one thread: the hand-over between threads goes in batches, and
    // a batch waiting for more traffic would hold back the sessions that already ended.
    let live = a.files.iter().any(|f| mcpf_engine::ingest::streamed(f));
    let (inputs, notes) = inputs(a.files, &a.input)?;
    let engine = Settings {
        capture: capture_settings(&a.capture, servers)?,
        tls_keys: tls_keys(a.input.tls_keylog.as_deref())?,
        threads: if live { 1 } else { threads(&a.capture) },
        workers: a.workers,
        max_session_events: a.max_session_events,
        max_session_exchanges: a.max_session_exchanges,
        max_held_events: a.max_held_events,
        selection,
        keep_conn_spans: a.write_pcap.is_some(),
        live_flush_ns: live_flush(a.live_flush, live, a.format, a.output.as_deref())?,
        classify: !a.examine_all,
        ..Settings::default()
    };
    let pcaps = a.write_pcap.map(|dir| mcpf_engine::pcaps::PcapRequest {
        dir,
        per_finding: a.write_pcap_per_finding,
    });
    Ok(Analyze {
        pcaps,
        inputs,
        notes,
        engine,
        shard_stats: a.shard_stats,
        format: report_format(a.format, a.output.as_deref()),
        fail_on: a.fail_on.severity(),
        redact: !a.show_secrets,
        width: output_width(),
        color: match &a.output {
            Some(_) => a.color == ColorChoice::Always,
            None => terminal_decoration(a.color, &std::io::stdout()),
        },
        progress: show_progress(a.progress, a.quiet, &std::io::stderr()),
        // A live pipe's report comes at its end, after Ctrl-C: no pager then.
        pager: a.output.is_none() && !live && crate::pager::wanted(a.no_pager),
        output: a.output,
    })
}

fn extract(a: ExtractArgs) -> anyhow::Result<Extract> {
    let output = record_path(&a.output, &a.files)?;
    let (inputs, notes) = inputs(a.files, &a.input)?;
    let engine = Settings {
        capture: capture_settings(&a.capture, Vec::new())?,
        tls_keys: tls_keys(a.input.tls_keylog.as_deref())?,
        threads: threads(&a.capture),
        classify: !a.examine_all,
        ..Settings::default()
    };
    Ok(Extract {
        inputs,
        notes,
        engine,
        redact: !a.show_secrets,
        output,
        progress: show_progress(ProgressChoice::Auto, a.quiet, &std::io::stderr()),
    })
}

/// `--output`: a `.ndjson` path as it is; a directory gets the first input's name with
/// `.records.ndjson`, so that extract runs of different inputs can share one directory.
fn record_path(output: &std::path::Path, files: &[String]) -> anyhow::Result<std::path::PathBuf> {
    if output.extension().is_some_and(|e| e == "ndjson") && !output.is_dir() {
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| {
                format!("--output {}: cannot create its directory", output.display())
            })?;
        }
        return Ok(output.to_path_buf());
    }
    std::fs::create_dir_all(output)
        .with_context(|| format!("--output {}: cannot create the directory", output.display()))?;
    let first = files.first().map(String::as_str).unwrap_or("stdin");
    let name = std::path::Path::new(first)
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| *n != "-")
        .unwrap_or("stdin");
    Ok(output.join(format!("{name}.records.ndjson")))
}

/// `--live-flush SECS` in nanoseconds: for a stream input written as NDJSON only (other
/// reports are written once, at the end, where an interim one says nothing more).
fn live_flush(
    secs: Option<f64>,
    live: bool,
    format: Option<ReportFormat>,
    output: Option<&std::path::Path>,
) -> anyhow::Result<Option<i64>> {
    let Some(secs) = secs else {
        return Ok(None);
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0 * 365.0) {
        anyhow::bail!("--live-flush {secs}: expected seconds, more than 0");
    }
    if !live || report_format(format, output) != ReportFormat::Ndjson {
        anyhow::bail!(
            "--live-flush reports sessions before they end on a stream input (standard input, a FIFO) written as --format ndjson; this run writes its report once, at the end"
        );
    }
    Ok(Some((secs * 1e9) as i64))
}

fn generated(what: &str) -> anyhow::Result<Generated> {
    if what == "man" {
        return Ok(Generated::Man);
    }
    match what.parse() {
        Ok(shell) => Ok(Generated::Completions(shell)),
        Err(_) => {
            bail!("generate {what:?}: expected man, bash, zsh, fish, elvish or powershell")
        }
    }
}

/// The inputs named (directories and quoted globs expanded), and what the expansion left out.
fn inputs(files: Vec<String>, a: &InputArgs) -> anyhow::Result<(InputSpec, Vec<String>)> {
    let text = a
        .log_format
        .as_deref()
        .map(|f| LogMap::text_format(f).map_err(|e| anyhow::anyhow!("--log-format: {e}")))
        .transpose()?;
    let log_map = a.log_map.as_deref();
    let expanded = mcpf_engine::inputs::expand(&files);
    let spec = InputSpec {
        files: expanded.files,
        format: a.input_format.into(),
        log_map: text.or(log_map.map(read_log_map).transpose()?),
    };
    Ok((spec, expanded.notes))
}

/// `--log-map ARG`: inline JSON, a JSON file, or `key=FIELD,...`.
fn read_log_map(arg: &str) -> anyhow::Result<LogMap> {
    let trimmed = arg.trim();
    let map = if trimmed.starts_with('{') {
        LogMap::from_json(trimmed).map_err(|e| e.to_string())
    } else if std::path::Path::new(trimmed).is_file() {
        let text = std::fs::read_to_string(trimmed)
            .with_context(|| format!("--log-map: cannot read {trimmed}"))?;
        LogMap::from_json(&text).map_err(|e| format!("{trimmed}: {e}"))
    } else {
        LogMap::parse(trimmed).map_err(|e| e.to_string())
    };
    map.map_err(|e| anyhow::anyhow!("--log-map: {e}"))
}

fn capture_settings(
    a: &CaptureArgs,
    servers: Vec<ServerSpec>,
) -> anyhow::Result<mcpf_engine::capture::Settings> {
    Ok(mcpf_engine::capture::Settings {
        limits: Limits {
            max_buffered_per_direction: a.max_buffer_per_direction,
            max_buffered_total: a.max_buffer_total,
            idle_timeout_secs: a.idle_timeout,
            max_connections: a.max_connections,
            ..Default::default()
        },
        servers,
        tunnels: tunnels(&a.tunnel)?,
        keep_duplicates: a.keep_duplicates,
    })
}

/// `--tunnel udp:PORT=vxlan|geneve`, each port given once.
fn tunnels(args: &[String]) -> anyhow::Result<Vec<UdpTunnel>> {
    let mut out: Vec<UdpTunnel> = Vec::new();
    for arg in args {
        let Some(t) = tunnel_spec(arg) else {
            bail!(
                "--tunnel {arg:?}: expected udp:PORT=vxlan or udp:PORT=geneve, PORT from 1 to 65535 (e.g. --tunnel udp:8472=vxlan)"
            );
        };
        if let Some(earlier) = out.iter().find(|e| e.port == t.port && e.kind != t.kind) {
            bail!(
                "--tunnel {arg:?}: UDP port {} is already given as {}",
                t.port,
                kind_name(earlier.kind)
            );
        }
        out.push(t);
    }
    Ok(out)
}

/// `udp:8472=vxlan`, `UDP:7000=Geneve`.
fn tunnel_spec(text: &str) -> Option<UdpTunnel> {
    let t = text.trim();
    let (proto, rest) = t.split_once(':')?;
    let (port, kind) = rest.split_once('=')?;
    if !proto.eq_ignore_ascii_case("udp") {
        return None;
    }
    let port = port.trim().parse::<u16>().ok().filter(|&p| p > 0)?;
    let kind = match kind.trim().to_ascii_lowercase().as_str() {
        "vxlan" => UdpTunnelKind::Vxlan,
        "geneve" => UdpTunnelKind::Geneve,
        _ => return None,
    };
    Some(UdpTunnel { port, kind })
}

fn kind_name(kind: UdpTunnelKind) -> &'static str {
    match kind {
        UdpTunnelKind::Vxlan => "vxlan",
        UdpTunnelKind::Geneve => "geneve",
    }
}

/// Threads: as many as asked, else as the machine has cores.
fn threads(a: &CaptureArgs) -> usize {
    a.threads.unwrap_or_else(cores).max(1)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `8080`, `10.0.0.7`, `10.0.0.7:8080`, `[::1]:3000`.
fn server_spec(text: &str) -> Option<ServerSpec> {
    let t = text.trim();
    if let Ok(p) = t.parse::<u16>() {
        return Some(ServerSpec::Port(p));
    }
    if let Ok(e) = t.parse() {
        return Some(ServerSpec::Endpoint(e));
    }
    t.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
        .map(ServerSpec::Addr)
}

fn time_flag(flag: &str, value: Option<&str>) -> anyhow::Result<Option<TimeBound>> {
    let Some(v) = value else { return Ok(None) };
    match Timestamp::parse_rfc3339(v).map(TimeBound::At) {
        Some(t) => Ok(Some(t)),
        None => match TimeBound::parse_time_of_day(v) {
            Some(t) => Ok(Some(t)),
            None => bail!(
                "{flag} {v:?}: expected an RFC 3339 time such as 2026-11-02T12:00:00Z, or a time of day (UTC) as the timeline prints it, such as 04:36:14 or 04:36:14.297"
            ),
        },
    }
}

/// The progress bar: `-q` and `--progress never` hide it, `always` shows it, `auto` on a
/// terminal; colour has nothing to do with it.
fn show_progress(choice: ProgressChoice, quiet: bool, stream: &impl IsTerminal) -> bool {
    match choice {
        _ if quiet => false,
        ProgressChoice::Always => true,
        ProgressChoice::Never => false,
        ProgressChoice::Auto => stream.is_terminal(),
    }
}

/// The key log named by `--tls-keylog`, else by `SSLKEYLOGFILE`. An error names the file and
/// what is wrong with it, never a line of it.
fn tls_keys(
    flag: Option<&std::path::Path>,
) -> anyhow::Result<Option<std::sync::Arc<mcpf_engine::tls::KeyLog>>> {
    let env = std::env::var_os("SSLKEYLOGFILE").filter(|v| !v.is_empty());
    let (path, from) = match (flag, &env) {
        (Some(p), _) => (p.to_path_buf(), "--tls-keylog"),
        (None, Some(e)) => (std::path::PathBuf::from(e), "SSLKEYLOGFILE"),
        (None, None) => return Ok(None),
    };
    let file = std::fs::File::open(&path)
        .map_err(|e| anyhow::anyhow!("{from} {}: cannot read it: {e}", path.display()))?;
    // Read line by line, never whole: a key log can be large, and a wrong path (`/dev/zero`)
    // must end at once.
    let log = mcpf_engine::tls::KeyLog::read(std::io::BufReader::with_capacity(1 << 16, file))
        .map_err(|e| anyhow::anyhow!("{from} {}: {e}", path.display()))?;
    if log.bytes_not_read {
        eprintln!(
            "mcp-forensics: {from} {}: warning: only its first {} GiB were read",
            mcpf_engine::report::sanitize::terminal(&path.display().to_string()),
            mcpf_engine::tls::keylog::MAX_KEYLOG_BYTES >> 30
        );
    }
    Ok(Some(std::sync::Arc::new(log)))
}

/// Colour (and the `http` command's progress bar): only on a terminal, and never with `NO_COLOR`
/// or `--color never`.
fn terminal_decoration(choice: ColorChoice, stream: &impl IsTerminal) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

/// The format asked for, else the one the output file's extension names (`-o incident.html`),
/// else the table.
fn report_format(asked: Option<ReportFormat>, output: Option<&std::path::Path>) -> ReportFormat {
    asked
        .or_else(|| named_format(output?))
        .unwrap_or(ReportFormat::Table)
}

/// The format an output file's extension names, if any.
fn named_format(output: &std::path::Path) -> Option<ReportFormat> {
    let ext = output.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "json" => ReportFormat::Json,
        "ndjson" | "jsonl" => ReportFormat::Ndjson,
        "md" | "markdown" => ReportFormat::Markdown,
        "html" | "htm" => ReportFormat::Html,
        _ => return None,
    })
}

/// The format of the `http` and `flows` views: as [`report_format`] picks the report's, among
/// the views' formats (an extension naming another, `.md`, gives the table).
fn view_format(a: &ViewOutput) -> Format {
    let named = || match named_format(a.output.as_deref()?)? {
        ReportFormat::Json => Some(Format::Json),
        ReportFormat::Ndjson => Some(Format::Ndjson),
        _ => None,
    };
    a.format.or_else(named).unwrap_or(Format::Table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnel_specs() {
        let vxlan = |port| UdpTunnel {
            port,
            kind: UdpTunnelKind::Vxlan,
        };
        assert_eq!(tunnel_spec("udp:8472=vxlan"), Some(vxlan(8472)));
        assert_eq!(
            tunnel_spec(" UDP:7000=Geneve "),
            Some(UdpTunnel {
                port: 7000,
                kind: UdpTunnelKind::Geneve
            })
        );
        for bad in [
            "8472=vxlan",
            "tcp:8472=vxlan",
            "udp:0=vxlan",
            "udp:70000=vxlan",
            "udp:8472=gre",
            "udp:8472",
            "udp:=vxlan",
        ] {
            assert_eq!(tunnel_spec(bad), None, "{bad}");
        }
        let err = tunnels(&["udp:8472=gre".into()]).unwrap_err().to_string();
        assert!(
            err.starts_with("--tunnel \"udp:8472=gre\": expected udp:PORT=vxlan"),
            "{err}"
        );
        let err = tunnels(&["udp:8472=vxlan".into(), "udp:8472=geneve".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("UDP port 8472 is already given as vxlan"),
            "{err}"
        );
        assert_eq!(
            tunnels(&["udp:8472=vxlan".into(), "udp:8472=vxlan".into()]).unwrap(),
            [vxlan(8472), vxlan(8472)]
        );
    }

    #[test]
    fn server_specs() {
        assert_eq!(server_spec("8080"), Some(ServerSpec::Port(8080)));
        assert_eq!(
            server_spec("10.0.0.7"),
            Some(ServerSpec::Addr("10.0.0.7".parse().unwrap()))
        );
        assert_eq!(
            server_spec("[::1]:3000"),
            Some(ServerSpec::Endpoint("[::1]:3000".parse().unwrap()))
        );
        assert_eq!(
            server_spec("[::1]"),
            Some(ServerSpec::Addr("::1".parse().unwrap()))
        );
        assert_eq!(server_spec("a:b:c"), None);
    }

    #[test]
    fn times_name_their_flag() {
        assert!(time_flag("--since", None).unwrap().is_none());
        let e = time_flag("--until", Some("yesterday")).unwrap_err();
        assert!(e.to_string().starts_with("--until \"yesterday\""), "{e}");
        // As the timeline prints it: a time of day, UTC, on the session's date.
        let t = time_flag("--since", Some("04:36:14.297")).unwrap().unwrap();
        assert_eq!(
            t,
            TimeBound::OfDay((4 * 3600 + 36 * 60 + 14) * 1_000_000_000 + 297_000_000)
        );
        let day = Timestamp::parse_rfc3339("2026-11-30T23:59:00Z").unwrap();
        assert_eq!(
            t.for_session(day),
            Timestamp::parse_rfc3339("2026-11-30T04:36:14.297Z").unwrap()
        );
        for bad in ["24:00", "4:61", "04:36:14.1234567890", "04:36:14:1", ":"] {
            assert!(time_flag("--since", Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn generate_targets() {
        assert!(matches!(generated("man"), Ok(Generated::Man)));
        assert!(matches!(generated("zsh"), Ok(Generated::Completions(_))));
        assert!(generated("word").is_err());
    }
}
