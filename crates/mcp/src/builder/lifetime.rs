//! When a session is over: on evidence only. A `DELETE` of it, or a `404` from its server for
//! its ID, once nothing of it is open; else the end of the inputs. Silence is not an end: a
//! client that resumes after 45 s, 10 min or 2 h is judged exactly as one that resumes after
//! 1 s. A session over is analysed and handed to the session callback at once when sessions
//! are finalized early, and in any case takes no more exchanges: one naming it later starts a
//! new record, so what a session holds never depends on when it was finalized.

use mcpf_http::ExchangeId;

use super::{Builder, Filing, Identity, Pending, RejectedInitialize};
use crate::analysis;
use crate::model::{Session, SessionIdx};

impl Builder {
    /// A session whose last open exchange ended: over if it was deleted or forgotten.
    pub(super) fn end_if_over(&mut self, idx: SessionIdx) {
        let Some(s) = self.live_mut(idx) else {
            return;
        };
        if s.open > 0 || s.finalized || (s.deleted.is_none() && s.forgotten.is_empty()) {
            return;
        }
        s.over = true;
        if self.early_finalize {
            self.finalize(idx);
        }
    }

    pub(super) fn finalize(&mut self, idx: SessionIdx) {
        let payloads = self.payloads.reader();
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
        s.payloads = payloads;
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
        self.active.remove(&idx);
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

    /// Ends the build: exchanges still open are filed, sources of the same traffic are merged,
    /// and every session not yet finalized is analysed and handed to the session callback.
    pub fn close_all(&mut self) {
        self.file_leftovers();
        if !self.early_finalize {
            self.merge_recorded_sources();
        }
        let remaining: Vec<SessionIdx> = self.active.iter().copied().collect();
        for i in remaining {
            self.finalize(i);
        }
        self.stats.payload_error = self.payloads.error().map(str::to_string);
    }

    /// Exchanges still open at the end, refused initializes no legacy session claimed, and
    /// streams nothing tied to a session.
    fn file_leftovers(&mut self) {
        let mut open: Vec<ExchangeId> = self.open.keys().copied().collect();
        open.sort();
        for id in open {
            match self.take_filing(id) {
                Some(Filing::Pending(stream, Pending::Orphan)) => self.file_orphan(*stream),
                Some(Filing::Pending(stream, Pending::Get)) => {
                    if stream.packed.mcp_evidence {
                        self.note_mcp();
                        self.file_sessionless(*stream);
                    } else {
                        self.stats.event_streams_not_mcp += 1;
                    }
                }
                Some(Filing::Pending(stream, Pending::Unproven)) => self.note_not_mcp(&stream),
                Some(Filing::Pending(stream, _)) => self.file_sessionless(*stream),
                _ => {}
            }
        }
        self.open.clear();
        self.orphans.clear();
        let mut rejected: Vec<RejectedInitialize> =
            std::mem::take(&mut self.rejected).into_values().collect();
        rejected.sort_by_key(|r| r.stream.exchange);
        for r in rejected {
            self.file_sessionless(*r.stream);
        }
        let left: Vec<ExchangeId> = self.unattributed.drain().map(|st| st.exchange).collect();
        for exchange in left {
            self.note_unattributed(exchange);
        }
    }

    /// A HAR or log of the same traffic as a capture is matched before analysis. Nothing was
    /// finalized yet (sessions are finalized early only without such sources).
    fn merge_recorded_sources(&mut self) {
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
}
