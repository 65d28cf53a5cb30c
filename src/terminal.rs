//! Where the binary meets the terminal: standard output (buffered, redacted), messages on
//! standard error (redacted, sanitized), the width reports fit, colour decisions, and the
//! observer that prints what a run tells as it goes.

use std::io;

use mcpf_engine::model::{InputReport, OpenError};
use mcpf_engine::report::{self, redact, sanitize};

use crate::progress::Progress;

/// A message for standard error. Always redacted, `--show-secrets` or not: a diagnostic is never
/// where the analyst reads a credential, and it may quote an input or a flag.
pub fn diagnostic(text: &str) -> String {
    redact::Redactor::new(true).text(text).into_owned()
}

/// Standard output, buffered (a locked stdout flushes at every newline, which costs a syscall
/// per line of a pretty-printed report) and redacted unless `--show-secrets`: every command
/// writes through this one boundary, so no output path can print a credential by forgetting
/// to redact it.
pub fn stdout(
    redactor: redact::Redactor,
) -> redact::Redacting<io::BufWriter<io::StdoutLock<'static>>> {
    let out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    redact::Redacting::new(out, redactor)
}

/// The `--output` file, created (or truncated) before the run: a path that cannot be written
/// should not cost a long run.
pub fn create_output(path: Option<&std::path::Path>) -> anyhow::Result<Option<std::fs::File>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file = std::fs::File::create(path)
        .map_err(|e| anyhow::anyhow!("--output {}: cannot write it: {e}", path.display()))?;
    Ok(Some(file))
}

/// Where a report goes: the `--output` file, else standard output; buffered, and redacted
/// unless `--show-secrets` (the one boundary, as [`stdout`]). Sendable, for a report written as
/// it is made on another thread.
pub fn report_out(
    file: Option<std::fs::File>,
    redactor: redact::Redactor,
) -> redact::Redacting<Box<dyn io::Write + Send>> {
    let sink: Box<dyn io::Write + Send> = match file {
        Some(file) => Box::new(io::BufWriter::with_capacity(1 << 16, file)),
        None => Box::new(io::BufWriter::with_capacity(1 << 16, io::stdout())),
    };
    redact::Redacting::new(sink, redactor)
}

/// Prints a per-file error the ripgrep way: the run goes on, the exit code says it happened.
pub fn print_open_error(e: &OpenError) {
    let path = diagnostic(&sanitize::terminal(&e.path));
    eprintln!("mcp-forensics: {path}: {}", diagnostic(&e.message));
    if let Some(hint) = &e.hint {
        eprintln!("  hint: {}", diagnostic(hint));
    }
}

/// Prints every capture input's warnings on standard error (they are in the report's `inputs`
/// entries too): what was skipped, cut or lost reading a file is said where a script or a
/// terminal sees it. A HAR file's or log's warnings are mostly what such a source never records
/// (`lacks …`), the same for every file of its kind: they stay in the report.
pub fn print_warnings(reports: &[InputReport]) {
    for r in reports.iter().filter(|r| r.format.is_capture()) {
        let path = diagnostic(&sanitize::terminal(&r.path));
        for w in &r.warnings {
            let w = report::note::sentence(w);
            eprintln!(
                "mcp-forensics: {path}: warning: {}",
                diagnostic(&sanitize::terminal(&w))
            );
        }
    }
}

/// The observer of a run on a terminal: unreadable inputs on standard error as they are met,
/// a progress bar while the captures are read when asked for.
pub struct Terminal {
    pub progress: bool,
    bar: Option<Progress>,
}

impl Terminal {
    pub fn new(progress: bool) -> Terminal {
        Terminal {
            progress,
            bar: None,
        }
    }
}

impl mcpf_engine::Observer for Terminal {
    fn unreadable(&mut self, error: &OpenError) {
        print_open_error(error);
    }

    fn reading(&mut self, p: mcpf_engine::ReadProgress) {
        self.bar = Some(Progress::start(self.progress, p.total, p.bytes, p.frames));
    }

    fn read(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish();
        }
    }
}

/// The width reports fit: `COLUMNS` when set, else the width of the terminal a person reads on,
/// else
/// [`DEFAULT_WIDTH`](report::analyze::DEFAULT_WIDTH). A width under 40 is taken as 40.
pub fn output_width() -> usize {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    columns
        .or_else(terminal_columns)
        .unwrap_or(report::analyze::DEFAULT_WIDTH)
        .max(40)
}

/// The width of the terminal the person reads on: standard output's, else standard error's
/// (`analyze x.pcap | less` still runs in one), else the controlling terminal's.
fn terminal_columns() -> Option<usize> {
    let of = |fd: &dyn std::os::fd::AsFd| terminal_size::terminal_size_of(fd).map(|(w, _)| w.0);
    of(&io::stdout())
        .or_else(|| of(&io::stderr()))
        .or_else(|| {
            let tty = std::fs::File::open("/dev/tty").ok()?;
            of(&tty)
        })
        .map(usize::from)
        .filter(|&w| w > 0)
}

/// Opens the inputs, saying on standard error what expanding the arguments left out and each
/// input that cannot be opened; none when nothing could be.
pub fn open(
    spec: &mcpf_engine::InputSpec,
    notes: &[String],
    observer: &mut Terminal,
) -> Option<mcpf_engine::Opened> {
    print_notes(notes);
    let inputs = mcpf_engine::Opened::open(spec, observer);
    (!inputs.is_empty()).then_some(inputs)
}

/// What expanding the input arguments left out, one line each on standard error.
fn print_notes(notes: &[String]) {
    for note in notes {
        eprintln!("mcp-forensics: {}", diagnostic(&sanitize::terminal(note)));
    }
}
