//! The `mcp-forensics` binary: parse arguments, run, exit with the documented code.
//!
//! The command line and the terminal over the engine (`mcpf-engine`, which runs the stages
//! `capture → tls → http → mcp → detect → report`, `ingest` joining at HTTP): [`cli`] defines
//! the flags, [`config`] validates them once, [`cmd`] has one file per command, [`terminal`]
//! is where output meets a terminal.

mod alloc;
mod cli;
mod cmd;
mod config;
mod manpage;
mod pager;
mod progress;
mod terminal;

use std::process::ExitCode;

use clap::Parser;

// mimalloc: an analysis makes millions of small allocations freed in another order than they
// were made; glibc's allocator kept up to three times the live heap as resident memory. Without
// transparent huge pages (`no_thp`), and returning freed pages at once (below), the resident set
// stays near the live heap.
#[cfg_attr(not(feature = "system-alloc"), global_allocator)]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    alloc::return_freed_memory_at_once();
    let cli = cli::Cli::parse();
    cmd::run(cli)
}
