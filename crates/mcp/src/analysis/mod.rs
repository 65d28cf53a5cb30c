//! Per-session reasoning that needs the whole session: stream order, the event-ID scheme,
//! mid-session fallbacks, which stream each resume continues, and the namespace that minted every
//! event.
//!
//! The builder calls [`fill_initialize`] and [`fill_revision`] (`initialize`: what the session
//! negotiated), then [`analyse`], which numbers the streams in order, finds the event-ID scheme
//! (both here) and runs the other steps in order, each in its file:
//! - `not_determinable`: the findings an input cannot support, said so;
//! - `resumes`: which stream each resume continues;
//! - `fallbacks` and `inferred`: mid-session fallbacks from a POST to a GET stream, as a capture
//!   shows them and as only an input's times do;
//! - `namespaces` (with `delivered` and `few`): the namespace that minted each event's ID.
//!
//! Over all sessions, [`merge_sources`] (`merge`) folds the sessions of a HAR file or log into
//! the captured sessions of the same traffic.

mod delivered;
mod fallbacks;
mod few;
mod inferred;
mod initialize;
mod merge;
mod moved;
mod namespaces;
mod not_determinable;
mod resumes;

use crate::ids;
use crate::model::{EventIdScheme, Session};

pub(crate) use initialize::{fill_initialize, fill_revision};
pub(crate) use merge::merge_sources;

/// Works out what needs the whole session, once it is over.
pub(crate) fn analyse(s: &mut Session) {
    order_streams(s);
    detect_event_id_scheme(s);
    not_determinable::note_what_inputs_lack(s);
    resumes::resolve_resumes(s);
    fallbacks::detect_fallbacks(s);
    namespaces::attribute(s);
}

/// The scheme the server's event IDs follow, from its events; with none (an access log), from
/// the IDs clients sent back.
fn detect_event_id_scheme(s: &mut Session) {
    s.event_id_scheme = ids::classify(
        s.streams
            .iter()
            .flat_map(|st| st.events.iter())
            .filter_map(|e| e.id.as_deref()),
    );
    if s.event_id_scheme == EventIdScheme::None {
        // No events (an access log): the IDs clients sent back still show the scheme.
        let from_resumes = ids::classify(
            s.streams
                .iter()
                .filter_map(|st| st.resume.as_ref().map(|r| r.last_event_id.as_str())),
        );
        if from_resumes != EventIdScheme::None {
            s.event_id_scheme = from_resumes;
            s.event_id_scheme_from = "last_event_id";
        }
    }
}

/// Streams are numbered in the order their requests began.
fn order_streams(s: &mut Session) {
    let mut order: Vec<usize> = (0..s.streams.len()).collect();
    order.sort_by_key(|&i| (s.seq(s.streams[i].opened), s.streams[i].exchange));
    let mut new_pos = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_pos[old] = new;
    }
    // In place, cycle by cycle: a session of hundreds of thousands of streams is not copied.
    let mut to = new_pos.clone();
    for i in 0..to.len() {
        while to[i] != i {
            let j = to[i];
            s.streams.swap(i, j);
            to.swap(i, j);
        }
    }
    for (i, st) in s.streams.iter_mut().enumerate() {
        st.idx = i;
    }
    for f in &mut s.fallbacks {
        f.abandoned_stream = f.abandoned_stream.map(|i| new_pos[i]);
        f.to_stream = new_pos[f.to_stream];
    }
}
