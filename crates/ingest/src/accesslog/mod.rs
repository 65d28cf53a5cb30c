//! JSON Lines access logs (nginx `escape=json`, Envoy `json_format`, Caddy's default JSON, or
//! any JSON log through a [`LogMap`]) to HTTP events.
//!
//! An access log line is written when a request ENDS: the request's start is end − duration
//! (Envoy logs its start, so there end = start + duration). Lines therefore come in end order;
//! they are reduced to compact records, sorted by start, and emitted in time order (memory
//! follows the size of the log).
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

use std::collections::{BTreeSet, HashMap};
use std::io::BufRead;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use serde_json::{Map, Value};

use super::timeline::{Timeline, epoch_decimal, epoch_scaled, ms_to_ns, secs_to_ns};
use super::{FirstRecord, Warnings, open_text};
use mcpf_http::{
    Body, ConnKind, ExchangeId, Headers, HttpEvent, HttpSink, Outcome, Request, ResponseEnd,
    ResponseHead,
};
use mcpf_model::Direction;
use mcpf_model::{Capabilities, ConnId, HeaderCoverage, LogFlavor, SourceFormat};
use mcpf_model::{FrameRef, InputId, Mark, Timestamp};
use mcpf_model::{InputReport, OpenError};

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
    let nginx_time = has("msec") || has("time_iso8601") || has("time_local");
    let nginx_request = has("request_method") || has("request_uri") || has("request");
    if (nginx_time && nginx_request)
        || (has("request_method") && has("request_uri") && has("status"))
    {
        return Some(LogFlavor::Nginx);
    }
    None
}

/// Unit of a mapped duration field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DurationUnit {
    #[default]
    Seconds,
    Millis,
    Micros,
    Nanos,
}

impl DurationUnit {
    fn to_ns(self, v: f64) -> i64 {
        match self {
            DurationUnit::Seconds => secs_to_ns(v),
            DurationUnit::Millis => ms_to_ns(v),
            DurationUnit::Micros => secs_to_ns(v / 1e6),
            DurationUnit::Nanos => secs_to_ns(v / 1e9),
        }
    }
}

/// `--log-map`: the fields of a JSON log this tool does not recognise. Field names may be
/// nested paths (`request.method`). Written as `key=FIELD,...` or as a JSON object of the same
/// keys (inline or in a file):
///
/// | key | meaning |
/// |---|---|
/// | `time` | when the request ended (Unix seconds/ms/µs/ns, or ISO 8601) |
/// | `start` | when it started, instead of `time` |
/// | `method`, `path`, `status` | request method, target (path and query), response status |
/// | `duration` | how long it took; `duration_unit=s|ms|us|ns` (default s) |
/// | `req.NAME`, `resp.NAME` | a field holding request / response header NAME |
/// | `request_headers`, `response_headers` | a field holding an object of headers (values strings or arrays) |
/// | `client`, `connection` | client `ip[:port]`, connection identifier |
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogMap {
    pub time: Option<String>,
    pub start: Option<String>,
    pub method: Option<String>,
    pub path: Option<String>,
    pub status: Option<String>,
    pub duration: Option<String>,
    pub duration_unit: DurationUnit,
    /// (header name, field) pairs.
    pub request_headers: Vec<(String, String)>,
    pub response_headers: Vec<(String, String)>,
    pub request_header_object: Option<String>,
    pub response_header_object: Option<String>,
    pub client: Option<String>,
    pub connection: Option<String>,
}

impl LogMap {
    /// `key=FIELD,key=FIELD,...`.
    pub fn parse(spec: &str) -> Result<LogMap, String> {
        let mut map = LogMap::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not key=FIELD"))?;
            map.set(k.trim(), v.trim())?;
        }
        map.check()?;
        Ok(map)
    }

    /// A JSON object of the same keys; `request_headers` / `response_headers` may also be an
    /// object of header name → field.
    pub fn from_json(text: &str) -> Result<LogMap, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))?;
        let obj = v.as_object().ok_or("not a JSON object")?;
        let mut map = LogMap::default();
        for (k, v) in obj {
            match v {
                Value::String(s) => map.set(k, s)?,
                Value::Object(o) if k == "request_headers" || k == "response_headers" => {
                    for (name, field) in o {
                        let field = field.as_str().ok_or_else(|| {
                            format!("{k}.{name}: the field name must be a string")
                        })?;
                        let side = if k == "request_headers" {
                            "req."
                        } else {
                            "resp."
                        };
                        map.set(&format!("{side}{name}"), field)?;
                    }
                }
                _ => return Err(format!("{k}: the field name must be a string")),
            }
        }
        map.check()?;
        Ok(map)
    }

    fn set(&mut self, key: &str, field: &str) -> Result<(), String> {
        if field.is_empty() {
            return Err(format!("{key}: empty field name"));
        }
        let f = Some(field.to_string());
        if let Some(name) = key
            .strip_prefix("req.")
            .or_else(|| key.strip_prefix("request_header."))
        {
            self.request_headers
                .push((name.to_ascii_lowercase(), field.to_string()));
            return Ok(());
        }
        if let Some(name) = key
            .strip_prefix("resp.")
            .or_else(|| key.strip_prefix("response_header."))
        {
            self.response_headers
                .push((name.to_ascii_lowercase(), field.to_string()));
            return Ok(());
        }
        match key {
            "time" | "end" | "end_time" => self.time = f,
            "start" | "start_time" => self.start = f,
            "method" => self.method = f,
            "path" | "uri" | "target" => self.path = f,
            "status" => self.status = f,
            "duration" => self.duration = f,
            "duration_unit" => {
                self.duration_unit = match field {
                    "s" | "sec" | "secs" | "seconds" => DurationUnit::Seconds,
                    "ms" | "millis" | "milliseconds" => DurationUnit::Millis,
                    "us" | "µs" | "micros" | "microseconds" => DurationUnit::Micros,
                    "ns" | "nanos" | "nanoseconds" => DurationUnit::Nanos,
                    _ => return Err(format!("duration_unit {field:?}: use s, ms, us or ns")),
                }
            }
            "request_headers" => self.request_header_object = f,
            "response_headers" => self.response_header_object = f,
            "client" => self.client = f,
            "connection" => self.connection = f,
            _ => {
                return Err(format!(
                    "unknown key {key:?}: use time, start, method, path, status, duration, \
                     duration_unit, req.HEADER, resp.HEADER, request_headers, response_headers, \
                     client, connection"
                ));
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        let mut missing = Vec::new();
        if self.time.is_none() && self.start.is_none() {
            missing.push("time (or start)");
        }
        if self.method.is_none() {
            missing.push("method");
        }
        if self.path.is_none() {
            missing.push("path");
        }
        if self.status.is_none() {
            missing.push("status");
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("the log map needs {}", missing.join(", ")))
        }
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
        line.clear();
        match text.reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => reader.line(&line)?,
            Err(e) => {
                reader.warnings.push(format!(
                    "reading stopped after line {}: {e}",
                    reader.line_no
                ));
                break;
            }
        }
    }
    let (mut report, caps, timeline) = reader.finish();
    report.bytes = text.bytes_read.load(std::sync::atomic::Ordering::Relaxed);
    if text.gzip {
        report.format.push_str("+gzip");
    }
    timeline.emit(sink);
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
        reader.line(line.as_bytes())?;
    }
    let (mut report, caps, timeline) = reader.finish();
    report.bytes = text.len() as u64;
    timeline.emit(sink);
    Ok((report, caps))
}

