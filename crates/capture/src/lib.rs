#![forbid(unsafe_code)]
//! The capture stage: the only place that knows about packets.
//!
//! Opens pcap / pcapng inputs (plain or gzip, files or standard input), merges several inputs
//! into one time-ordered packet stream, decodes link layer, IP and TCP, and reassembles TCP into
//! byte streams reported as [`tcp::TcpEvent`]s. Every later stage sees bytes, gaps and closes,
//! never a packet.
//!
//! What is in it:
//! - [`open_capture`] and [`reader::CaptureReader`]: a streaming reader of pcap and pcapng (the
//!   format and gzip are told by magic bytes, never by the file name), one frame at a time out of
//!   one read buffer.
//! - [`CaptureStage`]: decodes each frame (the link types of [`decode::linktype`], inside the
//!   tunnels of [`tunnel`] when it came in one), drops a mirror's second copy of a frame
//!   (`duplicates`) and feeds the reassembler; [`run`] drives several inputs through it merged
//!   by time, and [`CaptureStage::report`] says per input what was read, skipped and why.
//! - [`tcp`]: what reassembly reports ([`tcp::TcpEvent`], [`tcp::ConnSummary`]), its
//!   [`tcp::Limits`] and counters. Loss is explicit: missing bytes become a gap of their exact
//!   size (saying whether the snap length cut them), never silently joined data; a
//!   retransmission that disagrees with the first copy is reported with both frames; a reused
//!   4-tuple is a new connection unless its segments fall in the old one's final window; data
//!   carries what its segment's ACK acknowledged of the other direction.
//! - [`writer`]: writes pcap and pcapng, for the tests and the benchmark capture generator.
//!
//! What it never does: parse what TCP carries (only the first bytes of a connection are looked
//! at, to tell the client from the server when the handshake was not captured), decrypt TLS,
//! reassemble IP fragments, or hold more of a capture in memory than one read buffer and the
//! out-of-order bytes its limits allow.
//!
//! # Example
//!
//! A capture written in memory, read back frame by frame and reassembled:
//!
//! ```
//! use std::io::Cursor;
//!
//! use mcpf_capture::decode::{TcpFlags, linktype};
//! use mcpf_capture::reader::CaptureReader;
//! use mcpf_capture::tcp::TcpEvent;
//! use mcpf_capture::writer::{PcapWriter, SegmentSpec, ip_packet, link_frame};
//! use mcpf_capture::{CaptureStage, Settings};
//! use mcpf_model::Timestamp;
//!
//! let client = "10.0.0.1:40000".parse()?;
//! let server = "10.0.0.2:8080".parse()?;
//! let request = b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n";
//! let response = b"HTTP/1.1 204 No Content\r\n\r\n";
//! let syn = TcpFlags { syn: true, ..TcpFlags::default() };
//! let syn_ack = TcpFlags { syn: true, ack: true, ..TcpFlags::default() };
//! let segments = [
//!     SegmentSpec::new(client, server, 100, 0, b"").flags(syn),
//!     SegmentSpec::new(server, client, 500, 101, b"").flags(syn_ack),
//!     SegmentSpec::new(client, server, 101, 501, request),
//!     SegmentSpec::new(server, client, 501, 101 + request.len() as u32, response),
//! ];
//! let mut writer = PcapWriter::new(Vec::new(), linktype::ETHERNET, 65_535, false, false)?;
//! for (i, spec) in segments.iter().enumerate() {
//!     let frame = link_frame(linktype::ETHERNET, &ip_packet(spec), &[]);
//!     let time = Timestamp::from_secs_nanos(1_700_000_000, i as u32 * 1_000_000);
//!     writer.packet(time, &frame, frame.len() as u32)?;
//! }
//! let pcap = writer.into_inner();
//!
//! let mut reader = CaptureReader::open(Box::new(Cursor::new(pcap)), 0)?;
//! let mut stage = CaptureStage::new(Settings::default(), 1);
//! let mut printed = Vec::new();
//! let mut sink = |event: TcpEvent<'_>| {
//!     let line = match event {
//!         TcpEvent::Opened { client, server, .. } => format!("opened {client} -> {server}"),
//!         TcpEvent::Data { dir, data, .. } => format!("{dir:?}: {} bytes", data.len()),
//!         TcpEvent::Gap { len, .. } => format!("{len} bytes lost"),
//!         TcpEvent::Fin { dir, .. } => format!("{dir:?}: FIN"),
//!         TcpEvent::Inconsistent { offset, len, .. } => format!("{len} bytes at {offset} differ"),
//!         TcpEvent::Closed { summary } => format!("closed: {}", summary.close.name()),
//!         // Only a stage behind the reassembler sets a connection aside.
//!         TcpEvent::SetAside { .. } | TcpEvent::Resumed { .. } => unreachable!(),
//!     };
//!     println!("{line}");
//!     printed.push(line);
//! };
//! while let Some(frame) = reader.next_frame()? {
//!     assert_eq!(frame.linktype, linktype::ETHERNET);
//!     stage.frame(&frame, &mut sink);
//! }
//! stage.finish(&mut sink);
//! assert_eq!(
//!     printed,
//!     [
//!         "opened 10.0.0.1:40000 -> 10.0.0.2:8080",
//!         "ClientToServer: 30 bytes",
//!         "ServerToClient: 27 bytes",
//!         "closed: open at capture end",
//!     ]
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod carve;
pub mod decode;
mod duplicates;
pub mod held;
pub mod reader;
pub mod request_line;
pub mod tcp;
pub mod tunnel;
pub mod writer;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use decode::Skip;
use mcpf_model::bucket;
use mcpf_model::file::{CountingReader, open_file};
use mcpf_model::peeked;
use mcpf_model::{
    Accounting, InputId, InputReport, Mark, Note, NoteKind, OpenError, Timestamp, Tunnel,
};
use reader::{CaptureReader, Frame, ReadError};
use tcp::{Limits, Reassembler, ReassemblyStats, TcpSink};

