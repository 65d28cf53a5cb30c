//! A progress bar for long runs: bytes, bytes and packets per second and ETA, on standard error
//! (`--progress`, `-q`). The bytes are those read from the files (compressed bytes for a gzip
//! capture, so the ETA holds); standard input has no size, so no ETA.
//!
//! The pipeline never waits for it: a ticker thread samples the input byte counters and the
//! frame counter ten times a second. The rates are its own, averaged over the last seconds,
//! from the first tick on: a bar that appears after a while must not take all that was read
//! before it as read in its first instant.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Runs shorter than this never show a bar.
const SHOW_AFTER: Duration = Duration::from_millis(800);

/// How often a plain progress line is written when standard error is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(2);

pub struct Progress {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts the ticker. `total` is the sum of input sizes when all are known (files), `None`
    /// for standard input.
    pub fn start(
        enabled: bool,
        total: Option<u64>,
        bytes: Vec<Arc<AtomicU64>>,
        frames: Arc<AtomicU64>,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if !enabled {
            return Progress { stop, handle: None };
        }
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let began = Instant::now();
            let bar = new_bar(total);
            let mut last = (Instant::now(), 0u64, 0u64);
            let (mut byte_rate, mut packet_rate) = (0.0f64, 0.0f64);
            let mut shown = false;
            let plain = !std::io::stderr().is_terminal();
            let mut last_line = began.checked_sub(PLAIN_EVERY).unwrap_or(began);
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let done: u64 = bytes.iter().map(|b| b.load(Ordering::Relaxed)).sum();
                let packets = frames.load(Ordering::Relaxed);
                let now = Instant::now();
                let dt = now.duration_since(last.0).as_secs_f64();
                if dt >= 0.5 {
                    let b = done.saturating_sub(last.1) as f64 / dt;
                    let p = packets.saturating_sub(last.2) as f64 / dt;
                    let blend = |old: f64, new: f64| {
                        if old == 0.0 {
                            new
                        } else {
                            old * 0.7 + new * 0.3
                        }
                    };
                    (byte_rate, packet_rate) = (blend(byte_rate, b), blend(packet_rate, p));
                    last = (now, done, packets);
                }
                let text = message(total, done, byte_rate, packet_rate);
                if plain {
                    // Not a terminal (`--progress always` into a log): a plain line now and
                    // then, which a file keeps readable.
                    if began.elapsed() >= SHOW_AFTER && last_line.elapsed() >= PLAIN_EVERY {
                        eprintln!("mcp-forensics: progress: {text}");
                        last_line = Instant::now();
                    }
                    continue;
                }
                if !shown && began.elapsed() >= SHOW_AFTER {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                    shown = true;
                }
                bar.set_position(done);
                bar.set_message(text);
            }
            bar.finish_and_clear();
        });
        Progress {
            stop,
            handle: Some(handle),
        }
    }

    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Hidden until it is worth showing; the bytes and their rates are in the message, worked out
/// here (see the module comment).
fn new_bar(total: Option<u64>) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
    let template = if total.is_some() {
        "{bar:20} {msg}"
    } else {
        "{spinner} {msg}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// `1.20 GiB/4.00 GiB 310.00 MiB/s 250k pkt/s ETA 9s` (short enough for 80 columns with the
/// bar): the ETA only when the total is known and the rate measured.
fn message(total: Option<u64>, done: u64, byte_rate: f64, packet_rate: f64) -> String {
    let b = |n: f64| indicatif::HumanBytes(n.max(0.0) as u64).to_string();
    let mut m = match total {
        Some(t) => format!("{}/{}", b(done as f64), b(t as f64)),
        None => b(done as f64),
    };
    m.push_str(&format!(
        " {}/s {:.0}k pkt/s",
        b(byte_rate),
        packet_rate / 1000.0
    ));
    if let Some(t) = total
        && byte_rate > 0.0
    {
        let left = (t.saturating_sub(done) as f64 / byte_rate).ceil() as u64;
        m.push_str(&match left {
            0..60 => format!(" ETA {left}s"),
            _ => format!(" ETA {}m{:02}s", left / 60, left % 60),
        });
    }
    m
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn the_rate_and_eta_are_the_measured_ones() {
        let mib = 1024.0 * 1024.0;
        let m = message(Some(256 << 20), 64 << 20, 64.0 * mib, 250_000.0);
        assert_eq!(m, "64.00 MiB/256.00 MiB 64.00 MiB/s 250k pkt/s ETA 3s");
        // Standard input: no size, no ETA; and no rate measured yet, no ETA either.
        assert!(!message(None, 1 << 20, mib, 0.0).contains("ETA"));
        assert!(!message(Some(1 << 30), 0, 0.0, 0.0).contains("ETA"));
        assert!(message(Some(1 << 30), 0, mib / 2.0, 0.0).ends_with("ETA 34m08s"));
    }
}
