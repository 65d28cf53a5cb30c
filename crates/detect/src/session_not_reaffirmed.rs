//! `session_not_reaffirmed`: a resume was answered `200 text/event-stream` without
//! `Mcp-Session-Id` although the client sent one: the incident note's last boundary (treat as a
//! new session, discard the pending request map).

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{Session, Need};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SessionNotReaffirmed,
    severity: Severity::Medium,
    when: "a resume answered 200 text/event-stream without Mcp-Session-Id while the client sent one",
    meaning: "The server accepted the resume but did not say which session it resumed.",
    why: "The client cannot tell whether the stream belongs to the session it holds (a load balancer may have routed it to an instance that lost or never had the session). Resuming on it risks mixing sessions.",
    fix: "Server: send Mcp-Session-Id on every response, including resumed streams. Client: treat a resume without reaffirmation as a new session and re-issue pending requests.",
    requires: &[Need::ResponseSessionId],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    for r in s.streams.iter().filter(|st| st.resume.is_some()) {
        let ok = r.status == Some(200) && r.event_stream;
        let (Some(sent), None) = (&r.session_id_sent, &r.session_id_received) else {
            continue;
        };
        if !ok || !r.session_header_known {
            continue;
        }
        let mark = r.response_mark.unwrap_or(r.opened);
        f.add(
            s,
            New {
                kind: FindingKind::SessionNotReaffirmed,
                severity: INFO.severity,
                time: mark,
                frames: vec![r.opened, mark],
                streams: vec![r.idx],
                summary: format!(
                    "resume {} answered 200 without Mcp-Session-Id (the client sent {sent})",
                    r.label()
                ),
                evidence: crate::Evidence::SessionNotReaffirmed(Evidence {
                    session_id: sent.clone(),
                    stream: r.label(),
                    exchange: r.exchange.to_string(),
                }),
                caused_by: vec![],
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The evidence of a `session_not_reaffirmed`: the session ID the client sent on a resume that
/// was answered without one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The `Mcp-Session-Id` the client sent.
    pub session_id: String,
    /// The resume stream answered without it, and its exchange.
    pub stream: String,
    pub exchange: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_resume_without_the_session_is_read_back_from_the_report() {
        let text = r#"{"session_id":"3f1c","stream":"get:s9","exchange":"tcp3#1"}"#;
        let e: Evidence = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }
}