/// How an exchange ended, as far as the log says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Complete,
    /// No response byte reached the client.
    NoResponse(Outcome, Option<Direction>),
    /// The response began and was cut.
    Cut(Outcome, Option<Direction>),
}

/// One log line reduced to what the events need.
struct Rec {
    line: u64,
    start: Timestamp,
    end: Timestamp,
    head: Timestamp,
    method: String,
    target: String,
    version: u8,
    status: u16,
    req_headers: Headers,
    resp_headers: Headers,
    client: Option<SocketAddr>,
    server: Option<SocketAddr>,
    conn_key: Option<String>,
    /// The log says this is the first request of its connection.
    conn_first: bool,
    req_bytes: Option<u64>,
    resp_bytes: Option<u64>,
    ending: Ending,
    note: Option<(Direction, String)>,
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
    req_header_names: BTreeSet<String>,
    resp_header_names: BTreeSet<String>,
    /// Facts over all records, for the capabilities.
    all_clients: bool,
    all_servers: bool,
    all_conns: bool,
    any_duration: bool,
    all_durations: bool,
    coarse_times: bool,
    head_measured: bool,
    ending_logged: bool,
    redacted: bool,
    /// Some record logged its start (Envoy `start_time`, a map's `start`).
    start_logged: bool,
}

