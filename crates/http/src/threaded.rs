//! Handing the HTTP events to another thread: packets, TCP and HTTP on one thread, the MCP stage
//! and the detectors on another.
//!
//! [`Forwarder`] is the HTTP sink of the first thread: it gathers events into batches and hands
//! full batches over a bounded channel; [`replay`] feeds them, in order, to the real sink on the
//! second thread. The second thread sees exactly the events a single-threaded run delivers, so
//! the output is identical.

use std::sync::mpsc;

use super::{HttpEvent, HttpSink};

/// Events per batch, bytes they carry past which a batch goes early (a few events with large
/// bodies), and batches in flight: at most about 5 × 8 MiB wait between the threads.
const BATCH_EVENTS: usize = 1024;
const BATCH_BYTES: usize = 8 << 20;
const IN_FLIGHT: usize = 4;

/// The first thread's HTTP sink.
pub struct Forwarder {
    batch: Vec<HttpEvent>,
    batch_bytes: usize,
    tx: mpsc::SyncSender<Vec<HttpEvent>>,
    closed: bool,
}

impl Forwarder {
    /// Hands any partial batch over.
    pub fn flush(&mut self) {
        if self.batch.is_empty() || self.closed {
            return;
        }
        self.batch_bytes = 0;
        let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_EVENTS));
        if self.tx.send(full).is_err() {
            // The consumer is gone (it only stops by panicking): nothing more to send.
            self.closed = true;
        }
    }
}

impl HttpSink for Forwarder {
    fn on_http(&mut self, event: HttpEvent) {
        self.batch_bytes += event.payload_bytes();
        self.batch.push(event);
        if self.batch.len() >= BATCH_EVENTS || self.batch_bytes >= BATCH_BYTES {
            self.flush();
        }
    }
}

/// The receiving end of a [`Forwarder`].
pub type Receiver = mpsc::Receiver<Vec<HttpEvent>>;

/// A forwarder and the receiving end for the second thread.
pub fn channel() -> (Forwarder, Receiver) {
    let (tx, rx) = mpsc::sync_channel(IN_FLIGHT);
    (
        Forwarder {
            batch: Vec::with_capacity(BATCH_EVENTS),
            batch_bytes: 0,
            tx,
            closed: false,
        },
        rx,
    )
}

/// The second thread's loop: every batch, in order, into `sink`.
pub fn replay(rx: Receiver, sink: &mut impl HttpSink) {
    for batch in rx {
        for event in batch {
            sink.on_http(event);
        }
    }
}
