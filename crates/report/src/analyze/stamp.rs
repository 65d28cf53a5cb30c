//! Timestamps and addresses as the session records write them, formatted on the stack: a record
//! holds a few per stream, and `Timestamp::rfc3339` (the `time` crate's formatter into a new
//! `String`) and `format!` of an address were a fifth of rendering a record. The text is the
//! same, byte for byte (see the tests).

use std::net::{IpAddr, SocketAddr};

use serde::{Serialize, Serializer};

use mcpf_model::Timestamp;

/// A timestamp serialized as `Timestamp::rfc3339` writes it: `2026-11-02T12:00:41.120417Z`.
#[derive(Clone, Copy)]
pub(super) struct Rfc3339(pub Timestamp);

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`: every i64 of nanoseconds is in the years 1677 to 2262.
const RFC3339_LEN: usize = 27;

/// The civil date (year, month, day) of a count of days since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Writes `value` as `width` decimal digits ending at `out[end]`.
fn digits(out: &mut [u8], end: usize, width: usize, mut value: i64) {
    for at in (end + 1 - width..=end).rev() {
        out[at] = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

impl Rfc3339 {
    fn bytes(self) -> [u8; RFC3339_LEN] {
        let secs = self.0.secs();
        let (year, month, day) = civil(secs.div_euclid(86_400));
        let of_day = secs.rem_euclid(86_400);
        let mut out = *b"0000-00-00T00:00:00.000000Z";
        digits(&mut out, 3, 4, year);
        digits(&mut out, 6, 2, month);
        digits(&mut out, 9, 2, day);
        digits(&mut out, 12, 2, of_day / 3600);
        digits(&mut out, 15, 2, of_day / 60 % 60);
        digits(&mut out, 18, 2, of_day % 60);
        // Truncated to microseconds, as `time`'s `subsecond digits:6` does.
        digits(&mut out, 25, 6, i64::from(self.0.subsec_nanos() / 1000));
        out
    }
}

impl Serialize for Rfc3339 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = self.bytes();
        // Digits and ASCII punctuation only.
        s.serialize_str(std::str::from_utf8(&bytes).unwrap_or_default())
    }
}

/// An endpoint serialized as `mcpf_model::endpoint` writes it: `10.0.0.1:8080`, `[::1]:8080`, or
/// `unknown` for a source that does not record addresses.
#[derive(Clone, Copy)]
pub(super) struct Endpoint(pub SocketAddr);

/// `255.255.255.255:65535`
const V4_ENDPOINT_LEN: usize = 21;

/// Writes the decimal digits of `value` at `out[at..]`; returns the position after them.
fn decimal(out: &mut [u8], at: usize, value: u32) -> usize {
    let width = value.checked_ilog10().unwrap_or(0) as usize + 1;
    digits(out, at + width - 1, width, i64::from(value));
    at + width
}

impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let IpAddr::V4(ip) = self.0.ip() else {
            return s.serialize_str(&mcpf_model::endpoint(self.0));
        };
        if ip.is_unspecified() && self.0.port() == 0 {
            return s.serialize_str("unknown");
        }
        let mut out = [0u8; V4_ENDPOINT_LEN];
        let mut at = 0;
        for (k, octet) in ip.octets().into_iter().enumerate() {
            if k > 0 {
                out[at] = b'.';
                at += 1;
            }
            at = decimal(&mut out, at, u32::from(octet));
        }
        out[at] = b':';
        at = decimal(&mut out, at + 1, u32::from(self.0.port()));
        s.serialize_str(std::str::from_utf8(&out[..at]).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(v: impl Serialize) -> String {
        serde_json::to_string(&v).unwrap()
    }

    #[test]
    fn timestamps_read_as_the_time_crate_writes_them() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut stamps = vec![i64::MIN, i64::MAX, 0, -1, 1, 951_782_400_000_000_000];
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            stamps.push(seed as i64);
            // Days around now, where captures are.
            stamps.push(1_700_000_000_000_000_000 + (seed % (1 << 58)) as i64);
        }
        for t in stamps.into_iter().map(Timestamp) {
            assert_eq!(json(Rfc3339(t)), format!("\"{}\"", t.rfc3339()), "{t:?}");
        }
    }

    #[test]
    fn endpoints_read_as_the_model_writes_them() {
        for addr in [
            "10.0.0.1:8080",
            "0.0.0.0:0",
            "0.0.0.0:80",
            "255.255.255.255:65535",
            "1.2.3.4:0",
            "[::1]:8080",
            "[::]:0",
        ] {
            let addr: SocketAddr = addr.parse().unwrap();
            assert_eq!(
                json(Endpoint(addr)),
                format!("\"{}\"", mcpf_model::endpoint(addr))
            );
        }
    }
}