impl<'a> LogReader<'a> {
    fn new(name: &str, input: InputId, flavor: Option<LogFlavor>, map: Option<&'a LogMap>) -> Self {
        LogReader {
            name: name.to_string(),
            input,
            flavor: if map.is_some() {
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
            req_header_names: BTreeSet::new(),
            resp_header_names: BTreeSet::new(),
            all_clients: true,
            all_servers: true,
            all_conns: true,
            any_duration: false,
            all_durations: true,
            coarse_times: false,
            head_measured: false,
            ending_logged: false,
            redacted: false,
            start_logged: false,
        }
    }

    fn bad(&mut self, why: String) {
        self.malformed += 1;
        self.warnings
            .push(format!("line {} skipped: {why}", self.line_no));
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), OpenError> {
        self.line_no += 1;
        let raw = if self.line_no == 1 {
            raw.strip_prefix(&[0xef, 0xbb, 0xbf][..]).unwrap_or(raw)
        } else {
            raw
        };
        if raw.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        self.lines += 1;
        let value: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                self.bad(format!("not valid JSON ({e})"));
                return Ok(());
            }
        };
        let Value::Object(obj) = value else {
            self.bad("not a JSON object".into());
            return Ok(());
        };
        let flavor = match self.flavor {
            Some(f) => f,
            None => {
                let first = FirstRecord {
                    keys: obj.keys().cloned().collect(),
                    more_keys: false,
                    log: None,
                    request: obj
                        .get("request")
                        .and_then(Value::as_object)
                        .map(|r| r.keys().cloned().collect()),
                };
                match classify(&first) {
                    Some(f) => {
                        self.flavor = Some(f);
                        f
                    }
                    None if self.records.is_empty() && self.malformed == self.lines - 1 => {
                        // The first readable record decides; an unknown one is the error that
                        // lists what was expected.
                        return Err(super::classify(&self.name, &first, false)
                            .err()
                            .unwrap_or_else(|| OpenError {
                                path: self.name.clone(),
                                message: "is a HAR file, not a JSON access log".into(),
                                hint: None,
                            }));
                    }
                    None => {
                        self.bad("keys of no known access log format".into());
                        return Ok(());
                    }
                }
            }
        };
        let rec = match flavor {
            LogFlavor::Nginx => self.nginx(&obj),
            LogFlavor::Envoy => self.envoy(&obj),
            LogFlavor::Caddy => self.caddy(&obj),
            LogFlavor::Mapped => {
                let map = self.map.expect("mapped flavor has a map");
                self.mapped(&obj, map)
            }
        };
        match rec {
            Ok(rec) => {
                self.all_clients &= rec.client.is_some_and(|c| c.port() != 0);
                self.all_servers &= rec.server.is_some();
                self.records.push(rec);
            }
            Err(why) => self.bad(why),
        }
        Ok(())
    }

    fn note_keys(&mut self, obj: &Map<String, Value>, flavor: LogFlavor) {
        for k in obj.keys() {
            match header_of_key(k, flavor) {
                Some((Side::Request, name)) => {
                    self.req_header_names.insert(name);
                }
                Some((Side::Response, name)) => {
                    self.resp_header_names.insert(name);
                }
                None => {}
            }
        }
    }

    /// Headers named by keys (nginx `http_*`, `sent_http_*`; Envoy `req_*`, `resp_*`, ...).
    fn keyed_headers(&mut self, obj: &Map<String, Value>, flavor: LogFlavor) -> (Headers, Headers) {
        self.note_keys(obj, flavor);
        let mut req = Vec::new();
        let mut resp = Vec::new();
        for (k, v) in obj {
            let Some((side, name)) = header_of_key(k, flavor) else {
                continue;
            };
            for value in header_values(v) {
                match side {
                    Side::Request => req.push((name.clone(), value)),
                    Side::Response => resp.push((name.clone(), value)),
                }
            }
        }
        (Headers(req), Headers(resp))
    }

    fn nginx(&mut self, obj: &Map<String, Value>) -> Result<Rec, String> {
        let (mut req_headers, resp_headers) = self.keyed_headers(obj, LogFlavor::Nginx);
        let s = |k: &str| {
            obj.get(k)
                .and_then(str_of)
                .filter(|s| !s.is_empty() && s != "-")
        };
        let end = match obj.get("msec").and_then(parse_time) {
            Some(t) => t,
            None => {
                let t = [
                    "time_iso8601",
                    "time_local",
                    "time",
                    "timestamp",
                    "@timestamp",
                ]
                .iter()
                .find_map(|k| obj.get(*k).and_then(parse_time))
                .ok_or("no time (msec, time_iso8601 or time_local)")?;
                if t.subsec_nanos() == 0 {
                    self.coarse_times = true;
                }
                t
            }
        };
        let request_line = s("request");
        let mut parts = request_line.as_deref().unwrap_or("").split_whitespace();
        let (line_method, line_target, line_proto) = (parts.next(), parts.next(), parts.next());
        let method = s("request_method")
            .or(line_method.map(str::to_string))
            .ok_or("no request_method")?;
        let target = s("request_uri")
            .or(line_target.map(str::to_string))
            .or_else(|| {
                s("uri").map(|u| match s("args") {
                    Some(a) => format!("{u}?{a}"),
                    None => u,
                })
            })
            .ok_or("no request_uri")?;
        let status = obj
            .get("status")
            .and_then(parse_status)
            .ok_or("no status")?;
        let duration = obj
            .get("request_time")
            .and_then(|v| parse_duration(v, DurationUnit::Seconds));
        self.note_duration(duration);
        let start = end.add_nanos(-duration.unwrap_or(0));
        let header_time = obj
            .get("upstream_header_time")
            .and_then(|v| parse_duration(v, DurationUnit::Seconds));
        if header_time.is_some() {
            self.head_measured = true;
        }
        let version = version_of(s("server_protocol").as_deref().or(line_proto));
        let client = addr(s("remote_addr").as_deref(), s("remote_port").as_deref());
        let server = addr(s("server_addr").as_deref(), s("server_port").as_deref());
        if let Some(h) = s("host").or(s("http_host"))
            && !req_headers.has("host")
        {
            req_headers.0.push(("host".into(), h));
        }
        let conn_key = s("connection");
        self.all_conns &= conn_key.is_some();
        let conn_first = s("connection_requests").as_deref() == Some("1");
        let completion = obj
            .get("request_completion")
            .map(|v| str_of(v).unwrap_or_default());
        if completion.is_some() {
            self.ending_logged = true;
        }
        let ending = match status {
            499 => Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer)),
            444 => Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ServerToClient)),
            0 => Ending::NoResponse(Outcome::ClosedEarly, None),
            _ => match completion.as_deref() {
                Some("") => Ending::Cut(Outcome::ClosedEarly, None),
                _ => Ending::Complete,
            },
        };
        Ok(Rec {
            line: self.line_no,
            start,
            end,
            head: head_time(start, end, header_time),
            method,
            target,
            version,
            status,
            req_bytes: s("content_length")
                .or(s("http_content_length"))
                .and_then(|v| v.parse().ok()),
            resp_bytes: s("body_bytes_sent").and_then(|v| v.parse().ok()),
            req_headers,
            resp_headers,
            client,
            server,
            conn_key,
            conn_first,
            ending,
            note: None,
        })
    }

    fn envoy(&mut self, obj: &Map<String, Value>) -> Result<Rec, String> {
        let (mut req_headers, resp_headers) = self.keyed_headers(obj, LogFlavor::Envoy);
        let s = |k: &str| {
            obj.get(k)
                .and_then(str_of)
                .filter(|s| !s.is_empty() && s != "-")
        };
        let duration = obj
            .get("duration")
            .and_then(|v| parse_duration(v, DurationUnit::Millis));
        self.note_duration(duration);
        let (start, end) = match obj.get("start_time").and_then(parse_time) {
            Some(start) => {
                self.start_logged = true;
                (start, start.add_nanos(duration.unwrap_or(0)))
            }
            None => {
                let end = ["end_time", "timestamp", "time", "@timestamp"]
                    .iter()
                    .find_map(|k| obj.get(*k).and_then(parse_time))
                    .ok_or("no start_time")?;
                (end.add_nanos(-duration.unwrap_or(0)), end)
            }
        };
        let method = s("method").or(s(":method")).ok_or("no method")?;
        let target = s("path")
            .or(s(":path"))
            .or(s("x-envoy-original-path"))
            .ok_or("no path")?;
        let status = obj
            .get("response_code")
            .and_then(parse_status)
            .ok_or("no response_code")?;
        let header_time = obj
            .get("response_duration")
            .and_then(|v| parse_duration(v, DurationUnit::Millis));
        if header_time.is_some() {
            self.head_measured = true;
        }
        if let Some(a) = s("authority")
            && !req_headers.has("host")
        {
            req_headers.0.push(("host".into(), a));
        }
        let flags = obj
            .get("response_flags")
            .map(|v| str_of(v).unwrap_or_default());
        if flags.is_some() {
            self.ending_logged = true;
        }
        let flags = envoy_flags(flags.as_deref().unwrap_or(""));
        let ending = envoy_ending(&flags, status);
        let note = (!flags.is_empty()).then(|| {
            let dir = if flags.iter().any(|f| f == "DC") {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            };
            let named: Vec<String> = flags
                .iter()
                .map(|f| match envoy_flag_meaning(f) {
                    Some(m) => format!("{f} ({m})"),
                    None => f.clone(),
                })
                .collect();
            (dir, format!("Envoy response flags {}", named.join(", ")))
        });
        let conn_key = s("connection_id");
        self.all_conns &= conn_key.is_some();
        Ok(Rec {
            line: self.line_no,
            start,
            end,
            head: head_time(start, end, header_time),
            method,
            target,
            version: version_of(s("protocol").as_deref()),
            status,
            req_headers,
            resp_headers,
            client: s("downstream_remote_address").and_then(|a| socket_addr(&a)),
            server: s("downstream_local_address").and_then(|a| socket_addr(&a)),
            conn_key,
            conn_first: false,
            req_bytes: obj.get("bytes_received").and_then(as_u64),
            resp_bytes: obj.get("bytes_sent").and_then(as_u64),
            ending,
            note,
        })
    }

    fn caddy(&mut self, obj: &Map<String, Value>) -> Result<Rec, String> {
        let req = obj
            .get("request")
            .and_then(Value::as_object)
            .ok_or("no request object")?;
        let rs = |k: &str| req.get(k).and_then(str_of).filter(|s| !s.is_empty());
        let end = obj.get("ts").and_then(parse_time).ok_or("no ts")?;
        let duration = obj.get("duration").and_then(caddy_duration);
        self.note_duration(duration);
        let start = end.add_nanos(-duration.unwrap_or(0));
        let method = rs("method").ok_or("no request.method")?;
        let target = rs("uri").ok_or("no request.uri")?;
        let status = obj
            .get("status")
            .and_then(parse_status)
            .ok_or("no status")?;
        let mut req_headers = header_map(req.get("headers"));
        if let Some(h) = rs("host")
            && !req_headers.has("host")
        {
            req_headers.0.insert(0, ("Host".into(), h));
        }
        let resp_headers = header_map(obj.get("resp_headers"));
        if req_headers
            .0
            .iter()
            .chain(resp_headers.0.iter())
            .any(|(_, v)| v == "REDACTED")
        {
            self.redacted = true;
        }
        let client = addr(rs("remote_ip").as_deref(), rs("remote_port").as_deref());
        let conn_key = client.filter(|c| c.port() != 0).map(|c| c.to_string());
        self.all_conns = false;
        self.all_servers = false;
        let ending = match status {
            0 => Ending::NoResponse(Outcome::ClosedEarly, None),
            499 => Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer)),
            _ => Ending::Complete,
        };
        Ok(Rec {
            line: self.line_no,
            start,
            end,
            head: start,
            method,
            target,
            version: version_of(rs("proto").as_deref()),
            status,
            req_headers,
            resp_headers,
            client,
            server: None,
            conn_key,
            conn_first: false,
            req_bytes: obj.get("bytes_read").and_then(as_u64),
            resp_bytes: obj.get("size").and_then(as_u64),
            ending,
            note: None,
        })
    }

    fn mapped(&mut self, obj: &Map<String, Value>, map: &LogMap) -> Result<Rec, String> {
        let field = |f: &Option<String>| f.as_deref().and_then(|f| lookup(obj, f));
        let s = |f: &Option<String>| {
            field(f)
                .and_then(str_of)
                .filter(|s| !s.is_empty() && s != "-")
        };
        let duration = field(&map.duration).and_then(|v| parse_duration(v, map.duration_unit));
        self.note_duration(duration);
        let (start, end) = match (field(&map.start), field(&map.time)) {
            (Some(v), _) if map.start.is_some() => {
                let start = parse_time(v).ok_or_else(|| {
                    format!("{} is not a time", map.start.as_deref().unwrap_or(""))
                })?;
                self.start_logged = true;
                (start, start.add_nanos(duration.unwrap_or(0)))
            }
            (_, Some(v)) => {
                let end = parse_time(v).ok_or_else(|| {
                    format!("{} is not a time", map.time.as_deref().unwrap_or(""))
                })?;
                (end.add_nanos(-duration.unwrap_or(0)), end)
            }
            _ => return Err("no time".into()),
        };
        let method = s(&map.method).ok_or("no method")?;
        let target = s(&map.path).ok_or("no path")?;
        let status = field(&map.status)
            .and_then(parse_status)
            .ok_or("no status")?;
        let mut req = Vec::new();
        let mut resp = Vec::new();
        for (name, f) in &map.request_headers {
            self.req_header_names.insert(name.clone());
            for v in lookup(obj, f).map(header_values).unwrap_or_default() {
                req.push((name.clone(), v));
            }
        }
        for (name, f) in &map.response_headers {
            self.resp_header_names.insert(name.clone());
            for v in lookup(obj, f).map(header_values).unwrap_or_default() {
                resp.push((name.clone(), v));
            }
        }
        if let Some(v) = field(&map.request_header_object) {
            let h = header_map(Some(v));
            self.req_header_names
                .extend(h.0.iter().map(|(n, _)| n.to_ascii_lowercase()));
            req.extend(h.0);
        }
        if let Some(v) = field(&map.response_header_object) {
            let h = header_map(Some(v));
            self.resp_header_names
                .extend(h.0.iter().map(|(n, _)| n.to_ascii_lowercase()));
            resp.extend(h.0);
        }
        let client = s(&map.client).and_then(|c| {
            socket_addr(&c).or_else(|| parse_ip(&c).map(|ip| SocketAddr::new(ip, 0)))
        });
        let conn_key = s(&map.connection);
        self.all_conns &= conn_key.is_some();
        self.all_servers = false;
        let ending = match status {
            0 => Ending::NoResponse(Outcome::ClosedEarly, None),
            499 => Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer)),
            _ => Ending::Complete,
        };
        Ok(Rec {
            line: self.line_no,
            start,
            end,
            head: start,
            method,
            target,
            version: 1,
            status,
            req_headers: Headers(req),
            resp_headers: Headers(resp),
            client,
            server: None,
            conn_key: conn_key.or_else(|| client.filter(|c| c.port() != 0).map(|c| c.to_string())),
            conn_first: false,
            req_bytes: None,
            resp_bytes: None,
            ending,
            note: None,
        })
    }

    fn note_duration(&mut self, d: Option<i64>) {
        if d.is_some() {
            self.any_duration = true;
        } else {
            self.all_durations = false;
        }
    }

    fn finish(mut self) -> (InputReport, Capabilities, Timeline) {
        let flavor = self.flavor.unwrap_or(LogFlavor::Nginx);
        let mut report = InputReport {
            path: self.name.clone(),
            format: flavor.name().into(),
            packets: self.lines,
            ..InputReport::default()
        };
        if self.malformed > 0 {
            report
                .skipped
                .insert("malformed lines".into(), self.malformed);
        }
        let mut records = std::mem::take(&mut self.records);
        records.sort_by_key(|r| (r.start, r.line));

        // Synthetic connections: by the logged connection (a new one when the log says a
        // request is the first of its connection again), else one per request.
        let mut conns: HashMap<String, (u64, u32)> = HashMap::new();
        let mut next = 0u64;
        let mut ids = Vec::with_capacity(records.len());
        for r in &records {
            let id = match &r.conn_key {
                Some(k) => {
                    let fresh = r.conn_first && conns.get(k).is_some_and(|c| c.1 > 0);
                    if fresh {
                        conns.remove(k);
                    }
                    let slot = conns.entry(k.clone()).or_insert_with(|| {
                        next += 1;
                        (next - 1, 0)
                    });
                    let id = ExchangeId {
                        conn: ConnId::recorded(self.input, slot.0),
                        index: slot.1,
                    };
                    slot.1 += 1;
                    id
                }
                None => {
                    next += 1;
                    ExchangeId {
                        conn: ConnId::recorded(self.input, next - 1),
                        index: 0,
                    }
                }
            };
            ids.push(id);
        }

        let mut caps = Capabilities::new(SourceFormat::AccessLog(flavor));
        caps.producer = Some(
            match flavor {
                LogFlavor::Nginx => "nginx",
                LogFlavor::Envoy => "Envoy",
                LogFlavor::Caddy => "Caddy",
                LogFlavor::Mapped => "access log read with --log-map",
            }
            .into(),
        );
        caps.response_start_estimated = true;
        caps.start_from_duration = !self.start_logged;
        caps.client_addresses = !records.is_empty() && self.all_clients;
        caps.server_addresses = !records.is_empty() && self.all_servers;
        caps.connections = !records.is_empty() && self.all_conns;
        caps.response_end_known = self.ending_logged;
        caps.sanitized = self.redacted;
        if flavor == LogFlavor::Caddy {
            caps.request_headers = HeaderCoverage::All { except: Vec::new() };
            caps.response_headers = HeaderCoverage::All { except: Vec::new() };
        } else {
            caps.request_headers =
                HeaderCoverage::Only(self.req_header_names.iter().cloned().collect());
            caps.response_headers =
                HeaderCoverage::Only(self.resp_header_names.iter().cloned().collect());
        }

        let unspecified = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
        let mut timeline = Timeline::default();
        let mut started = std::collections::HashSet::new();
        for (r, id) in records.iter().zip(&ids) {
            if started.insert(id.conn) {
                timeline.push(
                    r.start,
                    HttpEvent::ConnectionStart {
                        conn: id.conn,
                        client: r.client.unwrap_or(unspecified),
                        server: r.server.unwrap_or(unspecified),
                        mark: Mark {
                            time: r.start,
                            frame: FrameRef::new(self.input, r.line),
                        },
                    },
                );
            }
        }
        let mut conn_ends: HashMap<ConnId, (SocketAddr, SocketAddr, Mark)> = HashMap::new();
        let mut may_be_streams = 0u64;
        for (r, id) in records.into_iter().zip(ids) {
            let frame = FrameRef::new(self.input, r.line);
            let mark = |time: Timestamp| Mark { time, frame };
            let client = r.client.unwrap_or(unspecified);
            let server = r.server.unwrap_or(unspecified);
            caps.exchanges += 1;
            let bodiless = matches!(r.method.as_str(), "GET" | "HEAD" | "OPTIONS" | "TRACE");
            let req_known =
                r.req_bytes == Some(0) || (bodiless && r.req_bytes.is_none_or(|n| n == 0));
            caps.request_bodies.add(req_known);
            timeline.push(
                r.start,
                HttpEvent::Request(Box::new(Request {
                    exchange: id,
                    client,
                    server,
                    method: r.method,
                    target: r.target,
                    version: r.version,
                    headers: r.req_headers,
                    body: Body {
                        wire_bytes: r.req_bytes.unwrap_or(0),
                        decoded_bytes: r.req_bytes.unwrap_or(0),
                        unknown: !req_known,
                        ..Body::default()
                    },
                    first: mark(r.start),
                    last: mark(r.start),
                    outcome: Outcome::Complete,
                })),
            );
            match r.ending {
                Ending::NoResponse(outcome, closed_by) => {
                    timeline.push(
                        r.end,
                        HttpEvent::NoResponse {
                            exchange: id,
                            outcome,
                            closed_by,
                            mark: mark(r.end),
                        },
                    );
                }
                Ending::Complete | Ending::Cut(..) => {
                    let event_stream =
                        r.resp_headers.media_type().as_deref() == Some("text/event-stream");
                    let ctype_known = r.resp_headers.has("content-type")
                        || caps.response_headers.knows("content-type");
                    if event_stream || !ctype_known {
                        may_be_streams += 1;
                        caps.sse_streams.add(false);
                    }
                    let resp_known = r.resp_bytes == Some(0) && !event_stream;
                    caps.response_bodies.add(resp_known);
                    timeline.push(
                        r.head,
                        HttpEvent::ResponseHead(Box::new(ResponseHead {
                            exchange: id,
                            status: r.status,
                            reason: String::new(),
                            version: r.version,
                            headers: r.resp_headers.clone(),
                            interim: Vec::new(),
                            first: mark(r.head),
                            event_stream,
                        })),
                    );
                    let (outcome, closed_by) = match r.ending {
                        Ending::Cut(o, by) => (o, by),
                        _ => (Outcome::Complete, None),
                    };
                    timeline.push(
                        r.end,
                        HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                            exchange: id,
                            body: Body {
                                wire_bytes: r.resp_bytes.unwrap_or(0),
                                decoded_bytes: r.resp_bytes.unwrap_or(0),
                                content_encoding: r
                                    .resp_headers
                                    .get("content-encoding")
                                    .map(str::to_string),
                                chunked: r.resp_headers.has_token("transfer-encoding", "chunked"),
                                unknown: !resp_known,
                                ..Body::default()
                            },
                            last: mark(r.end),
                            outcome,
                            closed_by,
                            sse: None,
                        })),
                    );
                }
            }
            if let Some((dir, what)) = r.note {
                timeline.push(
                    r.end,
                    HttpEvent::Anomaly {
                        conn: id.conn,
                        dir,
                        mark: mark(r.end),
                        what,
                    },
                );
            }
            let slot = conn_ends
                .entry(id.conn)
                .or_insert((client, server, mark(r.end)));
            if r.end >= slot.2.time {
                slot.2 = mark(r.end);
            }
        }
        let mut ends: Vec<_> = conn_ends.into_iter().collect();
        ends.sort_by_key(|(c, _)| *c);
        for (conn, (client, server, mark)) in ends {
            timeline.push(
                mark.time,
                HttpEvent::ConnectionEnd {
                    conn,
                    client,
                    server,
                    kind: ConnKind::Http,
                    mark,
                },
            );
        }

        self.lacks(&mut caps, flavor, may_be_streams);
        report.warnings =
            std::mem::replace(&mut self.warnings, Warnings::new(0)).finish("malformed lines");
        (report, caps, timeline)
    }

    fn lacks(&self, caps: &mut Capabilities, flavor: LogFlavor, streams: u64) {
        let lacks = &mut caps.lacks;
        lacks.push(
            "request and response bodies: an access log keeps no content, so no JSON-RPC messages \
             and no SSE events; replays, skipped event ranges and duplicate events are not \
             determinable (the event-ID scheme can still be inferred from logged Last-Event-ID values)"
                .into(),
        );
        if streams > 0 {
            lacks.push(format!(
                "the SSE events of {streams} responses that are or may be event streams"
            ));
        }
        if flavor != LogFlavor::Caddy {
            let list = |s: &BTreeSet<String>| {
                if s.is_empty() {
                    "none".to_string()
                } else {
                    s.iter().cloned().collect::<Vec<_>>().join(", ")
                }
            };
            lacks.push(format!(
                "every header except the logged ones (requests: {}; responses: {})",
                list(&self.req_header_names),
                list(&self.resp_header_names)
            ));
            let missing: Vec<&str> = [
                (
                    "mcp-session-id",
                    true,
                    "Mcp-Session-Id on requests (sessions cannot be rebuilt)",
                ),
                (
                    "mcp-session-id",
                    false,
                    "Mcp-Session-Id on responses (session assignment and changes)",
                ),
                (
                    "last-event-id",
                    true,
                    "Last-Event-ID on requests (resume attempts)",
                ),
                (
                    "accept",
                    true,
                    "Accept on requests (which streams the client asked for)",
                ),
                (
                    "content-type",
                    false,
                    "Content-Type on responses (which responses were SSE streams)",
                ),
            ]
            .into_iter()
            .filter(|(h, req, _)| {
                if *req {
                    !self.req_header_names.contains(*h)
                } else {
                    !self.resp_header_names.contains(*h)
                }
            })
            .map(|(_, _, what)| what)
            .collect();
            if !missing.is_empty() {
                lacks.push(format!(
                    "headers MCP analysis needs that this log does not carry: {}",
                    missing.join("; ")
                ));
            }
        }
        lacks.push(if self.head_measured {
            "when each response began: estimated from the upstream's header time".into()
        } else {
            "when each response began: taken as the request's start (estimated)".into()
        });
        if !self.start_logged {
            lacks.push(if self.all_durations {
                "when each request began: the log is written at the end, so start = end − duration".into()
            } else if self.any_duration {
                "when some requests began (no duration on their line): their start is taken as their end".into()
            } else {
                "when requests began (no duration field): each start is taken as its end".into()
            });
        }
        if self.coarse_times {
            lacks.push("sub-second times: the time field has whole seconds (log $msec)".into());
        }
        if !caps.response_end_known {
            lacks.push(
                "how responses ended: a stream the client dropped looks complete unless the \
                 status says otherwise (499, 0); log nginx $request_completion or Envoy \
                 %RESPONSE_FLAGS% to know"
                    .into(),
            );
        }
        if !caps.client_addresses {
            lacks.push("client addresses and ports of some or all requests".into());
        }
        if !caps.connections {
            lacks.push("which requests shared a TCP connection (no connection id logged)".into());
        }
        lacks.push(
            "TCP-level evidence (packets, retransmissions, gaps, resets): an access log has one line per request"
                .into(),
        );
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Request,
    Response,
}

