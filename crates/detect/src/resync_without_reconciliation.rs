//! `resync_without_reconciliation`: after an unsafe resumption the client started a new session
//! but never re-sent the `tools/call` it had lost in the old one (the seed incident's operational
//! effect: the call is neither known done nor retried). The new session is tied to the old by
//! evidence only: its `initialize` came on an HTTP/1.1 connection that had carried the old
//! session's exchanges and no other session's (a pooled connection proves nothing, nor does an
//! HTTP/2 one, whose streams may be any client's). The old session must have been analysed
//! first (its findings are at hand); a call counts as re-sent when the new session calls the
//! same tool.
//!
//! Re-sent is not always reconciled: if the lost call had begun running (the server reported
//! progress on it) and the re-sent one, carrying no idempotency key, ran to a result, the tool
//! ran twice, and that is the finding too, with both executions as its evidence.

use serde_json::json;

use super::{Finding, FindingKind, Findings, KindInfo, New, Severity, Subject};
use crate::index::Index;
use mcpf_mcp::jsonrpc::{Kind, Message, RequestId};
use mcpf_mcp::model::{Reinitialized, Session, StreamIdx};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::ResyncWithoutReconciliation,
    severity: Severity::Medium,
    when: "after an unsafe resumption the client re-initialized (a new session on the same HTTP/1.1 connection) but did not re-send a tools/call whose result it never saw, or re-sent it without an idempotency key after the first had begun running, and both ran",
    meaning: "The client gave up on a session whose resume was unsafe and started over, but the call that was in flight there was never retried: whether it ran is unknown to the client, and nothing it did since accounts for it.",
    why: "The work the call stood for is either silently lost (never retried) or done without the client knowing: an index never rebuilt, a payment neither confirmed nor repeated.",
    fix: "Client: after re-initializing, reconcile every call still pending in the old session: re-send it with an idempotency key, or ask the server for its outcome. Server: make tool calls idempotent by key.",
    evidence: &["request_id", "session", "reinitialize_at"],
};

pub(crate) fn detect(s: &Session, ix: &Index<'_>, f: &mut Findings) {
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
        let mut resent = ix
            .requests
            .iter()
            .filter(|(_, m)| {
                m.method.as_deref() == Some("tools/call") && m.mcp.tool.as_deref() == tool
            })
            .peekable();
        let twice = match resent.peek() {
            None => None,
            // Any re-send that ran to a result ran the tool a second time.
            Some(_) => {
                match resent.find_map(|&(st, m)| Some((m, ran_again(s, ix, &u, (st, m))?))) {
                    Some(done) => Some(done),
                    None => continue,
                }
            }
        };
        f.add(s, finding(s, r, &u, twice));
    }
}

/// When the re-sent call `m` ran to a result although the lost call `u` had begun running
/// (progress reported) and nothing lets the server recognise the repeat: the result's mark.
fn ran_again(
    s: &Session,
    ix: &Index<'_>,
    u: &Finding,
    (st, m): (StreamIdx, &Message),
) -> Option<Mark> {
    if u.evidence["last_progress"].is_null() || m.mcp.idempotency_key.is_some() {
        return None;
    }
    let sent = s.seq(s.streams[st].opened);
    ix.answers
        .between(m.id.as_ref()?, sent, None)
        .iter()
        .find(|a| a.message.kind == Kind::Response && !a.message.mcp.tool_error)
        .map(|a| a.mark)
}

fn finding(s: &Session, r: &Reinitialized, u: &Finding, twice: Option<(&Message, Mark)>) -> New {
    let tool = u.evidence["tool"].as_str();
    let call = format!(
        "tools/call {}{}",
        u.evidence["request_id"],
        tool.map(|t| format!(" ({t})")).unwrap_or_default()
    );
    let left = format!(
        "the client left session {} for this one (initialize on the same connection at {}) after an unsafe resumption",
        r.session_id,
        r.at.time.clock_millis(),
    );
    let summary = match twice {
        None => format!("{left}, and never re-sent {call}, whose result it never got"),
        Some((m, done)) => format!(
            "{left}, and re-sent {call} as request {} with no idempotency key: the first had begun running (progress reported before it was lost) and the second ran to a result at {}, so the tool ran twice (matched by tool name: the lost call's arguments are not kept to compare)",
            m.id.as_ref().map(RequestId::label).unwrap_or_default(),
            done.time.clock_millis(),
        ),
    };
    let mut evidence = json!({
        "request_id": u.evidence["request_id"],
        "tool": tool,
        "session": r.session_id,
        "reinitialize_at": {"time": r.at.time.rfc3339(), "frame": r.at.frame.frame, "input": r.at.frame.input},
        "unanswered": {"time": u.time.time.rfc3339(), "frame": u.time.frame.frame},
        "resent": twice.is_some(),
    });
    if let Some((m, done)) = twice {
        evidence["executions"] = json!({
            "first": {"last_progress": u.evidence["last_progress"]},
            "second": {
                "request_id": m.id.as_ref().map(RequestId::to_value),
                "result": {"time": done.time.rfc3339(), "frame": done.frame.frame, "input": done.frame.input},
            },
        });
    }
    New {
        kind: FindingKind::ResyncWithoutReconciliation,
        severity: INFO.severity,
        time: r.at,
        frames: vec![u.time, r.at],
        streams: s.streams.first().map(|st| st.idx).into_iter().collect(),
        summary,
        evidence,
        caused_by: Vec::new(),
        subject: Subject::Request(match &u.evidence["request_id"] {
            serde_json::Value::String(id) => RequestId::String(id.clone()),
            other => RequestId::Number(other.to_string()),
        }),
    }
}
