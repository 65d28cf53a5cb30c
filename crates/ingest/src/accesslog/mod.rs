//! JSON Lines access logs (nginx `escape=json`, Envoy `json_format`, Caddy's default JSON, or
//! any JSON log through a [`LogMap`]) to HTTP events.
//!
//! An access log line is written when a request ENDS: the request's start is end − duration
//! (Envoy logs its start, so there end = start + duration). Lines therefore come in end order;
//! they are reduced to compact records (a few hundred bytes each, the line itself is not kept),
//! sorted by start, and emitted in time order, holding only the events of exchanges in flight.
//!
//! Per line: a [`Request`] at the start, a [`ResponseHead`] at the (estimated) first byte, a
//! [`ResponseEnd`] at the end, all with bodies [`Body::unknown`] (a log keeps no content; a
//! logged size of 0 is a known empty body). Only the logged headers are known
//! ([`HeaderCoverage::Only`]): nginx `http_*` (request) and `sent_http_*` (response) variables,
//! Envoy `%REQ(X)%` / `%RESP(X)%` keys such as `req_mcp_session_id`, `resp_mcp_session_id` or
//! `"x-mcp-session-id"`, Caddy's `request.headers` and `resp_headers` maps. A logged empty value
//! (nginx writes `""` for a header that was not sent) is a known absence.
//!
//! Abandonment: a request the client gave up on before any response byte (nginx 499, Envoy
//! `DC` with response code 0, Caddy 499) becomes a `NoResponse` closed by the client, what a
//! capture of the client's leg shows for it. A response cut after its head (Envoy `DC` or `UC`
//! with a status, nginx `$request_completion` empty) becomes a [`ResponseEnd`] with
//! [`Outcome::ClosedEarly`]. Envoy response flags are also reported as anomalies.
//!
//! A malformed line is skipped, counted in [`InputReport::skipped`] and named with its line
//! number in the warnings; the rest is still analysed.
//!
//! [`Request`]: mcpf_http::Request
//! [`ResponseHead`]: mcpf_http::ResponseHead
//! [`ResponseEnd`]: mcpf_http::ResponseEnd
//! [`Body::unknown`]: mcpf_http::Body::unknown
//! [`HeaderCoverage::Only`]: mcpf_model::HeaderCoverage::Only

mod aliases;
mod caddy;
mod capabilities;
mod envoy;
mod exchanges;
mod fields;
mod haproxy;
mod haproxy_timers;
mod headers;
mod logmap;
mod mapped;
mod nginx;
mod textformat;
mod times;
mod traefik;

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::net::SocketAddr;

use serde_json::{Map, Value};

use self::times::{DurationUnit, parse_duration};
use crate::{FirstRecord, Warnings, open_text};
use mcpf_http::{Headers, HttpSink, Outcome};
use mcpf_model::{Accounting, Capabilities, Direction, DurationEstimate, LogFlavor, bucket};
use mcpf_model::{InputId, InputReport, Note, NoteKind, OpenError, Timestamp};

use self::aliases::Aliases;
pub use self::logmap::{LogMap, LogMapError};

/// Which flavor the first record's keys say, if any.
pub(crate) fn classify(first: &FirstRecord) -> Option<LogFlavor> {
    let has = |k: &str| first.keys.iter().any(|x| x == k);
    let caddy_request = first
        .request
        .as_ref()
        .is_some_and(|r| r.iter().any(|k| k == "method" || k == "uri"));
    if caddy_request && (has("ts") || has("status") || has("duration")) {
        return Some(LogFlavor::Caddy);
    }
    if (has("start_time") && (has("response_code") || has("response_flags") || has("duration")))
        || (has("response_code") && (has("method") || has(":method")))
    {
        return Some(LogFlavor::Envoy);
    }
    if traefik::recognised(&first.keys) {
        return Some(LogFlavor::Traefik);
    }
    if haproxy::recognised(&first.keys) {
        return Some(LogFlavor::Haproxy);
    }
    let nginx_time = has("msec") || has("time_iso8601") || has("time_local");
    let nginx_request = has("request_method") || has("request_uri") || has("request");
    if (nginx_time && nginx_request)
        || (has("request_method") && has("request_uri") && has("status"))
    {
        return Some(LogFlavor::Nginx);
    }
    None
}

