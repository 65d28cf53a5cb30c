//! Streaming pcap / pcapng reader: turns a byte source into timestamped, numbered link-layer
//! frames without ever holding more than one read buffer.
//!
//! The framing (pcap record headers, pcapng block lengths) is read here, over one window of the
//! source that is consumed as it goes, so that a corrupt record can be stepped over: the reader
//! scans forward to the next plausible record or block, the way pcapfix and Wireshark do, and
//! counts what it skipped. `pcap-parser` parses the file header and each pcapng block's body.
//! The format is sniffed from magic bytes, never from the file name, and gzip is unwrapped the
//! same way; a gzip stream that ends early is read up to its cut, like a truncated file.

use std::fmt;
use std::io::{self, Read};

use pcap_parser::pcapng::{self, Block, InterfaceDescriptionBlock, InterfaceStatisticsBlock};

use mcpf_model::{CorruptUnit, FrameRef, InputId, Note, NoteKind, Timestamp};

/// Read buffer. A record larger than [`MAX_RECORD`] is corrupt by our definition (the largest
/// real link-layer frames are 256 KiB), so the buffer grows up to that (plus this margin) and no
/// further: a crafted length field cannot make us allocate gigabytes.
const INITIAL_BUFFER: usize = 1 << 20;
/// The buffer's first size: it doubles up to [`INITIAL_BUFFER`] as reads fill it, so a small
/// input (one of thousands of rotated files, reopened each time its turn comes) costs a small
/// buffer, and an empty source none.
const FIRST_BUFFER: usize = 64 << 10;
pub(crate) const MAX_RECORD: usize = 16 << 20;

/// A pcap record claiming more captured bytes than this, and than the file's snap length, is
/// corrupt (tcpdump's largest snap length is 262144).
const MAX_PLAUSIBLE_CAPLEN: u32 = 262_144;

/// A pcap record whose timestamp is further than this from the previous record's is doubtful:
/// believed only when the record after it is plausible.
pub(crate) const MAX_TIME_JUMP_SECS: i64 = 30 * 86_400;

/// The largest pcapng block a resynchronisation lands on: the scan after a damaged block looks
/// at most this far ahead from each offset (real packet blocks are at most 256 KiB).
const MAX_RESYNC_BLOCK: usize = 1 << 20;

/// Corrupt stretches that get a warning of their own; the rest are summed in one line.
pub(crate) const MAX_CORRUPT_WARNINGS: u64 = 10;

/// The container format of a capture file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CaptureFormat {
    Pcap,
    PcapNg,
}

impl CaptureFormat {
    pub(crate) fn kind(self) -> mcpf_model::FileKind {
        match self {
            CaptureFormat::Pcap => mcpf_model::FileKind::Pcap,
            CaptureFormat::PcapNg => mcpf_model::FileKind::PcapNg,
        }
    }
}

/// What the first bytes of an input look like, decided before any parser runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniffed {
    Pcap,
    PcapNg,
    Gzip,
    Json,
    Empty,
    Unknown,
}

pub fn sniff(head: &[u8]) -> Sniffed {
    if head.is_empty() {
        return Sniffed::Empty;
    }
    if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        return Sniffed::Gzip;
    }
    if head.len() >= 4 {
        match [head[0], head[1], head[2], head[3]] {
            // Microsecond, nanosecond and the old "modified" (Kuznetzov) variants, both orders.
            [0xd4, 0xc3, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xc3, 0xd4]
            | [0x4d, 0x3c, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0x3c, 0x4d]
            | [0x34, 0xcd, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xcd, 0x34] => return Sniffed::Pcap,
            [0x0a, 0x0d, 0x0d, 0x0a] => return Sniffed::PcapNg,
            _ => {}
        }
    }
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'{') | Some(b'[') => Sniffed::Json,
        None => Sniffed::Empty,
        _ if head.starts_with(&[0xef, 0xbb, 0xbf]) => Sniffed::Json,
        _ => Sniffed::Unknown,
    }
}

/// Describes the first bytes of something that is not a capture, for the error message.
pub fn describe_bytes(head: &[u8]) -> String {
    let shown = &head[..head.len().min(16)];
    let hex: Vec<String> = shown.iter().map(|b| format!("{b:02x}")).collect();
    let text: String = shown
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    if shown.starts_with(&[0x16, 0x03]) {
        return format!("{} (a raw TLS record, not a capture)", hex.join(" "));
    }
    format!("{} \"{}\"", hex.join(" "), text)
}

/// A link-layer frame as read from the capture: data borrowed from the read buffer.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    pub time: Timestamp,
    pub frame: FrameRef,
    pub linktype: i32,
    pub data: &'a [u8],
    /// Length of the frame on the wire; greater than `data.len()` when the capture was taken with
    /// a snap length that cut it.
    pub orig_len: u32,
}

/// Why reading stopped before the end of a capture, or why it could not start.
#[derive(Debug)]
pub enum ReadError {
    NotACapture(String),
    Empty,
    Io(io::Error),
    /// The header itself is broken.
    BadHeader(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotACapture(what) => write!(f, "not a pcap or pcapng capture: {what}"),
            ReadError::Empty => write!(f, "the file is empty"),
            ReadError::Io(e) => write!(f, "read failed: {e}"),
            ReadError::BadHeader(what) => write!(f, "broken capture header: {what}"),
        }
    }
}

impl std::error::Error for ReadError {}

#[derive(Clone, Copy, Debug)]
struct Interface {
    linktype: i32,
    snaplen: u32,
    /// Timestamp units per second, or `None` when `if_tsresol` is out of range.
    units_per_sec: Option<u64>,
    offset_secs: i64,
}

