//! Command-line definitions (clap derive). One definition per flag feeds `--help`, the man page
//! and the shell completions.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Forensic analyzer for Model Context Protocol (MCP) traffic: reads packet captures, rebuilds
/// TCP, HTTP/1.1, Server-Sent Events, JSON-RPC and MCP sessions, and explains what went wrong.
#[derive(Debug, Parser)]
#[command(name = "mcp-forensics", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the TCP connections of captures with their reassembly health.
    ///
    /// One row per TCP connection (the same connections Wireshark numbers as tcp.stream): client,
    /// server, start, duration, payload bytes each way, gaps (bytes that crossed the wire but are
    /// not in the capture), retransmitted and out-of-order segments, and how it ended.
    Flows(FlowsArgs),

    /// List the HTTP/1.1 exchanges of captures, HAR files and JSON access logs, with SSE events
    /// and JSON-RPC messages.
    ///
    /// One row per exchange (request paired with its response, pipelined or not): time, TCP
    /// connection, method, target, status, content type, body sizes, SSE event count, the JSON-RPC
    /// messages carried (method and id), and flags: incomplete, cut by capture end, decoded.
    /// HTTP is recognised by content on any port. A HAR or log input is listed with what it lacks
    /// (bodies, SSE event times, headers that were not logged).
    Http(HttpArgs),

    /// Rebuild MCP sessions and report what went wrong: the incident timeline.
    ///
    /// Reads captures, reassembles TCP and HTTP/1.1, parses SSE and JSON-RPC, rebuilds MCP
    /// sessions (Streamable HTTP and the legacy HTTP+SSE transport), labels every SSE event with
    /// the namespace that minted its ID, and reports fallbacks, unsafe or cross-namespace
    /// resumptions, event-ID resets and gaps, duplicate responses, reused request IDs, skipped
    /// events and requests never answered, each with the frames that prove it.
    ///
    /// Exit status: 0 when no finding is at or above --fail-on, 1 when one is, 2 when an input
    /// could not be analysed, 3 when nothing reached --fail-on but part of an input was lost
    /// reading it (corrupt records skipped, a cut file or gzip stream).
    Analyze(AnalyzeArgs),

    /// Write the exchange records of captures, HAR files and logs, for `analyze` elsewhere.
    ///
    /// Runs the stages that depend on each input's bytes (capture, TLS, HTTP/1.1 and HTTP/2,
    /// SSE) and writes every HTTP event they hand to the MCP stage, with its logical session
    /// key, and what the run counted, as NDJSON records (docs/records.md). `analyze` reads the
    /// file as an input and gives the report the inputs themselves give. Secrets are redacted
    /// in the records unless --show-secrets.
    ///
    /// Exit status: 0 when every input was read, 2 on an error, 3 when part of an input was
    /// lost reading it, 4 when an input could not be read (the records of the others are
    /// written).
    Extract(ExtractArgs),

    /// Render a saved report again, without the capture.
    ///
    /// Reads what `analyze --format json` or `--format ndjson` wrote and prints it as the
    /// terminal report or as Markdown.
    Report(ReportArgs),

    /// Explain a finding kind: what it means, why it matters, what to change.
    ///
    /// Without KIND, lists every kind with its severity.
    Explain(ExplainArgs),

    /// Print the man page or shell completions generated from these definitions.
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// `man`, or a shell to complete for: bash, zsh, fish, elvish, powershell.
    pub what: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Sessions, findings and the incident timeline, for people.
    Table,
    /// One JSON document (schema_version 1, see docs/report-format.md).
    Json,
    /// One JSON record per line (input, session, finding, timeline, event, summary).
    Ndjson,
    /// For a postmortem: the verdict, sessions, findings (with Wireshark filters), a Mermaid
    /// sequence diagram and the timeline of each incident, as Markdown.
    Markdown,
    /// One self-contained HTML file: a swimlane view per incident (a lane per stream, the
    /// fallback, drop, resume and replay drawn across lanes) and the findings with their evidence.
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeverityArg {
    Critical,
    High,
    Medium,
    Low,
    Info,
}

