//! When a session is over: deleted, or idle with nothing open (early finalization), or at the
//! end of the inputs; then it is analysed and handed to the session callback.

use mcpf_http::ExchangeId;

use super::{Builder, Filing, Identity, Pending, RejectedInitialize};
use crate::analysis;
use crate::model::{Session, SessionIdx};

impl Builder {
    pub(super) fn finalize(&mut self, idx: SessionIdx) {
        let Some(s) = self.sessions.get_mut(idx).and_then(|s| s.as_deref_mut()) else {
            return;
        };
        if s.finalized {
            return;
        }
        for st in &mut s.streams {
            st.unpack_events();
            if let Some(caps) = self.capabilities.get(&st.input) {
                st.session_header_known = caps.knows_response_header("mcp-session-id");
            }
        }
        analysis::fill_initialize(s);
        analysis::analyse(s);
        s.finalized = true;
        if let Some(id) = &s.session_id {
            let others: Vec<SessionIdx> = self
                .by_sid
                .get(id)
                .map(|v| v.iter().copied().filter(|&o| o != idx).collect())
                .unwrap_or_default();
            if let Some(s) = self.live_mut(idx) {
                s.same_session_as = others;
            }
        }
        self.active.retain(|&a| a != idx);
        if let Some(cb) = self.on_finalized.as_mut()
            && let Some(slot) = self.sessions.get_mut(idx)
            && let Some(s) = slot.take()
        {
            self.retired.insert(
                idx,
                Identity {
                    transport: s.transport,
                    stateless: s.stateless,
                },
            );
            cb(s);
        }
    }

    /// Sessions with nothing open that were deleted, or have been silent this long (capture
    /// time), are over. 30 s covers the reconnection backoff of the official SDKs (1 s to 30 s):
    /// a resume comes sooner than that or not at all.
    const IDLE_NS: i64 = 30 * mcpf_model::Timestamp::NANOS_PER_SEC;

    pub(super) fn check_idle(&mut self, now: mcpf_model::Timestamp) {
        if !self.early_finalize {
            return;
        }
        self.now = Some(self.now.map_or(now, |n| n.max(now)));
        let now = self.now.unwrap_or(now);
        match self.next_idle_check {
            Some(t) if now < t => return,
            _ => {}
        }
        self.next_idle_check = Some(now.add_nanos(mcpf_model::Timestamp::NANOS_PER_SEC));
        let mut open: rustc_hash::FxHashSet<SessionIdx> = rustc_hash::FxHashSet::default();
        for f in self.open.values() {
            if let Filing::Session(s, _) = f {
                open.insert(*s);
            }
        }
        let done: Vec<SessionIdx> = self
            .active
            .iter()
            .copied()
            .filter(|&i| {
                let Some(s) = self.live(i) else { return true };
                !open.contains(&i)
                    && (s.deleted.is_some() || now.0.saturating_sub(s.end.time.0) > Self::IDLE_NS)
            })
            .collect();
        for i in done {
            self.finalize(i);
        }
    }

    /// Ends the build: exchanges still open are filed, sources of the same traffic are merged,
    /// and every session not yet finalized is analysed and handed to the session callback.
    pub fn close_all(&mut self) {
        let open: Vec<ExchangeId> = {
            let mut v: Vec<ExchangeId> = self.open.keys().copied().collect();
            v.sort();
            v
        };
        for id in open {
            match self.open.remove(&id) {
                Some(Filing::Pending(stream, Pending::Orphan)) => self.file_orphan(id, *stream),
                Some(Filing::Pending(stream, _)) => self.file_stateless(id, *stream),
                _ => {}
            }
        }
        self.open.clear();
        let mut rejected: Vec<RejectedInitialize> =
            std::mem::take(&mut self.rejected).into_values().collect();
        rejected.sort_by_key(|r| r.stream.exchange);
        for r in rejected {
            let stream = *r.stream;
            let exchange = stream.exchange;
            self.file_stateless(exchange, stream);
            self.open.remove(&exchange);
        }
        if !self.early_finalize {
            // A HAR or log of the same traffic as a capture is matched before analysis.
            // Nothing was finalized yet (sessions are finalized early only without such sources).
            let mut sessions: Vec<Session> = std::mem::take(&mut self.sessions)
                .into_vec()
                .into_iter()
                .flatten()
                .map(|s| *s)
                .collect();
            for st in sessions.iter_mut().flat_map(|s| s.streams.iter_mut()) {
                st.unpack_events();
            }
            let sources = &self.sources;
            analysis::merge_sources(&mut sessions, |input| {
                sources.get(input as usize).is_some_and(|f| f.is_recorded())
            });
            self.by_sid.clear();
            for s in &sessions {
                if let Some(id) = &s.session_id {
                    self.by_sid.entry(id.clone()).or_default().push(s.idx);
                }
            }
            self.active = sessions
                .iter()
                .filter(|s| !s.finalized)
                .map(|s| s.idx)
                .collect();
            self.sessions = sessions
                .into_iter()
                .map(|s| Some(Box::new(s)))
                .collect::<Vec<_>>()
                .into();
        }
        let remaining: Vec<SessionIdx> = self.active.clone();
        for i in remaining {
            self.finalize(i);
        }
    }
}
