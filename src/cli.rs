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

    /// List the HTTP/1.1 exchanges of captures, with SSE events and JSON-RPC messages.
    ///
    /// One row per exchange (request paired with its response, pipelined or not): time, TCP
    /// connection, method, target, status, content type, body sizes, SSE event count, the JSON-RPC
    /// messages carried (method and id), and flags: incomplete, cut by capture end, decoded.
    /// HTTP is recognised by content on any port.
    Http(HttpArgs),
}

#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Capture files (pcap or pcapng, optionally gzip-compressed); - reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,

    /// Show credentials (Authorization, cookies, API keys, tokens in URLs) instead of redacting
    /// them.
    #[arg(long)]
    pub show_secrets: bool,

    #[command(flatten)]
    pub capture: CaptureArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables for people.
    Table,
    /// One JSON document.
    Json,
}

#[derive(Debug, Args)]
pub struct FlowsArgs {
    /// Capture files (pcap or pcapng, optionally gzip-compressed); - reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,

    #[command(flatten)]
    pub capture: CaptureArgs,
}

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

    /// Seconds of capture time after which a silent connection is closed and forgotten.
    #[arg(long, value_name = "SECS", default_value_t = 900, help_heading = "Reassembly")]
    pub idle_timeout: u64,
}

impl CaptureArgs {
    pub fn limits(&self) -> crate::capture::tcp::Limits {
        crate::capture::tcp::Limits {
            max_buffered_per_direction: self.max_buffer_per_direction,
            max_buffered_total: self.max_buffer_total,
            idle_timeout_secs: self.idle_timeout,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
