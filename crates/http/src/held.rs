//! Bytes held by the messages in progress, budgeted together.
//!
//! One message may hold a body of up to 16 MiB, or an SSE line or event of as much, and a
//! compressed one costs the capture a thousandth of that: many connections each holding one
//! open would otherwise take memory without bound. Past the stage's budget over all messages in
//! progress, a growing body or line is kept the way one over its own cap is (JSON shrunk to its
//! envelope, the rest cut), and the message says so.

use crate::budget;

/// Bytes one message may hold whatever the others hold: enough for the JSON-RPC envelope of a
/// shrunk message (its strings cut to 64 KiB), so the budget never costs an answer its ID.
pub(crate) const FLOOR: u64 = 128 << 10;

/// What one message holds against the budget, given back when it is dropped.
#[derive(Debug, Default)]
pub(crate) struct HeldBytes {
    bytes: u64,
    /// The budget, not the message's own cap, cut what it kept.
    pub(crate) cut: bool,
}

impl HeldBytes {
    /// The message now holds `now` bytes; what is past its floor counts against the budget.
    pub(crate) fn set(&mut self, now: u64) {
        let (was, is) = (self.bytes.saturating_sub(FLOOR), now.saturating_sub(FLOOR));
        budget::update(|b| b.bytes_held = b.bytes_held.saturating_sub(was).saturating_add(is));
        self.bytes = now;
    }

    /// Bytes this message may hold at most now: its floor, or what it holds past it and what
    /// is left over all.
    pub(crate) fn allowed(&self) -> usize {
        let b = budget::current();
        let left = b.max_bytes_held.saturating_sub(b.bytes_held);
        let past_floor = self.bytes.saturating_sub(FLOOR);
        usize::try_from(FLOOR + past_floor.saturating_add(left)).unwrap_or(usize::MAX)
    }
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        self.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::MAX_BYTES_HELD;

    #[test]
    fn what_one_message_holds_leaves_less_for_the_others_until_it_is_dropped() {
        let mut a = HeldBytes::default();
        a.set(FLOOR + MAX_BYTES_HELD - 10);
        let mut b = HeldBytes::default();
        assert_eq!(b.allowed() as u64, FLOOR + 10);
        // Within its floor a message takes nothing from the others.
        b.set(FLOOR);
        assert_eq!(a.allowed() as u64, FLOOR + MAX_BYTES_HELD);
        b.set(FLOOR + 4);
        assert_eq!(b.allowed() as u64, FLOOR + 10);
        assert_eq!(a.allowed() as u64, FLOOR + MAX_BYTES_HELD - 4);
        drop(a);
        assert_eq!(b.allowed() as u64, FLOOR + MAX_BYTES_HELD);
    }
}