/// Header names whose bare (or `x-` prefixed) key is read as a request header.
const KNOWN_HEADERS: &[&str] = &[
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "accept",
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "user-agent",
    "authorization",
    "cookie",
    "set-cookie",
    "host",
    "origin",
    "cache-control",
    "connection",
    "x-accel-buffering",
    "x-forwarded-for",
    "x-request-id",
];

fn known_header(name: &str) -> Option<String> {
    if KNOWN_HEADERS.contains(&name) {
        return Some(name.to_string());
    }
    // `x-mcp-session-id` and the like: a key named after the MCP header.
    let bare = name.strip_prefix("x-")?;
    (bare.starts_with("mcp-") || bare == "last-event-id")
        .then(|| KNOWN_HEADERS.contains(&bare).then(|| bare.to_string()))
        .flatten()
}

/// Which header a log key names, if any.
fn header_of_key(key: &str, flavor: LogFlavor) -> Option<(Side, String)> {
    let k = key.to_ascii_lowercase().replace('_', "-");
    if flavor == LogFlavor::Nginx {
        if let Some(h) = k.strip_prefix("sent-http-") {
            return Some((Side::Response, h.to_string()));
        }
        // upstream_http_* is what the upstream sent nginx, not what the client got.
        if k.starts_with("upstream-http-") {
            return None;
        }
        if let Some(h) = k.strip_prefix("http-") {
            return Some((Side::Request, h.to_string()));
        }
        return match k.as_str() {
            "content-type" | "content-length" => Some((Side::Request, k)),
            _ => None,
        };
    }
    for (prefix, side) in [
        ("req-header-", Side::Request),
        ("request-header-", Side::Request),
        ("resp-header-", Side::Response),
        ("response-header-", Side::Response),
        ("req-", Side::Request),
        ("resp-", Side::Response),
    ] {
        if let Some(h) = k.strip_prefix(prefix) {
            return Some((side, h.to_string()));
        }
    }
    for (prefix, side) in [("request-", Side::Request), ("response-", Side::Response)] {
        if let Some(h) = k.strip_prefix(prefix).and_then(known_header) {
            return Some((side, h));
        }
    }
    match k.as_str() {
        // Envoy's default JSON keys that hold request headers.
        "user-agent" => return Some((Side::Request, k)),
        "x-forwarded-for" => return Some((Side::Request, k)),
        "request-id" => return Some((Side::Request, "x-request-id".into())),
        _ => {}
    }
    if let Some(h) = known_header(&k) {
        return Some((Side::Request, h));
    }
    // A key spelled like a header (Envoy keys never hold a dash).
    (key.contains('-') && !key.starts_with(':')).then_some((Side::Request, k))
}

