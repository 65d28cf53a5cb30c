//! Duplicate frames: the second copy of a packet that a mirror or a capture on several
//! interfaces delivers, removed before reassembly (as `editcap -d` removes them) and counted.
//!
//! Where copies come from: a SPAN session whose sources are both the port a packet came in on
//! and the port it left by delivers it twice, microseconds apart, byte for byte the same (or
//! once with a VLAN tag and once without); two ERSPAN or VXLAN mirror sessions wrap one frame
//! twice; `tcpdump -i any` on a host where a packet crosses a veth and a bridge sees it on both.
//!
//! The rule: a TCP frame is a copy when its IP packet (the innermost one, from the first byte
//! of its header to the length that header gives: IP ID, TTL and checksum included) is byte for
//! byte the IP packet of one of the [`WINDOW_FRAMES`] TCP frames of the same input kept before
//! it, captured at most [`WINDOW_NANOS`] apart. What comes before the IP header (link layer,
//! VLAN tags, tunnel headers) is left out of the comparison: that is what differs between the
//! copies of a mirror. `editcap -d` compares the MD5 and length of whole frames with the four
//! before each, at any distance in time; exact bytes leave no hash to collide, and the time
//! limit keeps the window small on a quiet link too.
//!
//! Why a retransmission is not taken for a copy: a sender's retransmission is a new IP packet.
//! Linux and Windows give every IPv4 packet of a connection its own IP ID (and the TCP timestamp
//! option moves on), so it is not the same bytes; and no stack retransmits within 1 ms (an RTO
//! is at least 1 s by RFC 6298 §2.4, 200 ms on Linux; Linux's tail loss probe waits at least
//! 10 ms). A packet identical to one a millisecond earlier is the network's or the mirror's
//! copy. Were it ever a sender's (an IPv6 packet has no ID), dropping it would hide no byte of
//! the stream, since its bytes are those of the packet kept, and the report counts it. A copy
//! that crossed a router (TTL one lower) is not the same bytes and is left to reassembly, which
//! reads it as a retransmission of the same data.
//!
//! Memory is bounded: [`WINDOW_FRAMES`] IP packets per input, each at most [`MAX_IP_PACKET`]
//! bytes.

use mcpf_model::Timestamp;

/// How many TCP frames before it a copy is looked for among: `editcap -d`'s four.
pub(crate) const WINDOW_FRAMES: usize = 4;
/// How far apart in capture time a copy and its original may be: 1 ms, well above the
/// microseconds between a mirror's copies and below any stack's retransmission timer.
pub(crate) const WINDOW_NANOS: u64 = 1_000_000;
/// The longest IP packet: IPv6's 40-byte header and a 65,535-byte payload (a jumbogram's length
/// is not in its header, and so it is not remembered).
const MAX_IP_PACKET: usize = 40 + 65_535;

/// The IP packets of the last TCP frames of one input.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    slots: [Slot; WINDOW_FRAMES],
    /// The slot the next packet kept goes into: the oldest.
    next: usize,
}

#[derive(Debug, Default)]
struct Slot {
    time: Timestamp,
    /// [`fingerprint`] of the packet: packets of other fingerprints differ, and only an equal
    /// one makes the bytes worth comparing.
    fingerprint: u64,
    /// The IP packet (empty: nothing kept yet).
    ip: Vec<u8>,
}

impl Slot {
    /// Whether the packet kept here is `ip` (of `fingerprint`), captured within the window of
    /// `time`.
    fn holds(&self, time: Timestamp, fingerprint: u64, ip: &[u8]) -> bool {
        self.fingerprint == fingerprint
            && time.0.abs_diff(self.time.0) <= WINDOW_NANOS
            && self.ip == ip
    }
}

/// A few bytes of `ip` that differ between nearly any two packets, read without a loop: its
/// length, its bytes 4 to 12 (IPv4: the ID, fragment field, TTL, protocol and header checksum;
/// IPv6: the payload length, next header, hop limit and the start of the source address) and
/// its last 8 bytes (in a segment that carries no data, the end of the TCP header: the
/// acknowledgement, window or timestamps). Equal fingerprints prove nothing; the bytes decide.
fn fingerprint(ip: &[u8]) -> u64 {
    let word = |b: Option<&[u8]>| {
        b.and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, u64::from_ne_bytes)
    };
    let tail = ip.len().checked_sub(8).and_then(|at| ip.get(at..));
    word(ip.get(4..12)) ^ word(tail).rotate_left(29) ^ ip.len() as u64
}