/// An opened capture input.
pub struct CaptureInput {
    pub path: String,
    pub reader: CaptureReader,
    /// Bytes read from the file so far (compressed bytes for gzip input).
    pub bytes_read: Arc<AtomicU64>,
    /// File size when known (not for standard input).
    pub size: Option<u64>,
    /// The next frame, read and not yet handed on: what orders the inputs in time.
    held: Option<HeldFrame>,
    /// A file that can be opened again (not standard input, not bytes in memory).
    reopens: bool,
    /// Closed while its turn had not come, after reading this many frames (see [`MAX_OPEN`]).
    parked: Option<u64>,
}

/// Inputs read at once. Each holds a file and a read buffer of a megabyte or more: a
/// directory of thousands of `tcpdump -C` files is read a few at a time, each opened when its
/// first packet's turn comes and closed at its end, under any `ulimit -n`. When more than this
/// many overlap in time, the one whose next packet is latest is closed and, when its turn
/// comes back, read again from its start up to where it stopped.
pub const MAX_OPEN: usize = 64;

/// Opens a path (or `-` for standard input) as a capture.
pub fn open_capture(path: &str, input: InputId) -> Result<CaptureInput, OpenError> {
    let bytes_read = Arc::new(AtomicU64::new(0));
    let mut regular = false;
    let (source, size): (Box<dyn io::Read + Send>, Option<u64>) = if peeked::streamed(path) {
        // A stream gives its bytes once: those read to tell its format come first again.
        let stream = peeked::open(path)?;
        (
            Box::new(CountingReader::new(stream, bytes_read.clone())),
            None,
        )
    } else {
        let file = open_file(path)?;
        let meta = file.metadata().ok();
        // Only a regular file is opened again.
        regular = meta.as_ref().is_some_and(|m| m.is_file());
        let size = meta.map(|m| m.len());
        (
            Box::new(CountingReader::new(
                mcpf_model::interrupt::file(file),
                bytes_read.clone(),
            )),
            size,
        )
    };
    let mut opened = open_reader(path, source, size, bytes_read, input)?;
    opened.reopens = regular;
    Ok(opened)
}

