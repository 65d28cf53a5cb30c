//! Frames copied out of a capture into smaller ones (`analyze --write-pcap`): a second pass over
//! an input the analysis already read, each frame written unchanged (time, bytes, captured and
//! wire lengths, link type) to every output that wants it. Frames are numbered by the same
//! reader the analysis used, so frame N here is the report's frame N of the input.
//!
//! Nothing is held but the outputs' write buffers: at most [`MAX_OPEN_OUTPUTS`] files are open,
//! and more outputs than that take more passes over the input.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use mcpf_model::{ConnId, FrameRef, InputId, Mark};

use crate::reader::{CaptureFormat, Frame, UNDECLARED_INTERFACE};
use crate::tcp::ConnSummary;
use crate::tunnel::UdpTunnel;
use crate::writer::{PcapNgWriter, PcapWriter};

/// Outputs open at once: each holds a file and a 64 KiB buffer, under any `ulimit -n`.
pub const MAX_OPEN_OUTPUTS: usize = 64;

/// Where a TCP connection's frames are: its endpoints, and its first and last frame. Its frames
/// are those between these endpoints (either way) from the first on, up to the next connection
/// between them in the same input: the reassembler's own grouping, so that a later connection
/// reusing the ports is another connection, and like Wireshark's `tcp.stream` the last ACK of a
/// close or a late retransmission (after what the reassembler counted as its end) is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnSpan {
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub start: Mark,
    pub end: Mark,
    /// The first frame of the next connection between the same endpoints in the input of `end`
    /// ([`link_successors`]).
    pub next: Option<FrameRef>,
}

impl ConnSpan {
    pub fn of(summary: &ConnSummary) -> Self {
        ConnSpan {
            client: summary.client,
            server: summary.server,
            start: summary.start,
            end: summary.end,
            next: None,
        }
    }

    /// Whether a frame between the connection's endpoints, at `m`, is one of its frames. Within
    /// one input the frame numbers decide (a clock that steps back does not move a frame out);
    /// a connection the reassembler followed across inputs (files of one rotated capture) is
    /// bounded by time as well in the inputs it spans.
    fn holds(&self, m: Mark) -> bool {
        let (s, e, f) = (self.start.frame, self.end.frame, m.frame);
        if s.input == e.input {
            let before_next = self.next.is_none_or(|n| f < n);
            return f.input == s.input && f.frame >= s.frame && (f.frame <= e.frame || before_next);
        }
        let in_time = (self.start.time..=self.end.time).contains(&m.time);
        in_time
            && (f.input != s.input || f.frame >= s.frame)
            && (f.input != e.input || f.frame <= e.frame)
    }

    /// The endpoints in one order whichever way a frame travels.
    fn key(&self) -> (SocketAddr, SocketAddr) {
        ordered(self.client, self.server)
    }
}

/// Sets each connection's [`ConnSpan::next`]: the start of the next one between the same
/// endpoints in the input it ended in.
pub fn link_successors(spans: &mut [(ConnId, ConnSpan)]) {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_unstable_by_key(|&i| (spans[i].1.key(), spans[i].1.start.frame));
    for pair in order.windows(2) {
        let (a, b) = (spans[pair[0]].1, spans[pair[1]].1);
        if a.key() == b.key() && a.end.frame.input == b.start.frame.input {
            spans[pair[0]].1.next = Some(b.start.frame);
        }
    }
}

fn ordered(a: SocketAddr, b: SocketAddr) -> (SocketAddr, SocketAddr) {
    if a <= b { (a, b) } else { (b, a) }
}

/// One output of an input: the frames it holds, by number and by connection.
#[derive(Clone, Debug, Default)]
pub struct Target {
    /// The path without its extension: `.pcap` or `.pcapng` is added as the input is.
    pub stem: PathBuf,
    /// Frame numbers of the input.
    pub frames: Vec<u64>,
    /// Connections all of whose frames go in.
    pub conns: Vec<ConnSpan>,
}

/// What was written from one input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Carved {
    /// Files written (an output that no frame went to is not created).
    pub files: u64,
    pub frames: u64,
    /// Passes over the input: more than one when it had more than [`MAX_OPEN_OUTPUTS`] outputs.
    pub passes: u64,
}

