//! `cursor_dropped`: a GET that reconnects the session's event stream without `Last-Event-ID`
//! although the stream it replaces was lost (not closed by the client) after delivering event
//! IDs. The client threw away its cursor, so whatever the server sent in between is gone
//! (typescript-sdk #2499). An empty `id:` field last on the lost stream resets the cursor, and
//! then no ID is expected.

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use crate::event_id_collision::At;
use mcpf_http::Outcome;
use mcpf_mcp::model::{Session, Stream, StreamTransport, Transport};
use mcpf_model::Direction;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::CursorDropped,
    severity: Severity::Medium,
    when: "a reconnecting GET without Last-Event-ID although the client had received event IDs on the stream it lost",
    meaning: "The session's event stream was lost and opened again from scratch: the client did not send the last event ID it had, so the server cannot replay what it sent meanwhile.",
    why: "Events the server sent while the client was away (notifications, server requests) are lost without a trace; with resumption the server would have replayed them.",
    fix: "Client: keep the last event ID of each stream and send it as Last-Event-ID when reconnecting (the SDKs' reconnect does, except the TypeScript SDK before the fix of #2499).",
    requires: &[],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    if s.transport == Transport::LegacySse || !s.revision.has_sessions_and_resumption() {
        return;
    }
    // The session's standalone event stream, each time it was opened (a GET resuming a
    // request's POST stream is another stream), whole in the input: a gap can hide the header
    // or the event that would clear it.
    let gets: Vec<&Stream> = s
        .streams
        .iter()
        .filter(|st| st.transport == StreamTransport::Get && st.event_stream)
        .filter(|st| standalone(s, st))
        .filter(|st| !st.gap && !st.body_unknown && !st.method.is_empty())
        .collect();
    for pair in gets.windows(2) {
        let (lost, again) = (pair[0], pair[1]);
        let Some(ended) = lost.ended.filter(|_| lost_not_left(lost)) else {
            continue;
        };
        // The cursor the client held: the last ID field it received (an empty one resets it).
        let Some(last) = lost.events.iter().rev().find_map(|e| e.id.as_deref()) else {
            continue;
        };
        if last.is_empty() || again.resume.is_some() || s.seq(again.opened) < s.seq(ended) {
            continue;
        }
        if s.initializes
            .iter()
            .any(|m| s.seq(*m) > s.seq(ended) && s.seq(*m) < s.seq(again.opened))
        {
            continue;
        }
        f.add(
            s,
            New {
                kind: FindingKind::CursorDropped,
                severity: INFO.severity,
                time: again.opened,
                frames: vec![ended, again.opened],
                streams: vec![lost.idx, again.idx],
                summary: format!(
                    "{} reconnected without Last-Event-ID after {} was lost at event {last}: events sent in between cannot be replayed",
                    again.label(),
                    lost.label()
                ),
                evidence: crate::Evidence::CursorDropped(Evidence {
                    stream: again.label(),
                    last_seen_event_id: last.to_string(),
                    lost_stream: lost.label(),
                    lost_at: At::of(ended),
                    reconnected_at: At::of(again.opened),
                }),
                caused_by: Vec::new(),
                subject: Subject::Stream(again.idx),
            },
        );
    }
}

/// Not a resume of a request's stream: no `Last-Event-ID`, or one that continues a GET.
fn standalone(s: &Session, st: &Stream) -> bool {
    st.resume.as_ref().is_none_or(|r| {
        r.continues
            .is_none_or(|c| s.streams[c].transport == StreamTransport::Get)
    })
}

/// The stream was lost, not left: the server closed it, or the connection broke, before the
/// session ended; the client closing it itself is its choice.
fn lost_not_left(st: &Stream) -> bool {
    st.closed_by != Some(Direction::ClientToServer)
        && matches!(
            st.outcome,
            Some(
                Outcome::ClosedEarly
                    | Outcome::Reset
                    | Outcome::StreamReset
                    | Outcome::Refused
                    | Outcome::Complete
            )
        )
}

/// The evidence of a `cursor_dropped`: the stream the client lost with an event ID last
/// received, and the one it reconnected without sending it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The reconnecting GET.
    pub stream: String,
    /// The cursor the client held: the last event ID the lost stream delivered.
    pub last_seen_event_id: String,
    pub lost_stream: String,
    /// When the lost stream ended.
    pub lost_at: At,
    /// When the GET reconnected.
    pub reconnected_at: At,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_dropped_cursor_is_read_back_from_the_report() {
        let text = r#"{"stream":"get:s6","last_seen_event_id":"g-2","lost_stream":"get:s4","lost_at":{"time":"2026-11-30T04:36:07.2Z","frame":40},"reconnected_at":{"time":"2026-11-30T04:36:08.9Z","frame":52}}"#;
        let e: Evidence = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }
}
