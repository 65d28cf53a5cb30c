//! The sequence-number newtype: the one place in the reassembler that does arithmetic
//! modulo 2^32. Everything past it works on 64-bit stream offsets, which do not wrap.

/// A TCP sequence number: 32 bits compared modulo 2^32 (RFC 9293 §3.4), so that wraparound is
/// handled here and nowhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SeqNumber(pub(crate) u32);

impl SeqNumber {
    pub(super) fn add(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(n))
    }

    /// How far `self` lies after `other` (negative when before), the shorter way round.
    pub(super) fn since(self, other: SeqNumber) -> i64 {
        i64::from(self.0.wrapping_sub(other.0) as i32)
    }

    /// `self` lies at most `back` before and at most `ahead` after `center`.
    pub(super) fn within(self, center: SeqNumber, back: u32, ahead: u32) -> bool {
        let d = self.since(center);
        -i64::from(back) <= d && d <= i64::from(ahead)
    }
}