/// Which flavor a first record is: by its keys, or an nginx log whose operator named its keys,
/// by their names and values.
pub(crate) fn recognise(first: &FirstRecord) -> Option<LogFlavor> {
    classify(first).or_else(|| {
        first
            .object
            .as_ref()
            .and_then(Aliases::infer)
            .map(|_| LogFlavor::Nginx)
    })
}

/// Why JSON Lines whose first record no flavor reads cannot be read: its keys, and a ready
/// `--log-map` built from them (never a hint about captures: this is a log).
pub(crate) fn unrecognised(path: &str, obj: &Map<String, Value>) -> OpenError {
    let keys: Vec<&str> = obj.keys().map(String::as_str).take(64).collect();
    let map = Aliases::suggested_map(obj);
    let todo = if map.contains('?') {
        " (replace each ? with the key that holds it; `mcp-forensics analyze --help` explains the keys)"
    } else {
        ""
    };
    OpenError {
        path: path.to_string(),
        message: format!(
            "is JSON Lines, but not an access log this tool can read: its first record holds no \
             time, request (method and path, or a request line) and status it can place. \
             Expected JSON Lines from nginx (keys named after its variables or what they mean: \
             msec, time or timestamp; request_method or method; request_uri, uri or request; \
             status; request_time or duration), Envoy (start_time, method, path, \
             response_code, duration) or Caddy (ts, request.method, request.uri, status, \
             duration), or a HAR file. The first record has the keys: {}{}",
            keys.join(", "),
            if obj.len() > keys.len() { ", ..." } else { "" }
        ),
        hint: Some(format!("name its fields with --log-map '{map}'{todo}")),
    }
}

/// Reads a JSON Lines access log (plain or gzip) into `sink`. The flavor is recognised from the
/// first record's keys, unless `map` names the fields.
pub fn read_access_log(
    path: &str,
    input: InputId,
    map: Option<&LogMap>,
    sink: &mut impl HttpSink,
) -> Result<(InputReport, Capabilities), OpenError> {
    read_access_log_as(path, input, None, map, sink)
}

pub(crate) fn read_access_log_as(
    path: &str,
    input: InputId,
    flavor: Option<LogFlavor>,
    map: Option<&LogMap>,
    sink: &mut impl HttpSink,
) -> Result<(InputReport, Capabilities), OpenError> {
    let mut text = open_text(path)?;
    let mut reader = LogReader::new(path, input, flavor, map);
    let mut line = Vec::new();
    loop {
        match read_line_capped(&mut text.reader, &mut line, MAX_LINE) {
            Ok(Line::End) => break,
            Ok(Line::Whole) => reader.line(&line)?,
            Ok(Line::TooLong(n)) => reader.too_long(n),
            Err((e, partial)) => {
                let note = Note::new(NoteKind::LogReadingStopped, 1).at(reader.line_no);
                reader.warnings.push(note.detail(e.to_string()));
                if partial > 0 {
                    // The line the error cut.
                    reader.lines += 1;
                    reader.lost(bucket::TRUNCATED, partial);
                }
                break;
            }
        }
    }
    let (mut report, caps) = reader.finish(sink);
    report.bytes = text.bytes_read.load(std::sync::atomic::Ordering::Relaxed);
    if text.gzip {
        report.format.gzip = true;
    }
    Ok((report, caps))
}