type BoxedRead = Box<dyn Read + Send>;

/// The read buffer over the (decompressed) source: bytes are looked at in place and consumed;
/// only what is not consumed yet is ever held.
struct Window {
    source: BoxedRead,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes consumed before `buf[start]`: the file offset of the first byte of `data()`.
    consumed: u64,
    eof: bool,
    /// Why the source stopped early (a cut gzip stream, a read error), and at which offset.
    failure: Option<(u64, io::Error)>,
}

impl Window {
    fn new(source: BoxedRead) -> Self {
        Window {
            source,
            buf: Vec::new(),
            start: 0,
            end: 0,
            consumed: 0,
            eof: false,
            failure: None,
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn offset(&self) -> u64 {
        self.consumed
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.consumed += n as u64;
    }

    /// Makes `n` bytes available unless the source ends first; returns how many are. The buffer
    /// is compacted only when fewer than `n` bytes of room are left and is sized `n` plus a
    /// margin, so scanning forward a byte at a time copies each byte a bounded number of times.
    #[inline]
    fn fill(&mut self, n: usize) -> usize {
        // Most calls find the bytes there already: that check is all they cost.
        let avail = self.end - self.start;
        if avail >= n || self.eof {
            return avail;
        }
        self.read_more(n)
    }

    /// [`Self::fill`] when the bytes are not there yet.
    fn read_more(&mut self, n: usize) -> usize {
        while self.end - self.start < n && !self.eof {
            let cramped = self.buf.len() - self.start < n;
            if cramped && self.buf.len() < INITIAL_BUFFER {
                let grown = (self.buf.len() * 2).clamp(FIRST_BUFFER, INITIAL_BUFFER);
                self.buf.resize(grown, 0);
            }
            if self.buf.len() < n {
                self.buf.resize(n + INITIAL_BUFFER, 0);
            }
            if self.buf.len() - self.start < n {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            match self.source.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = self.consumed + (self.end - self.start) as u64;
                    self.failure = Some((at, e));
                    self.eof = true;
                }
            }
        }
        self.end - self.start
    }
}

/// A classic pcap file: one link type and one timestamp precision for every record.
struct Legacy {
    big_endian: bool,
    nanos: bool,
    /// 16 bytes, or 24 in the old "modified" (Kuznetzov) format.
    record_header: usize,
    linktype: i32,
    snaplen: u32,
    /// Seconds of the last record read, against which the next one's timestamp is judged.
    prev_secs: Option<u32>,
    /// The time of that record: what a lone record whose clock jumped is given instead of its
    /// own (the records around it prove it was captured between them).
    prev_time: Timestamp,
}

#[derive(Clone, Copy, Debug)]
struct RecordHeader {
    ts_sec: u32,
    ts_frac: u32,
    caplen: u32,
    orig_len: u32,
}

/// What a pcap record header says of itself, before any byte of its data is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Judgement {
    Plausible,
    /// Possible in a real file (a wrong snap length in the file header, a clock that jumped, a
    /// writer that swapped the lengths) but also what corruption looks like: believed only when
    /// the record after it is plausible.
    Doubtful,
    /// A length no real record has.
    Corrupt,
}

