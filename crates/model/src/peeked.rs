//! Streams (standard input, a FIFO, `/dev/fd/N`) give their bytes once, yet their format is told
//! by their first bytes, as a file's is. The bytes read to tell it are kept here, by path, and
//! the next reader of that path reads them again before the rest of the stream. The table is
//! process-wide because the stage that looks (ingest) and the stages that read (capture, ingest)
//! each open the path on their own.

use std::io::{self, Cursor, Read};
use std::sync::{Mutex, MutexGuard};

use crate::OpenError;
use crate::file::open_file;
use crate::interrupt::{self, Interruptible};

/// A stream being read: boxed, because a replayed one is a chain over the one looked at.
pub type Stream = Box<dyn Read + Send>;

/// Standard input, or a path that is not a regular file (a FIFO, `/dev/stdin`, a process
/// substitution): read once, as it comes, so what was looked at must be kept to be read again.
pub fn streamed(path: &str) -> bool {
    path == "-" || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// What was read of a stream to tell its format, and the stream where that reading stopped.
struct Peeked {
    path: String,
    head: Vec<u8>,
    rest: Stream,
}

static PEEKED: Mutex<Vec<Peeked>> = Mutex::new(Vec::new());

fn table() -> MutexGuard<'static, Vec<Peeked>> {
    // A panic elsewhere while holding the lock leaves the table whole: each push is one move.
    PEEKED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Opens a stream (`-` for standard input) to read it through: the bytes a [`Looking`] reader
/// took from it first, then the rest. Every read ends when a stop is requested
/// ([`interrupt`]).
pub fn open(path: &str) -> Result<Stream, OpenError> {
    let kept = {
        let mut table = table();
        let at = table.iter().position(|p| p.path == path);
        at.map(|i| table.swap_remove(i))
    };
    match kept {
        Some(p) => Ok(Box::new(Cursor::new(p.head).chain(p.rest))),
        None if path == "-" => Ok(Box::new(Interruptible::stdin())),
        None => Ok(Box::new(interrupt::file(open_file(path)?))),
    }
}

/// A reader of a stream that keeps every byte it reads: once dropped, the next [`open`] (or
/// [`look`]) of its path reads them again, then goes on where this one stopped.
pub struct Looking {
    path: String,
    head: Vec<u8>,
    rest: Option<Stream>,
}

/// Opens a stream to look at its first bytes without taking them from the next reader.
pub fn look(path: &str) -> Result<Looking, OpenError> {
    Ok(Looking {
        path: path.to_string(),
        head: Vec::new(),
        rest: Some(open(path)?),
    })
}

impl Read for Looking {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(rest) = self.rest.as_mut() else {
            return Ok(0);
        };
        let n = rest.read(buf)?;
        // What is read here is bounded by the caller (the format is told from a head of at
        // most 64 KiB and what a decompressor buffers to give it).
        self.head
            .extend_from_slice(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

impl Drop for Looking {
    fn drop(&mut self) {
        if let Some(rest) = self.rest.take() {
            table().push(Peeked {
                path: std::mem::take(&mut self.path),
                head: std::mem::take(&mut self.head),
                rest,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regular file is not a stream; the tests below put a stream in the table by hand, under
    /// a name no file has.
    fn seed(path: &str, bytes: &'static [u8]) {
        table().push(Peeked {
            path: path.into(),
            head: Vec::new(),
            rest: Box::new(bytes),
        });
    }

    fn read_some(r: &mut impl Read, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        let got = r.read(&mut buf).unwrap();
        buf.truncate(got);
        buf
    }

    fn read_through(path: &str) -> Vec<u8> {
        let mut all = Vec::new();
        open(path).unwrap().read_to_end(&mut all).unwrap();
        all
    }

    #[test]
    fn what_was_looked_at_is_read_again_then_the_rest() {
        seed("peek-test-a", b"abcdefgh");
        let mut l = look("peek-test-a").unwrap();
        assert_eq!(read_some(&mut l, 3), b"abc");
        drop(l);
        assert_eq!(read_through("peek-test-a"), b"abcdefgh");
    }

    #[test]
    fn looking_twice_reads_the_first_look_again_and_further() {
        seed("peek-test-b", b"abcdefgh");
        let mut l = look("peek-test-b").unwrap();
        assert_eq!(read_some(&mut l, 2), b"ab");
        drop(l);
        let mut l = look("peek-test-b").unwrap();
        // Less than the first look, then more: either way nothing is lost or doubled.
        assert_eq!(read_some(&mut l, 1), b"a");
        drop(l);
        let mut l = look("peek-test-b").unwrap();
        let mut five = [0u8; 5];
        l.read_exact(&mut five).unwrap();
        assert_eq!(&five, b"abcde");
        drop(l);
        assert_eq!(read_through("peek-test-b"), b"abcdefgh");
    }

    #[test]
    fn streams_are_standard_input_and_what_is_not_a_regular_file() {
        assert!(streamed("-"));
        assert!(!streamed("Cargo.toml"));
        assert!(!streamed("src"));
        assert!(!streamed("no-such-file"));
    }
}
