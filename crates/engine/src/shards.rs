//! The per-connection stages on as many threads as a run has: TLS, HTTP, SSE and the JSON-RPC
//! read of each message, in shards by connection, and the sessions built from what they find in
//! wire order.
//!
//! The reading thread reads packets and reassembles TCP: one table of connections, so that its
//! caps and connection numbers are the run's whatever the threads. Each TCP event gets a
//! sequence number and goes to the shard of its connection. A run always has [`SHARDS`] shards,
//! and a shard's state depends on its own connections only (the HTTP stage's caps are divided
//! among the shards, [`mcpf_http::Stage::shard`]): the number of threads only decides which
//! worker feeds which shards. The session thread merges the shards' output by sequence number,
//! so the MCP stage sees the same events in the same order on one thread or many, and the
//! report is the same byte for byte.

use std::sync::mpsc;

use mcpf_capture::held::{HeldEvents, conn_of};
use mcpf_capture::tcp::{TcpEvent, TcpSink};
use mcpf_http as http;

use crate::feed::{CaptureSink, TcpLoss};

/// Shards of every run. Eight keeps each shard's share of the HTTP caps at least 128 MiB of
/// message bytes and 64 MiB of brotli windows; the session thread, not the shards, bounds what
/// more workers would gain.
pub const SHARDS: usize = 8;

/// TCP events per round, and bytes past which a round goes early: a round is what the reading
/// thread hands every worker at once. Small, so that the bytes the reading thread copied are
/// still in cache when a worker reads them (2048 events took 20% more time on two cores).
const ROUND_EVENTS: usize = 512;
const ROUND_BYTES: usize = 256 << 10;
/// Rounds queued for each worker, and results queued for the session thread, per worker.
const IN_FLIGHT: usize = 2;

/// The shard of a connection: by its number, which the reassembler gives in order of
/// appearance, so shards are balanced and no sender can aim its connections at one.
fn shard_of(event: &TcpEvent<'_>) -> usize {
    (conn_of(event).number() % SHARDS as u64) as usize
}

/// What one shard did: the evidence that more workers would have more to share.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ShardWork {
    pub(crate) connections: u64,
    pub(crate) tcp_events: u64,
    pub(crate) bytes: u64,
    pub(crate) http_events: u64,
}

/// The per-connection stages of one shard, and what they produced since last taken.
pub(crate) struct Shard<T> {
    tls: crate::feed::Tls,
    pub(crate) http: http::Stage<Collect<T>>,
    pub(crate) work: ShardWork,
}

/// The HTTP sink of a shard: each event, prepared for the session stage, with the sequence
/// number of the TCP event that produced it.
pub(crate) struct Collect<T> {
    seq: u64,
    out: Vec<(u64, T)>,
    prepare: fn(http::HttpEvent) -> T,
}

impl<T> http::HttpSink for Collect<T> {
    fn on_http(&mut self, event: http::HttpEvent) {
        self.out.push((self.seq, (self.prepare)(event)));
    }
}

impl<T> Shard<T> {
    fn new(secrets: &mcpf_tls::Secrets, prepare: fn(http::HttpEvent) -> T) -> Self {
        let sink = Collect {
            seq: 0,
            out: Vec::new(),
            prepare,
        };
        Shard {
            tls: crate::feed::Tls::new(secrets.clone()),
            http: http::Stage::shard(sink, SHARDS as u64),
            work: ShardWork::default(),
        }
    }

    fn feed(&mut self, seq: u64, event: TcpEvent<'_>) {
        self.work.tcp_events += 1;
        match &event {
            TcpEvent::Opened { .. } => self.work.connections += 1,
            TcpEvent::Data { data, .. } => self.work.bytes += data.len() as u64,
            _ => {}
        }
        self.http.sink.seq = seq;
        self.tls.through(seq, &mut self.http, event);
    }

