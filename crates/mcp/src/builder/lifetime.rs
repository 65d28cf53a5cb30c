//! When a session is over: on evidence only. A `DELETE` of it, or a `404` from its server for
//! its ID, once nothing of it is open; else the end of the inputs. Silence is not an end: a
//! client that resumes after 45 s, 10 min or 2 h is judged exactly as one that resumes after
//! 1 s. A session over is analysed and handed to the session callback at once when sessions
//! are finalized early, and in any case takes no more exchanges: one naming it later starts a
//! new record, so what a session holds never depends on when it was finalized.

use mcpf_http::ExchangeId;
use mcpf_model::Timestamp;

use super::{Builder, Filing, Identity, Pending, RejectedInitialize, spill};
use crate::analysis;
use crate::model::{Session, SessionIdx};

impl Builder {
    /// A session whose last open exchange ended: over if it was deleted. A 404 does not end it:
    /// it proves that the server which answered does not know the session, and behind a
    /// balancer another replica may serve it still; a later exchange naming it continues it.
    pub(super) fn end_if_over(&mut self, idx: SessionIdx) {
        let Some(s) = self.live_mut(idx) else {
            return;
        };
        if s.open > 0 || s.finalized || s.deleted.is_none() {
            return;
        }
        s.over = true;
        if self.early_finalize {
            self.finalize(idx);
        }
    }

    pub(super) fn finalize(&mut self, idx: SessionIdx) {
        self.restore(idx);
        // Taken out while it is analysed: the analysis reads the builder's tables.
        let Some(mut s) = self.sessions.get_mut(idx).and_then(Option::take) else {
            return;
        };
        let done = s.finalized;
        if !done {
            self.analyse(&mut s);
            s.finalized = true;
        }
        if let Some(slot) = self.sessions.get_mut(idx) {
            *slot = Some(s);
        }
        if !done {
            self.hand_on(idx);
        }
    }

    /// What the inputs could record of it, then its analysis (fallbacks, resumes, namespaces):
    /// of a session that ended, or of a copy of one in progress (`--live-flush`).
    pub(super) fn analyse(&mut self, s: &mut Session) {
        let payloads = self.payloads.reader();
        let mut requests_named = true;
        for st in &mut s.streams {
            st.unpack_events();
            if let Some(caps) = self.capabilities.get(&st.input) {
                requests_named &= caps.knows_request_header("mcp-session-id");
                st.session_header_known = caps.knows_response_header("mcp-session-id");
                st.version_header_known = caps.knows_request_header("mcp-protocol-version");
                st.ending_unknown = (!caps.response_end_known).then_some(caps.time_resolution_ns);
            }
        }
        s.payloads = payloads;
        // Inputs not named are captures.
        s.frame_order = matches!(s.inputs.as_slice(), [i] if self
            .sources
            .get(*i as usize)
            .is_none_or(|f| *f == mcpf_model::SourceFormat::Capture));
        // A log has no bodies (no initialize to see) and no server address: only a capture.
        if s.stateless && requests_named && s.frame_order {
            s.server_mints_ids = s
                .streams
                .first()
                .and_then(|st| self.minting.get(&super::exchanges::minting_key(st)))
                .copied();
        }
        let negotiated = analysis::fill_initialize(s);
        analysis::fill_revision(s, negotiated.as_deref());
        analysis::analyse(s);
    }

    /// A session just finalized: its IDs leave the carriers' index, it is tied to the other
    /// observations of its ID, and it goes to the next stage.
    fn hand_on(&mut self, idx: SessionIdx) {
        if let Some(f) = &mut self.flush {
            f.forget(idx);
        }
        let Some(s) = self.sessions.get(idx).and_then(|s| s.as_deref()) else {
            return;
        };
        let ids = s
            .streams
            .iter()
            .flat_map(|st| st.events.iter())
            .filter_map(|e| e.id.as_deref());
        self.carriers.forget(idx, ids);
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
                    deleted: s.first_deletion(),
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
                Some(Filing::Pending(_, Pending::Cut(method))) => self.note_cut(id.conn, &method),
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
        let spilled: Vec<SessionIdx> = self.spilled.keys().copied().collect();
        for idx in spilled {
            self.restore(idx);
        }
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

/// Quiet this long (capture time) before a session is written to disk: longer than clients
/// think between calls, so busy sessions stay in memory. It manages memory only: a spilled
/// session is read back unchanged the moment anything names it.
const SPILL_AFTER_NS: i64 = 30 * Timestamp::NANOS_PER_SEC;

impl Builder {
    /// Capture time moves on; sessions quiet for long enough go to disk.
    pub(super) fn note_time(&mut self, t: Timestamp) {
        if t <= self.now {
            return;
        }
        self.now = t;
        self.flush_quiet(t);
        while let Some(&(since, idx)) = self.quiet.front() {
            if self.now.0.saturating_sub(since.0) < SPILL_AFTER_NS {
                break;
            }
            self.quiet.pop_front();
            self.spill(idx, since);
        }
    }

    /// Writes a session to the spill file if it is still quiet since `since`.
    fn spill(&mut self, idx: SessionIdx, since: Timestamp) {
        let Some(s) = self.live(idx) else {
            return;
        };
        if s.open > 0 || s.finalized || s.over || s.quiet_since != since {
            return;
        }
        let bytes = spill::encode(s);
        if let Some(at) = self.spill_file.append(&bytes)
            && let Some(slot) = self.sessions.get_mut(idx)
        {
            *slot = None;
            self.spilled.insert(idx, at);
        }
    }

    /// Reads a spilled session back, before anything uses it.
    pub(super) fn restore(&mut self, idx: SessionIdx) {
        let Some(at) = self.spilled.remove(&idx) else {
            return;
        };
        let restored = self
            .spill_file
            .reader()
            .read(at)
            .and_then(|b| spill::decode(&b));
        match (restored, self.sessions.get_mut(idx)) {
            (Some(mut s), Some(slot)) => {
                s.quiet_since = self.now;
                *slot = Some(Box::new(s));
            }
            _ => {
                // Not reachable unless the spill file became unreadable: the session is lost,
                // and the report says so.
                self.stats.sessions_lost += 1;
                self.active.remove(&idx);
            }
        }
    }
}
