//! The append-only temporary files session records are spilled to. A session's rendered record
//! (and its events, with `--events`) is appended the moment the session is finalized, and only
//! where it went is kept; the document is assembled from these files at the end, so memory
//! follows the sessions in progress rather than the length of the capture.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// Where a record went in its spill: offset and length.
pub(crate) type Range = (u64, u64);

/// Where a session's records went in the spills: its record, then its events.
pub(crate) type Ranges = (Option<Range>, Option<Range>);

/// Which of the two spills: the session records, or the event records of `--events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Records {
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

    /// Appends what `write` writes, through a buffer: a record need not be held whole.
    fn append_with(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<Range> {
        let mut w = Counted {
            inner: BufWriter::with_capacity(COPY_BUFFER, &mut self.file),
            len: 0,
        };
        let done = write(&mut w).and_then(|()| w.inner.flush());
        let len = w.len;
        drop(w);
        if let Err(e) = done {
            // Later records go after whatever part of this one reached the file.
            self.len = self.file.seek(SeekFrom::End(0))?;
            return Err(e);
        }
        let at = self.len;
        self.len += len;
        Ok((at, len))
    }

    /// Calls `line` with each line of the records at `range` (without its newline), reading
    /// through a buffer, and leaves the file ready for the next append.
    fn lines(
        &mut self,
        (at, len): Range,
        line: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(at))?;
        let mut r = BufReader::with_capacity(COPY_BUFFER, (&self.file).take(len));
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
            let l = buf.strip_suffix(b"\n").unwrap_or(&buf);
            if !l.is_empty() {
                line(l)?;
            }
        }
        drop(r);
        self.file.seek(SeekFrom::End(0))?;
        Ok(())
    }

    /// Copies the bytes at `range` to `out` through a buffer, and leaves the file ready for
    /// the next append.
    fn copy(&mut self, (at, len): Range, out: &mut dyn Write) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(at))?;
        let copied = io::copy(&mut (&self.file).take(len), out)?;
        self.file.seek(SeekFrom::End(0))?;
        if copied < len {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
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

/// The buffer records are written to and read from the spill through: the events of a session
/// can run to gigabytes, and go through it piece by piece.
const COPY_BUFFER: usize = 64 << 10;

/// A writer that counts what it passes on.
struct Counted<W> {
    inner: W,
    len: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The temporary files records are spilled to, created on first use.
#[derive(Default)]
pub(crate) struct Spills {
    sessions: Option<Spill>,
    events: Option<Spill>,
    /// The first error writing them (reported at the end).
    pub(crate) error: Option<String>,
    /// Where the session records that redaction leaves as they are start: the document passes
    /// them on without scanning them again.
    clean: std::collections::HashSet<u64>,
}

impl Spills {
    fn slot(&mut self, which: Records) -> &mut Option<Spill> {
        match which {
            Records::Sessions => &mut self.sessions,
            Records::Events => &mut self.events,
        }
    }

    /// Appends the records `write` renders, as it renders them; `None` when it wrote nothing,
    /// or (and the error noted) when the file cannot be written.
    pub(crate) fn append_with(
        &mut self,
        which: Records,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Option<Range> {
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
        match slot.as_mut().map(|s| s.append_with(write)) {
            Some(Ok((_, 0))) => None,
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                self.error
                    .get_or_insert(format!("cannot write a temporary file: {e}"));
                None
            }
            None => None,
        }
    }

    /// Notes that redaction leaves the session record at `range` as it is.
    pub(crate) fn mark_clean(&mut self, range: Option<Range>) {
        if let Some((at, _)) = range {
            self.clean.insert(at);
        }
    }

    /// Whether the session record at `range` was found free of secrets when it was spilled.
    pub(crate) fn is_clean(&self, range: Option<Range>) -> bool {
        range.is_some_and(|(at, _)| self.clean.contains(&at))
    }

    /// Calls `line` with each line spilled at `range` (NDJSON records); none when nothing was.
    pub(crate) fn lines(
        &mut self,
        which: Records,
        range: Option<Range>,
        line: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        match (range, self.slot(which).as_mut()) {
            (Some(range), Some(spill)) => spill.lines(range, line),
            _ => Ok(()),
        }
    }

    /// Copies the records spilled at `range` to `out`; nothing when nothing was.
    pub(crate) fn copy(
        &mut self,
        which: Records,
        range: Option<Range>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        match (range, self.slot(which).as_mut()) {
            (Some(range), Some(spill)) => spill.copy(range, out),
            _ => Ok(()),
        }
    }

    /// The records spilled at `range`; empty when nothing was.
    pub(crate) fn read(&mut self, which: Records, range: Option<Range>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        if let (Some(range), Some(spill)) = (range, self.slot(which).as_mut()) {
            spill.read(range, &mut out)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(spills: &mut Spills, range: Option<Range>) -> Vec<String> {
        let mut out = Vec::new();
        spills
            .lines(Records::Events, range, &mut |l| {
                out.push(String::from_utf8_lossy(l).into_owned());
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn records_written_piece_by_piece_read_back_between_appends() {
        let mut spills = Spills::default();
        let a = spills.append_with(Records::Events, &mut |w| {
            (0..3).try_for_each(|i| writeln!(w, "a{i}"))
        });
        let mut copied = Vec::new();
        spills.copy(Records::Events, a, &mut copied).unwrap();
        let b = spills.append_with(Records::Events, &mut |w| w.write_all(b"b0\n\nb1\n"));
        assert_eq!(copied, b"a0\na1\na2\n");
        assert_eq!(lines(&mut spills, a), ["a0", "a1", "a2"]);
        assert_eq!(lines(&mut spills, b), ["b0", "b1"]);
        assert_eq!(b.map(|r| r.0), Some(9));
        assert!(spills.error.is_none());
    }

    #[test]
    fn a_session_without_records_spills_nothing() {
        let mut spills = Spills::default();
        let none = spills.append_with(Records::Events, &mut |_| Ok(()));
        assert_eq!(none, None);
        assert!(lines(&mut spills, none).is_empty());
        let mut copied = Vec::new();
        spills.copy(Records::Events, none, &mut copied).unwrap();
        assert!(copied.is_empty());
    }

    #[test]
    fn a_record_larger_than_the_buffer_is_whole() {
        let mut spills = Spills::default();
        let line = "x".repeat(3 * COPY_BUFFER + 5);
        let r = spills.append_with(Records::Events, &mut |w| {
            writeln!(w, "{line}")?;
            writeln!(w, "y")
        });
        assert_eq!(lines(&mut spills, r), [line.as_str(), "y"]);
    }
}
