//! Server-Sent Events parser, byte for byte after the WHATWG HTML "event stream interpretation"
//! rules (§9.2.6): CRLF, LF or lone CR line ends (also split across chunks), one leading BOM
//! dropped, `data` lines joined with `\n`, `id` ignored when it holds NUL and reset by an empty
//! value, `retry` only when all digits, `:` comments, dispatch on a blank line, and an unterminated
//! event at the end discarded.
//!
//! Sans-IO: fed decoded body bytes with the capture mark of the packet that carried them,
//! returns the events each feed completed.
//!
//! Beyond a browser, it also records what a forensic reader needs: an event that carries an `id`
//! but no data is a *priming* event in MCP 2025-11-25 (the client may resume from it) and is
//! kept, not discarded; comments (keep-alive pings) are counted.
//!
//! ```
//! use mcpf_http::sse::SseParser;
//! use mcpf_model::{FrameRef, Mark, Timestamp};
//!
//! // The capture mark of the packet that carried each chunk.
//! let mark = |n: u64| Mark {
//!     time: Timestamp(n as i64),
//!     frame: FrameRef::new(0, n),
//! };
//! let mut parser = SseParser::new();
//! let mut events = Vec::new();
//! // Two events; the second is cut by the end of the first chunk, in the middle of a line.
//! parser.feed(b"id: 41\ndata: {\"a\":1}\n\nevent: note\nda", mark(1), &mut events);
//! assert_eq!(events.len(), 1);
//! assert_eq!(parser.last_event_id(), "41");
//! parser.feed(b"ta: second\n\n", mark(2), &mut events);
//! parser.finish();
//!
//! let [first, second] = &events[..] else {
//!     panic!("two events")
//! };
//! assert_eq!(first.id.as_deref(), Some("41"));
//! assert_eq!(first.event, "message");
//! assert_eq!(first.data, r#"{"a":1}"#);
//! // The second event sets no `id:` of its own, yet a client that reconnects after it sends
//! // `Last-Event-ID: 41`: the last ID the stream set, which every event carries.
//! assert_eq!(second.id, None);
//! assert_eq!(&*second.last_event_id, "41");
//! assert_eq!(second.event, "note");
//! assert_eq!(second.data, "second");
//! // An event is dated by the packet that completed it.
//! assert_eq!(second.mark.frame, FrameRef::new(0, 2));
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use mcpf_model::Mark;

use crate::shrink::JsonShrinker;

/// Most data one event may accumulate.
const MAX_DATA: usize = 16 << 20;
/// A line longer than this is kept shrunk, its JSON strings cut ([`JsonShrinker`]: a tool result
/// of any size keeps its JSON-RPC envelope), and cut here if still longer; the event is marked
/// `truncated` and the line counted: a crafted stream cannot make us buffer without bound.
const MAX_LINE: usize = MAX_DATA;

/// `value` kept within `room` bytes the way a line over its cap is: JSON with its strings cut
/// (so that a JSON-RPC envelope stays whole), then cut at `room` if still too long.
fn push_shrunk(data: &mut String, value: &str, room: usize) {
    let mut shrunk = Vec::with_capacity(room.min(value.len()));
    JsonShrinker::default().feed(value.as_bytes(), &mut shrunk);
    let mut end = shrunk.len().min(room);
    while end > 0 && end < shrunk.len() && (shrunk[end] & 0xc0) == 0x80 {
        end -= 1;
    }
    data.push_str(&String::from_utf8_lossy(&shrunk[..end]));
}

/// A field's value as text, invalid UTF-8 replaced. Lines are decoded apart: CR and LF never
/// occur inside a UTF-8 sequence.
fn decode(value: &[u8]) -> Cow<'_, str> {
    // The SIMD check is several times faster than the standard one on long values, and the lossy
    // reader slower than either on valid text.
    match simdutf8::basic::from_utf8(value) {
        Ok(v) => Cow::Borrowed(v),
        Err(_) => String::from_utf8_lossy(value),
    }
}

