//! The `analyze` job: every input through every stage, the report in the chosen format, and
//! the exit code the findings call for.

use std::io::Write;
use std::sync::{Arc, Mutex};

use mcpf_capture::CaptureStage;
use mcpf_http as http;
use mcpf_mcp::model::Session;
use mcpf_report::analyze::{self as report, RecordFormat, SessionWriter};
use mcpf_report::redact::Redactor;

use crate::app::{Exit, stdout};
use crate::cli::ReportFormat;
use crate::config;
use crate::finalize::Finalizer;
use crate::pipeline::{self, Fed, Opened, TcpLoss};
use crate::shards;

pub fn run(job: config::Analyze) -> anyhow::Result<Exit> {
    // Before the analysis: a path that cannot be written should not cost a long run.
    let output =
        match &job.output {
            Some(path) => Some(std::fs::File::create(path).map_err(|e| {
                anyhow::anyhow!("--output {}: cannot write it: {e}", path.display())
            })?),
            None => None,
        };
    let inputs = pipeline::open_inputs(&job.inputs);
    if inputs.is_empty() {
        return Ok(Exit::Error);
    }
    let redactor = Redactor::new(job.redact);
    // NDJSON goes out as each session ends: the output is needed from the start.
    let (writer, output) = match job.format {
        ReportFormat::Ndjson => (live_writer(&job, &inputs, redactor, output), None),
        _ => (session_writer(&job, &inputs, redactor), output),
    };
    let finalizer = Arc::new(Mutex::new(
        Finalizer::new(job.selection.clone(), writer)
            .with_inputs(inputs.paths.clone())
            .with_max_held_events(job.max_held_events),
    ));
    let (builder, finishing) = session_stage(&inputs, finalizer.clone(), job.threads > 1);
    let builder = builder.with_max_session_events(job.max_session_events);
    let mut stage = CaptureStage::new(job.capture.clone(), inputs.paths.len());
    let tls = job.tls_keys.clone();
    let run = if job.threads > 1 {
        let workers = job.workers.unwrap_or(config::workers(job.threads));
        run_threaded(inputs, &mut stage, builder, job.progress, tls, workers)?
    } else {
        run_inline(inputs, &mut stage, builder, job.progress, tls)
    };
    let mut rep = assemble(run, (&finalizer, finishing), &job, &redactor)?;
    if let Some(live) = rep.report.sessions.take_live() {
        if let Some(e) = &live.error {
            anyhow::bail!("{e}");
        }
        let mut out = live.into_inner();
        report::write_ndjson_tail(&mut out, &rep.report, &job.selection)?;
        out.flush()?;
        return Ok(exit(rep, &job));
    }
    match output {
        Some(file) => {
            let sink = std::io::BufWriter::with_capacity(1 << 16, file);
            let out = mcpf_report::redact::Redacting::new(sink, redactor);
            write(&mut rep, &job, &redactor, out)?;
        }
        None => write(&mut rep, &job, &redactor, stdout(redactor))?,
    }
    Ok(exit(rep, &job))
}

/// Writes NDJSON to the output (standard output, or the `--output` file) as each session ends.
fn live_writer(
    job: &config::Analyze,
    inputs: &Opened,
    redactor: Redactor,
    output: Option<std::fs::File>,
) -> SessionWriter {
    let sink: Box<dyn std::io::Write + Send> = match output {
        Some(file) => Box::new(std::io::BufWriter::with_capacity(1 << 16, file)),
        None => Box::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout(),
        )),
    };
    let out = Box::new(mcpf_report::redact::Redacting::new(sink, redactor));
    let captures = inputs
        .sources()
        .iter()
        .map(|f| *f == mcpf_model::SourceFormat::Capture)
        .collect();
    let live = report::LiveLines::new(
        out,
        job.selection.clone(),
        redactor,
        inputs.paths.clone(),
        captures,
    );
    SessionWriter::live(live, redactor)
}

/// Renders each session's record as it is finalized (on a thread of its own when there are
/// threads to spare).
fn session_writer(job: &config::Analyze, inputs: &Opened, redactor: Redactor) -> SessionWriter {
    let format = match job.format {
        ReportFormat::Json | ReportFormat::Markdown | ReportFormat::Html => RecordFormat::Pretty,
        ReportFormat::Ndjson => RecordFormat::Lines,
        ReportFormat::Table => RecordFormat::None,
    };
    let writer = SessionWriter::new(format, job.selection.events, redactor, inputs.paths.clone());
    if job.threads > 1 {
        writer.in_background()
    } else {
        writer
    }
}

