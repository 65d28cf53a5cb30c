//! Opening an input file, for every stage that reads one (the capture reader, the HAR and log
//! readers): errors a newcomer understands, and the bytes read counted for progress.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::OpenError;

/// Opens a regular file with errors a newcomer understands.
pub fn open_file(path: &str) -> Result<File, OpenError> {
    let p = Path::new(path);
    let err = |message: String, hint: Option<&str>| OpenError {
        path: path.to_string(),
        message,
        hint: hint.map(str::to_string),
    };
    match std::fs::metadata(p) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(err(
                "no such file".into(),
                Some("check the path; use - to read a capture from standard input"),
            ));
        }
        Err(e) => return Err(err(format!("cannot read: {e}"), None)),
        Ok(m) if m.is_dir() => {
            return Err(err(
                "is a directory, not a capture file".into(),
                Some("name the capture files inside it, e.g. dir/*.pcap"),
            ));
        }
        Ok(_) => {}
    }
    File::open(p).map_err(|e| err(format!("cannot open: {e}"), None))
}

/// Counts bytes read from the underlying source (before decompression) so progress can be shown.
pub struct CountingReader<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> CountingReader<R> {
    pub fn new(inner: R, counter: Arc<AtomicU64>) -> Self {
        CountingReader { inner, counter }
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