/// Reads log text already in memory; `name` is used in reports and errors.
pub fn read_access_log_text(
    name: &str,
    text: &str,
    input: InputId,
    map: Option<&LogMap>,
    sink: &mut impl HttpSink,
) -> Result<(InputReport, Capabilities), OpenError> {
    let mut reader = LogReader::new(name, input, None, map);
    for line in text.split_inclusive('\n') {
        if line.len() > MAX_LINE {
            reader.too_long(line.len() as u64);
        } else {
            reader.line(line.as_bytes())?;
        }
    }
    let (mut report, caps) = reader.finish(sink);
    report.bytes = text.len() as u64;
    Ok((report, caps))
}

/// Bytes of one log line beyond which it is skipped (counted `cap_reached`, with a warning) and
/// not held: nginx, Envoy and Caddy lines are a few kilobytes, and even one logging every
/// header stays far below.
pub(crate) const MAX_LINE: usize = 16 << 20;

/// What [`read_line_capped`] read.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// The end of the input.
    End,
    /// A line (with its newline, unless it ends the input) is in the buffer.
    Whole,
    /// A line of this many bytes, over the cap: skipped, not kept.
    TooLong(u64),
}

/// Reads one line into `buf` (cleared first), holding at most `cap` bytes of it: a longer line
/// is read through to its newline and dropped. An error comes with the bytes of the line read
/// before it.
fn read_line_capped(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> Result<Line, (std::io::Error, u64)> {
    buf.clear();
    let mut seen = 0u64;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((e, seen)),
        };
        if chunk.is_empty() {
            return Ok(match seen {
                0 => Line::End,
                n if n > cap as u64 => Line::TooLong(n),
                _ => Line::Whole,
            });
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        seen += take as u64;
        if seen <= cap as u64 {
            buf.extend_from_slice(&chunk[..take]);
        } else {
            buf.clear();
        }
        r.consume(take);
        if done {
            return Ok(if seen > cap as u64 {
                Line::TooLong(seen)
            } else {
                Line::Whole
            });
        }
    }
}

/// How an exchange ended, as far as the log says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ending {
    Complete,
    /// No response byte reached the client.
    NoResponse(Outcome, Option<Direction>),
    /// The response began and was cut.
    Cut(Outcome, Option<Direction>),
}

/// One log line reduced to what the events need.
pub(super) struct Rec {
    pub(super) line: u64,
    pub(super) start: Timestamp,
    pub(super) end: Timestamp,
    pub(super) head: Timestamp,
    pub(super) method: String,
    pub(super) target: String,
    pub(super) version: u8,
    pub(super) status: u16,
    pub(super) req_headers: Headers,
    pub(super) resp_headers: Headers,
    pub(super) client: Option<SocketAddr>,
    pub(super) server: Option<SocketAddr>,
    pub(super) conn_key: Option<String>,
    /// The log says this is the first request of its connection.
    pub(super) conn_first: bool,
    pub(super) req_bytes: Option<u64>,
    pub(super) resp_bytes: Option<u64>,
    pub(super) ending: Ending,
    /// Envoy's response flags, the side they blame and what they say: an anomaly of the
    /// exchange (`envoy_response_flags`).
    pub(super) note: Option<(Direction, String)>,
    /// The upstream that served it, when the log says.
    pub(super) upstream: Option<String>,
}

/// For a log without connection IDs or server addresses: the client's address and port name its
/// connection while it lasts.
fn conn_by_client(client: Option<SocketAddr>, facts: &mut Facts) -> Option<String> {
    facts.all_conns = false;
    facts.all_servers = false;
    client.filter(|c| c.port() != 0).map(|c| c.to_string())
}

/// How a status ends an exchange when the log says nothing else: 0 means no response, 499
/// (nginx's and Caddy's "client closed request") that the client gave up first.
fn status_ending(status: u16) -> Ending {
    match status {
        0 => Ending::NoResponse(Outcome::ClosedEarly, None),
        499 => Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer)),
        _ => Ending::Complete,
    }
}

