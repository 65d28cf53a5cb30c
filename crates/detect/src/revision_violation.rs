//! `revision_violation`: the transport used in a way the session's own revision does not allow.
//! Each session is judged by the revision it negotiated (`docs/revisions.md`): a batched POST
//! body outside 2025-03-26; under 2026-07-28, which removed sessions and resumability, a server
//! that still mints `Mcp-Session-Id` or answers a `Last-Event-ID` with a replay.

use super::{FindingKind, Findings, KindInfo, New, Severity};
use mcpf_mcp::model::{Session, Stream, StreamTransport, Transport};
use mcpf_mcp::revision::{NO_BATCHING, RevisionFrom, STATELESS, STREAMABLE_HTTP, VERSION_HEADER};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::RevisionViolation,
    severity: Severity::Medium,
    when: "the transport is used in a way the session's negotiated revision does not allow: a batched POST body outside 2025-03-26; from 2025-06-18 a request after initialize without the negotiated MCP-Protocol-Version header, or with another; a session ID minted, or a Last-Event-ID answered with a replay, under 2026-07-28",
    meaning: "One side follows another revision's rules than the one the session negotiated (its initialize result, else its MCP-Protocol-Version header, else 2025-03-26).",
    why: "A peer of the negotiated revision does not expect it: a batch is one malformed message to a 2025-06-18 server; under 2026-07-28 a client neither keeps a session ID nor resumes, so a server relying on either loses state or replays into a stream nobody asked to resume.",
    fix: "Make both sides speak the negotiated revision: send one message per POST, and MCP-Protocol-Version with the negotiated date on every request after initialize, from 2025-06-18 on; from 2026-07-28 on, do not mint or echo session IDs, ignore Last-Event-ID and answer GET and DELETE with 405, and have the client re-issue a lost request with a new ID.",
    requires: &[],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    let rev = &s.revision;
    for st in &s.streams {
        if st.client_batch && !rev.allows_batching() && rev.at_least(STREAMABLE_HTTP) {
            let what = format!(
                "a POST body of {} JSON-RPC messages in one array (batching is in 2025-03-26 only; {NO_BATCHING} removed it)",
                st.client_messages.len()
            );
            f.add(s, finding(s, st, Rule::Batch, what));
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
            f.add(s, finding(s, st, Rule::LastEventIdHonoured, what));
        }
    }
    version_header(s, f);
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
        f.add(s, finding(s, first, Rule::SessionIdMinted, what));
    }
}

/// From 2025-06-18 the client sends `MCP-Protocol-Version: <negotiated>` on every request after
/// `initialize`: one finding for the requests without it, one for those naming another revision.
/// Only when the revision was negotiated by `initialize` (else the header is where it was read
/// from) and the input records the header.
fn version_header(s: &Session, f: &mut Findings) {
    let rev = &s.revision;
    let Some(init) = s.initializes.first() else {
        return;
    };
    // The header is the Streamable HTTP transport's; the HTTP+SSE one has none.
    if s.transport == Transport::LegacySse
        || rev.from != RevisionFrom::Initialize
        || !rev.at_least(VERSION_HEADER)
        || rev.at_least(STATELESS)
    {
        return;
    }
    let later = || {
        s.streams.iter().filter(|st| {
            // A request with bytes missing may have lost the header with them, and one whose
            // head was not captured (a response alone: no method) shows no header at all.
            st.version_header_known
                && !st.gap
                && !st.method.is_empty()
                && st.opened.time > init.time
                && !st.is_initialize()
        })
    };
    let missing: Vec<&Stream> = later()
        .filter(|st| st.protocol_version_header.is_none())
        .collect();
    let other: Vec<&Stream> = later()
        .filter(|st| {
            st.protocol_version_header
                .as_deref()
                .is_some_and(|v| v.trim() != &*rev.date)
        })
        .collect();
    if let [first, ..] = missing.as_slice() {
        let what = format!(
            "{} request{} after initialize sent no MCP-Protocol-Version header ({VERSION_HEADER} on: the client sends the negotiated {} on every request)",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            rev.date
        );
        f.add(
            s,
            finding(s, first, Rule::ProtocolVersionHeaderMissing, what),
        );
    }
    if let [first, ..] = other.as_slice() {
        let what = format!(
            "{} request{} after initialize sent MCP-Protocol-Version {:?}, not the negotiated {}",
            other.len(),
            if other.len() == 1 { "" } else { "s" },
            first.protocol_version_header.as_deref().unwrap_or(""),
            rev.date
        );
        f.add(
            s,
            finding(s, first, Rule::ProtocolVersionHeaderDiffers, what),
        );
    }
}

/// A resume answered with an event stream that carried events.
fn replayed(st: &Stream) -> bool {
    st.status.is_some_and(|c| (200..300).contains(&c)) && st.event_stream && !st.events.is_empty()
}

fn finding(s: &Session, st: &Stream, rule: Rule, what: String) -> New {
    let at = if st.transport == StreamTransport::Get || rule != Rule::Batch {
        st.response_mark.unwrap_or(st.opened)
    } else {
        st.opened
    };
    super::revision_rule(s, st, at, (rule, what), |b| {
        crate::Evidence::RevisionViolation(Evidence {
            rule: b.rule,
            revision: b.revision,
            stream: b.stream,
            time: b.time,
            frame: b.frame,
            revision_from: s.revision.from.name().to_string(),
        })
    })
}

/// The evidence of a `revision_violation`: the rule of the session's revision a stream broke,
/// and where.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    pub rule: Rule,
    /// The session's revision, by its date.
    pub revision: String,
    pub stream: String,
    pub time: String,
    pub frame: u64,
    /// Where the revision was read: `initialize`, `header` or `default`.
    pub revision_from: String,
}

/// The rules of a revision a session can break (docs/revisions.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// A JSON array POST body outside 2025-03-26.
    Batch,
    /// A `Last-Event-ID` answered with a replay under 2026-07-28.
    LastEventIdHonoured,
    /// A response carried `Mcp-Session-Id` under 2026-07-28.
    SessionIdMinted,
    /// A request after `initialize` without `MCP-Protocol-Version`, from 2025-06-18.
    ProtocolVersionHeaderMissing,
    /// A request after `initialize` naming another revision than the negotiated one.
    ProtocolVersionHeaderDiffers,
}
