//! Plain data shared by every stage: capture time, frame references, endpoints.
//!
//! Nothing here knows about a protocol; it only gives later stages the vocabulary they need to
//! cite evidence (which input, which frame, when).

use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// A capture timestamp: nanoseconds since the Unix epoch, UTC.
///
/// Time always comes from the capture (packet timestamps, log fields), never from the clock of the
/// machine running the analysis, so output is reproducible.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const NANOS_PER_SEC: i64 = 1_000_000_000;

    pub fn from_secs_nanos(secs: i64, nanos: u32) -> Self {
        Timestamp(
            secs.saturating_mul(Self::NANOS_PER_SEC)
                .saturating_add(i64::from(nanos)),
        )
    }

    pub fn from_secs_f64(secs: f64) -> Self {
        if !secs.is_finite() {
            return Timestamp(0);
        }
        Timestamp((secs * 1e9).round().clamp(i64::MIN as f64, i64::MAX as f64) as i64)
    }

    pub fn secs(self) -> i64 {
        self.0.div_euclid(Self::NANOS_PER_SEC)
    }

    pub fn subsec_nanos(self) -> u32 {
        self.0.rem_euclid(Self::NANOS_PER_SEC) as u32
    }

    /// Seconds elapsed from `earlier` to `self` (negative when `self` is earlier).
    pub fn seconds_since(self, earlier: Timestamp) -> f64 {
        (self.0.saturating_sub(earlier.0)) as f64 / 1e9
    }

    pub fn add_nanos(self, nanos: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(nanos))
    }

    /// RFC 3339 in UTC with microsecond precision, e.g. `2026-11-02T12:00:41.120417Z`.
    pub fn rfc3339(self) -> String {
        let (date, time) = self.civil();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
            date.0,
            date.1,
            date.2,
            time.0,
            time.1,
            time.2,
            self.subsec_nanos() / 1000
        )
    }

    /// `HH:MM:SS.mmm` (UTC), for timelines where the date is printed once.
    pub fn clock_millis(self) -> String {
        let (_, time) = self.civil();
        format!(
            "{:02}:{:02}:{:02}.{:03}",
            time.0,
            time.1,
            time.2,
            self.subsec_nanos() / 1_000_000
        )
    }

    /// `YYYY-MM-DD` (UTC).
    pub fn date(self) -> String {
        let (date, _) = self.civil();
        format!("{:04}-{:02}-{:02}", date.0, date.1, date.2)
    }

    fn civil(self) -> ((i64, u32, u32), (u32, u32, u32)) {
        let secs = self.secs();
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400) as u32;
        (
            civil_from_days(days),
            (sod / 3600, (sod % 3600) / 60, sod % 60),
        )
    }

    /// Parses RFC 3339 / ISO 8601 date-times as found in HAR files, logs and `--since`.
    pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
        let parsed = time::OffsetDateTime::parse(
            text.trim(),
            &time::format_description::well_known::Rfc3339,
        )
        .ok()?;
        let nanos = parsed.unix_timestamp_nanos();
        i64::try_from(nanos).ok().map(Timestamp)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

/// Howard Hinnant's days-from-civil inverse: proleptic Gregorian (year, month, day) for a count of
/// days since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Index of an input file in the order given on the command line (0-based).
pub type InputId = u32;

/// A packet (or log line, or HAR entry) in a given input, numbered from 1 as Wireshark numbers
/// frames, so a person can jump to it with `frame.number == N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameRef {
    pub input: InputId,
    pub frame: u64,
}

impl FrameRef {
    pub fn new(input: InputId, frame: u64) -> Self {
        FrameRef { input, frame }
    }
}

/// Where and when a piece of reassembled data was completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark {
    pub time: Timestamp,
    pub frame: FrameRef,
}

/// An endpoint formatted as tools print it: `ip:port`, IPv6 as `[addr]:port`.
pub fn endpoint(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() && addr.port() == 0 {
        // A source that does not record addresses (an access log, a HAR).
        return "unknown".into();
    }
    match addr.ip() {
        IpAddr::V4(ip) => format!("{ip}:{}", addr.port()),
        IpAddr::V6(ip) => format!("[{ip}]:{}", addr.port()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_with_micros() {
        let t = Timestamp::from_secs_nanos(1_793_620_841, 120_417_999);
        assert_eq!(t.rfc3339(), "2026-11-02T12:00:41.120417Z");
        assert_eq!(t.clock_millis(), "12:00:41.120");
    }

    #[test]
    fn handles_epoch_and_leap_days() {
        assert_eq!(Timestamp(0).rfc3339(), "1970-01-01T00:00:00.000000Z");
        let leap = Timestamp::from_secs_nanos(951_782_400, 0); // 2000-02-29
        assert_eq!(leap.date(), "2000-02-29");
        let before = Timestamp(-1);
        assert_eq!(before.rfc3339(), "1969-12-31T23:59:59.999999Z");
    }

    #[test]
    fn parses_rfc3339_round_trip() {
        let t = Timestamp::parse_rfc3339("2026-11-02T12:00:41.120417Z").unwrap();
        assert_eq!(t.rfc3339(), "2026-11-02T12:00:41.120417Z");
        let offset = Timestamp::parse_rfc3339("2026-11-02T13:00:41+01:00").unwrap();
        assert_eq!(offset.rfc3339(), "2026-11-02T12:00:41.000000Z");
        assert!(Timestamp::parse_rfc3339("yesterday").is_none());
    }

    #[test]
    fn formats_endpoints() {
        assert_eq!(
            endpoint("127.0.0.1:8080".parse().unwrap()),
            "127.0.0.1:8080"
        );
        assert_eq!(endpoint("[::1]:3000".parse().unwrap()), "[::1]:3000");
    }
}
