//! The events of a stream in progress, packed into bytes.
//!
//! A busy capture has thousands of sessions open at once, each holding every event until it
//! ends, because the detectors reason about whole sessions. As structs (an [`EventRec`], its
//! boxed messages and their MCP details) a progress notification costs about 290 bytes of
//! heap; packed with varints and time and frame deltas it costs about 50. Streams are unpacked
//! once, when their session is finalized, chunk by chunk, so a long stream is never held both
//! packed and as structs.
//!
//! Packing and unpacking an event costs about as much as reading its JSON-RPC, so the first
//! events of a stream are kept as they came while all the streams in progress hold few enough
//! of them so ([`MAX_HELD`]); only what goes past that is packed. A capture whose sessions are
//! not many at once is then never packed at all, and a busy one costs a fixed few megabytes
//! more than packed.
//!
//! The bytes are written and read only here, by the same build, so a decode failure is a bug,
//! not hostile input; it still never panics: decoding stops and returns what it read.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::model::{Attribution, EventRec, Namespace, RareEvent};
use crate::jsonrpc::{
    Details, Fault, KNOWN_METHODS, Kind, McpDetails, Message, RareDetails, RequestId,
};
use mcpf_model::{FrameRef, Mark, Timestamp};

const NO_RARE: RareEvent = RareEvent {
    event_type: None,
    endpoint: None,
    retry: None,
};

/// Bytes past which a stream's packed events go on in a new chunk. A stream in one `Vec` would
/// keep up to half its capacity idle, hold three times its bytes while it grows, and hold all of
/// them while it is unpacked; in chunks, only the last one grows, and each is freed once read.
const CHUNK: usize = 64 * 1024;

/// Events and messages (each one unit, see [`Held::units`]) that the streams of the process
/// hold as structs at most, together: a unit so held takes about 120 bytes more than packed,
/// so this is at most about 2 MB more, whatever the capture. Past it, events are packed.
/// At 2^17 (16 MB) the 256 MiB benchmark's peak grew from 88 to 110 MiB with no gain in wall
/// or CPU time on two cores (the instructions saved are few against the memory touched); at
/// 2^14 the 64 MiB capture's peak is 44 MB against 55.
const MAX_HELD: usize = 1 << 14;

/// Units held as structs by every stream of the process (see [`MAX_HELD`]).
static HELD: AtomicUsize = AtomicUsize::new(0);

/// A stream's first events, kept as structs while [`MAX_HELD`] allows; what they count against
/// it is given back when they are unpacked or dropped.
#[derive(Default)]
struct Held {
    events: Vec<EventRec>,
    units: usize,
}

impl Held {
    /// What an event counts against [`MAX_HELD`]: its record and each of its messages.
    fn units(rec: &EventRec) -> usize {
        1 + rec.messages.len()
    }

    /// Keeps `rec` as it is if the budget allows; gives it back otherwise.
    fn hold(&mut self, rec: EventRec) -> Result<(), EventRec> {
        let units = Held::units(&rec);
        if HELD.fetch_add(units, Ordering::Relaxed) + units > MAX_HELD {
            HELD.fetch_sub(units, Ordering::Relaxed);
            return Err(rec);
        }
        self.units += units;
        self.events.push(rec);
        Ok(())
    }

    /// The events, their units given back.
    fn take(&mut self) -> Vec<EventRec> {
        HELD.fetch_sub(std::mem::take(&mut self.units), Ordering::Relaxed);
        std::mem::take(&mut self.events)
    }
}

impl Clone for Held {
    fn clone(&self) -> Self {
        // A copy counts too (beyond the budget, if it is spent: copies are rare).
        HELD.fetch_add(self.units, Ordering::Relaxed);
        Held {
            events: self.events.clone(),
            units: self.units,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.fetch_sub(self.units, Ordering::Relaxed);
    }
}

/// The events, however they are held.
impl std::fmt::Debug for PackedEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedEvents")
            .field("mcp_evidence", &self.mcp_evidence)
            .field("events", &self.events())
            .finish()
    }
}

