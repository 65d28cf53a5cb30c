//! A head's bytes, from its start line to the blank line that ends it, within [`MAX_HEAD`].
//!
//! The blank line may straddle two segments. A head past the limit keeps its lines before the
//! limit and, of the lines after it, only those that frame the message or place it in an MCP
//! session ([`READ_PAST_MAX_HEADERS`]): a crafted head must not hide the request it carries.

use super::{Connection, Half, HttpSink, State, di};
use crate::Outcome;
use crate::body::Framing;
use mcpf_model::{AnomalyKind, Direction, Mark};

/// Headers larger than this are not an HTTP message we can use.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// Header fields kept per message; past it only the fields the pipeline reads
/// ([`READ_PAST_MAX_HEADERS`]) are, and the others are counted and dropped, with an anomaly.
/// The head is still parsed whole (any number of lines within [`MAX_HEAD`]).
pub(crate) const MAX_HEADERS: usize = 128;
/// The fields that frame a message or place it in an MCP session: never dropped, wherever a
/// crafted head puts them.
const READ_PAST_MAX_HEADERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "content-encoding",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "accept",
    "host",
];

impl Half {
    /// Cuts a head that passed [`MAX_HEAD`] back to its whole lines within the limit, counting
    /// the rest as dropped; false when not even the start line fits (the head is then skipped).
    fn keep_head_within_limit(&mut self) -> bool {
        let Some(keep) = self.head[..MAX_HEAD].iter().rposition(|&b| b == b'\n') else {
            return false;
        };
        let rest = self.head.split_off(keep + 1);
        self.head_dropped = Some(0);
        self.head_tail.clear();
        self.scan_past_limit(&rest);
        true
    }

    /// Reads header lines past [`MAX_HEAD`]: keeps those the pipeline reads, counts the others;
    /// returns the bytes of `data` used and whether the blank line ending the head was among them.
    fn scan_past_limit(&mut self, data: &[u8]) -> (usize, bool) {
        /// A kept field line longer than this is dropped like the others.
        const MAX_KEPT_LINE: usize = 8 << 10;
        let mut at = 0;
        while at < data.len() {
            let nl = data[at..].iter().position(|&b| b == b'\n');
            let end = nl.map_or(data.len(), |i| at + i + 1);
            let piece = &data[at..end];
            at = end;
            let take = piece
                .len()
                .min(MAX_KEPT_LINE.saturating_sub(self.head_tail.len()));
            self.head_tail.extend_from_slice(&piece[..take]);
            // What does not fit is never kept: a line that long is not a field we read.
            self.count_dropped((piece.len() - take) as u64);
            if nl.is_none() {
                break;
            }
            let line = std::mem::take(&mut self.head_tail);
            if line == b"\n" || line == b"\r\n" {
                return (at, true);
            }
            if line.len() < MAX_KEPT_LINE && is_read_past_limit(&line) {
                self.head.extend_from_slice(&line);
            } else {
                self.count_dropped(line.len() as u64);
            }
        }
        (at, false)
    }

    fn count_dropped(&mut self, n: u64) {
        *self.head_dropped.get_or_insert(0) += n;
    }
}

impl Connection {
    /// Reads head bytes up to the blank line that ends the head; returns the bytes used.
    pub(super) fn read_head(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        if self.half(dir).head_dropped.is_some() {
            return self.read_head_past_limit(dir, data, mark, sink);
        }
        let half = self.half(dir);
        let before = half.head.len();
        // The blank line may straddle the previous chunk: search from a little before it.
        let search_from = before.saturating_sub(3);
        half.head.extend_from_slice(data);
        let end = find_head_end(&half.head[search_from..]).map(|e| e + search_from);
        let Some(end) = end else {
            if half.head.len() > MAX_HEAD && !half.keep_head_within_limit() {
                let len = half.head.len() as u64;
                half.head.clear();
                half.skipped += len;
                half.state = State::Start;
                let what = format!("message headers exceed {} KiB: skipped", MAX_HEAD / 1024);
                self.anomaly((AnomalyKind::HeadTooLarge, what), dir, mark, sink);
            }
            return data.len();
        };
        let used = end - before;
        let half = self.half(dir);
        half.head.truncate(end);
        let head = std::mem::take(&mut half.head);
        self.finish_head(dir, head, used, mark, sink)
    }

