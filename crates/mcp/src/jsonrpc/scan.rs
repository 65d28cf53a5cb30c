//! A JSON cursor that reads member names and value spans without building a document.
//!
//! It accepts exactly RFC 8259 text, as serde_json does (the same number grammar, escapes,
//! whitespace and no control characters in strings), so any text it reads to the end serde_json
//! reads too. Whatever it does not handle, it reports as `None` and the caller falls back to
//! serde_json, whose verdict and error text then stand. Nesting is followed with a bit stack, not
//! recursion, and ends at [`MAX_DEPTH`]: hostile input costs a fallback, never the stack.

/// Deepest nesting a skipped value may have before the reader gives up.
const MAX_DEPTH: u32 = 64;

/// Bytes of a string read inline, a word at a time, before [`Cursor::string_from`] goes on.
const SHORT_STRING: usize = 32;

pub(super) struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after JSON whitespace (RFC 8259 §2: space, tab, LF, CR), not consumed.
    #[inline(always)]
    pub(super) fn peek(&mut self) -> Option<u8> {
        // Messages are mostly written without white space: one test decides.
        match self.bytes().get(self.at) {
            Some(&c) if c > b' ' => Some(c),
            _ => self.skip_space(),
        }
    }

    /// [`Cursor::peek`] past white space.
    fn skip_space(&mut self) -> Option<u8> {
        let b = self.bytes();
        while let Some(&c) = b.get(self.at) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(c);
            }
            self.at += 1;
        }
        None
    }

    #[inline(always)]
    fn eat(&mut self, want: u8) -> Option<()> {
        (self.peek()? == want).then(|| self.at += 1)
    }

    /// Where the next value starts (after whitespace), for [`Cursor::since`].
    pub(super) fn mark(&mut self) -> Option<usize> {
        self.peek().map(|_| self.at)
    }

    /// The text from `mark` to the cursor.
    pub(super) fn since(&self, mark: usize) -> &'a str {
        &self.text[mark..self.at]
    }

    /// The elements of a batch: the array that is the whole text.
    pub(super) fn batch(mut self) -> Option<Vec<&'a str>> {
        let items = self.elements()?;
        self.at_end().then_some(items)
    }

    /// Only whitespace is left.
    pub(super) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// The string at the cursor (its opening quote next); whether it holds escapes.
    #[inline(always)]
    fn string(&mut self) -> Option<bool> {
        // Most strings of a message are names and short values: they are read here a word at a
        // time, inline; a long string, an escape or the end of the text is left to
        // [`Cursor::string_from`], whose loops would cost a short string more than its bytes.
        let b = self.bytes();
        let mut at = self.at + 1;
        while let Some(word) = b.get(at..at + 8) {
            let stops = word_stops(u64::from_le_bytes(<[u8; 8]>::try_from(word).ok()?));
            if stops != 0 {
                at += stops.trailing_zeros() as usize / 8;
                if b[at] == b'"' {
                    self.at = at + 1;
                    return Some(false);
                }
                break;
            }
            at += 8;
            if at - self.at > SHORT_STRING {
                break;
            }
        }
        self.string_from(at)
    }

    /// The rest of the string at the cursor from `at`, before which it has no stop (a quote,
    /// a backslash or a control character); whether it holds escapes.
    #[inline(never)]
    fn string_from(&mut self, mut at: usize) -> Option<bool> {
        let b = self.bytes();
        let mut escaped = false;
        loop {
            at += string_stop(b.get(at..)?)?;
            match b[at] {
                b'"' => {
                    self.at = at + 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    at += escape_len(&b[at..])?;
                }
                // RFC 8259 §7: control characters must be escaped.
                _ => return None,
            }
        }
    }

    /// A member name without escapes (one with escapes might spell a name we read), and its `:`.
    #[inline(always)]
    fn plain_name(&mut self) -> Option<&'a str> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        if self.string()? {
            return None;
        }
        let name = &self.text[start..self.at - 1];
        self.eat(b':')?;
        Some(name)
    }

    /// Any member name (validated, escapes allowed), and its `:`.
    #[inline(always)]
    fn any_name(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.string()?;
        self.eat(b':')
    }

    /// Reads the object at the cursor, handing each member's name to `member`, which must read
    /// the value (with [`Cursor::value`] or a nested [`Cursor::members`]).
    pub(super) fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let name = self.plain_name()?;
            member(self, name)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The elements of the array at the cursor, as text.
    fn elements(&mut self) -> Option<Vec<&'a str>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(out);
        }
        loop {
            out.push(self.value()?);
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
    }

    /// [`Cursor::value`], and whether it is a string without escapes (whose text is then its
    /// contents in quotes).
    #[inline(always)]
    pub(super) fn value_plain(&mut self) -> Option<(&'a str, bool)> {
        let start = self.mark()?;
        if self.bytes()[start] != b'"' {
            return Some((self.value()?, false));
        }
        let escaped = self.string()?;
        Some((&self.text[start..self.at], !escaped))
    }

    /// Skips the value at the cursor, checking its syntax; its text.
    #[inline(always)]
    pub(super) fn value(&mut self) -> Option<&'a str> {
        let start = self.mark()?;
        // Most values are strings and numbers: only containers need the loop that follows them.
        match self.bytes()[start] {
            b'"' => {
                self.string()?;
            }
            b'-' | b'0'..=b'9' => self.number()?,
            _ => self.nested()?,
        }
        Some(&self.text[start..self.at])
    }

    /// Skips the value at the cursor (an object or an array, or a literal), checking its syntax.
    #[inline(never)]
    fn nested(&mut self) -> Option<()> {
        // Bit n set: the container n levels down is an object.
        let mut objects: u64 = 0;
        let mut depth = 0;
        loop {
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.at += 1;
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.at += 1;
                    } else {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        objects = objects << 1 | u64::from(open == b'{');
                        depth += 1;
                        if open == b'{' {
                            self.any_name()?;
                        }
                        continue;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => return None,
            }
            // A value ended: close the containers it ends, then go on after a comma.
            loop {
                if depth == 0 {
                    return Some(());
                }
                let in_object = objects & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        if in_object {
                            self.any_name()?;
                        }
                        break;
                    }
                    b'}' if in_object => {}
                    b']' if !in_object => {}
                    _ => return None,
                }
                self.at += 1;
                objects >>= 1;
                depth -= 1;
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes()[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    #[inline(always)]
    fn number(&mut self) -> Option<()> {
        let b = self.bytes();
        let mut at = self.at;
        if b.get(at) == Some(&b'-') {
            at += 1;
        }
        match b.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at = digits(b, at),
            _ => return None,
        }
        if b.get(at) == Some(&b'.') {
            let from = at + 1;
            at = digits(b, from);
            if at == from {
                return None;
            }
        }
        if matches!(b.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(b.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            let from = at;
            at = digits(b, from);
            if at == from {
                return None;
            }
        }
        self.at = at;
        Some(())
    }
}