/// Where the previous record left the deltas: its time, frame and input.
type Last = (i64, u64, u32);

/// Events of one stream: the first ones as structs (see [`Held`]), the rest packed.
#[derive(Clone, Default)]
pub(crate) struct PackedEvents {
    /// Events kept as structs: all come before the packed ones.
    held: Held,
    /// Whole records back to back; a record never spans two chunks.
    chunks: Vec<Vec<u8>>,
    count: u32,
    /// Some event carries an MCP message, or is the legacy transport's `endpoint` event.
    pub(crate) mcp_evidence: bool,
    /// The previous event's time and frame, held or packed: each packed event stores its
    /// difference from them.
    last_time: i64,
    last_frame: u64,
    last_input: u32,
}

impl PackedEvents {
    /// Writes it whole, for a spilled session.
    pub(crate) fn encode(&self, w: &mut Vec<u8>) {
        // The events held as structs are packed first: the packed ones' deltas go on from them.
        let mut held = Vec::new();
        let mut last = Last::default();
        for rec in &self.held.events {
            put_record(&mut held, rec, &mut last);
        }
        put_u64(w, u64::from(self.count));
        w.push(u8::from(self.mcp_evidence));
        put_i64(w, self.last_time);
        put_u64(w, self.last_frame);
        put_u64(w, u64::from(self.last_input));
        let packed = self.chunks.iter().map(Vec::len).sum::<usize>();
        put_u64(w, (held.len() + packed) as u64);
        w.extend_from_slice(&held);
        for c in &self.chunks {
            w.extend_from_slice(c);
        }
    }

    pub(crate) fn decode(r: &mut Reader) -> Option<PackedEvents> {
        let count = u32::try_from(r.u64()?).ok()?;
        let mcp_evidence = r.byte()? != 0;
        let last_time = r.i64()?;
        let last_frame = r.u64()?;
        let last_input = u32::try_from(r.u64()?).ok()?;
        let n = usize::try_from(r.u64()?).ok()?;
        let bytes = r.take(n)?;
        Some(PackedEvents {
            held: Held::default(),
            chunks: if bytes.is_empty() {
                Vec::new()
            } else {
                vec![bytes.to_vec()]
            },
            count,
            mcp_evidence,
            last_time,
            last_frame,
            last_input,
        })
    }
    pub(crate) fn len(&self) -> usize {
        self.count as usize
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds the stream's next event: held as it is while nothing is packed yet and
    /// [`MAX_HELD`] allows, else packed.
    pub(crate) fn push(&mut self, rec: EventRec) {
        debug_assert!(
            rec.namespace == Namespace::Unknown && rec.attribution == Attribution::Unknown
        );
        self.mcp_evidence |=
            rec.endpoint().is_some() || rec.messages.iter().any(|m| m.is_mcp_evidence());
        self.count += 1;
        let mut last = (self.last_time, self.last_frame, self.last_input);
        let rec = match self.chunks.is_empty() {
            true => match self.held.hold(rec) {
                Ok(()) => {
                    let held = self.held.events.last();
                    if let Some(rec) = held {
                        (self.last_time, self.last_frame, self.last_input) =
                            (rec.mark.time.0, rec.mark.frame.frame, rec.mark.frame.input);
                    }
                    return;
                }
                Err(rec) => rec,
            },
            false => rec,
        };
        if self.chunks.last().is_none_or(|c| c.len() >= CHUNK) {
            if let Some(full) = self.chunks.last_mut() {
                full.shrink_to_fit();
            }
            self.chunks.push(Vec::new());
        }
        let Some(w) = self.chunks.last_mut() else {
            return;
        };
        let start = w.len();
        put_record(w, &rec, &mut last);
        (self.last_time, self.last_frame, self.last_input) = last;
        if w.len() > CHUNK && start > 0 {
            // The record goes on in a chunk of its own rather than growing this one past it.
            let next = w[start..].to_vec();
            w.truncate(start);
            w.shrink_to_fit();
            self.chunks.push(next);
        }
    }

    /// Gives back the slack of a stream that will not grow any more.
    pub(crate) fn shrink_to_fit(&mut self) {
        if let Some(last) = self.chunks.last_mut() {
            last.shrink_to_fit();
        }
    }

    /// Bytes held: what a test measures memory by.
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum()
    }