/// Why a flavor cannot read a record.
#[derive(Debug, thiserror::Error)]
enum RecordError {
    #[error("no {0}")]
    Missing(&'static str),
    /// A mapped time field whose value is no time.
    #[error("{0} is not a time")]
    NotATime(String),
}

/// Why a line is skipped.
#[derive(Debug, thiserror::Error)]
enum Skip {
    #[error("not valid JSON ({0})")]
    Json(serde_json::Error),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("keys of no known access log format")]
    UnknownKeys,
    #[error("does not follow --log-format")]
    NotTheFormat,
    #[error(transparent)]
    Record(#[from] RecordError),
}

impl Skip {
    /// The accounting bucket of a skipped line: JSON that does not parse is lost (cut at the
    /// end of a truncated file, or corrupt); a JSON line that is no record is not recognised.
    fn bucket(&self, last_unterminated: bool) -> (&'static str, bool) {
        match self {
            Skip::Json(e) if e.is_eof() && last_unterminated => (bucket::TRUNCATED, true),
            Skip::Json(_) => (bucket::CORRUPT_RECORD, true),
            _ => (bucket::NOT_RECOGNISED, false),
        }
    }
}

/// What the log keeps, judged over all records, for the capabilities.
struct Facts {
    /// Headers the log names, whether or not a line has a value for them.
    req_header_names: BTreeSet<String>,
    resp_header_names: BTreeSet<String>,
    all_clients: bool,
    all_servers: bool,
    all_conns: bool,
    any_duration: bool,
    all_durations: bool,
    /// Records with no duration.
    durations_missing: u64,
    /// Records whose end was derived, by how.
    estimated: BTreeMap<DurationEstimate, u64>,
    coarse_times: bool,
    head_measured: bool,
    ending_logged: bool,
    redacted: bool,
    /// Some record logged its start (Envoy `start_time`, a map's `start`).
    start_logged: bool,
}

impl Facts {
    fn new() -> Facts {
        Facts {
            req_header_names: BTreeSet::new(),
            resp_header_names: BTreeSet::new(),
            all_clients: true,
            all_servers: true,
            all_conns: true,
            any_duration: false,
            all_durations: true,
            durations_missing: 0,
            estimated: BTreeMap::new(),
            coarse_times: false,
            head_measured: false,
            ending_logged: false,
            redacted: false,
            start_logged: false,
        }
    }

    /// The upstream's time to the response head (nginx `$upstream_header_time`, Envoy
    /// `%RESPONSE_DURATION%`), noted so the first byte is said to be measured, not assumed.
    fn header_time(&mut self, v: Option<&Value>, unit: DurationUnit) -> Option<i64> {
        let t = v.and_then(|v| parse_duration(v, unit));
        if t.is_some() {
            self.head_measured = true;
        }
        t
    }

    fn note_duration(&mut self, d: Option<i64>) {
        if d.is_some() {
            self.any_duration = true;
        } else {
            self.all_durations = false;
            self.durations_missing += 1;
        }
    }

    /// A record's end derived as `how` says, not measured.
    fn estimated(&mut self, how: DurationEstimate) {
        *self.estimated.entry(how).or_default() += 1;
    }
}

struct LogReader<'a> {
    name: String,
    input: InputId,
    flavor: Option<LogFlavor>,
    map: Option<&'a LogMap>,
    line_no: u64,
    records: Vec<Rec>,
    warnings: Warnings,
    malformed: u64,
    lines: u64,
    facts: Facts,
    accounting: Accounting,
    /// Bytes of the line being read.
    line_bytes: u64,
    /// The line being read has no newline (it ends the input).
    unterminated: bool,
    too_long: u64,
    /// For an nginx log whose operator named its keys: how they are read, from its first
    /// record (decided once).
    aliases: Option<Aliases>,
    aliases_decided: bool,
    /// How an HAProxy log's keys, named by its operator, are read (from its first record).
    read_as: Vec<(String, String)>,
}