impl SeverityArg {
    pub fn severity(self) -> mcpf_engine::detect::Severity {
        use mcpf_engine::detect::Severity;
        match self {
            SeverityArg::Critical => Severity::Critical,
            SeverityArg::High => Severity::High,
            SeverityArg::Medium => Severity::Medium,
            SeverityArg::Low => Severity::Low,
            SeverityArg::Info => Severity::Info,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when standard output is a terminal and NO_COLOR is not set.
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Captures (pcap or pcapng), HAR files or JSON Lines access logs (nginx, Envoy, Caddy, HAProxy, Traefik),
    /// optionally gzip-compressed, detected by content; - reads standard input, recognised the same way.
    /// Several inputs form one report: sessions are matched across them by session ID and
    /// server.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    /// Workers for the shards, whatever the cores (for tests and benchmarks: the report must not
    /// depend on it).
    #[arg(long, hide = true, value_name = "N")]
    pub workers: Option<usize>,

    /// Print on standard error, at the end, one JSON line of the work each shard of the
    /// per-connection stages did (for benchmarks).
    #[arg(long, hide = true)]
    pub shard_stats: bool,

    /// Write the report to FILE instead of standard output (created, or truncated); warnings and
    /// the progress bar stay on standard error, and the report is not coloured unless --color
    /// always.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,

    /// After the report, write into DIR (created if need be) one capture per session shown,
    /// S1.pcap, holding every frame of the TCP connections that carried its streams, unchanged
    /// (time, bytes, link type). With several capture inputs, one per input: S1.I2.pcap. A
    /// pcapng input gives .pcapng files. HAR files and logs have no frames and are passed over.
    /// The inputs are read a second time: standard input and FIFOs are refused.
    #[arg(long, value_name = "DIR")]
    pub write_pcap: Option<std::path::PathBuf>,

    /// With --write-pcap, also one capture per finding shown, F4.pcap, holding exactly the frames
    /// it cites (at every vantage point).
    #[arg(long, requires = "write_pcap")]
    pub write_pcap_per_finding: bool,

    /// Output format (by default the table, or what the --output file's extension names:
    /// .json, .ndjson, .md, .html).
    #[arg(short, long, value_enum, ignore_case = true)]
    pub format: Option<ReportFormat>,

    /// Add every SSE event (session, stream, namespace, ID, time, frame, JSON-RPC summary) to
    /// the JSON and NDJSON reports.
    #[arg(short, long)]
    pub events: bool,

    /// Show every event in the timeline instead of condensed runs.
    #[arg(long)]
    pub all_events: bool,

    /// Print the timeline of every session, those without findings too (the table prints the
    /// timelines of incidents, and of the sessions --session names).
    #[arg(short, long)]
    pub all: bool,

    /// Add the call profile to the table: per server and per tool or method, the calls, errors
    /// (JSON-RPC codes, isError results, HTTP statuses), those with no answer, and latency
    /// p50/p95/p99/max. The JSON and NDJSON reports always have it.
    #[arg(short, long)]
    pub profile: bool,

    /// Write the table straight to the terminal. Without it, a table taller than the terminal
    /// is shown in a pager ($PAGER, else `less -FRX`, as git does), so it opens on the verdict.
    #[arg(long)]
    pub no_pager: bool,

    /// On a live pipe written as NDJSON, a session quiet for SECS (capture time) is reported
    /// as it stands, an `interim` record with what its own detectors find so far, without
    /// waiting for its end; again if it goes on and falls quiet again; finally when it ends.
    #[arg(long, value_name = "SECS")]
    pub live_flush: Option<f64>,

    /// Examine every connection whole. Without it, a connection whose first bytes show it does
    /// not carry MCP (TLS without keys, not HTTP, a first request that cannot be MCP) is set
    /// aside, its bytes counted and not parsed, unless it shows MCP later
    /// (docs/classification.md).
    #[arg(long)]
    pub examine_all: bool,

    /// Only this session (S1, S2... or an Mcp-Session-Id, whole or as the table shortens it:
    /// 2665…92a9); repeatable. One that names no session is an error.
    #[arg(short, long, value_name = "SESSION", help_heading = "Filters")]
    pub session: Vec<String>,

    /// Only what happened at or after this time: RFC 3339 (2026-11-02T12:00:00Z), or a time of
    /// day in UTC as the timeline prints it (04:36:14.297), on each session's date.
    #[arg(long, value_name = "TIME", help_heading = "Filters")]
    pub since: Option<String>,

    /// Only what happened at or before this time (as --since).
    #[arg(long, value_name = "TIME", help_heading = "Filters")]
    pub until: Option<String>,

    /// Hide findings below this severity.
    #[arg(
        short,
        long,
        value_enum,
        ignore_case = true,
        value_name = "SEVERITY",
        help_heading = "Filters"
    )]
    pub min_severity: Option<SeverityArg>,