    /// The events as structs; each chunk is freed once read, so a long stream is not held
    /// twice.
    pub(crate) fn unpack(mut self) -> Vec<EventRec> {
        let mut out = self.held.take();
        let mut at = out.last().map_or(Last::default(), |rec| {
            (rec.mark.time.0, rec.mark.frame.frame, rec.mark.frame.input)
        });
        out.reserve_exact(self.len() - out.len());
        for chunk in std::mem::take(&mut self.chunks) {
            if !read_chunk(&chunk, self.count as usize, &mut at, &mut out) {
                break;
            }
        }
        out
    }

    /// The same, leaving them as they are.
    pub(crate) fn events(&self) -> Vec<EventRec> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.held.events.iter().cloned());
        let mut at = out.last().map_or(Last::default(), |rec| {
            (rec.mark.time.0, rec.mark.frame.frame, rec.mark.frame.input)
        });
        for chunk in &self.chunks {
            if !read_chunk(chunk, self.len(), &mut at, &mut out) {
                break;
            }
        }
        out
    }
}

/// Writes one event's record, its time and frame as differences from `last`, which it moves on.
fn put_record(w: &mut Vec<u8>, rec: &EventRec, last: &mut Last) {
    let (last_time, last_frame, last_input) = last;
    let rare = rec.rare.as_deref().unwrap_or(&NO_RARE);
    let flags = u8::from(rec.id.is_some())
        | u8::from(rare.event_type.is_some()) << 1
        | u8::from(rare.endpoint.is_some()) << 2
        | u8::from(rare.retry.is_some()) << 3
        | u8::from(rec.priming) << 4
        | u8::from(rec.after_gap) << 5
        | u8::from(rec.estimated_time) << 6
        | u8::from(rec.mark.frame.input != *last_input) << 7;
    w.push(flags);
    put_opt_str(w, rec.id.as_deref());
    put_opt_str(w, rare.event_type.as_deref());
    put_opt_str(w, rare.endpoint.as_deref());
    if let Some(r) = rare.retry {
        put_u64(w, u64::from(r));
    }
    if rec.mark.frame.input != *last_input {
        put_u64(w, u64::from(rec.mark.frame.input));
        *last_input = rec.mark.frame.input;
    }
    put_i64(w, rec.mark.time.0.wrapping_sub(*last_time));
    put_i64(w, rec.mark.frame.frame.wrapping_sub(*last_frame) as i64);
    *last_time = rec.mark.time.0;
    *last_frame = rec.mark.frame.frame;
    w.extend_from_slice(&rec.data_hash.to_le_bytes());
    put_u64(w, u64::from(rec.index));
    put_u64(w, u64::from(rec.data_len));
    // Where the data's bytes are, offset + 1 (0: not kept).
    put_u64(w, rec.data_at);
    put_u64(w, rec.messages.len() as u64);
    for m in rec.messages.iter() {
        put_message(w, m);
    }
}

/// Reads the events of one chunk into `out`, up to `count` in all; false (a bug, never input)
/// if they do not decode.
fn read_chunk(
    chunk: &[u8],
    count: usize,
    (time, frame, input): &mut Last,
    out: &mut Vec<EventRec>,
) -> bool {
    let mut r = Reader::new(chunk);
    while r.pos < chunk.len() && out.len() < count {
        match read_event(&mut r, time, frame, input) {
            Some(ev) => out.push(ev),
            None => {
                debug_assert!(false, "packed records do not decode");
                return false;
            }
        }
    }
    true
}

