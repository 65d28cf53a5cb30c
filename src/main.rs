//! The `mcp-forensics` binary: parse arguments, run, exit with the documented code.

use std::process::ExitCode;

use clap::Parser;

// mimalloc: an analysis makes millions of small allocations freed in another order than they
// were made; glibc's allocator kept up to three times the live heap as resident memory. Without
// transparent huge pages (`no_thp`), and returning freed pages at once (below), the resident set
// stays near the live heap.
#[cfg_attr(not(feature = "system-alloc"), global_allocator)]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    mcp_forensics::alloc::return_freed_memory_at_once();
    let cli = mcp_forensics::cli::Cli::parse();
    mcp_forensics::app::run(cli)
}
