//! Where every packet and byte of one input went. Each is counted in exactly one bucket of a
//! [`Ledger`], so a reader of the report can check that nothing was dropped in silence:
//! `analysed + Σ skipped + Σ lost == total`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Bucket names shared by every stage, so the same reason is spelled one way in the report.
pub mod bucket {
    /// Skipped: the file's own structure (file header, record headers, non-packet blocks).
    pub const FILE_FRAMING: &str = "file_framing";
    /// Skipped: a link type we do not decode.
    pub const UNKNOWN_LINK_TYPE: &str = "unknown_link_type";
    /// Skipped: not IP, or IP but not TCP.
    pub const NOT_TCP: &str = "not_tcp";
    /// Skipped: a frame whose IP packet is byte for byte that of a recent frame (a mirror's
    /// second copy, or one packet captured on two interfaces).
    pub const DUPLICATE: &str = "duplicate";
    /// Skipped: TCP that does not carry HTTP/1.1 (TLS, other protocols, nothing at all).
    pub const NOT_HTTP: &str = "not_http";
    /// Skipped: HTTP that carries no MCP exchange.
    pub const NOT_MCP: &str = "not_mcp";
    /// Skipped: a record of a text source (HAR entry, access-log line) that is valid JSON but
    /// not one its reader recognises (no request, keys of no known log format, a missing time).
    pub const NOT_RECOGNISED: &str = "not_recognised";
    /// Lost: bytes of a record or block that could not be parsed, skipped while resynchronising.
    pub const CORRUPT_RECORD: &str = "corrupt_record";
    /// Lost: the file (or its gzip stream) ends in the middle of a record.
    pub const TRUNCATED: &str = "truncated";
    /// Lost: dropped because a cap was reached (connections, out-of-order pieces, decode size).
    pub const CAP_REACHED: &str = "cap_reached";
    /// Missing (on the wire, not in the file): sequence space the capture never saw.
    pub const GAP: &str = "gap";
    /// Missing: the bytes of frames beyond the capture's snap length.
    pub const SNAP_LENGTH: &str = "snap_length";
}

/// One kind of unit (packets or bytes) split into buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    pub total: u64,
    pub analysed: u64,
    pub skipped: BTreeMap<String, u64>,
    pub lost: BTreeMap<String, u64>,
}

impl Ledger {
    /// Counts `n` units into the total and the analysed bucket.
    pub fn analyse(&mut self, n: u64) {
        self.total += n;
        self.analysed += n;
    }

    /// Counts `n` units into the total and a skipped bucket.
    pub fn skip(&mut self, reason: &str, n: u64) {
        self.total += n;
        add(&mut self.skipped, reason, n);
    }

    /// Counts `n` units into the total and a lost bucket.
    pub fn lose(&mut self, reason: &str, n: u64) {
        self.total += n;
        add(&mut self.lost, reason, n);
    }

    /// Moves `n` units already counted as analysed to a skipped bucket: a later stage learnt
    /// they were not its protocol. Never moves more than was analysed.
    pub fn reclassify_skipped(&mut self, reason: &str, n: u64) {
        let n = n.min(self.analysed);
        self.analysed -= n;
        add(&mut self.skipped, reason, n);
    }

    /// Moves `n` analysed units to a lost bucket (a cap reached after they were counted).
    pub fn reclassify_lost(&mut self, reason: &str, n: u64) {
        let n = n.min(self.analysed);
        self.analysed -= n;
        add(&mut self.lost, reason, n);
    }

    /// Whether the buckets add up to the total.
    pub fn balanced(&self) -> bool {
        let sum =
            self.analysed + self.skipped.values().sum::<u64>() + self.lost.values().sum::<u64>();
        sum == self.total
    }

    pub fn merge(&mut self, other: &Ledger) {
        self.total += other.total;
        self.analysed += other.analysed;
        for (k, v) in &other.skipped {
            add(&mut self.skipped, k, *v);
        }
        for (k, v) in &other.lost {
            add(&mut self.lost, k, *v);
        }
    }
}

fn add(map: &mut BTreeMap<String, u64>, reason: &str, n: u64) {
    if n == 0 {
        return;
    }
    match map.get_mut(reason) {
        Some(v) => *v += n,
        None => {
            map.insert(reason.to_string(), n);
        }
    }
}

/// Where one input's packets and bytes went, and what the wire had that the file lacks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    /// Records of the file (a corrupt stretch skipped while resynchronising counts as one).
    pub packets: Ledger,
    /// Bytes of the file as read (after gzip decompression).
    pub bytes: Ledger,
    /// Bytes the traffic had that the file does not hold, by reason (gap, snap length): not
    /// part of `bytes.total`, since they were never in the file.
    pub missing_bytes: BTreeMap<String, u64>,
}

impl Accounting {
    pub fn missing(&mut self, reason: &str, n: u64) {
        add(&mut self.missing_bytes, reason, n);
    }

    pub fn balanced(&self) -> bool {
        self.packets.balanced() && self.bytes.balanced()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_add_up_after_reclassifying() {
        let mut l = Ledger::default();
        l.analyse(10);
        l.skip(bucket::NOT_TCP, 3);
        l.lose(bucket::CORRUPT_RECORD, 2);
        l.reclassify_skipped(bucket::NOT_HTTP, 4);
        l.reclassify_lost(bucket::CAP_REACHED, 100);
        assert!(l.balanced());
        assert_eq!(l.total, 15);
        assert_eq!(l.analysed, 0);
        assert_eq!(l.skipped[bucket::NOT_HTTP], 4);
        assert_eq!(l.lost[bucket::CAP_REACHED], 6);
    }

    #[test]
    fn an_unbalanced_ledger_is_seen() {
        let mut l = Ledger::default();
        l.analyse(1);
        l.total += 1;
        assert!(!l.balanced());
    }
}
