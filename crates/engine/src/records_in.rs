//! `analyze` on record files: the events extract runs wrote go to the session stage as the
//! stages before it would have handed them on, and the runs' counts come from the files, so the
//! report is the one the raw inputs give.
//!
//! Several files (the extract runs of several inputs, on several machines) are read as one run
//! over all their inputs, in the order a run over the inputs themselves takes them:
//! - the inputs are each file's, in the order the files are given;
//! - the events of captures are merged by the capture time their runs had reached (`at`), ties
//!   going to the earlier file, then the file's order (`seq`);
//! - the events of HAR files and logs come after them, input by input, as in a run over the
//!   inputs (they are matched with the captures, not merged with them);
//! - TCP connections are numbered again in the order they opened, as one reassembler over all
//!   the captures numbers them.

use std::collections::{BinaryHeap, HashMap};
use std::io::BufReader;
use std::net::SocketAddr;

use mcpf_http::{HttpEvent, HttpSink};
use mcpf_model::{ConnId, InputId, InputReport, Note, NoteKind, SourceFormat};
use mcpf_records::{Header, HttpRecord, Record, RecordError, RecordReader, RunStats};
use mcpf_report::analyze::SessionWriter;

use crate::analyze::{Run, Stages, assemble};
use crate::feed::{Fed, TcpLoss};
use crate::sessions::SessionStage;
use crate::{Engine, EngineError, Opened};

type Reader = RecordReader<BufReader<std::fs::File>>;

/// One record file being read.
struct Source {
    path: String,
    reader: Reader,
    /// The run's index of the file's input 0.
    offset: InputId,
    /// Which of the file's inputs are captures (their events are merged by time).
    captures: Vec<bool>,
    /// The file's next event, read ahead to be merged.
    next: Option<HttpRecord>,
    tail: Tail,
}

/// What reading a record file gave besides its events.
#[derive(Default)]
struct Tail {
    reports: Vec<InputReport>,
    capabilities: Vec<(InputId, mcpf_model::Capabilities)>,
    stats: Option<RunStats>,
    ended: bool,
    /// Where reading stopped short, and why.
    damage: Option<(u64, String)>,
}

impl Engine {
    /// Analyses the record files of `inputs` as one run.
    pub(crate) fn run_records(
        &self,
        inputs: Opened,
        writer: SessionWriter,
    ) -> Result<Run, EngineError> {
        only_records(&inputs)?;
        let mut sources = open_all(&inputs)?;
        let settings = self.settings();
        let (paths, formats) = run_inputs(&inputs);
        let mut sessions =
            SessionStage::new(settings, paths, formats, writer, settings.threads > 1);
        let conns = merge(&mut sources, &mut sessions);
        let mut damaged: Vec<Note> = sources.iter().filter_map(damage_note).collect();
        if conns.shared_tuples > 0 {
            damaged.push(Note::new(
                NoteKind::RecordsShareConnections,
                conns.shared_tuples,
            ));
        }
        let stages = stages(&inputs, sources, &conns, sessions);
        let mut run = assemble(stages, settings)?;
        run.report.limits.extend(damaged);
        Ok(run)
    }
}