impl Legacy {
    fn header(&self, b: &[u8]) -> RecordHeader {
        let u32_at = |o: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&b[o..o + 4]);
            if self.big_endian {
                u32::from_be_bytes(w)
            } else {
                u32::from_le_bytes(w)
            }
        };
        RecordHeader {
            ts_sec: u32_at(0),
            ts_frac: u32_at(4),
            caplen: u32_at(8),
            orig_len: u32_at(12),
        }
    }

    /// Whether `h`'s time is within [`MAX_TIME_JUMP_SECS`] of the record before it.
    fn time_ok(&self, h: &RecordHeader) -> bool {
        self.prev_secs
            .is_none_or(|p| (i64::from(h.ts_sec) - i64::from(p)).abs() <= MAX_TIME_JUMP_SECS)
    }

    fn judge(&self, h: &RecordHeader, prev_secs: Option<u32>) -> Judgement {
        let hard_max = MAX_PLAUSIBLE_CAPLEN.max(self.snaplen.min(MAX_RECORD as u32));
        if h.caplen > hard_max {
            return Judgement::Corrupt;
        }
        let frac_ok = h.ts_frac < if self.nanos { 1_000_000_000 } else { 1_000_000 };
        let time_ok = prev_secs
            .is_none_or(|p| (i64::from(h.ts_sec) - i64::from(p)).abs() <= MAX_TIME_JUMP_SECS);
        let snap_ok = self.snaplen == 0 || h.caplen <= self.snaplen;
        // A packet on the wire has at least one byte: a run of zeros is not a record.
        if frac_ok && time_ok && snap_ok && h.orig_len >= h.caplen && h.orig_len > 0 {
            Judgement::Plausible
        } else {
            Judgement::Doubtful
        }
    }

    /// Whether the record whose header starts the window is followed by a plausible record
    /// header, or ends where the file does.
    fn confirmed(&self, window: &mut Window, h: &RecordHeader) -> bool {
        self.confirmation(window, h).is_some()
    }

    /// What confirms the record whose header starts the window: the end of the file, or the
    /// record after it, plausible after its time (`Some(true)`: also the end) or only after
    /// the time before it (`Some(false)`: a single record whose clock jumped, which tshark
    /// reads as it is).
    fn confirmation(&self, window: &mut Window, h: &RecordHeader) -> Option<bool> {
        let end = self.record_header + h.caplen as usize;
        let avail = window.fill(end + self.record_header);
        if avail < end {
            return None;
        }
        if avail < end + self.record_header {
            return Some(true);
        }
        let next = self.header(&window.data()[end..end + self.record_header]);
        if self.judge(&next, Some(h.ts_sec)) == Judgement::Plausible {
            return Some(true);
        }
        (self.judge(&next, self.prev_secs) == Judgement::Plausible).then_some(false)
    }

    fn step(&mut self, w: &mut Window, notes: &mut ReadNotes) -> Step {
        let hl = self.record_header;
        loop {
            let avail = w.fill(hl);
            if avail == 0 {
                return Step::End;
            }
            if avail < hl {
                notes.truncate(w, avail);
                return Step::End;
            }
            let h = self.header(&w.data()[..hl]);
            // Whether the clock goes on from this record (not after a lone jumped timestamp).
            let mut clock = true;
            match self.judge(&h, self.prev_secs) {
                Judgement::Plausible => {}
                Judgement::Doubtful => {
                    let Some(goes_on) = self.confirmation(w, &h) else {
                        self.resync(w, notes);
                        continue;
                    };
                    if self.snaplen > 0 && h.caplen > self.snaplen {
                        notes.over_snaplen += 1;
                    }
                    if !self.time_ok(&h) {
                        notes.time_jumps += 1;
                        clock = goes_on;
                    }
                }
                Judgement::Corrupt => {
                    self.resync(w, notes);
                    continue;
                }
            }
            let len = hl + h.caplen as usize;
            let avail = w.fill(len);
            if avail < len {
                notes.truncate(w, avail);
                return Step::End;
            }
            let sub = if self.nanos {
                h.ts_frac.min(999_999_999)
            } else {
                h.ts_frac.min(999_999).saturating_mul(1000)
            };
            let time = match clock {
                true => Timestamp::from_secs_nanos(i64::from(h.ts_sec), sub),
                false => self.prev_time,
            };
            if clock {
                self.prev_secs = Some(h.ts_sec);
                self.prev_time = time;
            }
            notes.framing_bytes += hl as u64;
            return Step::Frame(PacketMeta {
                time,
                linktype: self.linktype,
                orig_len: h.orig_len,
                data_offset: hl,
                data_len: h.caplen as usize,
                consume: len,
            });
        }
    }

    /// Skips a corrupt record: forward a byte at a time to the next offset where a record header
    /// is plausible and the record after it is too (or the file ends there), the test pcapfix
    /// and Wireshark use. Each offset costs a constant amount of work.
    fn resync(&mut self, w: &mut Window, notes: &mut ReadNotes) {
        let start = w.offset();
        let hl = self.record_header;
        w.consume(1);
        let mut skipped = 1u64;
        loop {
            let avail = w.fill(hl);
            if avail < hl {
                w.consume(avail);
                skipped += avail as u64;
                break;
            }
            let h = self.header(&w.data()[..hl]);
            if h.caplen <= MAX_PLAUSIBLE_CAPLEN
                && self.judge(&h, self.prev_secs) == Judgement::Plausible
                && self.confirmed(w, &h)
            {
                break;
            }
            w.consume(1);
            skipped += 1;
        }
        notes.corrupt(start, skipped, CorruptUnit::PcapRecord);
    }
}

/// A pcapng file: its link types and timestamp units come from the interfaces each section
/// declares.
struct Ng {
    section: Section,
}

/// What the current pcapng section declared.
#[derive(Default)]
struct Section {
    interfaces: Vec<Interface>,
    /// Byte order of the current section, for the blocks we read ourselves.
    big_endian: bool,
}

const SHB_TYPE: u32 = 0x0A0D_0D0A;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const EPB_TYPE: u32 = 6;

/// Block types of the pcapng specification, the only ones a resynchronisation may land on.
const KNOWN_BLOCK_TYPES: [u32; 12] = [
    SHB_TYPE,
    1,
    OBSOLETE_PACKET_BLOCK,
    3,
    4,
    5,
    EPB_TYPE,
    9,
    0x0A,
    0x0BAD,
    0x4000_0BAD,
    0x8000_0001,
];

/// The framing of a pcapng block: type, total length and the byte order it is read in (a
/// section header tells its own by its byte-order magic). `None` when not even that is sane.
fn ng_frame(b: &[u8], big_endian: bool) -> Option<(u32, usize, bool)> {
    let word = |o: usize, be: bool| -> Option<u32> {
        let w: [u8; 4] = b.get(o..o + 4)?.try_into().ok()?;
        Some(if be {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        })
    };
    let ty = word(0, big_endian)?;
    let be = if ty == SHB_TYPE {
        match word(8, false)? {
            BYTE_ORDER_MAGIC => false,
            m if m == BYTE_ORDER_MAGIC.swap_bytes() => true,
            _ => return None,
        }
    } else {
        big_endian
    };
    let len = word(4, be)? as usize;
    let sane = len >= 12 && len.is_multiple_of(4) && len <= MAX_RECORD;
    sane.then_some((ty, len, be))
}

fn ng_trailer_ok(b: &[u8], len: usize, be: bool) -> bool {
    let Some(w) = b.get(len - 4..len) else {
        return false;
    };
    let w: [u8; 4] = [w[0], w[1], w[2], w[3]];
    let trailer = if be {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    };
    trailer as usize == len
}

