//! The search for the start line of the next message: between messages, after a capture gap,
//! and in bytes that may not be HTTP at all.
//!
//! Lines are tested one at a time (RFC 9112 §2.2 allows empty lines before a message); anything
//! else before a start line is skipped and counted. After a lost head the next message may be
//! glued to the end of a body that has no final newline, so a start line is looked for inside a
//! line too. A connection that shows no HTTP within [`GIVE_UP_NON_HTTP`] bytes is given up.

use std::borrow::Cow;

use mcpf_capture::request_line;

use super::{ConnKind, Connection, State, di};
use mcpf_model::{Direction, Mark};

/// A start line is looked for within lines up to this long while resynchronising.
const MAX_RESYNC_LINE: usize = 8 * 1024;
/// A connection that has shown no HTTP after this many bytes is not scanned further.
const GIVE_UP_NON_HTTP: u64 = 256 * 1024;

impl Connection {
    /// Looks for the start line of the next message, a line at a time. Leading empty lines are
    /// allowed before a message (RFC 9112 §2.2); anything else before a start line is skipped
    /// and counted.
    pub(super) fn find_start(&mut self, dir: Direction, data: &[u8], mark: Mark) -> usize {
        let probing = dir == Direction::ServerToClient && self.sse_probe.is_some();
        let (used, found, blank) = self.find_start_line(dir, data, mark, !probing);
        if probing {
            if found {
                // A head: not a body picked up in the middle.
                self.end_probe();
            } else {
                self.probe_push(&data[..used], mark, blank);
            }
        }
        used
    }

    /// [`Self::find_start`] on one line (or what there is of it): returns the bytes consumed,
    /// whether they started a head, and whether they ended a blank line. `count`: bytes
    /// skipped are counted (not while a probe holds them).
    fn find_start_line(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        count: bool,
    ) -> (usize, bool, bool) {
        let (chunk, complete) = match data.iter().position(|&b| b == b'\n') {
            Some(i) => (&data[..=i], true),
            None => (data, false),
        };
        if self.half(dir).line.len() + chunk.len() > MAX_RESYNC_LINE {
            self.skip_long_line(dir, chunk.len(), count);
            return (chunk.len(), false, false);
        }
        if !complete {
            self.keep_line_start(dir, chunk, mark);
            return (chunk.len(), false, false);
        }
        let (line, line_offset, line_first) = self.whole_line(dir, chunk, mark);
        let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
        let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
        if trimmed.is_empty() {
            return (chunk.len(), false, true);
        }
        let Some(at) = start_line_at(trimmed, dir) else {
            self.skip_line(dir, line.len(), count);
            return (chunk.len(), false, false);
        };
        let first = if at == 0 { line_first } else { mark };
        self.begin_head(dir, &line, at, line_offset, first);
        (chunk.len(), true, false)
    }

    /// Too long to be a start line: what is held of the line and this chunk are dropped.
    fn skip_long_line(&mut self, dir: Direction, chunk_len: usize, count: bool) {
        let half = self.half(dir);
        if count {
            half.skipped += (half.line.len() + chunk_len) as u64;
        }
        half.line.clear();
        self.not_http_yet(chunk_len as u64);
    }

    /// Keeps the start of a line the chunk did not end, with where its first byte came.
    fn keep_line_start(&mut self, dir: Direction, chunk: &[u8], mark: Mark) {
        let pos = self.pos[di(dir)];
        let half = self.half(dir);
        if half.line.is_empty() {
            half.line_first = Some(mark);
            half.line_offset = pos;
        }
        half.line.extend_from_slice(chunk);
    }

