//! The `mcp-forensics` binary: parse arguments, run, exit with the documented code.

use std::process::ExitCode;

use clap::Parser;

// mimalloc: an analysis makes millions of small allocations freed in another order than they
// were made; glibc's allocator kept up to three times the live heap as resident memory.
#[cfg_attr(not(feature = "system-alloc"), global_allocator)]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = mcp_forensics::cli::Cli::parse();
    mcp_forensics::app::run(cli)
}