/// Opens what `source` reads (already counting into `bytes_read`) as a capture named `path`.
fn open_reader(
    path: &str,
    source: Box<dyn io::Read + Send>,
    size: Option<u64>,
    bytes_read: Arc<AtomicU64>,
    input: InputId,
) -> Result<CaptureInput, OpenError> {
    let reader = CaptureReader::open(source, input).map_err(|e| OpenError {
        path: path.to_string(),
        hint: match &e {
            ReadError::NotACapture(_) => Some(
                "give a file written by tcpdump -w, tshark -w or Wireshark (pcap or pcapng, optionally gzip-compressed)".into(),
            ),
            ReadError::Empty => Some("the capture may still be being written, or tcpdump was stopped before it flushed; use tcpdump -U".into()),
            _ => None,
        },
        message: e.to_string(),
    })?;
    Ok(CaptureInput {
        path: path.to_string(),
        reader,
        bytes_read,
        size,
        held: None,
        reopens: false,
        parked: None,
    })
}

impl CaptureInput {
    /// Reads the first frame, then (for a file that can be opened again) closes the file and
    /// frees the buffer until the input's turn comes: opening a thousand inputs holds none.
    pub fn prime(&mut self) {
        refill(self);
        self.park();
    }

    /// Closes the file and frees the read buffer, keeping the frame read last.
    fn park(&mut self) {
        if self.reopens && self.held.is_some() && self.parked.is_none() {
            self.parked = Some(self.reader.frames());
            self.reader.release();
        }
    }

    /// Opens a parked input again and reads up to where it stopped; the notes of that part stay
    /// those of the first read. A file that cannot be read again ends with a warning.
    fn unpark(&mut self) {
        let Some(frames) = self.parked.take() else {
            return;
        };
        let counted = self.bytes_read.load(Ordering::Relaxed);
        match self.reopen(frames) {
            Ok(mut reader) => {
                reader.continue_from(&mut self.reader);
                self.reader = reader;
            }
            Err(e) => {
                self.held = None;
                let why = format!("opened again to read on, it failed: {e}");
                let note = Note::new(NoteKind::ReadingStopped, 1).detail(why);
                self.reader.notes.warnings.push(note);
            }
        }
        // What was read again is not counted twice.
        self.bytes_read.store(counted, Ordering::Relaxed);
    }

    fn reopen(&self, frames: u64) -> Result<CaptureReader, String> {
        let file = open_file(&self.path).map_err(|e| e.message)?;
        let source =
            CountingReader::new(mcpf_model::interrupt::file(file), self.bytes_read.clone());
        let mut reader = CaptureReader::open(Box::new(source), self.reader.input_id())
            .map_err(|e| e.to_string())?;
        for _ in 0..frames {
            if reader.next_frame().map_err(|e| e.to_string())?.is_none() {
                return Err("the file is shorter than when it was first read".into());
            }
        }
        // Handed on already, or held by the old reader's notes.
        reader.take_tls_secrets();
        Ok(reader)
    }

    /// At the end of the input: the file and buffer are let go.
    fn close(&mut self) {
        if self.reopens {
            self.reader.release();
        }
    }
}

/// A capture held in memory, named `name` (the fuzz targets, and tests of what a file holds).
pub fn capture_from_bytes(
    name: &str,
    bytes: Vec<u8>,
    input: InputId,
) -> Result<CaptureInput, OpenError> {
    let bytes_read = Arc::new(AtomicU64::new(0));
    let size = Some(bytes.len() as u64);
    let source = Box::new(CountingReader::new(
        io::Cursor::new(bytes),
        bytes_read.clone(),
    ));
    open_reader(name, source, size, bytes_read, input)
}

