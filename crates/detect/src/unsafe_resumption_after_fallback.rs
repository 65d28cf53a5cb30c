//! `unsafe_resumption_after_fallback`: the incident note's decision boundary. After a fallback
//! since the last `initialize`, a `Last-Event-ID` resume is unsafe unless the server namespaces
//! its event IDs or the client echoes a transport-mode token — whether or not anything visibly
//! broke this time.

use serde::{Deserialize, Serialize};

use super::index::Index;
use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{EventIdScheme, Session};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::UnsafeResumptionAfterFallback,
    severity: Severity::High,
    when: "a Last-Event-ID resume after a fallback since the last initialize, while event IDs are not namespaced and no transport-mode token is echoed (info when the IDs are opaque: whether the server ties each to its stream is not determinable from the wire)",
    meaning: "The client resumed with Last-Event-ID after the session had fallen back from POST streams to a GET stream. With plain per-transport counters, the ID it sends may exist in both namespaces; the server cannot tell which one the client means.",
    why: "Mcp-Session-Id identity is necessary but not sufficient for resumption: the pair (session, event-ID namespace) must match, and fallback silently changes the namespace. A server that looks the ID up in the wrong counter replays the wrong events with no error at all.",
    fix: "Client: after any fallback, do not replay with Last-Event-ID; re-initialize (or re-attach) and re-send in-flight requests with an idempotency key. Server: namespace event IDs by stream (get:41, post:41) or advertise a transport-mode token the client echoes.",
    requires: &[],
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
        // Counters collide across namespaces; an opaque ID (a uuid store's) may be one the
        // server finds its stream by: the wire does not say which, so nothing is claimed.
        let (severity, why) = match s.event_id_scheme {
            EventIdScheme::Opaque => (
                Severity::Info,
                "opaque (whether the server ties each to its stream is not determinable)".into(),
            ),
            other => (INFO.severity, format!("{} (not namespaced)", other.name())),
        };
        let mut streams = vec![r.idx, fb.to_stream];
        streams.extend(r.resume.as_ref().and_then(|x| x.continues));
        f.add(
            s,
            New {
                kind: FindingKind::UnsafeResumptionAfterFallback,
                severity,
                time: r.opened,
                frames: vec![fb.mark, r.opened],
                streams,
                summary: format!(
                    "resumed with Last-Event-ID {lei} after the fallback at {} while event IDs are {why}",
                    fb.mark.time.clock_millis(),
                ),
                evidence: crate::Evidence::UnsafeResumptionAfterFallback(Evidence {
                    last_event_id: lei,
                    event_id_scheme: s.event_id_scheme.into(),
                    resume_stream: r.label(),
                    fallback: Fallback {
                        time: fb.mark.time.rfc3339(),
                        to: s.streams[fb.to_stream].label(),
                        trigger: fb.trigger.clone(),
                    },
                    transport_mode_header: s.transport_mode_header.clone(),
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The evidence of an `unsafe_resumption_after_fallback`: the resume, the `Last-Event-ID` it
/// sent, and the fallback before it that makes the ID ambiguous.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The `Last-Event-ID` the resume sent.
    pub last_event_id: String,
    /// The session's scheme (never `namespaced` here).
    pub event_id_scheme: Scheme,
    pub resume_stream: String,
    /// The fallback that makes the resume unsafe.
    pub fallback: Fallback,
    /// The server's transport-mode header, which the client did not echo.
    pub transport_mode_header: Option<String>,
}

/// A fallback: when, the stream fallen back to, and why in words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fallback {
    pub time: String,
    pub to: String,
    pub trigger: String,
}

/// How the session's event IDs are formed, as the report writes it (the session's
/// `event_id_scheme`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    Integer,
    Namespaced,
    Opaque,
    None,
}

impl From<EventIdScheme> for Scheme {
    fn from(s: EventIdScheme) -> Scheme {
        match s {
            EventIdScheme::Integer => Scheme::Integer,
            EventIdScheme::Namespaced => Scheme::Namespaced,
            EventIdScheme::Opaque => Scheme::Opaque,
            EventIdScheme::None => Scheme::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn an_unsafe_resume_is_read_back_from_the_report() {
        for text in [
            r#"{"last_event_id":"41","event_id_scheme":"integer","resume_stream":"get:s17","fallback":{"time":"2026-11-30T04:36:07.294714Z","to":"get:s4","trigger":"POST tools/call #7 abandoned by the client after 1.5 s with no response bytes"},"transport_mode_header":null}"#,
            r#"{"last_event_id":"a1","event_id_scheme":"opaque","resume_stream":"get:s9","fallback":{"time":"2026-11-30T04:36:07.294714Z","to":"get:s4","trigger":"POST initialize answered 405"},"transport_mode_header":"sse"}"#,
        ] {
            let e: Evidence = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
    }
}
