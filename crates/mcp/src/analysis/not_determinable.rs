//! The findings a session's inputs cannot support: an input that recorded no bodies, or whose
//! events past a cap were counted and not kept, or that did not record the responses'
//! `Mcp-Session-Id`, leaves some findings "not determinable" (with why), never silently absent.
//!
//! The finding kinds are named by their strings here, as the detectors name them.

use crate::model::Session;

/// Findings that conclude from an event's absence: none is concluded for a session whose
/// events past a cap were counted and not held.
const EVENT_ABSENCE_KINDS: [&str; 3] = ["resume_gap", "skipped_events", "unanswered_request"];

/// Findings that need what an input did not record are "not determinable", never silently
/// absent.
pub(super) fn note_what_inputs_lack(s: &mut Session) {
    bodies_missing(s);
    events_unheld(s);
    session_header_missing(s);
}

/// Bodies the input did not record, or whose content coding could not be undone: the findings
/// that read what the messages said cannot be concluded.
fn bodies_missing(s: &mut Session) {
    let unknown = s.streams.iter().filter(|st| st.body_unknown).count();
    let not_decoded = s.streams.iter().filter(|st| st.body_not_decoded).count();
    if unknown > 0 {
        let total = s.streams.len();
        let why = match unknown - not_decoded {
            0 => format!(
                "the content coding of {not_decoded} of {total} exchanges' bodies could not be undone"
            ),
            n if not_decoded == 0 => {
                format!("the input recorded no body or SSE events for {n} of {total} exchanges")
            }
            n => format!(
                "the input recorded no body or SSE events for {n} of {total} exchanges, and the content coding of {not_decoded} more could not be undone"
            ),
        };
        for kind in [
            "cross_namespace_replay",
            "event_id_reset",
            "resume_gap",
            "duplicate_response",
            "request_id_reused",
            "skipped_events",
            "unanswered_request",
            "retry_without_idempotency_key",
        ] {
            s.not_determinable.push((kind, why.clone()));
        }
    }
}

/// Events past the session's cap were counted, not kept: nothing that concludes from an event's
/// absence can be.
fn events_unheld(s: &mut Session) {
    let unheld: u64 = s.streams.iter().map(|st| st.events_unheld).sum();
    if unheld > 0 {
        let why = format!(
            "{unheld} events arrived after the session held as many as the cap allows (--max-session-events); they were counted, not kept"
        );
        for kind in EVENT_ABSENCE_KINDS {
            s.not_determinable.push((kind, why.clone()));
        }
    }
}

/// The input did not record the responses' `Mcp-Session-Id`: whether the server kept or changed
/// the session's ID is not known.
fn session_header_missing(s: &mut Session) {
    let resumes_without_header = s
        .streams
        .iter()
        .filter(|st| st.resume.is_some() && !st.session_header_known)
        .count();
    if resumes_without_header > 0 || s.streams.iter().any(|st| !st.session_header_known) {
        let why = "the input did not record the responses' Mcp-Session-Id".to_string();
        s.not_determinable
            .push(("session_not_reaffirmed", why.clone()));
        s.not_determinable.push(("session_id_changed", why));
    }
}
