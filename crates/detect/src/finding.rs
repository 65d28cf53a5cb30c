//! A finding, how it is made (one constructor, [`Findings::add`]), and how detectors find each
//! other's findings: by kind and [`Subject`], never by a string.

use serde::Serialize;
use serde_json::Value;

use mcpf_mcp::jsonrpc::RequestId;
use mcpf_mcp::model::{Session, SessionIdx, StreamIdx};
use mcpf_model::Mark;

use crate::FindingKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Critical,
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        match s.to_ascii_lowercase().as_str() {
            "critical" => Some(Severity::Critical),
            "high" => Some(Severity::High),
            "medium" => Some(Severity::Medium),
            "low" => Some(Severity::Low),
            "info" => Some(Severity::Info),
            _ => None,
        }
    }

    /// Whether `self` is at least as severe as `other`.
    pub fn at_least(self, other: Severity) -> bool {
        self <= other
    }
}

/// Confidence in a finding: reduced when the evidence it rests on lost bytes in the capture or
/// comes from a source that lacks them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Normal,
    Reduced,
}

/// What a finding is about, so a later detector can name it as a cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A stream of the session, by index.
    Stream(StreamIdx),
    /// The stream a fallback went to.
    FallbackTo(StreamIdx),
    /// A resume (the stream that carried it).
    Resume(StreamIdx),
    /// The namespace a stream minted.
    Namespace(StreamIdx),
    /// A request ID of the session.
    Request(RequestId),
    /// A request ID reused on a stream.
    RequestOn(RequestId, StreamIdx),
    /// A retried call, by the session and stream of the retry.
    Retry {
        session: SessionIdx,
        stream: StreamIdx,
    },
}

#[derive(Clone, Debug)]
pub struct Finding {
    /// Position in creation order (an internal handle for `caused_by`).
    pub handle: usize,
    pub kind: FindingKind,
    pub severity: Severity,
    pub session: SessionIdx,
    pub time: Mark,
    /// Frames the finding rests on, in order.
    pub frames: Vec<Mark>,
    /// Streams (by index in the session) it rests on.
    pub streams: Vec<StreamIdx>,
    pub summary: String,
    pub evidence: Value,
    pub caused_by: Vec<usize>,
    pub confidence: Confidence,
    pub confidence_note: Option<String>,
    pub subject: Subject,
    /// Labels kept so the finding can be reported after its session's records are dropped.
    pub labels: Labels,
}

/// How a finding names its session, streams and exchanges in reports.
#[derive(Clone, Debug, Default)]
pub struct Labels {
    pub session_label: String,
    pub session_id: Option<String>,
    pub stream_labels: Vec<String>,
    pub exchanges: Vec<String>,
}

/// Findings of a run, in creation order.
#[derive(Debug, Default)]
pub struct Findings {
    pub list: Vec<Finding>,
}

/// What a detector says of a new finding.
pub struct New {
    pub kind: FindingKind,
    /// The kind's severity, unless the detector judged this one differently.
    pub severity: Severity,
    pub session: SessionIdx,
    pub time: Mark,
    pub frames: Vec<Mark>,
    pub streams: Vec<StreamIdx>,
    pub summary: String,
    pub evidence: Value,
    pub caused_by: Vec<usize>,
    pub subject: Subject,
}

/// Where a new finding's labels and confidence come from.
pub enum About<'a> {
    /// Its session, still at hand: its streams say whether bytes were lost under the finding.
    Session(&'a Session),
    /// A session already compacted (a detector that spans sessions): the caller gives the
    /// labels, and confidence stays normal.
    Compacted(Labels),
}

impl Findings {
    /// Adds a finding; returns its handle.
    pub fn add(&mut self, about: About<'_>, new: New) -> usize {
        let handle = self.list.len();
        let mut streams: Vec<StreamIdx> = Vec::with_capacity(new.streams.len());
        for &st in &new.streams {
            if !streams.contains(&st) {
                streams.push(st);
            }
        }
        let (confidence, confidence_note, labels) = match about {
            About::Session(s) => {
                // The note names a stream as often as the detector did.
                let (confidence, note) = confidence(s, new.kind, &new.streams);
                (confidence, note, labels_of(s, &streams))
            }
            About::Compacted(labels) => (Confidence::Normal, None, labels),
        };
        let mut frames = new.frames;
        frames.sort();
        frames.dedup();
        self.list.push(Finding {
            handle,
            kind: new.kind,
            severity: new.severity,
            session: new.session,
            time: new.time,
            frames,
            streams,
            summary: new.summary,
            evidence: new.evidence,
            caused_by: new.caused_by,
            confidence,
            confidence_note,
            subject: new.subject,
            labels,
        });
        handle
    }

    /// Findings of a kind in a session.
    pub fn of(&self, session: SessionIdx, kind: FindingKind) -> impl Iterator<Item = &Finding> {
        self.list
            .iter()
            .filter(move |f| f.session == session && f.kind == kind)
    }

    /// The handle of the finding of `kind` about `subject` in a session.
    pub fn find(&self, session: SessionIdx, kind: FindingKind, subject: &Subject) -> Option<usize> {
        self.of(session, kind)
            .find(|f| f.subject == *subject)
            .map(|f| f.handle)
    }
}

/// Reduced when bytes are missing under a stream the finding rests on (a capture gap is itself
/// that loss), or when the input did not record a body it rests on.
fn confidence(
    s: &Session,
    kind: FindingKind,
    streams: &[StreamIdx],
) -> (Confidence, Option<String>) {
    let labels_where = |keep: fn(&mcpf_mcp::model::Stream) -> bool| -> Vec<String> {
        streams
            .iter()
            .filter_map(|&i| s.streams.get(i))
            .filter(|st| keep(st))
            .map(|st| st.label())
            .collect()
    };
    let damaged = labels_where(|st| st.gap);
    let unknown = labels_where(|st| st.body_unknown);
    if !damaged.is_empty() && kind != FindingKind::CaptureGap {
        let note = format!(
            "bytes are missing from the capture under {}",
            damaged.join(", ")
        );
        (Confidence::Reduced, Some(note))
    } else if !unknown.is_empty() {
        let note = format!(
            "the input did not record the body of {}",
            unknown.join(", ")
        );
        (Confidence::Reduced, Some(note))
    } else {
        (Confidence::Normal, None)
    }
}

fn labels_of(s: &Session, streams: &[StreamIdx]) -> Labels {
    let named = streams.iter().filter_map(|&i| s.streams.get(i));
    Labels {
        session_label: s.label(),
        session_id: s.session_id.clone(),
        stream_labels: named.clone().map(|st| st.label()).collect(),
        exchanges: named.map(|st| st.exchange.to_string()).collect(),
    }
}
