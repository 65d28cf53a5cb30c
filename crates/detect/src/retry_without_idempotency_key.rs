//! `retry_without_idempotency_key`: the operational effect the incident note prescribes — after
//! an unsafe resumption or a re-initialize the client re-sends in-flight `tools/call`s — done
//! without an idempotency key, so a tool that did run may run twice.

use serde_json::json;

use super::{
    About, FindingKind, Findings, KindInfo, Labels, New, Severity, Subject, client_requests,
};
use mcpf_mcp::model::{Session, StreamTransport};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::RetryWithoutIdempotencyKey,
    severity: Severity::Medium,
    when: "a tools/call re-sent (same tool and arguments) after an unsafe resumption or re-initialize with no idempotency key",
    meaning: "The client re-issued a tool call it had already sent, after the session's resumption became unreliable, and nothing lets the server recognise the repeat.",
    why: "MCP cannot tell 'never arrived' from 'executed, response lost': a non-idempotent tool (payments, writes, deploys) may now run twice.",
    fix: "Client: attach an idempotency key to every tools/call (e.g. in _meta) and reuse it on retries. Server: deduplicate on it and return the first result.",
    evidence: &["request_ids", "tool"],
};

/// What is kept of a `tools/call` for this detector after its session is compacted: compact,
/// since every call of the run is kept.
#[derive(Clone, Debug)]
pub struct ToolCall {
    pub(crate) session: usize,
    /// Shared by the calls of a session.
    pub(crate) session_id: Option<std::sync::Arc<str>>,
    pub(crate) stream: usize,
    pub(crate) transport: StreamTransport,
    pub(crate) exchange: mcpf_http::ExchangeId,
    pub(crate) opened: Mark,
    pub(crate) id: Option<mcpf_mcp::jsonrpc::RequestId>,
    pub(crate) tool: Box<str>,
    /// Server, client, tool and canonical arguments, hashed: equal keys are the same call.
    pub(crate) key: u64,
    pub(crate) idempotency_key: bool,
    /// When the first answer to it arrived, if one did.
    pub(crate) answered: Option<Mark>,
    /// Initialize requests of its session after it was sent.
    pub(crate) later_initializes: Box<[Mark]>,
}

impl ToolCall {
    fn session_label(&self) -> String {
        mcpf_mcp::model::session_label(self.session)
    }

    fn stream_label(&self) -> String {
        mcpf_mcp::model::stream_label(self.transport, self.stream)
    }
}

/// The `tools/call`s of a session, before its events are dropped.
pub fn calls(s: &Session) -> Vec<ToolCall> {
    use std::hash::{Hash, Hasher};
    let session_id: Option<std::sync::Arc<str>> = s.session_id.as_deref().map(Into::into);
    client_requests(s)
        .into_iter()
        .filter(|(_, m)| m.method.as_deref() == Some("tools/call"))
        .map(|(st, m)| {
            let opened = s.streams[st].opened;
            let mut h = rustc_hash::FxHasher::default();
            (s.server, s.client_ip, &m.mcp.tool, &m.mcp.arguments).hash(&mut h);
            ToolCall {
                session: s.idx,
                session_id: session_id.clone(),
                stream: st,
                transport: s.streams[st].transport,
                exchange: s.streams[st].exchange,
                opened,
                id: m.id.clone(),
                tool: m.mcp.tool.as_deref().unwrap_or_default().into(),
                key: h.finish(),
                idempotency_key: m.mcp.idempotency_key.is_some(),
                answered: m.id.as_ref().and_then(|id| {
                    mcpf_mcp::answers(s, id)
                        .iter()
                        .map(|a| a.mark)
                        .filter(|a| *a >= opened)
                        .min()
                }),
                later_initializes: s
                    .initializes
                    .iter()
                    .copied()
                    .filter(|i| *i > opened)
                    .collect::<Vec<_>>()
                    .into_boxed_slice(),
            }
        })
        .collect()
}

pub(crate) fn detect(calls: &mut [ToolCall], f: &mut Findings) {
    calls.sort_by_key(|c| (c.opened, c.session, c.stream));
    // Earlier calls by key: a retry is looked up, not searched for.
    let mut by_key: rustc_hash::FxHashMap<u64, Vec<usize>> = Default::default();
    for i in 0..calls.len() {
        let c2 = &calls[i];
        let t2 = c2.opened;
        let earlier = if c2.idempotency_key {
            None
        } else {
            // An earlier identical call whose answer the client did not have by then.
            by_key.get(&c2.key).and_then(|v| {
                v.iter()
                    .map(|&j| &calls[j])
                    .find(|c1| c1.answered.is_none_or(|a| a >= t2))
            })
        };
        if let Some(c1) = earlier {
            let t1 = c1.opened;
            // What made the retry necessary: an unsafe resumption in between, or a new
            // initialize (in the call's own session, or the new session the retry is in).
            let unsafe_between = f
                .list
                .iter()
                .filter(|x| {
                    x.session == c1.session && x.kind == FindingKind::UnsafeResumptionAfterFallback
                })
                .find(|x| x.time > t1 && x.time < t2)
                .map(|x| x.handle);
            let reinit = c1.later_initializes.iter().any(|m| *m < t2) || c1.session != c2.session;
            if unsafe_between.is_some() || reinit {
                let ids: Vec<serde_json::Value> = [c1.id.as_ref(), c2.id.as_ref()]
                    .into_iter()
                    .flatten()
                    .map(|i| i.to_value())
                    .collect();
                let tool = c2.tool.to_string();
                let labels = Labels {
                    session_label: c2.session_label(),
                    session_id: c2.session_id.as_deref().map(str::to_string),
                    stream_labels: vec![c2.stream_label()],
                    exchanges: vec![c2.exchange.to_string()],
                };
                f.add(
                    About::Compacted(labels),
                    New {
                        kind: FindingKind::RetryWithoutIdempotencyKey,
                        severity: INFO.severity,
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
                            "first": { "session": c1.session_label(), "stream": c1.stream_label(), "time": t1.time.rfc3339(), "frame": t1.frame.frame },
                            "retry": { "session": c2.session_label(), "stream": c2.stream_label(), "time": t2.time.rfc3339(), "frame": t2.frame.frame },
                        }),
                        caused_by: unsafe_between.into_iter().collect(),
                        subject: Subject::Retry {
                            session: c2.session,
                            stream: c2.stream,
                        },
                    },
                );
            }
        }
        by_key.entry(calls[i].key).or_default().push(i);
    }
}
