//! The HTTP events of one non-capture input, emitted in time order.
//!
//! HAR entries and log lines are not in time order (a log line is written when its request
//! ends; an entry's response ends after later entries start), so events wait here and leave in
//! the order a capture of the same traffic would have produced: by time, and within one
//! exchange request → response head → events → end (times are made monotonic per exchange
//! before they are pushed). Ties: a connection's `ConnectionStart` before every other event of
//! the same time and its `ConnectionEnd` after them (as TCP connections' come), the rest in the
//! order of their exchange's rank ([`Timeline::begin`]) and then of pushing.
//!
//! A reader that knows no later event can come before a time `w` calls
//! [`Timeline::flush_before`], so only the events still in flight are held; at most
//! [`MAX_REORDER_BYTES`] are, beyond which the earliest leave anyway and those that then come
//! out of order are counted ([`Timeline::out_of_order`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use mcpf_http::{HttpEvent, HttpSink};
use mcpf_model::Timestamp;

/// Bytes of held events (bodies, event data, plus [`EVENT_OVERHEAD`] each) beyond which the
/// earliest are emitted without waiting: a HAR whose entries are far out of start order is then
/// emitted nearly in order, with a counted warning, instead of being held whole.
pub(crate) const MAX_REORDER_BYTES: usize = 256 << 20;

/// What an event costs beside its bytes, for [`MAX_REORDER_BYTES`].
const EVENT_OVERHEAD: usize = 256;

/// (time, 0 start / 1 other / 2 end, rank or push order, order within the rank).
type Key = (Timestamp, u8, u64, u64);

struct Held {
    key: Key,
    bytes: usize,
    event: HttpEvent,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

#[derive(Default)]
pub(crate) struct Timeline {
    held: BinaryHeap<Reverse<Held>>,
    held_bytes: usize,
    seq: u64,
    rank: Option<u64>,
    sub: u64,
    last: Option<Key>,
    /// Events emitted after one that sorts later (the reorder window was full).
    pub(crate) out_of_order: u64,
}

impl Timeline {
    /// The events pushed next belong to the exchange of this rank (its place in start order),
    /// whatever the order they are pushed in.
    pub(crate) fn begin(&mut self, rank: u64) {
        self.rank = Some(rank);
        self.sub = 0;
    }

    pub(crate) fn push(&mut self, time: Timestamp, event: HttpEvent) {
        let class = match event {
            HttpEvent::ConnectionStart { .. } => 0,
            HttpEvent::ConnectionEnd { .. } => 2,
            _ => 1,
        };
        let (a, b) = match self.rank {
            Some(rank) if class == 1 => {
                self.sub += 1;
                (rank, self.sub)
            }
            _ => {
                self.seq += 1;
                (self.seq, 0)
            }
        };
        let bytes = EVENT_OVERHEAD
            + match &event {
                HttpEvent::Request(r) => r.body.data.len(),
                HttpEvent::ResponseEnd(r) => r.body.data.len(),
                HttpEvent::SseEvent { event, .. } => event.data.len(),
                _ => 0,
            };
        self.held_bytes += bytes;
        self.held.push(Reverse(Held {
            key: (time, class, a, b),
            bytes,
            event,
        }));
    }

    /// Emits the events before `w` (no later push comes before it), then the earliest beyond
    /// [`MAX_REORDER_BYTES`].
    pub(crate) fn flush_before(&mut self, w: Timestamp, sink: &mut impl HttpSink) {
        while self.held.peek().is_some_and(|h| h.0.key.0 < w) {
            self.pop(sink);
        }
        self.trim(sink);
    }

    /// Emits the earliest events beyond [`MAX_REORDER_BYTES`].
    pub(crate) fn trim(&mut self, sink: &mut impl HttpSink) {
        while self.held_bytes > MAX_REORDER_BYTES {
            self.pop(sink);
        }
    }

    fn pop(&mut self, sink: &mut impl HttpSink) {
        let Some(Reverse(h)) = self.held.pop() else {
            return;
        };
        self.held_bytes -= h.bytes;
        match self.last {
            Some(last) if h.key < last => self.out_of_order += 1,
            _ => self.last = Some(h.key),
        }
        sink.on_http(h.event);
    }

    /// Emits every event still held, in order.
    pub(crate) fn emit(mut self, sink: &mut impl HttpSink) {
        while !self.held.is_empty() {
            self.pop(sink);
        }
    }
}

/// `t` moved forward to `floor` when earlier: times of one exchange never go backwards.
pub(crate) fn not_before(t: Timestamp, floor: Timestamp) -> Timestamp {
    t.max(floor)
}

/// Milliseconds (as HAR timings and Envoy durations give them) to nanoseconds.
pub(crate) fn ms_to_ns(ms: f64) -> i64 {
    if !ms.is_finite() || ms <= 0.0 {
        return 0;
    }
    (ms * 1e6).round().min(i64::MAX as f64) as i64
}

/// Seconds to nanoseconds.
pub(crate) fn secs_to_ns(s: f64) -> i64 {
    if !s.is_finite() || s <= 0.0 {
        return 0;
    }
    (s * 1e9).round().min(i64::MAX as f64) as i64
}

/// A time given as `value` units of `nanos_per_unit` nanoseconds since the Unix epoch, without
/// the rounding error of one `f64` product (Unix nanoseconds need 61 bits).
pub(crate) fn epoch_scaled(value: f64, nanos_per_unit: i64) -> Timestamp {
    if !value.is_finite() {
        return Timestamp(0);
    }
    let whole = value.trunc();
    let frac = value - whole;
    let whole = whole.clamp(i64::MIN as f64, i64::MAX as f64) as i64;
    Timestamp(
        whole
            .saturating_mul(nanos_per_unit)
            .saturating_add((frac * nanos_per_unit as f64).round() as i64),
    )
}

/// A decimal string (`1796013365.789`) in units of `nanos_per_unit`, exactly.
pub(crate) fn epoch_decimal(s: &str, nanos_per_unit: i64) -> Option<Timestamp> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut nanos = whole.checked_mul(nanos_per_unit)?;
    // Fraction of a unit, in nanoseconds: digits beyond nanosecond precision are dropped.
    let mut scale = nanos_per_unit;
    for b in frac.bytes() {
        if scale < 10 {
            break;
        }
        scale /= 10;
        nanos = nanos.checked_add(i64::from(b - b'0') * scale)?;
    }
    Some(Timestamp(if neg { -nanos } else { nanos }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_values_keep_their_precision() {
        assert_eq!(
            epoch_scaled(1_796_013_366.25, 1_000_000_000),
            Timestamp(1_796_013_366_250_000_000)
        );
        assert_eq!(
            epoch_decimal("1796013365.789", 1_000_000_000),
            Some(Timestamp(1_796_013_365_789_000_000))
        );
        assert_eq!(
            epoch_decimal("1796013365789.5", 1_000_000),
            Some(Timestamp(1_796_013_365_789_500_000))
        );
        assert_eq!(
            epoch_decimal("12", 1_000_000_000),
            Some(Timestamp(12_000_000_000))
        );
        assert_eq!(epoch_decimal("1.2.3", 1), None);
        assert_eq!(epoch_decimal("", 1), None);
    }
}
