//! What the messages in progress of one HTTP stage hold together: their bytes past each one's
//! floor ([`crate::held`]) and the windows of their brotli decoders ([`crate::body`]).
//!
//! The parsers reach the budget of the stage that feeds them through the thread they run on.
//! A thread that runs several stages (the shards of one run) swaps each stage's budget in while
//! it feeds that stage, so what a shard may hold never depends on which shards share its thread,
//! and a run's output not on its number of threads.

use std::cell::Cell;

/// Bytes all messages in progress may hold together, past each one's floor.
pub(crate) const MAX_BYTES_HELD: u64 = 1 << 30;

/// Window bytes all brotli bodies in progress may hold together. Each asks for its window in
/// its first byte (up to 16 MiB) and holds it until it ends, so a capture of many connections
/// each opening a brotli body with a few bytes could otherwise make the decoders take gigabytes.
/// 512 MiB is 128 bodies at the 4 MiB window brotli encoders default to.
pub(crate) const MAX_WINDOWS_HELD: u64 = 512 << 20;

/// The least a share of the budget may be: one body at its own cap, one brotli window of the
/// largest size.
const LEAST_SHARE: u64 = 16 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(crate) bytes_held: u64,
    pub(crate) max_bytes_held: u64,
    pub(crate) windows_held: u64,
    pub(crate) max_windows_held: u64,
}

impl Budget {
    /// The whole budget, nothing held.
    pub(crate) const fn whole() -> Budget {
        Budget {
            bytes_held: 0,
            max_bytes_held: MAX_BYTES_HELD,
            windows_held: 0,
            max_windows_held: MAX_WINDOWS_HELD,
        }
    }

    /// One of `parts` equal shares of the whole budget.
    pub(crate) fn share(parts: u64) -> Budget {
        let part = |max: u64| (max / parts.max(1)).max(LEAST_SHARE);
        Budget {
            max_bytes_held: part(MAX_BYTES_HELD),
            max_windows_held: part(MAX_WINDOWS_HELD),
            ..Budget::whole()
        }
    }
}

thread_local! {
    static CURRENT: Cell<Budget> = const { Cell::new(Budget::whole()) };
}

/// The budget of the stage this thread feeds.
pub(crate) fn current() -> Budget {
    CURRENT.with(Cell::get)
}

/// Changes the budget of the stage this thread feeds.
pub(crate) fn update(change: impl FnOnce(&mut Budget)) {
    CURRENT.with(|c| {
        let mut b = c.get();
        change(&mut b);
        c.set(b);
    });
}

/// Makes `budget` the one this thread's parsers use; returns the one they used.
pub(crate) fn swap(budget: Budget) -> Budget {
    CURRENT.with(|c| c.replace(budget))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_divides_the_caps_but_never_below_one_body() {
        let eighth = Budget::share(8);
        assert_eq!(eighth.max_bytes_held, MAX_BYTES_HELD / 8);
        assert_eq!(eighth.max_windows_held, MAX_WINDOWS_HELD / 8);
        assert_eq!(Budget::share(1 << 20).max_windows_held, LEAST_SHARE);
        assert_eq!(Budget::share(1), Budget::whole());
    }

    #[test]
    fn swapping_keeps_each_stage_s_holdings_apart() {
        let outer = swap(Budget::share(2));
        update(|b| b.bytes_held += 5);
        let first = swap(Budget::share(2));
        assert_eq!(current().bytes_held, 0);
        assert_eq!(first.bytes_held, 5);
        swap(outer);
    }
}
