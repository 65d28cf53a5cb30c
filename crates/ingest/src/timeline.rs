//! The HTTP events of one non-capture input, sorted by time before they are emitted.
//!
//! HAR entries and log lines are not in time order (a log line is written when its request
//! ends; a HAR may list entries by completion), so an input is buffered whole, then emitted in
//! the order a capture of the same traffic would have produced: by time, and within one
//! exchange request → response head → events → end (times are made monotonic per exchange
//! before they are pushed, and ties keep the order of pushing). A connection's
//! `ConnectionStart` and `ConnectionEnd` are pushed like any other event, so they come before
//! its first request and after its last event, as TCP connections' do.

use mcpf_http::{HttpEvent, HttpSink};
use mcpf_model::Timestamp;

#[derive(Default)]
pub(crate) struct Timeline {
    items: Vec<(Timestamp, usize, HttpEvent)>,
}

impl Timeline {
    pub(crate) fn push(&mut self, time: Timestamp, event: HttpEvent) {
        let seq = self.items.len();
        self.items.push((time, seq, event));
    }

    /// Emits every event in time order (ties in the order they were pushed).
    pub(crate) fn emit(mut self, sink: &mut impl HttpSink) {
        self.items.sort_by_key(|(t, seq, _)| (*t, *seq));
        for (_, _, event) in self.items {
            sink.on_http(event);
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
