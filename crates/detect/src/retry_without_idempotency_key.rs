//! `retry_without_idempotency_key`: the operational effect the incident note prescribes — after
//! an unsafe resumption or a re-initialize the client re-sends in-flight `tools/call`s — done
//! without an idempotency key, so a tool that did run may run twice.
//!
//! Within one session only, and only on what the name says: a first `tools/call` the client
//! was left without an answer to (its stream cut, reset or lost, or the session forgotten),
//! then a resume or a new `initialize`, then the same call (same tool, the same argument bytes)
//! sent again without an idempotency key. Calls are matched one to one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use crate::index::Index;
use mcpf_http::Outcome;
use mcpf_mcp::jsonrpc::{Message, RequestId};
use mcpf_mcp::model::{Seq, Session, Stream, StreamIdx, Need};
use mcpf_model::{Mark, WireMap};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::RetryWithoutIdempotencyKey,
    severity: Severity::Medium,
    when: "in one session, a tools/call left unanswered (stream cut or lost, or 404), then a resume or re-initialize, then the same call (same tool, same arguments) re-sent with no idempotency key",
    meaning: "The client re-issued a tool call it had already sent, after the session's resumption became unreliable, and nothing lets the server recognise the repeat.",
    why: "MCP cannot tell 'never arrived' from 'executed, response lost': a non-idempotent tool (payments, writes, deploys) may now run twice.",
    fix: "Client: attach an idempotency key to every tools/call (e.g. in _meta) and reuse it on retries. Server: deduplicate on it and return the first result.",
    requires: &[Need::Bodies],
};

/// A `tools/call` of the session: where it was sent, and what it was.
struct Call<'a> {
    stream: StreamIdx,
    opened: Mark,
    message: &'a Message,
    /// When the client gave up on it without an answer: its stream cut, reset or lost, or the
    /// server forgot the session (404).
    abandoned: Option<Mark>,
}

impl Call<'_> {
    fn tool(&self) -> Option<&str> {
        self.message.mcp.tool.as_deref()
    }

    /// What the call is: the same tool with the same arguments, byte for byte, is the same
    /// call; `None` for one with no tool or with arguments cut short.
    fn key(&self) -> Option<(&str, Option<&str>)> {
        let d = &self.message.mcp;
        (!d.truncated).then_some((self.tool()?, d.arguments.as_deref()))
    }
}

/// The session's `tools/call`s in the order they were sent.
fn calls<'a>(s: &'a Session, ix: &Index<'a>) -> Vec<Call<'a>> {
    ix.requests
        .iter()
        .enumerate()
        .filter(|(_, (_, m))| m.method.as_deref() == Some("tools/call"))
        .map(|(pos, &(st, message))| {
            let stream = &s.streams[st];
            Call {
                stream: st,
                opened: stream.opened,
                message,
                abandoned: abandoned(s, ix, stream, message, pos),
            }
        })
        .collect()
}

/// When the client was left without an answer to `m` (at `pos`) on `stream`, if it was.
fn abandoned(
    s: &Session,
    ix: &Index<'_>,
    stream: &Stream,
    m: &Message,
    pos: usize,
) -> Option<Mark> {
    let lost = match (stream.status, stream.outcome) {
        (Some(404), _) => stream.response_mark,
        (_, Some(Outcome::Reset | Outcome::StreamReset | Outcome::ClosedEarly | Outcome::Gap)) => {
            stream.ended
        }
        _ => None,
    }?;
    let id = m.id.as_ref()?;
    let answered_before = ix
        .answers
        .between(id, ix.sent(s, pos), None)
        .first()
        .is_some_and(|a| a.seq <= s.seq(lost));
    (!answered_before).then_some(lost)
}

/// What can make a session start over, in session order: resumes (by stream) and
/// `initialize`s.
struct Restarts {
    resumes: Vec<(Seq, StreamIdx)>,
    initializes: Vec<Seq>,
}

impl Restarts {
    fn new(s: &Session) -> Self {
        let mut resumes: Vec<(Seq, StreamIdx)> = s
            .streams
            .iter()
            .filter(|st| st.resume.is_some())
            .map(|st| (s.seq(st.opened), st.idx))
            .collect();
        resumes.sort();
        let mut initializes: Vec<Seq> = s.initializes.iter().map(|m| s.seq(*m)).collect();
        initializes.sort();
        Restarts {
            resumes,
            initializes,
        }
    }

    /// The first restart after `lost`: any call sent after it follows a restart.
    fn first_after(&self, lost: Seq) -> Option<Seq> {
        let resume = self
            .resumes
            .get(self.resumes.partition_point(|r| r.0 <= lost));
        let init = self
            .initializes
            .get(self.initializes.partition_point(|m| *m <= lost));
        resume.map(|r| r.0).into_iter().chain(init.copied()).min()
    }