/// One event as dispatched by the stream (or kept as priming).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SseEvent {
    /// Position in the stream among recorded events, from 0.
    pub index: u32,
    /// The value of the `id` field in this event, when it had one (`Some("")` resets).
    /// Shared with `last_event_id`: one allocation per ID, not three.
    pub id: Option<Arc<str>>,
    /// The stream's last event ID after this event, what a client would send as `Last-Event-ID`.
    pub last_event_id: Arc<str>,
    /// Event type (`message` when absent).
    pub event: Cow<'static, str>,
    pub data: String,
    /// `retry` field of this event, in milliseconds.
    pub retry: Option<u64>,
    /// An `id` with empty data: MCP's priming event; browsers do not dispatch it when there was no
    /// `data` line at all.
    pub priming: bool,
    /// Whether a browser's EventSource would dispatch it.
    pub dispatched: bool,
    /// Where the blank line that completed it was captured.
    pub mark: Mark,
    /// The first event parsed after a capture gap in this stream.
    pub after_gap: bool,
    /// Data was cut at the size limit.
    pub truncated: bool,
    /// The time is an estimate (a HAR file records no per-event times).
    pub estimated: bool,
}

/// Counters of things that are not events.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SseStats {
    pub events: u64,
    pub comments: u64,
    /// Blocks ended by a blank line that produced no event (no data, no id).
    pub empty_blocks: u64,
    /// Events lost to capture gaps (partial events thrown away).
    pub dropped_at_gaps: u64,
    /// An event still open when the stream ended (discarded, as browsers do).
    pub unterminated: bool,
    pub oversized_lines: u64,
    /// Lines or events cut shorter than their own cap because the messages in progress held
    /// all the bytes allowed together.
    pub cut_by_held: u64,
    /// The last `retry` value seen, in milliseconds.
    pub last_retry: Option<u64>,
}

