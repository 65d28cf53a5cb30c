//! The JSON report (`docs/report-format.md`, schema version 1) as types: what the Markdown, the
//! HTML and the terminal report of a saved file render, read once from the document (or from
//! NDJSON records gathered into one, see [`crate::saved`]).
//!
//! Only the fields a renderer reads are modelled; serde skips the rest (`events`, counts,
//! accounting…). Every field takes its default when it is missing: within a schema version
//! fields are only ever added, so a report of an earlier 1.x release reads, and one of a later
//! release reads without what this build does not know.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use mcpf_detect::{Evidence, FindingKind, Severity};
use mcpf_model::FileFormat;

/// A report document: the top level of `analyze --format json`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Document {
    pub tool: Tool,
    pub inputs: Vec<Input>,
    pub summary: Summary,
    pub sessions: Vec<Session>,
    pub findings: Vec<Finding>,
    pub timeline: Vec<TimelineEntry>,
}

/// The program that wrote the report.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Tool {
    pub name: Option<String>,
    pub version: Option<String>,
}

/// One input of the run, in command-line order: its position is what every `input` field names.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Input {
    pub path: String,
    /// What the input was read as (`unknown` for a name this build does not know).
    #[serde(deserialize_with = "file_format")]
    pub format: FileFormat,
    /// Frames read (records, for a HAR or an access log).
    pub packets: u64,
    pub bytes: u64,
}

/// The counts over the whole run, of which the renderers read what limited it and the clocks.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// What an input format could not support, and the caps the run reached.
    pub limits: Vec<String>,
    pub clock_offsets: Vec<ClockOffset>,
}

/// How far one input's clock reads ahead of another's, measured on the sessions they share.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ClockOffset {
    /// The input nearer the server.
    pub far_input: usize,
    pub near_input: usize,
    /// The far clock minus the near one, in seconds; none when the bounds cross.
    pub estimate: Option<f64>,
}

/// One observation of an MCP session at one server endpoint.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Session {
    /// `S1`, `S2`, …: how the rest of the report names it.
    pub key: String,
    /// The `Mcp-Session-Id`; none for a stateless server.
    pub session_id: Option<String>,
    pub server: String,
    pub endpoint: String,
    pub client: String,
    pub transport: String,
    pub revision: Revision,
    pub client_info: Option<String>,
    pub start: String,
    pub end: String,
    pub event_id_scheme: String,
    pub fell_back: Option<FellBack>,
    pub resumption: Resumption,
    /// Other observations of the same session ID (the other leg of a proxy).
    pub same_session_as: Vec<String>,
    /// Every vantage point it was seen at, its own first, when more than one.
    pub vantage_points: Vec<VantagePoint>,
    /// Paths of the inputs it was seen in.
    pub sources: Vec<String>,
    pub streams: Vec<Stream>,
}

/// A vantage point of a logical session (an input, a server endpoint there) and what it saw.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct VantagePoint {
    pub observation: String,
    pub input: u64,
    pub server: String,
    pub streams: u64,
    pub events: u64,
}

/// The protocol revision a session is judged by.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Revision {
    pub date: Option<String>,
}

/// A session's first fallback.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FellBack {
    pub time: String,
}

/// Whether resuming the session's streams was safe.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Resumption {
    /// `safe`, `unsafe`, `not_attempted` or `unknown`.
    pub verdict: Option<String>,
    pub reason: Option<String>,
}

/// One HTTP exchange of a session, SSE or not.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Stream {
    /// The label `<transport>:s<n>`.
    pub id: String,
    /// `post`, `get` or `legacy-sse`.
    pub transport: String,
    pub method: String,
    pub target: String,
    pub opened: String,
    pub ended: Option<String>,
    /// How the response ended; none when no response started.
    pub outcome: Option<String>,
    pub closed_by: Option<String>,
    /// Methods of the JSON-RPC messages the client sent in it.
    pub methods: Vec<String>,
    /// SSE events delivered.
    pub events: u64,
    /// For a GET carrying `Last-Event-ID`: what it resumed.
    pub resume: Option<Resume>,
}

/// A `Last-Event-ID` resume.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Resume {
    pub last_event_id: String,
    /// The stream it continues, when that stream is in the inputs.
    pub continues: Option<String>,
}

/// A finding, its evidence read as its kind's type.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "RawFinding")]
pub struct Finding {
    /// `F1`, `F2`, …
    pub id: String,
    pub kind: Kind,
    /// None when the report names no severity this build knows.
    pub severity: Option<Severity>,
    /// The session's key.
    pub session: String,
    pub time: String,
    pub frames: Vec<u64>,
    pub frame_refs: Vec<FrameRef>,
    pub streams: Vec<String>,
    pub summary: String,
    /// None when the kind is unknown or its evidence does not read as the kind's: the finding
    /// still renders, without what the evidence would add.
    pub evidence: Option<Evidence>,
    /// The findings that explain this one.
    pub caused_by: Vec<String>,
    pub confidence_note: Option<String>,
    /// Where it was seen: the input and the server endpoint there.
    pub vantage: Option<Vantage>,
    /// The same finding at the session's other vantage points.
    pub seen_at: Vec<SeenAt>,
}

/// A vantage point: an input, and the server endpoint a session's exchanges reached there.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Vantage {
    pub input: u64,
    pub server: String,
}

