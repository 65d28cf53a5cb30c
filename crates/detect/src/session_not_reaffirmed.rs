//! `session_not_reaffirmed`: a resume was answered `200 text/event-stream` without
//! `Mcp-Session-Id` although the client sent one: the incident note's last boundary (treat as a
//! new session, discard the pending request map).

use serde_json::json;

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::Session;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SessionNotReaffirmed,
    severity: Severity::Medium,
    when: "a resume answered 200 text/event-stream without Mcp-Session-Id while the client sent one",
    meaning: "The server accepted the resume but did not say which session it resumed.",
    why: "The client cannot tell whether the stream belongs to the session it holds (a load balancer may have routed it to an instance that lost or never had the session). Resuming on it risks mixing sessions.",
    fix: "Server: send Mcp-Session-Id on every response, including resumed streams. Client: treat a resume without reaffirmation as a new session and re-issue pending requests.",
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
                evidence: crate::Evidence::SessionNotReaffirmed(Evidence(json!({ "session_id": sent, "stream": r.label(), "exchange": r.exchange.to_string() }))),
                caused_by: vec![],
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The evidence of a `session_not_reaffirmed` finding (as JSON until it is typed).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Evidence(pub serde_json::Value);