/// JSON-RPC messages of a JSON response body, packed until their session is analysed.
#[derive(Clone, Debug, Default)]
pub(crate) struct PackedMessages {
    bytes: Box<[u8]>,
    count: u32,
    /// Some message is JSON-RPC (not malformed).
    pub(crate) jsonrpc: bool,
    /// Some message proves the exchange is MCP (see [`Message::is_mcp_evidence`]).
    pub(crate) mcp_evidence: bool,
}

impl PackedMessages {
    /// Writes it whole, for a spilled session.
    pub(crate) fn encode(&self, w: &mut Vec<u8>) {
        put_u64(w, u64::from(self.count));
        w.push(u8::from(self.jsonrpc) | u8::from(self.mcp_evidence) << 1);
        put_u64(w, self.bytes.len() as u64);
        w.extend_from_slice(&self.bytes);
    }

    pub(crate) fn decode(r: &mut Reader) -> Option<PackedMessages> {
        let count = u32::try_from(r.u64()?).ok()?;
        let flags = r.byte()?;
        let n = usize::try_from(r.u64()?).ok()?;
        Some(PackedMessages {
            bytes: r.take(n)?.into(),
            count,
            jsonrpc: flags & 1 != 0,
            mcp_evidence: flags & 2 != 0,
        })
    }

