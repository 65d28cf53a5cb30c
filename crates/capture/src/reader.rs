//! Streaming pcap / pcapng reader: turns a byte source into timestamped, numbered link-layer
//! frames without ever holding more than one read buffer.
//!
//! Built on `pcap-parser`'s pull readers (`next` → `consume` / `refill`). The format is sniffed
//! from magic bytes, never from the file name, and gzip is unwrapped the same way.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pcap_parser::pcapng::{Block, InterfaceDescriptionBlock, InterfaceStatisticsBlock};
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};

use mcpf_model::{FrameRef, InputId, Timestamp};

/// Read buffer of the pull reader. A record larger than [`MAX_RECORD`] is corrupt by our
/// definition (the largest real link-layer frames are 256 KiB), so the buffer grows up to that and
/// no further: a crafted length field cannot make us allocate gigabytes.
const INITIAL_BUFFER: usize = 1 << 20;
pub(crate) const MAX_RECORD: usize = 16 << 20;

/// The container format of a capture file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CaptureFormat {
    Pcap,
    PcapNg,
}

impl CaptureFormat {
    pub(crate) fn name(self) -> &'static str {
        match self {
            CaptureFormat::Pcap => "pcap",
            CaptureFormat::PcapNg => "pcapng",
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

/// Counts bytes read from the underlying source (before decompression) so progress can be shown.
pub struct CountingReader<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> CountingReader<R> {
    pub fn new(inner: R, counter: Arc<AtomicU64>) -> Self {
        CountingReader { inner, counter }
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
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

enum Inner {
    Legacy(Legacy),
    Ng(Ng),
}

/// A classic pcap file: one link type and one timestamp precision for every record.
struct Legacy {
    reader: Box<LegacyPcapReader<BoxedRead>>,
    linktype: i32,
    snaplen: u32,
    nanos: bool,
}

/// A pcapng file: its link types and timestamp units come from the interfaces each section
/// declares.
struct Ng {
    reader: Box<PcapNGReader<BoxedRead>>,
    section: Section,
}

/// What the current pcapng section declared.
#[derive(Default)]
struct Section {
    interfaces: Vec<Interface>,
    /// Byte order of the current section, for the blocks we read ourselves.
    big_endian: bool,
}

/// Where a read stands, whatever the container format.
struct Cursor {
    frames: u64,
    /// The packet block handed out last stays in the buffer, borrowed by its frame, and is
    /// consumed on the next call.
    pending_consume: usize,
    /// The time of the previous packet, which a packet without a timestamp inherits.
    last_time: Timestamp,
    done: bool,
}

impl Cursor {
    fn new() -> Self {
        Cursor {
            frames: 0,
            pending_consume: 0,
            last_time: Timestamp(0),
            done: false,
        }
    }

    /// Consumes the block handed out last and waits for the next one. Returns its size and the
    /// address the read buffer starts at (packets are described by offsets from it), or `None`
    /// at the end.
    #[inline]
    fn advance<R: PcapReaderIterator + ?Sized>(
        &mut self,
        reader: &mut R,
        notes: &mut ReadNotes,
    ) -> Result<Option<(usize, usize)>, ReadError> {
        reader.consume(std::mem::take(&mut self.pending_consume));
        let Some(consumed) = next_block(reader, notes, &mut self.done)? else {
            return Ok(None);
        };
        Ok(Some((consumed, reader.data().as_ptr() as usize)))
    }

    /// A packet block of `consumed` bytes was read: hand its frame out.
    #[inline]
    fn frame(&mut self, consumed: usize, meta: PacketMeta) -> Step {
        self.last_time = meta.time;
        self.pending_consume = consumed;
        Step::Frame(meta)
    }
}

/// Things noticed while reading that do not stop the read.
#[derive(Debug, Default, Clone)]
pub(crate) struct ReadNotes {
    pub(crate) warnings: Vec<String>,
    /// Packets in the file that were not frames we can decode, by reason.
    pub(crate) skipped: Vec<(&'static str, u64)>,
    /// Packets the capturing interface said it dropped (pcapng ISB `isb_ifdrop`).
    pub(crate) interface_drops: u64,
    pub(crate) truncated: bool,
    pub(crate) gzip: bool,
}

impl ReadNotes {
    pub(crate) fn skip(&mut self, reason: &'static str) {
        match self.skipped.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((reason, 1)),
        }
    }
}

/// A pull reader over one capture file, yielding [`Frame`]s that borrow its buffer.
pub struct CaptureReader {
    inner: Inner,
    input: InputId,
    cursor: Cursor,
    pub(crate) notes: ReadNotes,
    pub(crate) format: CaptureFormat,
}

impl CaptureReader {
    /// Opens a capture from any byte source, unwrapping gzip when the magic bytes say so.
    pub fn open(source: BoxedRead, input: InputId) -> Result<Self, ReadError> {
        let mut buffered = BufReader::with_capacity(64 * 1024, source);
        let head = fill_head(&mut buffered)?;
        let mut gzip = false;
        let (source, head): (BoxedRead, Vec<u8>) = match sniff(&head) {
            Sniffed::Gzip => {
                gzip = true;
                let mut unzipped = BufReader::new(flate2::read::MultiGzDecoder::new(buffered));
                let head = fill_head(&mut unzipped).map_err(|e| match e {
                    ReadError::Io(e) => {
                        ReadError::NotACapture(format!("gzip data that does not decompress: {e}"))
                    }
                    other => other,
                })?;
                (Box::new(unzipped), head)
            }
            _ => (Box::new(buffered), head),
        };
        let mut reader = match sniff(&head) {
            Sniffed::Pcap => Self::legacy(source, input)?,
            Sniffed::PcapNg => Self::pcapng(source, input)?,
            Sniffed::Empty => return Err(ReadError::Empty),
            Sniffed::Json => {
                return Err(ReadError::NotACapture(format!(
                    "it starts like JSON ({}), perhaps a HAR file or a JSON access log",
                    describe_bytes(&head)
                )));
            }
            Sniffed::Gzip | Sniffed::Unknown => {
                return Err(ReadError::NotACapture(format!(
                    "its first bytes are {}",
                    describe_bytes(&head)
                )));
            }
        };
        reader.notes.gzip = gzip;
        Ok(reader)
    }

    fn legacy(source: BoxedRead, input: InputId) -> Result<Self, ReadError> {
        let mut reader = LegacyPcapReader::new(INITIAL_BUFFER, source)
            .map_err(|e| ReadError::BadHeader(pcap_error_text(&e)))?;
        // The first `next` returns the file header, which tells the link type and precision.
        let (linktype, snaplen, nanos, consumed) = match reader.next() {
            Ok((n, PcapBlockOwned::LegacyHeader(h))) => {
                (h.network.0, h.snaplen, h.is_nanosecond_precision(), n)
            }
            Ok(_) => return Err(ReadError::BadHeader("no pcap file header".into())),
            Err(e) => return Err(ReadError::BadHeader(pcap_error_text(&e))),
        };
        reader.consume(consumed);
        Ok(CaptureReader {
            inner: Inner::Legacy(Legacy {
                reader: Box::new(reader),
                linktype,
                snaplen,
                nanos,
            }),
            input,
            cursor: Cursor::new(),
            notes: ReadNotes::default(),
            format: CaptureFormat::Pcap,
        })
    }

    fn pcapng(source: BoxedRead, input: InputId) -> Result<Self, ReadError> {
        let reader = PcapNGReader::new(INITIAL_BUFFER, source)
            .map_err(|e| ReadError::BadHeader(pcap_error_text(&e)))?;
        Ok(CaptureReader {
            inner: Inner::Ng(Ng {
                reader: Box::new(reader),
                section: Section::default(),
            }),
            input,
            cursor: Cursor::new(),
            notes: ReadNotes::default(),
            format: CaptureFormat::PcapNg,
        })
    }

    pub fn input_id(&self) -> InputId {
        self.input
    }

    /// Number of frames read so far.
    pub(crate) fn frames(&self) -> u64 {
        self.cursor.frames
    }

    /// The next frame, or `None` at the end of the capture. A damaged tail ends the read with a
    /// warning (in the input's [report](crate::CaptureStage::report)) rather than an error: what
    /// was read before it stays valid.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, ReadError> {
        let meta = loop {
            if self.cursor.done {
                return Ok(None);
            }
            match self.step()? {
                Step::Frame(meta) => break meta,
                Step::Other => continue,
                Step::End => return Ok(None),
            }
        };
        let buffer = match &self.inner {
            Inner::Legacy(legacy) => legacy.reader.data(),
            Inner::Ng(ng) => ng.reader.data(),
        };
        let data = buffer
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

    /// Parses one block. Packet blocks are left in the buffer (consumed on the next call) and
    /// described by offsets, so the caller can borrow their bytes without parsing them twice.
    fn step(&mut self) -> Result<Step, ReadError> {
        match &mut self.inner {
            Inner::Legacy(legacy) => legacy.step(&mut self.cursor, &mut self.notes),
            Inner::Ng(ng) => ng.step(&mut self.cursor, &mut self.notes),
        }
    }
}

impl Legacy {
    #[inline]
    fn step(&mut self, cursor: &mut Cursor, notes: &mut ReadNotes) -> Result<Step, ReadError> {
        let reader = self.reader.as_mut();
        let Some((consumed, base)) = cursor.advance(reader, notes)? else {
            return Ok(Step::End);
        };
        let Ok((_, PcapBlockOwned::Legacy(block))) = reader.next() else {
            reader.consume(consumed);
            return Ok(Step::Other);
        };
        cursor.frames += 1;
        if self.snaplen > 0 && block.caplen > self.snaplen.max(MAX_SANE_SNAPLEN) {
            notes.warnings.push(format!(
                "frame {} claims {} captured bytes, more than the snap length {}",
                cursor.frames, block.caplen, self.snaplen
            ));
        }
        let sub = if self.nanos {
            block.ts_usec.min(999_999_999)
        } else {
            block.ts_usec.min(999_999).saturating_mul(1000)
        };
        let meta = PacketMeta {
            time: Timestamp::from_secs_nanos(i64::from(block.ts_sec), sub),
            linktype: self.linktype,
            orig_len: block.origlen,
            data_offset: block.data.as_ptr() as usize - base,
            data_len: block.data.len(),
        };
        Ok(cursor.frame(consumed, meta))
    }
}

impl Ng {
    #[inline]
    fn step(&mut self, cursor: &mut Cursor, notes: &mut ReadNotes) -> Result<Step, ReadError> {
        let reader = self.reader.as_mut();
        let Some((consumed, base)) = cursor.advance(reader, notes)? else {
            return Ok(Step::End);
        };
        let packet = match reader.next() {
            Ok((_, PcapBlockOwned::NG(block))) => self.section.read(block, notes),
            _ => None,
        };
        let Some(packet) = packet else {
            reader.consume(consumed);
            return Ok(Step::Other);
        };
        cursor.frames += 1;
        let (time, linktype) = match self.section.interfaces.get(packet.if_id) {
            Some(iface) => {
                let time = packet
                    .raw_ts
                    .map_or(cursor.last_time, |raw| ng_time(raw, iface));
                (time, iface.linktype)
            }
            None => {
                notes.skip("packet for an undeclared pcapng interface");
                (cursor.last_time, UNDECLARED_INTERFACE)
            }
        };
        let meta = PacketMeta {
            time,
            linktype,
            orig_len: packet.orig_len,
            data_offset: packet.data.as_ptr() as usize - base,
            data_len: packet.data.len(),
        };
        Ok(cursor.frame(consumed, meta))
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

impl Section {
    /// Takes one pcapng block: the packet it carries, if any; the other blocks change the section
    /// or the notes.
    fn read<'b>(&mut self, block: Block<'b>, notes: &mut ReadNotes) -> Option<NgPacket<'b>> {
        match block {
            Block::SectionHeader(shb) => {
                // Interface numbering starts again in every section.
                self.interfaces.clear();
                self.big_endian = shb.big_endian();
                None
            }
            Block::InterfaceDescription(idb) => {
                self.declare(&idb, notes);
                None
            }
            Block::EnhancedPacket(epb) => Some(NgPacket {
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
                Some(NgPacket {
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
                let packet = parse_obsolete_packet(ub.data, self.big_endian);
                if packet.is_none() {
                    notes.skip("malformed obsolete pcapng packet block");
                }
                packet
            }
            Block::InterfaceStatistics(isb) => {
                if let Some(n) = self.interface_drops(&isb) {
                    notes.interface_drops = notes.interface_drops.max(n);
                }
                None
            }
            Block::DecryptionSecrets(_) => {
                notes.skip("pcapng decryption secrets block (TLS is not decrypted)");
                None
            }
            _ => None,
        }
    }

    fn declare(&mut self, idb: &InterfaceDescriptionBlock<'_>, notes: &mut ReadNotes) {
        let units = ts_units(idb.if_tsresol);
        if units.is_none() {
            notes.warnings.push(format!(
                "interface {} has an invalid if_tsresol {:#x}; its timestamps are read as microseconds",
                self.interfaces.len(),
                idb.if_tsresol
            ));
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

/// Snap lengths above this are treated as "no limit" (tcpdump writes 262144).
const MAX_SANE_SNAPLEN: u32 = 262_144;

struct PacketMeta {
    time: Timestamp,
    linktype: i32,
    orig_len: u32,
    data_offset: usize,
    data_len: usize,
}

enum Step {
    Frame(PacketMeta),
    Other,
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

fn ng_time(raw: u64, iface: &Interface) -> Timestamp {
    let units = iface.units_per_sec.unwrap_or(1_000_000).max(1);
    let secs = raw / units;
    let frac = raw % units;
    let nanos = (u128::from(frac) * 1_000_000_000 / u128::from(units)) as u32;
    let secs = i64::try_from(secs)
        .unwrap_or(i64::MAX / Timestamp::NANOS_PER_SEC)
        .saturating_add(iface.offset_secs);
    Timestamp::from_secs_nanos(secs, nanos)
}

/// Advances the pull reader until a complete block is available. Returns the size of the block to
/// consume, or `None` at the end (clean or damaged; damage is noted).
fn next_block<R: PcapReaderIterator + ?Sized>(
    reader: &mut R,
    notes: &mut ReadNotes,
    done: &mut bool,
) -> Result<Option<usize>, ReadError> {
    loop {
        let outcome = match reader.next() {
            Ok((consumed, _)) => Ok(consumed),
            Err(e) => Err(owned(&e)),
        };
        match outcome {
            Ok(consumed) => return Ok(Some(consumed)),
            Err(Owned::Eof) => {
                *done = true;
                return Ok(None);
            }
            Err(Owned::Incomplete) => {
                if reader.refill().is_err() {
                    return Err(ReadError::Io(io::Error::other(
                        "the underlying reader failed",
                    )));
                }
            }
            Err(Owned::UnexpectedEof) => {
                notes.truncated = true;
                notes.warnings.push(
                    "the capture is truncated: its last record is incomplete and was ignored"
                        .into(),
                );
                *done = true;
                return Ok(None);
            }
            Err(Owned::TooBig) => {
                let current = reader.data().len().max(INITIAL_BUFFER);
                if current < MAX_RECORD && reader.grow(MAX_RECORD) {
                    if reader.refill().is_err() {
                        return Err(ReadError::Io(io::Error::other(
                            "the underlying reader failed",
                        )));
                    }
                    continue;
                }
                notes.truncated = true;
                notes.warnings.push(format!(
                    "a record after byte {} claims more than {} MiB: the length field is corrupt; reading stopped there",
                    reader.consumed(),
                    MAX_RECORD >> 20
                ));
                *done = true;
                return Ok(None);
            }
            Err(Owned::Corrupt(what)) => {
                notes.truncated = true;
                notes.warnings.push(format!(
                    "corrupt record after byte {}: {what}; reading stopped there",
                    reader.consumed()
                ));
                *done = true;
                return Ok(None);
            }
            Err(Owned::Io) => {
                return Err(ReadError::Io(io::Error::other(
                    "read error (for gzip input: the compressed data is damaged)",
                )));
            }
        }
    }
}

enum Owned {
    Eof,
    Incomplete,
    UnexpectedEof,
    TooBig,
    Corrupt(String),
    Io,
}

fn owned(e: &PcapError<&[u8]>) -> Owned {
    match e {
        PcapError::Eof => Owned::Eof,
        PcapError::Incomplete(_) => Owned::Incomplete,
        PcapError::UnexpectedEof => Owned::UnexpectedEof,
        PcapError::BufferTooSmall => Owned::TooBig,
        PcapError::ReadError => Owned::Io,
        PcapError::HeaderNotRecognized => Owned::Corrupt("header not recognised".into()),
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
            Owned::Corrupt(format!("{kind:?}"))
        }
    }
}

fn pcap_error_text(e: &PcapError<&[u8]>) -> String {
    match e {
        PcapError::Incomplete(_) | PcapError::UnexpectedEof => {
            "the file ends inside its header".into()
        }
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
            format!("invalid header ({kind:?})")
        }
        other => other.to_string(),
    }
}

/// Reads up to 64 bytes without consuming them (a short read is fine: it may be a small file).
fn fill_head<R: BufRead>(reader: &mut R) -> Result<Vec<u8>, ReadError> {
    loop {
        match reader.fill_buf() {
            Ok(buf) => return Ok(buf[..buf.len().min(64)].to_vec()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
}
