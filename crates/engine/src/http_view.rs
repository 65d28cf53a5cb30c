//! The views below the sessions: the `http` view (every HTTP exchange, MCP or not, into a sink
//! of the caller's) and the `flows` view (every TCP connection's summary).

use mcpf_capture::CaptureStage;
use mcpf_capture::tcp::{ConnSummary, ReassemblyStats, TcpEvent};
use mcpf_http as http;
use mcpf_model::InputReport;

use crate::feed::{self, Pipeline};
use crate::{Engine, Observer, Opened};

/// What the `http` view's run produced: its sink, back, with what the stages counted.
pub struct HttpRun<S> {
    pub sink: S,
    pub stats: http::HttpStats,
    /// Every input's report, in input order.
    pub reports: Vec<InputReport>,
    /// What the TLS layer decrypted, when it saw a TLS connection.
    pub tls: Option<mcpf_tls::TlsStats>,
    pub failed: bool,
}

impl Engine {
    /// Every input through TCP, TLS and HTTP (captures) or ingest (HAR files, logs) into `sink`,
    /// on the calling thread.
    pub fn http<S: http::HttpSink>(
        &self,
        inputs: Opened,
        sink: S,
        observer: &mut dyn Observer,
    ) -> HttpRun<S> {
        let mut stage = CaptureStage::new(self.settings.capture.clone(), inputs.paths.len());
        let mut pipeline = Pipeline::new(sink).with_tls(self.settings.tls_keys.clone());
        let fed = feed::feed(inputs, &mut stage, &mut pipeline, observer);
        let tls = pipeline
            .tls
            .layer
            .map(|t| t.stats)
            .filter(|t| t.connections > 0);
        HttpRun {
            sink: pipeline.http.sink,
            stats: pipeline.http.stats,
            reports: fed.reports,
            tls,
            failed: fed.failed,
        }
    }
}

/// What the `flows` view's run produced.
pub struct FlowsRun {
    /// Every connection's summary, by connection number.
    pub connections: Vec<ConnSummary>,
    pub reports: Vec<InputReport>,
    pub stats: ReassemblyStats,
    pub failed: bool,
}

/// Every capture through TCP reassembly, each connection's summary kept.
pub fn flows(mut inputs: Opened, settings: mcpf_capture::Settings) -> FlowsRun {
    let mut stage = CaptureStage::new(settings, inputs.paths.len());
    let mut connections: Vec<ConnSummary> = Vec::new();
    let mut sink = |ev: TcpEvent<'_>| {
        if let TcpEvent::Closed { summary } = ev {
            connections.push(summary.clone());
        }
    };
    let stats = mcpf_capture::run(&mut inputs.captures, &mut stage, &mut sink);
    connections.sort_by_key(|s| s.conn);
    let mut reports: Vec<_> = inputs.captures.iter().map(|i| stage.report(i)).collect();
    reports.extend(inputs.unreadable);
    reports.sort_by_key(|r| r.index);
    FlowsRun {
        connections,
        reports,
        stats,
        failed: inputs.failed,
    }
}
