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

/// The width a table drawn in the house style takes, given its columns' content widths: each
/// column is padded by a space on each side and followed by a rule, after a rule on the left.
pub(crate) fn drawn_width(widths: impl IntoIterator<Item = usize>) -> usize {
    widths.into_iter().map(|w| w + 3).sum::<usize>() + 1
}

/// The columns kept so a table fits `width`: all of them, or fewer, dropping them in
/// `drop_order` (the least needed first) until what is left fits or only the rest is left.
/// Dropping columns keeps every row on one line, which wrapping cells would not.
pub(crate) fn columns_that_fit(widths: &[usize], drop_order: &[usize], width: usize) -> Vec<usize> {
    let mut kept: Vec<usize> = (0..widths.len()).collect();
    for &d in drop_order {
        if drawn_width(kept.iter().map(|&c| widths[c])) <= width {
            break;
        }
        kept.retain(|&c| c != d);
    }
    kept
}

/// How a table fits the output: the columns kept, and the widths columns whose cells may be
/// shortened (ending in `…`, at a word) are held to, when leaving columns out was not enough.
#[derive(Debug, PartialEq)]
pub(crate) struct Fit {
    pub kept: Vec<usize>,
    pub shortened: Vec<(usize, usize)>,
}

/// A shortened column keeps at least this many columns of its cells.
const SHORTEST: usize = 12;

impl Fit {
    /// Leaves columns out in `drop_order`, then shortens the columns of `shorten`, in order,
    /// each only as much as the table is still over `width`.
    pub(crate) fn new(
        widths: &[usize],
        drop_order: &[usize],
        shorten: &[usize],
        width: usize,
    ) -> Fit {
        let kept = columns_that_fit(widths, drop_order, width);
        let mut over = drawn_width(kept.iter().map(|&c| widths[c])).saturating_sub(width);
        let mut shortened = Vec::new();
        for &c in shorten.iter().filter(|c| kept.contains(c)) {
            if over == 0 {
                break;
            }
            let to = widths[c].saturating_sub(over).max(SHORTEST.min(widths[c]));
            over -= widths[c] - to;
            shortened.push((c, to));
        }
        Fit { kept, shortened }
    }

    /// The width column `c` is drawn at, given its content width.
    pub(crate) fn width_of(&self, c: usize, content: usize) -> usize {
        self.shortened
            .iter()
            .find(|s| s.0 == c)
            .map_or(content, |s| s.1)
    }

    /// The kept cells of a row, shortened where the fit says.
    pub(crate) fn row(&self, cells: &[String]) -> Vec<String> {
        self.kept
            .iter()
            .map(|&c| {
                let cell = cells.get(c).map_or("", String::as_str);
                match self.shortened.iter().find(|s| s.0 == c) {
                    Some(&(_, w)) => shorten(cell, w),
                    None => cell.to_string(),
                }
            })
            .collect()
    }

    /// The names of the columns left out.
    pub(crate) fn left_out(&self, header: &[&str]) -> Vec<String> {
        (0..header.len())
            .filter(|c| !self.kept.contains(c))
            .map(|c| header[c].to_string())
            .collect()
    }
}

/// `text` in at most `width` columns: whole words, then `…` when some were left out (a first
/// word longer than that is cut, the one case a word must be).
pub(crate) fn shorten(text: &str, width: usize) -> String {
    if textwrap::core::display_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    for word in text.split(' ') {
        let next = if out.is_empty() {
            word.to_string()
        } else {
            format!("{out} {word}")
        };
        if textwrap::core::display_width(&next) + 1 > width {
            break;
        }
        out = next;
    }
    if out.is_empty() {
        let mut used = 0;
        for c in text.chars() {
            let w = textwrap::core::display_width(c.encode_utf8(&mut [0; 4]));
            if used + w + 1 > width {
                break;
            }
            used += w;
            out.push(c);
        }
    }
    out.push('…');
    out
}