/// Per-input bookkeeping while packets flow.
#[derive(Default)]
struct InputState {
    skipped: BTreeMap<&'static str, u64>,
    unknown_linktypes: Vec<i32>,
    truncated_frames: u64,
    /// The longest captured length of a cut frame: the snap length the capture used.
    cut_at: usize,
    /// The frames' packets and captured bytes, each in the bucket its decoding put it in.
    accounting: Accounting,
    /// The IP packets of the last TCP frames, to tell a copy of one of them.
    recent: duplicates::Recent,
    /// Frames removed as copies of a recent one.
    duplicates: u64,
    /// Frames analysed from inside each kind of tunnel, in the order first met.
    unwrapped: Vec<(Tunnel, u64)>,
}

/// The skip reason of a duplicate frame (its bucket is [`bucket::DUPLICATE`]).
const DUPLICATE_REASON: &str = "duplicate (the same IP packet as a recent frame)";

impl InputState {
    /// Counts one frame unwrapped from `tunnels` under each kind of tunnel it came through.
    #[cold]
    fn count_tunnels(&mut self, tunnels: &tunnel::Path) {
        for t in tunnels.distinct() {
            match self.unwrapped.iter_mut().find(|(u, _)| *u == t) {
                Some((_, n)) => *n += 1,
                None => self.unwrapped.push((t, 1)),
            }
        }
    }

    /// Counts one frame of `bytes` captured bytes removed as a copy of a recent one.
    #[cold]
    fn count_duplicate(&mut self, bytes: u64) {
        self.duplicates += 1;
        self.count(Some(bucket::DUPLICATE), bytes);
        *self.skipped.entry(DUPLICATE_REASON).or_default() += 1;
    }

    /// Counts one frame of `bytes` captured bytes: analysed, or skipped for `reason`.
    fn count(&mut self, reason: Option<&str>, bytes: u64) {
        let a = &mut self.accounting;
        match reason {
            None => {
                a.packets.analyse(1);
                a.bytes.analyse(bytes);
            }
            Some(r) => {
                a.packets.skip(r, 1);
                a.bytes.skip(r, bytes);
            }
        }
    }
}

/// What the capture stage is told, once, when it is made.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub limits: Limits,
    /// Endpoints the user says are servers (`--server`): they win over every heuristic.
    pub servers: Vec<tcp::ServerSpec>,
    /// UDP ports that carry VXLAN or Geneve besides the standard ones (`--tunnel`).
    pub tunnels: Vec<tunnel::UdpTunnel>,
    /// Keep duplicate frames (`--keep-duplicates`): by default a frame whose IP packet is
    /// byte for byte that of a recent one is removed as a mirror's copy (`duplicates`).
    pub keep_duplicates: bool,
}

/// Drives capture inputs through link decoding and TCP reassembly.
pub struct CaptureStage {
    pub(crate) reassembler: Reassembler,
    states: Vec<InputState>,
    udp_tunnels: Vec<tunnel::UdpTunnel>,
    keep_duplicates: bool,
    /// Frames processed over all inputs, for progress display.
    pub frames: Arc<AtomicU64>,
}

