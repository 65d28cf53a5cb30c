//! A HAR document read from a reader with its `log.entries` handed over one at a time, never
//! held as one tree: memory follows the largest entry, not the file.
//!
//! Only `log.version` and `log.creator` are kept besides the entries; every other value is
//! skipped as it is read. serde_json's recursion limit (128 levels) caps nesting: deeper input
//! is an error like any other JSON error, which ends the read where it happened (the entries
//! before it are kept, the rest is counted lost).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{self, BufRead};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::cut::{Cut, CutStrings};

/// What `for_each_entry` hands over of one entry: its number (from 1), its value, its share of
/// the file's bytes (the separator before it included), and the strings cut in it.
pub(super) type Each<'f> = dyn FnMut(u64, Value, u64, Vec<Cut>) + 'f;

/// What the document says besides its entries.
#[derive(Default)]
pub(super) struct Head {
    pub(super) version: Option<Value>,
    pub(super) creator: Option<Value>,
    pub(super) saw_log: bool,
    pub(super) saw_entries: bool,
}

/// The end of a read: the head, the entries read, the bytes read in all (after the BOM), and
/// the JSON error that ended it early.
pub(super) struct Streamed {
    pub(super) head: Head,
    pub(super) entries: u64,
    pub(super) bytes: u64,
    pub(super) error: Option<serde_json::Error>,
    /// Bytes read up to the error (the rest of the file is drained and counted in `bytes`).
    pub(super) error_at: u64,
}

/// Reads `reader` to its end, calling `each` for every element of `log.entries` in file order,
/// every string in it cut at [`super::cut::MAX_STRING`] bytes.
pub(super) fn for_each_entry<R: BufRead>(
    mut reader: R,
    each: &mut Each<'_>,
) -> io::Result<Streamed> {
    let count = Cell::new(0u64);
    if reader.fill_buf()?.starts_with(&[0xef, 0xbb, 0xbf]) {
        reader.consume(3);
        count.set(3);
    }
    let mut head = Head::default();
    let mut entries = 0u64;
    let cuts = RefCell::new(Vec::new());
    let result = {
        let counting = CutStrings::new(&mut reader, &count, &cuts);
        let mut de = serde_json::Deserializer::from_reader(counting);
        let seed = TopSeed {
            head: &mut head,
            entries: &mut entries,
            count: &count,
            cuts: &cuts,
            each,
        };
        seed.deserialize(&mut de).and_then(|()| de.end())
    };
    let error_at = count.get();
    let rest = io::copy(&mut reader, &mut io::sink())?;
    Ok(Streamed {
        head,
        entries,
        bytes: count.get() + rest,
        error: result.err(),
        error_at,
    })
}

struct TopSeed<'a, 'f> {
    head: &'a mut Head,
    entries: &'a mut u64,
    count: &'a Cell<u64>,
    cuts: &'a RefCell<Vec<Cut>>,
    each: &'a mut Each<'f>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(TopVisitor(self))
    }
}

struct TopVisitor<'a, 'f>(TopSeed<'a, 'f>);

impl<'de> Visitor<'de> for TopVisitor<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a HAR object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let s = self.0;
        while let Some(key) = map.next_key::<String>()? {
            if key == "log" && !s.head.saw_log {
                map.next_value_seed(LogSeed {
                    head: &mut *s.head,
                    entries: &mut *s.entries,
                    count: s.count,
                    cuts: s.cuts,
                    each: &mut *s.each,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct LogSeed<'a, 'f> {
    head: &'a mut Head,
    entries: &'a mut u64,
    count: &'a Cell<u64>,
    cuts: &'a RefCell<Vec<Cut>>,
    each: &'a mut Each<'f>,
}

impl<'de> DeserializeSeed<'de> for LogSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(LogVisitor(self))
    }
}

struct LogVisitor<'a, 'f>(LogSeed<'a, 'f>);

impl<'de> Visitor<'de> for LogVisitor<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the log object")
    }
    /// `"log": null` is no log at all.
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let s = self.0;
        s.head.saw_log = true;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => s.head.version = Some(map.next_value()?),
                "creator" => s.head.creator = Some(map.next_value()?),
                "entries" if !s.head.saw_entries => map.next_value_seed(EntriesSeed {
                    head: &mut *s.head,
                    entries: &mut *s.entries,
                    count: s.count,
                    cuts: s.cuts,
                    each: &mut *s.each,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct EntriesSeed<'a, 'f> {
    head: &'a mut Head,
    entries: &'a mut u64,
    count: &'a Cell<u64>,
    cuts: &'a RefCell<Vec<Cut>>,
    each: &'a mut Each<'f>,
}

impl<'de> DeserializeSeed<'de> for EntriesSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(EntriesVisitor(self))
    }
}

struct EntriesVisitor<'a, 'f>(EntriesSeed<'a, 'f>);

impl<'de> Visitor<'de> for EntriesVisitor<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the entries array")
    }
    /// `"entries": null` is no entries at all.
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let s = self.0;
        s.head.saw_entries = true;
        loop {
            let before = s.count.get();
            let Some(v) = seq.next_element::<Value>()? else {
                return Ok(());
            };
            *s.entries += 1;
            let cuts = std::mem::take(&mut *s.cuts.borrow_mut());
            (s.each)(*s.entries, v, s.count.get() - before, cuts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Streamed, Vec<(u64, Value, u64)>) {
        let mut got = Vec::new();
        let s = for_each_entry(text.as_bytes(), &mut |n, v, b, _| got.push((n, v, b))).unwrap();
        (s, got)
    }

    #[test]
    fn entries_come_one_by_one_with_their_bytes() {
        let text = "\u{feff}{\"x\":[1,{}],\"log\":{\"entries\":[{\"a\":1}, {\"b\":[2]}],\"version\":\"1.2\"}}\n";
        let (s, got) = read(text);
        assert!(s.error.is_none());
        assert_eq!(s.bytes, text.len() as u64);
        assert_eq!(s.head.version, Some(Value::from("1.2")));
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, 2);
        assert_eq!(got[0].2, "{\"a\":1}".len() as u64);
        assert_eq!(got[1].2, ", {\"b\":[2]}".len() as u64);
    }

    #[test]
    fn an_error_keeps_the_entries_before_it() {
        let text = "{\"log\":{\"entries\":[{\"a\":1},{\"b\":tru";
        let (s, got) = read(text);
        assert_eq!(got.len(), 1);
        assert!(s.error.as_ref().is_some_and(|e| e.is_eof()));
        assert_eq!(s.bytes, text.len() as u64);
        let deep = format!("{{\"log\":{{\"entries\":[{{}},{}]}}}}", "[".repeat(100_000));
        let (s, got) = read(&deep);
        assert_eq!(got.len(), 1);
        assert!(s.error.is_some());
        assert_eq!(s.bytes, deep.len() as u64);
    }
}
