//! `cursor_dropped`: a GET that reconnects without `Last-Event-ID` although the stream it
//! replaces was lost (not closed by the client) after the client had received an event ID on
//! it. The client threw away its cursor, so whatever the server sent in between is gone. Two
//! shapes: the standalone stream opened again from scratch, and a resume of a request's stream
//! lost in turn (typescript-sdk #2499: a resumed stream that dies before it carries a new ID
//! leaves the client without the cursor it resumed from; its next GET has none, and with the
//! standalone stream open the server refuses it with 409). An empty `id:` field last on the
//! lost stream resets the cursor, and then no ID is expected.

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use crate::event_id_collision::At;
use mcpf_http::Outcome;
use mcpf_mcp::jsonrpc::{Kind, RequestId};
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
    standalone_reopened(s, f);
    resume_lost(s, f);
}

/// The standalone stream lost and opened again without the cursor it had.
fn standalone_reopened(s: &Session, f: &mut Findings) {
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
                    resumed_stream: None,
                    attempts: 1,
                    statuses: again.status.into_iter().collect(),
                    unanswered: Vec::new(),
                }),
                caused_by: Vec::new(),
                subject: Subject::Stream(again.idx),
            },
        );
    }
}

/// A resume of a request's stream lost in turn, and the client's next GET sent without the
/// cursor: the last ID the resume delivered, or the one it resumed from when it delivered none.
fn resume_lost(s: &Session, f: &mut Findings) {
    for lost in &s.streams {
        let Some(resume) = lost.resume.as_ref().filter(|_| !standalone(s, lost)) else {
            continue;
        };
        if lost.gap || lost.body_unknown || lost.method.is_empty() {
            continue;
        }
        let Some(ended) = lost.ended.filter(|_| lost_not_left(lost)) else {
            continue;
        };
        let cursor = lost
            .events
            .iter()
            .rev()
            .find_map(|e| e.id.as_deref())
            .unwrap_or(&resume.last_event_id);
        if cursor.is_empty() || delivered_answers(s, lost) {
            continue;
        }
        let attempts = reconnects(s, ended);
        let Some(first) = attempts.first().copied() else {
            continue;
        };
        if !(standalone_open_at(s, first) || first.status == Some(409)) {
            continue;
        }
        f.add(s, resume_finding(s, lost, cursor, ended, &attempts));
    }
}

fn resume_finding(
    s: &Session,
    lost: &Stream,
    cursor: &str,
    ended: mcpf_model::Mark,
    attempts: &[&Stream],
) -> New {
    let first = attempts[0];
    let resumed = lost
        .resume
        .as_ref()
        .and_then(|r| r.continues)
        .map(|c| &s.streams[c]);
    let unanswered = resumed.map(|c| stranded(s, c)).unwrap_or_default();
    let statuses: Vec<u16> = attempts.iter().filter_map(|a| a.status).collect();
    let what = match resumed {
        Some(c) => format!("{}, the resume of {},", lost.label(), c.label()),
        None => format!("{},", lost.label()),
    };
    let labels: Vec<String> = attempts.iter().map(|a| a.label()).collect();
    let tries = format!("{} reconnected", labels.join(", "));
    let answered = if statuses.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = statuses.iter().map(u16::to_string).collect();
        format!(" (answered {})", list.join(", "))
    };
    let stranded_text = match unanswered.as_slice() {
        [] => String::new(),
        ids => format!(
            "; the answer to request {} never reached the client",
            ids.join(", ")
        ),
    };
    let mut frames = vec![ended];
    frames.extend(attempts.iter().map(|a| a.opened));
    let mut streams = vec![lost.idx];
    streams.extend(resumed.map(|c| c.idx));
    streams.extend(attempts.iter().map(|a| a.idx));
    New {
        kind: FindingKind::CursorDropped,
        // What the lost cursor cost: a request left without its answer is the incident.
        severity: if unanswered.is_empty() {
            INFO.severity
        } else {
            Severity::High
        },
        time: first.opened,
        frames,
        streams,
        summary: format!(
            "{tries} without Last-Event-ID{answered} after {what} was lost holding event {cursor}: nothing sent since can be replayed{stranded_text}",
        ),
        evidence: crate::Evidence::CursorDropped(Evidence {
            stream: first.label(),
            last_seen_event_id: cursor.to_string(),
            lost_stream: lost.label(),
            lost_at: At::of(ended),
            reconnected_at: At::of(first.opened),
            resumed_stream: resumed.map(Stream::label),
            attempts: attempts.len() as u32,
            statuses,
            unanswered,
        }),
        caused_by: Vec::new(),
        subject: Subject::Stream(first.idx),
    }
}

