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
use std::process::{Command, Stdio};
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

/// Shows `text` (rendered, redacted already): straight when it fits the terminal's height or
/// no pager can be run, else in the pager, returning when the person quits it. Quitting before
/// the end is not an error.
pub fn show(text: &[u8]) -> io::Result<()> {
    let lines = text.iter().filter(|&&b| b == b'\n').count();
    // A terminal that says it has no rows (some ptys) is taken as of unknown height.
    let rows = terminal_size::terminal_size_of(io::stdout())
        .map(|(_, h)| usize::from(h.0))
        .filter(|&h| h > 0);
    let fits = rows.is_none_or(|rows| lines < rows);
    let command = pager_command(std::env::var("PAGER").ok());
    let (false, Some(command)) = (fits, command) else {
        return straight(text);
    };
    let Ok(mut child) = spawn(&command) else {
        return straight(text);
    };
    PAGING.store(true, Ordering::SeqCst);
    if let Some(mut stdin) = child.stdin.take() {
        match stdin.write_all(text) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(e),
            _ => {}
        }
    }
    let waited = child.wait();
    PAGING.store(false, Ordering::SeqCst);
    waited.map(|_| ())
}

fn straight(text: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text)?;
    out.flush()
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
fn spawn(command: &str) -> io::Result<std::process::Child> {
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