    pub(crate) fn pack(messages: &[Message]) -> PackedMessages {
        let mut w = Vec::new();
        for m in messages {
            put_message(&mut w, m);
        }
        PackedMessages {
            bytes: w.into_boxed_slice(),
            count: u32::try_from(messages.len()).unwrap_or(u32::MAX),
            jsonrpc: messages.iter().any(|m| m.kind != Kind::Malformed),
            mcp_evidence: messages.iter().any(Message::is_mcp_evidence),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub(crate) fn unpack(&self) -> Vec<Message> {
        read_all(&self.bytes, self.count as usize, read_message)
    }
}

/// Reads `count` records written by this module; stops early (a bug, never input) if they do
/// not decode.
fn read_all<T>(
    bytes: &[u8],
    count: usize,
    mut read: impl FnMut(&mut Reader) -> Option<T>,
) -> Vec<T> {
    let mut r = Reader { bytes, pos: 0 };
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        match read(&mut r) {
            Some(v) => out.push(v),
            None => {
                debug_assert!(false, "packed records do not decode");
                break;
            }
        }
    }
    out
}

fn read_event(
    r: &mut Reader,
    time: &mut i64,
    frame: &mut u64,
    input: &mut u32,
) -> Option<EventRec> {
    let flags = r.byte()?;
    let bit = |n: u8| flags & (1 << n) != 0;
    let id = r.opt_str(bit(0))?.map(Box::from);
    let event_type = r.opt_str(bit(1))?.map(Box::from);
    let endpoint = r.opt_str(bit(2))?.map(Box::from);
    let retry = if bit(3) {
        Some(u32::try_from(r.u64()?).ok()?)
    } else {
        None
    };
    if bit(7) {
        *input = u32::try_from(r.u64()?).ok()?;
    }
    *time = time.wrapping_add(r.i64()?);
    *frame = frame.wrapping_add(r.i64()? as u64);
    let data_hash = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
    let index = u32::try_from(r.u64()?).ok()?;
    let data_len = u32::try_from(r.u64()?).ok()?;
    let data_at = r.u64()?;
    let n = r.u64()?;
    let mut messages = Vec::with_capacity(n.min(64) as usize);
    for _ in 0..n {
        messages.push(read_message(r)?);
    }
    Some(EventRec {
        id,
        mark: Mark {
            time: Timestamp(*time),
            frame: FrameRef::new(*input, *frame),
        },
        data_hash,
        data_at,
        messages: messages.into_boxed_slice(),
        rare: RareEvent::boxed(event_type, endpoint, retry),
        index,
        data_len,
        namespace: Namespace::Unknown,
        attribution: Attribution::Unknown,
        priming: bit(4),
        after_gap: bit(5),
        estimated_time: bit(6),
    })
}

const KINDS: [Kind; 5] = [
    Kind::Request,
    Kind::Notification,
    Kind::Response,
    Kind::Error,
    Kind::Malformed,
];

pub(crate) fn put_message(w: &mut Vec<u8>, m: &Message) {
    let kind = KINDS.iter().position(|k| *k == m.kind).unwrap_or(4) as u8;
    let details = m.mcp.0.as_deref();
    let flags = kind
        | u8::from(m.null_id) << 3
        | u8::from(m.method.is_some()) << 4
        | u8::from(m.error_code().is_some()) << 5
        | u8::from(m.error_message().is_some() || m.malformed().is_some()) << 6
        | u8::from(details.is_some()) << 7;
    w.push(flags);
    put_request_id(w, m.id.as_ref());
    if let Some(method) = m.method.as_deref() {
        put_method(w, method);
    }
    if let Some(c) = m.error_code() {
        put_i64(w, c);
    }
    if m.error_message().is_some() || m.malformed().is_some() {
        w.push(u8::from(m.error_message().is_some()) | u8::from(m.malformed().is_some()) << 1);
        put_opt_str(w, m.error_message());
        put_opt_str(w, m.malformed());
    }
    if let Some(d) = details {
        put_details(w, d);
    }
}

pub(crate) fn read_message(r: &mut Reader) -> Option<Message> {
    let flags = r.byte()?;
    let kind = *KINDS.get(usize::from(flags & 7))?;
    let id = read_request_id(r)?;
    let method = if flags & 1 << 4 != 0 {
        Some(read_method(r)?)
    } else {
        None
    };
    let error_code = if flags & 1 << 5 != 0 {
        Some(r.i64()?)
    } else {
        None
    };
    let (mut error_message, mut malformed) = (None, None);
    if flags & 1 << 6 != 0 {
        let which = r.byte()?;
        error_message = r.opt_str(which & 1 != 0)?.map(str::to_string);
        malformed = r.opt_str(which & 2 != 0)?.map(str::to_string);
    }
    let mcp = if flags & 1 << 7 != 0 {
        Details(Some(Box::new(read_details(r)?)))
    } else {
        Details(None)
    };
    Some(Message {
        kind,
        id,
        null_id: flags & 1 << 3 != 0,
        method,
        fault: Fault::boxed(error_code, error_message, malformed),
        mcp,
    })
}

/// Common MCP methods as their index in the known list (from 1), others as 0 and the text.
fn put_method(w: &mut Vec<u8>, method: &str) {
    // Parsed methods are interned: a known one is found by address, without comparing text.
    let known = KNOWN_METHODS
        .iter()
        .position(|k| std::ptr::eq(k.as_ptr(), method.as_ptr()) && k.len() == method.len())
        .or_else(|| KNOWN_METHODS.iter().position(|k| *k == method));
    match known {
        Some(i) if i < 255 => w.push(i as u8 + 1),
        _ => {
            w.push(0);
            put_str(w, method);
        }
    }
}

fn read_method(r: &mut Reader) -> Option<Cow<'static, str>> {
    match r.byte()? {
        0 => Some(Cow::Owned(r.str()?.to_string())),
        i => KNOWN_METHODS
            .get(usize::from(i) - 1)
            .map(|k| Cow::Borrowed(*k)),
    }
}

fn put_details(w: &mut Vec<u8>, d: &McpDetails) {
    let rare = d.rare.as_deref();
    let flags = u8::from(d.progress_token.is_some())
        | u8::from(d.progress.is_some()) << 1
        | u8::from(d.total.is_some()) << 2
        | u8::from(rare.is_some()) << 4;
    w.push(flags);
    put_opt_str(w, d.progress_token.as_deref());
    for n in [&d.progress, &d.total].into_iter().flatten() {
        put_number(w, n);
    }
    if let Some(rare) = rare {
        let flags = u8::from(rare.tool_error) | u8::from(rare.truncated) << 1;
        w.push(flags);
        for s in [
            &rare.tool,
            &rare.arguments,
            &rare.idempotency_key,
            &rare.protocol_version,
            &rare.peer_info,
        ] {
            w.push(u8::from(s.is_some()));
            put_opt_str(w, s.as_deref());
        }
        put_request_id(w, rare.cancels.as_ref());
    }
}

