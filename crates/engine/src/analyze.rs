//! The `analyze` run: every input through every stage, sessions finalized as they end, and
//! the report put together (not yet written: the caller chooses the format).

use std::sync::Arc;

use mcpf_capture::CaptureStage;
use mcpf_http as http;
use mcpf_model::{Note, NoteKind};
use mcpf_report::analyze::{self as report, SessionWriter};

use crate::feed::{self, Fed, TcpLoss};

/// A connection's number and where its frames are.
type ConnSpan = (mcpf_model::ConnId, mcpf_capture::carve::ConnSpan);
use crate::sessions::{Analysed, SessionStage};
use crate::{Engine, EngineError, Observer, Opened, shards};

/// What a run of `analyze` produced: the report, ready to be written in any format.
pub struct Run {
    pub report: report::Report,
    /// An input could not be read (it is listed in the report with its error).
    pub failed: bool,
    /// What the TLS layer decrypted, when it saw a TLS connection.
    pub tls: Option<mcpf_tls::TlsStats>,
    /// Each shard's work, one JSON line (`--shard-stats`).
    pub shard_work: String,
    /// Where each TCP connection's frames are, by connection number, when
    /// [`Settings::keep_conn_spans`](crate::Settings::keep_conn_spans) asked for them.
    pub conn_spans: Vec<(mcpf_model::ConnId, mcpf_capture::carve::ConnSpan)>,
}

impl Engine {
    /// Runs every stage on `inputs`: each session's record goes to `writer` as the session is
    /// finalized; the rest of the report comes back in the [`Run`].
    pub fn run(
        &self,
        inputs: Opened,
        writer: SessionWriter,
        observer: &mut dyn Observer,
    ) -> Result<Run, EngineError> {
        if !inputs.records.is_empty() {
            return self.run_records(inputs, writer);
        }
        let settings = &self.settings;
        let threaded = settings.threads > 1;
        let sessions = SessionStage::new(
            settings,
            inputs.paths.clone(),
            inputs.sources(),
            writer,
            threaded,
        );
        let mut stage = CaptureStage::new(settings.capture.clone(), inputs.paths.len());
        let tls = settings.tls_keys.clone();
        let spans = settings.keep_conn_spans.then(Vec::new);
        let front = Front {
            tls,
            spans,
            classify: settings.classify,
        };
        let stages = self.front(inputs, &mut stage, sessions, observer, front)?;
        assemble(stages, settings)
    }

    /// The inputs through the stages before the MCP stage, on this run's threads, each HTTP
    /// event to `consumer` in wire order.
    pub(crate) fn front<C: Consumer>(
        &self,
        inputs: Opened,
        stage: &mut CaptureStage,
        consumer: C,
        observer: &mut dyn Observer,
        front: Front,
    ) -> Result<Stages<C>, EngineError> {
        if self.settings.threads > 1 {
            let workers = self.workers();
            run_threaded(inputs, stage, consumer, observer, front, workers)
        } else {
            Ok(run_inline(inputs, stage, consumer, observer, front))
        }
    }
}

/// What takes the HTTP events of a run, in wire order: the session stage of `analyze`, or the
/// record file of `extract`.
pub(crate) trait Consumer: http::HttpSink + Send {
    /// An event as the shards hand it on (with its JSON-RPC read, for the session stage).
    type Item: Send + 'static;
    /// Run on the shards' threads.
    fn prepare(event: http::HttpEvent) -> Self::Item;
    /// What holding an item costs, besides its size.
    fn weigh(item: &Self::Item) -> usize;
    fn take(&mut self, item: Self::Item);
}

impl Consumer for SessionStage {
    type Item = mcpf_mcp::Prepared;
    fn prepare(event: http::HttpEvent) -> mcpf_mcp::Prepared {
        mcpf_mcp::prepare(event)
    }
    fn weigh(item: &mcpf_mcp::Prepared) -> usize {
        item.payload_bytes()
    }
    fn take(&mut self, item: mcpf_mcp::Prepared) {
        self.on_prepared(item);
    }
}