impl Ng {
    fn step(&mut self, w: &mut Window, notes: &mut ReadNotes) -> Step {
        loop {
            let avail = w.fill(12);
            if avail == 0 {
                return Step::End;
            }
            if avail < 12 {
                notes.truncate(w, avail);
                return Step::End;
            }
            let Some((_, len, be)) = ng_frame(w.data(), self.section.big_endian) else {
                self.resync(w, notes);
                continue;
            };
            let avail = w.fill(len);
            if avail < len {
                notes.truncate(w, avail);
                return Step::End;
            }
            if !ng_trailer_ok(w.data(), len, be) {
                self.resync(w, notes);
                continue;
            }
            let start = w.offset();
            let bytes = &w.data()[..len];
            let parsed = if be {
                pcapng::parse_block_be(bytes)
            } else {
                pcapng::parse_block_le(bytes)
            };
            let base = bytes.as_ptr() as usize;
            let packet = match parsed {
                Ok((_, block)) => match self.section.read(block, notes) {
                    BlockRead::Packet(p) => Some((p.if_id, p.raw_ts, p.orig_len, p.data)),
                    BlockRead::Other => None,
                    BlockRead::Malformed(unit) => {
                        w.consume(len);
                        notes.corrupt(start, len as u64, unit);
                        continue;
                    }
                },
                Err(_) => {
                    w.consume(len);
                    notes.corrupt(start, len as u64, CorruptUnit::PcapngBlockBody);
                    continue;
                }
            };
            let Some((if_id, raw_ts, orig_len, data)) = packet else {
                w.consume(len);
                notes.framing_bytes += len as u64;
                continue;
            };
            let data_offset = data.as_ptr() as usize - base;
            let data_len = data.len();
            notes.framing_bytes += (len - data_len) as u64;
            let (time, linktype) = match self.section.interfaces.get(if_id) {
                Some(iface) => {
                    let time = raw_ts.map(|raw| ng_time(raw, iface));
                    if time == Some(None) {
                        notes.times_out_of_range += 1;
                    }
                    (time.flatten(), iface.linktype)
                }
                None => (None, UNDECLARED_INTERFACE),
            };
            return Step::NgFrame(
                time,
                PacketMeta {
                    time: Timestamp(0),
                    linktype,
                    orig_len,
                    data_offset,
                    data_len,
                    consume: len,
                },
            );
        }
    }

    /// Skips a damaged block: forward a byte at a time (not only at 4-byte boundaries, so that
    /// garbage of any length between blocks is stepped over) to the next block of a known type
    /// whose leading and trailing lengths agree.
    fn resync(&mut self, w: &mut Window, notes: &mut ReadNotes) {
        let start = w.offset();
        w.consume(1);
        let mut skipped = 1u64;
        loop {
            let avail = w.fill(12);
            if avail < 12 {
                w.consume(avail);
                skipped += avail as u64;
                break;
            }
            if let Some((ty, len, be)) = ng_frame(w.data(), self.section.big_endian)
                && len <= MAX_RESYNC_BLOCK
                && KNOWN_BLOCK_TYPES.contains(&ty)
                && self.declared(ty, w.data(), be)
                && w.fill(len) >= len
                && ng_trailer_ok(w.data(), len, be)
            {
                break;
            }
            w.consume(1);
            skipped += 1;
        }
        notes.corrupt(start, skipped, CorruptUnit::PcapngBlock);
    }

    /// A packet block found while resynchronising must name an interface the section declared.
    fn declared(&self, ty: u32, b: &[u8], be: bool) -> bool {
        if ty != EPB_TYPE {
            return true;
        }
        let Some(w) = b.get(8..12) else {
            return false;
        };
        let w: [u8; 4] = [w[0], w[1], w[2], w[3]];
        let if_id = if be {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        };
        (if_id as usize) < self.section.interfaces.len()
    }
}

enum Inner {
    Legacy(Legacy),
    Ng(Ng),
}

/// Where a read stands, whatever the container format.
struct Cursor {
    frames: u64,
    /// The record handed out last stays in the buffer, borrowed by its frame, and is consumed
    /// on the next call.
    pending_consume: usize,
    /// The time of the previous packet, which a packet without a timestamp inherits.
    last_time: Timestamp,
    done: bool,
}

/// Things noticed while reading that do not stop the read.
#[derive(Debug, Default, Clone)]
pub(crate) struct ReadNotes {
    pub(crate) warnings: Vec<Note>,
    /// Packets in the file that were not frames we can decode, by reason.
    pub(crate) skipped: Vec<(&'static str, u64)>,
    /// Packets the capturing interface said it dropped (pcapng ISB `isb_ifdrop`).
    pub(crate) interface_drops: u64,
    pub(crate) truncated: bool,
    pub(crate) gzip: bool,
    /// Bytes of the file's own structure: file header, record headers, non-packet blocks, the
    /// parts of packet blocks around the frame.
    pub(crate) framing_bytes: u64,
    /// Corrupt stretches skipped while resynchronising (or whole blocks that did not parse),
    /// and their bytes.
    pub(crate) corrupt_stretches: u64,
    pub(crate) corrupt_bytes: u64,
    /// Bytes of the incomplete record the file (or its gzip stream) ends in.
    pub(crate) truncated_bytes: u64,
    /// pcap records that claimed more captured bytes than the file's snap length.
    pub(crate) over_snaplen: u64,
    /// Records kept whose timestamp jumped more than [`MAX_TIME_JUMP_SECS`] from the one before.
    pub(crate) time_jumps: u64,
    /// pcapng packets whose timestamp falls before 1970 or past 2262 ([`ng_time`]).
    pub(crate) times_out_of_range: u64,
    /// TLS key log lines from pcapng Decryption Secrets Blocks, not yet handed on.
    pub(crate) tls_secrets: Secrets,
}

/// Key material: kept out of every `Debug` output (its length only).
#[derive(Clone, Default)]
pub(crate) struct Secrets(pub(crate) Vec<u8>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} bytes)", self.0.len())
    }
}

