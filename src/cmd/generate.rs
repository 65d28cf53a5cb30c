//! `generate man|SHELL` (hidden): the man page or a completion script, from the clap
//! definitions.

use std::io::Write;

use mcpf_engine::report::redact::Redactor;

use super::Exit;
use crate::config::Generated;
use crate::terminal;

pub fn run(what: Generated) -> anyhow::Result<Exit> {
    let text = match what {
        Generated::Man => crate::manpage::render(),
        Generated::Completions(shell) => crate::manpage::completions(shell),
    };
    let mut out = terminal::stdout(Redactor::new(false));
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Exit::Clean)
}
