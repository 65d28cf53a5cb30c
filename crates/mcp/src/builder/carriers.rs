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
pub(super) const MAX_CARRIED_IDS: usize = 4_000_000;

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
    exchange: ExchangeId,
    mark: Mark,
    data: Option<PayloadRef>,
}

/// An ID that no counter of another session mints too: long, with no counter in it (a uuid, the
/// TypeScript SDK's `<stream>_<ms>_<random>`). Two sessions' streams carrying one such ID carry
/// one event.
pub(super) fn unique_by_construction(id: &str) -> bool {
    id.len() >= 16 && ids::counter(id).is_none()
}

/// What the index knows of an event as it arrives on a stream of a session.
pub(super) struct Arrival<'a> {
    pub(super) id: &'a str,
    pub(super) session: SessionIdx,
    pub(super) session_id: &'a str,
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
        if let Some(first) = self.by_id.get(a.id) {
            if first.session == a.session || !a.on_resume {
                return None;
            }
            let minted_in = self.session_ids.get(&first.session)?;
            return (**minted_in != *a.session_id).then(|| ForeignEvent {
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
                exchange: a.exchange,
                mark: a.mark,
                data: a.data,
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
        // Another session's live stream: not a replay.
        assert!(c.arrive(&arrival(UUID, 1, "sid1", false)).is_none());
        let f = c.arrive(&arrival(UUID, 1, "sid1", true)).unwrap();
        assert_eq!(f.minted_in_session, "sid0");
        // The same session seen at another hop (same ID) is no other session.
        assert!(c.arrive(&arrival(UUID, 2, "sid0", true)).is_none());
        c.forget(0, [UUID].into_iter());
        assert!(c.arrive(&arrival(UUID, 1, "sid1", true)).is_none());
        // What a resume carried first is no proof of who it was minted for.
        let other = "5b7c0e1e-0d6c-4f1e-9d43-2b8f6c9a1d20";
        assert!(c.arrive(&arrival(other, 3, "sid3", true)).is_none());
        assert!(c.arrive(&arrival(other, 4, "sid4", true)).is_none());
    }

    #[test]
    fn counters_are_no_proof_of_one_event() {
        for id in ["41", "post:41", "42/7", "short-id"] {
            assert!(!unique_by_construction(id), "{id}");
        }
        assert!(unique_by_construction(UUID));
        assert!(unique_by_construction("_GET_stream_1764000000000_k3j2h1"));
    }
}
