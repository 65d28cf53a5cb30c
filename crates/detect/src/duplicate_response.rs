//! `duplicate_response`: a request ID already answered in the session was answered again — the
//! visible symptom of the seed incident (a replayed result for an invocation the client had
//! already resolved).

use serde_json::json;

use super::{
    About, FindingKind, Findings, KindInfo, New, Severity, Subject, client_requests, event_ref,
};
use mcpf_mcp::answers;
use mcpf_mcp::model::Session;

pub const INFO: KindInfo = KindInfo {
    kind: FindingKind::DuplicateResponse,
    severity: Severity::High,
    when: "a second response for a request ID already answered in the session",
    meaning: "The client received two JSON-RPC responses for the same request. The only legitimate case is a resume of the same stream replaying with the same event ID; anything else is a replay from the wrong place or a broadcast the spec forbids.",
    why: "A client that matches responses by ID either drops the second one (and the request it really answers stays pending) or delivers it twice (a tool result applied twice).",
    fix: "Find the cause in caused_by (usually a cross-namespace replay). Server: never send a response on two streams; replay only the stream named by Last-Event-ID. Client: ignore a response for an already-resolved ID and log it.",
    evidence: &["request_id", "first", "duplicate", "same_payload"],
};

pub fn detect(s: &Session, f: &mut Findings) {
    let requests = client_requests(s);
    let mut done: Vec<mcpf_mcp::jsonrpc::RequestId> = Vec::new();
    for (_, req) in &requests {
        let Some(id) = req.id.clone() else { continue };
        if done.contains(&id) {
            continue;
        }
        done.push(id.clone());
        let all = answers(s, &id);
        // When the client reused the ID, each request has its own answer: only answers that
        // arrive while no newer request with this ID was sent count against one request.
        let sends: Vec<mcpf_model::Mark> = requests
            .iter()
            .filter(|(_, m)| m.id.as_ref() == Some(&id))
            .map(|(st, _)| s.streams[*st].opened)
            .collect();
        let mut groups: Vec<Vec<&mcpf_mcp::Answer<'_>>> = vec![Vec::new(); sends.len().max(1)];
        for a in &all {
            let g = sends.iter().rposition(|m| *m <= a.mark).unwrap_or(0);
            groups[g].push(a);
        }
        for group in groups {
            let Some((first, rest)) = group.split_first() else {
                continue;
            };
            for dup in rest {
                let first_ev = first.event.map(|e| &s.streams[first.stream].events[e]);
                let dup_ev = dup.event.map(|e| &s.streams[dup.stream].events[e]);
                let same_id = first_ev.and_then(|e| e.id.as_ref())
                    == dup_ev.and_then(|e| e.id.as_ref())
                    && first_ev.is_some_and(|e| e.id.is_some());
                let legit_replay = same_id
                    && s.streams[dup.stream]
                        .resume
                        .as_ref()
                        .is_some_and(|r| r.continues == Some(first.stream));
                if legit_replay {
                    continue;
                }
                let same_payload = match (first_ev, dup_ev) {
                    (Some(a), Some(b)) => a.data_hash == b.data_hash,
                    _ => first.message.mcp.result_hash == dup.message.mcp.result_hash,
                };
                let cause = f.find(
                    s.idx,
                    FindingKind::CrossNamespaceReplay,
                    &Subject::Resume(dup.stream),
                );
                let where_ = |a: &mcpf_mcp::Answer<'_>| match a.event {
                    Some(e) => event_ref(s, a.stream, e),
                    None => json!({
                        "stream": s.streams[a.stream].label(),
                        "exchange": s.streams[a.stream].exchange.to_string(),
                        "event_id": null,
                        "time": a.mark.time.rfc3339(),
                        "frame": a.mark.frame.frame,
                    }),
                };
                let dup_id = dup_ev.and_then(|e| e.id.clone());
                f.add(
                    About::Session(s),
                    New {
                        kind: FindingKind::DuplicateResponse,
                        severity: INFO.severity,
                        session: s.idx,
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
                            "first": where_(first),
                            "duplicate": where_(dup),
                            "same_payload": same_payload,
                        }),
                        caused_by: cause.into_iter().collect(),
                        subject: Subject::Request(id.clone()),
                    },
                );
            }
        }
    }
}