    /// Exit with status 1 when a finding is at or above this severity.
    #[arg(
        long,
        value_enum,
        ignore_case = true,
        default_value = "high",
        value_name = "SEVERITY"
    )]
    pub fail_on: SeverityArg,

    /// Treat this endpoint as an MCP server when telling client from server (an address, a
    /// port, or address:port); repeatable. Needed only when a capture starts mid-connection on
    /// unusual ports.
    #[arg(long, value_name = "ADDR|PORT")]
    pub server: Vec<String>,

    /// Show credentials instead of redacting them. By default every output redacts the value of
    /// every name that announces a credential, by one rule wherever the name is (a header, a
    /// query, fragment or path parameter, a JSON member): names holding token, secret, password,
    /// passphrase, credential, signature, cookie, auth or jsessionid, or ending in key after
    /// another word (api_key, access_key, X-Api-Key); identifiers (Mcp-Session-Id, session_id,
    /// Last-Event-ID), Idempotency-Key and progressToken are kept. Also a URL's userinfo
    /// password, and tokens of a known shape anywhere (sk-..., sk_live_..., ghp_...,
    /// github_pat_..., glpat-..., xoxb-..., AIza..., AKIA... and the secret access key next to
    /// it, JWTs, Bearer tokens), keeping their prefix and length.
    #[arg(long)]
    pub show_secrets: bool,

    /// When to colour the terminal report (auto: on a terminal, unless NO_COLOR is set).
    #[arg(long, value_enum, ignore_case = true, default_value = "auto")]
    pub color: ColorChoice,

    /// When to show a progress bar on standard error (auto: when it is a terminal), whatever the
    /// colour; always on a standard error that is no terminal (a log) writes a plain line every
    /// two seconds instead.
    #[arg(long, value_enum, ignore_case = true, default_value = "auto")]
    pub progress: ProgressChoice,

    /// No progress bar (as --progress never).
    #[arg(short, long)]
    pub quiet: bool,

    #[command(flatten)]
    pub input: InputArgs,

    /// SSE events one session holds for analysis (about 300 bytes each while it is analysed);
    /// past it events are counted, not held, and findings that rest on an event's absence
    /// (unanswered_request, skipped_events, resume_gap) are reported as not determinable for
    /// that session.
    #[arg(
        long,
        value_name = "N",
        default_value_t = mcpf_engine::mcp::MAX_SESSION_EVENTS,
        help_heading = "Limits"
    )]
    pub max_session_events: u64,

    /// Exchanges one session holds for analysis (about a kilobyte each); past it exchanges are
    /// counted, not held, and findings that rest on an answer's or event's absence are
    /// reported as not determinable for that session.
    #[arg(
        long,
        value_name = "N",
        default_value_t = mcpf_engine::mcp::MAX_SESSION_EXCHANGES,
        help_heading = "Limits"
    )]
    pub max_session_exchanges: u64,

    /// SSE events the sessions seen in several inputs may hold together while they wait for
    /// their other observations to end (for the hop comparison); past it the oldest are
    /// reported at once and compared with what is kept of them.
    #[arg(
        long,
        value_name = "N",
        default_value_t = mcpf_engine::MAX_EVENTS_HELD,
        help_heading = "Limits"
    )]
    pub max_held_events: usize,

    #[command(flatten)]
    pub capture: CaptureArgs,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Captures (pcap or pcapng), HAR files or JSON Lines access logs, as `analyze` reads them.
    /// They are read as one run: captures merged by time, a connection followed across the
    /// files of a rotated capture.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    /// Where the records go: a directory (created if need be), which gets
    /// FIRST-INPUT.records.ndjson, or a file path ending in .ndjson.
    #[arg(short, long, value_name = "DIR")]
    pub output: std::path::PathBuf,

    /// Write credentials into the records as they were sent (see analyze --show-secrets).
    #[arg(long)]
    pub show_secrets: bool,

    /// Examine every connection whole (see analyze --examine-all).
    #[arg(long)]
    pub examine_all: bool,

    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub capture: CaptureArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A report written by `analyze --format json` or `--format ndjson` (`-` for standard input).
    pub file: String,

    /// How to render it.
    #[arg(long, value_enum, ignore_case = true, default_value_t = SavedFormat::Table)]
    pub format: SavedFormat,

    /// Colour in the terminal report.
    #[arg(long, value_enum, ignore_case = true, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Write the table straight to the terminal, never through a pager (as analyze).
    #[arg(long)]
    pub no_pager: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SavedFormat {
    /// The terminal report.
    Table,
    /// The postmortem Markdown of `analyze --format markdown`.
    Markdown,
    /// The self-contained HTML of `analyze --format html`.
    Html,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A finding kind, e.g. cross_namespace_replay.
    pub kind: Option<String>,
}

