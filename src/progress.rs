//! A progress bar for long runs: bytes, packets per second and ETA, on standard error, only when
//! it is a terminal and colour is allowed (`NO_COLOR`, `--color never` and pipes turn it off).
//!
//! The pipeline never waits for it: a ticker thread samples the input byte counters and the
//! frame counter ten times a second.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Runs shorter than this never show a bar.
const SHOW_AFTER: Duration = Duration::from_millis(800);

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
            let mut bar: Option<ProgressBar> = None;
            let mut last = (Instant::now(), 0u64);
            let mut rate = 0.0f64;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if began.elapsed() < SHOW_AFTER {
                    continue;
                }
                let done: u64 = bytes.iter().map(|b| b.load(Ordering::Relaxed)).sum();
                let packets = frames.load(Ordering::Relaxed);
                let now = Instant::now();
                let dt = now.duration_since(last.0).as_secs_f64();
                if dt >= 0.5 {
                    let instant = (packets - last.1.min(packets)) as f64 / dt;
                    rate = if rate == 0.0 {
                        instant
                    } else {
                        rate * 0.7 + instant * 0.3
                    };
                    last = (now, packets);
                }
                let bar = bar.get_or_insert_with(|| {
                    let b = match total {
                        Some(t) => {
                            ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::stderr())
                        }
                        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
                    };
                    let template = if total.is_some() {
                        "{bar:30} {bytes}/{total_bytes} {bytes_per_sec} {msg} ETA {eta}"
                    } else {
                        "{spinner} {bytes} {bytes_per_sec} {msg}"
                    };
                    if let Ok(style) = ProgressStyle::with_template(template) {
                        b.set_style(style);
                    }
                    b
                });
                bar.set_position(done);
                bar.set_message(format!("{:.0} packets/s", rate));
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
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

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