    /// What the shard produced since last asked, in sequence order.
    fn drain(&mut self) -> std::vec::Drain<'_, (u64, T)> {
        self.work.http_events += self.http.sink.out.len() as u64;
        self.http.sink.out.drain(..)
    }

    /// The same, taken whole: room for as many is left in its place.
    fn take(&mut self) -> Vec<(u64, T)> {
        let out = &mut self.http.sink.out;
        self.work.http_events += out.len() as u64;
        // Room for a round busier than this one, so the next rarely grows.
        let capacity = out.len() + out.len() / 2;
        std::mem::replace(out, Vec::with_capacity(capacity))
    }

    /// The TLS layer's counts, if the shard had one.
    pub(crate) fn tls_stats(&self) -> Option<&mcpf_tls::TlsStats> {
        self.tls.stats()
    }
}

/// Every shard of a run, in shard order, with what they counted together.
pub(crate) struct Shards<T> {
    pub(crate) shards: Vec<Shard<T>>,
}

impl<T> Shards<T> {
    /// The HTTP stage's counts over every shard.
    pub(crate) fn http_stats(&self) -> http::HttpStats {
        let mut all = http::HttpStats::default();
        for s in &self.shards {
            all.merge(&s.http.stats);
        }
        all
    }

    /// The TLS layer's counts over every shard, when any had a TLS layer.
    pub(crate) fn tls_stats(&self) -> Option<mcpf_tls::TlsStats> {
        let mut layers = self.shards.iter().filter_map(Shard::tls_stats).peekable();
        layers.peek()?;
        let mut all = mcpf_tls::TlsStats::default();
        for t in layers {
            all.merge(t);
        }
        all.order_failures();
        Some(all)
    }

    /// One JSON line of each shard's work, for `--shard-stats`.
    pub(crate) fn work_line(&self, workers: usize) -> String {
        let rows: Vec<String> = self
            .shards
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let w = s.work;
                format!(
                    r#"{{"shard":{i},"worker":{},"connections":{},"tcp_events":{},"bytes":{},"http_events":{}}}"#,
                    i % workers.max(1),
                    w.connections,
                    w.tcp_events,
                    w.bytes,
                    w.http_events
                )
            })
            .collect();
        format!(r#"{{"shard_stats":[{}]}}"#, rows.join(","))
    }
}

/// Every shard on the calling thread: each TCP event through its shard, and what that produced
/// straight on to `deliver`, so the order is the wire's without merging.
pub(crate) struct Inline<T, D: FnMut(T)> {
    shards: Vec<Shard<T>>,
    secrets: mcpf_tls::Secrets,
    seq: u64,
    pub(crate) tcp: TcpLoss,
    deliver: D,
}

impl<T, D: FnMut(T)> Inline<T, D> {
    pub(crate) fn new(
        secrets: mcpf_tls::Secrets,
        prepare: fn(http::HttpEvent) -> T,
        deliver: D,
    ) -> Self {
        Inline {
            shards: (0..SHARDS).map(|_| Shard::new(&secrets, prepare)).collect(),
            secrets,
            seq: 0,
            tcp: TcpLoss::default(),
            deliver,
        }
    }

    pub(crate) fn into_shards(self) -> Shards<T> {
        Shards {
            shards: self.shards,
        }
    }
}

impl<T, D: FnMut(T)> CaptureSink for Inline<T, D> {
    fn tcp_loss(&self) -> &TcpLoss {
        &self.tcp
    }
}

impl CaptureSink for Dispatch {
    fn tcp_loss(&self) -> &TcpLoss {
        &self.tcp
    }
}

impl<T, D: FnMut(T)> TcpSink for Inline<T, D> {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        self.tcp.count(&event);
        let shard = &mut self.shards[shard_of(&event)];
        shard.feed(self.seq, event);
        self.seq += 1;
        for (_, t) in shard.drain() {
            (self.deliver)(t);
        }
    }

    fn on_tls_secrets(&mut self, key_log: &[u8]) {
        self.secrets.carry(key_log, self.seq);
    }
}

/// What the reading thread hands one worker at a time: the TCP events of its shards, each with
/// its sequence number and shard.
#[derive(Default)]
struct Round {
    events: HeldEvents,
    tags: Vec<(u64, u8)>,
    /// The sequence number after the round's last event, of any worker.
    end: u64,
}

impl Round {
    /// A round with room for what fills one, so it does not grow by copies.
    fn sized() -> Round {
        Round {
            events: HeldEvents::with_capacity(ROUND_EVENTS, ROUND_BYTES + (64 << 10)),
            tags: Vec::with_capacity(ROUND_EVENTS),
            ..Round::default()
        }
    }

