//! What an input is and what it can support: its report in every output, why it could not be
//! opened, its format, and the evidence its format keeps or lacks (so findings that would rest
//! on missing evidence are not raised).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What one input contributed, as reported in every output format (the report writes it: its
/// warnings are notes, whose sentences are the report's).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InputReport {
    /// Position on the command line, from 0: what every other `input` field refers to.
    pub index: u32,
    pub path: String,
    pub format: FileFormat,
    pub packets: u64,
    pub bytes: u64,
    /// Packets not decoded down to TCP, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// What reading it skipped, cut or could not keep, and what its format lacks.
    pub warnings: Vec<crate::Note>,
    /// Where every packet and byte went (see [`crate::Accounting`]).
    pub accounting: crate::Accounting,
    /// Why the input could not be read at all; the rest of the entry is then empty.
    pub error: Option<String>,
    /// Keys of an access log read as another field than their name says (an nginx log whose
    /// operator named its keys): key → the field it was read as, a guess a person can check.
    pub read_as: BTreeMap<String, String>,
}

impl InputReport {
    /// The entry of an input that could not be opened or read.
    pub fn failed(index: u32, e: &OpenError) -> InputReport {
        InputReport {
            index,
            path: e.path.clone(),
            format: FileFormat::default(),
            error: Some(e.message.clone()),
            ..InputReport::default()
        }
    }
}

/// What an input file was read as, named in every output as `pcap`, `pcapng+gzip`, `har`,
/// `nginx-log`, … (`unknown` when it could not be read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileFormat {
    pub kind: FileKind,
    /// The file was gzip-compressed.
    pub gzip: bool,
}

/// The container an input was read as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileKind {
    /// Not read.
    #[default]
    Unknown,
    Pcap,
    PcapNg,
    Har,
    AccessLog(LogFlavor),
}

impl FileFormat {
    pub fn new(kind: FileKind) -> FileFormat {
        FileFormat { kind, gzip: false }
    }

    /// A packet capture: its frames are Wireshark's `frame.number`s (a HAR's or a log's are its
    /// entries or lines).
    pub fn is_capture(self) -> bool {
        matches!(self.kind, FileKind::Pcap | FileKind::PcapNg)
    }

    /// What its record numbers count: a capture's frames, a HAR's entries, a log's lines.
    pub fn unit(self) -> RecordUnit {
        match self.kind {
            FileKind::Har => RecordUnit::Entry,
            FileKind::AccessLog(_) => RecordUnit::Line,
            _ => RecordUnit::Frame,
        }
    }

    /// The kind's name, without the compression.
    pub fn kind_name(self) -> &'static str {
        match self.kind {
            FileKind::Unknown => "unknown",
            FileKind::Pcap => "pcap",
            FileKind::PcapNg => "pcapng",
            FileKind::Har => "har",
            FileKind::AccessLog(flavor) => flavor.name(),
        }
    }

    /// The format a name from [`FileFormat`]'s `Display` stands for (a saved report's).
    pub fn from_name(name: &str) -> FileFormat {
        let (base, gzip) = match name.strip_suffix("+gzip") {
            Some(base) => (base, true),
            None => (name, false),
        };
        let kind = match base {
            "pcap" => FileKind::Pcap,
            "pcapng" => FileKind::PcapNg,
            "har" => FileKind::Har,
            other => LogFlavor::ALL
                .into_iter()
                .find(|f| f.name() == other)
                .map_or(FileKind::Unknown, FileKind::AccessLog),
        };
        FileFormat { kind, gzip }
    }
}

impl std::fmt::Display for FileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind_name())?;
        if self.gzip {
            f.write_str("+gzip")?;
        }
        Ok(())
    }
}

impl Serialize for FileFormat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FileFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(FileFormat::from_name(&name))
    }
}

/// Why an input could not be opened at all.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}: {message}")]
pub struct OpenError {
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

/// What an input file holds, judged from its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    /// pcap or pcapng (plain or gzip): read by the capture stage.
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

impl<'de> Deserialize<'de> for SourceFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        match name.as_ref() {
            "capture" => Ok(SourceFormat::Capture),
            "har" => Ok(SourceFormat::Har),
            other => LogFlavor::ALL
                .into_iter()
                .find(|f| f.name() == other)
                .map(SourceFormat::AccessLog)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown source {other:?}"))),
        }
    }
}

/// How much of something the source recorded: `known` items are there, `unknown` ones were not
/// kept (stripped, not stored, never logged).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
/// for the report (which says what is in `lacks` in plain sentences).
#[derive(Clone, Debug, Serialize, Deserialize)]
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
    /// SSE event times were estimated for at least one stream (the SSE event's `estimated` flag).
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
    /// How precise its times are, in nanoseconds (a log of whole seconds: 10^9; of `$msec`:
    /// 10^6): two times closer than this cannot be told apart.
    pub time_resolution_ns: i64,
    /// What this input lacks, for the report (which says it in sentences).
    #[serde(skip)]
    pub lacks: Vec<crate::SourceLack>,
}

impl Capabilities {
    pub fn new(format: SourceFormat) -> Self {
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
            time_resolution_ns: 1_000_000,
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

/// Which server wrote the log (decides the field names and units).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFlavor {
    Nginx,
    Envoy,
    Caddy,
    /// A JSON `log-format` written by hand (HAProxy 2.6 has no JSON format of its own).
    Haproxy,
    /// Traefik's `accessLog.format: json`.
    Traefik,
    /// Fields named by a log map (`--log-map`).
    Mapped,
}

impl LogFlavor {
    pub const ALL: [LogFlavor; 6] = [
        LogFlavor::Nginx,
        LogFlavor::Envoy,
        LogFlavor::Caddy,
        LogFlavor::Haproxy,
        LogFlavor::Traefik,
        LogFlavor::Mapped,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LogFlavor::Nginx => "nginx-log",
            LogFlavor::Envoy => "envoy-log",
            LogFlavor::Caddy => "caddy-log",
            LogFlavor::Haproxy => "haproxy-log",
            LogFlavor::Traefik => "traefik-log",
            LogFlavor::Mapped => "mapped-log",
        }
    }
}

impl SourceFormat {
    /// A HAR file or an access log: exchanges as a recorder wrote them down, not as packets.
    pub fn is_recorded(self) -> bool {
        !matches!(self, SourceFormat::Capture)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

/// What an input's record numbers count, as every format words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordUnit {
    Frame,
    Entry,
    Line,
}

impl RecordUnit {
    /// `frame` / `frames`, `entry` / `entries`, `line` / `lines`.
    pub fn word(self, many: bool) -> &'static str {
        match (self, many) {
            (RecordUnit::Frame, false) => "frame",
            (RecordUnit::Frame, true) => "frames",
            (RecordUnit::Entry, false) => "entry",
            (RecordUnit::Entry, true) => "entries",
            (RecordUnit::Line, false) => "line",
            (RecordUnit::Line, true) => "lines",
        }
    }
}
