//! Stopping the reading of every input at once, from a signal handler: SIGINT on a live pipe
//! (`tcpdump -w - | mcp-forensics analyze -`) must end the input, not the program, so the report
//! of what was read is still written. Readers wrapped in [`Interruptible`] end (read 0 bytes)
//! once [`request_stop`] was called; a reader of standard input waits on a thread of its own, so
//! a pipe that stays silent cannot hold the program in `read`.

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::Duration;

/// One flag for the process: a signal is for the whole run, not one input.
static STOP: AtomicBool = AtomicBool::new(false);

/// Every [`Interruptible`] reader ends at its next read.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether [`request_stop`] was called: the report then says its inputs were cut short.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// How often a reader of standard input waiting for bytes looks at the flag.
const POLL: Duration = Duration::from_millis(50);
/// Bytes read from standard input at a time, and chunks queued between the two threads.
const CHUNK: usize = 64 * 1024;
const QUEUED: usize = 4;

/// A reader that ends when a stop is requested.
pub enum Interruptible<R> {
    /// A reader whose reads return soon (a file): the flag is looked at before each.
    Direct(R),
    /// Standard input, read by a thread of its own into chunks.
    Pumped {
        chunks: Receiver<io::Result<Vec<u8>>>,
        pending: Vec<u8>,
        at: usize,
    },
}

impl<R: Read> Interruptible<R> {
    pub fn new(inner: R) -> Self {
        Interruptible::Direct(inner)
    }
}

impl Interruptible<io::Stdin> {
    /// Standard input, pumped by a thread so that a stop ends it even while no byte comes.
    pub fn stdin() -> Self {
        Self::pumped(io::stdin())
    }
}

impl<R: Read> Interruptible<R> {
    /// A source whose reads may wait for bytes that are not coming (a pipe, a FIFO, a terminal),
    /// read by a thread of its own.
    pub fn pumped<S: Read + Send + 'static>(mut source: S) -> Self {
        let (tx, rx) = sync_channel(QUEUED);
        std::thread::spawn(move || {
            loop {
                let mut buf = vec![0u8; CHUNK];
                let sent = match source.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        buf.truncate(n);
                        tx.send(Ok(buf))
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                };
                if sent.is_err() {
                    break;
                }
            }
        });
        Interruptible::Pumped {
            chunks: rx,
            pending: Vec::new(),
            at: 0,
        }
    }
}

/// Opens `file` to be read until a stop: directly when it is a regular file, else (a FIFO, a
/// character device, `/dev/stdin`) pumped by a thread, as standard input is.
pub fn file(file: std::fs::File) -> Interruptible<std::fs::File> {
    match file.metadata() {
        Ok(m) if m.file_type().is_file() => Interruptible::new(file),
        _ => Interruptible::pumped(file),
    }
}

impl<R: Read> Read for Interruptible<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if stop_requested() || buf.is_empty() {
            return Ok(0);
        }
        match self {
            Interruptible::Direct(r) => r.read(buf),
            Interruptible::Pumped {
                chunks,
                pending,
                at,
            } => {
                while *at == pending.len() {
                    match chunks.recv_timeout(POLL) {
                        Ok(chunk) => {
                            *pending = chunk?;
                            *at = 0;
                        }
                        Err(RecvTimeoutError::Timeout) if !stop_requested() => {}
                        Err(_) => return Ok(0),
                    }
                }
                let n = buf.len().min(pending.len() - *at);
                buf[..n].copy_from_slice(&pending[*at..*at + n]);
                *at += n;
                Ok(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_reader_reads_until_a_stop() {
        let mut r = Interruptible::new(&b"abcdef"[..]);
        let mut buf = [0u8; 3];
        assert_eq!(r.read(&mut buf).unwrap(), 3);
        assert_eq!(&buf, b"abc");
        // The flag is process-wide: this test is the only one in the crate that sets it.
        request_stop();
        assert_eq!(r.read(&mut buf).unwrap(), 0);
        STOP.store(false, Ordering::SeqCst);
        assert_eq!(r.read(&mut buf).unwrap(), 3);
    }
}
