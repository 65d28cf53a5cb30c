//! The `analyze` run: every input through every stage, sessions finalized as they end, and
//! the report put together (not yet written: the caller chooses the format).

use std::sync::Arc;

use mcpf_capture::CaptureStage;
use mcpf_http as http;
use mcpf_report::analyze::{self as report, SessionWriter};

use crate::feed::{self, Fed, TcpLoss};
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
        let stages = if threaded {
            let workers = self.workers();
            run_threaded(inputs, &mut stage, sessions, observer, tls, workers)?
        } else {
            run_inline(inputs, &mut stage, sessions, observer, tls)
        };
        assemble(stages, settings)
    }
}

/// What the first stages produced.
struct Stages {
    fed: Fed,
    sessions: SessionStage,
    http: http::HttpStats,
    tcp: TcpLoss,
    /// What the TLS layer decrypted, when a key log was given.
    tls: Option<mcpf_tls::TlsStats>,
    /// Each shard's work, for `--shard-stats`.
    shard_work: String,
}

/// One thread: every stage in turn on each packet.
fn run_inline(
    mut inputs: Opened,
    stage: &mut CaptureStage,
    mut sessions: SessionStage,
    observer: &mut dyn Observer,
    tls: Option<Arc<mcpf_tls::KeyLog>>,
) -> Stages {
    let mut front = shards::Inline::new(tls.as_deref(), mcpf_mcp::prepare, |ev| {
        sessions.on_prepared(ev)
    });
    let captured = feed::feed_captures(&mut inputs, stage, &mut front, observer);
    let tcp = std::mem::take(&mut front.tcp);
    let shards = front.into_shards();
    finish_run(inputs, captured, sessions, &shards, tcp, 1, observer)
}

/// Several threads: packets and TCP on this one, the per-connection stages on `workers` more,
/// sessions and detectors on another (and JSON records rendered on one more).
fn run_threaded(
    mut inputs: Opened,
    stage: &mut CaptureStage,
    sessions: SessionStage,
    observer: &mut dyn Observer,
    tls: Option<Arc<mcpf_tls::KeyLog>>,
    workers: usize,
) -> Result<Stages, EngineError> {
    std::thread::scope(|scope| {
        let (mut dispatch, results, handles) =
            shards::start(scope, workers, tls.as_deref(), mcpf_mcp::prepare, weigh);
        let consumer = scope.spawn(move || {
            let mut sessions = sessions;
            shards::merge(results, |ev| sessions.on_prepared(ev));
            sessions
        });
        let captured = feed::feed_captures(&mut inputs, stage, &mut dispatch, observer);
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
        Ok(finish_run(
            inputs, captured, sessions, &shards, tcp, workers, observer,
        ))
    })
}

/// What holding an event costs, besides its size.
fn weigh(ev: &mcpf_mcp::Prepared) -> usize {
    ev.payload_bytes()
}

