//! TCP sequence numbers: 32-bit values whose arithmetic and comparison are modulo 2^32 (RFC 9293
//! §3.4), in the manner of smoltcp's `TcpSeqNumber`. This is the one place in the crate that
//! wraps: the reassembler turns each sequence number into a 64-bit stream offset, which does not.

use std::cmp::Ordering;
use std::ops::{Add, Sub};

/// A TCP sequence or acknowledgement number, as on the wire.
///
/// Adding a length wraps at 2^32 (`SeqNumber(u32::MAX) + 2 == SeqNumber(1)`); the difference of
/// two is the signed distance between them the shorter way round; and one lies after another
/// when it is less than 2^31 ahead of it, so that `SeqNumber(u32::MAX) < SeqNumber(1)`. Like
/// every comparison on a circle, the order only means something between numbers less than 2^31
/// apart (any window of a real connection): it is not transitive across the whole space, and two
/// numbers exactly 2^31 apart are not ordered at all (RFC 1982 §3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// `self` lies at most `back` before and at most `ahead` after `center`.
    pub fn within(self, center: SeqNumber, back: u32, ahead: u32) -> bool {
        let d = i64::from(self - center);
        -i64::from(back) <= d && d <= i64::from(ahead)
    }
}

/// The number `n` bytes further on, modulo 2^32.
impl Add<u32> for SeqNumber {
    type Output = SeqNumber;

    fn add(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(n))
    }
}

/// The number `n` bytes before, modulo 2^32.
impl Sub<u32> for SeqNumber {
    type Output = SeqNumber;

    fn sub(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_sub(n))
    }
}

/// How far `self` lies after `other`, negative when before: the shorter way round, in
/// `-2^31..2^31` (exactly half the circle counts as before).
impl Sub for SeqNumber {
    type Output = i32;

    fn sub(self, other: SeqNumber) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }
}

/// After when less than 2^31 ahead, before when less than 2^31 behind; exactly 2^31 apart, neither.
impl PartialOrd for SeqNumber {
    fn partial_cmp(&self, other: &SeqNumber) -> Option<Ordering> {
        match self.0.wrapping_sub(other.0) {
            0 => Some(Ordering::Equal),
            d if d < 1 << 31 => Some(Ordering::Greater),
            d if d > 1 << 31 => Some(Ordering::Less),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u32 = u32::MAX;
    const HALF: u32 = 1 << 31;

    #[test]
    fn adding_and_subtracting_a_length_wraps_at_2_pow_32() {
        for (seq, n, sum) in [(1, 2, 3), (MAX, 1, 0), (MAX - 3, 7, 3), (5, MAX, 4)] {
            assert_eq!(SeqNumber(seq) + n, SeqNumber(sum), "{seq} + {n}");
            assert_eq!(SeqNumber(sum) - n, SeqNumber(seq), "{sum} - {n}");
        }
    }

    #[test]
    fn the_distance_is_signed_and_takes_the_shorter_way_round() {
        for (a, b, d) in [
            (10, 3, 7),
            (3, 10, -7),
            (2, MAX - 1, 4),
            (MAX - 1, 2, -4),
            (HALF - 1, 0, i32::MAX),
            (HALF, 0, i32::MIN),
            (0, HALF, i32::MIN),
        ] {
            assert_eq!(SeqNumber(a) - SeqNumber(b), d, "{a} - {b}");
        }
    }

    #[test]
    fn comparison_wraps() {
        let s = SeqNumber;
        assert!(s(MAX) < s(1) && s(1) > s(MAX));
        assert!(s(1) < s(2) && s(2) > s(1));
        assert_eq!(s(7).partial_cmp(&s(7)), Some(Ordering::Equal));
        assert!(s(0) < s(HALF - 1));
        assert_eq!(s(0).partial_cmp(&s(HALF)), None);
        assert_eq!(s(HALF).partial_cmp(&s(0)), None);
    }

    #[test]
    fn within_a_window_around_a_number_across_the_wrap() {
        let center = SeqNumber(MAX - 9);
        for (seq, inside) in [
            (MAX - 9, true),
            (MAX - 19, true),
            (MAX - 20, false),
            (MAX, true),
            (20, true),
            (21, false),
        ] {
            assert_eq!(SeqNumber(seq).within(center, 10, 30), inside, "{seq}");
        }
    }
}
