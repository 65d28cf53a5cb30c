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

use serde::{Deserialize, Serialize};

use super::{Finding, FindingKind, Findings, KindInfo, New, Severity, Subject};
use crate::unanswered_request::Evidence as Unanswered;
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
    requires: &[],
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
    let lost: Vec<(Finding, Unanswered)> = f
        .of(r.session, FindingKind::UnansweredRequest)
        .filter(|u| u.severity != Severity::Info)
        .filter_map(|u| match &u.evidence {
            crate::Evidence::UnansweredRequest(e) if e.method.as_deref() == Some("tools/call") => {
                Some((u.clone(), e.clone()))
            }
            _ => None,
        })
        .collect();
    for (u, e) in lost {
        let tool = e.tool.as_deref();
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
                match resent.find_map(|&(st, m)| Some((m, ran_again(s, ix, &e, (st, m))?))) {
                    Some(done) => Some(done),
                    None => continue,
                }
            }
        };
        f.add(s, finding(s, r, (&u, &e), twice));
    }
}

/// When the re-sent call `m` ran to a result although the lost call `u` had begun running
/// (progress reported) and nothing lets the server recognise the repeat: the result's mark.
fn ran_again(
    s: &Session,
    ix: &Index<'_>,
    u: &Unanswered,
    (st, m): (StreamIdx, &Message),
) -> Option<Mark> {
    if u.last_progress.is_none() || m.mcp.idempotency_key.is_some() {
        return None;
    }
    let sent = s.seq(s.streams[st].opened);
    ix.answers
        .between(m.id.as_ref()?, sent, None)
        .iter()
        .find(|a| a.message.kind == Kind::Response && !a.message.mcp.tool_error)
        .map(|a| a.mark)
}

fn finding(
    s: &Session,
    r: &Reinitialized,
    (u, e): (&Finding, &Unanswered),
    twice: Option<(&Message, Mark)>,
) -> New {
    let tool = e.tool.as_deref();
    let call = format!(
        "tools/call {}{}",
        e.request_id.json(),
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
    let evidence = Evidence {
        request_id: e.request_id.clone(),
        tool: e.tool.clone(),
        session: r.session_id.clone(),
        reinitialize_at: At::of(r.at),
        unanswered: Unseen {
            time: u.time.time.rfc3339(),
            frame: u.time.frame.frame,
        },
        resent: twice.is_some(),
        executions: twice.map(|(m, done)| Executions {
            first: First {
                last_progress: e.last_progress.clone(),
            },
            second: Second {
                request_id: m.id.clone(),
                result: At::of(done),
            },
        }),
    };
    New {
        kind: FindingKind::ResyncWithoutReconciliation,
        severity: INFO.severity,
        time: r.at,
        frames: vec![u.time, r.at],
        streams: s.streams.first().map(|st| st.idx).into_iter().collect(),
        summary,
        evidence: crate::Evidence::ResyncWithoutReconciliation(evidence),
        caused_by: Vec::new(),
        subject: Subject::Request(e.request_id.clone()),
    }
}

/// The evidence of a `resync_without_reconciliation`: the call the old session left
/// unanswered, where the client started over, and both executions when the tool ran twice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The lost call's request ID in the old session.
    pub request_id: RequestId,
    pub tool: Option<String>,
    /// The old session's ID.
    pub session: String,
    pub reinitialize_at: At,
    /// The old session's `unanswered_request`.
    pub unanswered: Unseen,
    /// The new session called the same tool.
    pub resent: bool,
    /// Present when the tool ran twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executions: Option<Executions>,
}

/// A moment of an input: its time, frame and input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct At {
    pub time: String,
    pub frame: u64,
    pub input: mcpf_model::InputId,
}

impl At {
    fn of(m: Mark) -> At {
        At {
            time: m.time.rfc3339(),
            frame: m.frame.frame,
            input: m.frame.input,
        }
    }
}

/// When the old session's request was found unanswered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unseen {
    pub time: String,
    pub frame: u64,
}

/// The two runs of a tool: the lost call (it had reported progress) and the re-sent one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Executions {
    pub first: First,
    pub second: Second,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct First {
    pub last_progress: Option<crate::unanswered_request::Progress>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Second {
    pub request_id: Option<RequestId>,
    pub result: At,
}
