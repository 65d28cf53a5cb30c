#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
//! Exchange records: the middle of the pipeline written to a file and read back.
//!
//! `mcp-forensics extract` runs the stages that depend on one input's bytes (capture, TLS,
//! HTTP/1.1 and HTTP/2, SSE) and writes what they hand to the MCP stage: every HTTP event in the
//! order the session stage takes it, each with the logical session key the wire names for it,
//! then what the run counted of each input. `analyze` reads such files as an input format and
//! gives the report the raw inputs give: the MCP stage, the detectors and the report run on the
//! same events. This is the interchange of a fleet's analysis (docs/records.md): records from
//! many hosts are grouped by session key and analysed where the data is.
//!
//! The format is NDJSON: one [`Record`] per line, a [`Header`] first and an [`End`] last (a file
//! without it was cut, and says so). Every record carries `"record"`, its kind. Bytes from the
//! wire are JSON strings when they are UTF-8 and `{"base64": …}` otherwise
//! ([`mcpf_model::wire_bytes`]). The layout is versioned by [`VERSION`]: a reader refuses a file
//! of another version rather than misread it.

mod keys;
mod read;
pub mod remap;
mod write;

use serde::{Deserialize, Serialize};

use mcpf_http::{HttpEvent, HttpStats};
use mcpf_model::{Capabilities, InputId, InputReport, SourceFormat, SourceLack, Timestamp};

pub use keys::SessionKeys;
pub use read::{RecordError, RecordReader, looks_like_records};
pub use write::RecordWriter;

/// What the first line of every record file names itself.
pub const FORMAT: &str = "mcp-forensics-records";

/// The layout of this build's records; bumped whenever a record's meaning or shape changes.
pub const VERSION: u32 = 1;

/// The longest line a reader takes: a record holds at most one body or event, which the HTTP
/// stage bounds far below this. A longer line is damage, not data.
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// One line of a record file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)]
pub enum Record {
    Header(Header),
    Http(HttpRecord),
    Capabilities(CapabilitiesRecord),
    /// What one input contributed, before the MCP stage moved the frames of connections that
    /// carried no MCP (that is the analysis's part).
    Input(InputReport),
    Stats(RunStats),
    End(End),
}

/// The first line: what wrote the file, from which inputs, with which settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] of the writer.
    pub version: u32,
    /// The program that wrote it (`mcp-forensics 0.1.0`).
    pub writer: String,
    /// The inputs the records came from, in the order of the extract run's command line: every
    /// `input` of a frame reference in the file is an index into it.
    pub inputs: Vec<InputEntry>,
    /// Secrets were redacted before the records were written (off with `--show-secrets`).
    pub redacted: bool,
    /// The run set aside connections whose first bytes showed they carry no MCP (off with
    /// `--examine-all`).
    pub classified: bool,
    /// A TLS key log was given.
    pub tls_key_log: bool,
}

/// One input an extract run read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InputEntry {
    pub index: InputId,
    pub path: String,
    pub source: SourceFormat,
}

/// An HTTP event, as the HTTP stage (or the ingest of a HAR file or log) made it.
#[derive(Debug, Serialize, Deserialize)]
pub struct HttpRecord {
    /// Its place among the file's events, from 0: the order the session stage takes them.
    pub seq: u64,
    /// The latest capture time the run had reached when it was made: never decreasing along a
    /// file, so events of several files are merged by it (then by file, then by `seq`).
    pub at: Timestamp,
    /// The logical session the wire names for its exchange (`Mcp-Session-Id`, or a legacy
    /// endpoint's `sessionId`), when it names one: what a fleet groups records by. Which
    /// session an exchange belongs to is still the MCP stage's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub event: HttpEvent,
}

/// What a HAR file or access log can and cannot support.
#[derive(Debug, Serialize, Deserialize)]
pub struct CapabilitiesRecord {
    pub input: InputId,
    pub capabilities: Capabilities,
    /// What the input lacks ([`Capabilities::lacks`], which the report's JSON does not carry).
    pub lacks: Vec<SourceLack>,
}

/// What the run counted besides the events.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunStats {
    pub http: HttpStats,
    pub tcp: TcpCounts,
    /// What the TLS layer decrypted, when a key log was given.
    pub tls: Option<mcpf_tls::TlsStats>,
    /// An input could not be read (its report says why).
    pub failed: bool,
}

/// What TCP reassembly lost.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct TcpCounts {
    pub connections: u64,
    pub connections_with_gaps: u64,
    pub gap_bytes: u64,
    pub snaplen_bytes: u64,
}

impl TcpCounts {
    /// Adds another run's counts (the files of a run over several record files).
    pub fn add(&mut self, other: &TcpCounts) {
        self.connections += other.connections;
        self.connections_with_gaps += other.connections_with_gaps;
        self.gap_bytes += other.gap_bytes;
        self.snaplen_bytes += other.snaplen_bytes;
    }
}

/// The last line: a file without it was cut short.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct End {
    /// HTTP records written.
    pub events: u64,
}

impl Header {
    /// A header of this build for `inputs`.
    pub fn new(writer: String, inputs: Vec<InputEntry>) -> Header {
        Header {
            format: FORMAT.to_string(),
            version: VERSION,
            writer,
            inputs,
            redacted: true,
            classified: true,
            tls_key_log: false,
        }
    }
}
