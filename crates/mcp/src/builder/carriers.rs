//! Which open session first carried each event ID the server made unique. A resume that is
//! replayed an event another session was sent before is what an event store shared across
//! sessions does (the official Python SDK's session manager hands one store to every session
//! and names every standalone stream `_GET_stream`); the detect stage compares the bytes and
//! says so (`cross_session_replay`).
//!
//! Only the open sessions' events are indexed: a session's IDs are forgotten when it is
//! finalized, so the index follows what is open, and it is capped besides.

use mcpf_http::ExchangeId;
use mcpf_model::{Mark, WireMap};

use crate::ids;
use crate::model::{ForeignEvent, SessionIdx};
use crate::payloads::PayloadRef;

/// Event IDs the index holds at most; past it new IDs are counted, not indexed.
pub(super) const MAX_CARRIED_IDS: usize = 1_000_000;

#[derive(Default)]
pub(super) struct Carriers {
    by_id: WireMap<Box<str>, Carrier>,
    /// The session ID of each session that carried an indexed ID first.
    session_ids: rustc_hash::FxHashMap<SessionIdx, Box<str>>,
    /// IDs not indexed because the index was full.
    pub(super) not_indexed: u64,
}

struct Carrier {
    session: SessionIdx,
    input: mcpf_model::InputId,
    exchange: ExchangeId,
    mark: Mark,
    data: Option<PayloadRef>,
    /// Another session's stream carried it fresh too: a broadcast, or minters that are not
    /// what their IDs look like; it proves nothing.
    ambiguous: bool,
}

/// An ID that no other minter mints too: random by construction (a uuid, the TypeScript SDK's
/// `<stream>_<ms>_<random>`). Two sessions' streams carrying one such ID carry one event.
pub(super) fn unique_by_construction(id: &str) -> bool {
    ids::random(id)
}

/// What the index knows of an event as it arrives on a stream of a session.
pub(super) struct Arrival<'a> {
    pub(super) id: &'a str,
    pub(super) session: SessionIdx,
    pub(super) session_id: &'a str,
    pub(super) input: mcpf_model::InputId,
    pub(super) exchange: ExchangeId,
    pub(super) mark: Mark,
    pub(super) data: Option<PayloadRef>,
    /// Its position among its stream's events.
    pub(super) event: u32,
    /// Its stream resumes another (Last-Event-ID): where a store replays.
    pub(super) on_resume: bool,
}

impl Carriers {
    /// Files an arrival: the first stream that carried its ID fresh (not a resume: a replay may
    /// already be another session's event) is remembered; a resume of another session that
    /// carries it again gets what to compare.
    pub(super) fn arrive(&mut self, a: &Arrival<'_>) -> Option<ForeignEvent> {
        if let Some(first) = self.by_id.get_mut(a.id) {
            // Compared within one input only: another input may be another hop, whose session
            // IDs a gateway rewrote.
            if first.session == a.session || first.input != a.input {
                return None;
            }
            let other = self.session_ids.get(&first.session)?;
            if **other == *a.session_id {
                return None;
            }
            if !a.on_resume {
                first.ambiguous = true;
                return None;
            }
            if first.ambiguous {
                return None;
            }
            let minted_in = other;
            return Some(ForeignEvent {
                event: a.event,
                minted_in_session: minted_in.to_string(),
                first: first.mark,
                first_exchange: first.exchange,
                data: first.data,
            });
        }
        if a.on_resume {
            return None;
        }
        if self.by_id.len() >= MAX_CARRIED_IDS {
            self.not_indexed += 1;
            return None;
        }
        self.session_ids
            .entry(a.session)
            .or_insert_with(|| a.session_id.into());
        self.by_id.insert(
            a.id.into(),
            Carrier {
                session: a.session,
                input: a.input,
                exchange: a.exchange,
                mark: a.mark,
                data: a.data,
                ambiguous: false,
            },
        );
        None
    }

    /// Forgets the IDs a finalized session first carried.
    pub(super) fn forget<'a>(&mut self, session: SessionIdx, ids: impl Iterator<Item = &'a str>) {
        if self.session_ids.remove(&session).is_none() {
            return;
        }
        for id in ids {
            if self.by_id.get(id).is_some_and(|c| c.session == session) {
                self.by_id.remove(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{ConnId, FrameRef, Timestamp};

    fn arrival<'a>(id: &'a str, session: SessionIdx, sid: &'a str, on_resume: bool) -> Arrival<'a> {
        Arrival {
            id,
            session,
            session_id: sid,
            input: 0,
            exchange: ExchangeId {
                conn: ConnId::from_number(session as u64),
                index: 1,
            },
            mark: Mark {
                time: Timestamp(session as i64),
                frame: FrameRef::new(0, 0),
            },
            data: None,
            event: 0,
            on_resume,
        }
    }

    const UUID: &str = "44113fac-4a3d-4061-9aa3-e84ef71bbb04";

    #[test]
    fn an_id_one_session_was_sent_is_foreign_on_another_sessions_resume() {
        let mut c = Carriers::default();
        assert!(c.arrive(&arrival(UUID, 0, "sid0", false)).is_none());
        let f = c.arrive(&arrival(UUID, 1, "sid1", true)).unwrap();
        assert_eq!(f.minted_in_session, "sid0");
        // The same session seen at another hop (same ID) is no other session.
        assert!(c.arrive(&arrival(UUID, 2, "sid0", true)).is_none());
        c.forget(0, [UUID].into_iter());
        assert!(c.arrive(&arrival(UUID, 1, "sid1", true)).is_none());
        // Carried fresh by two sessions (a broadcast): proves nothing.
        let both = "9d2f7a10-3c4b-4e5f-8a6b-7c8d9e0f1a2b";
        assert!(c.arrive(&arrival(both, 0, "sid0", false)).is_none());
        assert!(c.arrive(&arrival(both, 1, "sid1", false)).is_none());
        assert!(c.arrive(&arrival(both, 2, "sid2", true)).is_none());
        // What a resume carried first is no proof of who it was minted for.
        let other = "5b7c0e1e-0d6c-4f1e-9d43-2b8f6c9a1d20";
        assert!(c.arrive(&arrival(other, 3, "sid3", true)).is_none());
        assert!(c.arrive(&arrival(other, 4, "sid4", true)).is_none());
    }

    #[test]
    fn counters_are_no_proof_of_one_event() {
        for id in [
            "41",
            "post:41",
            "42/7",
            "short-id",
            "evt_000000000042",
            "stream-1-event-0042",
        ] {
            assert!(!unique_by_construction(id), "{id}");
        }
        assert!(unique_by_construction(UUID));
        assert!(unique_by_construction("_GET_stream_1764000000000_k3j2h1"));
        assert!(unique_by_construction(
            "44113fac-4a3d-4061-9aa3-e84ef71bbb04_1764000000000_k3j2h1"
        ));
    }
}
