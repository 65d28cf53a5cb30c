//! `retry_without_idempotency_key`: the operational effect the incident note prescribes — after
//! an unsafe resumption or a re-initialize the client re-sends in-flight `tools/call`s — done
//! without an idempotency key, so a tool that did run may run twice.

use serde_json::json;

use super::{Findings, KindInfo, New, Severity, client_requests};
use crate::mcp::model::Session;

pub const INFO: KindInfo = KindInfo {
    kind: "retry_without_idempotency_key",
    severity: Severity::Medium,
    when: "a tools/call re-sent (same tool and arguments) after an unsafe resumption or re-initialize with no idempotency key",
    meaning: "The client re-issued a tool call it had already sent, after the session's resumption became unreliable, and nothing lets the server recognise the repeat.",
    why: "MCP cannot tell 'never arrived' from 'executed, response lost': a non-idempotent tool (payments, writes, deploys) may now run twice.",
    fix: "Client: attach an idempotency key to every tools/call (e.g. in _meta) and reuse it on retries. Server: deduplicate on it and return the first result.",
    evidence: &["request_ids", "tool"],
};

pub fn detect(sessions: &[Session], f: &mut Findings) {
    // (session, stream, tool, arguments, id, key)
    let mut calls = Vec::new();
    for s in sessions {
        for (st, m) in client_requests(s) {
            if m.method.as_deref() == Some("tools/call") {
                calls.push((s.idx, st, m));
            }
        }
    }
    calls.sort_by_key(|(s, st, _)| (sessions[*s].streams[*st].opened, *s, *st));
    for (i, (s2, st2, m2)) in calls.iter().enumerate() {
        if m2.mcp.idempotency_key.is_some() {
            continue;
        }
        let later = &sessions[*s2];
        let t2 = later.streams[*st2].opened;
        let earlier = calls[..i].iter().find(|(s1, st1, m1)| {
            let a = &sessions[*s1];
            m1.mcp.tool == m2.mcp.tool
                && m1.mcp.arguments == m2.mcp.arguments
                && a.server == later.server
                && a.client_ip == later.client_ip
                && m1.id.as_ref().is_none_or(|id| {
                    !crate::mcp::answers(a, id)
                        .iter()
                        .any(|ans| ans.mark < t2 && ans.mark >= a.streams[*st1].opened)
                })
        });
        let Some((s1, st1, m1)) = earlier else {
            continue;
        };
        let first = &sessions[*s1];
        let t1 = first.streams[*st1].opened;
        // What made the retry necessary: an unsafe resumption in between, or a new initialize.
        let unsafe_between = f
            .list
            .iter()
            .filter(|x| x.session == *s1 && x.kind == "unsafe_resumption_after_fallback")
            .find(|x| x.time > t1 && x.time < t2)
            .map(|x| x.handle);
        let reinit = if s1 != s2 {
            later.initializes.iter().any(|m| *m > t1 && *m < t2)
        } else {
            later.initializes.iter().any(|m| *m > t1 && *m < t2)
        };
        if unsafe_between.is_none() && !reinit {
            continue;
        }
        let ids: Vec<serde_json::Value> = [m1.id.as_ref(), m2.id.as_ref()]
            .into_iter()
            .flatten()
            .map(|i| i.to_value())
            .collect();
        let tool = m2.mcp.tool.clone().unwrap_or_default();
        f.add(
            later,
            New {
                kind: &INFO,
                session: *s2,
                time: t2,
                frames: vec![t1, t2],
                streams: vec![*st2],
                summary: format!(
                    "tools/call \"{tool}\" re-sent{} without an idempotency key",
                    if unsafe_between.is_some() { " after an unsafe resumption" } else { " after a re-initialize" }
                ),
                evidence: json!({
                    "request_ids": ids,
                    "tool": tool,
                    "first": { "session": first.label(), "stream": first.streams[*st1].label(), "time": t1.time.rfc3339(), "frame": t1.frame.frame },
                    "retry": { "session": later.label(), "stream": later.streams[*st2].label(), "time": t2.time.rfc3339(), "frame": t2.frame.frame },
                }),
                caused_by: unsafe_between.into_iter().collect(),
                anchor: format!("retry:{}:{}", s2, st2),
            },
        );
    }
}
