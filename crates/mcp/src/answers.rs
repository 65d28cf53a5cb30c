//! Where each request was answered: the lookup detectors and the timeline share.

use mcpf_model::Mark;

use crate::jsonrpc::{Kind, Message, RequestId, answer_text};
use crate::model::Session;

/// A request and where its answer came from, for detectors and the timeline.
#[derive(Clone, Debug)]
pub struct Answer<'a> {
    pub stream: usize,
    pub event: Option<usize>,
    pub message: &'a Message,
    pub mark: Mark,
}

/// Every JSON-RPC response or error to `id` in the session, in time order.
pub fn answers<'a>(session: &'a Session, id: &RequestId) -> Vec<Answer<'a>> {
    let mut out = Vec::new();
    for st in &session.streams {
        for m in &st.response_messages {
            if matches!(m.kind, Kind::Response | Kind::Error) && m.id.as_ref() == Some(id) {
                out.push(Answer {
                    stream: st.idx,
                    event: None,
                    message: m,
                    mark: st.ended.or(st.response_mark).unwrap_or(st.opened),
                });
            }
        }
        for (ei, ev) in st.events.iter().enumerate() {
            for m in &ev.messages {
                if matches!(m.kind, Kind::Response | Kind::Error) && m.id.as_ref() == Some(id) {
                    out.push(Answer {
                        stream: st.idx,
                        event: Some(ei),
                        message: m,
                        mark: ev.mark,
                    });
                }
            }
        }
    }
    out.sort_by_key(|a| a.mark);
    out
}

impl Answer<'_> {
    /// The bytes that carried the answer: its SSE event's data, or the JSON response body.
    fn payload(&self, s: &Session) -> Option<Vec<u8>> {
        let st = &s.streams[self.stream];
        let at = match self.event {
            Some(e) => st.events[e].data,
            None => st.response_data,
        }?;
        s.payloads.read(at)
    }
}

/// Whether two answers to `id` carry the same result (or error), compared as sent, byte for
/// byte; `None` when the bytes of either were not kept.
pub fn same_answer(s: &Session, id: &RequestId, a: &Answer<'_>, b: &Answer<'_>) -> Option<bool> {
    if let (Some(x), Some(y)) = (a.event, b.event) {
        let (x, y) = (
            &s.streams[a.stream].events[x],
            &s.streams[b.stream].events[y],
        );
        return s.payloads.same(x.data, y.data);
    }
    let text = |answer: &Answer<'_>| answer_text(&answer.payload(s)?, id);
    Some(text(a)? == text(b)?)
}