impl Recent {
    /// Whether `ip`, the IP packet of a TCP frame captured at `time`, is a copy of one of the
    /// recent frames; a packet that is not is kept for the frames after it.
    pub(crate) fn is_copy(&mut self, time: Timestamp, ip: &[u8]) -> bool {
        if ip.is_empty() || ip.len() > MAX_IP_PACKET {
            return false;
        }
        let fingerprint = fingerprint(ip);
        if self.slots.iter().any(|s| s.holds(time, fingerprint, ip)) {
            return true;
        }
        let slot = &mut self.slots[self.next];
        slot.time = time;
        slot.fingerprint = fingerprint;
        slot.ip.clear();
        slot.ip.extend_from_slice(ip);
        self.next = (self.next + 1) % WINDOW_FRAMES;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 packet of 40 bytes (no options, a bare TCP header) with IP ID `id`.
    fn packet(id: u16) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 40];
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&[0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        p.extend_from_slice(&[0x9c, 0x40, 0x1f, 0x90, 0, 0, 0, 7, 0, 0, 0, 9, 0x50, 0x10]);
        p.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        p
    }

    fn at(micros: i64) -> Timestamp {
        Timestamp(1_700_000_000_000_000_000 + micros * 1000)
    }

    #[test]
    fn a_mirrors_second_and_third_copies_are_copies() {
        let mut r = Recent::default();
        assert!(!r.is_copy(at(0), &packet(1)));
        assert!(r.is_copy(at(7), &packet(1)));
        assert!(r.is_copy(at(30), &packet(1)), "a third mirrored port");
    }

    #[test]
    fn a_retransmission_with_a_new_ip_id_is_no_copy() {
        // The same segment sent again: a new IP ID (and so another checksum), at once.
        let mut r = Recent::default();
        assert!(!r.is_copy(at(0), &packet(1)));
        assert!(!r.is_copy(at(1), &packet(2)));
    }

    #[test]
    fn the_same_bytes_later_than_a_millisecond_are_no_copy() {
        let mut r = Recent::default();
        assert!(!r.is_copy(at(0), &packet(1)));
        assert!(!r.is_copy(at(1001), &packet(1)), "past 1 ms");
        // A timestamp a little earlier than its original's (two interfaces' clocks): a copy.
        let mut r = Recent::default();
        assert!(!r.is_copy(at(100), &packet(1)));
        assert!(r.is_copy(at(95), &packet(1)));
    }

    #[test]
    fn the_window_is_four_frames() {
        let mut r = Recent::default();
        assert!(!r.is_copy(at(0), &packet(1)));
        for id in 2..=4 {
            assert!(!r.is_copy(at(1), &packet(id)));
        }
        assert!(r.is_copy(at(2), &packet(1)), "four frames back");
        assert!(!r.is_copy(at(3), &packet(5)));
        assert!(!r.is_copy(at(4), &packet(1)), "five frames back: forgotten");
    }

    #[test]
    fn packets_that_differ_past_the_fingerprinted_bytes_are_no_copies() {
        let mut r = Recent::default();
        let a = packet(1);
        let mut b = a.clone();
        b[20] ^= 1; // the source port: not among the bytes the fingerprint reads
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert!(!r.is_copy(at(0), &a));
        assert!(!r.is_copy(at(1), &b), "the bytes decide");
        assert!(r.is_copy(at(2), &b), "and b itself was kept");
    }

    #[test]
    fn a_packet_that_is_a_prefix_of_another_is_no_copy() {
        let mut r = Recent::default();
        let long = packet(1);
        assert!(!r.is_copy(at(0), &long));
        assert!(!r.is_copy(at(1), &long[..30]));
        assert!(!r.is_copy(at(2), &[]), "nothing is never a copy");
        assert!(!r.is_copy(at(3), &[]));
    }
}
