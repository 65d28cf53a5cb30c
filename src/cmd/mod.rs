//! One file per command; here the dispatch, the exit codes and the signal handling they share.
//! Errors get their context (which file, which flag) at this edge.

mod analyze;
mod explain;
mod extract;
mod flows;
mod generate;
mod http;
mod saved;

use std::process::ExitCode;

use crate::cli::Cli;
use crate::config::Config;
use crate::terminal;

/// Exit codes, as documented in the README and the man page (grep convention).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Nothing at or above `--fail-on` was found.
    Clean = 0,
    /// Findings at or above `--fail-on`.
    Findings = 1,
    /// The command line cannot be carried out: a usage error (clap's own code), an option
    /// whose value or file is unusable (`--output`, `--tls-keylog`), `--session` naming no
    /// session, or any other error that is not about an input.
    Error = 2,
    /// Every input was analysed and nothing reached `--fail-on`, but part of an input could not
    /// be read: corrupt records were skipped, or the file or its gzip stream was cut. Findings
    /// (1) and unreadable inputs (2) take precedence: the warnings on standard error and the
    /// inputs' `accounting.*.lost` say what was lost in every case.
    DataLost = 3,
    /// An input could not be read: missing, unreadable or of no supported format (the report
    /// of the others is still written).
    InputUnreadable = 4,
    /// Every input was read and none holds an MCP session.
    NoSession = 5,
}

impl Exit {
    /// `Clean` becomes `DataLost` when a read input lost part of its file.
    pub fn or_data_lost(self, reports: &[mcpf_engine::model::InputReport]) -> Exit {
        if self == Exit::Clean && mcpf_engine::lost_data(reports) {
            Exit::DataLost
        } else {
            self
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

pub fn run(cli: Cli) -> ExitCode {
    let result = Config::from_cli(cli).and_then(|config| match config {
        Config::Flows(job) => {
            stop_reading_on_signals();
            flows::run(job)
        }
        Config::Http(job) => {
            stop_reading_on_signals();
            http::run(job)
        }
        Config::Analyze(job) => {
            stop_reading_on_signals();
            analyze::run(job)
        }
        Config::Extract(job) => {
            stop_reading_on_signals();
            extract::run(job)
        }
        Config::Report(job) => {
            // Its pager has Ctrl-C while it runs, as analyze's.
            stop_reading_on_signals();
            saved::run(job)
        }
        Config::Explain(job) => explain::run(job),
        Config::Generate(what) => generate::run(what),
    });
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            if is_broken_pipe(&e) {
                return Exit::Clean.into();
            }
            eprintln!("mcp-forensics: {}", terminal::diagnostic(&format!("{e:#}")));
            Exit::Error.into()
        }
    }
}

/// The exit code of a program ended by SIGINT (128 + 2), as shells report it.
const INTERRUPTED: i32 = 130;

/// How long after the first signal the report of what was read may take: a signal stops the
/// program within a second wherever it is.
const REPORT_AFTER_SIGNAL: std::time::Duration = std::time::Duration::from_millis(900);

/// The first SIGINT, SIGTERM or SIGHUP ends every input where it is (`tcpdump -w - | analyze -`
/// stopped with Ctrl-C: the report of what was read is still written, if that takes less than
/// [`REPORT_AFTER_SIGNAL`]; a report that would take longer, of a session of hundreds of
/// thousands of exchanges, is left unfinished and said so); a second one ends the program at
/// once. Without a handler (one could not be set) a signal ends it as usual.
fn stop_reading_on_signals() {
    static SIGNALS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let _ = ctrlc::set_handler(|| {
        // The pager showing the report has the signal (less stops a search with it).
        if crate::pager::paging() {
            return;
        }
        if SIGNALS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            std::process::exit(INTERRUPTED);
        }
        mcpf_engine::model::interrupt::request_stop();
        eprintln!(
            "\nmcp-forensics: stopping: the inputs end here, the report of what was read follows (again to quit at once)"
        );
        std::thread::spawn(|| {
            std::thread::sleep(REPORT_AFTER_SIGNAL);
            // The report was written, and a pager shows it: the person reads on.
            if crate::pager::paging() {
                return;
            }
            eprintln!(
                "mcp-forensics: stopped: the report of what was read was not finished within a second of the signal; what was written of it is incomplete"
            );
            std::process::exit(INTERRUPTED);
        });
    });
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