/// A finding as another vantage point of its session saw it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SeenAt {
    pub input: u64,
    pub server: String,
    /// That vantage point's own session record, folded into the logical session's.
    pub observation: String,
    pub time: String,
    pub frame_refs: Vec<FrameRef>,
    pub streams: Vec<String>,
}

impl Finding {
    /// Its severity for ordering: one the report does not name counts as info.
    pub fn rank(&self) -> Severity {
        self.severity.unwrap_or(Severity::Info)
    }

    /// The severity's name, empty when the report names none this build knows.
    pub fn severity_name(&self) -> &'static str {
        self.severity.map_or("", Severity::name)
    }
}

/// A finding's kind: one this build knows, or the name of one it does not (a later release's),
/// shown as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Known(FindingKind),
    Unknown(String),
}

impl Kind {
    fn from_name(name: String) -> Kind {
        match FindingKind::from_name(&name) {
            Some(k) => Kind::Known(k),
            None => Kind::Unknown(name),
        }
    }

    /// The name as outputs spell it: `cross_namespace_replay`.
    pub fn name(&self) -> &str {
        match self {
            Kind::Known(k) => k.name(),
            Kind::Unknown(name) => name,
        }
    }

    pub fn known(&self) -> Option<FindingKind> {
        match self {
            Kind::Known(k) => Some(*k),
            Kind::Unknown(_) => None,
        }
    }
}

/// A frame with the index of its input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FrameRef {
    pub input: u64,
    pub frame: u64,
}

/// A finding as the JSON has it, before its kind and evidence are read as types.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RawFinding {
    id: String,
    kind: Option<String>,
    severity: Option<String>,
    session: String,
    time: String,
    frames: Vec<u64>,
    frame_refs: Vec<FrameRef>,
    streams: Vec<String>,
    summary: String,
    evidence: Value,
    caused_by: Vec<String>,
    confidence_note: Option<String>,
    vantage: Option<Vantage>,
    seen_at: Vec<SeenAt>,
}

impl From<RawFinding> for Finding {
    fn from(f: RawFinding) -> Finding {
        let kind = Kind::from_name(f.kind.unwrap_or_default());
        let evidence = kind
            .known()
            .and_then(|k| Evidence::from_json(k, f.evidence).ok());
        Finding {
            id: f.id,
            kind,
            severity: f.severity.as_deref().and_then(Severity::parse),
            session: f.session,
            time: f.time,
            frames: f.frames,
            frame_refs: f.frame_refs,
            streams: f.streams,
            summary: f.summary,
            evidence,
            caused_by: f.caused_by,
            confidence_note: f.confidence_note,
            vantage: f.vantage,
            seen_at: f.seen_at,
        }
    }
}

/// One row of the incident timeline.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TimelineEntry {
    pub time: String,
    pub frame: u64,
    /// The input of the frame.
    pub input: u32,
    /// The session's key.
    pub session: String,
    /// The stream; none on a finding row.
    pub stream: Option<String>,
    /// `c→s`, `s→c`, `c ✕`, `s ✕`, `…` or `▲` (a finding).
    pub direction: String,
    /// `request`, `resume`, `response`, `events`, `stream_end` or `finding`.
    pub kind: String,
    pub summary: String,
    /// The requests a row sent or answered, as the report wrote them.
    pub request_ids: Vec<serde_json::Value>,
    /// The first and the last event ID of a run of events.
    pub event_ids: Option<(String, String)>,
    /// The findings a finding row places.
    pub findings: Vec<String>,
}

impl Document {
    /// A document from its JSON text.
    pub fn from_json(json: &[u8]) -> serde_json::Result<Document> {
        serde_json::from_slice(json)
    }
}

/// An input's format from its name (`pcap`, `pcapng+gzip`, `har`, `nginx-log`…).
fn file_format<'de, D: Deserializer<'de>>(d: D) -> Result<FileFormat, D::Error> {
    let name = Option::<String>::deserialize(d)?;
    Ok(name.map_or_else(FileFormat::default, |n| FileFormat::from_name(&n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_reads_its_kind_and_evidence_as_types_and_tolerates_the_unknown() {
        let json = br#"{"findings":[
            {"id":"F1","kind":"unanswered_request","severity":"high","evidence":{"nope":1}},
            {"id":"F2","kind":"later_kind","severity":"grave","later_field":[1]},
            {"id":"F3"}
        ],"inputs":[{"path":"a.pcap.gz","format":"pcap+gzip"},{"path":"x.har"}]}"#;
        let d = Document::from_json(json).unwrap();
        let [f1, f2, f3] = &d.findings[..] else {
            panic!("{:?}", d.findings)
        };
        assert_eq!(f1.kind, Kind::Known(FindingKind::UnansweredRequest));
        assert_eq!(f1.severity, Some(Severity::High));
        assert_eq!(f1.evidence, None, "evidence not of its kind's shape");
        assert_eq!(f2.kind.name(), "later_kind");
        assert_eq!((f2.severity, f2.rank()), (None, Severity::Info));
        assert_eq!((f3.kind.name(), f3.severity_name()), ("", ""));
        assert!(d.inputs[0].format.is_capture());
        assert!(!d.inputs[1].format.is_capture());
    }
}
