//! A finding, how it is made (one constructor, [`Findings::add`]), and how detectors find each
//! other's findings: by kind and [`Subject`], never by a string.

use serde::Serialize;

use mcpf_mcp::jsonrpc::RequestId;
use mcpf_mcp::model::{Session, SessionIdx, StreamIdx, Vantage};
use mcpf_model::{FrameRef, Mark, WireMap};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::{Evidence, FindingKind};

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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
    /// A retried call, by the stream of the retry.
    Retry(StreamIdx),
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
    pub evidence: Evidence,
    pub caused_by: Vec<usize>,
    pub confidence: Confidence,
    pub confidence_note: Option<String>,
    pub subject: Subject,
    /// Labels kept so the finding can be reported after its session's records are dropped.
    pub labels: Labels,
    /// Where it was seen: the input and the server endpoint its session's exchanges reached
    /// there (a hop of a proxy, a replica).
    pub vantage: Vantage,
    /// The same finding as the session's other vantage points saw it, folded into this one.
    pub seen_at: Vec<SeenAt>,
    /// Set when this is another vantage point's sight of a finding stated once elsewhere: the
    /// handle it was folded into. Not reported on its own.
    pub folded_into: Option<usize>,
    /// Set when another vantage point of the session shows what this finding says is absent
    /// (an answer it never saw): not reported.
    pub withdrawn: bool,
}

/// A finding as another vantage point of its session saw it.
#[derive(Clone, Debug)]
pub struct SeenAt {
    pub vantage: Vantage,
    /// The observation's own session record (folded into the logical session's).
    pub session: SessionIdx,
    pub time: Mark,
    pub frames: Vec<Mark>,
    /// Its streams' labels there.
    pub streams: Vec<String>,
}

impl SeenAt {
    pub(crate) fn of(f: &Finding) -> SeenAt {
        SeenAt {
            vantage: f.vantage,
            session: f.session,
            time: f.time,
            frames: f.frames.clone(),
            streams: f.labels.stream_labels.clone(),
        }
    }
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
    /// The frames of the session whose findings are being added.
    frames: Option<(SessionIdx, HashSet<FrameRef>)>,
    /// Handles by session and kind, in creation order: what a detector naming a cause asks.
    by_kind: HashMap<(SessionIdx, FindingKind), Vec<usize>>,
    /// The first finding of each kind about each subject: 100,000 findings each naming the
    /// cause of another are not 100,000 scans of a kind's findings. Subjects hold request IDs
    /// from the wire.
    by_subject: WireMap<(SessionIdx, FindingKind, Subject), usize>,
}

/// What a detector says of a new finding.
pub struct New {
    pub kind: FindingKind,
    /// The kind's severity, unless the detector judged this one differently.
    pub severity: Severity,
    pub time: Mark,
    pub frames: Vec<Mark>,
    pub streams: Vec<StreamIdx>,
    pub summary: String,
    pub evidence: Evidence,
    pub caused_by: Vec<usize>,
    pub subject: Subject,
}

impl Findings {
    /// Adds a finding of session `s`; returns its handle. The one place findings are made,
    /// and so the one place that holds them to their session: a cause in another session is
    /// not a cause, and a frame no exchange of the session carried is not its evidence.
    pub fn add(&mut self, s: &Session, new: New) -> usize {
        let handle = self.list.len();
        let mut streams: Vec<StreamIdx> = Vec::with_capacity(new.streams.len());
        for &st in &new.streams {
            if st < s.streams.len() && !streams.contains(&st) {
                streams.push(st);
            }
        }
        // The note names a stream as often as the detector did.
        let (confidence, confidence_note) = confidence(s, new.kind, &new.streams);
        let own = self.frames_of(s);
        let mut frames: Vec<Mark> = new
            .frames
            .into_iter()
            .filter(|m| own.contains(&m.frame))
            .collect();
        frames.sort();
        frames.dedup();
        let caused_by = new
            .caused_by
            .into_iter()
            .filter(|&c| self.list.get(c).is_some_and(|f| f.session == s.idx))
            .collect();
        self.by_kind
            .entry((s.idx, new.kind))
            .or_default()
            .push(handle);
        self.by_subject
            .entry((s.idx, new.kind, new.subject.clone()))
            .or_insert(handle);
        self.list.push(Finding {
            handle,
            kind: new.kind,
            severity: new.severity,
            session: s.idx,
            time: new.time,
            frames,
            streams: streams.clone(),
            summary: new.summary,
            evidence: new.evidence,
            caused_by,
            confidence,
            confidence_note,
            subject: new.subject,
            labels: labels_of(s, &streams),
            vantage: s.vantage(),
            seen_at: Vec::new(),
            folded_into: None,
            withdrawn: false,
        });
        handle
    }