/// Values of a logged header: empty, `-` and null mean the header was not sent.
fn header_values(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().flat_map(header_values).collect(),
        Value::Null => Vec::new(),
        other => match str_of(other) {
            Some(s) if !s.is_empty() && s != "-" => vec![s],
            _ => Vec::new(),
        },
    }
}

/// A map of header name → value or array of values (Caddy's `request.headers`).
fn header_map(v: Option<&Value>) -> Headers {
    let mut out = Vec::new();
    if let Some(obj) = v.and_then(Value::as_object) {
        for (name, v) in obj {
            for value in header_values(v) {
                out.push((name.clone(), value));
            }
        }
    }
    Headers(out)
}

fn str_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn lookup<'v>(obj: &'v Map<String, Value>, field: &str) -> Option<&'v Value> {
    if let Some(v) = obj.get(field) {
        return Some(v);
    }
    let mut parts = field.split('.');
    let mut cur = obj.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_object()?.get(p)?;
    }
    Some(cur)
}

fn parse_status(v: &Value) -> Option<u16> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn version_of(proto: Option<&str>) -> u8 {
    match proto.map(str::trim) {
        Some(p) if p.eq_ignore_ascii_case("HTTP/1.0") => 0,
        _ => 1,
    }
}

fn head_time(start: Timestamp, end: Timestamp, header_time: Option<i64>) -> Timestamp {
    start
        .add_nanos(header_time.unwrap_or(0))
        .clamp(start, end.max(start))
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_start_matches('[').trim_end_matches(']');
    s.parse().ok()
}