    fn clear(&mut self) {
        self.events.clear();
        self.tags.clear();
    }
}

/// The reading thread's TCP sink: numbers each event and puts it in the round of its shard's
/// worker; hands each worker its round once the rounds are full.
pub(crate) struct Dispatch {
    rounds: Vec<Round>,
    txs: Vec<mpsc::SyncSender<Round>>,
    /// Rounds the workers are done with, to be filled again: their buffers are kept.
    spare: mpsc::Receiver<Round>,
    seq: u64,
    events: usize,
    bytes: usize,
    pub(crate) tcp: TcpLoss,
    /// A worker stopped (it only stops by panicking): nothing more is sent.
    closed: bool,
    secrets: mcpf_tls::Secrets,
}

impl Dispatch {
    fn worker_of(&self, shard: usize) -> usize {
        shard % self.txs.len()
    }

    /// Hands every worker its round, empty or not: each worker's answer to a round tells the
    /// session thread that it has done everything before the round's end.
    pub(crate) fn flush(&mut self) {
        if self.closed || self.rounds.iter().all(|r| r.tags.is_empty()) {
            return;
        }
        for (round, tx) in self.rounds.iter_mut().zip(&self.txs) {
            round.end = self.seq;
            let next = self.spare.try_recv().unwrap_or_else(|_| Round::sized());
            if tx.send(std::mem::replace(round, next)).is_err() {
                self.closed = true;
                return;
            }
        }
        self.events = 0;
        self.bytes = 0;
    }
}

impl TcpSink for Dispatch {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        self.tcp.count(&event);
        let shard = shard_of(&event);
        let worker = self.worker_of(shard);
        let round = &mut self.rounds[worker];
        let before = round.events.byte_len();
        round.events.push(event);
        round.tags.push((self.seq, shard as u8));
        self.seq += 1;
        self.events += 1;
        self.bytes += round.events.byte_len() - before;
        if self.events >= ROUND_EVENTS || self.bytes >= ROUND_BYTES {
            self.flush();
        }
    }

    fn on_tls_secrets(&mut self, key_log: &[u8]) {
        // Added once for every shard, usable from the next event on (see `mcpf_tls::Secrets`).
        self.secrets.carry(key_log, self.seq);
    }
}

/// Bytes of events a worker gathers before it hands them on mid-round (a round of compressed
/// bodies can decode to gigabytes), and bytes waiting for the session thread past which a worker
/// that is ahead of another waits for it.
const MESSAGE_BYTES: usize = 2 << 20;
const MAX_PENDING: usize = 8 << 20;

/// What a worker hands the session thread: the events of each of its shards in sequence order
/// (its `i`-th shard is shard `worker + i * workers`), and that it has done every event numbered
/// below `through`.
struct Out<T> {
    worker: usize,
    through: u64,
    runs: Vec<Vec<(u64, T)>>,
}

/// Bounds the events waiting for the session thread. The session thread can hand on only what
/// every worker has passed, so a worker ahead of the others waits while too much waits; the one
/// furthest behind never does, so the others always catch up: no cycle of waits.
struct Gate {
    state: std::sync::Mutex<GateState>,
    moved: std::sync::Condvar,
}

struct GateState {
    pending: usize,
    through: Vec<u64>,
}

impl Gate {
    fn new(workers: usize) -> Self {
        Gate {
            state: std::sync::Mutex::new(GateState {
                pending: 0,
                through: vec![0; workers],
            }),
            moved: std::sync::Condvar::new(),
        }
    }

    /// Waits until worker `me` may hand on `bytes` more, done through `through`.
    fn admit(&self, me: usize, through: u64, bytes: usize) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        while st.pending > MAX_PENDING && st.through.iter().any(|&t| t < st.through[me]) {
            st = match self.moved.wait(st) {
                Ok(st) => st,
                Err(_) => return,
            };
        }
        st.pending += bytes;
        st.through[me] = through;
        drop(st);
        self.moved.notify_all();
    }

    /// The session thread handed on `bytes`.
    fn release(&self, bytes: usize) {
        if let Ok(mut st) = self.state.lock() {
            st.pending = st.pending.saturating_sub(bytes);
        }
        self.moved.notify_all();
    }
}