/// What the first stages produced.
pub(crate) struct Stages<C> {
    pub(crate) fed: Fed,
    pub(crate) sessions: C,
    pub(crate) http: http::HttpStats,
    pub(crate) tcp: TcpLoss,
    /// What the TLS layer decrypted, when a key log was given.
    pub(crate) tls: Option<mcpf_tls::TlsStats>,
    /// Each shard's work, for `--shard-stats`.
    pub(crate) shard_work: String,
}

/// What comes between the reassembler and the shards, whatever the threads.
pub(crate) struct Front {
    pub(crate) tls: Option<Arc<mcpf_tls::KeyLog>>,
    pub(crate) spans: Option<Vec<ConnSpan>>,
    /// Early classification on (`Settings::classify`).
    pub(crate) classify: bool,
}

impl Front {
    /// The captures through the capture stage into `sink`, through the early classification
    /// when it is on; returns their reports and what the classification set aside.
    fn feed(
        &self,
        inputs: &mut Opened,
        stage: &mut CaptureStage,
        sink: &mut impl feed::CaptureSink,
        observer: &mut dyn Observer,
    ) -> (
        Vec<(mcpf_model::InputId, mcpf_model::InputReport)>,
        http::sniff::SetAside,
    ) {
        if !self.classify {
            let captured = feed::feed_captures(inputs, stage, sink, observer);
            return (captured, Default::default());
        }
        let mut classify = crate::classify::Classify::new(sink, self.tls.is_some());
        let captured = feed::feed_captures(inputs, stage, &mut classify, observer);
        (captured, classify.stats)
    }
}

/// One thread: every stage in turn on each packet.
fn run_inline<C: Consumer>(
    mut inputs: Opened,
    stage: &mut CaptureStage,
    mut sessions: C,
    observer: &mut dyn Observer,
    mut front: Front,
) -> Stages<C> {
    let secrets = mcpf_tls::Secrets::new(front.tls.clone());
    let mut sink = shards::Inline::new(secrets, C::prepare, |ev| sessions.take(ev));
    sink.tcp.spans = front.spans.take();
    let (captured, set_aside) = front.feed(&mut inputs, stage, &mut sink, observer);
    let tcp = std::mem::take(&mut sink.tcp);
    let shards = sink.into_shards();
    let mut stages = finish_run(inputs, captured, sessions, &shards, tcp, 1, observer);
    stages.http.set_aside = set_aside;
    stages
}

/// Several threads: packets and TCP on this one, the per-connection stages on `workers` more,
/// sessions and detectors on another (and JSON records rendered on one more).
fn run_threaded<C: Consumer>(
    mut inputs: Opened,
    stage: &mut CaptureStage,
    sessions: C,
    observer: &mut dyn Observer,
    mut front: Front,
    workers: usize,
) -> Result<Stages<C>, EngineError> {
    std::thread::scope(|scope| {
        let (mut dispatch, results, handles) = shards::start(
            scope,
            workers,
            mcpf_tls::Secrets::new(front.tls.clone()),
            C::prepare,
            C::weigh,
        );
        dispatch.tcp.spans = front.spans.take();
        let consumer = scope.spawn(move || {
            let mut sessions = sessions;
            shards::merge(results, |ev| sessions.take(ev));
            sessions
        });
        let (captured, set_aside) = front.feed(&mut inputs, stage, &mut dispatch, observer);
        dispatch.flush();
        let tcp = std::mem::take(&mut dispatch.tcp);
        // Dropping the dispatch ends the workers' input: they finish, and the session thread
        // after them.
        drop(dispatch);
        let workers = handles.len();
        let shards = shards::join(handles)?;
        let sessions = consumer
            .join()
            .map_err(|_| EngineError::StageFailed("session"))?;
        let mut stages = finish_run(inputs, captured, sessions, &shards, tcp, workers, observer);
        stages.http.set_aside = set_aside;
        Ok(stages)
    })
}

