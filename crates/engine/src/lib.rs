#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
//! The run as a library: the inputs opened as what their content says they are, captures read
//! and reassembled on the reading thread, TLS, HTTP, SSE and the JSON-RPC read in shards by
//! connection, sessions built in wire order and finalized as they end (detectors, verdict,
//! timeline, the session's record rendered), observations of one session in several inputs
//! compared, and the report put together.
//!
//! One entry point per job ([`Engine::run`] for `analyze`, [`Engine::http`] for the `http` view,
//! [`flows`] for the `flows` view), used alike by the binary, the end-to-end tests and the fuzz
//! targets, so each exercises the production path. No command line, no terminal, no process
//! exit: what happens along the way is told to an [`Observer`]; the caller decides what to
//! print and how to end.

mod analyze;
mod classify;
mod extract;
mod feed;
mod finalize;
mod http_view;
pub mod inputs;
mod open;
pub mod pcaps;
mod records_in;
mod redact_records;
mod sessions;
mod shards;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

pub use analyze::Run;
pub use extract::Extracted;
pub use feed::TcpLoss;
pub use finalize::{MAX_EVENTS_HELD, Tap};
pub use http_view::{FlowsRun, HttpRun, flows};
pub use open::{InputSpec, Opened};
pub use sessions::{Analysed, SessionStage};
pub use shards::SHARDS;

// The stages, for callers that name their settings and records through the engine.
pub use mcpf_capture as capture;
pub use mcpf_detect as detect;
pub use mcpf_http as http;
pub use mcpf_ingest as ingest;
pub use mcpf_mcp as mcp;
pub use mcpf_model as model;
pub use mcpf_records as records;
pub use mcpf_report as report;
pub use mcpf_tls as tls;

use mcpf_model::{InputReport, OpenError};
use mcpf_report::analyze::Selection;

/// What a run needs to know, validated by the caller.
#[derive(Clone, Debug)]
pub struct Settings {
    pub capture: mcpf_capture::Settings,
    /// The key log TLS connections are decrypted with.
    pub tls_keys: Option<Arc<mcpf_tls::KeyLog>>,
    /// Threads for the stages; 1 runs everything on the calling thread.
    pub threads: usize,
    /// Workers feeding the shards whatever the cores (else one fewer than the threads the
    /// machine can run, at least one).
    pub workers: Option<usize>,
    /// SSE events held per session (`--max-session-events`).
    pub max_session_events: u64,
    /// Exchanges held per session (`--max-session-exchanges`).
    pub max_session_exchanges: u64,
    /// Events the sessions waiting for their other observations may hold (`--max-held-events`).
    pub max_held_events: usize,
    /// What the report shows: which sessions get a timeline, which findings count.
    pub selection: Selection,
    /// The program the report names as its writer.
    pub tool: mcpf_report::analyze::Tool,
    /// Keep where each TCP connection's frames are ([`Run::conn_spans`]), for `--write-pcap`.
    pub keep_conn_spans: bool,
    /// Set aside connections whose first bytes show they do not carry MCP (early
    /// classification, docs/classification.md); off with `--examine-all`.
    pub classify: bool,
    /// Interim reports of sessions quiet this long (capture time, nanoseconds) on a live pipe
    /// written as NDJSON (`--live-flush`).
    pub live_flush_ns: Option<i64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            capture: Default::default(),
            tls_keys: None,
            threads: 1,
            workers: None,
            max_session_events: mcpf_mcp::MAX_SESSION_EVENTS,
            max_session_exchanges: mcpf_mcp::MAX_SESSION_EXCHANGES,
            max_held_events: MAX_EVENTS_HELD,
            selection: Selection::default(),
            tool: mcpf_report::analyze::Tool {
                name: "mcp-forensics",
                version: env!("CARGO_PKG_VERSION"),
            },
            keep_conn_spans: false,
            live_flush_ns: None,
            classify: true,
        }
    }
}

/// A run's stages, set up once.
pub struct Engine {
    settings: Settings,
}

impl Engine {
    pub fn new(settings: Settings) -> Engine {
        Engine { settings }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Workers for the per-connection stages: one core reads the packets, the others feed the
    /// shards; more workers than cores only take turns (on two cores, two workers took 10–20%
    /// more time than one).
    fn workers(&self) -> usize {
        self.settings.workers.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            self.settings.threads.min(cores).saturating_sub(1).max(1)
        })
    }
}

/// Why a run could not finish: a stage's thread failed, or the session records could not be
/// written.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("internal error: the {0} stage failed")]
    StageFailed(&'static str),
    #[error("{0}")]
    Writer(String),
    /// The inputs cannot be analysed together (record files beside raw inputs), or a record
    /// file cannot be read at all.
    #[error("{0}")]
    Inputs(String),
}

/// What a run tells its caller as it goes (the binary prints it; tests may collect it).
pub trait Observer {
    /// An input could not be opened or read: the run goes on without it.
    fn unreadable(&mut self, _error: &OpenError) {}
    /// Reading the captures begins: counters a progress display may sample.
    fn reading(&mut self, _progress: ReadProgress) {}
    /// Reading the captures is over.
    fn read(&mut self) {}
}

/// An observer that is told nothing.
impl Observer for () {}

/// Counters of the captures being read, updated by the reading thread.
pub struct ReadProgress {
    /// The inputs' sizes added up, when every one is known (not for standard input).
    pub total: Option<u64>,
    /// Bytes read from each capture so far (compressed bytes for a gzip capture).
    pub bytes: Vec<Arc<AtomicU64>>,
    /// Frames read so far.
    pub frames: Arc<AtomicU64>,
}

/// Whether a read input lost part of its file: corrupt records skipped, or a cut file or gzip
/// stream. (Bytes the wire had and the file never held, gaps and snap length, are not lost
/// reading the input.)
pub fn lost_data(reports: &[InputReport]) -> bool {
    use mcpf_model::bucket::{CORRUPT_RECORD, TRUNCATED};
    reports.iter().any(|r| {
        let lost = &r.accounting.bytes.lost;
        lost.get(CORRUPT_RECORD).is_some_and(|&n| n > 0)
            || lost.get(TRUNCATED).is_some_and(|&n| n > 0)
    })
}
