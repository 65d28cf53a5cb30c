//! What several detectors ask of a session, worked out once per session: its requests in the
//! order they were sent, where each request ID was sent and answered. Every question is then a
//! lookup or a binary search, so a session of 100,000 requests takes time in proportion.

use mcpf_mcp::AnswerIndex;
use mcpf_mcp::jsonrpc::{Message, RequestId};
use mcpf_mcp::model::{Fallback, Seq, Session, StreamIdx};
use mcpf_model::Mark;
use mcpf_model::WireMap;

pub(crate) struct Index<'a> {
    /// The client's JSON-RPC requests, in the order they were sent.
    pub(crate) requests: Vec<(StreamIdx, &'a Message)>,
    /// Positions in `requests` of each request ID, in order.
    sends: WireMap<&'a RequestId, Vec<usize>>,
    pub(crate) answers: AnswerIndex<'a>,
    /// Where each `initialize` stands, sorted.
    initializes: Vec<Seq>,
    /// Where each fallback stands and its position in the session's fallbacks, sorted.
    fallbacks: Vec<(Seq, usize)>,
}

impl<'a> Index<'a> {
    pub(crate) fn new(s: &'a Session) -> Self {
        let requests = client_requests(s);
        let mut sends: WireMap<&'a RequestId, Vec<usize>> = WireMap::default();
        for (i, (_, m)) in requests.iter().enumerate() {
            if let Some(id) = &m.id {
                sends.entry(id).or_default().push(i);
            }
        }
        let mut initializes: Vec<Seq> = s.initializes.iter().map(|m| s.seq(*m)).collect();
        initializes.sort_unstable();
        let mut fallbacks: Vec<(Seq, usize)> = s
            .fallbacks
            .iter()
            .enumerate()
            .map(|(i, f)| (s.seq(f.mark), i))
            .collect();
        fallbacks.sort_unstable();
        Index {
            requests,
            sends,
            answers: AnswerIndex::new(s),
            initializes,
            fallbacks,
        }
    }

    /// Positions in `requests` of the requests with this ID, in order.
    pub(crate) fn sends(&self, id: &RequestId) -> &[usize] {
        self.sends.get(id).map_or(&[], Vec::as_slice)
    }

    /// The position of the next request with the same ID as the one at `pos`.
    pub(crate) fn next_send(&self, id: &RequestId, pos: usize) -> Option<usize> {
        let sends = self.sends(id);
        sends.get(sends.partition_point(|&p| p <= pos)).copied()
    }

    /// The first fallback at or before `mark` since the last `initialize` at or before it
    /// ([`Session::fallback_before`], by binary search: every resume asks).
    pub(crate) fn fallback_before(&self, s: &'a Session, mark: Mark) -> Option<&'a Fallback> {
        let at = s.seq(mark);
        let inits = self.initializes.partition_point(|&i| i <= at);
        let from = match inits.checked_sub(1) {
            Some(k) => {
                let last_init = self.initializes[k];
                self.fallbacks.partition_point(|&(q, _)| q < last_init)
            }
            None => 0,
        };
        let &(q, i) = self.fallbacks.get(from)?;
        (q <= at).then(|| &s.fallbacks[i])
    }

    /// Where the request at `pos` stands in the session.
    pub(crate) fn sent(&self, s: &Session, pos: usize) -> Seq {
        s.seq(s.streams[self.requests[pos].0].opened)
    }
}

/// The client's JSON-RPC requests in a session, in the order they were sent.
fn client_requests(s: &Session) -> Vec<(StreamIdx, &Message)> {
    let mut v: Vec<(StreamIdx, &Message)> = s
        .streams
        .iter()
        .flat_map(|st| st.requests().map(move |m| (st.idx, m)))
        .collect();
    v.sort_by_key(|(i, _)| (s.seq(s.streams[*i].opened), *i));
    v
}
