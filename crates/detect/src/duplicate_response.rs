//! `duplicate_response`: a request ID already answered in the session was answered again — the
//! visible symptom of the seed incident (a replayed result for an invocation the client had
//! already resolved).

use super::{EventRef, FindingKind, Findings, KindInfo, New, Severity, Subject};
use crate::index::Index;
use mcpf_mcp::jsonrpc::RequestId;
use mcpf_mcp::model::{Session, Need};
use mcpf_mcp::{Answer, AnswerTexts};
use mcpf_model::WireSet;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::DuplicateResponse,
    severity: Severity::High,
    when: "a second response for a request ID already answered in the session",
    meaning: "The client received two JSON-RPC responses for the same request. The only legitimate case is a resume of the same stream replaying with the same event ID; anything else is a replay from the wrong place or a broadcast the spec forbids.",
    why: "A client that matches responses by ID either drops the second one (and the request it really answers stays pending) or delivers it twice (a tool result applied twice).",
    fix: "Find the cause in caused_by (usually a cross-namespace replay). Server: never send a response on two streams; replay only the stream named by Last-Event-ID. Client: ignore a response for an already-resolved ID and log it.",
    requires: &[Need::Bodies],
};

pub(crate) fn detect(s: &Session, ix: &Index<'_>, f: &mut Findings) {
    let mut done: WireSet<&RequestId> = WireSet::default();
    let mut texts = AnswerTexts::new();
    for (_, req) in &ix.requests {
        let Some(id) = &req.id else { continue };
        if !done.insert(id) {
            continue;
        }
        for group in per_request(s, ix, id) {
            let Some((first, rest)) = group.split_first() else {
                continue;
            };
            for dup in rest {
                if !legitimate_replay(s, first, dup) {
                    let new = finding(s, f, &mut texts, id, first, dup);
                    f.add(s, new);
                }
            }
        }
    }
}

/// The answers to `id` grouped by the request they answer: when the client reused the ID,
/// each request has its own answer, so only answers that arrive while no newer request with
/// this ID was sent count against one request.
fn per_request<'a, 'b>(s: &Session, ix: &'b Index<'a>, id: &RequestId) -> Vec<&'b [Answer<'a>]> {
    let all = ix.answers.of(id);
    let sends = ix.sends(id);
    let mut groups = Vec::with_capacity(sends.len().max(1));
    let mut start = 0;
    // Answers before the second send belong to the first request (or to none: still the first).
    for &next in sends.iter().skip(1) {
        let at = ix.sent(s, next);
        let end = start + all[start..].partition_point(|a| a.seq < at);
        groups.push(&all[start..end]);
        start = end;
    }
    groups.push(&all[start..]);
    groups
}

/// The same event (same ID) replayed by a resume of the stream that first carried it: what
/// resumption is for.
fn legitimate_replay(s: &Session, first: &Answer<'_>, dup: &Answer<'_>) -> bool {
    let first_ev = first.event.map(|e| &s.streams[first.stream].events[e]);
    let dup_ev = dup.event.map(|e| &s.streams[dup.stream].events[e]);
    let same_id = first_ev.and_then(|e| e.id.as_ref()) == dup_ev.and_then(|e| e.id.as_ref())
        && first_ev.is_some_and(|e| e.id.is_some());
    same_id
        && s.streams[dup.stream]
            .resume
            .as_ref()
            .is_some_and(|r| r.continues == Some(first.stream))
}

/// Where an answer was delivered, as a person finds it.
fn answer_ref(s: &Session, a: &Answer<'_>) -> EventRef {
    match a.event {
        Some(e) => EventRef::of(s, a.stream, e),
        None => EventRef {
            stream: s.streams[a.stream].label(),
            exchange: s.streams[a.stream].exchange.to_string(),
            event_id: None,
            time: a.mark.time.rfc3339(),
            frame: a.mark.frame.frame,
        },
    }
}

fn finding(
    s: &Session,
    f: &Findings,
    texts: &mut AnswerTexts,
    id: &RequestId,
    first: &Answer<'_>,
    dup: &Answer<'_>,
) -> New {
    let dup_ev = dup.event.map(|e| &s.streams[dup.stream].events[e]);
    let same_payload = texts.same_answer(s, id, first, dup);
    let on_resume = Subject::Resume(dup.stream);
    let cause = f
        .find(s.idx, FindingKind::CrossSessionReplay, &on_resume)
        .or_else(|| f.find(s.idx, FindingKind::CrossNamespaceReplay, &on_resume));
    let dup_id = dup_ev.and_then(|e| e.id.clone());
    New {
        kind: FindingKind::DuplicateResponse,
        severity: INFO.severity,
        time: dup.mark,
        frames: vec![first.mark, dup.mark],
        streams: vec![first.stream, dup.stream],
        summary: format!(
            "request {} answered again on {}{} (first answered on {} at {})",
            id.label(),
            s.streams[dup.stream].label(),
            dup_id.map(|i| format!(" as event {i}")).unwrap_or_default(),
            s.streams[first.stream].label(),
            first.mark.time.clock_millis(),
        ),
        evidence: crate::Evidence::DuplicateResponse(Evidence {
            request_id: id.clone(),
            first: answer_ref(s, first),
            duplicate: answer_ref(s, dup),
            same_payload,
        }),
        caused_by: cause.into_iter().collect(),
        subject: Subject::Request(id.clone()),
    }
}

/// The evidence of a `duplicate_response`: the request answered twice, where each answer
/// arrived, and whether the two carry the same result.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// As on the wire: `7` and `"7"` differ.
    pub request_id: RequestId,
    /// Where the first answer arrived (an answer in a JSON body has no event ID).
    pub first: EventRef,
    /// Where the answer arrived again.
    pub duplicate: EventRef,
    /// The two answers carry the same result (or error), compared byte for byte as sent; none
    /// when the bytes of either were not kept.
    pub same_payload: Option<bool>,
}
