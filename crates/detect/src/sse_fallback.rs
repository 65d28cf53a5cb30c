//! `sse_fallback`: the session moved from streamable POST responses to an SSE GET channel — at
//! connect (initialize refused, legacy transport) or mid-session (a POST abandoned, then a GET
//! without `Last-Event-ID`). Not a fault in itself: it is the moment from which the incident
//! note's decision boundary treats resumption as unsafe unless IDs are namespaced.

use serde_json::json;

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::Session;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SseFallback,
    severity: Severity::Info,
    when: "the session fell back from streamable POST responses to an SSE GET stream (at connect after a 4xx to initialize, or mid-session after an abandoned POST)",
    meaning: "The client stopped waiting for responses on POST streams and moved to a GET event stream: at connect because the server refused Streamable HTTP (the 2025-03-26 backwards-compatibility rule), or mid-session because a POST response never arrived (a buffering proxy typically held it back).",
    why: "Fallback changes the event-ID namespace the client is reading from without anything in the session state saying so. From this point, a Last-Event-ID is only meaningful if the server namespaces its IDs by stream or transport mode; otherwise resumption must be treated as unsafe.",
    fix: "Find why the POST response stalled (proxy buffering: set X-Accel-Buffering: no or proxy_buffering off on the MCP location; idle timeouts). Make the server namespace event IDs per stream (e.g. get:41, post:41) so resumption stays safe after a fallback.",
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    for fb in &s.fallbacks {
        let to = s.streams[fb.to_stream].label();
        let from = fb
            .abandoned_stream
            .map(|i| s.streams[i].label())
            .unwrap_or_else(|| fb.from.clone());
        let mut streams = vec![fb.to_stream];
        streams.extend(fb.abandoned_stream);
        f.add(
            s,
            New {
                kind: FindingKind::SseFallback,
                severity: INFO.severity,
                time: fb.mark,
                frames: fb.frames.clone(),
                streams,
                summary: format!("fell back from {from} to {to}: {}", fb.trigger),
                evidence: crate::Evidence::SseFallback(Evidence(json!({
                    "from": from,
                    "to": to,
                    "from_transport": fb.from,
                    "to_transport": fb.to,
                    "trigger": fb.trigger,
                    "request_id": fb.request_id.as_ref().map(|i| i.to_value()),
                    "confirmed_by_messages_on_new_stream": fb.confirmed,
                    "inferred_from_times": fb.inferred,
                }))),
                caused_by: vec![],
                subject: Subject::FallbackTo(fb.to_stream),
            },
        );
    }
}

/// The evidence of a `sse_fallback` finding (as JSON until it is typed).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Evidence(pub serde_json::Value);