/// Key log bytes from Decryption Secrets Blocks kept at most per input.
const MAX_DSB_BYTES: usize = 64 << 20;
/// The pcapng secrets type of an NSS key log ("TLSK").
const DSB_TLS_KEY_LOG: u32 = 0x544c_534b;

impl ReadNotes {
    pub(crate) fn skip(&mut self, reason: &'static str) {
        match self.skipped.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((reason, 1)),
        }
    }

    /// Counts a stretch of `len` bytes from `offset` that was skipped as corrupt; the first
    /// [`MAX_CORRUPT_WARNINGS`] get their own warning, the total is reported at the end.
    fn corrupt(&mut self, offset: u64, len: u64, unit: CorruptUnit) {
        self.corrupt_stretches += 1;
        self.corrupt_bytes += len;
        if self.corrupt_stretches <= MAX_CORRUPT_WARNINGS {
            let kind = NoteKind::CorruptStretch { unit };
            self.warnings.push(Note::new(kind, len).at(offset));
        }
    }

    /// The file ends `avail` bytes into a record: they are consumed and counted as truncated.
    fn truncate(&mut self, w: &mut Window, avail: usize) {
        let at = w.offset();
        w.consume(avail);
        self.truncated = true;
        self.truncated_bytes += avail as u64;
        // A read a signal ended is not a file cut short.
        let kind = match mcpf_model::interrupt::stop_requested() {
            true => NoteKind::ReadStoppedBySignal,
            false => NoteKind::CaptureTruncated,
        };
        let note = Note::new(kind, avail as u64).at(at);
        self.warnings.push(note);
    }

    /// The warning that sums up the corrupt stretches when there were more than were listed.
    pub(crate) fn corrupt_summary(&self) -> Option<Note> {
        (self.corrupt_stretches > MAX_CORRUPT_WARNINGS).then(|| {
            let kind = NoteKind::CorruptStretches {
                bytes: self.corrupt_bytes,
                listed: MAX_CORRUPT_WARNINGS,
            };
            Note::new(kind, self.corrupt_stretches)
        })
    }
}

/// A pull reader over one capture file, yielding [`Frame`]s that borrow its buffer.
pub struct CaptureReader {
    inner: Inner,
    window: Window,
    input: InputId,
    cursor: Cursor,
    pub(crate) notes: ReadNotes,
    pub(crate) format: CaptureFormat,
    /// Bytes read when the file and buffer were let go ([`CaptureReader::release`]).
    released_at: Option<u64>,
}

impl CaptureReader {
    /// Lets go of the file and the read buffer; what was read (notes, frames, bytes) stays for
    /// the input's report. Reading again takes a new reader.
    pub(crate) fn release(&mut self) {
        self.released_at = Some(self.bytes_read());
        self.window = Window::new(Box::new(io::empty()));
        self.window.buf = Vec::new();
        self.cursor.done = true;
    }

    /// Takes over what `old` noted: this reader has read again what `old` had read, and the
    /// notes of that part are `old`'s.
    pub(crate) fn continue_from(&mut self, old: &mut CaptureReader) {
        self.notes = std::mem::take(&mut old.notes);
    }

