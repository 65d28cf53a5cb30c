//! The `mcp-forensics` binary: parse arguments, run, exit with the documented code.
//!
//! Thin glue over the stage crates (`mcpf-capture` → `mcpf-http` → `mcpf-mcp` → `mcpf-detect`
//! → `mcpf-report`, `mcpf-ingest` joining at HTTP): [`cli`] defines the flags, [`config`]
//! validates them once into one [`config::Config`], [`app`] wires the stages and maps the
//! outcome to an exit code.

mod alloc;
mod analyze;
mod app;
mod cli;
mod config;
mod finalize;
mod inputs;
mod manpage;
mod pipeline;
mod progress;
mod shards;

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
    app::run(cli)
}
