//! Times and durations as access logs write them: Unix epochs in any unit (judged by
//! magnitude), ISO 8601, nginx `$time_local`, Caddy's wall clock, and durations as numbers,
//! nginx's per-upstream lists or Go duration strings.

use serde_json::Value;

use mcpf_model::Timestamp;

use crate::timeline::{epoch_decimal, epoch_scaled, ms_to_ns, secs_to_ns};

/// Unit of a mapped duration field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum DurationUnit {
    #[default]
    Seconds,
    Millis,
    Micros,
    Nanos,
}

impl DurationUnit {
    fn to_ns(self, v: f64) -> i64 {
        match self {
            DurationUnit::Seconds => secs_to_ns(v),
            DurationUnit::Millis => ms_to_ns(v),
            DurationUnit::Micros => secs_to_ns(v / 1e6),
            DurationUnit::Nanos => secs_to_ns(v / 1e9),
        }
    }
}

/// A normalized key without its unit suffix, and the unit the suffix names (`time_total_ms` →
/// `time_total`, milliseconds).
pub(super) fn unit_suffix(norm: &str) -> (&str, Option<DurationUnit>) {
    const SUFFIXES: &[(&str, DurationUnit)] = &[
        ("_milliseconds", DurationUnit::Millis),
        ("_millis", DurationUnit::Millis),
        ("_msec", DurationUnit::Millis),
        ("_ms", DurationUnit::Millis),
        ("_microseconds", DurationUnit::Micros),
        ("_micros", DurationUnit::Micros),
        ("_usec", DurationUnit::Micros),
        ("_us", DurationUnit::Micros),
        ("_ns", DurationUnit::Nanos),
        ("_seconds", DurationUnit::Seconds),
        ("_secs", DurationUnit::Seconds),
        ("_sec", DurationUnit::Seconds),
        ("_s", DurationUnit::Seconds),
    ];
    SUFFIXES
        .iter()
        .find_map(|(suffix, unit)| {
            let base = norm.strip_suffix(suffix)?;
            (!base.is_empty()).then_some((base, Some(*unit)))
        })
        .unwrap_or((norm, None))
}

/// The response's first byte: `header_time` after the start, within the exchange.
pub(super) fn head_time(start: Timestamp, end: Timestamp, header_time: Option<i64>) -> Timestamp {
    start
        .add_nanos(header_time.unwrap_or(0))
        .clamp(start, end.max(start))
}

/// A time: Unix epoch (seconds, or ms/µs/ns judged by magnitude) as a number or a string, ISO
/// 8601, nginx `$time_local` (`30/Nov/2026:04:36:05 +0000`) or `YYYY-MM-DD HH:MM:SS[.f]`.
pub(super) fn parse_time(v: &Value) -> Option<Timestamp> {
    match v {
        Value::Number(n) => match n.as_i64() {
            Some(i) => Some(epoch_int(i)),
            None => n.as_f64().map(epoch_float),
        },
        Value::String(s) => {
            let s = s.trim();
            if s.is_empty() || s == "-" {
                return None;
            }
            if let Ok(i) = s.parse::<i64>() {
                return Some(epoch_int(i));
            }
            if let Ok(f) = s.parse::<f64>() {
                return epoch_decimal(s, epoch_unit(f)).or(Some(epoch_float(f)));
            }
            Timestamp::parse_rfc3339(s)
                .or_else(|| time_local(s))
                .or_else(|| space_separated(s))
        }
        _ => None,
    }
}

/// Nanoseconds per unit of an epoch value judged by its magnitude: s, ms, µs or ns.
fn epoch_unit(v: f64) -> i64 {
    let a = v.abs();
    if a >= 1e17 {
        1
    } else if a >= 1e14 {
        1_000
    } else if a >= 1e11 {
        1_000_000
    } else {
        1_000_000_000
    }
}

fn epoch_int(i: i64) -> Timestamp {
    Timestamp(i.saturating_mul(epoch_unit(i as f64)))
}

fn epoch_float(f: f64) -> Timestamp {
    epoch_scaled(f, epoch_unit(f))
}

/// nginx `$time_local`: `30/Nov/2026:04:36:05 +0000`.
fn time_local(s: &str) -> Option<Timestamp> {
    let (date, rest) = s.split_once(':')?;
    let mut d = date.split('/');
    let (day, mon, year) = (d.next()?, d.next()?, d.next()?);
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let m = months.iter().position(|x| x.eq_ignore_ascii_case(mon))? + 1;
    let (clock, zone) = rest.split_once(' ').unwrap_or((rest, "+0000"));
    let zone = zone.trim();
    let zone = if zone.len() == 5 && zone.is_ascii() {
        format!("{}:{}", &zone[..3], &zone[3..])
    } else {
        "Z".to_string()
    };
    let day: u32 = day.parse().ok()?;
    Timestamp::parse_rfc3339(&format!("{year}-{m:02}-{day:02}T{clock}{zone}"))
}

