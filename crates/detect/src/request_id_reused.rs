//! `request_id_reused`: the client sent a request with an ID it already used in the session
//! (a MUST NOT up to 2025-11-25; from 2026-07-28 only while the first is in flight, judged by the
//! session's revision). Servers that
//! key streams by `str(id)` cross-wire the responses (python-sdk #3060, typescript-sdk #2433).

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject, rejected};
use crate::index::Index;
use mcpf_mcp::jsonrpc::{Message, RequestId};
use mcpf_mcp::model::{Session, Stream, StreamIdx, Need};
use mcpf_model::WireMap;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::RequestIdReused,
    severity: Severity::Medium,
    when: "the client sends a request with an ID already used in the session",
    meaning: "Two requests of one session carry the same JSON-RPC ID (compared with their JSON type: 1 and \"1\" differ).",
    why: "Servers route responses by request ID; with two requests in flight under one ID, one response can be delivered to the wrong caller and the other request hangs (seen in production with clients that send every request as id 1).",
    fix: "Client: use a fresh ID per request within a session (a counter or a UUID). Server: reject a duplicate in-flight ID (409) instead of overwriting the routing slot.",
    requires: &[Need::Bodies],
};

pub(crate) fn detect(s: &Session, ix: &Index<'_>, f: &mut Findings) {
    let requests: Vec<_> = ix
        .requests
        .iter()
        .filter(|(st, _)| !rejected(s, *st))
        .collect();
    let mut previous: WireMap<&RequestId, Previous> = WireMap::default();
    for (i, (st2, m2)) in requests.iter().enumerate() {
        let Some(id) = &m2.id else { continue };
        let prior = match previous.get_mut(id) {
            Some(p) => p.on_other_than(*st2, i),
            None => {
                previous.insert(id, Previous::new(*st2, i));
                None
            }
        };
        let Some((st1, m1)) = prior.map(|p| requests[p]) else {
            continue;
        };
        let first = &s.streams[*st1];
        let second = &s.streams[*st2];
        let after_first = ix
            .answers
            .between(id, s.seq(first.opened), Some(s.seq(second.opened)));
        let in_flight = !after_first.iter().any(|a| a.seq > s.seq(first.opened));
        // From 2026-07-28 an ID may be used again once its request was answered.
        if !s.revision.forbids_any_id_reuse() && !in_flight {
            continue;
        }
        f.add(
            s,
            New {
                kind: FindingKind::RequestIdReused,
                severity: INFO.severity,
                time: second.opened,
                frames: vec![first.opened, second.opened],
                streams: vec![*st1, *st2],
                summary: format!(
                    "request ID {} reused: {} on {} after {} on {}{}",
                    id.label(),
                    m2.method.as_deref().unwrap_or("?"),
                    second.label(),
                    m1.method.as_deref().unwrap_or("?"),
                    first.label(),
                    if in_flight { " (the first was still in flight)" } else { "" }
                ),
                evidence: crate::Evidence::RequestIdReused(Evidence {
                    request_id: id.clone(),
                    first: Request::of(first, m1),
                    second: Request::of(second, m2),
                    first_in_flight: in_flight,
                }),
                caused_by: vec![],
                subject: Subject::RequestOn(id.clone(), *st2),
            },
        );
    }
}

/// The latest earlier requests with one ID: the last, and the last on another stream than it.
struct Previous {
    stream: StreamIdx,
    last: usize,
    other: Option<usize>,
}

impl Previous {
    fn new(stream: StreamIdx, at: usize) -> Self {
        Previous {
            stream,
            last: at,
            other: None,
        }
    }

    /// The latest earlier request on a stream other than `stream`; then records the request at
    /// `at` on `stream` as the latest.
    fn on_other_than(&mut self, stream: StreamIdx, at: usize) -> Option<usize> {
        if self.stream == stream {
            self.last = at;
            self.other
        } else {
            let found = self.last;
            *self = Previous {
                stream,
                last: at,
                other: Some(found),
            };
            Some(found)
        }
    }
}

/// The evidence of a `request_id_reused`: the ID, the two requests that carried it, and whether
/// the first was still unanswered when the second was sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// As on the wire: `1` and `"1"` differ.
    pub request_id: RequestId,
    pub first: Request,
    pub second: Request,
    /// The first was still unanswered when the second was sent.
    pub first_in_flight: bool,
}

/// One of the requests: its stream, its method, and when it was sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub stream: String,
    pub method: Option<String>,
    pub time: String,
    pub frame: u64,
}

impl Request {
    fn of(st: &Stream, m: &Message) -> Request {
        Request {
            stream: st.label(),
            method: m.method.as_deref().map(str::to_string),
            time: st.opened.time.rfc3339(),
            frame: st.opened.frame.frame,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_reused_id_is_read_back_from_the_report() {
        for text in [
            r#"{"request_id":1,"first":{"stream":"post:s2","method":"tools/list","time":"2026-11-30T04:36:05.791468Z","frame":10},"second":{"stream":"post:s3","method":null,"time":"2026-11-30T04:36:06.1Z","frame":14},"first_in_flight":true}"#,
            r#"{"request_id":"1","first":{"stream":"post:s2","method":"tools/call","time":"2026-11-30T04:36:05.791468Z","frame":10},"second":{"stream":"post:s3","method":"tools/call","time":"2026-11-30T04:36:06.1Z","frame":14},"first_in_flight":false}"#,
        ] {
            let e: Evidence = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
    }
}
