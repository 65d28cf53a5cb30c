//! `session_id_changed`: a response carried an `Mcp-Session-Id` different from the one its
//! request carried — the server (or whatever routed the request) treats this as another session.

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{Session, Need};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SessionIdChanged,
    severity: Severity::High,
    when: "a response carries an Mcp-Session-Id different from the one its request carried",
    meaning: "The client sent one session ID and the response names another: the request reached a server (or instance) that does not know the client's session and created or returned a different one.",
    why: "The client's pending requests and event cursors belong to the old session; continuing on the new one silently loses them, and resuming with a Last-Event-ID of the old session is meaningless.",
    fix: "Route by Mcp-Session-Id (session affinity) or share session state across instances; a server that does not know a session must answer 404 so the client re-initializes, never mint a new ID on a non-initialize request.",
    requires: &[Need::ResponseSessionId],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    for st in &s.streams {
        let (Some(sent), Some(received)) = (&st.session_id_sent, &st.session_id_received) else {
            continue;
        };
        if !st.session_header_known {
            continue;
        }
        if sent == received {
            continue;
        }
        let mark = st.response_mark.unwrap_or(st.opened);
        f.add(
            s,
            New {
                kind: FindingKind::SessionIdChanged,
                severity: INFO.severity,
                time: mark,
                frames: vec![st.opened, mark],
                streams: vec![st.idx],
                summary: format!(
                    "{} sent Mcp-Session-Id {sent} and the response carried {received}",
                    st.label()
                ),
                evidence: crate::Evidence::SessionIdChanged(Evidence {
                    sent: sent.clone(),
                    received: received.clone(),
                    stream: st.label(),
                    exchange: st.exchange.to_string(),
                }),
                caused_by: vec![],
                subject: Subject::Stream(st.idx),
            },
        );
    }
}

/// The evidence of a `session_id_changed`: the session ID the request carried, the other one
/// its response carried, and where.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The `Mcp-Session-Id` on the request.
    pub sent: String,
    /// The `Mcp-Session-Id` on the response.
    pub received: String,
    pub stream: String,
    pub exchange: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_changed_id_is_read_back_from_the_report() {
        let text = r#"{"sent":"3f1c","received":"9a2b","stream":"post:s5","exchange":"tcp2#4"}"#;
        let e: Evidence = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }
}