#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    line_oversized: bool,
    /// The line in progress passed [`MAX_LINE`]: kept shrunk.
    line_shrink: Option<Box<JsonShrinker>>,
    /// The previous byte was CR: a following LF belongs to the same line end.
    after_cr: bool,
    /// Bytes seen before the BOM decision (the BOM may arrive split).
    start: Vec<u8>,
    bom_decided: bool,
    data: String,
    has_data_field: bool,
    event_type: String,
    id_field: Option<Arc<str>>,
    retry_field: Option<u64>,
    last_event_id: Arc<str>,
    data_truncated: bool,
    /// After a gap, lines are skipped until a blank line: never glue two halves of a stream.
    resyncing: bool,
    /// The first line end after a gap closes a cut line, whatever it looks like.
    resync_first_line: bool,
    mark_after_gap: bool,
    /// Anything in the current block (so a blank line ends a block, not just repeats).
    block_started: bool,
    next_index: u32,
    /// Bytes the line and data in progress may hold now (see [`SseParser::set_allowed`]).
    allowed: usize,
    pub stats: SseStats,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    pub fn new() -> Self {
        SseParser {
            line: Vec::new(),
            line_oversized: false,
            line_shrink: None,
            after_cr: false,
            start: Vec::new(),
            bom_decided: false,
            data: String::new(),
            has_data_field: false,
            event_type: String::new(),
            id_field: None,
            retry_field: None,
            last_event_id: Arc::from(""),
            data_truncated: false,
            resyncing: false,
            resync_first_line: false,
            mark_after_gap: false,
            block_started: false,
            next_index: 0,
            allowed: usize::MAX,
            stats: SseStats::default(),
        }
    }

    /// Bytes its line and event in progress may hold together from now on, below their own
    /// caps: what the messages in progress leave.
    pub(crate) fn set_allowed(&mut self, bytes: usize) {
        self.allowed = bytes;
    }

    /// Bytes its line and event in progress hold.
    pub(crate) fn held(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// The longest the line in progress may grow, and whether the budget, not its own cap,
    /// decides.
    fn line_limit(&self) -> (usize, bool) {
        let shared = self.allowed.saturating_sub(self.data.len());
        (MAX_LINE.min(shared), shared < MAX_LINE)
    }

    /// The last event ID the stream set so far.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// Feeds body bytes; completed events are appended to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], mark: Mark, out: &mut Vec<SseEvent>) {
        if !self.bom_decided {
            // One UTF-8 BOM is dropped at the very start of the stream, even if split.
            const BOM: &[u8] = &[0xef, 0xbb, 0xbf];
            let need = BOM.len() - self.start.len();
            let take = need.min(bytes.len());
            self.start.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.start.len() < BOM.len() && BOM.starts_with(&self.start) {
                return;
            }
            self.bom_decided = true;
            let start = std::mem::take(&mut self.start);
            if start != BOM {
                self.scan(&start, mark, out);
            }
        }
        self.scan(bytes, mark, out);
    }

    fn scan(&mut self, bytes: &[u8], mark: Mark, out: &mut Vec<SseEvent>) {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            // A blank line (an event's end) needs no search.
            let end = match rest[0] {
                b'\n' | b'\r' => Some(0),
                _ => memchr::memchr2(b'\n', b'\r', rest),
            };
            match end {
                Some(i) => {
                    self.after_cr = rest[i] == b'\r';
                    if self.line.is_empty() && !self.line_oversized && i <= MAX_LINE {
                        // The whole line is in this chunk: read it where it lies.
                        self.end_line(&rest[..i], mark, out);
                    } else {
                        self.push_line_bytes(&rest[..i]);
                        let line = std::mem::take(&mut self.line);
                        self.end_line(&line, mark, out);
                        // The buffer is kept for the next split line.
                        self.line = line;
                        self.line.clear();
                    }
                    rest = &rest[i + 1..];
                }
                None => {
                    self.push_line_bytes(rest);
                    rest = &[];
                }
            }
        }
    }

    fn push_line_bytes(&mut self, b: &[u8]) {
        let (limit, shared) = self.line_limit();
        if self.line_shrink.is_none() && self.line.len() + b.len() > limit {
            self.stats.cut_by_held += u64::from(shared);
            let mut s = Box::new(JsonShrinker::default());
            let head = std::mem::take(&mut self.line);
            s.feed(&head, &mut self.line);
            self.line_shrink = Some(s);
        }
        match self.line_shrink.as_mut() {
            Some(s) => s.feed(b, &mut self.line),
            None => self.line.extend_from_slice(b),
        }
        if self.line.len() > limit {
            self.line.truncate(limit);
            self.line_oversized = true;
        }
    }

    fn end_line(&mut self, line: &[u8], mark: Mark, out: &mut Vec<SseEvent>) {
        let cut = std::mem::take(&mut self.line_oversized) | self.line_shrink.take().is_some();
        if cut {
            self.stats.oversized_lines += 1;
        }
        if self.resyncing {
            if std::mem::take(&mut self.resync_first_line) {
                return;
            }
            if line.is_empty() {
                self.resyncing = false;
            }
            return;
        }
        if line.is_empty() {
            self.dispatch(mark, out);
            return;
        }
        self.block_started = true;
        if line[0] == b':' {
            self.stats.comments += 1;
            return;
        }
        // Most lines of a stream are data lines: their field name needs no search.
        if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            self.push_data(&decode(value), cut);
            return;
        }
        // The field name is read from the bytes, and only the value decoded: the name is what
        // precedes the first colon, which no UTF-8 sequence holds, so the name and the value are
        // those of the decoded line.
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            // The usual type is known by its bytes.
            b"event" if value == b"message" => {
                self.event_type.clear();
                self.event_type.push_str("message");
            }
            b"event" => {
                self.event_type.clear();
                self.event_type.push_str(&decode(value));
            }
            b"data" => self.push_data(&decode(value), cut),
            b"id" if !value.contains(&0) => {
                let id: Arc<str> = Arc::from(&*decode(value));
                self.id_field = Some(id.clone());
                self.last_event_id = id;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = decode(value).parse::<u64>().unwrap_or(u64::MAX);
                self.retry_field = Some(ms);
                self.stats.last_retry = Some(ms);
            }
            _ => {}
        }
    }

    /// A `data` field's value (`cut`: its line was over its cap).
    fn push_data(&mut self, value: &str, cut: bool) {
        self.has_data_field = true;
        self.data_truncated |= cut;
        // The line's bytes become the data's: the line is let go once read, so the
        // data may take what the line held.
        let room = MAX_DATA
            .min(self.allowed)
            .saturating_sub(self.data.len() + 1);
        if value.len() > room {
            self.stats.cut_by_held += u64::from(self.allowed < MAX_DATA);
            self.data_truncated = true;
            push_shrunk(&mut self.data, value, room);
        } else {
            // One allocation for the value and its newline: the data is handed out with the
            // event, so each event's starts empty.
            self.data.reserve(value.len() + 1);
            self.data.push_str(value);
        }
        self.data.push('\n');
    }

    fn dispatch(&mut self, mark: Mark, out: &mut Vec<SseEvent>) {
        let had_block = std::mem::take(&mut self.block_started);
        let has_data = !self.data.is_empty();
        let id = self.id_field.take();
        let retry = self.retry_field.take();
        // The buffer is kept for the next event when the type is the default, as it mostly is.
        let event: Cow<'static, str> = match self.event_type.as_str() {
            "" | "message" => Cow::Borrowed("message"),
            _ => Cow::Owned(std::mem::take(&mut self.event_type)),
        };
        self.event_type.clear();
        let mut data = std::mem::take(&mut self.data);
        let had_data_field = std::mem::take(&mut self.has_data_field);
        let truncated = std::mem::take(&mut self.data_truncated);
        if !has_data && id.is_none() {
            if had_block {
                self.stats.empty_blocks += 1;
            }
            return;
        }
        if data.ends_with('\n') {
            data.pop();
        }
        let priming = id.is_some() && data.is_empty();
        let index = self.next_index;
        self.next_index += 1;
        self.stats.events += 1;
        out.push(SseEvent {
            index,
            id,
            last_event_id: self.last_event_id.clone(),
            event,
            data,
            retry,
            priming,
            dispatched: has_data || had_data_field,
            mark,
            after_gap: std::mem::take(&mut self.mark_after_gap),
            truncated,
            estimated: false,
        });
    }

    /// Bytes of the stream were lost: the event in progress cannot be trusted, and the bytes that
    /// follow belong to an unknown point of some event. Skip to the next blank line.
    pub(crate) fn gap(&mut self) {
        if self.block_started || !self.line.is_empty() || !self.data.is_empty() {
            self.stats.dropped_at_gaps += 1;
        }
        self.line.clear();
        self.line_shrink = None;
        self.line_oversized = false;
        self.data.clear();
        self.event_type.clear();
        self.id_field = None;
        self.retry_field = None;
        self.has_data_field = false;
        self.block_started = false;
        self.after_cr = false;
        self.bom_decided = true;
        self.start.clear();
        self.resyncing = true;
        self.resync_first_line = true;
        self.mark_after_gap = true;
    }

    /// Whether the parser sits between events (nothing of a next event read yet).
    pub(crate) fn at_boundary(&self) -> bool {
        !self.block_started && self.line.is_empty() && self.data.is_empty() && !self.resyncing
    }

    /// A gap that fell between events, where the framing below says the next bytes start a new
    /// unit (a chunk of a chunked body): nothing is skipped, the next event is marked.
    pub(crate) fn gap_at_boundary(&mut self) {
        self.after_cr = false;
        self.bom_decided = true;
        self.start.clear();
        self.mark_after_gap = true;
    }

    /// The stream ended. An event without its blank line is discarded, as browsers do; it is
    /// counted so the report can say so.
    pub fn finish(&mut self) {
        if !self.line.is_empty() || self.block_started {
            self.stats.unterminated = true;
        }
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::{FrameRef, Timestamp};

    fn mark(n: u64) -> Mark {
        Mark {
            time: Timestamp(n as i64),
            frame: FrameRef::new(0, n),
        }
    }

    fn parse_chunks(chunks: &[&[u8]]) -> (Vec<SseEvent>, SseParser) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            p.feed(c, mark(i as u64 + 1), &mut out);
        }
        p.finish();
        (out, p)
    }

    fn parse(s: &str) -> Vec<SseEvent> {
        parse_chunks(&[s.as_bytes()]).0
    }

    /// Events of `stream` in 1000-byte chunks, with `allowed` bytes held at most.
    fn parse_within(stream: &str, allowed: usize) -> (Vec<SseEvent>, SseParser) {
        let mut p = SseParser::new();
        p.set_allowed(allowed);
        let mut out = Vec::new();
        for (i, c) in stream.as_bytes().chunks(1000).enumerate() {
            p.feed(c, mark(i as u64 + 1), &mut out);
        }
        p.finish();
        (out, p)
    }

    #[test]
    fn a_line_held_within_the_budget_becomes_the_event_s_data_whole() {
        // The line takes 9 KB of a 10 KB budget; its data takes the line's place. (It was once
        // counted twice, line and data, and dropped: the answer it carried was lost.)
        let json = format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{{"t":"{}"}}}}"#,
            "A".repeat(9000)
        );
        let (ev, p) = parse_within(&format!("data: {json}\n\n"), 10_000);
        assert_eq!(ev.len(), 1);
        assert_eq!(
            (ev[0].data.as_str(), ev[0].truncated),
            (json.as_str(), false)
        );
        assert_eq!(p.stats.cut_by_held, 0);
    }

    #[test]
    fn data_past_the_budget_keeps_its_envelope() {
        let big = "A".repeat(300 << 10);
        let json = format!(r#"{{"jsonrpc":"2.0","id":2,"result":{{"t":"{big}"}}}}"#);
        let (ev, p) = parse_within(&format!("data: {json}\n\n"), 200 << 10);
        assert_eq!(ev.len(), 1);
        assert!(ev[0].truncated);
        assert_eq!(p.stats.cut_by_held, 1);
        let v: serde_json::Value = serde_json::from_str(&ev[0].data).unwrap();
        assert_eq!(v["id"], 2);
        assert!(ev[0].data.len() < 200 << 10);
    }

    #[test]
    fn an_event_over_the_line_limit_is_delivered_shrunk_and_marked() {
        let json = |len: usize| format!(r#"{{"result":{{"data":"{}"}},"id":9}}"#, "A".repeat(len));
        for (len, cut) in [(2 << 20, false), (MAX_LINE + 1, true), (MAX_LINE * 2, true)] {
            let stream = format!("data: {}\n\ndata: next\n\n", json(len));
            for piece in [64 << 10, stream.len()] {
                let chunks: Vec<&[u8]> = stream.as_bytes().chunks(piece).collect();
                let (ev, p) = parse_chunks(&chunks);
                assert_eq!(ev.len(), 2, "{len} {piece}");
                assert_eq!(ev[0].truncated, cut, "{len} {piece}");
                assert_eq!(p.stats.oversized_lines, u64::from(cut));
                let v: serde_json::Value = serde_json::from_str(&ev[0].data).unwrap();
                assert_eq!(v["id"], 9, "{len} {piece}");
                assert!(ev[0].data.len() <= MAX_LINE);
                assert_eq!((ev[1].data.as_str(), ev[1].truncated), ("next", false));
            }
        }
    }

    #[test]
    fn basic_event_with_id_and_type() {
        let ev = parse("event: message\nid: 41\ndata: {\"a\":1}\n\n");
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].id.as_deref(), Some("41"));
        assert_eq!(&*ev[0].last_event_id, "41");
        assert_eq!(ev[0].event, "message");
        assert_eq!(ev[0].data, "{\"a\":1}");
        assert!(!ev[0].priming);
    }

    #[test]
    fn all_line_endings_even_split() {
        for chunks in [
            vec![&b"data: a\r\n\r\ndata: b\r\n\r\n"[..]],
            vec![&b"data: a\r"[..], b"\n\r", b"\ndata: b\r", b"\n", b"\r\n"],
            vec![&b"data: a\r\rdata: b\r\r"[..]],
            vec![&b"data: a\r"[..], b"\r", b"data: b\r", b"\r"],
            vec![&b"data: a\n\ndata: b\n\n"[..]],
        ] {
            let (ev, _) = parse_chunks(&chunks);
            let data: Vec<&str> = ev.iter().map(|e| e.data.as_str()).collect();
            assert_eq!(data, ["a", "b"], "{chunks:?}");
        }
    }

    #[test]
    fn multi_line_data_joins_with_lf() {
        let ev = parse("data: one\ndata:two\ndata\ndata:  three\n\n");
        assert_eq!(ev[0].data, "one\ntwo\n\n three");
    }

    #[test]
    fn field_values_are_decoded_apart_from_their_names() {
        let (ev, _) = parse_chunks(&[
            &b"event:note\xff\nid: a\xfeb\ndata: x\n\n"[..],
            b"event\nid:\xc3\xa9 \ndata: y\n\n",
            b"ev\xffent: no\nevent: message\ndata: z\n\n",
        ]);
        let got: Vec<(&str, Option<&str>)> =
            ev.iter().map(|e| (&*e.event, e.id.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("note\u{fffd}", Some("a\u{fffd}b")),
                ("message", Some("\u{e9} ")),
                ("message", None),
            ]
        );
    }

    #[test]
    fn id_with_nul_is_ignored_and_empty_id_resets() {
        let ev = parse("id: 7\ndata: a\n\nid: 8\0x\ndata: b\n\nid\ndata: c\n\ndata: d\n\n");
        let ids: Vec<(Option<&str>, &str)> = ev
            .iter()
            .map(|e| (e.id.as_deref(), &*e.last_event_id))
            .collect();
        assert_eq!(
            ids,
            [(Some("7"), "7"), (None, "7"), (Some(""), ""), (None, "")]
        );
    }

    #[test]
    fn comments_are_counted_not_dispatched() {
        let (ev, p) =
            parse_chunks(&[b": ping - 2026-11-30 12:00:00\r\n\r\n: keepalive\n\ndata: x\n\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(p.stats.comments, 2);
    }

    #[test]
    fn bom_dropped_once_even_split() {
        let (ev, _) = parse_chunks(&[&[0xef], &[0xbb, 0xbf], b"data: a\n\n"]);
        assert_eq!(ev[0].data, "a");
        // A second BOM is content: the field name becomes "\u{feff}data", which is ignored.
        let ev = parse("\u{feff}\u{feff}data: a\n\ndata: b\n\n");
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "b");
        // Not a BOM: the bytes are kept.
        let (ev, _) = parse_chunks(&[&[0xef], b"x\ndata: y\n\n"]);
        assert_eq!(ev[0].data, "y");
    }

    #[test]
    fn retry_only_when_digits() {
        let (ev, p) = parse_chunks(&[b"retry: 3000\ndata: a\n\nretry: 1e3\ndata: b\n\n"]);
        assert_eq!(ev[0].retry, Some(3000));
        assert_eq!(ev[1].retry, None);
        assert_eq!(p.stats.last_retry, Some(3000));
    }

    #[test]
    fn priming_events_are_kept() {
        // 2025-11-25 servers: an id and an empty data field (TypeScript and Python SDKs).
        let ev = parse("id: abc_1\ndata: \n\n");
        assert_eq!(ev.len(), 1);
        assert!(ev[0].priming);
        assert!(ev[0].dispatched);
        assert_eq!(ev[0].data, "");
        // An id without any data line: not dispatched by browsers, still a resumption point.
        let ev = parse("id: 0\nretry: 5000\n\n");
        assert!(ev[0].priming);
        assert!(!ev[0].dispatched);
        assert_eq!(ev[0].retry, Some(5000));
        // A block with neither data nor id is not an event.
        let (ev, p) = parse_chunks(&[b"event: x\n\n"]);
        assert!(ev.is_empty());
        assert_eq!(p.stats.empty_blocks, 1);
    }

    #[test]
    fn unterminated_event_is_discarded() {
        let (ev, p) = parse_chunks(&[b"data: a\n\ndata: half"]);
        assert_eq!(ev.len(), 1);
        assert!(p.stats.unterminated);
    }

    #[test]
    fn gap_skips_to_the_next_blank_line() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"id: 1\ndata: one\n\nid: 2\nda", mark(1), &mut out);
        p.gap();
        p.feed(b"ta: tail of 3\n\nid: 4\ndata: four\n\n", mark(3), &mut out);
        let ids: Vec<&str> = out.iter().map(|e| &*e.last_event_id).collect();
        assert_eq!(ids, ["1", "4"]);
        assert!(out[1].after_gap);
        assert_eq!(p.stats.dropped_at_gaps, 1);
    }

    #[test]
    fn events_carry_the_mark_that_completed_them() {
        let (ev, _) = parse_chunks(&[b"data: a\n", b"\ndata: b\n\n"]);
        assert_eq!(ev[0].mark.frame.frame, 2);
        assert_eq!(ev[1].mark.frame.frame, 2);
        assert_eq!(ev[1].index, 1);
    }
}
