//! Where each request was answered: the lookup detectors and the timeline share.

use mcpf_model::Mark;

use crate::jsonrpc::{Kind, Message, RequestId};
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