/// What an event costs to hold while it waits.
fn weight<T>(event: &T, weigh: fn(&T) -> usize) -> usize {
    weigh(event) + std::mem::size_of::<T>()
}

/// One worker: what it needs to feed its shards and hand on what they produce.
struct Worker<T> {
    me: usize,
    workers: usize,
    shards: Vec<Shard<T>>,
    bytes: usize,
    tx: mpsc::SyncSender<Out<T>>,
    gate: std::sync::Arc<Gate>,
    weigh: fn(&T) -> usize,
}

impl<T> Worker<T> {
    /// Each round through the shards (shard `i` is the `i / workers`-th of `shards`), what
    /// they produce handed on in sequence order; the round back to be filled again.
    fn run(mut self, rx: mpsc::Receiver<Round>, spare: mpsc::Sender<Round>) -> Vec<Shard<T>> {
        for mut round in rx {
            for (i, &(seq, shard)) in round.tags.iter().enumerate() {
                let shard = &mut self.shards[shard as usize / self.workers];
                let before = shard.http.sink.out.len();
                shard.feed(seq, round.events.get(i));
                let made = &shard.http.sink.out[before..];
                self.bytes += made
                    .iter()
                    .map(|(_, t)| weight(t, self.weigh))
                    .sum::<usize>();
                if self.bytes >= MESSAGE_BYTES && !self.hand_on(seq + 1) {
                    return self.shards;
                }
            }
            if !self.hand_on(round.end) {
                break;
            }
            round.clear();
            // The reading thread may be gone: the round is then dropped.
            let _ = spare.send(round);
        }
        self.shards
    }

    /// Hands on what was gathered, done through `through`; false when the session thread is
    /// gone.
    fn hand_on(&mut self, through: u64) -> bool {
        self.gate.admit(self.me, through, self.bytes);
        self.bytes = 0;
        let out = Out {
            worker: self.me,
            through,
            runs: self.shards.iter_mut().map(Shard::take).collect(),
        };
        self.tx.send(out).is_ok()
    }
}

/// The session thread: the workers' events, handed to `deliver` in sequence order as soon as
/// every worker has passed them. Returns when the workers are done.
pub(crate) fn merge<T>(results: Results<T>, mut deliver: impl FnMut(T)) {
    let Results { rx, gate, weigh } = results;
    let workers = gate.state.lock().map_or(0, |s| s.through.len());
    let mut queues: Vec<Queue<T>> = (0..SHARDS).map(|_| Default::default()).collect();
    let mut through = vec![0u64; workers];
    for out in rx {
        for (i, run) in out.runs.into_iter().enumerate() {
            queues[out.worker + i * workers].push_back(run.into_iter());
        }
        through[out.worker] = out.through;
        let ready = through.iter().copied().min().unwrap_or(0);
        gate.release(deliver_ready(&mut queues, ready, weigh, &mut deliver));
    }
    deliver_ready(&mut queues, u64::MAX, weigh, &mut deliver);
}

/// A shard's events not handed on yet, in the batches they came in (taken from where they lie,
/// not copied into one queue).
type Queue<T> = std::collections::VecDeque<std::vec::IntoIter<(u64, T)>>;

/// The sequence number of the next event of a shard's queue, its empty batches dropped.
fn front<T>(queue: &mut Queue<T>) -> Option<u64> {
    loop {
        match queue.front()?.as_slice().first() {
            Some((seq, _)) => return Some(*seq),
            None => {
                queue.pop_front();
            }
        }
    }
}

/// Hands on, in sequence order, every queued event numbered below `ready`; returns their
/// weight.
fn deliver_ready<T>(
    queues: &mut [Queue<T>],
    ready: u64,
    weigh: fn(&T) -> usize,
    deliver: &mut impl FnMut(T),
) -> usize {
    let mut bytes = 0;
    loop {
        let next = queues
            .iter_mut()
            .enumerate()
            .filter_map(|(i, q)| front(q).map(|seq| (seq, i)))
            .filter(|(seq, _)| *seq < ready)
            .min();
        let Some((_, i)) = next else {
            return bytes;
        };
        if let Some((_, t)) = queues[i].front_mut().and_then(Iterator::next) {
            bytes += weight(&t, weigh);
            deliver(t);
        }
    }
}

