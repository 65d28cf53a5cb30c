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
                Some("check the path; use - to read standard input"),
            ));
        }
        Err(e) => return Err(err(format!("cannot read: {e}"), None)),
        Ok(m) if m.is_dir() => {
            return Err(err(
                "is a directory, not a capture file".into(),
                Some("name the capture files inside it, e.g. dir/*.pcap"),
            ));
        }
        Ok(m) if is_fifo(&m) => return open_fifo(p).map_err(|m| err(m, None)),
        Ok(_) => {}
    }
    File::open(p).map_err(|e| err(format!("cannot open: {e}"), None))
}

#[cfg(unix)]
fn is_fifo(m: &std::fs::Metadata) -> bool {
    std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type())
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::Metadata) -> bool {
    false
}

/// How often a wait for a FIFO's writer looks whether a signal asked the run to stop.
const FIFO_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Opens a FIFO, which blocks until a writer opens it (`tcpdump -w fifo` started after us): the
/// open waits on a thread of its own, so that SIGINT or SIGTERM ends the wait at once instead
/// of being swallowed by an open the kernel restarts.
fn open_fifo(p: &Path) -> Result<File, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = p.to_path_buf();
    std::thread::Builder::new()
        .name("open-fifo".into())
        .spawn(move || {
            let _ = tx.send(File::open(path));
        })
        .map_err(|e| format!("cannot open: {e}"))?;
    loop {
        match rx.recv_timeout(FIFO_POLL) {
            Ok(opened) => return opened.map_err(|e| format!("cannot open: {e}")),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                if crate::interrupt::stop_requested() =>
            {
                return Err(
                    "not opened: stopped by a signal while waiting for a writer to the FIFO".into(),
                );
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(e) => return Err(format!("cannot open: {e}")),
        }
    }
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