/// The HAR files and logs after the captures, straight into the session stage, and what the
/// shards counted.
fn finish_run<C: Consumer>(
    inputs: Opened,
    captured: Vec<(mcpf_model::InputId, mcpf_model::InputReport)>,
    mut sessions: C,
    shards: &shards::Shards<C::Item>,
    tcp: TcpLoss,
    workers: usize,
    observer: &mut dyn Observer,
) -> Stages<C> {
    let mut http = shards.http_stats();
    let fed = feed::feed_others(inputs, captured, &mut sessions, &mut http, observer);
    Stages {
        fed,
        sessions,
        http,
        tcp,
        tls: shards.tls_stats(),
        shard_work: shards.work_line(workers),
    }
}

/// Finishes the MCP stage and the detectors, and puts the report together.
pub(crate) fn assemble(
    stages: Stages<SessionStage>,
    settings: &crate::Settings,
) -> Result<Run, EngineError> {
    let Stages {
        fed,
        mut sessions,
        http,
        mut tcp,
        tls,
        shard_work,
    } = stages;
    let mut conn_spans = tcp.spans.take().unwrap_or_default();
    // Connections close in any order; they are looked up by number.
    conn_spans.sort_unstable_by_key(|(conn, _)| *conn);
    mcpf_capture::carve::link_successors(&mut conn_spans);
    for (input, caps) in fed.capabilities {
        sessions.set_capabilities(input, caps);
    }
    let Analysed {
        findings,
        sessions,
        timelines,
        profile,
        limits: detector_limits,
        clock_offsets,
        anomalies,
        mcp: mcp_stats,
    } = sessions.finish()?;
    if let Some(e) = &sessions.error {
        return Err(EngineError::Writer(e.clone()));
    }
    // Each connection the key log could not (wholly) decrypt, as the TLS stage listed it.
    let tls_not_decrypted = tls.as_ref().map(|t| t.failures.clone()).unwrap_or_default();
    let tls = tls.filter(|t| t.connections > 0);
    let mut limits = mcp_limits(&mcp_stats, tls.as_ref());
    limits.extend(http_caps_reached(&http));
    limits.extend(crate::classify::limits(&http.set_aside));
    limits.extend(detector_limits);
    let mut inputs = fed.reports;
    account_not_carried(&mut inputs, &mcp_stats.carried_nothing);
    let report = report::Report {
        inputs,
        sessions,
        findings,
        timelines,
        profile,
        http,
        mcp: mcp_stats,
        anomalies,
        connections: tcp.connections,
        connections_with_gaps: tcp.connections_with_gaps,
        gap_bytes: tcp.gap_bytes,
        snaplen_bytes: tcp.snaplen_bytes,
        limits,
        tls_not_decrypted,
        clock_offsets,
        tool: settings.tool,
    };
    Ok(Run {
        report,
        failed: fed.failed,
        tls,
        shard_work,
        conn_spans,
    })
}

/// What the MCP stage could not keep or judge, what TLS decrypted, and a stop by a signal: the
/// first limits of the run, in the order the report lists them.
fn mcp_limits(mcp: &mcpf_mcp::McpStats, tls: Option<&mcpf_tls::TlsStats>) -> Vec<Note> {
    let mut limits: Vec<Note> = mcp
        .payload_error
        .iter()
        .map(|e| Note::new(NoteKind::PayloadsNotKept, 1).detail(e.clone()))
        .collect();
    if mcp.sessions_lost > 0 {
        limits.push(Note::new(NoteKind::SessionsLost, mcp.sessions_lost));
    }
    if mcp.events_unheld > 0 {
        let kind = NoteKind::SessionEventsUnheld {
            streams: mcp.streams_capped,
            max: mcp.max_session_events,
        };
        limits.push(Note::new(kind, mcp.events_unheld));
    }
    if mcp.exchanges_unheld > 0 {
        let kind = NoteKind::SessionExchangesUnheld {
            sessions: mcp.sessions_capped,
            max: mcp.max_session_exchanges,
        };
        limits.push(Note::new(kind, mcp.exchanges_unheld));
    }
    if mcp.event_ids_not_indexed > 0 {
        let kind = NoteKind::EventIdsNotIndexed;
        limits.push(Note::new(kind, mcp.event_ids_not_indexed));
    }
    limits.extend(tls.into_iter().flat_map(mcpf_tls::TlsStats::notes));
    if mcpf_model::interrupt::stop_requested() {
        limits.push(Note::new(NoteKind::StoppedBySignal, 1));
    }
    if mcp.minting_servers_not_kept > 0 {
        let max = mcpf_mcp::MAX_MINTING_SERVERS as u64;
        let kind = NoteKind::MintingServersNotKept { max };
        limits.push(Note::new(kind, mcp.minting_servers_not_kept));
    }
    limits
}

