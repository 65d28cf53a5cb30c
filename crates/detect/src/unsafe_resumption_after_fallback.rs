//! `unsafe_resumption_after_fallback`: the incident note's decision boundary. After a fallback
//! since the last `initialize`, a `Last-Event-ID` resume is unsafe unless the server namespaces
//! its event IDs or the client echoes a transport-mode token — whether or not anything visibly
//! broke this time.

use serde_json::json;

use super::index::Index;
use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{EventIdScheme, Session};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::UnsafeResumptionAfterFallback,
    severity: Severity::High,
    when: "a Last-Event-ID resume after a fallback since the last initialize, while event IDs are not namespaced and no transport-mode token is echoed",
    meaning: "The client resumed with Last-Event-ID after the session had fallen back from POST streams to a GET stream. With plain per-transport counters, the ID it sends may exist in both namespaces; the server cannot tell which one the client means.",
    why: "Mcp-Session-Id identity is necessary but not sufficient for resumption: the pair (session, event-ID namespace) must match, and fallback silently changes the namespace. A server that looks the ID up in the wrong counter replays the wrong events with no error at all.",
    fix: "Client: after any fallback, do not replay with Last-Event-ID; re-initialize (or re-attach) and re-send in-flight requests with an idempotency key. Server: namespace event IDs by stream (get:41, post:41) or advertise a transport-mode token the client echoes.",
};

pub(crate) fn detect(s: &Session, ix: &Index, f: &mut Findings) {
    if s.event_id_scheme == EventIdScheme::Namespaced {
        return;
    }
    for r in s.streams.iter().filter(|st| st.resume.is_some()) {
        let Some(fb) = ix.fallback_before(s, r.opened) else {
            continue;
        };
        let observed_mode = r
            .resume
            .as_ref()
            .and_then(|x| x.continues)
            .and_then(|c| s.streams[c].transport_mode.as_deref())
            .or(s.transport_mode_header.as_deref());
        let echoed =
            r.transport_mode_sent.is_some() && r.transport_mode_sent.as_deref() == observed_mode;
        if echoed {
            continue;
        }
        let lei = r
            .resume
            .as_ref()
            .map(|x| x.last_event_id.clone())
            .unwrap_or_default();
        let cause = f.find(
            s.idx,
            FindingKind::SseFallback,
            &Subject::FallbackTo(fb.to_stream),
        );
        let mut streams = vec![r.idx, fb.to_stream];
        streams.extend(r.resume.as_ref().and_then(|x| x.continues));
        f.add(
            s,
            New {
                kind: FindingKind::UnsafeResumptionAfterFallback,
                severity: INFO.severity,
                time: r.opened,
                frames: vec![fb.mark, r.opened],
                streams,
                summary: format!(
                    "resumed with Last-Event-ID {lei} after the fallback at {} while event IDs are {} (not namespaced)",
                    fb.mark.time.clock_millis(),
                    s.event_id_scheme.name()
                ),
                evidence: crate::Evidence::UnsafeResumptionAfterFallback(Evidence(json!({
                    "last_event_id": lei,
                    "event_id_scheme": s.event_id_scheme.name(),
                    "resume_stream": r.label(),
                    "fallback": {
                        "time": fb.mark.time.rfc3339(),
                        "to": s.streams[fb.to_stream].label(),
                        "trigger": fb.trigger,
                    },
                    "transport_mode_header": s.transport_mode_header,
                }))),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The evidence of a `unsafe_resumption_after_fallback` finding (as JSON until it is typed).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Evidence(pub serde_json::Value);