/// Where the first `"`, `\\` or control character of `b` is. Most strings of a message are names
/// and short values, where a call to memchr costs more than the scan: the first words are read
/// eight bytes at a time inline, and only a long string goes on in blocks the compiler
/// vectorises.
fn string_stop(b: &[u8]) -> Option<usize> {
    const SHORT: usize = 32;
    const BLOCK: usize = 32;
    if let Some(at) = words_stop(&b[..b.len().min(SHORT)]) {
        return Some(at);
    }
    let mut at = SHORT.min(b.len());
    while let Some(block) = b.get(at..at + BLOCK) {
        // An or-fold, without an early exit, so that it runs as vector compares.
        let stop = block.iter().fold(false, |stop, &c| {
            stop | (c == b'"') | (c == b'\\') | (c < 0x20)
        });
        if stop {
            break;
        }
        at += BLOCK;
    }
    words_stop(&b[at..]).map(|n| at + n)
}

/// The stops of an eight-byte word, each as the high bit of its byte: exact up to the first one,
/// which is all that is read.
#[inline]
fn word_stops(x: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // Bytes below `n` (n ≤ 0x80) set their high bit.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    below(x ^ (ONES * u64::from(b'"')), 1)
        | below(x ^ (ONES * u64::from(b'\\')), 1)
        | below(x, 0x20)
}

