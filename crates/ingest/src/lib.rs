#![forbid(unsafe_code)]
//! Evidence that is not a packet capture: HAR files and JSON access logs, turned into the same
//! [`HttpEvent`](mcpf_http::HttpEvent)s the capture path produces, so every later stage works
//! on them unchanged.
//!
//! - [`detect`] tells a capture, a HAR and a JSON Lines access log apart by content (never by
//!   name); [`resolve`] does the same under `--input-format`.
//! - [`read_har`] and [`read_access_log`] feed an [`HttpSink`] and return the input's
//!   [`InputReport`] (its warnings typed [`Note`](mcpf_model::Note)s, worded by the report) plus its
//!   [`Capabilities`]: what the source can support, and each thing it lacks (a
//!   [`SourceLack`](mcpf_model::SourceLack)), so findings that would rest on missing evidence are not raised.
//! - [`LogMap`] names the fields of any other JSON log (`--log-map`); a map that cannot be
//!   read is a [`LogMapError`], whose text says what is wrong.
//!
//! What the capture path measures and these sources do not is made explicit instead of guessed:
//! a body the source did not keep is [`Body::unknown`](mcpf_http::Body::unknown) (never
//! "empty"); an SSE event whose time was estimated has
//! [`SseEvent::estimated`](mcpf_http::sse::SseEvent::estimated) set; a header that was not
//! logged is unknown according to [`Capabilities::knows_request_header`].
//!
//! Exchanges are on connections `ConnId::recorded(input, n)`
//! ([`ConnId::recorded`](mcpf_model::ConnId::recorded)), a range apart from TCP connections',
//! numbered by the connection an entry or line names (else one per exchange); marks cite the
//! HAR entry or the log line (`FrameRef::frame`, from 1).
//! Each input's events are emitted in time order (a request at its start, the response head at
//! its first byte, its events, its end). A HAR file is read twice, entry by entry, so only the
//! exchanges in flight are held (see `har`); an access log's lines are read one by one into
//! compact records (a few hundred bytes a line), sorted, then emitted.

mod accesslog;
mod connections;
mod har;
mod timeline;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use mcpf_capture::reader::{Sniffed, describe_bytes, sniff};
use mcpf_http::HttpSink;
use mcpf_model::SourceFormat;
use mcpf_model::file::{CountingReader, open_file};
use mcpf_model::peeked;
use mcpf_model::{Capabilities, InputId, InputReport, LogFlavor, Note, NoteKind, OpenError};

pub use accesslog::{LogMap, LogMapError, read_access_log, read_access_log_text};
pub use har::{read_har, read_har_text};
pub use mcpf_model::peeked::streamed;

/// The `--input-format` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FormatChoice {
    /// Decide by content ([`detect`]).
    #[default]
    Auto,
    Capture,
    Har,
    Log,
}

/// Bytes of the (decompressed) file looked at by [`detect`].
const HEAD: usize = 64 << 10;

/// Tells a capture, a HAR file and a JSON Lines access log apart by content: pcap/pcapng magic
/// (also inside gzip) → capture; a JSON object with `log.entries` → HAR; JSON Lines whose first
/// record has the keys of an nginx, Envoy or Caddy log → that log. Anything else is an error
/// that says what was expected and which keys the first record has. A stream (`-` for standard
/// input, a FIFO) is looked at the same way, and what was read of it is read again by the stage
/// that reads it ([`mcpf_model::peeked`]).
pub fn detect(path: &str) -> Result<SourceFormat, OpenError> {
    match sniff_file(path)? {
        Sniff::Capture => Ok(SourceFormat::Capture),
        Sniff::Json(first) => classify(path, &first, false),
    }
}

