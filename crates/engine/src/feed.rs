//! Feeding the opened inputs through the first stages: captures through capture and TCP
//! reassembly (merged by time) into HTTP, HAR files and access logs through ingest into the
//! same HTTP stage.

use mcpf_capture::tcp::{TcpEvent, TcpSink};
use mcpf_capture::{self as capture, CaptureStage};
use mcpf_http as http;
use mcpf_ingest::LogMap;
use mcpf_model::{Capabilities, InputId, InputReport, Note, NoteKind, OpenError, SourceFormat};

use crate::{Observer, Opened, ReadProgress};

/// What feeding the inputs produced besides the events.
pub(crate) struct Fed {
    pub(crate) reports: Vec<InputReport>,
    pub(crate) capabilities: Vec<(InputId, Capabilities)>,
    pub(crate) failed: bool,
}

/// A TCP sink that counts what TCP lost: what the capture stage feeds.
pub(crate) trait CaptureSink: TcpSink {
    fn tcp_loss(&self) -> &TcpLoss;
}

/// Runs every input through the capture stage (captures, merged by time) or the ingest (HAR
/// files and logs, each in time order) into `pipeline`.
pub(crate) fn feed<S: http::HttpSink>(
    mut inputs: Opened,
    stage: &mut CaptureStage,
    pipeline: &mut Pipeline<S>,
    observer: &mut dyn Observer,
) -> Fed {
    let captured = feed_captures(&mut inputs, stage, pipeline, observer);
    let http = &mut pipeline.http;
    feed_others(inputs, captured, &mut http.sink, &mut http.stats, observer)
}

/// Runs the captures through the capture stage, merged by time, into `front`; returns their
/// reports.
pub(crate) fn feed_captures(
    inputs: &mut Opened,
    stage: &mut CaptureStage,
    front: &mut impl CaptureSink,
    observer: &mut dyn Observer,
) -> Vec<(InputId, InputReport)> {
    if inputs.captures.is_empty() {
        return Vec::new();
    }
    let total = inputs.captures.iter().map(|i| i.size).sum::<Option<u64>>();
    let bytes = inputs
        .captures
        .iter()
        .map(|i| i.bytes_read.clone())
        .collect();
    observer.reading(ReadProgress {
        total,
        bytes,
        frames: stage.frames.clone(),
    });
    capture::run(&mut inputs.captures, stage, front);
    observer.read();
    let unseen_by_input = &front.tcp_loss().unseen_by_input;
    inputs
        .captures
        .iter()
        .map(|i| {
            let mut rep = stage.report(i);
            let unseen = unseen_by_input.get(&rep.index);
            rep.accounting
                .missing(mcpf_model::bucket::GAP, unseen.copied().unwrap_or(0));
            (i.reader.input_id(), rep)
        })
        .collect()
}

/// Runs the HAR files and logs through the ingest into `sink` (after the captures, whose
/// reports `captured` holds); puts every input's report together.
pub(crate) fn feed_others(
    inputs: Opened,
    mut reports: Vec<(InputId, InputReport)>,
    sink: &mut impl http::HttpSink,
    stats: &mut http::HttpStats,
    observer: &mut dyn Observer,
) -> Fed {
    let mut capabilities = Vec::new();
    let mut failed = inputs.failed;
    for (i, path, format) in &inputs.others {
        match ingest_one(path, *i, *format, inputs.log_map.as_ref(), sink, stats) {
            Ok((rep, caps)) => {
                reports.push((*i, rep));
                capabilities.push((*i, caps));
            }
            Err(e) => {
                observer.unreadable(&e);
                failed = true;
                reports.push((*i, InputReport::failed(*i, &e)));
            }
        }
    }
    reports.extend(inputs.unreadable.iter().map(|r| (r.index, r.clone())));
    reports.sort_by_key(|(i, _)| *i);
    Fed {
        reports: reports.into_iter().map(|(_, r)| r).collect(),
        capabilities,
        failed,
    }
}

/// Reads one HAR file or access log into the HTTP stage's sink, counting its connections.
fn ingest_one(
    path: &str,
    input: InputId,
    format: SourceFormat,
    log_map: Option<&LogMap>,
    http_sink: &mut impl http::HttpSink,
    stats: &mut http::HttpStats,
) -> Result<(InputReport, Capabilities), OpenError> {
    let mut connections = 0u64;
    let mut sink = |ev: http::HttpEvent| {
        if matches!(ev, http::HttpEvent::ConnectionEnd { .. }) {
            connections += 1;
        }
        http_sink.on_http(ev);
    };
    let (mut rep, caps) = mcpf_ingest::read(path, input, format, log_map, &mut sink)?;
    rep.index = input;
    stats.connections_http += connections;
    let lacks = caps.lacks.iter().cloned();
    rep.warnings
        .extend(lacks.map(|l| Note::new(NoteKind::Lacks(l), 1)));
    Ok((rep, caps))
}

/// The HTTP stage (and what it feeds) behind the capture stage, counting what TCP lost.
pub(crate) struct Pipeline<S: http::HttpSink> {
    pub(crate) http: http::Stage<S>,
    pub(crate) tcp: TcpLoss,
    /// TLS connections decrypted with a key log, between TCP and HTTP.
    pub(crate) tls: Tls,
    /// The sequence number of the next TCP event: where secrets a capture carries apply from.
    seq: u64,
}

