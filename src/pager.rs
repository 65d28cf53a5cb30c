//! The pager a terminal report taller than the screen is shown in, as git shows its logs.
//!
//! Why a pager rather than another order: the report reads top down (the verdict, the root
//! cause, what it caused, the timeline, what to do), and printed straight to a terminal its
//! first screen, the part that matters, scrolls away; reversing it to end on the verdict would
//! make it read bottom up everywhere else (a file, a ticket, `head`). So a report that fits the
//! screen is printed as it is, and a taller one opens in `$PAGER` (`less -FRX` when unset, as
//! git runs it) on its first line. `--no-pager`, `PAGER=cat` or an empty `PAGER` print it
//! straight; a pipe or a file never gets a pager.

use std::io::{self, IsTerminal, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// While a pager runs, Ctrl-C belongs to it (less uses it to stop a search): the signal
/// handler leaves the program alone.
static PAGING: AtomicBool = AtomicBool::new(false);

/// Whether a pager is showing the report (the signal handler asks).
pub fn paging() -> bool {
    PAGING.load(Ordering::SeqCst)
}

/// Whether a report for the terminal may go through a pager: standard output is a terminal
/// and `--no-pager` was not given.
pub fn wanted(no_pager: bool) -> bool {
    !no_pager && io::stdout().is_terminal()
}

/// Standard output for a report that may be paged: what is written is held until it is
/// taller than the terminal, then goes to the pager (started then) as it comes; a report that
/// fits, or with no pager to run, is printed straight. Memory: one screen at most.
pub struct Paged {
    /// Standard output, buffered, for a report printed straight.
    out: io::BufWriter<io::Stdout>,
    held: Vec<u8>,
    lines: usize,
    rows: usize,
    pager: Option<(Child, Option<ChildStdin>)>,
}

impl Paged {
    pub fn new() -> Paged {
        // A terminal that says it has no rows (some ptys) is taken as of unknown height: the
        // report is then printed straight.
        let rows = terminal_size::terminal_size_of(io::stdout())
            .map(|(_, h)| usize::from(h.0))
            .filter(|&h| h > 0)
            .unwrap_or(usize::MAX);
        Paged {
            out: io::BufWriter::with_capacity(1 << 16, io::stdout()),
            held: Vec::new(),
            lines: 0,
            rows,
            pager: None,
        }
    }

    /// Ends the report: what is held is printed, or the pager is given the end and waited for
    /// (the person reads, then quits it).
    pub fn finish(mut self) -> io::Result<()> {
        match self.pager.take() {
            None => {
                let held = std::mem::take(&mut self.held);
                self.out.write_all(&held)?;
                self.out.flush()
            }
            Some((mut child, stdin)) => {
                drop(stdin);
                let waited = child.wait();
                PAGING.store(false, Ordering::SeqCst);
                waited.map(|_| ())
            }
        }
    }

    /// The report is taller than the screen: the pager starts with what was held.
    fn start(&mut self) -> io::Result<()> {
        let command = pager_command(std::env::var("PAGER").ok());
        let Some(mut child) = command.and_then(|c| spawn(&c).ok()) else {
            // No pager: straight, from here on.
            self.rows = usize::MAX;
            let held = std::mem::take(&mut self.held);
            self.out.write_all(&held)?;
            return Ok(());
        };
        PAGING.store(true, Ordering::SeqCst);
        let stdin = child.stdin.take();
        self.pager = Some((child, stdin));
        let held = std::mem::take(&mut self.held);
        self.pipe(&held)
    }

    /// Into the pager; one quit early takes no more, which is not an error.
    fn pipe(&mut self, bytes: &[u8]) -> io::Result<()> {
        let Some((_, stdin)) = &mut self.pager else {
            return Ok(());
        };
        let Some(pipe) = stdin else {
            return Ok(());
        };
        match pipe.write_all(bytes) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                *stdin = None;
                Ok(())
            }
            other => other,
        }
    }
}

impl Write for Paged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pager.is_some() {
            self.pipe(buf)?;
            return Ok(buf.len());
        }
        // Of unknown height, or no pager to run: straight.
        if self.rows == usize::MAX {
            self.out.write_all(buf)?;
            return Ok(buf.len());
        }
        self.held.extend_from_slice(buf);
        self.lines += buf.iter().filter(|&&b| b == b'\n').count();
        if self.lines >= self.rows {
            self.start()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Paged {
    /// A report ended by an error still leaves no pager behind, nor the signal handler
    /// waiting on it.
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.pager.take() {
            drop(stdin);
            let _ = child.wait();
        }
        PAGING.store(false, Ordering::SeqCst);
    }
}

/// The pager `PAGER` names, as git reads it (`cat` or empty: none), else `less`.
fn pager_command(env: Option<String>) -> Option<String> {
    let pager = env.unwrap_or_else(|| "less".into());
    let pager = pager.trim();
    (!pager.is_empty() && pager != "cat").then(|| pager.to_string())
}

/// The pager, through the shell as git runs it (`PAGER="less -S"` has arguments), with less
/// told to quit when the text fits, keep colours and leave the screen as it was, unless `LESS`
/// says otherwise.
fn spawn(command: &str) -> io::Result<Child> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        cmd.env("LESS", "FRX");
    }
    if std::env::var_os("LV").is_none() {
        cmd.env("LV", "-c");
    }
    cmd.spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pager_is_less_unless_pager_says_otherwise() {
        let of = |v: Option<&str>| pager_command(v.map(String::from));
        assert_eq!(of(None).as_deref(), Some("less"));
        assert_eq!(of(Some("cat")), None);
        assert_eq!(of(Some("  ")), None);
        assert_eq!(of(Some("less -S")).as_deref(), Some("less -S"));
    }
}
