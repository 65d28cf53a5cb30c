//! `sse_fallback`: the session moved from streamable POST responses to an SSE GET channel — at
//! connect (initialize refused, legacy transport) or mid-session (a POST abandoned, then a GET
//! without `Last-Event-ID`). Not a fault in itself: it is the moment from which the incident
//! note's decision boundary treats resumption as unsafe unless IDs are namespaced.

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::jsonrpc::RequestId;
use mcpf_mcp::model::{Session, Need};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SseFallback,
    severity: Severity::Info,
    when: "the session fell back from streamable POST responses to an SSE GET stream (at connect after a 4xx to initialize, or mid-session after an abandoned POST)",
    meaning: "The client stopped waiting for responses on POST streams and moved to a GET event stream: at connect because the server refused Streamable HTTP (the 2025-03-26 backwards-compatibility rule), or mid-session because a POST response never arrived (a buffering proxy typically held it back).",
    why: "Fallback changes the event-ID namespace the client is reading from without anything in the session state saying so. From this point, a Last-Event-ID is only meaningful if the server namespaces its IDs by stream or transport mode; otherwise resumption must be treated as unsafe.",
    fix: "Find why the POST response stalled (proxy buffering: set X-Accel-Buffering: no or proxy_buffering off on the MCP location; idle timeouts). Make the server namespace event IDs per stream (e.g. get:41, post:41) so resumption stays safe after a fallback.",
    requires: &[Need::ResponseEnds],
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
                evidence: crate::Evidence::SseFallback(Evidence {
                    from,
                    to,
                    from_transport: fb.from.clone(),
                    to_transport: fb.to.clone(),
                    trigger: fb.trigger.clone(),
                    request_id: fb.request_id.clone(),
                    confirmed_by_messages_on_new_stream: fb.confirmed,
                    inferred_from_times: fb.inferred,
                }),
                caused_by: vec![],
                subject: Subject::FallbackTo(fb.to_stream),
            },
        );
    }
}

/// The evidence of an `sse_fallback`: the stream the client left and the one it moved to, the
/// transports on each side, and what made it move.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The abandoned or refused stream; the transport's name when there is none.
    pub from: String,
    /// The stream fallen back to.
    pub to: String,
    /// `post` to `get` mid-session, `streamable-http` to `legacy-sse` at connect (after a 4xx
    /// to `initialize`).
    pub from_transport: String,
    pub to_transport: String,
    /// Why, in words: `POST tools/call #7 abandoned by the client after 1.5 s with no response
    /// bytes`.
    pub trigger: String,
    /// The stalled (or refused) request.
    pub request_id: Option<RequestId>,
    /// Messages of that request later arrived on the new stream.
    pub confirmed_by_messages_on_new_stream: bool,
    /// The input does not record how responses ended: the POST was taken as abandoned because
    /// its logged end and the GET's start coincide within the input's time resolution.
    pub inferred_from_times: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_fallback_is_read_back_from_the_report() {
        for text in [
            r#"{"from":"post:s3","to":"get:s4","from_transport":"post","to_transport":"get","trigger":"POST tools/call #7 abandoned by the client after 1.5 s with no response bytes","request_id":7,"confirmed_by_messages_on_new_stream":true,"inferred_from_times":false}"#,
            r#"{"from":"streamable-http","to":"get:s2","from_transport":"streamable-http","to_transport":"legacy-sse","trigger":"POST initialize answered 405","request_id":null,"confirmed_by_messages_on_new_stream":false,"inferred_from_times":false}"#,
        ] {
            let e: Evidence = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
    }
}
