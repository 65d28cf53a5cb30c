//! Evidence that is not a packet capture: HAR files and JSON access logs, turned into the same
//! [`HttpEvent`](crate::http::HttpEvent)s the capture path produces, so every later stage works
//! on them unchanged.
//!
//! - [`detect`] tells a capture, a HAR and a JSON Lines access log apart by content (never by
//!   name); [`resolve`] does the same under `--input-format`.
//! - [`read_har`] and [`read_access_log`] feed an [`HttpSink`] and return the input's
//!   [`InputReport`] plus its [`Capabilities`]: what the source can support, and a sentence per
//!   thing it lacks, so findings that would rest on missing evidence are not raised.
//!
//! What the capture path measures and these sources do not is made explicit instead of guessed:
//! a body the source did not keep is [`Body::unknown`](crate::http::Body::unknown) (never
//! "empty"); an SSE event whose time was estimated has
//! [`SseEvent::estimated`](crate::http::sse::SseEvent::estimated) set; a header that was not
//! logged is unknown according to [`Capabilities::knows_request_header`].
//!
//! Exchanges get synthetic connection ids ([`synthetic_conn`]) in a range TCP reassembly never
//! reaches, and marks cite the HAR entry or the log line (`FrameRef::frame`, from 1).
//! Each input's events are emitted in time order (a request at its start, the response head at
//! its first byte, its events, its end); the whole input is read first to sort them, so memory
//! follows the size of the file.

pub mod accesslog;
pub mod har;
mod timeline;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Serialize, Serializer};

use crate::capture::reader::{CountingReader, Sniffed, describe_bytes, sniff};
use crate::capture::tcp::ConnId;
use crate::capture::{InputReport, OpenError, open_file};
use crate::http::HttpSink;
use crate::model::InputId;

pub use accesslog::{LogFlavor, LogMap, read_access_log, read_access_log_text};
pub use har::{read_har, read_har_text};

/// What an input file holds, judged from its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    /// pcap or pcapng (plain or gzip): read by [`crate::capture`].
    Capture,
    /// HAR 1.x: a JSON object with `log.entries`.
    Har,
    /// JSON Lines access log of the given server.
    AccessLog(LogFlavor),
}

impl SourceFormat {
    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::Capture => "capture",
            SourceFormat::Har => "har",
            SourceFormat::AccessLog(f) => f.name(),
        }
    }
}

impl Serialize for SourceFormat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

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

/// How much of something the source recorded: `known` items are there, `unknown` ones were not
/// kept (stripped, not stored, never logged).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub known: u64,
    pub unknown: u64,
}

impl Coverage {
    pub fn add(&mut self, known: bool) {
        if known {
            self.known += 1;
        } else {
            self.unknown += 1;
        }
    }
    pub fn total(&self) -> u64 {
        self.known + self.unknown
    }
    /// Every item is known (also true when there are none).
    pub fn all(&self) -> bool {
        self.unknown == 0
    }
    /// Not a single item is known (and there was at least one).
    pub fn none(&self) -> bool {
        self.known == 0 && self.unknown > 0
    }
}

/// Which header fields of one side (requests or responses) the source recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "names", rename_all = "snake_case")]
pub enum HeaderCoverage {
    /// Every field as sent, except these (lower-case) names, which may have been removed (a
    /// sanitized HAR export): their absence proves nothing.
    All { except: Vec<String> },
    /// Only these (lower-case) fields were recorded (the ones an access log format names); any
    /// other field is unknown.
    Only(Vec<String>),
}

impl HeaderCoverage {
    /// Whether the presence or absence of `name` in a message is evidence.
    pub fn knows(&self, name: &str) -> bool {
        match self {
            HeaderCoverage::All { except } => !except.iter().any(|e| e.eq_ignore_ascii_case(name)),
            HeaderCoverage::Only(names) => names.iter().any(|e| e.eq_ignore_ascii_case(name)),
        }
    }
}