/// The MCP stage, handing each finalized session to the finalizer: on a thread of its own when
/// there are threads (returned, to be joined once the builder is done), so the detectors of a
/// session that ended run while the builder files the events of the others.
fn session_stage(
    inputs: &Opened,
    finalizer: Arc<Mutex<Finalizer>>,
    threaded: bool,
) -> (mcpf_mcp::Builder, Option<std::thread::JoinHandle<()>>) {
    // Sessions are finalized as they end (detectors run, events dropped) so memory follows the
    // sessions in progress; a HAR or log must first be matched with the capture of the same
    // traffic, so those runs finalize at the end. Either way a session ends at the same point
    // (the builder closes it on evidence), so its findings do not depend on the choice.
    let early = inputs.others.is_empty();
    let finalize = move |s: Box<Session>| {
        if let Ok(mut f) = finalizer.lock() {
            f.run(s);
        }
    };
    let (callback, finishing): (mcpf_mcp::SessionCallback, _) = if threaded {
        // A few sessions at most wait: each holds its events until its detectors have run.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Box<Session>>(4);
        let handle = std::thread::spawn(move || rx.into_iter().for_each(finalize));
        let send = move |s: Box<Session>| {
            // The finalizer thread only stops by panicking, which joining it reports.
            let _ = tx.send(s);
        };
        (Box::new(send), Some(handle))
    } else {
        (Box::new(finalize), None)
    };
    let builder = mcpf_mcp::Builder::new()
        .with_early_finalize(early)
        .with_sources(inputs.sources())
        .with_session_callback(callback);
    (builder, finishing)
}

/// What the first stages produced.
struct Run {
    fed: Fed,
    builder: mcpf_mcp::Builder,
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
    mut builder: mcpf_mcp::Builder,
    progress: bool,
    tls: Option<Arc<mcpf_tls::KeyLog>>,
) -> Run {
    let mut front = shards::Inline::new(tls.as_deref(), mcpf_mcp::prepare, |ev| {
        builder.on_prepared(ev)
    });
    let captured = pipeline::feed_captures(&mut inputs, stage, &mut front, progress);
    let tcp = std::mem::take(&mut front.tcp);
    let shards = front.into_shards();
    finish_run(inputs, captured, builder, &shards, tcp, 1)
}