/// [`string_stop`] eight bytes at a time.
fn words_stop(b: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(chunk) = b.get(at..at + 8) {
        let stops = word_stops(u64::from_le_bytes(<[u8; 8]>::try_from(chunk).ok()?));
        if stops != 0 {
            return Some(at + stops.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let tail = b[at..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    Some(at + tail)
}

/// Where the run of ASCII digits from `at` ends.
fn digits(b: &[u8], mut at: usize) -> usize {
    while b.get(at).is_some_and(u8::is_ascii_digit) {
        at += 1;
    }
    at
}

/// The length of the escape `b` starts with (its backslash first): `\n`, `\uXXXX`, …
fn escape_len(b: &[u8]) -> Option<usize> {
    match b.get(1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(2),
        // Like serde_json when it skips a string: four hex digits, surrogates unchecked.
        b'u' => b.get(2..6)?.iter().all(u8::is_ascii_hexdigit).then_some(6),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(text: &str) -> Option<&str> {
        let mut c = Cursor::new(text);
        let v = c.value()?;
        c.at_end().then_some(v)
    }

    #[test]
    fn accepts_what_serde_json_accepts() {
        for text in [
            "0",
            "-0",
            "1.5e+10",
            "1E5",
            "-12.0e-3",
            r#""a\"b\\c\u00e9\/""#,
            "[]",
            "{}",
            r#" { "a" : [ 1 , { "b" : null } , true , false ] } "#,
            r#"{"\u0061":1}"#,
        ] {
            assert!(skip(text).is_some(), "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_ok());
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for text in [
            "01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "-",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "{\"a\" 1}",
            "{1:2}",
            "\"a\tb\"",
            "\"\\x\"",
            "\"\\u12g4\"",
            "\"abc",
            "[",
            "{",
            "]",
            "\u{c}1",
        ] {
            assert!(skip(text).is_none(), "{text:?}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_err());
        }
    }

    #[test]
    fn depth_is_bounded_not_recursive() {
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(skip(&deep(64)).is_some());
        assert!(skip(&deep(65)).is_none());
        assert!(skip(&deep(1_000_000)).is_none());
        let objects = format!("{}1{}", "{\"a\":".repeat(64), "}".repeat(64));
        assert!(skip(&objects).is_some());
    }

    #[test]
    fn mismatched_closers_are_refused() {
        assert!(skip("[1}").is_none());
        assert!(skip("{\"a\":1]").is_none());
        assert!(skip("[{\"a\":[1]}]").is_some());
    }

    proptest::proptest! {
        #[test]
        fn string_stop_finds_the_first_stop(
            b in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![b'"', b'\\', 0, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xff]),
                    proptest::prelude::any::<u8>(),
                ],
                0..120,
            )
        ) {
            let naive = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            proptest::prop_assert_eq!(string_stop(&b), naive);
        }
    }

    #[test]
    fn plain_names_only() {
        let mut names = Vec::new();
        let mut c = Cursor::new(r#"{"a":1,"b":{"c":2}}"#);
        c.members(|c, n| {
            names.push(n);
            c.value().map(drop)
        })
        .unwrap();
        assert_eq!(names, ["a", "b"]);
        let mut c = Cursor::new(r#"{"\u0061":1}"#);
        assert!(c.members(|c, _| c.value().map(drop)).is_none());
    }
}