/// What one input can and cannot support, for the detectors (which finding can be raised) and
/// for the report (which, in `lacks`, says it in plain sentences).
#[derive(Clone, Debug, Serialize)]
pub struct Capabilities {
    pub format: SourceFormat,
    /// What wrote the file, when it says (`mitmproxy 11.0.2`, `WebInspector 537.36`).
    pub producer: Option<String>,
    /// HTTP exchanges read from it.
    pub exchanges: u64,
    /// Request bodies (the JSON-RPC messages a client sent) the source kept.
    pub request_bodies: Coverage,
    /// Response bodies the source kept (event streams included).
    pub response_bodies: Coverage,
    /// Event-stream responses whose SSE events are known.
    pub sse_streams: Coverage,
    /// SSE event times were estimated for at least one stream ([`crate::http::sse::SseEvent::estimated`]).
    pub sse_times_estimated: bool,
    /// The time of a response's first byte was not measured but estimated (access logs).
    pub response_start_estimated: bool,
    /// Request start times are derived: end minus duration (access logs are written at the end).
    pub start_from_duration: bool,
    pub request_headers: HeaderCoverage,
    pub response_headers: HeaderCoverage,
    /// Credentials were stripped by the exporter (Chrome's default sanitized HAR export).
    pub sanitized: bool,
    /// Client address and port of each exchange are known.
    pub client_addresses: bool,
    /// Server address and port of each exchange are known.
    pub server_addresses: bool,
    /// Which exchanges shared a connection is known (HAR `connection`, nginx `$connection`, ...).
    pub connections: bool,
    /// How a response ended (complete, cut by the client, ...) is known beyond the status.
    pub response_end_known: bool,
    /// One sentence per thing this input lacks, for the report.
    pub lacks: Vec<String>,
}

impl Capabilities {
    pub(crate) fn new(format: SourceFormat) -> Self {
        Capabilities {
            format,
            producer: None,
            exchanges: 0,
            request_bodies: Coverage::default(),
            response_bodies: Coverage::default(),
            sse_streams: Coverage::default(),
            sse_times_estimated: false,
            response_start_estimated: false,
            start_from_duration: false,
            request_headers: HeaderCoverage::All { except: Vec::new() },
            response_headers: HeaderCoverage::All { except: Vec::new() },
            sanitized: false,
            client_addresses: false,
            server_addresses: false,
            connections: false,
            response_end_known: false,
            lacks: Vec::new(),
        }
    }

    pub fn knows_request_header(&self, name: &str) -> bool {
        self.request_headers.knows(name)
    }

    pub fn knows_response_header(&self, name: &str) -> bool {
        self.response_headers.knows(name)
    }

    /// SSE events are known for every event stream: replays, skipped ranges and duplicates can
    /// be judged. When false, such findings are "not determinable from this input".
    pub fn has_all_sse_events(&self) -> bool {
        self.sse_streams.all()
    }

    /// JSON-RPC messages are known for every exchange (request and response bodies).
    pub fn has_all_bodies(&self) -> bool {
        self.request_bodies.all() && self.response_bodies.all()
    }
}

/// Marks synthetic connection ids: bit 48 set, above anything TCP reassembly numbers.
pub const SYNTHETIC_CONN_BASE: ConnId = 1 << 48;

/// The connection id of the `n`-th connection (from 0) of a non-capture input:
/// `1 << 48 | input << 24 | n`, which cannot collide with TCP connection ids.
pub fn synthetic_conn(input: InputId, n: u64) -> ConnId {
    SYNTHETIC_CONN_BASE | (u64::from(input) & 0xff_ffff) << 24 | (n & 0xff_ffff)
}

/// Whether a connection id was made by [`synthetic_conn`] (a HAR or log input).
pub fn is_synthetic(conn: ConnId) -> bool {
    conn >= SYNTHETIC_CONN_BASE
}

/// Bytes of the (decompressed) file looked at by [`detect`].
const HEAD: usize = 64 << 10;

/// Tells a capture, a HAR file and a JSON Lines access log apart by content: pcap/pcapng magic
/// (also inside gzip) → capture; a JSON object with `log.entries` → HAR; JSON Lines whose first
/// record has the keys of an nginx, Envoy or Caddy log → that log. Anything else is an error
/// that says what was expected and which keys the first record has. `-` (standard input) is
/// taken for a capture.
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
            if path == "-" && choice == FormatChoice::Log {
                return Ok(SourceFormat::AccessLog(if have_map {
                    LogFlavor::Mapped
                } else {
                    LogFlavor::Nginx
                }));
            }
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
        // Standard input cannot be looked at twice: its flavor is decided by its first record.
        SourceFormat::AccessLog(flavor) => {
            let flavor = (path != "-").then_some(flavor);
            accesslog::read_access_log_as(path, input, flavor, map, sink)
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
    pub reader: Box<dyn BufRead>,
    pub bytes_read: Arc<AtomicU64>,
    pub gzip: bool,
}