/// The HAR files and logs after the captures, straight into the session stage, and what the
/// shards counted.
fn finish_run(
    inputs: Opened,
    captured: Vec<(mcpf_model::InputId, mcpf_model::InputReport)>,
    mut sessions: SessionStage,
    shards: &shards::Shards<mcpf_mcp::Prepared>,
    tcp: TcpLoss,
    workers: usize,
    observer: &mut dyn Observer,
) -> Stages {
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
fn assemble(stages: Stages, settings: &crate::Settings) -> Result<Run, EngineError> {
    let Stages {
        fed,
        mut sessions,
        http,
        tcp,
        tls,
        shard_work,
    } = stages;
    for (input, caps) in fed.capabilities {
        sessions.set_capabilities(input, caps);
    }
    let Analysed {
        findings,
        sessions,
        timelines,
        limits: detector_limits,
        clock_offsets,
        anomalies,
        mcp: mcp_stats,
    } = sessions.finish()?;
    if let Some(e) = &sessions.error {
        return Err(EngineError::Writer(e.clone()));
    }
    let mut limits: Vec<String> = mcp_stats.payload_error.iter().cloned().collect();
    if mcp_stats.sessions_lost > 0 {
        limits.push(format!(
            "{} quiet sessions written to the spill file could not be read back",
            mcp_stats.sessions_lost
        ));
    }
    if mcp_stats.events_unheld > 0 {
        let streams = mcp_stats.streams_capped;
        limits.push(format!(
            "{} SSE events on {streams} stream{} arrived after their session held {} (--max-session-events): counted, not kept; unanswered_request, skipped_events and resume_gap are not determinable for those sessions",
            mcp_stats.events_unheld,
            if streams == 1 { "" } else { "s" },
            mcp_stats.max_session_events
        ));
    }
    if mcp_stats.event_ids_not_indexed > 0 {
        limits.push(format!(
            "{} event IDs arrived while the index of the open sessions' IDs was full: cross_session_replay may be missed for the resumes that replayed them",
            mcp_stats.event_ids_not_indexed
        ));
    }
    if let Some(t) = tls.as_ref().filter(|t| t.connections > 0) {
        limits.push(mcpf_report::tls_line(t));
    }
    // Each connection the key log could not (wholly) decrypt, as the TLS stage listed it.
    let tls_not_decrypted = tls.as_ref().map(|t| t.failures.clone()).unwrap_or_default();
    let tls = tls.filter(|t| t.connections > 0);
    if mcpf_model::interrupt::stop_requested() {
        limits.push(
            "reading was stopped by a signal (SIGINT, SIGTERM or SIGHUP): the report is of what was read until then, and requests still open then are pending, not unanswered".into(),
        );
    }
    if mcp_stats.minting_servers_not_kept > 0 {
        limits.push(format!(
            "{} servers minted session IDs after {} had been remembered: requests to them without one are not judged (status_code_violation session_header_missing_not_400)",
            mcp_stats.minting_servers_not_kept,
            mcpf_mcp::MAX_MINTING_SERVERS
        ));
    }
    limits.extend(http_caps_reached(&http));
    limits.extend(detector_limits);
    let mut inputs = fed.reports;
    account_not_carried(&mut inputs, &mcp_stats.carried_nothing);
    let report = report::Report {
        inputs,
        sessions,
        findings,
        timelines,
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
    })
}

/// The HTTP stage's caps this run reached, one line each (every message concerned is also an
/// anomaly; the TCP caps are warnings of the input whose packets reached them).
fn http_caps_reached(http: &http::HttpStats) -> Vec<String> {
    let mut out = Vec::new();
    if http.bodies_not_decoded_past_budget > 0 {
        out.push(format!(
            "{} compressed bodies were decoded only up to the decoding budget (1 MiB, then 1024 bytes per compressed byte): a decompression bomb, or a body too large to decode whole",
            http.bodies_not_decoded_past_budget
        ));
    }
    if http.brotli_bodies_refused > 0 {
        out.push(format!(
            "{} brotli bodies were not decoded: the bodies in progress on their shard (an eighth of the connections) already held the {} MiB of decoding windows a shard may hold ({} MiB over all)",
            http.brotli_bodies_refused,
            (http::MAX_BROTLI_WINDOWS_HELD / shards::SHARDS as u64) >> 20,
            http::MAX_BROTLI_WINDOWS_HELD >> 20
        ));
    }
    if http.messages_cut_by_held > 0 {
        out.push(format!(
            "{} messages were kept shorter than their own caps: the messages in progress on their shard (an eighth of the connections) held the {} MiB of bodies and events a shard may hold ({} MiB over all)",
            http.messages_cut_by_held,
            (http::MAX_MESSAGE_BYTES_HELD / shards::SHARDS as u64) >> 20,
            http::MAX_MESSAGE_BYTES_HELD >> 20
        ));
    }
    if http.headers_dropped > 0 {
        out.push(format!(
            "{} header fields past the first 128 of a head were dropped (the fields that frame a message or name its session are kept)",
            http.headers_dropped
        ));
    }
    if http.json_bodies_shrunk > 0 {
        out.push(format!(
            "{} JSON bodies over 16 MiB were kept with their strings cut to 64 KiB",
            http.json_bodies_shrunk
        ));
    }
    out
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