    /// The TLS key log lines the file's Decryption Secrets Blocks held since the last call.
    pub fn take_tls_secrets(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.notes.tls_secrets.0)
    }

    /// Opens a capture from any byte source, unwrapping gzip when the magic bytes say so.
    pub fn open(source: BoxedRead, input: InputId) -> Result<Self, ReadError> {
        let mut window = Window::new(source);
        window.fill(64);
        let mut gzip = false;
        if sniff(window.data()) == Sniffed::Gzip {
            gzip = true;
            let compressed = std::mem::replace(&mut window, Window::new(Box::new(io::empty())));
            window = Window::new(Box::new(flate2::read::MultiGzDecoder::new(Unread(
                compressed,
            ))));
            window.fill(64);
            if window.data().is_empty()
                && let Some((_, e)) = window.failure.take()
            {
                return Err(ReadError::NotACapture(format!(
                    "gzip data that does not decompress: {e}"
                )));
            }
        }
        if window.data().is_empty()
            && let Some((_, e)) = window.failure.take()
        {
            return Err(ReadError::Io(e));
        }
        let head = window.data();
        let (inner, format) = match sniff(head) {
            Sniffed::Pcap => (
                Inner::Legacy(open_legacy(&mut window)?),
                CaptureFormat::Pcap,
            ),
            Sniffed::PcapNg => (Inner::Ng(open_ng(&window)?), CaptureFormat::PcapNg),
            Sniffed::Empty => return Err(ReadError::Empty),
            Sniffed::Json => {
                return Err(ReadError::NotACapture(format!(
                    "it starts like JSON ({}), perhaps a HAR file or a JSON access log",
                    describe_bytes(head)
                )));
            }
            Sniffed::Gzip | Sniffed::Unknown => {
                return Err(ReadError::NotACapture(format!(
                    "its first bytes are {}",
                    describe_bytes(head)
                )));
            }
        };
        let mut notes = ReadNotes {
            gzip,
            ..ReadNotes::default()
        };
        if format == CaptureFormat::Pcap {
            notes.framing_bytes = PCAP_FILE_HEADER as u64;
        }
        Ok(CaptureReader {
            inner,
            window,
            input,
            cursor: Cursor {
                frames: 0,
                pending_consume: 0,
                last_time: Timestamp(0),
                done: false,
            },
            notes,
            format,
            released_at: None,
        })
    }

    pub fn input_id(&self) -> InputId {
        self.input
    }

    /// Number of frames read so far.
    pub(crate) fn frames(&self) -> u64 {
        self.cursor.frames
    }

    /// Bytes of the (decompressed) file read so far, the frame handed out last included.
    pub(crate) fn bytes_read(&self) -> u64 {
        if let Some(at) = self.released_at {
            return at;
        }
        self.window.offset() + self.cursor.pending_consume as u64
    }

    /// The next frame, or `None` at the end of the capture. Corrupt records are skipped and a
    /// damaged tail ends the read, each with a warning (in the input's
    /// [report](crate::CaptureStage::report)) rather than an error: what was read stays valid.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, ReadError> {
        if self.cursor.done {
            return Ok(None);
        }
        self.window
            .consume(std::mem::take(&mut self.cursor.pending_consume));
        let step = match &mut self.inner {
            Inner::Legacy(legacy) => legacy.step(&mut self.window, &mut self.notes),
            Inner::Ng(ng) => ng.step(&mut self.window, &mut self.notes),
        };
        let meta = match step {
            Step::Frame(meta) => meta,
            Step::NgFrame(time, mut meta) => {
                meta.time = time.unwrap_or(self.cursor.last_time);
                meta
            }
            Step::End => {
                self.end();
                return Ok(None);
            }
        };
        self.cursor.frames += 1;
        self.cursor.last_time = meta.time;
        self.cursor.pending_consume = meta.consume;
        let data = self
            .window
            .data()
            .get(meta.data_offset..meta.data_offset + meta.data_len)
            .unwrap_or(&[]);
        Ok(Some(Frame {
            time: meta.time,
            frame: FrameRef::new(self.input, self.cursor.frames),
            linktype: meta.linktype,
            data,
            orig_len: meta.orig_len.max(data.len() as u32),
        }))
    }

    /// The read is over: say why the source stopped, when it stopped early.
    fn end(&mut self) {
        self.cursor.done = true;
        if let Some((at, e)) = self.window.failure.take() {
            self.notes.truncated = true;
            // The gzip decoder, its input ended by a signal, fails as if the file were cut:
            // the signal's own warning says why.
            if mcpf_model::interrupt::stop_requested() {
                return;
            }
            let kind = if self.notes.gzip {
                NoteKind::GzipCut
            } else {
                NoteKind::ReadFailed
            };
            let note = Note::new(kind, 1).at(at).detail(e.to_string());
            self.notes.warnings.push(note);
        }
    }
}

/// Hands the bytes a window already holds back to a reader, then the rest of its source: the
/// gzip decoder starts on the bytes that were sniffed.
struct Unread(Window);

impl Read for Unread {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let w = &mut self.0;
        if w.data().is_empty() {
            if let Some((_, e)) = w.failure.take() {
                return Err(e);
            }
            return w.source.read(buf);
        }
        let n = w.data().len().min(buf.len());
        buf[..n].copy_from_slice(&w.data()[..n]);
        w.consume(n);
        Ok(n)
    }
}

const PCAP_FILE_HEADER: usize = 24;

fn open_legacy(w: &mut Window) -> Result<Legacy, ReadError> {
    if w.fill(PCAP_FILE_HEADER) < PCAP_FILE_HEADER {
        return Err(ReadError::BadHeader(
            "the file ends inside its header".into(),
        ));
    }
    let header = match pcap_parser::parse_pcap_header(w.data()) {
        Ok((_, h)) => h,
        Err(e) => return Err(ReadError::BadHeader(format!("invalid header ({e:?})"))),
    };
    let big_endian = w.data()[0] == 0xa1;
    let modified = header.magic_number == 0xa1b2_cd34;
    w.consume(PCAP_FILE_HEADER);
    Ok(Legacy {
        big_endian,
        nanos: header.is_nanosecond_precision(),
        record_header: if modified { 24 } else { 16 },
        linktype: header.network.0,
        snaplen: header.snaplen,
        prev_secs: None,
        prev_time: Timestamp(0),
    })
}

/// A pcapng file must open with a section header block; everything after it is read block by
/// block.
fn open_ng(w: &Window) -> Result<Ng, ReadError> {
    match ng_frame(w.data(), false) {
        Some((SHB_TYPE, _, be)) => Ok(Ng {
            section: Section {
                interfaces: Vec::new(),
                big_endian: be,
            },
        }),
        _ => Err(ReadError::BadHeader(
            "the section header block has no valid byte-order magic or length".into(),
        )),
    }
}

/// A packet as a pcapng block carries it.
struct NgPacket<'b> {
    if_id: usize,
    /// `None`: the block has no timestamp, the packet inherits the previous one's.
    raw_ts: Option<u64>,
    orig_len: u32,
    data: &'b [u8],
}

/// What one pcapng block turned out to be.
enum BlockRead<'b> {
    Packet(NgPacket<'b>),
    Other,
    Malformed(CorruptUnit),
}

