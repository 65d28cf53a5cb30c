//! Table construction shared by the human reports.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};

/// A table in the house style. Width follows the terminal when there is one, else stays natural
/// (piped output is not wrapped, so it diffs and greps cleanly).
pub(crate) fn new_table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    table
}

/// Human-readable byte count: `512 B`, `1.4 KiB`, `3.0 MiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Seconds as `0.153 s`, `12.4 s`, `3 min 20 s`.
pub(crate) fn duration(secs: f64) -> String {
    if secs < 10.0 {
        format!("{secs:.3} s")
    } else if secs < 120.0 {
        format!("{secs:.1} s")
    } else {
        let s = secs.round() as u64;
        format!("{} min {} s", s / 60, s % 60)
    }
}

/// `1 finding`, `2 findings`: a number with its noun agreeing.
pub(crate) fn count(n: impl Into<u64>, singular: &str, plural: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { singular } else { plural })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_sizes_and_durations() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1448), "1.4 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(duration(0.1534), "0.153 s");
        assert_eq!(duration(47.61), "47.6 s");
        assert_eq!(duration(200.0), "3 min 20 s");
    }
}