    /// The frames the exchanges of `s` were carried in (requests, response heads, ends, events),
    /// kept while findings of `s` are being added.
    fn frames_of(&mut self, s: &Session) -> &HashSet<FrameRef> {
        if self.frames.as_ref().is_some_and(|(idx, _)| *idx != s.idx) {
            self.frames = None;
        }
        let (_, set) = self
            .frames
            .get_or_insert_with(|| (s.idx, frames_carrying(s)));
        set
    }

    /// Findings of a kind in a session.
    /// `cause` becomes a cause of the findings of `kind` in `s` that rest on `stream`.
    pub(crate) fn name_as_cause(
        &mut self,
        s: &Session,
        kind: FindingKind,
        stream: StreamIdx,
        cause: usize,
    ) {
        self.update_resting_on(s, kind, stream, |f| {
            if !f.caused_by.contains(&cause) {
                f.caused_by.push(cause);
            }
        });
    }

    /// Runs `change` on each finding of `kind` in `s` that rests on `stream`.
    pub(crate) fn update_resting_on(
        &mut self,
        s: &Session,
        kind: FindingKind,
        stream: StreamIdx,
        mut change: impl FnMut(&mut Finding),
    ) {
        let Some(handles) = self.by_kind.get(&(s.idx, kind)) else {
            return;
        };
        for &h in handles {
            let f = &mut self.list[h];
            if f.streams.contains(&stream) {
                change(f);
            }
        }
    }

    pub fn of(&self, session: SessionIdx, kind: FindingKind) -> impl Iterator<Item = &Finding> {
        self.by_kind
            .get(&(session, kind))
            .into_iter()
            .flatten()
            .map(|&h| &self.list[h])
    }

    /// The handle of the finding of `kind` about `subject` in a session.
    pub fn find(&self, session: SessionIdx, kind: FindingKind, subject: &Subject) -> Option<usize> {
        self.by_subject
            .get(&(session, kind, subject.clone()))
            .copied()
    }
}

fn frames_carrying(s: &Session) -> HashSet<FrameRef> {
    let mut set = HashSet::default();
    for st in &s.streams {
        set.insert(st.opened.frame);
        set.extend(st.response_mark.map(|m| m.frame));
        set.extend(st.ended.map(|m| m.frame));
        set.extend(st.events.iter().map(|e| e.mark.frame));
    }
    set.insert(s.start.frame);
    set.insert(s.end.frame);
    set
}

/// Reduced when bytes are missing under a stream the finding rests on (a capture gap is itself
/// that loss), or when the input did not record a body it rests on.
fn confidence(
    s: &Session,
    kind: FindingKind,
    streams: &[StreamIdx],
) -> (Confidence, Option<String>) {
    let labels_where = |keep: fn(&mcpf_mcp::model::Stream) -> bool| -> Vec<String> {
        let mut labels: Vec<String> = Vec::new();
        for st in streams.iter().filter_map(|&i| s.streams.get(i)) {
            let label = st.label();
            if keep(st) && !labels.contains(&label) {
                labels.push(label);
            }
        }
        labels
    };
    let damaged = labels_where(|st| st.gap);
    let unknown = labels_where(|st| st.body_unknown);
    let two_versions = labels_where(|st| st.inconsistent_bytes > 0);
    if !damaged.is_empty() && kind != FindingKind::CaptureGap {
        // The snap length is named: what it cut is the end of packets, never a packet.
        let snaplen_only = streams
            .iter()
            .filter_map(|&i| s.streams.get(i))
            .filter(|st| st.gap)
            .all(|st| st.cut_by_snaplen_only());
        let note = if snaplen_only {
            format!(
                "the capture's snap length cut bytes of {} (what the heads and first bytes show is what it rests on)",
                damaged.join(", ")
            )
        } else {
            format!(
                "bytes are missing from the capture under {}",
                damaged.join(", ")
            )
        };
        (Confidence::Reduced, Some(note))
    } else if !two_versions.is_empty() {
        let note = format!(
            "TCP retransmitted bytes of {} with other content (the first copy was used)",
            two_versions.join(", ")
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
