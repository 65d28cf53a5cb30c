//! A HAR's text with every string value cut at [`MAX_STRING`] bytes before the JSON parser
//! reads it: serde_json hands a string over whole, so one entry whose `content.text` holds a
//! gigabyte of event stream would otherwise be held whole, twice. The bytes past the cap are
//! read through (with a search, not byte by byte) and counted, and each cut names the keys that
//! lead to its string, so the reader knows which body it shortened.
//!
//! A cut never falls inside an escape, a UTF-8 character, or between the two halves of an
//! escaped surrogate pair: what reaches the parser is valid JSON whenever the file is.

use std::cell::{Cell, RefCell};
use std::io::{self, BufRead, Read};

/// The longest string a HAR keeps, as written in the file (escapes included): 64 MiB, above a
/// 20 MB JSON tool result or a 10 MB base64 screenshot.
pub(crate) const MAX_STRING: usize = 64 << 20;

/// Keys kept of a path (nesting deeper than serde_json's 128 levels is an error anyway).
const MAX_DEPTH: usize = 256;
/// Bytes of a key kept to name it.
const MAX_KEY: usize = 64;

/// One string cut: the keys leading to it (`[]` for an array element) and the bytes dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    pub(crate) path: Vec<String>,
    pub(crate) dropped: u64,
}

#[derive(Debug)]
enum Frame {
    Object { key: Vec<u8>, expect_key: bool },
    Array,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lex {
    Outside,
    /// In a string: whether it is an object's key, its length so far, an escape in progress
    /// (`\` seen: 1; `\u`: 2 to 5 as its hex digits come), and whether the last escape was a
    /// high surrogate (its low half must follow).
    InString {
        key: bool,
        len: usize,
        escape: u8,
        high: bool,
    },
    /// Past the cap: reading through to the closing quote (`escape`: after a `\`).
    Skipping {
        escape: bool,
    },
}

/// Reads `inner`, counting every byte taken from it in `count` and cutting long strings.
pub(crate) struct CutStrings<'a, R> {
    inner: &'a mut R,
    count: &'a Cell<u64>,
    cuts: &'a RefCell<Vec<Cut>>,
    lex: Lex,
    stack: Vec<Frame>,
    /// The `\uXXXX` escape in progress, its digits so far.
    hex: u32,
    max: usize,
}

impl<'a, R: BufRead> CutStrings<'a, R> {
    pub(crate) fn new(inner: &'a mut R, count: &'a Cell<u64>, cuts: &'a RefCell<Vec<Cut>>) -> Self {
        CutStrings {
            inner,
            count,
            cuts,
            lex: Lex::Outside,
            stack: Vec::new(),
            hex: 0,
            max: MAX_STRING,
        }
    }

    /// Reads through a cut string's rest, up to and including its closing quote.
    fn skip(&mut self) -> io::Result<()> {
        let Lex::Skipping { mut escape } = self.lex else {
            return Ok(());
        };
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                self.lex = Lex::Skipping { escape };
                return Ok(());
            }
            let mut at = 0;
            let mut done = false;
            while at < buf.len() {
                if escape {
                    escape = false;
                    at += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &buf[at..]) {
                    Some(i) if buf[at + i] == b'"' => {
                        at += i + 1;
                        done = true;
                        break;
                    }
                    Some(i) => {
                        escape = true;
                        at += i + 1;
                    }
                    None => at = buf.len(),
                }
            }
            self.inner.consume(at);
            self.count.set(self.count.get() + at as u64);
            if let Some(c) = self.cuts.borrow_mut().last_mut() {
                // The closing quote was handed to the parser already, at the cut.
                c.dropped += at as u64 - u64::from(done);
            }
            if done {
                self.lex = Lex::Outside;
                return Ok(());
            }
        }
    }

    /// Where a cut may fall before `b`: not inside an escape or a UTF-8 character, nor after
    /// the high half of a surrogate pair.
    fn may_cut_before(&self, b: u8) -> bool {
        matches!(
            self.lex,
            Lex::InString {
                escape: 0,
                high: false,
                ..
            }
        ) && (b & 0xc0) != 0x80
    }

    /// Takes one byte of the document; returns the byte the parser gets instead (a closing
    /// quote at a cut).
    fn take(&mut self, b: u8) -> u8 {
        match self.lex {
            Lex::Outside => self.outside(b),
            Lex::InString { len, .. } if len >= self.max && self.may_cut_before(b) => {
                self.cut();
                if b == b'"' {
                    self.lex = Lex::Outside;
                } else {
                    self.lex = Lex::Skipping { escape: b == b'\\' };
                    if let Some(c) = self.cuts.borrow_mut().last_mut() {
                        c.dropped += 1;
                    }
                }
                b'"'
            }
            Lex::InString { .. } => {
                self.in_string(b);
                b
            }
            Lex::Skipping { .. } => b,
        }
    }

    fn outside(&mut self, b: u8) -> u8 {
        match b {
            b'{' if self.stack.len() < MAX_DEPTH => self.stack.push(Frame::Object {
                key: Vec::new(),
                expect_key: true,
            }),
            b'[' if self.stack.len() < MAX_DEPTH => self.stack.push(Frame::Array),
            b'}' | b']' => {
                self.stack.pop();
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = self.stack.last_mut() {
                    *expect_key = false;
                }
            }
            b',' => {
                if let Some(Frame::Object { expect_key, .. }) = self.stack.last_mut() {
                    *expect_key = true;
                }
            }
            b'"' => {
                let key = matches!(
                    self.stack.last(),
                    Some(Frame::Object {
                        expect_key: true,
                        ..
                    })
                );
                if let (true, Some(Frame::Object { key, .. })) = (key, self.stack.last_mut()) {
                    key.clear();
                }
                self.lex = Lex::InString {
                    key,
                    len: 0,
                    escape: 0,
                    high: false,
                };
            }
            _ => {}
        }
        b
    }

    fn in_string(&mut self, b: u8) {
        let Lex::InString {
            key,
            len,
            escape,
            high,
        } = self.lex
        else {
            return;
        };
        let (escape, high) = match (escape, b) {
            (0, b'"') => {
                self.lex = Lex::Outside;
                return;
            }
            (0, b'\\') => (1, high),
            (0, _) => (0, false),
            (1, b'u') => {
                self.hex = 0;
                (2, high)
            }
            (1, _) => (0, false),
            (2..=4, _) => {
                self.hex = self.hex << 4 | hex_value(b);
                (escape + 1, high)
            }
            _ => {
                let unit = self.hex << 4 | hex_value(b);
                (0, (0xd800..0xdc00).contains(&unit))
            }
        };
        if key
            && len < MAX_KEY
            && let Some(Frame::Object { key, .. }) = self.stack.last_mut()
        {
            key.push(b);
        }
        self.lex = Lex::InString {
            key,
            len: len + 1,
            escape,
            high,
        };
    }

    fn cut(&mut self) {
        let path = self
            .stack
            .iter()
            .map(|f| match f {
                Frame::Object { key, .. } => String::from_utf8_lossy(key).into_owned(),
                Frame::Array => "[]".to_string(),
            })
            .collect();
        self.cuts.borrow_mut().push(Cut { path, dropped: 0 });
    }
}