/// The HTTP stage's caps this run reached, one note each (every message concerned is also an
/// anomaly; the TCP caps are warnings of the input whose packets reached them).
fn http_caps_reached(http: &http::HttpStats) -> Vec<Note> {
    // What a shard may hold of a cap over all connections, and the cap, in MiB.
    let shared = |cap: u64| (((cap / shards::SHARDS as u64) >> 20), cap >> 20);
    let (brotli_shard, brotli_total) = shared(http::MAX_BROTLI_WINDOWS_HELD);
    let (held_shard, held_total) = shared(http::MAX_MESSAGE_BYTES_HELD);
    [
        (
            NoteKind::BodiesPastDecodingBudget,
            http.bodies_not_decoded_past_budget,
        ),
        (
            NoteKind::BrotliBodiesRefused {
                shard_mib: brotli_shard,
                total_mib: brotli_total,
            },
            http.brotli_bodies_refused,
        ),
        (
            NoteKind::MessagesCutByHeld {
                shard_mib: held_shard,
                total_mib: held_total,
            },
            http.messages_cut_by_held,
        ),
        (NoteKind::HeaderFieldsDropped, http.headers_dropped),
        (
            NoteKind::HeaderBytesDropped {
                block_kib: (http::MAX_H2_BLOCK_FIELD_BYTES >> 10) as u64,
                least_kib: (http::LEAST_H2_BLOCK_FIELD_BYTES >> 10) as u64,
                conn_mib: http::MAX_H2_CONN_FIELD_BYTES >> 20,
            },
            http.header_fields_past_bytes,
        ),
        (
            NoteKind::BodiesPastConnectionBudget {
                floor_mib: http::CONN_DECODING_START >> 20,
                ratio: http::CONN_DECODING_RATIO,
            },
            http.bodies_past_conn_budget,
        ),
        (
            NoteKind::SseStreamsCutInPacket {
                max: http::MAX_SSE_EVENTS_PER_PACKET,
            },
            http.sse_streams_cut_in_packet,
        ),
        (NoteKind::JsonBodiesShrunk, http.json_bodies_shrunk),
        (
            NoteKind::OtherTypeBodiesCut {
                window_kib: (http::OTHER_TYPE_WINDOW >> 10) as u64,
            },
            http.other_type_bodies_cut,
        ),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(kind, n)| Note::new(kind, n))
    .collect()
}

/// Moves the frames of connections that carried no HTTP, or no MCP, from each input's
/// analysed bucket to the skipped one that says so.
fn account_not_carried(
    inputs: &mut [mcpf_model::InputReport],
    carried: &std::collections::BTreeMap<mcpf_model::InputId, mcpf_mcp::NotCarried>,
) {
    use mcpf_model::bucket;
    for (input, n) in carried {
        let Some(rep) = inputs.iter_mut().find(|r| r.index == *input) else {
            continue;
        };
        let a = &mut rep.accounting;
        for (reason, (packets, bytes)) in
            [(bucket::NOT_HTTP, n.not_http), (bucket::NOT_MCP, n.not_mcp)]
        {
            a.packets.reclassify_skipped(reason, packets);
            a.bytes.reclassify_skipped(reason, bytes);
        }
    }
}