impl<'a> LogReader<'a> {
    fn new(name: &str, input: InputId, flavor: Option<LogFlavor>, map: Option<&'a LogMap>) -> Self {
        LogReader {
            name: name.to_string(),
            input,
            flavor: if map.is_some_and(LogMap::is_text) {
                Some(LogFlavor::Nginx)
            } else if map.is_some() {
                Some(LogFlavor::Mapped)
            } else {
                flavor.filter(|f| *f != LogFlavor::Mapped)
            },
            map,
            line_no: 0,
            records: Vec::new(),
            warnings: Warnings::new(20),
            malformed: 0,
            lines: 0,
            facts: Facts::new(),
            accounting: Accounting::default(),
            line_bytes: 0,
            unterminated: false,
            too_long: 0,
            aliases: None,
            aliases_decided: false,
            read_as: Vec::new(),
        }
    }

    fn bad(&mut self, why: Skip) {
        self.malformed += 1;
        let (reason, lost) = why.bucket(self.unterminated);
        if lost {
            self.lost(reason, self.line_bytes);
        } else {
            self.accounting.packets.skip(reason, 1);
            self.accounting.bytes.skip(reason, self.line_bytes);
        }
        let note = Note::new(NoteKind::LineSkipped, 1).at(self.line_no);
        self.warnings.push(note.detail(why.to_string()));
    }

    /// A line of `bytes` lost for `reason` (the line is already numbered).
    fn lost(&mut self, reason: &str, bytes: u64) {
        self.accounting.packets.lose(reason, 1);
        self.accounting.bytes.lose(reason, bytes);
    }

