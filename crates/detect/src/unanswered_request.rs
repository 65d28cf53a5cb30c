//! `unanswered_request`: a request never answered although the session went on or the client
//! gave up. A request merely still young when the capture ended is only `info`.

use serde_json::json;

use super::{
    About, FindingKind, Findings, KindInfo, New, Severity, Subject, client_requests, rejected,
};
use mcpf_mcp::answers;
use mcpf_mcp::jsonrpc::Kind;
use mcpf_mcp::model::Session;

pub const INFO: KindInfo = KindInfo {
    kind: FindingKind::UnansweredRequest,
    severity: Severity::High,
    when: "a request never answered although the session went on or the client gave up (a request still young at capture end is info)",
    meaning: "No JSON-RPC response or error with this request's ID reached the client on any stream of the session.",
    why: "The caller hangs until its own timeout, and whether the tool ran is unknown: MCP cannot tell 'never arrived' from 'executed, response lost'.",
    fix: "See caused_by for where the answer went. Client: bound the wait, then re-issue the request with a new ID and an idempotency key; Server: send the response on the stream the client is reading, and keep it for replay.",
    evidence: &["request_id", "method", "waited_s"],
};

pub fn detect(s: &Session, f: &mut Findings) {
    let requests = client_requests(s);
    let cancelled: Vec<&mcpf_mcp::jsonrpc::RequestId> = s
        .streams
        .iter()
        .flat_map(|st| st.client_messages.iter())
        .filter(|m| m.kind == Kind::Notification)
        .filter_map(|m| m.mcp.cancels.as_ref())
        .collect();
    for (i, (si, req)) in requests.iter().enumerate() {
        let Some(id) = &req.id else { continue };
        if rejected(s, *si) || cancelled.contains(&id) {
            continue;
        }
        let st = &s.streams[*si];
        let next_same = requests[i + 1..]
            .iter()
            .find(|(_, m)| m.id.as_ref() == Some(id))
            .map(|(j, _)| s.streams[*j].opened);
        let answered = answers(s, id)
            .iter()
            .any(|a| a.mark >= st.opened && next_same.is_none_or(|n| a.mark < n));
        if answered || st.body_unknown {
            continue;
        }
        // Where its messages were last being delivered: its progress may have moved to a GET
        // stream after a fallback.
        let token = req.mcp.progress_token.as_ref();
        let mut channel = st.idx;
        let mut last_progress = None;
        for other in &s.streams {
            for (ei, ev) in other.events.iter().enumerate() {
                if ev.messages.iter().any(|m| {
                    m.kind == Kind::Notification
                        && token.is_some()
                        && m.mcp.progress_token.as_ref() == token
                }) && last_progress
                    .is_none_or(|(_, _, mark): (usize, usize, mcpf_model::Mark)| ev.mark > mark)
                {
                    last_progress = Some((other.idx, ei, ev.mark));
                    channel = other.idx;
                }
            }
        }
        let went_on = requests[i + 1..]
            .iter()
            .any(|(j, _)| s.streams[*j].opened > st.opened)
            || s.streams
                .iter()
                .any(|o| o.idx != st.idx && o.opened > st.opened);
        let gave_up = st.abandoned_by_client()
            || s.streams[channel].abandoned_by_client()
            || s.deleted.is_some();
        let young = !went_on && !gave_up;
        let waited = s.end.time.seconds_since(st.opened.time).max(0.0);
        let cause = f
            .find(
                s.idx,
                FindingKind::SkippedEvents,
                &Subject::Namespace(channel),
            )
            .or_else(|| {
                f.of(s.idx, FindingKind::CrossNamespaceReplay)
                    .find(|x| x.evidence["observed_in"] == s.streams[channel].label())
                    .map(|x| x.handle)
            });
        let what = match (&req.method, &req.mcp.tool) {
            (Some(m), Some(t)) => format!("{m} \"{t}\""),
            (Some(m), None) => m.to_string(),
            _ => "request".into(),
        };
        let progress = last_progress.map(|(ls, le, _)| {
            let ev = &s.streams[ls].events[le];
            let p = ev.messages.iter().find(|m| m.mcp.progress.is_some());
            json!({
                "stream": s.streams[ls].label(),
                "event_id": ev.id,
                "time": ev.mark.time.rfc3339(),
                "frame": ev.mark.frame.frame,
                "progress": p.and_then(|m| m.mcp.progress.clone()),
                "total": p.and_then(|m| m.mcp.total.clone()),
            })
        });
        f.add(
            About::Session(s),
            New {
                kind: FindingKind::UnansweredRequest,
                // A request the capture ended on may simply not be answered yet.
                severity: if young { Severity::Info } else { INFO.severity },
                session: s.idx,
                time: s.end,
                frames: vec![st.opened, s.end],
                streams: vec![st.idx, channel],
                summary: if young {
                    format!("request {} {what} still unanswered when the capture ended ({waited:.1} s)", id.label())
                } else {
                    format!("request {} {what} never answered (waited {waited:.1} s)", id.label())
                },
                evidence: json!({
                    "request_id": id.to_value(),
                    "method": req.method,
                    "tool": req.mcp.tool,
                    "waited_s": (waited * 1000.0).round() / 1000.0,
                    "sent": { "stream": st.label(), "exchange": st.exchange.to_string(), "time": st.opened.time.rfc3339(), "frame": st.opened.frame.frame },
                    "until": s.end.time.rfc3339(),
                    "last_progress": progress,
                    "client_gave_up": gave_up,
                    "session_went_on": went_on,
                }),
                caused_by: cause.into_iter().collect(),
                subject: Subject::Request(id.clone()),
            },
        );
    }
}