/// [`detect`] under an `--input-format` choice. With a log map, every JSON Lines file is read
/// with it ([`LogFlavor::Mapped`]).
pub fn resolve(
    path: &str,
    choice: FormatChoice,
    have_map: bool,
) -> Result<SourceFormat, OpenError> {
    match choice {
        FormatChoice::Capture => Ok(SourceFormat::Capture),
        FormatChoice::Har => Ok(SourceFormat::Har),
        FormatChoice::Auto | FormatChoice::Log => {
            let sniffed = sniff_file(path)?;
            match (sniffed, choice) {
                (Sniff::Capture, FormatChoice::Auto) => Ok(SourceFormat::Capture),
                (Sniff::Capture, _) => Err(OpenError {
                    path: path.to_string(),
                    message: "is a packet capture, not a JSON access log".into(),
                    hint: Some("drop --input-format log, or use --input-format auto".into()),
                }),
                (Sniff::Json(first), _) => match classify(path, &first, have_map)? {
                    SourceFormat::Har if choice == FormatChoice::Log => Err(OpenError {
                        path: path.to_string(),
                        message: "is a HAR file, not a JSON access log".into(),
                        hint: Some("use --input-format auto or har".into()),
                    }),
                    f => Ok(f),
                },
            }
        }
    }
}

/// With `--log-format`, every input that is not a capture is a text access log.
pub fn resolve_text_log(path: &str) -> Result<SourceFormat, OpenError> {
    if matches!(sniff_file(path), Ok(Sniff::Capture)) {
        return Ok(SourceFormat::Capture);
    }
    Ok(SourceFormat::AccessLog(LogFlavor::Nginx))
}

/// Reads a HAR or access log input (not a capture) into `sink`.
pub fn read(
    path: &str,
    input: InputId,
    format: SourceFormat,
    map: Option<&LogMap>,
    sink: &mut impl HttpSink,
) -> Result<(InputReport, Capabilities), OpenError> {
    match format {
        SourceFormat::Har => read_har(path, input, sink),
        SourceFormat::AccessLog(flavor) => {
            accesslog::read_access_log_as(path, input, Some(flavor), map, sink)
        }
        SourceFormat::Capture => Err(OpenError {
            path: path.to_string(),
            message: "is a packet capture: read it with the capture stage".into(),
            hint: None,
        }),
    }
}

enum Sniff {
    Capture,
    Json(FirstRecord),
}

/// An opened text input: decompressed when gzip, with the count of bytes read from the file.
pub(crate) struct TextInput {
    pub(crate) reader: Box<dyn BufRead>,
    pub(crate) bytes_read: Arc<AtomicU64>,
    pub(crate) gzip: bool,
}

/// Opens a text input to read it through (a stream: what was looked at of it first).
pub(crate) fn open_text(path: &str) -> Result<TextInput, OpenError> {
    if peeked::streamed(path) {
        return text_input(path, peeked::open(path)?);
    }
    let file: File = open_file(path)?;
    text_input(path, Box::new(mcpf_model::interrupt::file(file)))
}

/// Opens a text input to look at its head; a stream keeps what is read for its next reader.
fn look_text(path: &str) -> Result<TextInput, OpenError> {
    if peeked::streamed(path) {
        return text_input(path, Box::new(peeked::look(path)?));
    }
    open_text(path)
}

fn text_input(path: &str, raw: Box<dyn Read + Send>) -> Result<TextInput, OpenError> {
    let bytes_read = Arc::new(AtomicU64::new(0));
    let mut raw = CountingReader::new(raw, bytes_read.clone());
    // A pipe may give one byte at a time: the two of the gzip magic are waited for.
    let mut magic = Vec::with_capacity(2);
    (&mut raw)
        .take(2)
        .read_to_end(&mut magic)
        .map_err(|e| read_error(path, e))?;
    let gzip = magic.starts_with(&[0x1f, 0x8b]);
    let buffered = BufReader::new(io::Cursor::new(magic).chain(raw));
    let reader: Box<dyn BufRead> = if gzip {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(
            buffered,
        )))
    } else {
        Box::new(buffered)
    };
    Ok(TextInput {
        reader,
        bytes_read,
        gzip,
    })
}