/// The session thread's end of the workers' output.
pub(crate) struct Results<T> {
    rx: mpsc::Receiver<Out<T>>,
    gate: std::sync::Arc<Gate>,
    weigh: fn(&T) -> usize,
}

/// A worker thread, which gives its shards back when it ends.
pub(crate) type Joining<'scope, T> = std::thread::ScopedJoinHandle<'scope, Vec<Shard<T>>>;

/// Starts `workers` worker threads in `scope`, each feeding its shards: returns the reading
/// thread's sink, the session thread's end, and the workers to join.
pub(crate) fn start<'scope, T: Send + 'static>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    workers: usize,
    secrets: mcpf_tls::Secrets,
    prepare: fn(http::HttpEvent) -> T,
    weigh: fn(&T) -> usize,
) -> (Dispatch, Results<T>, Vec<Joining<'scope, T>>) {
    let workers = workers.clamp(1, SHARDS);
    let gate = std::sync::Arc::new(Gate::new(workers));
    let (out_tx, out_rx) = mpsc::sync_channel(IN_FLIGHT * workers);
    let (spare_tx, spare_rx) = mpsc::channel();
    let mut txs = Vec::new();
    let mut handles = Vec::new();
    for me in 0..workers {
        let (tx, rx) = mpsc::sync_channel(IN_FLIGHT);
        let worker = Worker {
            me,
            workers,
            shards: (me..SHARDS)
                .step_by(workers)
                .map(|_| Shard::new(&secrets, prepare))
                .collect(),
            bytes: 0,
            tx: out_tx.clone(),
            gate: gate.clone(),
            weigh,
        };
        let spare = spare_tx.clone();
        handles.push(scope.spawn(move || worker.run(rx, spare)));
        txs.push(tx);
    }
    let dispatch = Dispatch {
        rounds: (0..workers).map(|_| Round::default()).collect(),
        txs,
        spare: spare_rx,
        seq: 0,
        events: 0,
        bytes: 0,
        tcp: TcpLoss::default(),
        closed: false,
        secrets,
    };
    let results = Results {
        rx: out_rx,
        gate,
        weigh,
    };
    (dispatch, results, handles)
}

/// The shards back from their workers, in shard order.
pub(crate) fn join<T>(handles: Vec<Joining<'_, T>>) -> Result<Shards<T>, crate::EngineError> {
    let workers = handles.len();
    let mut by_worker = Vec::new();
    for h in handles {
        let shards = h
            .join()
            .map_err(|_| crate::EngineError::StageFailed("HTTP worker"))?;
        by_worker.push(shards.into_iter());
    }
    let shards = (0..SHARDS)
        .filter_map(|i| by_worker[i % workers].next())
        .collect();
    Ok(Shards { shards })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_handed_on_in_sequence_order_once_every_worker_passed_them() {
        let batch = |b: &[(u64, char)]| Vec::from(b).into_iter();
        let mut queues: Vec<Queue<char>> = vec![
            [batch(&[(0, 'a')]), batch(&[]), batch(&[(3, 'd'), (4, 'e')])].into(),
            [].into(),
            [batch(&[(1, 'b'), (2, 'c'), (7, 'h')])].into(),
        ];
        let mut out = String::new();
        let weigh = |_: &char| 1;
        deliver_ready(&mut queues, 4, weigh, &mut |c| out.push(c));
        assert_eq!(out, "abcd");
        deliver_ready(&mut queues, u64::MAX, weigh, &mut |c| out.push(c));
        assert_eq!(out, "abcdeh");
    }

    #[test]
    fn the_worker_furthest_behind_is_never_held_back() {
        let gate = Gate::new(2);
        gate.admit(0, 10, MAX_PENDING + 1);
        // Worker 1 is behind (0 < 10): it passes although too much waits.
        gate.admit(1, 5, 1);
        // Worker 0 (10) is ahead of worker 1 (5): it would wait until the session thread
        // hands some on.
        gate.release(MAX_PENDING);
        gate.admit(0, 20, 1);
        let st = gate.state.lock().unwrap();
        assert_eq!((st.through.clone(), st.pending), (vec![20, 5], 3));
    }
}