pub(crate) fn open_text(path: &str) -> Result<TextInput, OpenError> {
    let bytes_read = Arc::new(AtomicU64::new(0));
    let raw: Box<dyn Read> = if path == "-" {
        Box::new(CountingReader::new(io::stdin(), bytes_read.clone()))
    } else {
        let file: File = open_file(path)?;
        Box::new(CountingReader::new(file, bytes_read.clone()))
    };
    let mut buffered = BufReader::new(raw);
    let head = buffered.fill_buf().map_err(|e| OpenError {
        path: path.to_string(),
        message: format!("cannot read: {e}"),
        hint: None,
    })?;
    let gzip = head.starts_with(&[0x1f, 0x8b]);
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

/// Reads a whole text input (UTF-8, one leading BOM dropped).
pub(crate) fn read_all_text(path: &str, input: &mut TextInput) -> Result<String, OpenError> {
    let mut bytes = Vec::new();
    input
        .reader
        .read_to_end(&mut bytes)
        .map_err(|e| OpenError {
            path: path.to_string(),
            message: format!("cannot read: {e}"),
            hint: None,
        })?;
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

fn read_head(path: &str) -> Result<(Vec<u8>, bool), OpenError> {
    let mut input = open_text(path)?;
    let mut head = Vec::with_capacity(HEAD);
    (&mut input.reader)
        .take(HEAD as u64)
        .read_to_end(&mut head)
        .map_err(|e| OpenError {
            path: path.to_string(),
            message: format!("cannot read: {e}"),
            hint: None,
        })?;
    Ok((head, input.gzip))
}

fn sniff_file(path: &str) -> Result<Sniff, OpenError> {
    if path == "-" {
        return Ok(Sniff::Capture);
    }
    let (head, gzip) = read_head(path)?;
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
    let text = head.strip_prefix(&[0xef, 0xbb, 0xbf][..]).unwrap_or(&head);
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let text = &text[start..];
    if text.first() == Some(&b'[') {
        return Err(not_recognised("is a JSON array".into()));
    }
    // JSON Lines, or a HAR written on one line: the first line is a whole object.
    let first_line = text.split(|&b| b == b'\n').next().unwrap_or(text);
    if let Ok(first) = serde_json::from_slice::<FirstRecord>(first_line) {
        return Ok(Sniff::Json(first));
    }
    // A pretty-printed (or very long) single document, typically a HAR: read its first value
    // through, keeping only the keys.
    let mut input = open_text(path)?;
    let mut de = serde_json::Deserializer::from_reader(&mut input.reader);
    match FirstRecord::deserialize(&mut de) {
        Ok(first) => Ok(Sniff::Json(first)),
        Err(whole) => {
            // A log whose first line is damaged (cut by rotation): look at the next lines.
            for line in text.split(|&b| b == b'\n').skip(1).take(50) {
                if let Ok(first) = serde_json::from_slice::<FirstRecord>(line)
                    && accesslog::classify(&first).is_some()
                {
                    return Ok(Sniff::Json(first));
                }
            }
            Err(OpenError {
                path: path.to_string(),
                message: format!("is not valid JSON ({whole})"),
                hint: Some(EXPECTED_HINT.into()),
            })
        }
    }
}

const EXPECTED_HINT: &str = "expected a pcap/pcapng capture (optionally gzip), a HAR file \
(a JSON object with log.entries, e.g. from a browser's or mitmproxy's export), or a JSON Lines \
access log from nginx (log_format ... escape=json), Envoy (json_format) or Caddy; name the \
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
    if let Some(flavor) = accesslog::classify(first) {
        return Ok(SourceFormat::AccessLog(flavor));
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
#[derive(Debug, Default)]
pub(crate) struct FirstRecord {
    pub keys: Vec<String>,
    pub more_keys: bool,
    pub log: Option<Vec<String>>,
    pub request: Option<Vec<String>>,
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
    pub list: Vec<String>,
    limit: usize,
    suppressed: u64,
}

impl Warnings {
    pub fn new(limit: usize) -> Self {
        Warnings {
            list: Vec::new(),
            limit,
            suppressed: 0,
        }
    }
    pub fn push(&mut self, w: String) {
        if self.list.len() < self.limit {
            self.list.push(w);
        } else {
            self.suppressed += 1;
        }
    }
    pub fn finish(mut self, what: &str) -> Vec<String> {
        if self.suppressed > 0 {
            self.list
                .push(format!("... and {} more {what}", self.suppressed));
        }
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_ids_do_not_collide() {
        let a = synthetic_conn(0, 0);
        let b = synthetic_conn(1, 0);
        let c = synthetic_conn(0, 1);
        assert!(a != b && b != c && a != c);
        assert!(is_synthetic(a) && is_synthetic(synthetic_conn(0xff_ffff, 0xff_ffff)));
        assert!(!is_synthetic(123_456));
    }

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
    fn header_coverage() {
        let all = HeaderCoverage::All {
            except: vec!["cookie".into()],
        };
        assert!(all.knows("Mcp-Session-Id") && !all.knows("Cookie"));
        let only = HeaderCoverage::Only(vec!["mcp-session-id".into()]);
        assert!(only.knows("MCP-Session-Id") && !only.knows("accept"));
    }
}