fn read_details(r: &mut Reader) -> Option<McpDetails> {
    let flags = r.byte()?;
    let mut d = McpDetails {
        progress_token: r.opt_str(flags & 1 != 0)?.map(str::to_string),
        ..McpDetails::default()
    };
    if flags & 2 != 0 {
        d.progress = Some(read_number(r)?);
    }
    if flags & 4 != 0 {
        d.total = Some(read_number(r)?);
    }
    if flags & 16 != 0 {
        let bits = r.byte()?;
        let mut strings: [Option<String>; 5] = Default::default();
        for s in &mut strings {
            let present = r.byte()? != 0;
            *s = r.opt_str(present)?.map(str::to_string);
        }
        let [
            tool,
            arguments,
            idempotency_key,
            protocol_version,
            peer_info,
        ] = strings;
        d.rare = Some(Box::new(RareDetails {
            tool,
            arguments,
            idempotency_key,
            protocol_version,
            peer_info,
            tool_error: bits & 1 != 0,
            cancels: read_request_id(r)?,
            truncated: bits & 2 != 0,
        }));
    }
    Some(d)
}

pub(crate) fn put_request_id(w: &mut Vec<u8>, id: Option<&RequestId>) {
    match id {
        None => w.push(0),
        Some(RequestId::Number(n)) => {
            w.push(1);
            put_str(w, n);
        }
        Some(RequestId::String(s)) => {
            w.push(2);
            put_str(w, s);
        }
    }
}

pub(crate) fn read_request_id(r: &mut Reader) -> Option<Option<RequestId>> {
    Some(match r.byte()? {
        0 => None,
        1 => Some(RequestId::Number(r.str()?.to_string())),
        2 => Some(RequestId::String(r.str()?.to_string())),
        _ => return None,
    })
}

/// JSON numbers as serde_json holds them (without arbitrary precision): u64, i64 or f64.
fn put_number(w: &mut Vec<u8>, n: &serde_json::Number) {
    if let Some(u) = n.as_u64() {
        w.push(0);
        put_u64(w, u);
    } else if let Some(i) = n.as_i64() {
        w.push(1);
        put_i64(w, i);
    } else {
        w.push(2);
        w.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
    }
}

fn read_number(r: &mut Reader) -> Option<serde_json::Number> {
    match r.byte()? {
        0 => Some(r.u64()?.into()),
        1 => Some(r.i64()?.into()),
        2 => serde_json::Number::from_f64(f64::from_le_bytes(r.take(8)?.try_into().ok()?)),
        _ => None,
    }
}

pub(crate) fn put_u64(w: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        w.push((v as u8) | 0x80);
        v >>= 7;
    }
    w.push(v as u8);
}

pub(crate) fn put_i64(w: &mut Vec<u8>, v: i64) {
    put_u64(w, ((v << 1) ^ (v >> 63)) as u64);
}

pub(crate) fn put_str(w: &mut Vec<u8>, s: &str) {
    put_u64(w, s.len() as u64);
    w.extend_from_slice(s.as_bytes());
}