/// The content width of each column of `header` and `rows`.
pub(crate) fn content_widths(header: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    (0..header.len())
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|x| textwrap::core::display_width(x))
                .chain([textwrap::core::display_width(header[c])])
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// A table of `header` and `rows` that fits `width` by leaving columns out (see
/// [`columns_that_fit`]) and then shortening the cells of `shorten`, with the names of the
/// columns left out.
pub(crate) fn fitted_table(
    header: &[&str],
    rows: &[Vec<String>],
    drop_order: &[usize],
    shorten: &[usize],
    width: usize,
) -> (Table, Vec<String>) {
    let fit = Fit::new(&content_widths(header, rows), drop_order, shorten, width);
    let names: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut table = new_table(
        &fit.row(&names)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    for r in rows {
        table.add_row(fit.row(r));
    }
    (table, fit.left_out(header))
}

/// `text` wrapped at `width` columns, the first line after `first` and the others after
/// `rest` (both prefixes count toward the width). Words are never cut: a word longer than the
/// line stands alone on its line.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let options = textwrap::Options::new(width.max(20))
        .initial_indent(first)
        .subsequent_indent(rest)
        // A word longer than the line (a URL, a long event ID) is cut where the line ends:
        // every line fits the terminal.
        .break_words(true)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        // A UUID, a path or an event ID that fits is one word: never split at its hyphens.
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::fill(text, options)
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

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
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

    #[test]
    fn a_table_drops_columns_least_needed_first_until_it_fits() {
        // Columns of 2, 10, 30 and 3: 5 + 13 + 33 + 6, and the left rule.
        let widths = [2, 10, 30, 3];
        assert_eq!(drawn_width(widths), 58);
        assert_eq!(columns_that_fit(&widths, &[2, 1], 58), [0, 1, 2, 3]);
        assert_eq!(columns_that_fit(&widths, &[2, 1], 57), [0, 1, 3]);
        assert_eq!(columns_that_fit(&widths, &[2, 1], 10), [0, 3]);
        let rows = vec![vec![
            "S1".to_string(),
            "a".repeat(10),
            "b".repeat(30),
            "yes".into(),
        ]];
        let (t, dropped) = fitted_table(&["S", "id", "server", "ok"], &rows, &[2, 1], &[], 40);
        assert_eq!(dropped, ["server"]);
        assert!(t.lines().all(|l| textwrap::core::display_width(&l) <= 40));
        // Past what leaving columns out does, a column's cells are shortened at a word.
        let rows = vec![vec![
            "S1".to_string(),
            "tools/call #7 reindex, response #7".into(),
        ]];
        let (t, dropped) = fitted_table(&["S", "JSON-RPC"], &rows, &[], &[1], 30);
        assert!(dropped.is_empty());
        assert!(
            t.lines().all(|l| textwrap::core::display_width(&l) <= 30),
            "{t}"
        );
        assert!(t.to_string().contains("tools/call #7…"), "{t}");
    }

    #[test]
    fn wrapping_cuts_only_a_word_longer_than_the_line() {
        let w = wrap(
            "resume with Last-Event-ID 41 replayed event 42 minted by post:s16",
            30,
            " ",
            "   ",
        );
        assert!(w.lines().all(|l| l.chars().count() <= 30), "{w}");
        assert_eq!(w.lines().next(), Some(" resume with Last-Event-ID 41"));
        assert!(w.lines().skip(1).all(|l| l.starts_with("   ")));
        let long = wrap(
            "a https://example.test/a/very/long/path/that/is/one/word b",
            20,
            "",
            "",
        );
        // A word longer than the line is cut where the line ends: the line still fits.
        assert!(long.lines().all(|l| l.chars().count() <= 20), "{long}");
        let joined: String = long.split_whitespace().collect();
        assert_eq!(
            joined,
            "ahttps://example.test/a/very/long/path/that/is/one/wordb"
        );
        let id = "Last-Event-ID 44113fac-4a3d-4061-9e3b-1f2a3b4c5d6e replayed";
        let w = wrap(id, 40, "", "");
        assert!(w.contains("44113fac-4a3d-4061-9e3b-1f2a3b4c5d6e"), "{w}");
    }
}
