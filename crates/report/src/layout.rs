//! Where the HTML report's SVG labels go, so that no two cover each other whatever the input.
//!
//! A label's box is estimated from its characters and its font size, and the estimate bounds
//! what a browser draws: the labels are set in a monospace font (every common one advances
//! 0.55–0.61 em a character) and show printable ASCII only, anything else as an escape (a wide
//! glyph or a long ligature from a capture cannot outgrow its estimate). A label whose box would
//! meet one placed before moves down past it, and the drawing grows to hold it.

use std::fmt::Write;

/// A character's advance, in ems: the widest common monospace font's (0.61) with a margin.
const ADVANCE: f64 = 0.62;
/// `–` and `…`, the two characters past ASCII a label keeps: a full em, should the monospace
/// font lack them and another draw them.
const WIDE: f64 = 1.0;
/// Above and below the baseline, in ems: the ascent and descent of common monospace fonts
/// (DejaVu Sans Mono 0.93 and 0.24, Liberation Mono 0.83 and 0.30) with a margin.
const ASCENT: f64 = 1.0;
const DESCENT: f64 = 0.35;
/// Space kept between two boxes.
const GAP: f64 = 1.0;

/// Which point of the text `x` names, as SVG's `text-anchor`.
#[derive(Clone, Copy)]
pub(crate) enum Anchor {
    Start,
    Middle,
}

/// A label where it goes: its text as shown (not yet escaped for HTML), its start and baseline.
pub(crate) struct Placed {
    pub text: String,
    pub y: f64,
    /// How far from where it was asked for it went, up or down.
    pub moved: f64,
}

#[derive(Clone, Copy, Debug)]
struct Box {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

/// The labels of one drawing placed so far, and how far right and down they reach.
#[derive(Default)]
pub(crate) struct Layout {
    boxes: Vec<Box>,
    right: f64,
    bottom: f64,
}

impl Layout {
    /// Places `text` at font `size`, shortened to `max_width`, anchored at `x` with its baseline
    /// at `y` or, if its box would meet another's there, at the first place below where it
    /// meets none. `None` for an empty text (nothing to draw). Linear in the labels placed
    /// (after a sort), so a drawing's labels are bounded by the caller.
    pub(crate) fn place(
        &mut self,
        text: &str,
        size: f64,
        anchor: Anchor,
        x: f64,
        y: f64,
        max_width: f64,
    ) -> Option<Placed> {
        let text = shown(text, size, max_width);
        if text.is_empty() {
            return None;
        }
        let w = width(&text, size);
        let left = match anchor {
            Anchor::Start => x,
            Anchor::Middle => x - w / 2.0,
        };
        let (ascent, height) = (ASCENT * size, (ASCENT + DESCENT) * size);
        let mut across: Vec<Box> = self
            .boxes
            .iter()
            .filter(|b| b.left < left + w + GAP && left < b.right + GAP)
            .copied()
            .collect();
        let below = free_below(&mut across, y - ascent, height);
        let above = free_above(&mut across, y - ascent, height);
        // The nearer of the two free places, below on a tie; never above the drawing's top.
        let top = match above {
            Some(up) if up >= 0.0 && (y - ascent) - up < below - (y - ascent) => up,
            _ => below,
        };
        let placed = Box {
            left,
            right: left + w,
            top,
            bottom: top + height,
        };
        self.right = self.right.max(placed.right);
        self.bottom = self.bottom.max(placed.bottom);
        self.boxes.push(placed);
        Some(Placed {
            text,
            y: top + ascent,
            moved: (top + ascent - y).abs(),
        })
    }

    pub(crate) fn right(&self) -> f64 {
        self.right
    }