/// Writes the outputs of the capture at `path` (input `input` of the run), reading it once per
/// [`MAX_OPEN_OUTPUTS`] of them. `tunnels` are the run's `--tunnel` ports, so that a frame is
/// decoded down to the connection the analysis saw in it.
pub fn carve(
    path: &str,
    input: InputId,
    targets: &[Target],
    tunnels: &[UdpTunnel],
) -> Result<Carved, String> {
    let mut done = Carved::default();
    for batch in targets.chunks(MAX_OPEN_OUTPUTS) {
        let (files, frames) = carve_batch(path, input, batch, tunnels)?;
        done.files += files;
        done.frames += frames;
        done.passes += 1;
    }
    Ok(done)
}

/// One pass: the outputs of `batch`, all open at once.
fn carve_batch(
    path: &str,
    input: InputId,
    batch: &[Target],
    tunnels: &[UdpTunnel],
) -> Result<(u64, u64), String> {
    let mut capture = crate::open_capture(path, input).map_err(|e| e.message)?;
    let ng = capture.reader.format == CaptureFormat::PcapNg;
    let index = Index::new(batch);
    let mut outputs: Vec<Output> = batch.iter().map(|t| Output::new(&t.stem, ng)).collect();
    let mut wanted = Vec::new();
    loop {
        let frame = match capture.reader.next_frame() {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => return Err(format!("{path}: reading it again: {e}")),
        };
        index.wanted(&frame, tunnels, &mut wanted);
        for &i in &wanted {
            outputs[i].write(&frame).map_err(|e| outputs[i].error(e))?;
        }
    }
    let (mut files, mut frames) = (0, 0);
    for out in outputs {
        frames += out.frames;
        files += u64::from(out.finish()?);
    }
    Ok((files, frames))
}

/// Which outputs of a batch want a frame: by its number, or by the connection it is part of.
struct Index {
    by_frame: HashMap<u64, Vec<usize>>,
    by_endpoints: HashMap<(SocketAddr, SocketAddr), Vec<(usize, ConnSpan)>>,
}

impl Index {
    fn new(batch: &[Target]) -> Self {
        let mut index = Index {
            by_frame: HashMap::new(),
            by_endpoints: HashMap::new(),
        };
        for (i, t) in batch.iter().enumerate() {
            for &n in &t.frames {
                index.by_frame.entry(n).or_default().push(i);
            }
            for c in &t.conns {
                index.by_endpoints.entry(c.key()).or_default().push((i, *c));
            }
        }
        index
    }

