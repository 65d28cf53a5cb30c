//! `retry_without_idempotency_key`: the operational effect the incident note prescribes — after
//! an unsafe resumption or a re-initialize the client re-sends in-flight `tools/call`s — done
//! without an idempotency key, so a tool that did run may run twice.

use serde_json::json;

use super::{Findings, KindInfo, New, Severity, client_requests};
use crate::mcp::model::Session;
use crate::model::Mark;

pub const INFO: KindInfo = KindInfo {
    kind: "retry_without_idempotency_key",
    severity: Severity::Medium,
    when: "a tools/call re-sent (same tool and arguments) after an unsafe resumption or re-initialize with no idempotency key",
    meaning: "The client re-issued a tool call it had already sent, after the session's resumption became unreliable, and nothing lets the server recognise the repeat.",
    why: "MCP cannot tell 'never arrived' from 'executed, response lost': a non-idempotent tool (payments, writes, deploys) may now run twice.",
    fix: "Client: attach an idempotency key to every tools/call (e.g. in _meta) and reuse it on retries. Server: deduplicate on it and return the first result.",
    evidence: &["request_ids", "tool"],
};

/// What is kept of a `tools/call` for this detector after its session is compacted.
#[derive(Clone, Debug)]
pub struct ToolCall {
    pub session: usize,
    pub session_label: String,
    pub server: std::net::SocketAddr,
    pub client_ip: std::net::IpAddr,
    pub stream: usize,
    pub stream_label: String,
    pub opened: Mark,
    pub id: Option<crate::jsonrpc::RequestId>,
    pub tool: Option<String>,
    pub arguments: Option<String>,
    pub idempotency_key: bool,
    /// When answers to it arrived.
    pub answered: Vec<Mark>,
    /// Initialize requests of its session.
    pub initializes: Vec<Mark>,
}

/// The `tools/call`s of a session, before its events are dropped.
pub fn calls(s: &Session) -> Vec<ToolCall> {
    client_requests(s)
        .into_iter()
        .filter(|(_, m)| m.method.as_deref() == Some("tools/call"))
        .map(|(st, m)| ToolCall {
            session: s.idx,
            session_label: s.label(),
            server: s.server,
            client_ip: s.client_ip,
            stream: st,
            stream_label: s.streams[st].label(),
            opened: s.streams[st].opened,
            id: m.id.clone(),
            tool: m.mcp.tool.clone(),
            arguments: m.mcp.arguments.clone(),
            idempotency_key: m.mcp.idempotency_key.is_some(),
            answered: m
                .id
                .as_ref()
                .map(|id| crate::mcp::answers(s, id).iter().map(|a| a.mark).collect())
                .unwrap_or_default(),
            initializes: s.initializes.clone(),
        })
        .collect()
}

pub fn detect(calls: &mut [ToolCall], f: &mut Findings) {
    calls.sort_by_key(|c| (c.opened, c.session, c.stream));
    for i in 0..calls.len() {
        let c2 = &calls[i];
        if c2.idempotency_key {
            continue;
        }
        let t2 = c2.opened;
        // An earlier identical call whose answer the client did not have by then.
        let earlier = calls[..i].iter().find(|c1| {
            c1.tool == c2.tool
                && c1.arguments == c2.arguments
                && c1.server == c2.server
                && c1.client_ip == c2.client_ip
                && !c1.answered.iter().any(|a| *a < t2 && *a >= c1.opened)
        });
        let Some(c1) = earlier else { continue };
        let t1 = c1.opened;
        // What made the retry necessary: an unsafe resumption in between, or a new initialize.
        let unsafe_between = f
            .list
            .iter()
            .filter(|x| x.session == c1.session && x.kind == "unsafe_resumption_after_fallback")
            .find(|x| x.time > t1 && x.time < t2)
            .map(|x| x.handle);
        let reinit = c2.initializes.iter().any(|m| *m > t1 && *m < t2);
        if unsafe_between.is_none() && !reinit {
            continue;
        }
        let ids: Vec<serde_json::Value> = [c1.id.as_ref(), c2.id.as_ref()]
            .into_iter()
            .flatten()
            .map(|i| i.to_value())
            .collect();
        let tool = c2.tool.clone().unwrap_or_default();
        f.add_compact(New {
            kind: &INFO,
            session: c2.session,
            time: t2,
            frames: vec![t1, t2],
            streams: vec![c2.stream],
            summary: format!(
                "tools/call \"{tool}\" re-sent{} without an idempotency key",
                if unsafe_between.is_some() {
                    " after an unsafe resumption"
                } else {
                    " after a re-initialize"
                }
            ),
            evidence: json!({
                "request_ids": ids,
                "tool": tool,
                "first": { "session": c1.session_label, "stream": c1.stream_label, "time": t1.time.rfc3339(), "frame": t1.frame.frame },
                "retry": { "session": c2.session_label, "stream": c2.stream_label, "time": t2.time.rfc3339(), "frame": t2.frame.frame },
            }),
            caused_by: unsafe_between.into_iter().collect(),
            anchor: format!("retry:{}:{}", c2.session, c2.stream),
        });
    }
}
