//! Finding where an event stream can be read from when the capture began in the middle of its
//! body: no request, no response head, maybe not even a whole line.
//!
//! The bytes of such a response are searched, a line at a time, for the first point from which
//! they read as Server-Sent Events (WHATWG HTML §9.2.6): either a chunk-size line of the chunked
//! transfer coding (RFC 9112 §7.1) followed by field lines, or a field line (`data:`, `id:`,
//! `event:`, `retry:`, or a `:` comment) at the start of a line. A point counts only when what
//! follows it reads as a whole event: field lines up to a blank line, with a `data` or `id` field
//! among them, and, inside chunked framing, chunks whose sizes and CRLFs agree. Anything else
//! (binary, JSON, HTML) has lines that are not SSE fields and is never taken for a stream.
//!
//! When a field line is found first, the framing is told by what follows: a chunk-size line
//! further on means the point was inside a chunk, whose remaining size is then known (the
//! distance to the CRLF before that line); two events with no chunk-size line between them, or
//! the end of the connection after one, mean a close-delimited body. Lines are ended by LF (CRLF
//! included); a stream cut into lone-CR lines is not resynchronised.

use super::body::{ChunkOutput, ChunkedDecoder, parse_chunk_size};

/// How the body continues from the point found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Chunked: at a chunk-size line (`None`), or inside a chunk with this many data bytes left.
    Chunked { in_chunk: Option<u64> },
    /// The body runs until the connection closes.
    UntilClose,
}

/// What a search of the bytes captured so far found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Search {
    /// The stream can be read from byte `at` on, so framed.
    Found { at: usize, framing: Framing },
    /// Nothing yet; the candidates before `from` are ruled out (search from there next time).
    NeedMore { from: usize },
}

/// Searches `buf` (the first bytes of a response direction), from the line starting at `from`,
/// for the first point it reads as an event stream from. `ended`: no more bytes will come.
pub(crate) fn find_sse_sync(buf: &[u8], from: usize, ended: bool) -> Search {
    let mut at = from;
    while at < buf.len() {
        let Some(line) = line_at(buf, at) else {
            break;
        };
        let verdict = if chunk_size(line.text).is_some_and(|n| n > 0) {
            dechunked_is_sse(&buf[at..], ChunkedDecoder::new(), ended)
                .map(|v| v.then_some(Framing::Chunked { in_chunk: None }))
        } else if is_field_line(line.text) {
            from_field_line(buf, at, ended)
        } else {
            Some(None)
        };
        match verdict {
            Some(Some(framing)) => return Search::Found { at, framing },
            // The earliest candidate decides: wait for more bytes.
            None => return Search::NeedMore { from: at },
            Some(None) => at = line.next,
        }
    }
    Search::NeedMore { from: at }
}

/// A line of `buf` starting at `at`: its text without the line end, and where the next begins.
/// `None` when the line is not complete yet.
struct Line<'a> {
    text: &'a [u8],
    next: usize,
}

fn line_at(buf: &[u8], at: usize) -> Option<Line<'_>> {
    let rest = buf.get(at..)?;
    let lf = memchr::memchr(b'\n', rest)?;
    let text = &rest[..lf];
    Some(Line {
        text: text.strip_suffix(b"\r").unwrap_or(text),
        next: at + lf + 1,
    })
}

/// The size a chunk-size line announces (`1a`, `1a;ext=v`), if the line is one.
fn chunk_size(line: &[u8]) -> Option<u64> {
    parse_chunk_size(line).ok()
}