impl Section {
    /// Takes one pcapng block: the packet it carries, if any; the other blocks change the section
    /// or the notes.
    fn read<'b>(&mut self, block: Block<'b>, notes: &mut ReadNotes) -> BlockRead<'b> {
        match block {
            Block::SectionHeader(shb) => {
                // Interface numbering starts again in every section.
                self.interfaces.clear();
                self.big_endian = shb.big_endian();
                BlockRead::Other
            }
            Block::InterfaceDescription(idb) => {
                self.declare(&idb, notes);
                BlockRead::Other
            }
            Block::EnhancedPacket(epb) => BlockRead::Packet(NgPacket {
                if_id: epb.if_id as usize,
                raw_ts: Some((u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low)),
                orig_len: epb.origlen,
                data: &epb.data[..(epb.caplen as usize).min(epb.data.len())],
            }),
            Block::SimplePacket(spb) => {
                // A simple packet block has no timestamp and its captured length is
                // min(original length, snap length): the rest of the body is padding.
                let snap = self.interfaces.first().map(|i| i.snaplen).unwrap_or(0);
                let mut cap = spb.data.len().min(spb.origlen as usize);
                if snap > 0 {
                    cap = cap.min(snap as usize);
                }
                BlockRead::Packet(NgPacket {
                    if_id: 0,
                    raw_ts: None,
                    orig_len: spb.origlen,
                    data: &spb.data[..cap],
                })
            }
            Block::Unknown(ub)
                if ub.block_type == OBSOLETE_PACKET_BLOCK
                    || ub.block_type == OBSOLETE_PACKET_BLOCK.swap_bytes() =>
            {
                match parse_obsolete_packet(ub.data, self.big_endian) {
                    Some(p) => BlockRead::Packet(p),
                    None => BlockRead::Malformed(CorruptUnit::ObsoletePacketBlock),
                }
            }
            Block::InterfaceStatistics(isb) => {
                if let Some(n) = self.interface_drops(&isb) {
                    notes.interface_drops = notes.interface_drops.max(n);
                }
                BlockRead::Other
            }
            Block::DecryptionSecrets(dsb) if dsb.secrets_type.0 == DSB_TLS_KEY_LOG => {
                // The data is padded to 32 bits: the key log is its first secrets_len bytes.
                let len = (dsb.secrets_len as usize).min(dsb.data.len());
                let kept = &mut notes.tls_secrets.0;
                if kept.len() + len <= MAX_DSB_BYTES {
                    kept.extend_from_slice(&dsb.data[..len]);
                    kept.push(b'\n');
                } else {
                    notes.skip("pcapng decryption secrets past 64 MiB (not kept)");
                }
                BlockRead::Other
            }
            Block::DecryptionSecrets(_) => {
                notes.skip("pcapng decryption secrets block of another kind than a TLS key log");
                BlockRead::Other
            }
            _ => BlockRead::Other,
        }
    }

    fn declare(&mut self, idb: &InterfaceDescriptionBlock<'_>, notes: &mut ReadNotes) {
        let units = ts_units(idb.if_tsresol);
        if units.is_none() {
            let kind = NoteKind::InvalidTsresol {
                interface: self.interfaces.len() as u64,
                tsresol: idb.if_tsresol,
            };
            notes.warnings.push(Note::new(kind, 1));
        }
        self.interfaces.push(Interface {
            linktype: idb.linktype.0,
            snaplen: idb.snaplen,
            units_per_sec: units,
            offset_secs: idb.if_tsoffset,
        });
    }

    /// The largest drop count an interface statistics block carries.
    fn interface_drops(&self, isb: &InterfaceStatisticsBlock<'_>) -> Option<u64> {
        let mut drops = None;
        for opt in &isb.options {
            // isb_ifdrop (option 5): packets the interface itself dropped.
            if opt.code.0 == 5 && opt.value.len() >= 8 {
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(&opt.value[..8]);
                let n = if self.big_endian {
                    u64::from_be_bytes(bytes)
                } else {
                    u64::from_le_bytes(bytes)
                };
                drops = drops.max(Some(n));
            }
        }
        drops
    }
}

/// Link type reported for a packet whose pcapng interface was never declared; the link layer
/// decoder counts it as undecodable.
pub(crate) const UNDECLARED_INTERFACE: i32 = -1;

struct PacketMeta {
    time: Timestamp,
    linktype: i32,
    orig_len: u32,
    /// Where the frame's bytes lie in the window, from the start of its record.
    data_offset: usize,
    data_len: usize,
    /// Bytes of the whole record, consumed once the frame is done with.
    consume: usize,
}

enum Step {
    Frame(PacketMeta),
    /// A pcapng packet, with its time when the block has one.
    NgFrame(Option<Timestamp>, PacketMeta),
    End,
}

const OBSOLETE_PACKET_BLOCK: u32 = 0x0000_0002;

