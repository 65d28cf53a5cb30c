//! The append-only temporary files session records are spilled to. A session's rendered record
//! (and its events, with `--events`) is appended the moment the session is finalized, and only
//! where it went is kept; the document is assembled from these files at the end, so memory
//! follows the sessions in progress rather than the length of the capture.

use std::io::{self, Read, Seek, SeekFrom, Write};

/// Where a record went in its spill: offset and length.
pub(super) type Range = (u64, u64);

/// Where a session's records went in the spills: its record, then its events.
pub(super) type Ranges = (Option<Range>, Option<Range>);

/// Which of the two spills: the session records, or the event records of `--events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Records {
    Sessions,
    Events,
}

/// An append-only temporary file of rendered records.
struct Spill {
    file: std::fs::File,
    len: u64,
}

impl Spill {
    fn new() -> io::Result<Spill> {
        Ok(Spill {
            file: tempfile::tempfile()?,
            len: 0,
        })
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<Range> {
        self.file.write_all(bytes)?;
        let at = self.len;
        self.len += bytes.len() as u64;
        Ok((at, bytes.len() as u64))
    }

    /// Appends the bytes at `range` to `out`, and leaves the file ready for the next append.
    fn read(&mut self, (at, len): Range, out: &mut Vec<u8>) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(at))?;
        let from = out.len();
        out.resize(from + len as usize, 0);
        self.file.read_exact(&mut out[from..])?;
        self.file.seek(SeekFrom::End(0))?;
        Ok(())
    }
}

/// The temporary files records are spilled to, created on first use.
#[derive(Default)]
pub(super) struct Spills {
    sessions: Option<Spill>,
    events: Option<Spill>,
    /// The first error writing them (reported at the end).
    pub(super) error: Option<String>,
}

impl Spills {
    fn slot(&mut self, which: Records) -> &mut Option<Spill> {
        match which {
            Records::Sessions => &mut self.sessions,
            Records::Events => &mut self.events,
        }
    }

    /// Appends rendered records; `None` (and the error noted) when the file cannot be written.
    pub(super) fn append(&mut self, which: Records, bytes: &[u8]) -> Option<Range> {
        let slot = self.slot(which);
        if slot.is_none() {
            match Spill::new() {
                Ok(s) => *slot = Some(s),
                Err(e) => {
                    self.error
                        .get_or_insert(format!("cannot create a temporary file: {e}"));
                    return None;
                }
            }
        }
        match slot.as_mut().map(|s| s.append(bytes)) {
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                self.error
                    .get_or_insert(format!("cannot write a temporary file: {e}"));
                None
            }
            None => None,
        }
    }

    /// The records spilled at `range`; empty when nothing was.
    pub(super) fn read(&mut self, which: Records, range: Option<Range>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        if let (Some(range), Some(spill)) = (range, self.slot(which).as_mut()) {
            spill.read(range, &mut out)?;
        }
        Ok(out)
    }
}