/// Connections the capture stage closed, and the bytes missing from them.
#[derive(Clone, Debug, Default)]
pub struct TcpLoss {
    pub connections: u64,
    pub connections_with_gaps: u64,
    pub gap_bytes: u64,
    /// Of `gap_bytes`, those the snap length cut from captured frames.
    pub snaplen_bytes: u64,
    /// Bytes of sequence space no frame carried (gaps less snap-length cuts), by the input of
    /// the connection's last frame: the input's `missing_bytes.gap`.
    pub unseen_by_input: std::collections::BTreeMap<InputId, u64>,
    /// Where each connection's frames are, when kept (`--write-pcap`): about 80 bytes a
    /// connection, so only when asked.
    pub spans: Option<Vec<(mcpf_model::ConnId, mcpf_capture::carve::ConnSpan)>>,
}

impl TcpLoss {
    /// What a record file keeps of it.
    pub(crate) fn counts(&self) -> mcpf_records::TcpCounts {
        mcpf_records::TcpCounts {
            connections: self.connections,
            connections_with_gaps: self.connections_with_gaps,
            gap_bytes: self.gap_bytes,
            snaplen_bytes: self.snaplen_bytes,
        }
    }

    /// The loss a record file's counts say (no input's share, no spans: the records have none).
    pub(crate) fn from_counts(c: &mcpf_records::TcpCounts) -> TcpLoss {
        TcpLoss {
            connections: c.connections,
            connections_with_gaps: c.connections_with_gaps,
            gap_bytes: c.gap_bytes,
            snaplen_bytes: c.snaplen_bytes,
            ..TcpLoss::default()
        }
    }

    /// Counts a connection that closed, with what its directions missed.
    pub(crate) fn count(&mut self, event: &TcpEvent<'_>) {
        let TcpEvent::Closed { summary } = event else {
            return;
        };
        self.connections += 1;
        if let Some(spans) = &mut self.spans {
            spans.push((summary.conn, mcpf_capture::carve::ConnSpan::of(summary)));
        }
        let gap = summary.c2s.gap_bytes + summary.s2c.gap_bytes;
        if gap > 0 {
            self.connections_with_gaps += 1;
            self.gap_bytes += gap;
            let snaplen = summary.c2s.snaplen_bytes + summary.s2c.snaplen_bytes;
            self.snaplen_bytes += snaplen;
            *self
                .unseen_by_input
                .entry(summary.end.frame.input)
                .or_default() += gap.saturating_sub(snaplen);
        }
    }
}

impl<S: http::HttpSink> Pipeline<S> {
    pub(crate) fn new(sink: S) -> Self {
        Pipeline {
            http: http::Stage::new(sink),
            tcp: TcpLoss::default(),
            tls: Tls::new(mcpf_tls::Secrets::default()),
            seq: 0,
        }
    }

    /// Decrypts the TLS connections `keys` has secrets for.
    pub(crate) fn with_tls(mut self, keys: Option<std::sync::Arc<mcpf_tls::KeyLog>>) -> Self {
        self.tls = Tls::new(mcpf_tls::Secrets::new(keys));
        self
    }
}

impl<S: http::HttpSink> CaptureSink for Pipeline<S> {
    fn tcp_loss(&self) -> &TcpLoss {
        &self.tcp
    }
}

impl<S: http::HttpSink> TcpSink for Pipeline<S> {
    fn on_tcp(&mut self, event: TcpEvent<'_>) {
        self.tcp.count(&event);
        self.tls.through(self.seq, &mut self.http, event);
        self.seq += 1;
    }

    fn on_tls_secrets(&mut self, key_log: &[u8]) {
        self.tls.secrets.carry(key_log, self.seq);
    }
}

/// The TLS layer of a pipeline or of a shard, over the run's one set of secrets (shared, never
/// copied); made when the first secret is usable.
pub(crate) struct Tls {
    pub(crate) secrets: mcpf_tls::Secrets,
    pub(crate) layer: Option<mcpf_tls::TlsLayer>,
}

impl Tls {
    pub(crate) fn new(secrets: mcpf_tls::Secrets) -> Self {
        Tls {
            secrets,
            layer: None,
        }
    }

    /// The TCP event numbered `seq` into the HTTP stage, through the TLS layer when there is
    /// one (made now if a secret became usable).
    pub(crate) fn through<S: http::HttpSink>(
        &mut self,
        seq: u64,
        http: &mut http::Stage<S>,
        event: TcpEvent<'_>,
    ) {
        if self.layer.is_none() && self.secrets.any_at(seq) {
            self.layer = Some(mcpf_tls::TlsLayer::new(self.secrets.clone()));
        }
        match &mut self.layer {
            Some(tls) => {
                tls.at(seq);
                tls.on_tcp(event, http)
            }
            None => http.on_tcp(event),
        }
    }

    pub(crate) fn stats(&self) -> Option<&mcpf_tls::TlsStats> {
        self.layer.as_ref().map(|t| &t.stats)
    }
}