fn addr(ip: Option<&str>, port: Option<&str>) -> Option<SocketAddr> {
    let ip = parse_ip(ip?)?;
    let port = port.and_then(|p| p.trim().parse().ok()).unwrap_or(0);
    Some(SocketAddr::new(ip, port))
}

/// `ip:port`, `[v6]:port` (Envoy addresses), or a bare IP.
fn socket_addr(s: &str) -> Option<SocketAddr> {
    let s = s.trim();
    s.parse()
        .ok()
        .or_else(|| parse_ip(s).map(|ip| SocketAddr::new(ip, 0)))
}

/// A time: Unix epoch (seconds, or ms/µs/ns judged by magnitude) as a number or a string, ISO
/// 8601, nginx `$time_local` (`30/Nov/2026:04:36:05 +0000`) or `YYYY-MM-DD HH:MM:SS[.f]`.
pub(crate) fn parse_time(v: &Value) -> Option<Timestamp> {
    match v {
        Value::Number(n) => match n.as_i64() {
            Some(i) => Some(epoch_int(i)),
            None => n.as_f64().map(epoch_float),
        },
        Value::String(s) => {
            let s = s.trim();
            if s.is_empty() || s == "-" {
                return None;
            }
            if let Ok(i) = s.parse::<i64>() {
                return Some(epoch_int(i));
            }
            if let Ok(f) = s.parse::<f64>() {
                return epoch_decimal(s, epoch_unit(f)).or(Some(epoch_float(f)));
            }
            Timestamp::parse_rfc3339(s)
                .or_else(|| time_local(s))
                .or_else(|| space_separated(s))
        }
        _ => None,
    }
}