impl CaptureStage {
    pub fn new(settings: Settings, inputs: usize) -> Self {
        CaptureStage {
            reassembler: Reassembler::new(settings.limits).with_servers(settings.servers),
            states: (0..inputs).map(|_| InputState::default()).collect(),
            udp_tunnels: settings.tunnels,
            keep_duplicates: settings.keep_duplicates,
            frames: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Decodes and reassembles one frame.
    pub fn frame(&mut self, frame: &Frame<'_>, sink: &mut impl TcpSink) {
        // This thread is the only writer: a plain store, without a locked read-modify-write
        // per frame, keeps the count exact for the progress display that reads it.
        let frames = self.frames.load(Ordering::Relaxed);
        self.frames.store(frames + 1, Ordering::Relaxed);
        let state = &mut self.states[frame.frame.input as usize];
        let captured = frame.data.len() as u64;
        if captured < u64::from(frame.orig_len) {
            state.truncated_frames += 1;
            state.cut_at = state.cut_at.max(frame.data.len());
            state
                .accounting
                .missing(bucket::SNAP_LENGTH, u64::from(frame.orig_len) - captured);
        }
        if frame.linktype == reader::UNDECLARED_INTERFACE {
            *state
                .skipped
                .entry("packet for an undeclared pcapng interface")
                .or_default() += 1;
            state.count(Some(bucket::UNKNOWN_LINK_TYPE), captured);
            return;
        }
        // Looked at where it was returned: a decoded segment is a few hundred bytes, not worth
        // moving.
        match &decode::tcp_segment(frame.linktype, frame.data, &self.udp_tunnels) {
            Ok(decoded) => {
                if !self.keep_duplicates && state.recent.is_copy(frame.time, decoded.ip) {
                    state.count_duplicate(captured);
                    return;
                }
                if !decoded.tunnels.is_empty() {
                    state.count_tunnels(&decoded.tunnels);
                }
                state.count(None, captured);
                let mark = Mark {
                    time: frame.time,
                    frame: frame.frame,
                };
                self.reassembler.segment(&decoded.seg, mark, sink);
            }
            &Err(skip) => {
                let reason = if let Skip::UnknownLinkType(lt) = skip {
                    if !state.unknown_linktypes.contains(&lt) {
                        state.unknown_linktypes.push(lt);
                    }
                    bucket::UNKNOWN_LINK_TYPE
                } else {
                    // Not IP, not TCP, a fragment or a header too damaged to reach TCP: none of
                    // it can carry the HTTP this tool reads.
                    bucket::NOT_TCP
                };
                state.count(Some(reason), captured);
                *state.skipped.entry(skip.reason()).or_default() += 1;
            }
        }
    }

    pub fn finish(&mut self, sink: &mut impl TcpSink) -> ReassemblyStats {
        self.reassembler.finish(sink);
        self.reassembler.stats.clone()
    }

    /// The report of one input once it has been read.
    pub fn report(&self, input: &CaptureInput) -> InputReport {
        let idx = input.reader.input_id() as usize;
        let state = &self.states[idx];
        let notes = &input.reader.notes;
        let mut skipped: BTreeMap<String, u64> = state
            .skipped
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        for (reason, n) in &notes.skipped {
            *skipped.entry(reason.to_string()).or_default() += n;
        }
        let mut warnings = notes.warnings.clone();
        warnings.extend(read_notes(state, notes));
        let caps = self.reassembler.cap_counts(input.reader.input_id());
        warnings.extend(tcp::cap_notes(&caps, &self.reassembler.limits));
        let format = mcpf_model::FileFormat {
            kind: input.reader.format.kind(),
            gzip: notes.gzip,
        };
        let packets = input.reader.frames();
        let bytes = input.bytes_read.load(Ordering::Relaxed);
        let accounting = file_accounting(state, notes, input.reader.bytes_read());
        InputReport {
            index: input.reader.input_id(),
            path: input.path.clone(),
            format,
            packets,
            bytes,
            skipped,
            warnings,
            accounting,
            error: None,
            read_as: Default::default(),
        }
    }
}

/// What the stage and the reader counted of an input that is worth a warning: link types not
/// decoded, frames the snap length cut, records over it, corrupt stretches past those listed,
/// packets the interface dropped.
fn read_notes(state: &InputState, notes: &reader::ReadNotes) -> Vec<Note> {
    let mut out: Vec<Note> = state
        .unknown_linktypes
        .iter()
        .map(|&link_type| Note::new(NoteKind::LinkTypeUnsupported { link_type }, 1))
        .collect();
    if state.truncated_frames > 0 {
        let snaplen = state.cut_at as u64;
        let kind = NoteKind::FramesCutBySnaplen { snaplen };
        out.push(Note::new(kind, state.truncated_frames));
    }
    if notes.over_snaplen > 0 {
        out.push(Note::new(NoteKind::RecordsOverSnaplen, notes.over_snaplen));
    }
    if notes.times_out_of_range > 0 {
        out.push(Note::new(
            NoteKind::TimestampsOutOfRange,
            notes.times_out_of_range,
        ));
    }
    if notes.time_jumps > 0 {
        let days = reader::MAX_TIME_JUMP_SECS as u64 / 86_400;
        out.push(Note::new(
            NoteKind::RecordsWithTimeJumps { days },
            notes.time_jumps,
        ));
    }
    out.extend(notes.corrupt_summary());
    if notes.interface_drops > 0 {
        out.push(Note::new(NoteKind::InterfaceDrops, notes.interface_drops));
    }
    out.extend(
        state
            .unwrapped
            .iter()
            .map(|&(tunnel, n)| Note::new(NoteKind::TunnelUnwrapped { tunnel }, n)),
    );
    if state.duplicates > 0 {
        let kind = NoteKind::DuplicatesRemoved {
            window_frames: duplicates::WINDOW_FRAMES as u64,
            window_micros: duplicates::WINDOW_NANOS / 1000,
        };
        out.push(Note::new(kind, state.duplicates));
    }
    out
}

/// The input's ledger: the frames as the stage counted them, and what the reader counted of the
/// file around them (its framing, corrupt stretches skipped, an incomplete last record).
fn file_accounting(state: &InputState, notes: &reader::ReadNotes, file_bytes: u64) -> Accounting {
    let mut a = state.accounting.clone();
    a.bytes.skip(bucket::FILE_FRAMING, notes.framing_bytes);
    a.bytes.lose(bucket::CORRUPT_RECORD, notes.corrupt_bytes);
    a.packets
        .lose(bucket::CORRUPT_RECORD, notes.corrupt_stretches);
    if notes.truncated_bytes > 0 {
        a.bytes.lose(bucket::TRUNCATED, notes.truncated_bytes);
        a.packets.lose(bucket::TRUNCATED, 1);
    }
    debug_assert_eq!(
        a.bytes.total, file_bytes,
        "every byte of the file is in one bucket"
    );
    a
}

/// A frame copied out of its reader, so several inputs can be merged by time.
struct HeldFrame {
    time: Timestamp,
    frame: mcpf_model::FrameRef,
    linktype: i32,
    orig_len: u32,
    data: Vec<u8>,
}

/// Reads every input once, merging them in timestamp order (ties go to the input named first),
/// and feeds the capture stage. A read error ends that input with a warning; the rest go on.
pub fn run(
    inputs: &mut [CaptureInput],
    stage: &mut CaptureStage,
    sink: &mut impl TcpSink,
) -> ReassemblyStats {
    if let [input] = inputs {
        input.unpark();
        if let Some(h) = input.held.take() {
            hand_on_secrets(input, sink);
            stage.frame(&h.frame(), sink);
        }
        // One input: each frame is handed on from the read buffer, never copied.
        loop {
            hand_on_secrets(input, sink);
            match input.reader.next_frame() {
                Ok(Some(frame)) => stage.frame(&frame, sink),
                Ok(None) => break,
                Err(e) => {
                    input.reader.notes.warnings.push(reading_stopped(&e));
                    break;
                }
            }
        }
        input.close();
        return stage.finish(sink);
    }
    let mut next = BinaryHeap::new();
    for (i, input) in inputs.iter_mut().enumerate() {
        if input.held.is_none() && input.parked.is_none() {
            refill(input);
        }
        match &input.held {
            Some(h) => next.push(Reverse((h.time, i))),
            None => input.close(),
        }
    }
    // The inputs open, by index: parked ones are opened again when their turn comes.
    let mut open: Vec<usize> = (0..inputs.len())
        .filter(|&i| inputs[i].held.is_some() && inputs[i].parked.is_none())
        .collect();
    while let Some(Reverse((_, i))) = next.pop() {
        if inputs[i].parked.is_some() {
            inputs[i].unpark();
            open.push(i);
            park_latest(inputs, &mut open, i);
        }
        let input = &mut inputs[i];
        let Some(h) = input.held.take() else {
            open.retain(|&o| o != i);
            continue;
        };
        hand_on_secrets(input, sink);
        stage.frame(&h.frame(), sink);
        input.read_next(h);
        match &input.held {
            Some(h) => next.push(Reverse((h.time, i))),
            None => {
                input.close();
                open.retain(|&o| o != i);
            }
        }
    }
    stage.finish(sink)
}

/// With more than [`MAX_OPEN`] inputs open, closes the one (not `keep`) whose next frame is
/// latest.
fn park_latest(inputs: &mut [CaptureInput], open: &mut Vec<usize>, keep: usize) {
    if open.len() <= MAX_OPEN {
        return;
    }
    let latest = open
        .iter()
        .copied()
        .filter(|&o| o != keep && inputs[o].reopens)
        .max_by_key(|&o| inputs[o].held.as_ref().map(|h| (h.time, o)));
    if let Some(o) = latest {
        inputs[o].park();
        open.retain(|&x| x != o);
    }
}

/// Key log lines read from the input's blocks so far go downstream before its next packet.
#[inline]
fn hand_on_secrets(input: &mut CaptureInput, sink: &mut impl TcpSink) {
    let secrets = input.reader.take_tls_secrets();
    if !secrets.is_empty() {
        sink.on_tls_secrets(&secrets);
    }
}

/// Reads the input's next frame into `held`.
fn refill(input: &mut CaptureInput) {
    refill_into(input, Vec::new());
}

/// Reads the input's next frame into `held`, in `buffer`'s allocation.
fn refill_into(input: &mut CaptureInput, mut buffer: Vec<u8>) {
    match input.reader.next_frame() {
        Ok(Some(frame)) => {
            buffer.clear();
            buffer.extend_from_slice(frame.data);
            input.held = Some(HeldFrame {
                time: frame.time,
                frame: frame.frame,
                linktype: frame.linktype,
                orig_len: frame.orig_len,
                data: buffer,
            });
        }
        Ok(None) => {}
        Err(e) => input.reader.notes.warnings.push(reading_stopped(&e)),
    }
}

impl CaptureInput {
    /// Reads the frame after `done` (handed on), in its buffer.
    fn read_next(&mut self, done: HeldFrame) {
        refill_into(self, done.data);
    }
}

impl HeldFrame {
    fn frame(&self) -> Frame<'_> {
        Frame {
            time: self.time,
            frame: self.frame,
            linktype: self.linktype,
            data: &self.data,
            orig_len: self.orig_len,
        }
    }
}

/// The warning of an input whose read ended with `e`.
fn reading_stopped(e: &ReadError) -> Note {
    Note::new(NoteKind::ReadingStopped, 1).detail(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_framing_add_up_to_the_file() {
        let mut state = InputState::default();
        state.count(None, 1500);
        state.count(Some(bucket::NOT_TCP), 60);
        state.count(Some(bucket::UNKNOWN_LINK_TYPE), 40);
        let notes = reader::ReadNotes {
            framing_bytes: 24 + 16 * 3,
            corrupt_stretches: 2,
            corrupt_bytes: 77,
            truncated_bytes: 9,
            ..Default::default()
        };
        let file = 1500 + 60 + 40 + 24 + 48 + 77 + 9;
        let a = file_accounting(&state, &notes, file);
        assert!(a.balanced(), "{a:?}");
        assert_eq!(a.bytes.total, file);
        assert_eq!(a.bytes.analysed, 1500);
        assert_eq!(a.bytes.skipped[bucket::FILE_FRAMING], 72);
        assert_eq!(a.bytes.lost[bucket::CORRUPT_RECORD], 77);
        assert_eq!(
            a.packets.total,
            3 + 2 + 1,
            "a stretch and a cut record count as one each"
        );
        assert_eq!(a.packets.lost[bucket::TRUNCATED], 1);
    }
}