#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Capture files (pcap or pcapng), HAR files or JSON Lines access logs (nginx, Envoy,
    /// Caddy), each optionally gzip-compressed; the format is detected from the content.
    /// - reads standard input, recognised the same way.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    #[command(flatten)]
    pub output: ViewOutput,

    /// Show credentials instead of redacting them. By default every output redacts the value of
    /// every name that announces a credential, by one rule wherever the name is (a header, a
    /// query, fragment or path parameter, a JSON member): names holding token, secret, password,
    /// passphrase, credential, signature, cookie, auth or jsessionid, or ending in key after
    /// another word (api_key, access_key, X-Api-Key); identifiers (Mcp-Session-Id, session_id,
    /// Last-Event-ID), Idempotency-Key and progressToken are kept. Also a URL's userinfo
    /// password, and tokens of a known shape anywhere (sk-..., sk_live_..., ghp_...,
    /// github_pat_..., glpat-..., xoxb-..., AIza..., AKIA... and the secret access key next to
    /// it, JWTs, Bearer tokens), keeping their prefix and length.
    #[arg(long)]
    pub show_secrets: bool,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub capture: CaptureArgs,
}

/// How the inputs of `analyze` and `http` are read: their format, the fields of a log, the key
/// log of TLS connections.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// How to read every FILE: auto detects it from the content (pcap/pcapng magic, a HAR's
    /// log.entries, the keys of a JSON log's first line).
    #[arg(
        long,
        value_enum,
        ignore_case = true,
        default_value = "auto",
        value_name = "FORMAT"
    )]
    pub input_format: InputFormat,

    /// Field names of a JSON Lines access log that is not nginx, Envoy, Caddy, HAProxy or Traefik, as
    /// key=FIELD,... or a JSON file (or inline object) of the same keys. Keys: time (end of the
    /// request) or start, method, path, status, duration, duration_unit (s, ms, us, ns),
    /// req.HEADER and resp.HEADER (a field holding that header), request_headers and
    /// response_headers (a field holding an object of headers), client, connection. Nested
    /// fields as a.b. Applies to every JSON Lines input.
    #[arg(long, value_name = "MAP")]
    pub log_map: Option<String>,

    /// The nginx log_format of a text access log (`combined`, or the format string with extra
    /// quoted fields such as "$http_mcp_session_id" "$sent_http_mcp_session_id"
    /// "$http_last_event_id"): every input that is not a capture is read as lines in it.
    #[arg(long, value_name = "FORMAT", conflicts_with = "log_map")]
    pub log_format: Option<String>,

    /// An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write): TLS 1.2
    /// and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM,
    /// ChaCha20-Poly1305, and TLS 1.2's AES-CBC suites). Default: $SSLKEYLOGFILE when it is set.
    /// The secrets are never written to any output.
    #[arg(short = 'k', long, value_name = "FILE")]
    pub tls_keylog: Option<std::path::PathBuf>,
}

/// `--input-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// Detect from the content.
    Auto,
    /// A packet capture (pcap or pcapng).
    Pcap,
    /// A HAR file.
    Har,
    /// A JSON Lines access log.
    Log,
}