/// Nanoseconds per unit of an epoch value judged by its magnitude: s, ms, µs or ns.
fn epoch_unit(v: f64) -> i64 {
    let a = v.abs();
    if a >= 1e17 {
        1
    } else if a >= 1e14 {
        1_000
    } else if a >= 1e11 {
        1_000_000
    } else {
        1_000_000_000
    }
}

fn epoch_int(i: i64) -> Timestamp {
    Timestamp(i.saturating_mul(epoch_unit(i as f64)))
}

fn epoch_float(f: f64) -> Timestamp {
    epoch_scaled(f, epoch_unit(f))
}

/// nginx `$time_local`: `30/Nov/2026:04:36:05 +0000`.
fn time_local(s: &str) -> Option<Timestamp> {
    let (date, rest) = s.split_once(':')?;
    let mut d = date.split('/');
    let (day, mon, year) = (d.next()?, d.next()?, d.next()?);
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let m = months.iter().position(|x| x.eq_ignore_ascii_case(mon))? + 1;
    let (clock, zone) = rest.split_once(' ').unwrap_or((rest, "+0000"));
    let zone = zone.trim();
    let zone = if zone.len() == 5 && zone.is_ascii() {
        format!("{}:{}", &zone[..3], &zone[3..])
    } else {
        "Z".to_string()
    };
    let day: u32 = day.parse().ok()?;
    Timestamp::parse_rfc3339(&format!("{year}-{m:02}-{day:02}T{clock}{zone}"))
}

/// `2026-11-30 04:36:05.123` or `2026/11/30 04:36:05.123` (Caddy's `wall_milli`), UTC when no
/// offset is given.
fn space_separated(s: &str) -> Option<Timestamp> {
    let (date, time) = s.split_once(' ')?;
    let time = time.trim();
    let has_zone =
        time.ends_with('Z') || time.contains('+') || time.chars().skip(1).any(|c| c == '-');
    let text = format!(
        "{}T{time}{}",
        date.replace('/', "-"),
        if has_zone { "" } else { "Z" }
    );
    Timestamp::parse_rfc3339(&text.replace(' ', ""))
}

/// A duration in nanoseconds: a number or numeric string in `unit`, a sum of nginx's
/// per-upstream lists (`0.001, 0.002 : 0.003`), or a Go duration string (`1.5ms`, `2m3s`).
fn parse_duration(v: &Value, unit: DurationUnit) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_f64().map(|f| unit.to_ns(f)),
        Value::String(s) => {
            let s = s.trim();
            if let Ok(f) = s.parse::<f64>() {
                return Some(unit.to_ns(f));
            }
            let parts: Vec<&str> = s
                .split([',', ':'])
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            if parts.len() > 1 {
                let nums: Vec<f64> = parts.iter().filter_map(|p| p.parse().ok()).collect();
                if !nums.is_empty() {
                    return Some(
                        nums.iter()
                            .fold(0i64, |acc, f| acc.saturating_add(unit.to_ns(*f))),
                    );
                }
                return None;
            }
            go_duration(s)
        }
        _ => None,
    }
}

/// Caddy's `duration`: float seconds by default, integer nanoseconds with
/// `duration_format nanoseconds`, or a Go duration string.
fn caddy_duration(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) if n.is_u64() && n.as_u64().is_some_and(|x| x >= 1_000_000) => {
            n.as_u64().map(|x| x.min(i64::MAX as u64) as i64)
        }
        _ => parse_duration(v, DurationUnit::Seconds),
    }
}

fn go_duration(s: &str) -> Option<i64> {
    let mut total = 0f64;
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3.6e12,
            "m" => 6e10,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" | "μs" => 1e3,
            "ns" => 1.0,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    Some(total.round() as i64)
}

/// Envoy `%RESPONSE_FLAGS%`: `-`, `DC`, `UC,URX`, or long names (`%RESPONSE_FLAGS_LONG%`).
fn envoy_flags(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty() && *f != "-")
        .map(|f| {
            match f {
                "DownstreamConnectionTermination" => "DC",
                "UpstreamConnectionTermination" => "UC",
                "UpstreamRequestTimeout" => "UT",
                "StreamIdleTimeout" => "SI",
                "LocalReset" => "LR",
                "UpstreamRemoteReset" => "UR",
                "DurationTimeout" => "DT",
                "UpstreamMaxStreamDurationReached" => "UMSDR",
                "NoRouteFound" => "NR",
                "UpstreamConnectionFailure" => "UF",
                "NoHealthyUpstream" => "UH",
                other => other,
            }
            .to_string()
        })
        .collect()
}