    /// A line over [`MAX_LINE`]: skipped unread, counted and named.
    fn too_long(&mut self, bytes: u64) {
        self.line_no += 1;
        self.lines += 1;
        self.too_long += 1;
        self.lost(bucket::CAP_REACHED, bytes);
        let cap_mib = (MAX_LINE >> 20) as u64;
        let note = Note::new(NoteKind::LineTooLong { cap_mib }, bytes).at(self.line_no);
        self.warnings.push(note);
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), OpenError> {
        self.line_no += 1;
        self.line_bytes = raw.len() as u64;
        self.unterminated = !raw.ends_with(b"\n");
        let raw = if self.line_no == 1 {
            raw.strip_prefix(&[0xef, 0xbb, 0xbf][..]).unwrap_or(raw)
        } else {
            raw
        };
        if raw.iter().all(u8::is_ascii_whitespace) {
            self.accounting
                .bytes
                .skip(bucket::FILE_FRAMING, self.line_bytes);
            return Ok(());
        }
        self.lines += 1;
        if let Some(format) = self.map.and_then(|m| m.text.as_ref()) {
            let text = String::from_utf8_lossy(raw);
            let Some(obj) = format.read(&text) else {
                self.bad(Skip::NotTheFormat);
                return Ok(());
            };
            return self.recorded(LogFlavor::Nginx, &obj);
        }
        let value: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                self.bad(Skip::Json(e));
                return Ok(());
            }
        };
        let Value::Object(obj) = value else {
            self.bad(Skip::NotAnObject);
            return Ok(());
        };
        let flavor = match self.flavor {
            Some(f) => f,
            None => {
                let first = first_record(&obj);
                match recognise(&first) {
                    Some(f) => {
                        self.flavor = Some(f);
                        f
                    }
                    None if self.records.is_empty() && self.malformed == self.lines - 1 => {
                        // The first readable record decides; an unknown one is the error that
                        // lists what was expected.
                        return Err(crate::classify(&self.name, &first, false)
                            .err()
                            .unwrap_or_else(|| OpenError {
                                path: self.name.clone(),
                                message: "is a HAR file, not a JSON access log".into(),
                                hint: None,
                            }));
                    }
                    None => {
                        self.bad(Skip::UnknownKeys);
                        return Ok(());
                    }
                }
            }
        };
        if flavor == LogFlavor::Nginx && !self.aliases_decided {
            self.aliases_decided = true;
            self.aliases = Aliases::infer(&obj).filter(|a| !a.guessed().is_empty());
        }
        if flavor == LogFlavor::Haproxy && self.read_as.is_empty() {
            self.read_as = haproxy::read_as(&obj);
        }
        let renamed;
        let obj = match &self.aliases {
            Some(a) => {
                renamed = a.apply(&obj);
                &renamed
            }
            None => &obj,
        };
        self.recorded(flavor, obj)
    }

    /// A record read from a line: analysed, or the line skipped with why.
    fn recorded(&mut self, flavor: LogFlavor, obj: &Map<String, Value>) -> Result<(), OpenError> {
        match self.record(flavor, obj) {
            Ok(rec) => {
                self.facts.all_clients &= rec.client.is_some_and(|c| c.port() != 0);
                self.facts.all_servers &= rec.server.is_some();
                self.accounting.packets.analyse(1);
                self.accounting.bytes.analyse(self.line_bytes);
                self.records.push(rec);
            }
            Err(why) => self.bad(why.into()),
        }
        Ok(())
    }

    fn record(&mut self, flavor: LogFlavor, obj: &Map<String, Value>) -> Result<Rec, RecordError> {
        let (line, facts) = (self.line_no, &mut self.facts);
        match flavor {
            LogFlavor::Nginx => nginx::record(obj, line, facts),
            LogFlavor::Envoy => envoy::record(obj, line, facts),
            LogFlavor::Caddy => caddy::record(obj, line, facts),
            LogFlavor::Haproxy => haproxy::record(obj, line, facts),
            LogFlavor::Traefik => traefik::record(obj, line, facts),
            LogFlavor::Mapped => {
                let map = self.map.expect("mapped flavor has a map");
                mapped::record(obj, map, line, facts)
            }
        }
    }

    fn finish(self, sink: &mut impl HttpSink) -> (InputReport, Capabilities) {
        let flavor = self.flavor.unwrap_or(LogFlavor::Nginx);
        let mut report = InputReport {
            path: self.name.clone(),
            format: mcpf_model::FileFormat::new(mcpf_model::FileKind::AccessLog(flavor)),
            packets: self.lines,
            ..InputReport::default()
        };
        if self.malformed > 0 {
            report
                .skipped
                .insert("malformed lines".into(), self.malformed);
        }
        if self.too_long > 0 {
            report
                .skipped
                .insert("lines over the line cap".into(), self.too_long);
        }
        report.accounting = self.accounting.clone();
        if let Some(a) = &self.aliases {
            report.read_as = a.guessed().into_iter().collect();
        }
        report.read_as.extend(self.read_as.iter().cloned());
        let caps = exchanges::assemble(self.records, &self.facts, flavor, self.input, sink);
        report.warnings = self.warnings.finish(NoteKind::MoreMalformedLines);
        (report, caps)
    }
}

/// A record's keys as detection sees them, to recognise the flavor of a log read from standard
/// input by its first record.
fn first_record(obj: &Map<String, Value>) -> FirstRecord {
    FirstRecord {
        keys: obj.keys().cloned().collect(),
        more_keys: false,
        log: None,
        request: obj
            .get("request")
            .and_then(Value::as_object)
            .map(|r| r.keys().cloned().collect()),
        object: Some(obj.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_over_the_cap_are_read_through_not_held() {
        // A tiny BufReader, so lines span several refills.
        let text = b"short\nlonger than eight\nlast".as_slice();
        let mut r = std::io::BufReader::with_capacity(3, text);
        let mut buf = Vec::new();
        let mut next = || {
            read_line_capped(&mut r, &mut buf, 8)
                .map_err(|(e, _)| e)
                .unwrap()
        };
        assert_eq!(next(), Line::Whole);
        assert_eq!(next(), Line::TooLong(18));
        assert_eq!(next(), Line::Whole);
        assert_eq!(next(), Line::End);
        let mut r = std::io::BufReader::with_capacity(3, b"12345678\n".as_slice());
        assert_eq!(
            read_line_capped(&mut r, &mut buf, 8).ok(),
            Some(Line::TooLong(9))
        );
        assert!(buf.is_empty());
    }
}