/// A line an event stream carries: a comment, or one of the four fields the standard defines
/// (a field name alone, or followed by a colon), in UTF-8.
fn is_field_line(line: &[u8]) -> bool {
    if line.first() == Some(&b':') {
        return std::str::from_utf8(line).is_ok();
    }
    let name_end = line.iter().position(|&b| b == b':').unwrap_or(line.len());
    let name = &line[..name_end];
    let valid_value = || {
        let value = &line[name_end..];
        std::str::from_utf8(value).is_ok() && !value.contains(&0)
    };
    match name {
        b"data" | b"id" | b"event" => valid_value(),
        // A retry field the standard would ignore (not all digits) is no evidence of a stream.
        b"retry" => {
            let v = line.get(name_end + 1..).unwrap_or(b"");
            let v = v.strip_prefix(b" ").unwrap_or(v);
            !v.is_empty() && v.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// Whether event-stream lines from the start of `text` make a whole event: field lines up to a
/// blank line, a `data` or `id` field among them. `None`: not enough text to tell.
fn first_event_whole(text: &[u8], ended: bool) -> Option<bool> {
    let mut at = 0;
    let mut has_event = false;
    while let Some(line) = line_at(text, at) {
        if line.text.is_empty() {
            if has_event {
                return Some(true);
            }
        } else if !is_field_line(line.text) {
            return Some(false);
        } else if line.text.starts_with(b"data") || line.text.starts_with(b"id") {
            has_event = true;
        }
        at = line.next;
    }
    if ended { Some(false) } else { None }
}

/// Whether `bytes`, de-chunked by `decoder`, start with a whole event. `None`: need more.
fn dechunked_is_sse(bytes: &[u8], mut decoder: ChunkedDecoder, ended: bool) -> Option<bool> {
    let mut out = Vec::new();
    let Ok(_) = decoder.decode(bytes, &mut out) else {
        return Some(false);
    };
    let mut text = Vec::new();
    let mut last_chunk = false;
    for piece in out {
        match piece {
            ChunkOutput::Data(d) => text.extend_from_slice(d),
            ChunkOutput::End => last_chunk = true,
        }
    }
    first_event_whole(&text, ended || last_chunk)
}

/// The candidate at `at` is a field line: read on to tell the framing. `Some(None)`: not a
/// stream from here.
fn from_field_line(buf: &[u8], at: usize, ended: bool) -> Option<Option<Framing>> {
    let mut q = at;
    let mut events = 0;
    let mut has_event = false;
    while let Some(line) = line_at(buf, q) {
        if q > at
            && let Some(n) = chunk_size(line.text)
        {
            // A chunk-size line: the point was inside a chunk whose data ends at the line end
            // just before it (RFC 9112 §7.1: chunk-data CRLF).
            let data_end = if buf[..q].ends_with(b"\r\n") {
                q - 2
            } else {
                q - 1
            };
            if data_end < at || (n == 0 && events == 0) {
                return Some(None);
            }
            let left = (data_end - at) as u64;
            let decoder = ChunkedDecoder::in_chunk(left);
            return dechunked_is_sse(&buf[at..], decoder, ended).map(|v| {
                v.then_some(Framing::Chunked {
                    in_chunk: Some(left),
                })
            });
        }
        if line.text.is_empty() {
            if has_event {
                events += 1;
                has_event = false;
            }
            if events >= 2 {
                return Some(Some(Framing::UntilClose));
            }
        } else if !is_field_line(line.text) {
            return Some(None);
        } else if line.text.starts_with(b"data") || line.text.starts_with(b"id") {
            has_event = true;
        }
        q = line.next;
    }
    if ended {
        Some((events >= 1).then_some(Framing::UntilClose))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(buf: &[u8], ended: bool) -> Option<(usize, Framing)> {
        match find_sse_sync(buf, 0, ended) {
            Search::Found { at, framing } => Some((at, framing)),
            Search::NeedMore { .. } => None,
        }
    }

    #[test]
    fn at_a_chunk_size_line() {
        let wire = b"15\r\nid: 1\ndata: {\"n\":1}\n\n\r\n";
        assert_eq!(wire.len() - 6, 0x15);
        assert_eq!(
            found(wire, false),
            Some((0, Framing::Chunked { in_chunk: None }))
        );
    }

    #[test]
    fn inside_a_chunk_then_at_its_end() {
        // The capture began inside a chunk: "...tail\n\n" ends an event cut at the start; the
        // next event starts mid-chunk, and the chunk-size line after it tells how far the
        // chunk went.
        let wire = b"ail of one\"}\n\nid: 2\r\ndata: two\r\n\r\n\r\nf\r\nid: 3\ndata: 3\n\n\r\n";
        let at = wire.windows(5).position(|w| w == b"id: 2").unwrap();
        let left = (wire.windows(5).position(|w| w == b"\r\nf\r\n").unwrap() - at) as u64;
        assert_eq!(
            found(wire, false),
            Some((
                at,
                Framing::Chunked {
                    in_chunk: Some(left)
                }
            ))
        );
    }

    #[test]
    fn close_delimited_after_two_events_or_the_end() {
        let wire = b"ta\": 1}\n\n: ping\nevent: m\ndata: a\n\ndata: b\n\n";
        assert_eq!(found(wire, false), Some((9, Framing::UntilClose)));
        // One event only: it could still be a chunk's; the end of the connection tells.
        let one = b"x\nid: 7\ndata: a\n\n";
        assert_eq!(found(one, false), None);
        assert_eq!(found(one, true), Some((2, Framing::UntilClose)));
    }

    #[test]
    fn needs_a_whole_event() {
        assert_eq!(
            find_sse_sync(b"junk\ndata: a\n", 0, false),
            Search::NeedMore { from: 5 }
        );
        // Field lines with no blank line, or no data and no id, are no event.
        assert_eq!(found(b"event: x\nretry: 10\n\n", true), None);
        assert_eq!(found(b"data: cut at the end", true), None);
    }

    #[test]
    fn never_reads_other_bytes_as_a_stream() {
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{"data":"id: 5"}}
{"x": "data: y"}

"#;
        let html = b"<html>\n<body>\ndata: looks like a field\n</body>\n\n";
        let mut binary: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        binary.extend_from_slice(b"\n\n");
        for bytes in [&json[..], &html[..], &binary[..]] {
            assert_eq!(
                found(bytes, true),
                None,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        // A chunk-size line whose chunk does not end where it says is no boundary (what follows
        // it may still be a stream).
        assert_eq!(
            found(b"5\r\ndata: a\n\ndata: b\n\n", false),
            Some((3, Framing::UntilClose))
        );
        // Unknown field names, bad retry values, NUL in an id.
        assert_eq!(found(b"dta: a\n\n", true), None);
        assert_eq!(found(b"retry: soon\n\n", true), None);
        assert_eq!(found(b"id: a\0b\n\n", true), None);
    }

    #[test]
    fn a_later_point_when_the_first_fails() {
        let wire = b"3\r\nxx\r\nid: 1\ndata: a\n\ndata: b\n\n";
        assert_eq!(found(wire, false), Some((7, Framing::UntilClose)));
    }
}