pub(crate) fn read_error(path: &str, e: io::Error) -> OpenError {
    OpenError {
        path: path.to_string(),
        message: format!("cannot read: {e}"),
        hint: None,
    }
}

/// Reads a whole text input (UTF-8, one leading BOM dropped).
pub(crate) fn read_all_text(path: &str, input: &mut TextInput) -> Result<String, OpenError> {
    let mut bytes = Vec::new();
    input
        .reader
        .read_to_end(&mut bytes)
        .map_err(|e| read_error(path, e))?;
    if bytes.starts_with(&[0xef, 0xbb, 0xbf]) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| OpenError {
        path: path.to_string(),
        message: format!(
            "is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
        hint: Some(
            "HAR files and JSON access logs are UTF-8; give captures as pcap or pcapng".into(),
        ),
    })
}

/// The first (decompressed) bytes of an input, up to [`HEAD`]. Of a stream only as many as tell
/// its format ([`decided`]): a live pipe is analysed as it comes, not once 64 KiB have come.
fn read_head(path: &str, stream: bool) -> Result<(Vec<u8>, bool), OpenError> {
    let mut input = look_text(path)?;
    let mut head = Vec::with_capacity(HEAD);
    let mut buf = vec![0u8; 8 << 10];
    let result = loop {
        let room = (HEAD - head.len()).min(buf.len());
        if room == 0 || (stream && decided(&head)) {
            break Ok(());
        }
        match input.reader.read(&mut buf[..room]) {
            Ok(0) => break Ok(()),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    // A gzip stream cut short fails only after the bytes before the cut: those are enough to
    // tell the format, and the capture reader salvages them (a small cut .pcap.gz was once
    // rejected whole here, because the error came before HEAD bytes did).
    if let Err(e) = result
        && head.is_empty()
    {
        return Err(read_error(path, e));
    }
    Ok((head, input.gzip))
}

/// Whether the head of a stream read so far tells its format, as [`sniff_file`] will read it:
/// magic bytes, the 16 bytes an error shows of anything else, JSON's first whole line, or (when
/// that line is damaged or one line of a pretty-printed document) a later line of a log or the
/// end of the document's first value.
fn decided(head: &[u8]) -> bool {
    match sniff(head) {
        Sniffed::Empty => false,
        Sniffed::Unknown => head.len() >= 16,
        Sniffed::Pcap | Sniffed::PcapNg | Sniffed::Gzip => true,
        Sniffed::Json => {
            let text = json_text(head);
            if text.first() == Some(&b'[') || cut_har(text) {
                return true;
            }
            let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
            // The last piece has no newline yet: it may still grow.
            let complete = &lines[..lines.len().saturating_sub(1)];
            let Some((first, next)) = complete.split_first() else {
                return false;
            };
            serde_json::from_slice::<FirstRecord>(first).is_ok()
                || next.iter().take(50).any(|l| log_line(l).is_some())
                // A pretty-printed document, once its first value has ended.
                || FirstRecord::deserialize(&mut serde_json::Deserializer::from_slice(text)).is_ok()
        }
    }
}

/// The head without a byte order mark and leading whitespace.
fn json_text(head: &[u8]) -> &[u8] {
    let text = head.strip_prefix(&[0xef, 0xbb, 0xbf][..]).unwrap_or(head);
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    &text[start..]
}

/// A line that is a record of an access log this tool recognises.
fn log_line(line: &[u8]) -> Option<FirstRecord> {
    let mut first = serde_json::from_slice::<FirstRecord>(line).ok()?;
    first.object = serde_json::from_slice(line).ok();
    accesslog::recognise(&first).is_some().then_some(first)
}

fn sniff_file(path: &str) -> Result<Sniff, OpenError> {
    let stream = peeked::streamed(path);
    let (head, gzip) = read_head(path, stream)?;
    if stream && mcpf_model::interrupt::stop_requested() && !head.is_empty() && !decided(&head) {
        return Err(OpenError {
            path: path.to_string(),
            message: format!(
                "a signal stopped the reading before its first {} bytes told its format",
                head.len()
            ),
            hint: None,
        });
    }
    let not_recognised = |what: String| OpenError {
        path: path.to_string(),
        message: format!(
            "{what}: not a packet capture (pcap, pcapng), a HAR file or a JSON Lines access log"
        ),
        hint: Some(EXPECTED_HINT.into()),
    };
    match sniff(&head) {
        Sniffed::Pcap | Sniffed::PcapNg => return Ok(Sniff::Capture),
        // A gzip stream that is not even valid gzip: let the capture reader explain.
        Sniffed::Gzip => return Ok(Sniff::Capture),
        Sniffed::Empty if stream && mcpf_model::interrupt::stop_requested() => {
            return Err(OpenError {
                path: path.to_string(),
                message: "nothing came before a signal stopped the reading".into(),
                hint: None,
            });
        }
        Sniffed::Empty => {
            return Err(OpenError {
                path: path.to_string(),
                message: if gzip {
                    "is empty once decompressed".into()
                } else {
                    "is empty".into()
                },
                hint: Some("the file may still be being written, or the export failed".into()),
            });
        }
        Sniffed::Unknown => {
            return Err(not_recognised(format!(
                "starts with {}",
                describe_bytes(&head)
            )));
        }
        Sniffed::Json => {}
    }
    let text = json_text(&head);
    if text.first() == Some(&b'[') {
        return Err(not_recognised("is a JSON array".into()));
    }
    // JSON Lines, or a HAR written on one line: the first line is a whole object.
    let first_line = text.split(|&b| b == b'\n').next().unwrap_or(text);
    if let Ok(mut first) = serde_json::from_slice::<FirstRecord>(first_line) {
        first.object = serde_json::from_slice(first_line).ok();
        return Ok(Sniff::Json(first));
    }
    // A pretty-printed (or very long) single document, typically a HAR: read its first value
    // through, keeping only the keys. A stream is not read twice: what its head holds decides.
    let whole = if stream {
        FirstRecord::deserialize(&mut serde_json::Deserializer::from_slice(text))
    } else {
        let mut input = open_text(path)?;
        FirstRecord::deserialize(&mut serde_json::Deserializer::from_reader(
            &mut input.reader,
        ))
    };
    match whole {
        Ok(first) => Ok(Sniff::Json(first)),
        // A HAR cut short (a full disk, a killed exporter, or a signal that ended the read):
        // what it has is still read.
        Err(whole)
            if (whole.is_eof() || mcpf_model::interrupt::stop_requested()) && cut_har(text) =>
        {
            Ok(Sniff::Json(FirstRecord {
                keys: vec!["log".into()],
                log: Some(vec!["entries".into()]),
                ..FirstRecord::default()
            }))
        }
        Err(whole) => {
            // A log whose first line is damaged (cut by rotation): look at the next lines.
            for line in text.split(|&b| b == b'\n').skip(1).take(50) {
                if let Some(first) = log_line(line) {
                    return Ok(Sniff::Json(first));
                }
            }
            if stream && whole.is_eof() && head.len() >= HEAD {
                return Err(OpenError {
                    path: path.to_string(),
                    message: format!(
                        "its first JSON value does not end within the first {} KiB, which is \
                         all of a stream that is looked at to tell its format",
                        HEAD >> 10
                    ),
                    hint: Some("save it to a file and give the file's path".into()),
                });
            }
            Err(OpenError {
                path: path.to_string(),
                message: format!("is not valid JSON ({whole})"),
                hint: Some(EXPECTED_HINT.into()),
            })
        }
    }
}

/// Whether a document that ends early begins as a HAR does: `{"log":` then, within the head,
/// `"entries":[`.
fn cut_har(head: &[u8]) -> bool {
    let squeezed: Vec<u8> = head
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    squeezed.starts_with(br#"{"log":"#)
        && squeezed
            .windows(br#""entries":["#.len())
            .any(|w| w == br#""entries":["#)
}

const EXPECTED_HINT: &str = "expected a pcap/pcapng capture (optionally gzip), a HAR file \
(a JSON object with log.entries, e.g. from a browser's or mitmproxy's export), or a JSON Lines \
access log from nginx (log_format ... escape=json), Envoy (json_format), Caddy, HAProxy or Traefik; name the \
fields of any other JSON log with --log-map";

fn classify(path: &str, first: &FirstRecord, have_map: bool) -> Result<SourceFormat, OpenError> {
    if first
        .log
        .as_ref()
        .is_some_and(|k| k.iter().any(|k| k == "entries"))
    {
        return Ok(SourceFormat::Har);
    }
    if have_map {
        return Ok(SourceFormat::AccessLog(LogFlavor::Mapped));
    }
    if is_own_report(first) {
        return Err(OpenError {
            path: path.to_string(),
            message: "is a report written by mcp-forensics, not traffic to analyse".into(),
            hint: Some(format!(
                "render it again with `mcp-forensics report {path}` (--format table or markdown)"
            )),
        });
    }
    if let Some(flavor) = accesslog::recognise(first) {
        return Ok(SourceFormat::AccessLog(flavor));
    }
    if let Some(obj) = &first.object {
        return Err(accesslog::unrecognised(path, obj));
    }
    let mut keys = first.keys.join(", ");
    if first.keys.is_empty() {
        keys = "none (an empty object)".into();
    }
    let what = if first.log.is_some() {
        "has a \"log\" object without \"entries\", so it is not a HAR file".to_string()
    } else {
        "is JSON, but neither a HAR file nor a JSON access log this tool recognises".to_string()
    };
    Err(OpenError {
        path: path.to_string(),
        message: format!(
            "{what}. Expected a HAR file (an object with log.entries) or JSON Lines from nginx \
             (keys such as msec or time_iso8601, request_method, request_uri, status, \
             request_time), Envoy (start_time, method, path, response_code, duration) or Caddy \
             (ts, request.method, request.uri, status, duration). The first record has the keys: \
             {keys}{}",
            if first.more_keys { ", ..." } else { "" }
        ),
        hint: Some(
            "name the fields with --log-map time=FIELD,method=FIELD,path=FIELD,status=FIELD,\
             duration=FIELD (or a JSON file of the same keys), or force --input-format"
                .into(),
        ),
    })
}

/// The first JSON value of a file reduced to what detection needs: its keys in file order, and
/// the keys of its `log` and `request` objects. Values are skipped, not built.
/// The first record of an `analyze --format json` document or `--format ndjson` output: its
/// `schema_version` with the document's `sessions`, or a record's `type`.
fn is_own_report(first: &FirstRecord) -> bool {
    let has = |k: &str| first.keys.iter().any(|x| x == k);
    has("schema_version") && (has("sessions") || has("type"))
}

#[derive(Debug, Default)]
pub(crate) struct FirstRecord {
    pub(crate) keys: Vec<String>,
    pub(crate) more_keys: bool,
    pub(crate) log: Option<Vec<String>>,
    pub(crate) request: Option<Vec<String>>,
    /// The record itself, when it is one line of JSON Lines: a log whose keys the operator
    /// named is recognised by its values too.
    pub(crate) object: Option<serde_json::Map<String, serde_json::Value>>,
}

const MAX_KEYS: usize = 64;

impl<'de> Deserialize<'de> for FirstRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FirstVisitor)
    }
}

struct FirstVisitor;

impl<'de> Visitor<'de> for FirstVisitor {
    type Value = FirstRecord;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FirstRecord, A::Error> {
        let mut rec = FirstRecord::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "log" => rec.log = map.next_value::<SubKeys>()?.0,
                "request" => rec.request = map.next_value::<SubKeys>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if rec.keys.len() < MAX_KEYS {
                rec.keys.push(key);
            } else {
                rec.more_keys = true;
            }
        }
        Ok(rec)
    }
}

/// The keys of a nested object (None when the value is not an object).
struct SubKeys(Option<Vec<String>>);

impl<'de> Deserialize<'de> for SubKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SubVisitor)
    }
}

