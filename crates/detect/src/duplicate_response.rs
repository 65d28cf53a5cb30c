//! `duplicate_response`: a request ID already answered in the session was answered again — the
//! visible symptom of the seed incident (a replayed result for an invocation the client had
//! already resolved).

use serde_json::{Value, json};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject, client_requests, event_ref};
use mcpf_mcp::jsonrpc::{Message, RequestId};
use mcpf_mcp::model::{Session, StreamIdx};
use mcpf_mcp::{Answer, answers, same_answer};
use mcpf_model::Mark;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::DuplicateResponse,
    severity: Severity::High,
    when: "a second response for a request ID already answered in the session",
    meaning: "The client received two JSON-RPC responses for the same request. The only legitimate case is a resume of the same stream replaying with the same event ID; anything else is a replay from the wrong place or a broadcast the spec forbids.",
    why: "A client that matches responses by ID either drops the second one (and the request it really answers stays pending) or delivers it twice (a tool result applied twice).",
    fix: "Find the cause in caused_by (usually a cross-namespace replay). Server: never send a response on two streams; replay only the stream named by Last-Event-ID. Client: ignore a response for an already-resolved ID and log it.",
    evidence: &["request_id", "first", "duplicate", "same_payload"],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    let requests = client_requests(s);
    let mut done: Vec<RequestId> = Vec::new();
    for (_, req) in &requests {
        let Some(id) = req.id.clone() else { continue };
        if done.contains(&id) {
            continue;
        }
        done.push(id.clone());
        let all = answers(s, &id);
        for group in per_request(s, &requests, &id, &all) {
            let Some((first, rest)) = group.split_first() else {
                continue;
            };
            for dup in rest {
                if !legitimate_replay(s, first, dup) {
                    f.add(s, finding(s, f, &id, first, dup));
                }
            }
        }
    }
}

/// The answers to `id` grouped by the request they answer: when the client reused the ID,
/// each request has its own answer, so only answers that arrive while no newer request with
/// this ID was sent count against one request.
fn per_request<'a, 'b>(
    s: &Session,
    requests: &[(StreamIdx, &Message)],
    id: &RequestId,
    all: &'b [Answer<'a>],
) -> Vec<Vec<&'b Answer<'a>>> {
    let sends: Vec<Mark> = requests
        .iter()
        .filter(|(_, m)| m.id.as_ref() == Some(id))
        .map(|(st, _)| s.streams[*st].opened)
        .collect();
    let mut groups: Vec<Vec<&Answer<'_>>> = vec![Vec::new(); sends.len().max(1)];
    for a in all {
        let g = sends.iter().rposition(|m| *m <= a.mark).unwrap_or(0);
        groups[g].push(a);
    }
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
fn answer_ref(s: &Session, a: &Answer<'_>) -> Value {
    match a.event {
        Some(e) => event_ref(s, a.stream, e),
        None => json!({
            "stream": s.streams[a.stream].label(),
            "exchange": s.streams[a.stream].exchange.to_string(),
            "event_id": null,
            "time": a.mark.time.rfc3339(),
            "frame": a.mark.frame.frame,
        }),
    }
}

fn finding(s: &Session, f: &Findings, id: &RequestId, first: &Answer<'_>, dup: &Answer<'_>) -> New {
    let dup_ev = dup.event.map(|e| &s.streams[dup.stream].events[e]);
    let same_payload = same_answer(s, id, first, dup);
    let cause = f.find(
        s.idx,
        FindingKind::CrossNamespaceReplay,
        &Subject::Resume(dup.stream),
    );
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
        evidence: json!({
            "request_id": id.to_value(),
            "first": answer_ref(s, first),
            "duplicate": answer_ref(s, dup),
            "same_payload": same_payload,
        }),
        caused_by: cause.into_iter().collect(),
        subject: Subject::Request(id.clone()),
    }
}