impl From<InputFormat> for mcpf_engine::ingest::FormatChoice {
    fn from(f: InputFormat) -> Self {
        match f {
            InputFormat::Auto => mcpf_engine::ingest::FormatChoice::Auto,
            InputFormat::Pcap => mcpf_engine::ingest::FormatChoice::Capture,
            InputFormat::Har => mcpf_engine::ingest::FormatChoice::Har,
            InputFormat::Log => mcpf_engine::ingest::FormatChoice::Log,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables for people.
    Table,
    /// One JSON document (schema_version 1, see docs/report-format.md).
    Json,
    /// One JSON record per line, each with its type and schema_version.
    Ndjson,
}

/// Where and how the `http` and `flows` views are written.
#[derive(Debug, Args)]
pub struct ViewOutput {
    /// Output format (by default the table, or what the --output file's extension names:
    /// .json, .ndjson).
    #[arg(short, long, value_enum, ignore_case = true)]
    pub format: Option<Format>,

    /// Write the view to FILE instead of standard output (created, or truncated); warnings stay
    /// on standard error.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct FlowsArgs {
    /// Capture files (pcap or pcapng, optionally gzip-compressed); - reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    #[command(flatten)]
    pub output: ViewOutput,

    #[command(flatten)]
    pub capture: CaptureArgs,
}

/// The largest `--idle-timeout`: 100 years, longer than any capture. Reassembly counts time in
/// nanoseconds in an `i64`, where a larger number of seconds does not fit (2^63 once wrapped
/// round to a timeout of nothing, closing every connection at once), so it is refused here.
pub const MAX_IDLE_TIMEOUT_SECS: u64 = 100 * 365 * 86_400;

/// Limits of TCP reassembly; the defaults suit captures of any size.
#[derive(Debug, Args, Clone)]
pub struct CaptureArgs {
    /// Out-of-order bytes held for one direction of a connection before the hole is declared
    /// lost (a gap).
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20, help_heading = "Reassembly")]
    pub max_buffer_per_direction: usize,

    /// Out-of-order bytes held over all connections.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20, help_heading = "Reassembly")]
    pub max_buffer_total: usize,

    /// Connections tracked at once; past it the least recently active is evicted (half-open
    /// ones first), counted and reported.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100_000,
        help_heading = "Reassembly"
    )]
    pub max_connections: usize,

    /// Seconds of capture time after which a silent connection is closed and forgotten (at most
    /// 100 years).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 900,
        value_parser = clap::value_parser!(u64).range(..=MAX_IDLE_TIMEOUT_SECS),
        help_heading = "Reassembly"
    )]
    pub idle_timeout: u64,

    /// analyze: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and
    /// JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than
    /// the cores the machine has less one); sessions, detectors and JSON records each have a
    /// thread of their own. 1 runs everything on one thread. The report is the same byte for
    /// byte whatever N. Default: the cores the machine has. (The http and flows views run on one
    /// thread.)
    #[arg(long, value_name = "N", help_heading = "Reassembly")]
    pub threads: Option<usize>,

    /// Read UDP datagrams to PORT as a tunnel (repeatable): udp:PORT=vxlan or udp:PORT=geneve,
    /// e.g. udp:8472=vxlan (the VXLAN port of the Linux kernel's default and of flannel).
    /// Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III),
    /// IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own
    /// addresses.
    #[arg(long, value_name = "udp:PORT=KIND", help_heading = "Decoding")]
    pub tunnel: Vec<String>,

    /// Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID
    /// and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is
    /// removed and counted, as editcap -d removes them: the second copy a SPAN port mirroring
    /// both directions delivers, or one packet captured on two interfaces. A sender's
    /// retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more).
    #[arg(long, help_heading = "Decoding")]
    pub keep_duplicates: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn tunnel_is_repeatable() {
        let cli = Cli::try_parse_from([
            "mcp-forensics",
            "flows",
            "--tunnel",
            "udp:8472=vxlan",
            "--tunnel",
            "udp:7000=geneve",
            "x.pcap",
        ])
        .unwrap();
        let Command::Flows(a) = cli.command else {
            panic!("flows");
        };
        assert_eq!(a.capture.tunnel, ["udp:8472=vxlan", "udp:7000=geneve"]);
    }

    #[test]
    fn idle_timeout_beyond_a_century_is_refused_not_wrapped() {
        let parse = |v: &str| {
            Cli::try_parse_from(["mcp-forensics", "flows", "x.pcap", "--idle-timeout", v])
        };
        let huge = (1u64 << 63).to_string();
        let Err(err) = parse(&huge) else {
            panic!("2^63 is refused");
        };
        assert!(err.to_string().contains("--idle-timeout"), "{err}");
        assert!(parse(&(MAX_IDLE_TIMEOUT_SECS + 1).to_string()).is_err());
        let max = MAX_IDLE_TIMEOUT_SECS.to_string();
        assert!(parse(&max).is_ok());
        // The largest accepted value still fits the nanoseconds reassembly counts in.
        assert!(
            MAX_IDLE_TIMEOUT_SECS
                .checked_mul(1_000_000_000)
                .is_some_and(|n| n <= i64::MAX as u64)
        );
    }
}
