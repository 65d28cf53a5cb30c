//! `retry_without_idempotency_key`: the operational effect the incident note prescribes — after
//! an unsafe resumption or a re-initialize the client re-sends in-flight `tools/call`s — done
//! without an idempotency key, so a tool that did run may run twice.
//!
//! Within one session only, and only on what the name says: a first `tools/call` the client
//! was left without an answer to (its stream cut, reset or lost, or the session forgotten),
//! then a resume or a new `initialize`, then the same call (same tool, the same argument bytes)
//! sent again without an idempotency key. Calls are matched one to one.

use serde_json::json;

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject, client_requests};
use mcpf_http::Outcome;
use mcpf_mcp::answers;
use mcpf_mcp::jsonrpc::Message;
use mcpf_mcp::model::{Session, Stream, StreamIdx};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::RetryWithoutIdempotencyKey,
    severity: Severity::Medium,
    when: "in one session, a tools/call left unanswered (stream cut or lost, or 404), then a resume or re-initialize, then the same call (same tool, same arguments) re-sent with no idempotency key",
    meaning: "The client re-issued a tool call it had already sent, after the session's resumption became unreliable, and nothing lets the server recognise the repeat.",
    why: "MCP cannot tell 'never arrived' from 'executed, response lost': a non-idempotent tool (payments, writes, deploys) may now run twice.",
    fix: "Client: attach an idempotency key to every tools/call (e.g. in _meta) and reuse it on retries. Server: deduplicate on it and return the first result.",
    evidence: &["request_ids", "tool"],
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

    /// The same call: the same tool with the same arguments, byte for byte (both whole).
    fn same_as(&self, other: &Call<'_>) -> bool {
        let (a, b) = (&self.message.mcp, &other.message.mcp);
        self.tool().is_some()
            && a.tool == b.tool
            && a.arguments == b.arguments
            && !a.truncated
            && !b.truncated
    }
}

/// The session's `tools/call`s in the order they were sent.
fn calls(s: &Session) -> Vec<Call<'_>> {
    client_requests(s)
        .into_iter()
        .filter(|(_, m)| m.method.as_deref() == Some("tools/call"))
        .map(|(st, message)| {
            let stream = &s.streams[st];
            Call {
                stream: st,
                opened: stream.opened,
                message,
                abandoned: abandoned(s, stream, message),
            }
        })
        .collect()
}

/// When the client was left without an answer to `m` on `stream`, if it was.
fn abandoned(s: &Session, stream: &Stream, m: &Message) -> Option<Mark> {
    let lost = match (stream.status, stream.outcome) {
        (Some(404), _) => stream.response_mark,
        (_, Some(Outcome::Reset | Outcome::ClosedEarly | Outcome::Gap)) => stream.ended,
        _ => None,
    }?;
    let id = m.id.as_ref()?;
    let answered_before = answers(s, id)
        .iter()
        .any(|a| a.mark <= lost && a.mark >= stream.opened);
    (!answered_before).then_some(lost)
}

/// What made the session start over between `lost` and `retry`: a resume (with the unsafe
/// resumption found on it, if any) or a new `initialize`.
fn restart_between(s: &Session, f: &Findings, lost: Mark, retry: Mark) -> Option<Restart> {
    let resume = s
        .streams
        .iter()
        .find(|st| st.resume.is_some() && st.opened > lost && st.opened < retry);
    if let Some(r) = resume {
        let cause = f.find(
            s.idx,
            FindingKind::UnsafeResumptionAfterFallback,
            &Subject::Resume(r.idx),
        );
        return Some(Restart::Resume { cause });
    }
    s.initializes
        .iter()
        .any(|m| *m > lost && *m < retry)
        .then_some(Restart::Initialize)
}

enum Restart {
    Resume { cause: Option<usize> },
    Initialize,
}

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    let calls = calls(s);
    let mut retried = vec![false; calls.len()];
    for (i, first) in calls.iter().enumerate() {
        let Some(lost) = first.abandoned else {
            continue;
        };
        // The first later identical call without a key, after a restart, not yet matched.
        let hit = calls.iter().enumerate().skip(i + 1).find_map(|(j, c)| {
            let keyless = c.message.mcp.idempotency_key.is_none();
            if retried[j] || !keyless || c.opened <= lost || !c.same_as(first) {
                return None;
            }
            restart_between(s, f, lost, c.opened).map(|r| (j, r))
        });
        let Some((j, restart)) = hit else { continue };
        retried[j] = true;
        let new = finding(s, first, &calls[j], restart);
        f.add(s, new);
    }
}

fn finding(s: &Session, first: &Call<'_>, retry: &Call<'_>, restart: Restart) -> New {
    let ids: Vec<serde_json::Value> = [first.message.id.as_ref(), retry.message.id.as_ref()]
        .into_iter()
        .flatten()
        .map(|i| i.to_value())
        .collect();
    let tool = retry.tool().unwrap_or_default().to_string();
    let (after, cause) = match restart {
        Restart::Resume { cause: Some(c) } => (" after an unsafe resumption", Some(c)),
        Restart::Resume { cause: None } => (" after a resume", None),
        Restart::Initialize => (" after a re-initialize", None),
    };
    let at = |c: &Call<'_>| {
        json!({
            "session": s.label(),
            "stream": s.streams[c.stream].label(),
            "time": c.opened.time.rfc3339(),
            "frame": c.opened.frame.frame,
        })
    };
    New {
        kind: FindingKind::RetryWithoutIdempotencyKey,
        severity: INFO.severity,
        time: retry.opened,
        frames: vec![first.opened, retry.opened],
        streams: vec![first.stream, retry.stream],
        summary: format!("tools/call \"{tool}\" re-sent{after} without an idempotency key"),
        evidence: json!({
            "request_ids": ids,
            "tool": tool,
            "first": at(first),
            "retry": at(retry),
        }),
        caused_by: cause.into_iter().collect(),
        subject: Subject::Retry(retry.stream),
    }
}
