//! What the events delivered so far tell about who mints which IDs, and the rules that name the
//! namespace of an event a resume stream replayed: its ID's stream token, an identical event
//! seen before, the request its message answers, or counter continuity, in that order.

use rustc_hash::FxHashMap as HashMap;

use super::few::Few;
use crate::ids;
use crate::jsonrpc::{Kind, RequestId};
use crate::model::{Attribution, EventRec, Namespace, Session, StreamIdx};
use mcpf_model::{WireHasher, WireMap};

/// What the events delivered so far tell about who mints which IDs. A seeded hash of an ID,
/// a token or an event's data picks the earlier events that may be the same; the IDs and the
/// data bytes decide. Positions are kept, not strings: no string is copied per event, and
/// nothing is allocated per event either (see [`Few`]).
pub(super) struct Delivered {
    hasher: WireHasher,
    /// Stream token → the events that carried it first, and the stream that minted them.
    token_owner: HashMap<u64, Few<(Pos32, u32)>>,
    /// (ID, data) → the first delivery of that event and its namespace.
    first_seen: HashMap<(u64, u64), Few<Delivery>>,
    /// ID → an event that carried it.
    id_seen: HashMap<u64, Few<Pos32>>,
    /// Where each request's messages were last being delivered (its POST stream until then).
    request_stream: WireMap<RequestId, StreamIdx>,
    progress_owner: WireMap<String, RequestId>,
    last_integer: HashMap<StreamIdx, u64>,
}

/// An event of the session: stream, position in it.
type Pos = (StreamIdx, usize);

/// A [`Pos`] as the per-event indexes keep it: a stream's events are counted in `u32` already
/// ([`EventRec::index`]), and these indexes hold an entry per event.
type Pos32 = (u32, u32);

/// Where an event was first delivered, and the stream that minted it (none: unknown).
type Delivery = (Pos32, Option<u32>);

fn pos32((si, ei): Pos) -> Pos32 {
    (si as u32, ei as u32)
}

fn ns32(ns: Namespace) -> Option<u32> {
    match ns {
        Namespace::Stream(si) => Some(si as u32),
        Namespace::Unknown => None,
    }
}

fn ns_of(ns: Option<u32>) -> Namespace {
    ns.map_or(Namespace::Unknown, |si| Namespace::Stream(si as StreamIdx))
}

/// Request `id`'s messages are now being delivered on stream `owner`. Its ID is copied only
/// the first time: a request's progress notifications are many.
fn set_stream(request_stream: &mut WireMap<RequestId, StreamIdx>, id: &RequestId, owner: usize) {
    match request_stream.get_mut(id) {
        Some(st) => *st = owner,
        None => {
            request_stream.insert(id.clone(), owner);
        }
    }
}

fn event_id(s: &Session, (si, ei): Pos32) -> Option<&str> {
    s.streams[si as usize].events[ei as usize].id.as_deref()
}

impl Delivered {
    /// What `s`'s requests say; `learned`: how many events it will learn from at most (an
    /// entry each in its indexes, sized at once rather than grown and rehashed as they come).
    pub(super) fn new(s: &Session, learned: usize) -> Delivered {
        let mut d = Delivered {
            hasher: WireHasher::default(),
            token_owner: HashMap::default(),
            first_seen: HashMap::with_capacity_and_hasher(learned, Default::default()),
            id_seen: HashMap::with_capacity_and_hasher(learned, Default::default()),
            request_stream: WireMap::default(),
            progress_owner: WireMap::default(),
            last_integer: HashMap::default(),
        };
        for st in &s.streams {
            for m in st.requests() {
                if let Some(id) = &m.id {
                    d.request_stream.entry(id.clone()).or_insert(st.idx);
                    if let Some(t) = &m.mcp.progress_token {
                        d.progress_owner.insert(t.clone(), id.clone());
                    }
                }
            }
        }
        d
    }