fn envoy_flag_meaning(f: &str) -> Option<&'static str> {
    Some(match f {
        "DC" => "downstream connection termination",
        "UC" => "upstream connection termination",
        "UT" => "upstream request timeout",
        "SI" => "stream idle timeout",
        "LR" => "connection local reset",
        "UR" => "upstream remote reset",
        "DT" => "max duration reached",
        "UMSDR" => "upstream max stream duration reached",
        "UF" => "upstream connection failure",
        "UH" => "no healthy upstream",
        "UO" => "upstream overflow",
        "URX" => "upstream retry limit exceeded",
        "NR" => "no route",
        "RL" => "rate limited",
        "DPE" => "downstream protocol error",
        "UPE" => "upstream protocol error",
        _ => return None,
    })
}

/// How Envoy's flags and response code end the exchange as the client saw it.
fn envoy_ending(flags: &[String], status: u16) -> Ending {
    let has = |f: &str| flags.iter().any(|x| x == f);
    if has("DC") {
        return if status == 0 {
            Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        } else {
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        };
    }
    let server_cut = ["UC", "SI", "LR", "UR", "DT", "UMSDR"]
        .iter()
        .any(|f| has(f));
    if status == 0 {
        return Ending::NoResponse(
            Outcome::ClosedEarly,
            server_cut.then_some(Direction::ServerToClient),
        );
    }
    // A status Envoy generated itself (503, 504, 408) reached the client whole.
    if server_cut && status < 400 {
        return Ending::Cut(Outcome::ClosedEarly, Some(Direction::ServerToClient));
    }
    Ending::Complete
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_in_every_shape() {
        let t = Timestamp::parse_rfc3339("2026-11-30T04:36:05.789Z").unwrap();
        assert_eq!(parse_time(&json!("1796013365.789")), Some(t));
        assert_eq!(
            parse_time(&json!(1_796_013_365.789)).map(|x| x.0 / 1_000_000),
            Some(t.0 / 1_000_000)
        );
        assert_eq!(parse_time(&json!(1_796_013_365_789i64)), Some(t));
        assert_eq!(parse_time(&json!("2026-11-30T04:36:05.789Z")), Some(t));
        assert_eq!(parse_time(&json!("2026-11-30 04:36:05.789")), Some(t));
        assert_eq!(parse_time(&json!("2026/11/30 04:36:05.789")), Some(t));
        assert_eq!(parse_time(&json!("x é")), None);
        assert_eq!(
            parse_time(&json!("30/Nov/2026:05:36:05 +0100")),
            Timestamp::parse_rfc3339("2026-11-30T04:36:05Z")
        );
        assert_eq!(parse_time(&json!("-")), None);
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration(&json!("1.503"), DurationUnit::Seconds),
            Some(1_503_000_000)
        );
        assert_eq!(
            parse_duration(&json!(1503), DurationUnit::Millis),
            Some(1_503_000_000)
        );
        assert_eq!(
            parse_duration(&json!("0.001, 0.002 : 0.003"), DurationUnit::Seconds),
            Some(6_000_000)
        );
        assert_eq!(
            parse_duration(&json!("1m2.5s"), DurationUnit::Seconds),
            Some(62_500_000_000)
        );
        assert_eq!(
            parse_duration(&json!("250µs"), DurationUnit::Seconds),
            Some(250_000)
        );
        assert_eq!(parse_duration(&json!("-"), DurationUnit::Seconds), None);
        assert_eq!(caddy_duration(&json!(0.000024323)), Some(24_323));
        assert_eq!(
            caddy_duration(&json!(1_500_000_000u64)),
            Some(1_500_000_000)
        );
    }

    #[test]
    fn header_keys() {
        use LogFlavor::*;
        assert_eq!(
            header_of_key("http_mcp_session_id", Nginx),
            Some((Side::Request, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("sent_http_content_type", Nginx),
            Some((Side::Response, "content-type".into()))
        );
        assert_eq!(
            header_of_key("upstream_http_x_accel_buffering", Nginx),
            None
        );
        assert_eq!(header_of_key("request_time", Nginx), None);
        assert_eq!(
            header_of_key("content_type", Nginx),
            Some((Side::Request, "content-type".into()))
        );
        assert_eq!(
            header_of_key("req_mcp_session_id", Envoy),
            Some((Side::Request, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("resp_mcp_session_id", Envoy),
            Some((Side::Response, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("x-mcp-session-id", Envoy),
            Some((Side::Request, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("response_mcp_session_id", Envoy),
            Some((Side::Response, "mcp-session-id".into()))
        );
        assert_eq!(
            header_of_key("last_event_id", Envoy),
            Some((Side::Request, "last-event-id".into()))
        );
        assert_eq!(header_of_key("response_code", Envoy), None);
        assert_eq!(
            header_of_key("request_id", Envoy),
            Some((Side::Request, "x-request-id".into()))
        );
        assert_eq!(header_of_key("duration", Envoy), None);
    }

    #[test]
    fn envoy_endings() {
        let f = |s: &str| envoy_flags(s);
        assert_eq!(
            envoy_ending(&f("DC"), 0),
            Ending::NoResponse(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(
            envoy_ending(&f("DC"), 200),
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(
            envoy_ending(&f("DownstreamConnectionTermination"), 200),
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ClientToServer))
        );
        assert_eq!(envoy_ending(&f("UC"), 503), Ending::Complete);
        assert_eq!(
            envoy_ending(&f("UC"), 200),
            Ending::Cut(Outcome::ClosedEarly, Some(Direction::ServerToClient))
        );
        assert_eq!(envoy_ending(&f("UT"), 504), Ending::Complete);
        assert_eq!(envoy_ending(&f("-"), 200), Ending::Complete);
    }

    #[test]
    fn log_map_forms() {
        let m = LogMap::parse(
            "time=ts,method=m,path=p,status=s,duration=d,duration_unit=ms,req.Mcp-Session-Id=sid",
        )
        .unwrap();
        assert_eq!(m.time.as_deref(), Some("ts"));
        assert_eq!(m.duration_unit, DurationUnit::Millis);
        assert_eq!(
            m.request_headers,
            [("mcp-session-id".to_string(), "sid".to_string())]
        );
        let j = LogMap::from_json(r#"{"start":"t","method":"m","path":"p","status":"s","response_headers":{"Mcp-Session-Id":"rsid"}}"#).unwrap();
        assert_eq!(
            j.response_headers,
            [("mcp-session-id".to_string(), "rsid".to_string())]
        );
        assert!(LogMap::parse("method=m").unwrap_err().contains("time"));
        assert!(
            LogMap::parse("time=t,method=m,path=p,status=s,colour=c")
                .unwrap_err()
                .contains("unknown key")
        );
    }
}