/// Several threads: packets and TCP on this one, the per-connection stages on `workers` more,
/// sessions and detectors on another (and JSON records rendered on one more).
fn run_threaded(
    mut inputs: Opened,
    stage: &mut CaptureStage,
    builder: mcpf_mcp::Builder,
    progress: bool,
    tls: Option<Arc<mcpf_tls::KeyLog>>,
    workers: usize,
) -> anyhow::Result<Run> {
    std::thread::scope(|scope| {
        let (mut dispatch, results, handles) =
            shards::start(scope, workers, tls.as_deref(), mcpf_mcp::prepare, weigh);
        let consumer = scope.spawn(move || {
            let mut builder = builder;
            shards::merge(results, |ev| builder.on_prepared(ev));
            builder
        });
        let captured = pipeline::feed_captures(&mut inputs, stage, &mut dispatch, progress);
        dispatch.flush();
        let tcp = std::mem::take(&mut dispatch.tcp);
        // Dropping the dispatch ends the workers' input: they finish, and the session thread
        // after them.
        drop(dispatch);
        let workers = handles.len();
        let shards = shards::join(handles)?;
        let builder = consumer
            .join()
            .map_err(|_| anyhow::anyhow!("internal error: the session stage failed"))?;
        Ok(finish_run(inputs, captured, builder, &shards, tcp, workers))
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
    mut builder: mcpf_mcp::Builder,
    shards: &shards::Shards<mcpf_mcp::Prepared>,
    tcp: TcpLoss,
    workers: usize,
) -> Run {
    let mut http = shards.http_stats();
    let fed = pipeline::feed_others(inputs, captured, &mut builder, &mut http);
    Run {
        fed,
        builder,
        http,
        tcp,
        tls: shards.tls_stats(),
        shard_work: shards.work_line(workers),
    }
}

/// `TLS: 6 of 7 connections decrypted with the key log; not decrypted: 1 (cipher suite 0xC009 …)`.
pub fn tls_line(t: &mcpf_tls::TlsStats) -> String {
    let mut line = format!(
        "TLS: {} of {} connections decrypted with the key log",
        t.decrypted, t.connections
    );
    if !t.undecryptable.is_empty() {
        let why: Vec<String> = t
            .undecryptable
            .iter()
            .map(|(reason, n)| format!("{n} ({reason})"))
            .collect();
        line.push_str(&format!("; not decrypted: {}", why.join(", ")));
    }
    line
}

/// Each connection the key log could not (wholly) decrypt, as an anomaly of that connection at
/// the frame where reading stopped.
fn tls_failures(
    tls: Option<&mcpf_tls::TlsStats>,
) -> impl Iterator<Item = mcpf_mcp::HttpAnomaly> + '_ {
    tls.into_iter().flat_map(|t| {
        t.failures.iter().map(|f| mcpf_mcp::HttpAnomaly {
            conn: f.conn,
            mark: f.mark,
            what: f.reason.clone(),
        })
    })
}

/// Finishes the MCP stage and the detectors, and puts the report together.
fn assemble(
    run: Run,
    (finalizer, finishing): (&Mutex<Finalizer>, Option<std::thread::JoinHandle<()>>),
    job: &config::Analyze,
    redactor: &Redactor,
) -> anyhow::Result<Assembled> {
    let Run {
        fed,
        mut builder,
        http,
        tcp,
        tls,
        shard_work,
    } = run;
    if job.shard_stats {
        eprintln!("{shard_work}");
    }
    for (input, caps) in fed.capabilities {
        builder.set_capabilities(input, caps);
    }
    let (sessions, anomalies, mcp_stats) = builder.finish();
    // The builder is gone, and with it the finalizer thread's input: it ends once it has run
    // the detectors of every session.
    if let Some(handle) = finishing {
        handle
            .join()
            .map_err(|_| anyhow::anyhow!("internal error: the detector stage failed"))?;
    }
    drop(sessions);
    let idle = Finalizer::new(
        job.selection.clone(),
        SessionWriter::new(RecordFormat::None, false, *redactor, Vec::new()),
    );
    let fin = std::mem::replace(
        &mut *finalizer
            .lock()
            .map_err(|_| anyhow::anyhow!("internal error: the detector stage failed"))?,
        idle,
    );
    let crate::finalize::Finished {
        findings,
        sessions,
        timelines,
        limits: detector_limits,
        clock_offsets,
    } = fin.finish();
    if let Some(e) = &sessions.error {
        anyhow::bail!("{e}");
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
        limits.push(tls_line(t));
    }
    let tls_not_decrypted = tls_failures(tls.as_ref()).collect();
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
        tool: report::Tool {
            name: env!("CARGO_PKG_NAME"),
            version: env!("CARGO_PKG_VERSION"),
        },
    };
    Ok(Assembled {
        report,
        failed: fed.failed,
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

/// The report, and whether an input could not be read.
struct Assembled {
    report: report::Report,
    failed: bool,
}

/// Writes the report through `out` (standard output, or the --output file), redacted.
fn write<W: std::io::Write>(
    rep: &mut Assembled,
    job: &config::Analyze,
    redactor: &Redactor,
    mut out: mcpf_report::redact::Redacting<W>,
) -> anyhow::Result<()> {
    let sel = &job.selection;
    let rep = &mut rep.report;
    match job.format {
        ReportFormat::Json => report::write_json(&mut out, rep, sel, redactor)?,
        ReportFormat::Ndjson => report::write_ndjson(&mut out, rep, sel, redactor)?,
        ReportFormat::Markdown => {
            mcpf_report::markdown::write_markdown_report(&mut out, rep, sel, redactor)?
        }
        ReportFormat::Html => {
            let doc = mcpf_report::markdown::document(rep, sel, redactor)?;
            mcpf_report::html::write_html(&mut out, &doc)?
        }
        ReportFormat::Table => {
            let style = report::Style {
                color: job.color,
                width: job.width,
            };
            report::write_human(&mut out, rep, sel, redactor, style, job.fail_on)?
        }
    }
    out.flush()?;
    Ok(())
}

fn exit(rep: Assembled, job: &config::Analyze) -> Exit {
    let Assembled { report, failed } = rep;
    pipeline::print_warnings(&report.inputs);
    if report.session_count() == 0 {
        // Nothing to analyse: say why, in words a newcomer can act on.
        for h in mcpf_report::hints::no_session(
            &report.inputs,
            report.connections,
            &report.http,
            &report.mcp,
        ) {
            eprintln!("mcp-forensics: no MCP session found: {}", h.problem);
            eprintln!("  hint: {}", h.hint);
        }
        // Connections the key log did not open are not passed on as bytes: say so here.
        for l in report.limits.iter().filter(|l| l.starts_with("TLS: ")) {
            if l.contains("no secret in the key log") {
                eprintln!("mcp-forensics: no MCP session found: {l}");
                eprintln!(
                    "  hint: the key log must be the one the client wrote during this capture (each connection's secrets are keyed by its ClientHello random)"
                );
            }
        }
        return Exit::Error;
    }
    let unmatched = report.unmatched_session_keys(&job.selection);
    if !unmatched.is_empty() {
        let labels = report.session_labels();
        eprintln!(
            "mcp-forensics: --session {} names no session of these inputs; they have {} (a session ID may be given whole, or as the table shortens it)",
            unmatched.join(", "),
            match labels.as_slice() {
                [one] => one.clone(),
                [first, .., last] => format!("{first} to {last}"),
                [] => "none".into(),
            }
        );
        return Exit::Error;
    }
    if failed {
        return Exit::Error;
    }
    let failing = report
        .counted_findings(&job.selection)
        .any(|f| f.severity.at_least(job.fail_on));
    // The process ends here: freeing every record of a large analysis one by one would only
    // cost time.
    let exit = if failing { Exit::Findings } else { Exit::Clean }.or_data_lost(&report.inputs);
    std::mem::forget(report);
    exit
}
