//! HTTP/2 flow control (RFC 9113 §6.9) as a passive observer can follow it: what each side may
//! still send, on the connection and on each stream, from the other side's SETTINGS and
//! WINDOW_UPDATE frames. A sender that used all it was granted waits; a wait that a grant ends
//! is counted, one still on when its stream or the capture ends is what the caller reports.
//!
//! A stream's window is kept relative to the initial window (`credit`), so that a SETTINGS
//! frame changing SETTINGS_INITIAL_WINDOW_SIZE moves every stream's window at once, in
//! constant time, however many streams are open.

use mcpf_model::Mark;

use super::di;
use crate::conn::Counts;
use mcpf_model::Direction;

/// RFC 9113 §6.9.2.
const DEFAULT_WINDOW: i64 = 65_535;

#[derive(Debug)]
pub(super) struct Flow {
    /// What each side (by `di`) may still send on the connection, and since when it waits.
    conn: [i64; 2],
    conn_blocked: [Option<Mark>; 2],
    /// The window each side's streams start with: the other side's
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    initial: [i64; 2],
}

/// One stream's windows, relative to [`Flow::initial`].
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StreamWindow {
    /// Granted minus sent, per side.
    credit: [i64; 2],
    blocked: [Option<Mark>; 2],
}

impl Default for Flow {
    fn default() -> Self {
        Flow {
            conn: [DEFAULT_WINDOW; 2],
            conn_blocked: [None; 2],
            initial: [DEFAULT_WINDOW; 2],
        }
    }
}

impl Flow {
    fn window(&self, s: &StreamWindow, d: usize) -> i64 {
        self.initial[d].saturating_add(s.credit[d])
    }

    /// `sender` sent `len` flow-controlled bytes (on stream `s`, when it is followed).
    pub(super) fn spend(
        &mut self,
        sender: Direction,
        s: Option<&mut StreamWindow>,
        len: u32,
        mark: Mark,
    ) {
        let d = di(sender);
        let len = i64::from(len);
        let before = self.conn[d];
        self.conn[d] = before.saturating_sub(len);
        if self.conn[d] <= 0 && (before > 0 || self.conn_blocked[d].is_none()) {
            self.conn_blocked[d] = Some(mark);
        }
        if let Some(s) = s {
            let before = self.window(s, d);
            s.credit[d] = s.credit[d].saturating_sub(len);
            if self.window(s, d) <= 0 && (before > 0 || s.blocked[d].is_none()) {
                s.blocked[d] = Some(mark);
            }
        }
    }

    /// The other side granted `sender` `inc` more bytes on the connection.
    pub(super) fn grant_conn(
        &mut self,
        sender: Direction,
        inc: i64,
        mark: Mark,
        counts: &mut Counts,
    ) {
        let d = di(sender);
        self.conn[d] = self.conn[d].saturating_add(inc);
        if self.conn[d] > 0 {
            waited(&mut self.conn_blocked[d], mark, counts);
        }
    }

    /// The other side granted `sender` `inc` more bytes on stream `s`.
    pub(super) fn grant_stream(
        &mut self,
        sender: Direction,
        s: &mut StreamWindow,
        inc: i64,
        mark: Mark,
        counts: &mut Counts,
    ) {
        let d = di(sender);
        s.credit[d] = s.credit[d].saturating_add(inc);
        if self.window(s, d) > 0 {
            waited(&mut s.blocked[d], mark, counts);
        }
    }

    /// The other side set `sender`'s initial stream window (SETTINGS_INITIAL_WINDOW_SIZE).
    pub(super) fn set_initial(&mut self, sender: Direction, value: u32) {
        self.initial[di(sender)] = i64::from(value);
    }

    /// Since when `sender` has been waiting for credit on stream `s`, and which window it used
    /// up, if it still waits.
    pub(super) fn waiting(
        &self,
        s: &StreamWindow,
        sender: Direction,
    ) -> Option<(Mark, &'static str)> {
        let d = di(sender);
        match (s.blocked[d], self.conn_blocked[d]) {
            (Some(since), _) if self.window(s, d) <= 0 => Some((since, "stream's")),
            (_, Some(since)) if self.conn[d] <= 0 => Some((since, "connection's")),
            _ => None,
        }
    }
}

/// A wait ended at `mark`: counted, with how long it took.
fn waited(blocked: &mut Option<Mark>, mark: Mark, counts: &mut Counts) {
    if let Some(since) = blocked.take() {
        counts.h2_flow_stalls += 1;
        let ns = mark.time.0.saturating_sub(since.time.0).max(0) as u64;
        counts.h2_flow_stall_ns = counts.h2_flow_stall_ns.saturating_add(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{FrameRef, Timestamp};

    fn mark(n: u64) -> Mark {
        Mark {
            time: Timestamp(n as i64 * 1_000_000),
            frame: FrameRef::new(0, n),
        }
    }

    const S: Direction = Direction::ServerToClient;

    #[test]
    fn a_used_up_window_waits_until_a_grant_or_a_larger_initial_window() {
        let mut f = Flow::default();
        let mut s = StreamWindow::default();
        let mut counts = Counts::default();
        f.spend(S, Some(&mut s), 65_535, mark(1));
        assert_eq!(f.waiting(&s, S).map(|w| w.1), Some("stream's"));
        f.grant_stream(S, &mut s, 10, mark(3), &mut counts);
        // The connection's window is used up too.
        assert_eq!(f.waiting(&s, S).map(|w| w.1), Some("connection's"));
        f.grant_conn(S, 10, mark(4), &mut counts);
        assert_eq!(f.waiting(&s, S), None);
        assert_eq!(
            (counts.h2_flow_stalls, counts.h2_flow_stall_ns),
            (2, 5_000_000)
        );
        // SETTINGS raising the initial window ends a wait at once, for every stream.
        f.spend(S, Some(&mut s), 10, mark(5));
        f.grant_conn(S, 1 << 20, mark(6), &mut counts);
        assert!(f.waiting(&s, S).is_some());
        f.set_initial(S, 1 << 20);
        assert_eq!(f.waiting(&s, S), None);
    }

    #[test]
    fn windows_saturate_instead_of_wrapping() {
        let mut f = Flow::default();
        let mut s = StreamWindow::default();
        let mut counts = Counts::default();
        for _ in 0..4 {
            f.grant_stream(S, &mut s, i64::MAX, mark(1), &mut counts);
            f.grant_conn(S, i64::MAX, mark(1), &mut counts);
        }
        assert_eq!(f.waiting(&s, S), None);
    }
}