/// `2026-11-30 04:36:05.123` or `2026/11/30 04:36:05.123` (Caddy's `wall_milli`), UTC when no
/// offset is given.
fn space_separated(s: &str) -> Option<Timestamp> {
    let (date, time) = s.split_once(' ')?;
    let time = time.trim();
    let has_zone =
        time.ends_with('Z') || time.contains('+') || time.chars().skip(1).any(|c| c == '-');
    let text = format!(
        "{}T{time}{}",
        date.replace('/', "-"),
        if has_zone { "" } else { "Z" }
    );
    Timestamp::parse_rfc3339(&text.replace(' ', ""))
}

/// A duration in nanoseconds: a number or numeric string in `unit`, a sum of nginx's
/// per-upstream lists (`0.001, 0.002 : 0.003`), or a Go duration string (`1.5ms`, `2m3s`).
pub(super) fn parse_duration(v: &Value, unit: DurationUnit) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_f64().map(|f| unit.to_ns(f)),
        Value::String(s) => {
            // HAProxy prefixes a timer with `+` under `option logasap` (logged before the end).
            let s = s.trim().trim_start_matches('+');
            if let Ok(f) = s.parse::<f64>() {
                return Some(unit.to_ns(f));
            }
            let parts: Vec<&str> = s
                .split([',', ':'])
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            if parts.len() > 1 {
                let nums: Vec<f64> = parts.iter().filter_map(|p| p.parse().ok()).collect();
                if !nums.is_empty() {
                    return Some(
                        nums.iter()
                            .fold(0i64, |acc, f| acc.saturating_add(unit.to_ns(*f))),
                    );
                }
                return None;
            }
            go_duration(s)
        }
        _ => None,
    }
}

fn go_duration(s: &str) -> Option<i64> {
    let mut total = 0f64;
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3.6e12,
            "m" => 6e10,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" | "μs" => 1e3,
            "ns" => 1.0,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    Some(total.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_in_every_shape() {
        let t = Timestamp::parse_rfc3339("2026-11-30T04:36:05.789Z").unwrap();
        assert_eq!(parse_time(&json!("1796013365.789")), Some(t));
        assert_eq!(
            parse_time(&json!(1_796_013_365.789)).map(|x| x.0 / 1_000_000),
            Some(t.0 / 1_000_000)
        );
        assert_eq!(parse_time(&json!(1_796_013_365_789i64)), Some(t));
        assert_eq!(parse_time(&json!("2026-11-30T04:36:05.789Z")), Some(t));
        assert_eq!(parse_time(&json!("2026-11-30 04:36:05.789")), Some(t));
        assert_eq!(parse_time(&json!("2026/11/30 04:36:05.789")), Some(t));
        assert_eq!(parse_time(&json!("x é")), None);
        assert_eq!(
            parse_time(&json!("30/Nov/2026:05:36:05 +0100")),
            Timestamp::parse_rfc3339("2026-11-30T04:36:05Z")
        );
        assert_eq!(parse_time(&json!("-")), None);
    }

    #[test]
    fn unit_suffixes() {
        assert_eq!(
            unit_suffix("time_total_ms"),
            ("time_total", Some(DurationUnit::Millis))
        );
        assert_eq!(unit_suffix("tt_us"), ("tt", Some(DurationUnit::Micros)));
        assert_eq!(unit_suffix("ta"), ("ta", None));
        assert_eq!(unit_suffix("_ms"), ("_ms", None));
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration(&json!("1.503"), DurationUnit::Seconds),
            Some(1_503_000_000)
        );
        assert_eq!(
            parse_duration(&json!(1503), DurationUnit::Millis),
            Some(1_503_000_000)
        );
        assert_eq!(
            parse_duration(&json!("0.001, 0.002 : 0.003"), DurationUnit::Seconds),
            Some(6_000_000)
        );
        assert_eq!(
            parse_duration(&json!("1m2.5s"), DurationUnit::Seconds),
            Some(62_500_000_000)
        );
        assert_eq!(
            parse_duration(&json!("250µs"), DurationUnit::Seconds),
            Some(250_000)
        );
        assert_eq!(parse_duration(&json!("-"), DurationUnit::Seconds), None);
    }
}