fn hex_value(b: u8) -> u32 {
    char::from(b).to_digit(16).unwrap_or(0)
}

impl<R: BufRead> Read for CutStrings<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            self.skip()?;
            let Some(&b) = self.inner.fill_buf()?.first() else {
                break;
            };
            self.inner.consume(1);
            self.count.set(self.count.get() + 1);
            buf[n] = self.take(b);
            n += 1;
            if matches!(self.lex, Lex::Skipping { .. }) {
                break;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_cut(text: &str, max: usize) -> (String, Vec<Cut>, u64) {
        let (count, cuts) = (Cell::new(0), RefCell::new(Vec::new()));
        let mut inner = text.as_bytes();
        let mut out = String::new();
        let mut r = CutStrings::new(&mut inner, &count, &cuts);
        r.max = max;
        r.read_to_string(&mut out).unwrap();
        (out, cuts.into_inner(), count.get())
    }

    #[test]
    fn a_long_string_is_cut_and_named_by_its_keys() {
        let max = 1000;
        let long = "x".repeat(max + 100);
        let text = format!(
            r#"{{"log":{{"entries":[{{"response":{{"content":{{"text":"{long}","size":1}}}}}}]}}}}"#
        );
        let (out, cuts, count) = read_cut(&text, max);
        assert_eq!(count, text.len() as u64);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let kept = v["log"]["entries"][0]["response"]["content"]["text"]
            .as_str()
            .unwrap();
        assert_eq!(kept.len(), max);
        assert_eq!(v["log"]["entries"][0]["response"]["content"]["size"], 1);
        let path = ["log", "entries", "[]", "response", "content", "text"];
        assert_eq!(
            cuts,
            vec![Cut {
                path: path.map(String::from).to_vec(),
                dropped: 100,
            }]
        );
    }

    #[test]
    fn a_cut_keeps_escapes_and_characters_whole() {
        // Each character is 2 bytes of UTF-8, and an escaped surrogate pair straddles the cap.
        for prefix in ["", "a", "ab", "abc", "abcd", "abcde"] {
            let body = format!("{prefix}{}", "\\ud83d\\ude00é".repeat(20));
            let text = format!(r#"["{body}", 7]"#);
            let (out, cuts, _) = read_cut(&text, 100);
            let v: serde_json::Value =
                serde_json::from_str(&out).unwrap_or_else(|e| panic!("{prefix:?}: {e}"));
            assert_eq!(v[1], 7);
            assert_eq!(cuts.len(), 1);
        }
        let short = r#"{"a":"\"quoted\" \\ fine","b":[1,"2"]}"#;
        let (out, cuts, _) = read_cut(short, 100);
        assert_eq!(out, short);
        assert!(cuts.is_empty());
    }
}