    /// The line `chunk` ends (what was kept of it, then `chunk`), the stream offset of its first
    /// byte, and where that byte was captured.
    fn whole_line<'c>(
        &mut self,
        dir: Direction,
        chunk: &'c [u8],
        mark: Mark,
    ) -> (Cow<'c, [u8]>, u64, Mark) {
        let pos = self.pos[di(dir)];
        let half = self.half(dir);
        let line_offset = if half.line.is_empty() {
            pos
        } else {
            half.line_offset
        };
        let line_first = half
            .line_first
            .take()
            .filter(|_| !half.line.is_empty())
            .unwrap_or(mark);
        let line: Cow<'_, [u8]> = if half.line.is_empty() {
            Cow::Borrowed(chunk)
        } else {
            let mut l = std::mem::take(&mut half.line);
            l.extend_from_slice(chunk);
            Cow::Owned(l)
        };
        (line, line_offset, line_first)
    }

    /// A start line begins `at` bytes into `line`, whose first byte is at stream offset
    /// `offset`; `first` is where the start line was captured. Its head is read from there.
    fn begin_head(&mut self, dir: Direction, line: &[u8], at: usize, offset: u64, first: Mark) {
        let half = self.half(dir);
        // A connection carries nothing but messages: lost bytes before this head were one.
        half.lost_in_gap |= std::mem::take(&mut half.gap_between);
        half.skipped += at as u64;
        half.head.clear();
        half.head.extend_from_slice(&line[at..]);
        half.head_first = Some(first);
        half.head_offset = offset + at as u64;
        half.state = State::Head;
        self.kind = Some(ConnKind::Http);
    }

    /// A whole line that starts no message: skipped.
    fn skip_line(&mut self, dir: Direction, len: usize, count: bool) {
        let half = self.half(dir);
        if count {
            half.skipped += len as u64;
            half.lost_in_gap |= std::mem::take(&mut half.gap_between);
        }
        self.not_http_yet(len as u64);
    }

    /// `n` more bytes scanned without a start line, on a connection not known to speak HTTP:
    /// past [`GIVE_UP_NON_HTTP`] of them it is taken for something else, and not scanned
    /// further.
    fn not_http_yet(&mut self, n: u64) {
        if self.kind == Some(ConnKind::Http) {
            return;
        }
        self.scanned_without_http += n;
        if self.scanned_without_http > GIVE_UP_NON_HTTP && self.kind.is_none() {
            self.kind = Some(ConnKind::Other);
            self.req.state = State::Opaque;
            self.resp.state = State::Opaque;
        }
    }
}

/// Where a start line of `dir` begins in `line` (its line end taken off), if one does: at its
/// start, or inside it. After a lost head, the next message may be glued to the end of a body
/// that has no final newline (a JSON body): a start line is looked for inside the line too.
fn start_line_at(line: &[u8], dir: Direction) -> Option<usize> {
    let plausible = match dir {
        Direction::ClientToServer => is_request_line(line),
        Direction::ServerToClient => is_status_line(line),
    };
    if plausible {
        return Some(0);
    }
    embedded_start(line, dir)
}

/// Where a start line begins inside `line` (not at 0), if one does.
fn embedded_start(line: &[u8], dir: Direction) -> Option<usize> {
    match dir {
        Direction::ClientToServer => (1..line.len()).find(|&p| {
            line[p].is_ascii_uppercase()
                && !line[p - 1].is_ascii_uppercase()
                && request_line::begins_request(&line[p..])
                && is_request_line(&line[p..])
        }),
        Direction::ServerToClient => line
            .windows(7)
            .enumerate()
            .skip(1)
            .filter(|(_, w)| *w == b"HTTP/1.")
            .map(|(p, _)| p)
            .find(|&p| is_status_line(&line[p..])),
    }
}

/// `data` begins with a whole request line.
pub(super) fn starts_request(data: &[u8]) -> bool {
    let Some(end) = data.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let line = &data[..end];
    is_request_line(line.strip_suffix(b"\r").unwrap_or(line))
}

/// `METHOD SP target SP HTTP/1.x`: a request line an HTTP/1.x connection carries.
fn is_request_line(line: &[u8]) -> bool {
    request_line::parse(line).is_some_and(|r| r.is_http1())
}

/// `HTTP/1.x NNN [reason]`.
pub(crate) fn is_status_line(line: &[u8]) -> bool {
    line.len() >= 12
        && line.starts_with(b"HTTP/1.")
        && line[7].is_ascii_digit()
        && line[8] == b' '
        && line[9..12].iter().all(u8::is_ascii_digit)
        && line.get(12).is_none_or(|&b| b == b' ')
}