/// The GETs sent after `ended` without `Last-Event-ID`, up to the first that carries one, a
/// re-initialization or a request of any other kind: the client's attempts to reconnect.
fn reconnects(s: &Session, ended: mcpf_model::Mark) -> Vec<&Stream> {
    let mut later: Vec<&Stream> = s
        .streams
        .iter()
        .filter(|st| !st.method.is_empty() && s.seq(st.opened) > s.seq(ended))
        .collect();
    later.sort_by_key(|st| s.seq(st.opened));
    later
        .into_iter()
        .take_while(|st| st.transport == StreamTransport::Get && st.resume.is_none())
        .collect()
}

/// The session's standalone event stream was open at `g`'s request: `g` is not its first
/// opening but another GET beside it.
fn standalone_open_at(s: &Session, g: &Stream) -> bool {
    let at = s.seq(g.opened);
    s.streams.iter().any(|st| {
        st.idx != g.idx
            && st.transport == StreamTransport::Get
            && st.event_stream
            && st.resume.is_none()
            && s.seq(st.opened) < at
            && st.ended.is_none_or(|e| s.seq(e) > at)
    })
}

/// The lost resume, or the stream it continues, delivered the answers to every request that
/// stream carried: the client had what it waited for and had no reason to reconnect.
fn delivered_answers(s: &Session, lost: &Stream) -> bool {
    let Some(c) = lost.resume.as_ref().and_then(|r| r.continues) else {
        return false;
    };
    let c = &s.streams[c];
    let answered: Vec<&RequestId> = [c, lost]
        .iter()
        .flat_map(|st| st.events.iter().flat_map(|e| e.messages.iter()))
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        .filter_map(|m| m.id.as_ref())
        .collect();
    let mut asked = c.request_ids().peekable();
    asked.peek().is_some() && asked.all(|id| answered.contains(&id))
}

/// The requests of `c` whose answer no stream of the session delivered, when every stream was
/// captured whole (an answer could otherwise hide in what is missing).
fn stranded(s: &Session, c: &Stream) -> Vec<String> {
    if s.streams.iter().any(|st| st.gap || st.body_unknown) || s.has_unheld_events() {
        return Vec::new();
    }
    let answered: Vec<&RequestId> = s
        .streams
        .iter()
        .flat_map(|st| {
            st.response_messages
                .iter()
                .chain(st.events.iter().flat_map(|e| e.messages.iter()))
        })
        .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
        .filter_map(|m| m.id.as_ref())
        .collect();
    c.request_ids()
        .filter(|id| !answered.contains(id))
        .map(RequestId::to_string)
        .collect()
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
    /// When the lost stream was a resume: the request's stream it resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_stream: Option<String>,
    /// GETs sent without `Last-Event-ID` before the client stopped trying (or sent one).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Their statuses, in order (409: the server refused a second standalone stream).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<u16>,
    /// Requests on the resumed stream whose answer no stream of the session delivered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<String>,
}

fn one() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_dropped_cursor_is_read_back_from_the_report() {
        let text = r#"{"stream":"get:s6","last_seen_event_id":"g-2","lost_stream":"get:s4","lost_at":{"time":"2026-11-30T04:36:07.2Z","frame":40},"reconnected_at":{"time":"2026-11-30T04:36:08.9Z","frame":52},"attempts":1}"#;
        let e: Evidence = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }
}