    /// The outputs that want `frame`, each once, into `out`.
    fn wanted(&self, frame: &Frame<'_>, tunnels: &[UdpTunnel], out: &mut Vec<usize>) {
        out.clear();
        if let Some(v) = self.by_frame.get(&frame.frame.frame) {
            out.extend_from_slice(v);
        }
        // Decoding is the cost of a pass: only when a connection is asked for.
        if !self.by_endpoints.is_empty()
            && let Ok(decoded) = crate::decode::tcp_segment(frame.linktype, frame.data, tunnels)
            && let Some(v) = self
                .by_endpoints
                .get(&ordered(decoded.seg.src, decoded.seg.dst))
        {
            let m = Mark {
                time: frame.time,
                frame: frame.frame,
            };
            out.extend(v.iter().filter(|(_, c)| c.holds(m)).map(|(i, _)| *i));
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// The snap length the outputs declare: what tcpdump and Wireshark use by default.
const SNAPLEN: u32 = 262_144;

/// An output file, created with the first frame written to it: a classic pcap (nanosecond
/// times) from a pcap input, whose frames share one link type; a pcapng from a pcapng input,
/// with an interface for each link type its frames have.
struct Output {
    path: PathBuf,
    ng: bool,
    sink: Option<Sink>,
    frames: u64,
}

enum Sink {
    Pcap(PcapWriter<BufWriter<File>>),
    /// The writer, and the link type of each interface declared.
    Ng(PcapNgWriter<BufWriter<File>>, Vec<i32>),
}

impl Output {
    fn new(stem: &Path, ng: bool) -> Self {
        let mut path = stem.as_os_str().to_owned();
        path.push(if ng { ".pcapng" } else { ".pcap" });
        Output {
            path: PathBuf::from(path),
            ng,
            sink: None,
            frames: 0,
        }
    }

    fn write(&mut self, frame: &Frame<'_>) -> io::Result<()> {
        // A packet of an interface the file never declared has no link type to write it with.
        if frame.linktype == UNDECLARED_INTERFACE {
            return Ok(());
        }
        let sink = match &mut self.sink {
            Some(sink) => sink,
            None => self
                .sink
                .insert(create(&self.path, self.ng, frame.linktype)?),
        };
        match sink {
            Sink::Pcap(w) => w.packet(frame.time, frame.data, frame.orig_len)?,
            Sink::Ng(w, interfaces) => {
                let id = match interfaces.iter().position(|&l| l == frame.linktype) {
                    Some(id) => id as u32,
                    None => {
                        interfaces.push(frame.linktype);
                        w.interface(frame.linktype, SNAPLEN, 9)?
                    }
                };
                w.packet(id, frame.time, frame.data, frame.orig_len)?
            }
        }
        self.frames += 1;
        Ok(())
    }

    /// Flushes the file; whether there was one.
    fn finish(self) -> Result<bool, String> {
        let flushed = match self.sink {
            None => return Ok(false),
            Some(Sink::Pcap(w)) => w.into_inner().flush(),
            Some(Sink::Ng(w, _)) => w.into_inner().flush(),
        };
        let path = self.path.display().to_string();
        flushed.map_err(|e| format!("{path}: cannot write it: {e}"))?;
        Ok(true)
    }

    fn error(&self, e: io::Error) -> String {
        format!("{}: cannot write it: {e}", self.path.display())
    }
}

fn create(path: &Path, ng: bool, linktype: i32) -> io::Result<Sink> {
    let out = BufWriter::with_capacity(64 << 10, File::create(path)?);
    Ok(if ng {
        Sink::Ng(PcapNgWriter::new(out, false)?, Vec::new())
    } else {
        Sink::Pcap(PcapWriter::new(out, linktype, SNAPLEN, true, false)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpf_model::Timestamp;

    fn mark(input: InputId, frame: u64, secs: i64) -> Mark {
        Mark {
            time: Timestamp(secs * 1_000_000_000),
            frame: FrameRef::new(input, frame),
        }
    }

    fn span(start: Mark, end: Mark) -> ConnSpan {
        ConnSpan {
            client: "10.0.0.1:40000".parse().unwrap(),
            server: "10.0.0.2:80".parse().unwrap(),
            start,
            end,
            next: None,
        }
    }

    #[test]
    fn a_connection_in_one_input_is_its_frame_range() {
        let c = span(mark(0, 10, 5), mark(0, 20, 1));
        assert!(c.holds(mark(0, 10, 0)));
        assert!(
            c.holds(mark(0, 20, 9)),
            "times do not bound it within an input"
        );
        assert!(
            c.holds(mark(0, 21, 2)),
            "the last ACK after the close is the connection's"
        );
        assert!(!c.holds(mark(0, 9, 5)));
        assert!(
            !c.holds(mark(1, 15, 5)),
            "another input's frame 15 is not this one"
        );
    }

    #[test]
    fn a_connection_across_inputs_is_bounded_by_time_too() {
        let c = span(mark(0, 10, 5), mark(1, 3, 8));
        assert!(c.holds(mark(0, 11, 6)));
        assert!(c.holds(mark(1, 2, 7)));
        assert!(!c.holds(mark(0, 9, 5)));
        assert!(!c.holds(mark(1, 4, 8)));
        assert!(
            !c.holds(mark(0, 50, 9)),
            "after the connection's last frame"
        );
    }

    #[test]
    fn the_next_connection_between_the_same_endpoints_ends_the_last() {
        let mut spans = vec![
            (ConnId::tcp(0), span(mark(0, 1, 0), mark(0, 5, 1))),
            (ConnId::tcp(1), span(mark(0, 9, 2), mark(0, 12, 3))),
        ];
        link_successors(&mut spans);
        let (first, second) = (spans[0].1, spans[1].1);
        assert_eq!(first.next, Some(FrameRef::new(0, 9)));
        assert!(first.holds(mark(0, 8, 1)));
        assert!(!first.holds(mark(0, 9, 2)));
        assert!(second.holds(mark(0, 9, 2)) && second.next.is_none());
    }

    #[test]
    fn the_key_is_the_same_both_ways() {
        let c = span(mark(0, 1, 0), mark(0, 2, 0));
        assert_eq!(c.key(), ordered(c.server, c.client));
    }
}
