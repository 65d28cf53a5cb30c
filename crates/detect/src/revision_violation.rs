//! `revision_violation`: the transport used in a way the session's own revision does not allow.
//! Each session is judged by the revision it negotiated (`docs/revisions.md`): a batched POST
//! body outside 2025-03-26; under 2026-07-28, which removed sessions and resumability, a server
//! that still mints `Mcp-Session-Id` or answers a `Last-Event-ID` with a replay.

use serde_json::json;

use super::{FindingKind, Findings, KindInfo, New, Severity};
use mcpf_mcp::model::{Session, Stream, StreamTransport};
use mcpf_mcp::revision::{NO_BATCHING, STATELESS, STREAMABLE_HTTP};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::RevisionViolation,
    severity: Severity::Medium,
    when: "the transport is used in a way the session's negotiated revision does not allow: a batched POST body outside 2025-03-26; a session ID minted, or a Last-Event-ID answered with a replay, under 2026-07-28",
    meaning: "One side follows another revision's rules than the one the session negotiated (its initialize result, else its MCP-Protocol-Version header, else 2025-03-26).",
    why: "A peer of the negotiated revision does not expect it: a batch is one malformed message to a 2025-06-18 server; under 2026-07-28 a client neither keeps a session ID nor resumes, so a server relying on either loses state or replays into a stream nobody asked to resume.",
    fix: "Make both sides speak the negotiated revision: send one message per POST from 2025-06-18 on; from 2026-07-28 on, do not mint or echo session IDs, ignore Last-Event-ID and answer GET and DELETE with 405, and have the client re-issue a lost request with a new ID.",
    evidence: &[
        "rule",
        "revision",
        "revision_from",
        "stream",
        "time",
        "frame",
    ],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    let rev = &s.revision;
    for st in &s.streams {
        if st.client_batch && !rev.allows_batching() && rev.at_least(STREAMABLE_HTTP) {
            let what = format!(
                "a POST body of {} JSON-RPC messages in one array (batching is in 2025-03-26 only; {NO_BATCHING} removed it)",
                st.client_messages.len()
            );
            f.add(s, finding(s, st, "batch", what));
        }
        if let Some(r) = st
            .resume
            .as_ref()
            .filter(|_| rev.at_least(STATELESS) && replayed(st))
        {
            let what = format!(
                "the server answered Last-Event-ID {:?} with a replay of {} events ({STATELESS} removed resumability: the client must re-issue the request with a new ID)",
                r.last_event_id,
                st.events.len()
            );
            f.add(s, finding(s, st, "last_event_id_honoured", what));
        }
    }
    // One finding for a server that mints session IDs, however many responses carry one.
    let minted: Vec<&Stream> = s
        .streams
        .iter()
        .filter(|st| rev.at_least(STATELESS) && st.session_id_received.is_some())
        .collect();
    if let [first, ..] = minted.as_slice() {
        let what = format!(
            "the server minted or echoed Mcp-Session-Id {:?} on {} response{} ({STATELESS} has no sessions)",
            first.session_id_received.as_deref().unwrap_or(""),
            minted.len(),
            if minted.len() == 1 { "" } else { "s" }
        );
        f.add(s, finding(s, first, "session_id_minted", what));
    }
}

/// A resume answered with an event stream that carried events.
fn replayed(st: &Stream) -> bool {
    st.status.is_some_and(|c| (200..300).contains(&c)) && st.event_stream && !st.events.is_empty()
}

fn finding(s: &Session, st: &Stream, rule: &str, what: String) -> New {
    let at = if st.transport == StreamTransport::Get || rule != "batch" {
        st.response_mark.unwrap_or(st.opened)
    } else {
        st.opened
    };
    let from = json!({ "revision_from": s.revision.from.name() });
    super::revision_rule(
        s,
        st,
        FindingKind::RevisionViolation,
        at,
        (rule, what),
        from,
    )
}
