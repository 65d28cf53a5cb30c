//! NDJSON as every command writes it: one record per line, `type` and `schema_version` (the
//! version of the command's JSON document) first, then the record's own members, so a consumer
//! can dispatch on `type` and check the version of each line alone.

use std::io::{self, Write};

use serde::Serialize;

use crate::analyze::spill::Range;

/// The start of a line of `kind`, up to the members of its record.
fn line_start(out: &mut dyn Write, kind: &str, version: u32) -> io::Result<()> {
    write!(out, "{{\"type\":\"{kind}\",\"schema_version\":{version}")
}

/// One record, already compact JSON (an object), as a line.
pub(crate) fn write_line(
    out: &mut dyn Write,
    kind: &str,
    version: u32,
    compact: &[u8],
) -> io::Result<()> {
    let body = compact.strip_prefix(b"{").unwrap_or(compact);
    line_start(out, kind, version)?;
    if body != b"}" {
        out.write_all(b",")?;
    }
    out.write_all(body)?;
    out.write_all(b"\n")
}

/// One record as a line.
pub(crate) fn write_record(
    out: &mut dyn Write,
    kind: &str,
    version: u32,
    record: &impl Serialize,
) -> io::Result<()> {
    write_line(out, kind, version, &serde_json::to_vec(record)?)
}

/// A record spilled compact at `range` (an object, never `{}`), copied by `copy` as
/// [`write_line`] would write it: its members after the opening brace follow the line's own,
/// without reading it into memory.
pub(crate) fn write_spilled(
    out: &mut dyn Write,
    kind: &str,
    version: u32,
    (at, len): Range,
    copy: impl FnOnce(Range, &mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    line_start(out, kind, version)?;
    out.write_all(b",")?;
    copy((at + 1, len.saturating_sub(1)), out)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_follows_its_type_and_version() {
        let mut out = Vec::new();
        write_line(&mut out, "input", 1, br#"{"a":1}"#).unwrap();
        write_line(&mut out, "summary", 2, b"{}").unwrap();
        write_record(&mut out, "x", 1, &serde_json::json!({"b": [1]})).unwrap();
        let spilled = br#"....{"c":2}"#;
        write_spilled(&mut out, "exchange", 1, (4, 7), |(at, len), out| {
            out.write_all(&spilled[at as usize..(at + len) as usize])
        })
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"input\",\"schema_version\":1,\"a\":1}\n\
             {\"type\":\"summary\",\"schema_version\":2}\n\
             {\"type\":\"x\",\"schema_version\":1,\"b\":[1]}\n\
             {\"type\":\"exchange\",\"schema_version\":1,\"c\":2}\n"
        );
    }
}
