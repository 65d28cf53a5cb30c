//! `resync_without_reconciliation`: after an unsafe resumption the client started a new session
//! but never re-sent the `tools/call` it had lost in the old one (the seed incident's operational
//! effect: the call is neither known done nor retried). The new session is tied to the old by
//! evidence only: its `initialize` came on a TCP connection that had carried the old session's
//! exchanges and no other session's (a pooled connection proves nothing). The old session must
//! have been analysed first (its findings are at hand); a call counts as re-sent when the new
//! session calls the same tool.

use serde_json::json;

use super::{Finding, FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::jsonrpc::RequestId;
use mcpf_mcp::model::Session;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::ResyncWithoutReconciliation,
    severity: Severity::Medium,
    when: "after an unsafe resumption the client re-initialized (a new session on the same TCP connection) but did not re-send a tools/call whose result it never saw",
    meaning: "The client gave up on a session whose resume was unsafe and started over, but the call that was in flight there was never retried: whether it ran is unknown to the client, and nothing it did since accounts for it.",
    why: "The work the call stood for is either silently lost (never retried) or done without the client knowing: an index never rebuilt, a payment neither confirmed nor repeated.",
    fix: "Client: after re-initializing, reconcile every call still pending in the old session: re-send it with an idempotency key, or ask the server for its outcome. Server: make tool calls idempotent by key.",
    evidence: &["request_id", "session", "reinitialize_at"],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    let Some(r) = &s.reinitialized_from else {
        return;
    };
    let unsafe_resume = [
        FindingKind::UnsafeResumptionAfterFallback,
        FindingKind::CrossNamespaceReplay,
        FindingKind::CrossSessionReplay,
    ]
    .into_iter()
    .any(|k| f.of(r.session, k).next().is_some());
    if !unsafe_resume {
        return;
    }
    let lost: Vec<Finding> = f
        .of(r.session, FindingKind::UnansweredRequest)
        .filter(|u| u.severity != Severity::Info && u.evidence["method"] == "tools/call")
        .cloned()
        .collect();
    for u in lost {
        let tool = u.evidence["tool"].as_str();
        let resent =
            s.streams.iter().flat_map(|st| st.requests()).any(|m| {
                m.method.as_deref() == Some("tools/call") && m.mcp.tool.as_deref() == tool
            });
        if resent {
            continue;
        }
        let new = New {
            kind: FindingKind::ResyncWithoutReconciliation,
            severity: INFO.severity,
            time: r.at,
            frames: vec![u.time, r.at],
            streams: s.streams.first().map(|st| st.idx).into_iter().collect(),
            summary: format!(
                "the client left session {} for this one (initialize on the same connection at {}) after an unsafe resumption, and never re-sent tools/call {}{}, whose result it never got",
                r.session_id,
                r.at.time.clock_millis(),
                u.evidence["request_id"],
                tool.map(|t| format!(" ({t})")).unwrap_or_default(),
            ),
            evidence: json!({
                "request_id": u.evidence["request_id"],
                "tool": tool,
                "session": r.session_id,
                "reinitialize_at": {"time": r.at.time.rfc3339(), "frame": r.at.frame.frame, "input": r.at.frame.input},
                "unanswered": {"time": u.time.time.rfc3339(), "frame": u.time.frame.frame},
            }),
            caused_by: Vec::new(),
            subject: Subject::Request(match &u.evidence["request_id"] {
                serde_json::Value::String(id) => RequestId::String(id.clone()),
                other => RequestId::Number(other.to_string()),
            }),
        };
        f.add(s, new);
    }
}