/// The obsolete Packet Block (pcapng type 2) that old captures still carry; `pcap-parser` hands it
/// over as an unknown block, so its body is read here: interface (u16), drops (u16), timestamp
/// (2 × u32), captured length, original length, data.
fn parse_obsolete_packet(body: &[u8], big_endian: bool) -> Option<NgPacket<'_>> {
    let u16_at = |o: usize| -> Option<u16> {
        let b: [u8; 2] = body.get(o..o + 2)?.try_into().ok()?;
        Some(if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    let u32_at = |o: usize| -> Option<u32> {
        let b: [u8; 4] = body.get(o..o + 4)?.try_into().ok()?;
        Some(if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let if_id = u16_at(0)?;
    let ts = (u64::from(u32_at(4)?) << 32) | u64::from(u32_at(8)?);
    let caplen = u32_at(12)? as usize;
    let orig_len = u32_at(16)?;
    let data = body.get(20..20usize.checked_add(caplen)?)?;
    Some(NgPacket {
        if_id: usize::from(if_id),
        raw_ts: Some(ts),
        orig_len,
        data,
    })
}

/// Timestamp units per second for an `if_tsresol` byte: 10^n, or 2^n when the top bit is set.
/// (Written here because `pcap-parser` 0.17 rejects every binary resolution: it range-checks the
/// byte before masking the flag.)
fn ts_units(tsresol: u8) -> Option<u64> {
    let n = u32::from(tsresol & 0x7f);
    if tsresol & 0x80 == 0 {
        10u64.checked_pow(n)
    } else {
        1u64.checked_shl(n).filter(|_| n < 64)
    }
}

/// A packet's time from its raw timestamp and its interface's resolution and `if_tsoffset`;
/// `None` when it falls before 1970 or past what nanoseconds since then hold (2262): no clock
/// gives that, a wrong offset or a broken writer does. The packet is then read at the time of
/// the one before it, and counted.
fn ng_time(raw: u64, iface: &Interface) -> Option<Timestamp> {
    let units = iface.units_per_sec.unwrap_or(1_000_000).max(1);
    let frac = raw % units;
    let nanos = (u128::from(frac) * 1_000_000_000 / u128::from(units)) as u32;
    let secs = i128::from(raw / units) + i128::from(iface.offset_secs);
    let max = i128::from(i64::MAX / Timestamp::NANOS_PER_SEC) - 1;
    let secs = i64::try_from(secs)
        .ok()
        .filter(|&s| (0..=max as i64).contains(&s))?;
    Some(Timestamp::from_secs_nanos(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcapng_times_no_clock_gives_are_refused() {
        let iface = |units: u64, offset_secs: i64| Interface {
            linktype: 1,
            snaplen: 0,
            units_per_sec: Some(units),
            offset_secs,
        };
        let t = ng_time(1_796_000_000_123_456, &iface(1_000_000, 0)).unwrap();
        assert_eq!(t, Timestamp::from_secs_nanos(1_796_000_000, 123_456_000));
        assert_eq!(
            ng_time(u64::MAX, &iface(1_000_000_000, 0)),
            None,
            "2^64-1 ns: 2554"
        );
        assert_eq!(
            ng_time(1_796_000_000, &iface(1, -(1 << 40))),
            None,
            "before 1970"
        );
        assert_eq!(ng_time(5, &iface(1, -10)), None);
        assert!(ng_time(5, &iface(1, 0)).is_some(), "1970 itself is a time");
    }

    fn legacy(snaplen: u32) -> Legacy {
        Legacy {
            big_endian: false,
            nanos: false,
            record_header: 16,
            linktype: 1,
            snaplen,
            prev_secs: None,
            prev_time: Timestamp(0),
        }
    }

    fn header(ts_sec: u32, ts_frac: u32, caplen: u32, orig_len: u32) -> RecordHeader {
        RecordHeader {
            ts_sec,
            ts_frac,
            caplen,
            orig_len,
        }
    }

    #[test]
    fn record_headers_are_judged_before_their_data_is_trusted() {
        let f = legacy(65_535);
        let ok = header(1_790_000_000, 5, 60, 60);
        assert_eq!(f.judge(&ok, Some(1_790_000_000)), Judgement::Plausible);
        // No real record is this long, whatever the file header says.
        let huge = header(1_790_000_000, 5, 3_000_000, 3_000_000);
        assert_eq!(f.judge(&huge, None), Judgement::Corrupt);
        for doubtful in [
            header(1_790_000_000, 1_000_000, 60, 60),
            header(1_790_000_000, 5, 60, 59),
            header(1_790_000_000, 5, 0, 0),
            header(1_790_000_000, 5, 70_000, 70_000),
        ] {
            assert_eq!(
                f.judge(&doubtful, None),
                Judgement::Doubtful,
                "{doubtful:?}"
            );
        }
        let jump = header(1_790_000_000 + 31 * 86_400, 5, 60, 60);
        assert_eq!(f.judge(&jump, Some(1_790_000_000)), Judgement::Doubtful);
        assert_eq!(f.judge(&jump, None), Judgement::Plausible);
    }

    #[test]
    fn pcapng_framing_needs_sane_lengths_and_a_byte_order_magic() {
        let mut shb = Vec::new();
        for w in [SHB_TYPE, 28, BYTE_ORDER_MAGIC] {
            shb.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(ng_frame(&shb, false), Some((SHB_TYPE, 28, true)));
        let mut epb = Vec::new();
        for w in [EPB_TYPE, 32, 0] {
            epb.extend_from_slice(&w.to_le_bytes());
        }
        assert_eq!(ng_frame(&epb, false), Some((EPB_TYPE, 32, false)));
        epb[4] = 30;
        assert_eq!(ng_frame(&epb, false), None, "not a multiple of 4");
        epb[4] = 8;
        assert_eq!(ng_frame(&epb, false), None, "shorter than its own framing");
        shb[8] = 0;
        assert_eq!(ng_frame(&shb, false), None, "no byte-order magic");
    }

    #[test]
    fn the_window_scans_a_byte_at_a_time_without_holding_more_than_it_needs() {
        let data: Vec<u8> = (0..5_000_000u32).map(|i| i as u8).collect();
        let mut w = Window::new(Box::new(io::Cursor::new(data)));
        let mut seen = 0u64;
        while w.fill(300_000) > 0 {
            assert_eq!(w.data()[0], w.offset() as u8);
            w.consume(1);
            seen += 1;
            if seen == 1_000_000 {
                break;
            }
        }
        assert!(w.buf.len() <= 300_000 + INITIAL_BUFFER, "{}", w.buf.len());
        assert_eq!(w.offset(), 1_000_000);
    }
}
