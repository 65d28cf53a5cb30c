//! The `mcp-forensics` binary: parse arguments, run, exit with the documented code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = mcp_forensics::cli::Cli::parse();
    mcp_forensics::app::run(cli)
}
