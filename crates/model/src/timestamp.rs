//! Capture time: nanoseconds since the Unix epoch, formatted and parsed with the `time` crate.

use std::fmt;

use time::format_description::FormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// A capture timestamp: nanoseconds since the Unix epoch, UTC.
///
/// Time always comes from the capture (packet timestamps, log fields), never from the clock of the
/// machine running the analysis, so output is reproducible.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

const RFC3339_MICROS: &[FormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");
const CLOCK_MILLIS: &[FormatItem<'_>] =
    format_description!("[hour]:[minute]:[second].[subsecond digits:3]");
const DATE: &[FormatItem<'_>] = format_description!("[year]-[month]-[day]");

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
        self.format(RFC3339_MICROS)
    }

    /// `HH:MM:SS.mmm` (UTC), for timelines where the date is printed once.
    pub fn clock_millis(self) -> String {
        self.format(CLOCK_MILLIS)
    }

    /// `YYYY-MM-DD` (UTC).
    pub fn date(self) -> String {
        self.format(DATE)
    }

    fn format(self, items: &[FormatItem<'_>]) -> String {
        // Every i64 of nanoseconds is a date between the years 1677 and 2262, which `time`
        // represents and formats: neither step can fail.
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0))
            .ok()
            .and_then(|t| t.format(items).ok())
            .unwrap_or_default()
    }

    /// Parses RFC 3339 / ISO 8601 date-times as found in HAR files, logs and `--since`.
    pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
        let parsed = OffsetDateTime::parse(text.trim(), &Rfc3339).ok()?;
        i64::try_from(parsed.unix_timestamp_nanos())
            .ok()
            .map(Timestamp)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rfc3339())
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
    fn handles_epoch_extremes_and_leap_days() {
        assert_eq!(Timestamp(0).rfc3339(), "1970-01-01T00:00:00.000000Z");
        let leap = Timestamp::from_secs_nanos(951_782_400, 0); // 2000-02-29
        assert_eq!(leap.date(), "2000-02-29");
        let before = Timestamp(-1);
        assert_eq!(before.rfc3339(), "1969-12-31T23:59:59.999999Z");
        assert_eq!(Timestamp(i64::MIN).date(), "1677-09-21");
        assert_eq!(Timestamp(i64::MAX).rfc3339(), "2262-04-11T23:47:16.854775Z");
    }

    #[test]
    fn parses_rfc3339_round_trip() {
        let t = Timestamp::parse_rfc3339("2026-11-02T12:00:41.120417Z").unwrap();
        assert_eq!(t.rfc3339(), "2026-11-02T12:00:41.120417Z");
        let offset = Timestamp::parse_rfc3339("2026-11-02T13:00:41+01:00").unwrap();
        assert_eq!(offset.rfc3339(), "2026-11-02T12:00:41.000000Z");
        assert!(Timestamp::parse_rfc3339("yesterday").is_none());
    }
}
