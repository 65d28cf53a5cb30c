//! The bytes of every SSE event's data and every JSON response body, kept in a temporary file
//! for the run. "The same event" and "the same payload" are decided by comparing these bytes
//! (a hash only picks candidates), and a session's records stay small in memory: an event
//! holds where its bytes are, not the bytes.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::Arc;

/// Where a payload's bytes are in the run's payload file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PayloadRef {
    pub(crate) offset: u64,
    pub(crate) len: u32,
}

/// The writing side, owned by the session builder.
#[derive(Default)]
pub(crate) struct PayloadWriter {
    out: Option<BufWriter<File>>,
    file: Option<Arc<File>>,
    len: u64,
    /// Writing failed (no temporary directory, disk full): later payloads are not kept, and
    /// comparisons that need them say so.
    failed: Option<String>,
}

impl PayloadWriter {
    /// Keeps `bytes`; `None` when they could not be written.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Option<PayloadRef> {
        if self.failed.is_some() {
            return None;
        }
        let len = u32::try_from(bytes.len()).ok()?;
        if self.out.is_none() {
            match tempfile::tempfile().and_then(|f| Ok((f.try_clone()?, f))) {
                Ok((w, r)) => {
                    self.out = Some(BufWriter::with_capacity(1 << 16, w));
                    self.file = Some(Arc::new(r));
                }
                Err(e) => return self.fail(e),
            }
        }
        let out = self.out.as_mut()?;
        if let Err(e) = out.write_all(bytes) {
            return self.fail(e);
        }
        let at = PayloadRef {
            offset: self.len,
            len,
        };
        self.len += u64::from(len);
        Some(at)
    }

    fn fail(&mut self, e: io::Error) -> Option<PayloadRef> {
        self.failed = Some(e.to_string());
        self.out = None;
        None
    }

    /// What a finalized session reads its payloads from: everything written so far is flushed.
    pub(crate) fn reader(&mut self) -> Payloads {
        if let Some(out) = self.out.as_mut()
            && let Err(e) = out.flush()
        {
            self.fail(e);
        }
        Payloads {
            file: self.file.clone(),
        }
    }

    pub(crate) fn error(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

/// The reading side, shared by the sessions handed on.
#[derive(Clone, Debug, Default)]
pub struct Payloads {
    file: Option<Arc<File>>,
}

impl Payloads {
    /// The bytes at `at`, when they could be kept and read back.
    pub fn read(&self, at: PayloadRef) -> Option<Vec<u8>> {
        let file = self.file.as_ref()?;
        let mut buf = vec![0u8; at.len as usize];
        read_exact_at(file, &mut buf, at.offset).ok()?;
        Some(buf)
    }

    /// Whether two payloads are the same bytes; `None` when either cannot be read.
    pub fn same(&self, a: Option<PayloadRef>, b: Option<PayloadRef>) -> Option<bool> {
        let (a, b) = (a?, b?);
        if a == b {
            return Some(true);
        }
        if a.len != b.len {
            return Some(false);
        }
        Some(self.read(a)? == self.read(b)?)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_and_compares_bytes() {
        let mut w = PayloadWriter::default();
        let a = w.append(b"{\"id\":1}");
        let b = w.append(b"{\"id\":2}");
        let c = w.append(b"{\"id\":1}");
        let d = w.append(b"{\"id\":10}");
        let r = w.reader();
        assert_eq!(r.read(a.unwrap()).unwrap(), b"{\"id\":1}");
        assert_eq!(r.same(a, c), Some(true));
        assert_eq!(r.same(a, b), Some(false));
        assert_eq!(r.same(a, d), Some(false));
        assert_eq!(r.same(a, None), None);
        assert!(w.error().is_none());
    }
}