    fn hash(&self, text: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, text)
    }

    /// Learns from the event at `at`, delivered in namespace `ns`.
    pub(super) fn learn(&mut self, s: &Session, at: Pos, id: Option<&str>, ns: Namespace) {
        let ev = &s.streams[at.0].events[at.1];
        if let Some(id) = id {
            let h = self.hash(id);
            let at32 = pos32(at);
            if let (Some(tok), Namespace::Stream(owner)) = (ids::stream_token(id), ns) {
                let th = self.hash(tok);
                let same_token =
                    |p: &(Pos32, u32)| event_id(s, p.0).and_then(ids::stream_token) == Some(tok);
                Few::add(&mut self.token_owner, th, (at32, owner as u32), same_token);
            }
            let same_event = |(p, _): &Delivery| {
                let e = &s.streams[p.0 as usize].events[p.1 as usize];
                e.id.as_deref() == Some(id) && s.payloads.same(e.data(), ev.data()) == Some(true)
            };
            let key = (h, ev.data_hash);
            Few::add(&mut self.first_seen, key, (at32, ns32(ns)), same_event);
            let same_id = |p: &Pos32| event_id(s, *p) == Some(id);
            Few::add(&mut self.id_seen, h, at32, same_id);
            if let (Some(n), Namespace::Stream(owner)) = (ids::counter(id), ns) {
                self.last_integer.insert(owner, n);
            }
        }
        let Namespace::Stream(owner) = ns else { return };
        for m in &ev.messages {
            match m.kind {
                Kind::Notification => {
                    if let Some(req) = m
                        .mcp
                        .progress_token
                        .as_ref()
                        .and_then(|t| self.progress_owner.get(t))
                    {
                        set_stream(&mut self.request_stream, req, owner);
                    }
                }
                Kind::Response | Kind::Error => {
                    if let Some(id) = &m.id {
                        set_stream(&mut self.request_stream, id, owner);
                    }
                }
                _ => {}
            }
        }
    }

    /// The namespace of an event a resume stream delivered: by its ID's stream token, by an
    /// identical event seen before, by the request its message answers, or by counter
    /// continuity; unknown when nothing says.
    pub(super) fn replayed(
        &self,
        s: &Session,
        si: StreamIdx,
        ev: &EventRec,
        id: Option<&str>,
        continues: Option<StreamIdx>,
        prev: Option<&EventRec>,
    ) -> (Namespace, Attribution) {
        let Some(id) = id else {
            // No ID: it was minted by no sequence; it belongs to the stream that delivered it.
            return (Namespace::Stream(si), Attribution::Own);
        };
        let seen_before = self
            .id_seen
            .get(&self.hash(id))
            .is_some_and(|v| v.as_slice().iter().any(|p| event_id(s, *p) == Some(id)));
        if ev.priming && !seen_before {
            // Python SDK servers prime every replay connection afresh, under the key of the
            // stream replayed: which one, the resume's other events tell (see `namespaces`).
            return (Namespace::Unknown, Attribution::PrimingOfResume);
        }
        if let Some(found) = self.by_token(s, id, continues) {
            return found;
        }
        if let Some(ns) = self.identical(s, id, ev) {
            return (ns, Attribution::IdenticalEvent);
        }
        if let Some(owner) = self.by_request(ev) {
            return (Namespace::Stream(owner), Attribution::RequestStream);
        }
        ids::integer(id)
            .and_then(|n| self.by_counter(n, continues, prev))
            .unwrap_or((Namespace::Unknown, Attribution::Unknown))
    }

    fn by_token(
        &self,
        s: &Session,
        id: &str,
        continues: Option<StreamIdx>,
    ) -> Option<(Namespace, Attribution)> {
        let tok = ids::stream_token(id)?;
        if let Some(c) = continues
            && s.streams[c]
                .events
                .iter()
                .filter_map(|e| e.id.as_deref())
                .any(|i| ids::stream_token(i) == Some(tok))
        {
            return Some((Namespace::Stream(c), Attribution::IdToken));
        }
        let (_, owner) = self
            .token_owner
            .get(&self.hash(tok))?
            .as_slice()
            .iter()
            .find(|(p, _)| event_id(s, *p).and_then(ids::stream_token) == Some(tok))?;
        Some((Namespace::Stream(*owner as StreamIdx), Attribution::IdToken))
    }

    /// The namespace of the first delivery of the same event: the same ID and the same data,
    /// byte for byte.
    fn identical(&self, s: &Session, id: &str, ev: &EventRec) -> Option<Namespace> {
        let candidates = self.first_seen.get(&(self.hash(id), ev.data_hash))?;
        candidates.as_slice().iter().find_map(|(p, ns)| {
            let e = &s.streams[p.0 as usize].events[p.1 as usize];
            let same =
                e.id.as_deref() == Some(id) && s.payloads.same(e.data(), ev.data()) == Some(true);
            same.then_some(ns_of(*ns))
        })
    }

    /// The stream where the request an event's message answers (or reports progress on) was
    /// last being delivered.
    fn by_request(&self, ev: &EventRec) -> Option<StreamIdx> {
        ev.messages.iter().find_map(|m| {
            let owner = match m.kind {
                Kind::Response | Kind::Error => {
                    m.id.as_ref().and_then(|i| self.request_stream.get(i))
                }
                Kind::Notification => m
                    .mcp
                    .progress_token
                    .as_ref()
                    .and_then(|t| self.progress_owner.get(t))
                    .and_then(|r| self.request_stream.get(r)),
                _ => None,
            };
            owner.copied()
        })
    }

    /// Integer IDs: the sequence whose last ID is one less.
    fn by_counter(
        &self,
        n: u64,
        continues: Option<StreamIdx>,
        prev: Option<&EventRec>,
    ) -> Option<(Namespace, Attribution)> {
        if let Some(p) = prev
            && p.id.as_deref().and_then(ids::integer) == Some(n.wrapping_sub(1))
            && let Namespace::Stream(_) = p.namespace
        {
            return Some((p.namespace, Attribution::CounterContinuity));
        }
        if let Some(c) = continues
            && self.last_integer.get(&c) == Some(&n.wrapping_sub(1))
        {
            return Some((Namespace::Stream(c), Attribution::CounterContinuity));
        }
        let mut owners = self
            .last_integer
            .iter()
            .filter(|(_, v)| **v == n.wrapping_sub(1))
            .map(|(k, _)| *k);
        match (owners.next(), owners.next()) {
            (Some(one), None) => Some((Namespace::Stream(one), Attribution::CounterContinuity)),
            _ => None,
        }
    }
}