    pub(crate) fn bottom(&self) -> f64 {
        self.bottom
    }
}

/// The top of the first place at or below `top` where a box of `height` meets none of `boxes`.
fn free_below(boxes: &mut [Box], mut top: f64, height: f64) -> f64 {
    boxes.sort_by(|a, b| a.top.total_cmp(&b.top));
    // By top, the candidate only moves down: a box passed stays passed, and the first box
    // starting below the candidate ends the search.
    for b in boxes.iter() {
        if b.bottom + GAP <= top {
            continue;
        }
        if b.top >= top + height + GAP {
            break;
        }
        top = b.bottom + GAP;
    }
    top
}

/// The top of the first place at or above `top` where a box of `height` meets none of `boxes`
/// (it may be above the drawing: the caller decides).
fn free_above(boxes: &mut [Box], mut top: f64, height: f64) -> Option<f64> {
    boxes.sort_by(|a, b| b.bottom.total_cmp(&a.bottom));
    for b in boxes.iter() {
        if b.top >= top + height + GAP {
            continue;
        }
        if b.bottom + GAP <= top {
            break;
        }
        top = b.top - GAP - height;
    }
    top.is_finite().then_some(top)
}

/// The width a label's text takes at most at font `size`.
fn width(text: &str, size: f64) -> f64 {
    text.chars()
        .map(|c| if c.is_ascii() { ADVANCE } else { WIDE })
        .sum::<f64>()
        * size
}

/// A label's text as drawn: printable ASCII, `–` and `…` as they are; anything else as the
/// terminal report escapes a control character (`\u{263a}`); cut with `…` to `max_width`.
fn shown(text: &str, size: f64, max_width: f64) -> String {
    let mut all = String::new();
    for c in text.chars() {
        match c {
            ' '..='~' | '–' | '…' => all.push(c),
            '\n' => all.push_str("\\n"),
            c => {
                let _ = write!(all, "\\u{{{:04x}}}", c as u32);
            }
        }
    }
    if width(&all, size) <= max_width {
        return all;
    }
    let mut cut = String::new();
    let mut used = WIDE * size;
    for c in all.chars() {
        used += width(c.encode_utf8(&mut [0; 4]), size);
        if used > max_width {
            break;
        }
        cut.push(c);
    }
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meets(a: &Box, b: &Box) -> bool {
        a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom
    }

    #[test]
    fn labels_at_one_place_stack_down_and_never_meet() {
        let mut l = Layout::default();
        let a = l.place("F4 unsafe", 11.0, Anchor::Start, 100.0, 50.0, 300.0);
        assert_eq!(a.map(|p| p.y), Some(50.0), "the first goes where asked");
        for i in 0..50 {
            let p = l.place(&format!("F{i} x"), 11.0, Anchor::Start, 120.0, 50.0, 300.0);
            assert!(p.is_some_and(|p| p.moved > 0.0));
        }
        // Beside the column, where nothing is, a label stays.
        let c = l.place("far", 11.0, Anchor::Middle, 900.0, 50.0, 300.0);
        assert_eq!(c.map(|p| p.moved), Some(0.0));
        for (i, a) in l.boxes.iter().enumerate() {
            for b in &l.boxes[i + 1..] {
                assert!(!meets(a, b), "{a:?} {b:?}");
            }
        }
        assert!(l.bottom() > 50.0 * 11.0 && l.right() > 900.0);
    }

    #[test]
    fn a_label_fits_in_a_gap_it_fits_in() {
        let mut l = Layout::default();
        l.place("above", 10.0, Anchor::Start, 0.0, 20.0, 100.0);
        l.place("below", 10.0, Anchor::Start, 0.0, 80.0, 100.0);
        let p = l.place("between", 10.0, Anchor::Start, 0.0, 20.0, 100.0);
        assert!(p.is_some_and(|p| p.y > 20.0 && p.y < 80.0 - 13.5));
    }

    #[test]
    fn a_label_moves_up_when_that_is_nearer_but_not_off_the_top() {
        let mut l = Layout::default();
        l.place("wide label", 10.0, Anchor::Start, 0.0, 50.0, 200.0);
        let up = l.place("x", 10.0, Anchor::Start, 0.0, 47.0, 200.0);
        assert!(up.is_some_and(|p| p.y < 47.0 && p.moved > 0.0));
        let mut l = Layout::default();
        l.place("wide label", 10.0, Anchor::Start, 0.0, 12.0, 200.0);
        let down = l.place("x", 10.0, Anchor::Start, 0.0, 10.0, 200.0);
        assert!(down.is_some_and(|p| p.y > 12.0));
    }

    #[test]
    fn text_is_ascii_and_cut_to_its_width() {
        assert_eq!(shown("2–40", 10.0, 100.0), "2–40");
        assert_eq!(shown("ＷA\u{202e}", 10.0, 500.0), "\\u{ff37}A\\u{202e}");
        let long = shown(&"x".repeat(100), 10.0, 62.0);
        assert_eq!(long, format!("{}…", "x".repeat(8)));
        assert!(width(&long, 10.0) <= 62.0);
        assert_eq!(shown("", 10.0, 10.0), "");
    }
}
