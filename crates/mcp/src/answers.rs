//! Where each request was answered: the lookup detectors and the timeline share.
//!
//! A session can carry hundreds of thousands of requests, so its answers are indexed by request
//! ID once ([`AnswerIndex`]) and every comparison of answer bytes is remembered
//! ([`AnswerTexts`]): no detector looks at every message of the session per request.

use mcpf_model::{Mark, WireMap};

use crate::jsonrpc::{Kind, Message, RequestId, answer_texts};
use crate::model::{Seq, Session};
use crate::payloads::PayloadRef;

/// A request and where its answer came from, for detectors and the timeline.
#[derive(Clone, Debug)]
pub struct Answer<'a> {
    pub stream: usize,
    pub event: Option<usize>,
    pub message: &'a Message,
    pub mark: Mark,
    /// Where `mark` stands in the session ([`Session::seq`]).
    pub seq: Seq,
}

/// Every JSON-RPC response or error of a session, by request ID, each ID's in session order
/// ([`Session::seq`]).
#[derive(Debug)]
pub struct AnswerIndex<'a> {
    by_id: WireMap<&'a RequestId, Vec<Answer<'a>>>,
}

impl<'a> AnswerIndex<'a> {
    pub fn new(session: &'a Session) -> Self {
        let mut by_id: WireMap<&'a RequestId, Vec<Answer<'a>>> = WireMap::default();
        let mut add = |stream: usize, event: Option<usize>, message: &'a Message, mark: Mark| {
            if let (Kind::Response | Kind::Error, Some(id)) = (message.kind, &message.id) {
                let seq = session.seq(mark);
                let answer = Answer {
                    stream,
                    event,
                    message,
                    mark,
                    seq,
                };
                by_id.entry(id).or_default().push(answer);
            }
        };
        for st in &session.streams {
            let mark = st.ended.or(st.response_mark).unwrap_or(st.opened);
            for m in &st.response_messages {
                add(st.idx, None, m, mark);
            }
            for (ei, ev) in st.events.iter().enumerate() {
                for m in &ev.messages {
                    add(st.idx, Some(ei), m, ev.mark);
                }
            }
        }
        for list in by_id.values_mut() {
            // Stable: answers at the same place keep the order they were delivered in.
            list.sort_by_key(|a| a.seq);
        }
        AnswerIndex { by_id }
    }

    /// Every answer to `id`, in session order.
    pub fn of(&self, id: &RequestId) -> &[Answer<'a>] {
        self.by_id.get(id).map_or(&[], Vec::as_slice)
    }

    /// The answers to `id` at or after `from` and before `until` (when given).
    pub fn between(&self, id: &RequestId, from: Seq, until: Option<Seq>) -> &[Answer<'a>] {
        let all = self.of(id);
        let start = all.partition_point(|a| a.seq < from);
        let end = until.map_or(all.len(), |u| all.partition_point(|a| a.seq < u));
        all.get(start..end.max(start)).unwrap_or(&[])
    }
}

/// Where an answer's bytes are: its SSE event, or its stream's JSON body.
type Place = (usize, Option<usize>);

/// What is known of answer bytes once read: the answer texts of each payload by ID, and the
/// comparisons of whole SSE events already made. A batch body of 100,000 answers is read once,
/// not once per duplicate.
#[derive(Debug, Default)]
pub struct AnswerTexts {
    texts: WireMap<Place, Option<WireMap<RequestId, String>>>,
    same_events: WireMap<(PayloadRef, PayloadRef), Option<bool>>,
}

impl AnswerTexts {
    pub fn new() -> Self {
        AnswerTexts::default()
    }

    /// Whether two answers to `id` carry the same result (or error), compared as sent, byte
    /// for byte; `None` when the bytes of either were not kept.
    pub fn same_answer(
        &mut self,
        s: &Session,
        id: &RequestId,
        a: &Answer<'_>,
        b: &Answer<'_>,
    ) -> Option<bool> {
        if let (Some(x), Some(y)) = (a.event, b.event) {
            let x = s.streams[a.stream].events[x].data();
            let y = s.streams[b.stream].events[y].data();
            let (Some(x), Some(y)) = (x, y) else {
                return None;
            };
            return *self
                .same_events
                .entry((x, y))
                .or_insert_with(|| s.payloads.same(Some(x), Some(y)));
        }
        let x = self.text(s, a)?.get(id)?.clone();
        let y = self.text(s, b)?.get(id)?;
        Some(x == *y)
    }

    /// The answer texts, by ID, of the payload that carried `answer`, read the first time.
    fn text(&mut self, s: &Session, answer: &Answer<'_>) -> Option<&WireMap<RequestId, String>> {
        let place = (answer.stream, answer.event);
        self.texts
            .entry(place)
            .or_insert_with(|| {
                let st = &s.streams[answer.stream];
                let at = match answer.event {
                    Some(e) => st.events[e].data(),
                    None => st.response_data,
                }?;
                Some(answer_texts(&s.payloads.read(at)?))
            })
            .as_ref()
    }
}
