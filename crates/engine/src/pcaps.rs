//! `analyze --write-pcap DIR`: after the run, one capture per session shown (every frame of the
//! TCP connections that carried its streams) and, when asked, one per finding shown (exactly the
//! frames it cites, at every vantage point), each written in a second pass over the capture
//! inputs (which must be files, to be read again).
//!
//! Names: `S1.pcap`, `F4.pcap`; with several capture inputs, one file per input that holds
//! frames of it, `S1.I2.pcap` (`I2` as every report names the second input). The extension is
//! the input's format: `.pcapng` from a pcapng input.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use mcpf_capture::carve::{self, ConnSpan, Target};
use mcpf_model::{ConnId, FrameRef, InputId};
use mcpf_report::analyze::Selection;

use crate::Run;

/// What `--write-pcap` asks for.
#[derive(Clone, Debug)]
pub struct PcapRequest {
    pub dir: PathBuf,
    /// A file per finding as well (`--write-pcap-per-finding`).
    pub per_finding: bool,
}

/// What was written, and what a person should know about it.
#[derive(Clone, Debug, Default)]
pub struct Written {
    pub files: u64,
    pub frames: u64,
    /// One line each: inputs that have no frames, inputs read more than once.
    pub notes: Vec<String>,
}

/// Writes the captures `request` asks for from the inputs at `paths` (the run's, in order).
/// `tunnels` are the run's `--tunnel` ports.
pub fn write_pcaps(
    run: &Run,
    sel: &Selection,
    paths: &[String],
    tunnels: &[mcpf_capture::tunnel::UdpTunnel],
    request: &PcapRequest,
) -> Result<Written, String> {
    let captures: Vec<bool> = run
        .report
        .inputs
        .iter()
        .map(|i| i.format.is_capture() && i.error.is_none())
        .collect();
    let mut plan = Plan::new(&request.dir, &captures);
    for (label, conns) in run.report.shown_session_connections(sel) {
        plan.session(&label, conns, &run.conn_spans);
    }
    if request.per_finding {
        for (id, frames) in run.report.shown_finding_frames(sel) {
            plan.finding(&id, &frames);
        }
    }
    let mut written = Written::default();
    written
        .notes
        .extend(not_captures(&run.report.inputs, &captures));
    for (input, targets) in plan.targets {
        let path = &paths[input as usize];
        let done = carve::carve(path, input, &targets, tunnels)?;
        written.files += done.files;
        written.frames += done.frames;
        if done.passes > 1 {
            written.notes.push(format!(
                "{path} was read {} times: {} files are written from it, {} at a time",
                done.passes,
                targets.len(),
                carve::MAX_OPEN_OUTPUTS
            ));
        }
    }
    Ok(written)
}

/// The note for inputs that are not captures (HAR files, logs): they have no frames to copy.
fn not_captures(inputs: &[mcpf_model::InputReport], captures: &[bool]) -> Option<String> {
    let skipped: Vec<&str> = inputs
        .iter()
        .zip(captures)
        .filter(|(_, c)| !**c)
        .map(|(i, _)| i.path.as_str())
        .collect();
    (!skipped.is_empty()).then(|| {
        format!(
            "--write-pcap: no frames to write from {} (not a capture, or not read)",
            skipped.join(", ")
        )
    })
}

/// The outputs of each capture input, named.
struct Plan<'a> {
    dir: &'a Path,
    captures: &'a [bool],
    /// Several capture inputs: each output is named after its input.
    several: bool,
    targets: BTreeMap<InputId, Vec<Target>>,
    /// Where each output is in its input's list, by input and name.
    index: HashMap<(InputId, String), usize>,
}

impl<'a> Plan<'a> {
    fn new(dir: &'a Path, captures: &'a [bool]) -> Self {
        Plan {
            dir,
            captures,
            several: captures.iter().filter(|c| **c).count() > 1,
            targets: BTreeMap::new(),
            index: HashMap::new(),
        }
    }

    /// The output named `name` of `input`, made when first asked for.
    fn target(&mut self, name: &str, input: InputId) -> Option<&mut Target> {
        if !self.captures.get(input as usize).copied().unwrap_or(false) {
            return None;
        }
        let stem = match self.several {
            true => format!("{name}.{}", mcpf_report::input_label(input)),
            false => name.to_string(),
        };
        let targets = self.targets.entry(input).or_default();
        let at = *self
            .index
            .entry((input, stem))
            .or_insert_with_key(|(_, stem)| {
                targets.push(Target {
                    stem: self.dir.join(stem),
                    ..Target::default()
                });
                targets.len() - 1
            });
        targets.get_mut(at)
    }

    /// A session's output: every frame of each TCP connection that carried its streams (those
    /// of a HAR file or log have no span, and no frames).
    fn session(&mut self, label: &str, conns: &[ConnId], spans: &[(ConnId, ConnSpan)]) {
        for conn in conns {
            let Ok(at) = spans.binary_search_by_key(conn, |(c, _)| *c) else {
                continue;
            };
            let span = spans[at].1;
            for input in self.inputs_of(&span) {
                if let Some(t) = self.target(label, input) {
                    t.conns.push(span);
                }
            }
        }
    }

    /// The inputs a connection has frames in: its own, or every capture input when the
    /// reassembler followed it across inputs (its span then bounds it by time).
    fn inputs_of(&self, span: &ConnSpan) -> Vec<InputId> {
        let (s, e) = (span.start.frame.input, span.end.frame.input);
        if s == e {
            return vec![s];
        }
        (0..self.captures.len() as InputId).collect()
    }

    /// A finding's output: the frames it cites, by input.
    fn finding(&mut self, id: &str, frames: &[FrameRef]) {
        for f in frames {
            if let Some(t) = self.target(id, f.input) {
                t.frames.push(f.frame);
            }
        }
    }
}