/// Record files and nothing else: a raw input's events could not be put in wire order with the
/// records'.
fn only_records(inputs: &Opened) -> Result<(), EngineError> {
    let raw = inputs.captures.len() + inputs.others.len() + inputs.unreadable.len();
    if raw > 0 {
        let (one, _) = &inputs.records[0];
        return Err(EngineError::Inputs(format!(
            "{one}: record files are analysed on their own; extract the other inputs too (`mcp-forensics extract`)"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for (path, header) in &inputs.records {
        if let Some(twice) = header.inputs.iter().find(|i| !seen.insert(i.path.clone())) {
            return Err(EngineError::Inputs(format!(
                "{path}: {} was extracted into another of the record files given too; it would be analysed twice",
                twice.path
            )));
        }
    }
    Ok(())
}

/// Every record file opened past its header, with its first event read.
fn open_all(inputs: &Opened) -> Result<Vec<Source>, EngineError> {
    let mut offset = 0;
    let mut sources = Vec::with_capacity(inputs.records.len());
    for (path, header) in &inputs.records {
        let file =
            std::fs::File::open(path).map_err(|e| EngineError::Inputs(format!("{path}: {e}")))?;
        let (_, reader) = RecordReader::open(BufReader::with_capacity(1 << 16, file))
            .map_err(|e| EngineError::Inputs(format!("{path}: {e}")))?;
        let mut source = Source {
            path: path.clone(),
            reader,
            offset,
            captures: captures(header),
            next: None,
            tail: Tail::default(),
        };
        source.advance();
        offset += header.inputs.len() as InputId;
        sources.push(source);
    }
    Ok(sources)
}

fn captures(header: &Header) -> Vec<bool> {
    header
        .inputs
        .iter()
        .map(|i| i.source == SourceFormat::Capture)
        .collect()
}

/// The run's inputs: every file's, in order, by the names their extract runs gave them.
fn run_inputs(inputs: &Opened) -> (Vec<String>, Vec<SourceFormat>) {
    inputs
        .records
        .iter()
        .flat_map(|(_, h)| h.inputs.iter().map(|i| (i.path.clone(), i.source)))
        .unzip()
}

impl Source {
    /// Reads the next event; past the last one, the rest of the file into its tail.
    fn advance(&mut self) {
        self.next = None;
        while let Some(record) = self.reader.next() {
            match record {
                Ok(Record::Http(h)) => {
                    self.next = Some(h);
                    return;
                }
                Ok(Record::Capabilities(c)) => {
                    let mut caps = c.capabilities;
                    caps.lacks = c.lacks;
                    self.tail.capabilities.push((c.input + self.offset, caps));
                }
                Ok(Record::Input(mut r)) => {
                    r.index += self.offset;
                    self.tail.reports.push(r);
                }
                Ok(Record::Stats(s)) => self.tail.stats = Some(s),
                Ok(Record::End(_)) => self.tail.ended = true,
                Ok(Record::Header(_)) => {
                    let line = self.reader.line();
                    self.tail.damage = Some((line, "a second header".into()));
                    return;
                }
                Err(e) => {
                    self.tail.damage = Some(where_and_why(e, self.reader.line()));
                    return;
                }
            }
        }
    }

    /// Where the next event goes in the run's order.
    fn key(&self, file: usize) -> Option<Key> {
        let h = self.next.as_ref()?;
        let input = mcpf_records::remap::input_of(&h.event);
        let captured = input.is_none_or(|i| self.captures.get(i as usize).copied().unwrap_or(true));
        Some(if captured {
            Key(0, h.at.0, 0, file, h.seq)
        } else {
            let i = input.unwrap_or(0) + self.offset;
            Key(1, 0, i, file, h.seq)
        })
    }
}

/// An event's place: captures' events (0) by time, then the others' (1) by input; then file
/// and place in the file. Reversed, for the max-heap.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key(u8, i64, InputId, usize, u64);

/// Hands every event of every file to `sessions` in the run's order, renamed into the run.
fn merge(sources: &mut [Source], sessions: &mut SessionStage) -> Renumber {
    let mut heap: BinaryHeap<std::cmp::Reverse<Key>> = sources
        .iter()
        .enumerate()
        .filter_map(|(f, s)| s.key(f))
        .map(std::cmp::Reverse)
        .collect();
    let mut conns = Renumber::default();
    while let Some(std::cmp::Reverse(Key(.., file, _))) = heap.pop() {
        let source = &mut sources[file];
        let Some(mut record) = source.next.take() else {
            continue;
        };
        conns.rename(file, source.offset, &mut record.event);
        sessions.on_http(record.event);
        source.advance();
        if let Some(k) = source.key(file) {
            heap.push(std::cmp::Reverse(k));
        }
    }
    conns
}

/// The run's numbers of the files' TCP connections, given in the order they open.
#[derive(Default)]
struct Renumber {
    next: u64,
    /// (file, the file's number) → the run's.
    known: HashMap<(usize, u64), u64>,
    /// The file and open state of the last TCP connection of each 4-tuple.
    tuples: HashMap<(SocketAddr, SocketAddr), (usize, bool)>,
    /// Connections of one file open at once with a connection of another on the same 4-tuple.
    shared_tuples: u64,
}

impl Renumber {
    fn rename(&mut self, file: usize, offset: InputId, event: &mut HttpEvent) {
        self.watch_tuple(file, event);
        let opens = matches!(event, HttpEvent::ConnectionStart { .. });
        mcpf_records::remap::visit(
            event,
            |m| m.frame.input += offset,
            |c| *c = self.conn(file, offset, *c, opens),
        );
    }

    /// One link captured at two points gives each file the same connection: one run over the
    /// captures recognises the copies by their initial sequence numbers and reads them once,
    /// which the records cannot do (they do not carry them). Such files overlap on a 4-tuple.
    fn watch_tuple(&mut self, file: usize, event: &HttpEvent) {
        match event {
            HttpEvent::ConnectionStart {
                conn,
                client,
                server,
                ..
            } if conn.recorded_parts().is_none() => {
                let before = self.tuples.insert((*client, *server), (file, true));
                if matches!(before, Some((other, true)) if other != file) {
                    self.shared_tuples += 1;
                }
            }
            HttpEvent::ConnectionEnd {
                conn,
                client,
                server,
                ..
            } if conn.recorded_parts().is_none() => {
                if let Some(e) = self.tuples.get_mut(&(*client, *server))
                    && e.0 == file
                {
                    e.1 = false;
                }
            }
            _ => {}
        }
    }

    fn conn(&mut self, file: usize, offset: InputId, c: ConnId, opens: bool) -> ConnId {
        if let Some((input, n)) = c.recorded_parts() {
            return ConnId::recorded(input + offset, n);
        }
        let key = (file, c.number());
        if opens && self.known.contains_key(&key) {
            // The file reused a number (it should not): a new connection all the same.
            self.known.remove(&key);
        }
        let next = &mut self.next;
        let n = *self.known.entry(key).or_insert_with(|| {
            *next += 1;
            *next - 1
        });
        ConnId::tcp(n)
    }
}

fn where_and_why(e: RecordError, line: u64) -> (u64, String) {
    match e {
        RecordError::Line { line, message } => (line, message),
        RecordError::Io { line, source } => (line, source.to_string()),
        other => (line, other.to_string()),
    }
}

/// The limit a damaged or cut file adds to the report.
fn damage_note(source: &Source) -> Option<Note> {
    let kind = NoteKind::RecordsDamaged {
        path: source.path.clone(),
    };
    match &source.tail.damage {
        Some((line, why)) => Some(Note::new(kind, 1).at(*line).detail(why.clone())),
        None if !source.tail.ended => {
            let line = source.reader.line();
            Some(
                Note::new(kind, 1)
                    .at(line)
                    .detail("no end line: the file was cut"),
            )
        }
        None => None,
    }
}

/// What the stages before the session stage would have handed over, the files' counts added
/// up.
fn stages(
    inputs: &Opened,
    sources: Vec<Source>,
    conns: &Renumber,
    sessions: SessionStage,
) -> Stages<SessionStage> {
    let mut reports = Vec::new();
    let mut capabilities = Vec::new();
    let mut stats = RunStats::default();
    let mut tls: Option<mcpf_tls::TlsStats> = None;
    for (file, s) in sources.into_iter().enumerate() {
        reports.extend(s.tail.reports);
        capabilities.extend(s.tail.capabilities);
        let Some(st) = s.tail.stats else { continue };
        stats.http.merge(&st.http);
        stats.tcp.add(&st.tcp);
        stats.failed |= st.failed;
        if let Some(mut other) = st.tls {
            for a in &mut other.failures {
                a.mark.frame.input += s.offset;
                if let Some(&n) = conns.known.get(&(file, a.conn.number())) {
                    a.conn = ConnId::tcp(n);
                }
            }
            tls.get_or_insert_with(Default::default).merge(&other);
        }
    }
    if let Some(t) = &mut tls {
        t.order_failures();
    }
    // A file cut before its reports still lists every input it came from.
    let (paths, _) = run_inputs(inputs);
    for (index, path) in paths.into_iter().enumerate() {
        let index = index as InputId;
        if !reports.iter().any(|r| r.index == index) {
            reports.push(InputReport {
                index,
                path,
                ..InputReport::default()
            });
        }
    }
    reports.sort_by_key(|r| r.index);
    let tcp = TcpLoss::from_counts(&stats.tcp);
    Stages {
        fed: Fed {
            reports,
            capabilities,
            failed: stats.failed,
        },
        sessions,
        http: stats.http,
        tcp,
        tls,
        shard_work: String::new(),
    }
}
