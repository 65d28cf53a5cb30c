//! What a session's inputs did not record, or a cap left out: an input that recorded no bodies,
//! events past a cap counted and not kept, responses' `Mcp-Session-Id` not recorded. Each is a
//! [`Lack`] of the session; the detect stage says which findings it leaves not determinable.

use crate::model::{Lack, Session};

/// Notes what the inputs lack for the session.
pub(super) fn note_what_inputs_lack(s: &mut Session) {
    bodies_missing(s);
    events_unheld(s);
    exchanges_unheld(s);
    session_header_missing(s);
}

/// Bodies the input did not record, or whose content coding could not be undone.
fn bodies_missing(s: &mut Session) {
    let missing = s.streams.iter().filter(|st| st.body_unknown).count();
    let not_decoded = s.streams.iter().filter(|st| st.body_not_decoded).count();
    if missing > 0 {
        s.lacks.push(Lack::Bodies {
            missing,
            not_decoded,
            exchanges: s.streams.len(),
        });
    }
}

/// Events past the session's cap were counted, not kept.
fn events_unheld(s: &mut Session) {
    let unheld: u64 = s.streams.iter().map(|st| st.events_unheld).sum();
    if unheld > 0 {
        s.lacks.push(Lack::Events { unheld });
    }
}

/// Exchanges past the session's cap were counted, not kept.
fn exchanges_unheld(s: &mut Session) {
    if s.exchanges_unheld > 0 {
        s.lacks.push(Lack::Exchanges {
            unheld: s.exchanges_unheld,
        });
    }
}

/// The input did not record the responses' `Mcp-Session-Id`: whether the server kept or changed
/// the session's ID is not known.
fn session_header_missing(s: &mut Session) {
    if s.streams.iter().any(|st| !st.session_header_known) {
        s.lacks.push(Lack::ResponseSessionId);
    }
}
