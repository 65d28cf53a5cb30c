//! `analyze` on record files: the events an extract run wrote go to the session stage as the
//! stages before it would have handed them on, and the run's counts come from the file, so the
//! report is the one the raw inputs give.

use std::io::BufReader;

use mcpf_http::HttpSink;
use mcpf_model::{InputReport, Note, NoteKind};
use mcpf_records::{Header, Record, RecordError, RecordReader, RunStats};
use mcpf_report::analyze::SessionWriter;

use crate::analyze::{Run, Stages, assemble};
use crate::feed::{Fed, TcpLoss};
use crate::sessions::SessionStage;
use crate::{Engine, EngineError, Opened};

/// What reading the rest of a record file gave besides its events.
#[derive(Default)]
struct Tail {
    reports: Vec<InputReport>,
    capabilities: Vec<(u32, mcpf_model::Capabilities)>,
    stats: Option<RunStats>,
    ended: bool,
    /// Where reading stopped short, and why.
    damage: Option<(u64, String)>,
}

impl Engine {
    /// Analyses the record file of `inputs`.
    pub(crate) fn run_records(
        &self,
        inputs: Opened,
        writer: SessionWriter,
    ) -> Result<Run, EngineError> {
        let path = only_records(&inputs)?;
        let file =
            std::fs::File::open(&path).map_err(|e| EngineError::Inputs(format!("{path}: {e}")))?;
        let (header, reader) = RecordReader::open(BufReader::with_capacity(1 << 20, file))
            .map_err(|e| EngineError::Inputs(format!("{path}: {e}")))?;
        let settings = self.settings();
        let paths = header.inputs.iter().map(|i| i.path.clone()).collect();
        let sources = header.inputs.iter().map(|i| i.source).collect();
        let mut sessions =
            SessionStage::new(settings, paths, sources, writer, settings.threads > 1);
        let tail = feed(reader, &mut sessions);
        let damaged = damage_note(&path, &tail);
        let stages = stages(&header, tail, sessions);
        let mut run = assemble(stages, settings)?;
        run.report.limits.extend(damaged);
        Ok(run)
    }
}

/// The one record file of the run; anything else beside it is refused, since its events could
/// not be put in wire order with the records'.
fn only_records(inputs: &Opened) -> Result<String, EngineError> {
    let raw = inputs.captures.len() + inputs.others.len() + inputs.unreadable.len();
    match inputs.records.as_slice() {
        [(one, _)] if raw == 0 => Ok(one.clone()),
        [(one, _)] => Err(EngineError::Inputs(format!(
            "{one}: a record file is analysed on its own; extract the other inputs with it (`mcp-forensics extract`)"
        ))),
        many => Err(EngineError::Inputs(format!(
            "{} record files given: this build analyses one record file per run (extract the inputs together)",
            many.len()
        ))),
    }
}

/// Every event of the file to the session stage, in the file's order; the rest kept.
fn feed<R: std::io::BufRead>(mut reader: RecordReader<R>, sessions: &mut SessionStage) -> Tail {
    let mut tail = Tail::default();
    while let Some(record) = reader.next() {
        match record {
            Ok(Record::Http(h)) => sessions.on_http(h.event),
            Ok(Record::Capabilities(c)) => {
                let mut caps = c.capabilities;
                caps.lacks = c.lacks;
                tail.capabilities.push((c.input, caps));
            }
            Ok(Record::Input(r)) => tail.reports.push(r),
            Ok(Record::Stats(s)) => tail.stats = Some(s),
            Ok(Record::End(_)) => tail.ended = true,
            Ok(Record::Header(_)) => {
                tail.damage = Some((reader.line(), "a second header".into()));
                break;
            }
            Err(e) => {
                tail.damage = Some(where_and_why(e, reader.line()));
                break;
            }
        }
    }
    tail
}

fn where_and_why(e: RecordError, line: u64) -> (u64, String) {
    match e {
        RecordError::Line { line, message } => (line, message),
        RecordError::Io { line, source } => (line, source.to_string()),
        other => (line, other.to_string()),
    }
}

/// The limit a damaged or cut file adds to the report.
fn damage_note(path: &str, tail: &Tail) -> Option<Note> {
    let kind = NoteKind::RecordsDamaged {
        path: path.to_string(),
    };
    match &tail.damage {
        Some((line, why)) => Some(Note::new(kind, 1).at(*line).detail(why.clone())),
        None if !tail.ended => Some(
            Note::new(kind, 1)
                .at(0)
                .detail("no end line: the file was cut"),
        ),
        None => None,
    }
}

/// What the stages before the session stage would have handed over.
fn stages(header: &Header, tail: Tail, sessions: SessionStage) -> Stages<SessionStage> {
    let stats = tail.stats.unwrap_or_default();
    let mut reports = tail.reports;
    // A file cut before its reports still lists every input it came from.
    for input in &header.inputs {
        if !reports.iter().any(|r| r.index == input.index) {
            reports.push(InputReport {
                index: input.index,
                path: input.path.clone(),
                ..InputReport::default()
            });
        }
    }
    reports.sort_by_key(|r| r.index);
    let tcp = TcpLoss {
        connections: stats.tcp.connections,
        connections_with_gaps: stats.tcp.connections_with_gaps,
        gap_bytes: stats.tcp.gap_bytes,
        snaplen_bytes: stats.tcp.snaplen_bytes,
        ..TcpLoss::default()
    };
    Stages {
        fed: Fed {
            reports,
            capabilities: tail.capabilities,
            failed: stats.failed,
        },
        sessions,
        http: stats.http,
        tcp,
        tls: stats.tls,
        shard_work: String::new(),
    }
}