    /// A head past [`MAX_HEAD`]: the lines before the limit are kept, and of the lines after it
    /// only those that frame the message or name its session ([`READ_PAST_MAX_HEADERS`]); the
    /// rest are counted and dropped up to the blank line that ends the head. The message is
    /// reported with an anomaly: a crafted head must not hide the request it carries.
    fn read_head_past_limit(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        let half = self.half(dir);
        let (used, ended) = half.scan_past_limit(data);
        if !ended {
            return data.len();
        }
        let dropped = half.head_dropped.take().unwrap_or(0);
        let mut head = std::mem::take(&mut half.head);
        head.extend_from_slice(b"\r\n");
        let what = format!(
            "message headers exceed {} KiB: {dropped} bytes of header lines past it were dropped (the fields that frame the message or name its session kept)",
            MAX_HEAD / 1024
        );
        self.anomaly((AnomalyKind::HeadLinesDropped, what), dir, mark, sink);
        self.finish_head(dir, head, used, mark, sink)
    }

    /// Parses a head that ended `used` bytes into the last chunk, and ends a message that has
    /// no body.
    fn finish_head(
        &mut self,
        dir: Direction,
        head: Vec<u8>,
        used: usize,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) -> usize {
        self.step_used[di(dir)] = used as u64;
        let half = self.half(dir);
        let first = half.head_first.take().unwrap_or(mark);
        half.state = State::Start;
        self.parse_head(dir, &head, first, mark, sink);
        // A message with no body ends with its headers.
        if matches!(self.half(dir).state, State::Body)
            && self
                .half(dir)
                .msg
                .as_ref()
                .is_some_and(|m| m.framing == Framing::None || m.framing == Framing::Length(0))
        {
            self.end_message(dir, Outcome::Complete, None, mark, sink);
        }
        used
    }
}

/// Whether a field is one that is never dropped ([`READ_PAST_MAX_HEADERS`]).
pub(crate) fn never_dropped(name: &[u8]) -> bool {
    READ_PAST_MAX_HEADERS
        .iter()
        .any(|f| f.as_bytes().eq_ignore_ascii_case(name))
}

/// Whether a raw header line names a field that is never dropped.
fn is_read_past_limit(line: &[u8]) -> bool {
    line.iter()
        .position(|&b| b == b':')
        .is_some_and(|colon| never_dropped(line[..colon].trim_ascii()))
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'\n', buf).find_map(|i| match buf[i + 1..] {
        [b'\n', ..] => Some(i + 2),
        [b'\r', b'\n', ..] => Some(i + 3),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_past_its_limit_keeps_the_fields_that_frame_it_across_chunks() {
        let mut half = Half::new();
        half.head = b"POST /mcp HTTP/1.1\r\n".to_vec();
        half.head_dropped = Some(0);
        let pad = b"X-Pad: aaaaaaaa\r\n".repeat(10);
        let rest = [
            &pad[..],
            b"Content-Le",
            b"ngth: 12\r\nX-More: 1\r\n\r",
            b"\n{body}",
        ]
        .concat();
        // Fed in pieces that cut a kept field and the blank line in two.
        let (a, b) = rest.split_at(pad.len() + 4);
        assert_eq!(half.scan_past_limit(a), (a.len(), false));
        let cut = b.iter().position(|&c| c == b'{').unwrap();
        let (b1, b2) = b.split_at(cut - 1);
        assert_eq!(half.scan_past_limit(b1), (b1.len(), false));
        assert_eq!(half.scan_past_limit(b2), (1, true));
        assert_eq!(half.head, b"POST /mcp HTTP/1.1\r\nContent-Length: 12\r\n");
        assert_eq!(half.head_dropped, Some(pad.len() as u64 + 11));
    }
}
