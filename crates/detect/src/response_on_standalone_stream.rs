//! `response_on_standalone_stream`: a JSON-RPC response minted on a standalone GET stream. From
//! 2025-03-26 "the server MUST NOT send a JSON-RPC response on the stream unless resuming a
//! stream associated with a previous client request": a GET that is no resume, or that resumes
//! another GET, carries requests and notifications only. A response replayed there from another
//! stream is `cross_namespace_replay`'s, not this; the legacy HTTP+SSE transport, whose answers
//! all come on its GET stream, has none.

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::jsonrpc::{Kind, RequestId};
use mcpf_mcp::model::{Namespace, Session, Stream, StreamTransport, Transport};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::ResponseOnStandaloneStream,
    severity: Severity::Medium,
    when: "a JSON-RPC response minted on a standalone GET stream that is not resuming a request's stream",
    meaning: "The server answered a request on the GET stream instead of on the request's own POST response (Streamable HTTP, 2025-03-26 on).",
    why: "A client reading the answer on the POST stream waits for it there forever; one that takes it from the GET stream relies on behaviour the spec forbids and other servers do not have.",
    fix: "Server: send each response on the stream of its request (or its resume); keep the GET stream for server-initiated requests and notifications.",
    requires: &[],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    if s.transport == Transport::LegacySse || !s.revision.has_sessions_and_resumption() {
        return;
    }
    for st in s.streams.iter().filter(|st| standalone(s, st)) {
        let minted = st
            .events
            .iter()
            .filter(|e| e.namespace == Namespace::Stream(st.idx));
        let responses: Vec<_> = minted
            .flat_map(|e| e.messages.iter().map(move |m| (e, m)))
            .filter(|(_, m)| matches!(m.kind, Kind::Response | Kind::Error) && m.id.is_some())
            .collect();
        let Some(&(ev, m)) = responses.first() else {
            continue;
        };
        // Responses and errors with an ID only: it has one.
        let Some(id) = &m.id else { continue };
        let label = id.label();
        f.add(
            s,
            New {
                kind: FindingKind::ResponseOnStandaloneStream,
                severity: INFO.severity,
                time: ev.mark,
                frames: vec![st.opened, ev.mark],
                streams: vec![st.idx],
                summary: format!(
                    "response #{label} sent on the standalone stream {}{}: a GET stream carries no answers",
                    st.label(),
                    if responses.len() > 1 { format!(" ({} responses there)", responses.len()) } else { String::new() }
                ),
                evidence: crate::Evidence::ResponseOnStandaloneStream(Evidence {
                    request_id: id.clone(),
                    stream: st.label(),
                    event_id: ev.id.as_deref().map(str::to_string),
                    time: ev.mark.time.rfc3339(),
                    frame: ev.mark.frame.frame,
                    responses: responses.len() as u64,
                }),
                caused_by: Vec::new(),
                subject: Subject::Stream(st.idx),
            },
        );
    }
}

/// A GET stream that is no resume, or resumes another GET (not a request's stream).
fn standalone(s: &Session, st: &Stream) -> bool {
    // Its request and the whole response in the input: a GET whose request was lost is only
    // guessed to be one, and a gap can misplace what follows it.
    st.transport == StreamTransport::Get
        && st.event_stream
        && !st.method.is_empty()
        && !st.gap
        && !st.body_unknown
        && match st.resume.as_ref() {
            None => true,
            Some(r) => r
                .continues
                .is_some_and(|c| s.streams[c].transport == StreamTransport::Get),
        }
}

/// The evidence of a `response_on_standalone_stream`: the first response minted on a standalone
/// GET stream, the event that carried it, and how many responses the stream carried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The ID of the request it answers.
    pub request_id: RequestId,
    /// The GET stream.
    pub stream: String,
    /// The ID of the event that carried it, if it had one.
    pub event_id: Option<String>,
    pub time: String,
    pub frame: u64,
    /// Responses (and errors) minted on the stream.
    pub responses: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_response_on_a_get_is_read_back_from_the_report() {
        for text in [
            r#"{"request_id":2,"stream":"get:s4","event_id":"g-1","time":"2026-11-30T04:36:07.2Z","frame":31,"responses":1}"#,
            r#"{"request_id":"a","stream":"get:s4","event_id":null,"time":"2026-11-30T04:36:07.2Z","frame":31,"responses":3}"#,
        ] {
            let e: Evidence = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
    }
}
