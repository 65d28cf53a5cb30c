//! Makes untrusted text safe to print on a terminal.
//!
//! Header values, URLs, tool names and SSE data come from the capture, which may be crafted: an
//! escape sequence in an `Mcp-Session-Id` must not recolour, retitle (OSC) or rewrite the
//! analyst's terminal, and a bidi override must not reorder what they read. Every such character
//! is shown as a visible escape instead.

use std::borrow::Cow;
use std::fmt::Write;

/// True for characters that must never reach a terminal raw.
fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Bidi embeddings, overrides and isolates (Trojan Source), and the marks.
        | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        // Line and paragraph separators break table layout.
        | '\u{2028}' | '\u{2029}'
    )
}

/// Escapes control characters (C0, DEL, C1 — hence every ESC, CSI and OSC introducer), and bidi
/// controls. Tabs and newlines are escaped too: a table cell must stay on its line.
pub fn terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unsafe(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Sanitises and shortens to at most `max` characters, marking the cut with `…`.
pub(crate) fn terminal_truncated(text: &str, max: usize) -> String {
    let clean = terminal(text);
    if clean.chars().count() <= max {
        return clean.into_owned();
    }
    let mut out: String = clean.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_plain_text_alone() {
        assert!(matches!(
            terminal("tools/call #7 reindex"),
            Cow::Borrowed(_)
        ));
        assert_eq!(terminal("café ✓"), "café ✓");
    }

    #[test]
    fn escapes_csi_osc_and_c1() {
        assert_eq!(terminal("\u{1b}[31mred"), "\\e[31mred");
        assert_eq!(
            terminal("\u{1b}]0;pwned\u{7}title"),
            "\\e]0;pwned\\x07title"
        );
        assert_eq!(terminal("a\u{9b}2Jb"), "a\\x9b2Jb");
        assert_eq!(terminal("line\nbreak\r"), "line\\nbreak\\r");
    }

    #[test]
    fn escapes_bidi_overrides() {
        assert_eq!(terminal("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(terminal("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
    }

    #[test]
    fn truncates_after_sanitising() {
        assert_eq!(terminal_truncated("abcdef", 4), "abc…");
        assert_eq!(terminal_truncated("ab", 4), "ab");
    }
}