pub(crate) fn put_opt_str(w: &mut Vec<u8>, s: Option<&str>) {
    if let Some(s) = s {
        put_str(w, s);
    }
}

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    pub(crate) fn i64(&mut self) -> Option<i64> {
        let u = self.u64()?;
        Some((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.u64()?).ok()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// A string written by [`put_opt_str`], present when `present` says so.
    pub(crate) fn opt_str(&mut self, present: bool) -> Option<Option<&'a str>> {
        if present {
            self.str().map(Some)
        } else {
            Some(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rec(id: Option<&str>, payload: &str, time: i64, frame: u64) -> EventRec {
        EventRec {
            id: id.map(Box::from),
            mark: Mark {
                time: Timestamp(time),
                frame: FrameRef::new(0, frame),
            },
            data_hash: 0x0123_4567_89ab_cdef ^ time as u64,
            data_at: if frame.is_multiple_of(3) {
                0
            } else {
                frame % 1_000_000 * 7 + 1
            },
            messages: crate::jsonrpc::parse_payload(payload.as_bytes()).into_boxed_slice(),
            rare: None,
            index: 0,
            data_len: payload.len() as u32,
            namespace: Namespace::Unknown,
            attribution: Attribution::Unknown,
            priming: false,
            after_gap: false,
            estimated_time: false,
        }
    }

    fn same(a: &EventRec, b: &EventRec) {
        assert_eq!(a.id, b.id);
        assert_eq!(a.mark, b.mark);
        assert_eq!(a.data_hash, b.data_hash);
        assert_eq!(a.data(), b.data());
        assert_eq!(a.messages, b.messages);
        assert_eq!(a.rare, b.rare);
        assert_eq!((a.index, a.data_len), (b.index, b.data_len));
        assert_eq!(
            (a.priming, a.after_gap, a.estimated_time),
            (b.priming, b.after_gap, b.estimated_time)
        );
    }

    const PAYLOADS: &[&str] = &[
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":0.5,"total":10}}"#,
        r#"{"jsonrpc":"2.0","id":"abc","result":{"content":[],"isError":true}}"#,
        r#"{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"nope"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"b":1,"a":[2]},"_meta":{"progressToken":"p","idempotencyKey":"k"}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r9"}}"#,
        r#"{"jsonrpc":"2.0","method":"x/custom","params":{"progress":18446744073709551615}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}]"#,
        "not json at all",
        "",
    ];

    #[test]
    fn every_kind_of_message_round_trips() {
        let mut packed = PackedEvents::default();
        let mut recs = Vec::new();
        for (i, p) in PAYLOADS.iter().enumerate() {
            let mut r = rec(
                Some(&format!("{i}")),
                p,
                1_000 * i as i64 - 5_000,
                10 + i as u64,
            );
            r.index = i as u32;
            r.rare = RareEvent::boxed(
                (i % 4 == 1).then(|| Box::from("endpoint")),
                (i % 4 == 1).then(|| Box::from("/messages?sid=1")),
                (i % 3 == 0).then_some(3000),
            );
            r.priming = i == 2;
            r.after_gap = i == 3;
            r.estimated_time = i == 4;
            r.mark.frame.input = (i / 4) as u32;
            packed.push(r.clone());
            recs.push(r);
        }
        assert!(
            recs.iter()
                .any(|r| r.messages.iter().any(|m| m.mcp.0.is_some()))
        );
        let back = packed.unpack();
        assert_eq!(back.len(), recs.len());
        for (a, b) in recs.iter().zip(&back) {
            same(a, b);
        }
    }

    #[test]
    fn response_bodies_round_trip() {
        for p in PAYLOADS {
            let msgs = crate::jsonrpc::parse_payload(p.as_bytes());
            let packed = PackedMessages::pack(&msgs);
            assert_eq!(packed.unpack(), msgs, "{p}");
            assert_eq!(
                packed.jsonrpc,
                msgs.iter().any(|m| m.kind != Kind::Malformed),
                "{p}"
            );
        }
    }

    /// Events of a stream that packs from its first event on, as one does once [`MAX_HELD`] is
    /// spent.
    fn packing() -> PackedEvents {
        PackedEvents {
            chunks: vec![Vec::new()],
            ..PackedEvents::default()
        }
    }

    #[test]
    fn events_held_then_packed_round_trip() {
        let mut packed = PackedEvents::default();
        let mut recs = Vec::new();
        for (i, p) in PAYLOADS.iter().enumerate() {
            if i == 4 {
                // The budget spent: what comes next is packed.
                packed.chunks.push(Vec::new());
            }
            let mut r = rec(Some(&format!("{i}")), p, 7_000 * i as i64, 3 * i as u64);
            r.mark.frame.input = (i / 3) as u32;
            packed.push(r.clone());
            recs.push(r);
        }
        assert_eq!(packed.len(), recs.len());
        let mut w = Vec::new();
        packed.encode(&mut w);
        let spilled = PackedEvents::decode(&mut Reader::new(&w)).expect("decodes");
        assert_eq!(format!("{spilled:?}"), format!("{packed:?}"));
        for back in [packed.events(), spilled.unpack(), packed.clone().unpack()] {
            assert_eq!(back.len(), recs.len());
            for (a, b) in recs.iter().zip(&back) {
                same(a, b);
            }
        }
        let units: usize = recs.iter().map(Held::units).sum();
        assert!(packed.held.units <= units);
        assert_eq!(
            packed.held.units,
            packed.held.events.iter().map(Held::units).sum::<usize>()
        );
    }

    #[test]
    fn events_over_many_chunks_round_trip() {
        let mut packed = packing();
        let mut recs = Vec::new();
        for i in 0..6000u64 {
            // Now and then a record far larger than the others, to end a chunk early.
            let id = if i % 1000 == 999 {
                "x".repeat(CHUNK / 3)
            } else {
                format!("1-{i}")
            };
            let r = rec(
                Some(&id),
                PAYLOADS[i as usize % PAYLOADS.len()],
                i as i64,
                i,
            );
            packed.push(r.clone());
            recs.push(r);
        }
        packed.shrink_to_fit();
        assert!(packed.chunks.len() > 4, "{} chunks", packed.chunks.len());
        assert!(packed.chunks.iter().all(|c| c.len() <= CHUNK + CHUNK / 2));
        let held: usize = packed.chunks.iter().map(Vec::len).sum();
        assert_eq!(packed.heap_bytes(), held, "no chunk keeps idle capacity");
        let mut w = Vec::new();
        packed.encode(&mut w);
        let spilled = PackedEvents::decode(&mut Reader::new(&w)).expect("decodes");
        for back in [packed.events(), spilled.unpack(), packed.unpack()] {
            assert_eq!(back.len(), recs.len());
            for (a, b) in recs.iter().zip(&back) {
                same(a, b);
            }
        }
    }

    #[test]
    fn packed_progress_events_are_small() {
        let mut packed = packing();
        let p = PAYLOADS[0];
        for i in 0..1000u64 {
            packed.push(rec(
                Some(&format!("1-{i}")),
                p,
                1_700_000_000_000_000_000 + i as i64 * 3_000_000,
                5000 + 3 * i,
            ));
        }
        packed.shrink_to_fit();
        assert!(
            packed.heap_bytes() < 1000 * 48,
            "{} bytes",
            packed.heap_bytes()
        );
    }

    proptest! {
        #[test]
        fn arbitrary_events_round_trip(
            events in proptest::collection::vec(
                (proptest::option::of("[ -~]{0,12}"), any::<i64>(), any::<u64>(), any::<u32>(), 0usize..PAYLOADS.len(), any::<u8>()),
                0..40,
            )
        ) {
            let mut packed = PackedEvents::default();
            let mut recs = Vec::new();
            for (id, time, frame, input, p, bits) in events {
                let mut r = rec(id.as_deref(), PAYLOADS[p], time, frame);
                r.mark.frame.input = input;
                r.rare = RareEvent::boxed(
                    (bits & 2 != 0).then(|| Box::from("ping")),
                    None,
                    (bits & 1 != 0).then_some(u32::from(bits)),
                );
                r.priming = bits & 4 != 0;
                packed.push(r.clone());
                recs.push(r);
            }
            let back = packed.unpack();
            prop_assert_eq!(back.len(), recs.len());
            for (a, b) in recs.iter().zip(&back) {
                same(a, b);
            }
        }
    }
}