struct SubVisitor;

impl<'de> Visitor<'de> for SubVisitor {
    type Value = SubKeys;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SubKeys, A::Error> {
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            if keys.len() < MAX_KEYS {
                keys.push(key);
            }
        }
        Ok(SubKeys(Some(keys)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SubKeys, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(SubKeys(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<SubKeys, E> {
        Ok(SubKeys(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<SubKeys, E> {
        Ok(SubKeys(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<SubKeys, E> {
        Ok(SubKeys(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<SubKeys, E> {
        Ok(SubKeys(None))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<SubKeys, E> {
        Ok(SubKeys(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<SubKeys, E> {
        Ok(SubKeys(None))
    }
}

/// Keeps the first `limit` warnings of a kind and counts the rest, so a log with a million bad
/// lines does not make a million-line report.
pub(crate) struct Warnings {
    pub(crate) list: Vec<Note>,
    limit: usize,
    suppressed: u64,
}

impl Warnings {
    pub(crate) fn new(limit: usize) -> Self {
        Warnings {
            list: Vec::new(),
            limit,
            suppressed: 0,
        }
    }
    pub(crate) fn push(&mut self, w: Note) {
        if self.list.len() < self.limit {
            self.list.push(w);
        } else {
            self.suppressed += 1;
        }
    }
    /// The warnings kept, then one `more` note counting those that were not.
    pub(crate) fn finish(mut self, more: NoteKind) -> Vec<Note> {
        if self.suppressed > 0 {
            self.list.push(Note::new(more, self.suppressed));
        }
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_record_keeps_key_order_and_nested_keys() {
        let r: FirstRecord =
            serde_json::from_str(r#"{"z":1,"log":{"version":"1.2","entries":[]},"a":[1,{"b":2}]}"#)
                .unwrap();
        assert_eq!(r.keys, ["z", "log", "a"]);
        assert_eq!(r.log.unwrap(), ["version", "entries"]);
        let r: FirstRecord = serde_json::from_str(r#"{"request":"GET / HTTP/1.1"}"#).unwrap();
        assert!(r.request.is_none());
    }

    #[test]
    fn a_stream_is_read_until_its_head_tells_its_format() {
        let line = br#"{"msec":"1.5","request_method":"POST","request_uri":"/mcp","status":"200","request_time":"0.1"}"#;
        let mut two = line.to_vec();
        two.push(b'\n');
        for (head, enough) in [
            (&b""[..], false),
            (b"  \n", false),
            (&[0xd4, 0xc3, 0xb2], false),
            (&[0xd4, 0xc3, 0xb2, 0xa1], true),
            (&[0x0a, 0x0d, 0x0d, 0x0a], true),
            (&[0x1f, 0x8b], true),
            (b"not a capture", false),
            (b"not a capture at all", true),
            // JSON Lines: the first line once it has ended.
            (&line[..], false),
            (&two[..], true),
            // A HAR, pretty-printed: its log's entries.
            (b"{\n  \"log\": {\n    \"version\": \"1.2\",\n", false),
            (b"{\n  \"log\": {\n    \"entries\": [", true),
            // Another pretty-printed document once its first value has ended.
            (b"{\n  \"a\": 1\n", false),
            (b"{\n  \"a\": 1\n}", true),
            (b"[\n", true),
        ] {
            assert_eq!(decided(head), enough, "{:?}", String::from_utf8_lossy(head));
        }
        // A first line cut by rotation: a later whole line of a log this tool reads.
        let mut cut = line[..20].to_vec();
        cut.push(b'\n');
        cut.extend_from_slice(line);
        assert!(!decided(&cut));
        cut.push(b'\n');
        assert!(decided(&cut));
    }
}