    /// What made the session start over between `lost` and `retry`: a resume (the first
    /// stream, with the unsafe resumption found on it, if any) or a new `initialize`.
    fn between(&self, s: &Session, f: &Findings, lost: Seq, retry: Seq) -> Option<Restart> {
        let from = self.resumes.partition_point(|r| r.0 <= lost);
        let to = self.resumes.partition_point(|r| r.0 < retry);
        let resume = self.resumes[from..to.max(from)].iter().map(|r| r.1).min();
        if let Some(r) = resume {
            let cause = f.find(
                s.idx,
                FindingKind::UnsafeResumptionAfterFallback,
                &Subject::Resume(r),
            );
            return Some(Restart::Resume { cause });
        }
        let init = self.initializes.partition_point(|m| *m <= lost);
        (self.initializes.get(init).is_some_and(|m| *m < retry)).then_some(Restart::Initialize)
    }
}

enum Restart {
    Resume { cause: Option<usize> },
    Initialize,
}

pub(crate) fn detect(s: &Session, ix: &Index<'_>, f: &mut Findings) {
    let calls = calls(s, ix);
    let restarts = Restarts::new(s);
    // The keyless calls not yet matched, by what they call: a retry is one of them.
    let mut open: WireMap<(&str, Option<&str>), BTreeSet<usize>> = WireMap::default();
    for (j, c) in calls.iter().enumerate() {
        if let Some(key) = c.key()
            && c.message.mcp.idempotency_key.is_none()
        {
            open.entry(key).or_default().insert(j);
        }
    }
    for (i, first) in calls.iter().enumerate() {
        let (Some(lost), Some(key)) = (first.abandoned, first.key()) else {
            continue;
        };
        let Some(restart) = restarts.first_after(s.seq(lost)) else {
            continue;
        };
        // The first later identical call without a key, after a restart, not yet matched:
        // calls are in session order, so the first one sent after the first restart.
        let Some(candidates) = open.get_mut(&key) else {
            continue;
        };
        let from = calls
            .partition_point(|c| s.seq(c.opened) <= restart)
            .max(i + 1);
        let Some(&j) = candidates.range(from..).next() else {
            continue;
        };
        let (lost, retry) = (s.seq(lost), s.seq(calls[j].opened));
        let Some(why) = restarts.between(s, f, lost, retry) else {
            continue;
        };
        candidates.remove(&j);
        let new = finding(s, first, &calls[j], why);
        f.add(s, new);
    }
}

fn finding(s: &Session, first: &Call<'_>, retry: &Call<'_>, restart: Restart) -> New {
    let ids: Vec<RequestId> = [first.message.id.as_ref(), retry.message.id.as_ref()]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let tool = retry.tool().unwrap_or_default().to_string();
    let (after, cause) = match restart {
        Restart::Resume { cause: Some(c) } => (" after an unsafe resumption", Some(c)),
        Restart::Resume { cause: None } => (" after a resume", None),
        Restart::Initialize => (" after a re-initialize", None),
    };
    let at = |c: &Call<'_>| Sent {
        session: s.label(),
        stream: s.streams[c.stream].label(),
        time: c.opened.time.rfc3339(),
        frame: c.opened.frame.frame,
    };
    New {
        kind: FindingKind::RetryWithoutIdempotencyKey,
        severity: INFO.severity,
        time: retry.opened,
        frames: vec![first.opened, retry.opened],
        streams: vec![first.stream, retry.stream],
        summary: format!("tools/call \"{tool}\" re-sent{after} without an idempotency key"),
        evidence: crate::Evidence::RetryWithoutIdempotencyKey(Evidence {
            request_ids: ids,
            tool,
            first: at(first),
            retry: at(retry),
        }),
        caused_by: cause.into_iter().collect(),
        subject: Subject::Retry(retry.stream),
    }
}

/// The evidence of a `retry_without_idempotency_key`: the tool call left without an answer and
/// the same call sent again, neither with an idempotency key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The first call's request ID and the retry's (a call without one is left out).
    pub request_ids: Vec<RequestId>,
    /// The tool called; empty when the call named none.
    pub tool: String,
    pub first: Sent,
    pub retry: Sent,
}

/// Where and when a call was sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    /// The session's key.
    pub session: String,
    pub stream: String,
    pub time: String,
    pub frame: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_retry_is_read_back_from_the_report() {
        for text in [
            r#"{"request_ids":[7,"r-2"],"tool":"reindex","first":{"session":"3f1c","stream":"post:s3","time":"2026-11-30T04:36:05.791468Z","frame":10},"retry":{"session":"3f1c","stream":"post:s20","time":"2026-11-30T04:36:19.2Z","frame":201}}"#,
            r#"{"request_ids":[],"tool":"","first":{"session":"3f1c","stream":"post:s3","time":"2026-11-30T04:36:05.791468Z","frame":10},"retry":{"session":"3f1c","stream":"post:s20","time":"2026-11-30T04:36:19.2Z","frame":201}}"#,
        ] {
            let e: Evidence = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
    }
}
