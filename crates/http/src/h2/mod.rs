//! One TCP connection seen as HTTP/2 (RFC 9113): over TLS after ALPN `h2`, or in clear with
//! prior knowledge, or after an `Upgrade: h2c`. Each client-initiated stream is one exchange,
//! reported through the same [`HttpEvent`]s as HTTP/1.1: its request when the client ends it,
//! its response head, the Server-Sent Events of its body as they come, and how it ended:
//! `END_STREAM`, a `RST_STREAM` (a stream reset, not a closed connection: the connection and
//! its other streams go on), a refusal (above the last stream of the server's `GOAWAY`, or
//! `REFUSED_STREAM`: never processed), or the connection's end.
//!
//! Header blocks are decoded with HPACK (`loona-hpack`), one decoder per direction whose
//! dynamic table follows every block in order; its size is bounded by what the receiving side
//! advertised, and never past [`MAX_TABLE`]. A block that cannot be decoded, or a capture gap,
//! loses the table (and the frame boundaries, after a gap): that direction is read no further,
//! and the streams it left open end with [`Outcome::Gap`]. Nothing is guessed past that point.
//!
//! Flow control is followed as a passive observer can: each side's connection and stream
//! windows, from the SETTINGS and WINDOW_UPDATE frames of the other side. A sender that used
//! its whole window waits; a wait that ends is counted, one still waiting when its stream or
//! the capture ends is reported (a stalled stream, not an idle one).

mod flow;
mod frame;

use std::net::SocketAddr;

use rustc_hash::FxHashMap as HashMap;

use flow::{Flow, StreamWindow};
use frame::{END_HEADERS, END_STREAM, FrameHead, Kind, PADDED, PRIORITY, Piece, Reader};

use super::conn::{Counts, MAX_HEADERS, frame_name, never_dropped};
use super::payload::Payload;
use super::sse::{SseEvent, SseParser};
use super::{
    ExchangeId, Headers, HttpEvent, HttpSink, Outcome, Problem, Request, ResponseEnd, ResponseHead,
};
use mcpf_model::{Anomaly, AnomalyKind, ConnId, Direction, Mark};

pub(crate) use frame::PREFACE;

/// `Request::version` and `ResponseHead::version` of an HTTP/2 message.
pub const HTTP2_VERSION: u8 = 20;
/// The largest HPACK dynamic table a decoder keeps, whatever an endpoint advertised.
pub(crate) const MAX_TABLE: usize = 64 << 10;
/// A header block (a HEADERS frame and its CONTINUATIONs) is read up to this size.
const MAX_BLOCK: usize = 1 << 20;
/// Decoded bytes (names and values) of the fields one header block keeps: 4 times what an
/// HTTP/1.1 head may take. Each field is counted, pseudo-headers and the fields that frame a
/// message included: one 4 KiB entry of the HPACK table referenced by a byte each a million
/// times would otherwise be copied a million times.
pub(crate) const MAX_BLOCK_FIELD_BYTES: usize = 256 << 10;
/// Decoded bytes the header blocks of one direction of a connection keep in all (a hundred
/// thousand requests of 600 bytes of headers), past which each block keeps at most
/// [`LEAST_BLOCK_FIELD_BYTES`]: far above a legitimate head, yet a block of one byte can no
/// longer become a 256 KiB one.
pub(crate) const MAX_CONN_FIELD_BYTES: u64 = 64 << 20;
pub(crate) const LEAST_BLOCK_FIELD_BYTES: usize = 8 << 10;
/// Pseudo-header fields a block may have (RFC 9113 §8.3 defines five, each at most once).
const MAX_PSEUDO: usize = 8;
/// Streams open at once on a connection; past it new streams are counted and not followed.
const MAX_OPEN_STREAMS: usize = 4096;
/// Events of a response held while its request has not ended (a server may answer before the
/// client ends its stream); past it the request is reported as it stands.
const MAX_QUEUED: usize = 4096;
/// Bytes of response events held, over all streams of a connection, while their requests are
/// still being sent; past it the stream holding the most reports its request as it stands.
const MAX_QUEUED_BYTES: usize = 16 << 20;

/// RFC 9113 §7: the stream was not processed.
const REFUSED_STREAM: u32 = 0x7;

/// Error codes of RST_STREAM and GOAWAY (RFC 9113 §7), by name.
fn error_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    match NAMES.get(code as usize) {
        Some(name) => format!("{name} (0x{code:x})"),
        None => format!("unknown error 0x{code:x}"),
    }
}

fn di(dir: Direction) -> usize {
    match dir {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}

fn other(dir: Direction) -> Direction {
    match dir {
        Direction::ClientToServer => Direction::ServerToClient,
        Direction::ServerToClient => Direction::ClientToServer,
    }
}

fn side(dir: Direction) -> &'static str {
    match dir {
        Direction::ClientToServer => "client",
        Direction::ServerToClient => "server",
    }
}

/// A header block being read: a HEADERS or PUSH_PROMISE frame and its CONTINUATIONs.
#[derive(Debug)]
struct Block {
    stream: u32,
    end_stream: bool,
    push: bool,
    bytes: Vec<u8>,
    first: Mark,
}

#[derive(Debug)]
enum Start {
    Request { method: String, target: String },
    Response,
}

#[derive(Debug)]
struct Message {
    start: Start,
    headers: Headers,
    payload: Payload,
    first: Mark,
    last: Mark,
}

#[derive(Debug)]
struct Stream {
    exchange: ExchangeId,
    /// The request, while the client has not ended its side.
    request: Option<Message>,
    request_done: bool,
    /// Opened above the last stream a GOAWAY of the server allowed: never processed.
    refused: bool,
    /// The response, once its head came and until it ends.
    response: Option<Message>,
    responded: bool,
    interim: Vec<u16>,
    /// Response events that came before the request ended, in order, and their bytes.
    queued: Vec<HttpEvent>,
    queued_bytes: usize,
    window: StreamWindow,
}

/// How a stream or a message of it ended, for the events that report it.
#[derive(Clone, Copy, Debug)]
struct End {
    outcome: Outcome,
    closed_by: Option<Direction>,
    mark: Mark,
    /// Cut where its side's frames became unreadable: at a gap of these many bytes, of which
    /// these the snap length cut.
    cut: Cut,
}

#[derive(Clone, Copy, Debug, Default)]
struct Cut {
    gap_bytes: u64,
    snaplen_bytes: u64,
}

impl std::fmt::Debug for H2Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Connection")
            .field("id", &self.id)
            .field("streams", &self.streams.len())
            .finish_non_exhaustive()
    }
}

pub(crate) struct H2Connection {
    id: ConnId,
    client: SocketAddr,
    server: SocketAddr,
    readers: [Reader; 2],
    /// The HPACK decoder of the blocks each side sends.
    decoders: [Box<loona_hpack::Decoder<'static>>; 2],
    /// Decoded header bytes each direction's blocks kept so far.
    header_bytes: [u64; 2],
    block: [Option<Block>; 2],
    streams: HashMap<u32, Stream>,
    next_index: u32,
    flow: Flow,
    /// Bytes of the response events all streams hold until their requests end.
    queued_bytes: usize,
    /// The highest stream each side opened, and the last one a GOAWAY of the server allowed.
    last_stream: [u32; 2],
    first_fin: Option<Direction>,
    /// Where each side's frames became unreadable at a capture gap: what that gap was.
    cut: [Cut; 2],
    /// The last stream of the peer a side's GOAWAY said it would process: streams the peer
    /// opens above it after are refused (RFC 9113 §6.8).
    goaway_last: [Option<u32>; 2],
    streams_refused: u64,
    events: Vec<SseEvent>,
    pub(crate) counts: Counts,
    pub(crate) anomalies: u64,
    pub(crate) skipped: u64,
}

impl H2Connection {
    pub(crate) fn new(id: ConnId, client: SocketAddr, server: SocketAddr) -> Self {
        H2Connection {
            id,
            client,
            server,
            readers: [Reader::new(true), Reader::new(false)],
            decoders: [new_decoder(), new_decoder()],
            header_bytes: [0; 2],
            block: [None, None],
            streams: HashMap::default(),
            next_index: 0,
            flow: Flow::default(),
            queued_bytes: 0,
            last_stream: [0; 2],
            first_fin: None,
            cut: [Cut::default(); 2],
            goaway_last: [None; 2],
            streams_refused: 0,
            events: Vec::new(),
            counts: Counts::default(),
            anomalies: 0,
            skipped: 0,
        }
    }

    /// A connection upgraded from HTTP/1.1 (RFC 7540 §3.2): stream 1 is the request that asked
    /// for it, already reported whole as `exchange`; its response comes in HTTP/2, after the
    /// `interim` statuses (the 101 among them).
    pub(crate) fn upgraded(
        id: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        exchange: ExchangeId,
        interim: Vec<u16>,
        http2_settings: Option<&[u8]>,
    ) -> Self {
        let mut c = H2Connection::new(id, client, server);
        // The client's first SETTINGS came in the upgrade request (`HTTP2-Settings`).
        if let Some(settings) = http2_settings {
            c.settings(Direction::ClientToServer, settings);
        }
        c.next_index = exchange.index + 1;
        c.last_stream[0] = 1;
        let mut stream = c.new_stream(exchange);
        stream.request_done = true;
        stream.interim = interim;
        c.streams.insert(1, stream);
        c
    }

    fn new_stream(&self, exchange: ExchangeId) -> Stream {
        Stream {
            exchange,
            request: None,
            request_done: false,
            refused: false,
            response: None,
            responded: false,
            interim: Vec::new(),
            queued: Vec::new(),
            queued_bytes: 0,
            window: StreamWindow::default(),
        }
    }

    /// Reports an anomaly of `kind` on this connection, its sentence saying it is HTTP/2's.
    fn anomaly(
        &mut self,
        (kind, what): Problem,
        dir: Direction,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        self.anomalies += 1;
        sink.on_http(HttpEvent::Anomaly(Anomaly {
            kind,
            conn: self.id,
            dir,
            mark,
            detail: format!("HTTP/2: {what}"),
        }));
    }

    pub(crate) fn data(
        &mut self,
        dir: Direction,
        data: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if self.readers[di(dir)].is_broken() {
            self.skipped += data.len() as u64;
            return;
        }
        self.counts.events_in_packet = 0;
        // The reader is taken out while it hands its pieces to `self`; a placeholder stands in
        // its place, and stopping the direction on the way (`unreadable`) stops the placeholder,
        // which is carried over to the reader once it is back.
        let mut reader = std::mem::replace(&mut self.readers[di(dir)], Reader::new(false));
        reader.feed(data, &mut |piece| self.piece(dir, piece, mark, sink));
        if self.readers[di(dir)].is_broken() {
            reader.stop();
        }
        self.readers[di(dir)] = reader;
    }

    fn piece(&mut self, dir: Direction, piece: Piece<'_>, mark: Mark, sink: &mut impl HttpSink) {
        if self.readers[di(dir)].is_broken() {
            return;
        }
        match piece {
            Piece::Preface => {}
            Piece::Frame { head, payload, cut } => self.frame(dir, head, payload, cut, mark, sink),
            Piece::Data { stream, bytes } => self.body(dir, stream, bytes, mark, sink),
            Piece::DataEnd {
                stream,
                end_stream,
                flow_len,
            } => {
                self.spend_window(dir, stream, flow_len, mark);
                if end_stream {
                    self.end_side(dir, stream, mark, sink);
                }
            }
            Piece::Broken(kind, why) => self.unreadable(dir, (kind, why), mark, sink),
        }
    }

    /// `dir`'s bytes cannot be read from here on: the streams it left open end cut.
    fn unreadable(&mut self, dir: Direction, why: Problem, mark: Mark, sink: &mut impl HttpSink) {
        self.unreadable_at(dir, why, Cut::default(), mark, sink);
    }

    /// As [`Self::unreadable`], at a capture gap (`cut`).
    fn unreadable_at(
        &mut self,
        dir: Direction,
        (kind, why): Problem,
        cut: Cut,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        self.readers[di(dir)].stop();
        self.cut[di(dir)] = cut;
        self.block[di(dir)] = None;
        let open: Vec<u32> = self
            .open_streams()
            .into_iter()
            .filter(|id| self.streams.get(id).is_some_and(|s| in_progress(s, dir)))
            .collect();
        let what = format!(
            "the {}'s frames are not read past here: {why}{}",
            side(dir),
            match open.len() {
                0 => String::new(),
                1 => "; 1 stream cut".into(),
                n => format!("; {n} streams cut"),
            }
        );
        self.anomaly((kind, what), dir, mark, sink);
        let end = End {
            outcome: Outcome::Gap,
            closed_by: None,
            mark,
            cut,
        };
        for id in open {
            match dir {
                Direction::ClientToServer => self.end_request(id, end, sink),
                Direction::ServerToClient => self.end_stream(id, end, true, sink),
            }
        }
    }

    fn open_streams(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.streams.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    fn frame(
        &mut self,
        dir: Direction,
        head: FrameHead,
        payload: &[u8],
        cut: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if self.block[di(dir)].is_some() && head.kind != Kind::Continuation {
            let why = format!("a {:?} frame inside a header block (§6.10)", head.kind);
            return self.unreadable(dir, (AnomalyKind::H2FrameError, why), mark, sink);
        }
        match head.kind {
            Kind::Headers | Kind::PushPromise => {
                self.begin_block(dir, head, payload, cut, mark, sink)
            }
            Kind::Continuation => self.continue_block(dir, head, payload, cut, mark, sink),
            Kind::Settings if !head.has(frame::ACK) => self.settings(dir, payload),
            Kind::WindowUpdate if payload.len() >= 4 => {
                let inc =
                    u32::from_be_bytes([payload[0] & 0x7f, payload[1], payload[2], payload[3]]);
                self.window_update(other(dir), head.stream, i64::from(inc), mark);
            }
            Kind::RstStream if payload.len() >= 4 => {
                let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                self.reset(dir, head.stream, code, mark, sink);
            }
            Kind::GoAway if payload.len() >= 8 => self.goaway(dir, payload, mark, sink),
            _ => {}
        }
    }

    fn begin_block(
        &mut self,
        dir: Direction,
        head: FrameHead,
        payload: &[u8],
        cut: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let push = head.kind == Kind::PushPromise;
        let Some(fragment) = block_fragment(head, payload) else {
            let why = format!("a malformed {:?} frame", head.kind);
            return self.unreadable(dir, (AnomalyKind::H2FrameError, why), mark, sink);
        };
        self.block[di(dir)] = Some(Block {
            stream: head.stream,
            end_stream: !push && head.has(END_STREAM),
            push,
            bytes: fragment.to_vec(),
            first: mark,
        });
        self.continue_block(dir, head, &[], cut, mark, sink);
    }

    fn continue_block(
        &mut self,
        dir: Direction,
        head: FrameHead,
        payload: &[u8],
        cut: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let Some(block) = self.block[di(dir)].as_mut() else {
            let why = "a CONTINUATION frame with no header block".into();
            return self.unreadable(dir, (AnomalyKind::H2FrameError, why), mark, sink);
        };
        if head.stream != block.stream {
            let why = format!(
                "a CONTINUATION frame of stream {} inside the header block of stream {} (§6.10)",
                head.stream, block.stream
            );
            return self.unreadable(dir, (AnomalyKind::H2FrameError, why), mark, sink);
        }
        block.bytes.extend_from_slice(payload);
        if cut || block.bytes.len() > MAX_BLOCK {
            let why = format!("a header block over {} KiB", MAX_BLOCK >> 10);
            let kind = AnomalyKind::H2HeaderBlockTooLarge;
            return self.unreadable(dir, (kind, why), mark, sink);
        }
        if !head.has(END_HEADERS) {
            return;
        }
        let block = self.block[di(dir)].take().expect("checked above");
        let fields = match self.decode_block(dir, &block.bytes) {
            Ok(fields) => fields,
            Err(e) => {
                let why = format!("HPACK: {e:?}");
                return self.unreadable(dir, (AnomalyKind::H2HpackError, why), mark, sink);
            }
        };
        self.report_dropped(dir, &fields, mark, sink);
        if block.push {
            // Pushed responses answer no request of the client's: decoded for the table only.
            return;
        }
        self.header_block(dir, block, fields.kept, mark, sink);
    }

    /// Decodes a header block with `dir`'s HPACK table (which every field updates, kept or
    /// not) into the fields kept: see [`Fields`].
    fn decode_block(
        &mut self,
        dir: Direction,
        bytes: &[u8],
    ) -> Result<Fields, loona_hpack::decoder::DecoderError> {
        let spent = &mut self.header_bytes[di(dir)];
        let mut fields = Fields::new(block_allowance(*spent));
        self.decoders[di(dir)].decode_with_cb(bytes, |name, value| fields.take(&name, &value))?;
        *spent += fields.kept_bytes as u64;
        Ok(fields)
    }

    /// Says what a header block's fields lost to their caps, one anomaly per cap.
    fn report_dropped(
        &mut self,
        dir: Direction,
        fields: &Fields,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if fields.past_count > 0 {
            let n = fields.past_count;
            self.counts.headers_dropped += n;
            let what = format!("{n} header fields past the first {MAX_HEADERS} dropped");
            self.anomaly((AnomalyKind::HeaderFieldsDropped, what), dir, mark, sink);
        }
        if fields.past_bytes > 0 {
            let (n, bytes) = (fields.past_bytes, fields.bytes_dropped);
            self.counts.header_fields_past_bytes += n;
            let what = format!(
                "{n} header fields ({bytes} decoded bytes) dropped: past the {} KiB of decoded \
                 names and values a header block keeps ({} KiB once the {} MiB a direction of \
                 the connection keeps are spent), or a pseudo-header repeated",
                MAX_BLOCK_FIELD_BYTES >> 10,
                LEAST_BLOCK_FIELD_BYTES >> 10,
                MAX_CONN_FIELD_BYTES >> 20
            );
            self.anomaly((AnomalyKind::HeaderBytesDropped, what), dir, mark, sink);
        }
    }

    fn header_block(
        &mut self,
        dir: Direction,
        block: Block,
        fields: Vec<(String, String)>,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let id = block.stream;
        match dir {
            Direction::ClientToServer if !self.streams.contains_key(&id) => {
                if id <= self.last_stream[0] || id.is_multiple_of(2) {
                    // A stream already ended (trailers after a reset) or not the client's.
                    return;
                }
                self.last_stream[0] = id;
                self.open_request(id, block, fields, mark, sink);
            }
            // Trailers end the side that sent them.
            _ if self.streams.get(&id).is_some_and(|s| side_open(s, dir)) => {
                if block.end_stream {
                    self.end_side(dir, id, mark, sink);
                }
            }
            Direction::ServerToClient => {
                self.open_orphan(id);
                self.response_head(id, block, fields, mark, sink)
            }
            Direction::ClientToServer => {}
        }
    }

    fn open_request(
        &mut self,
        id: u32,
        block: Block,
        fields: Vec<(String, String)>,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let Some(mut stream) = self.next_stream() else {
            if self.streams_refused == 1 {
                let what = format!(
                    "stream {id} and later ones not followed: {MAX_OPEN_STREAMS} streams open at once"
                );
                let problem = (AnomalyKind::H2TooManyStreams, what);
                self.anomaly(problem, Direction::ClientToServer, mark, sink);
            }
            return;
        };
        self.counts.h2_streams += 1;
        let (pseudo, headers) = split_pseudo(fields);
        let method = pseudo_value(&pseudo, ":method").unwrap_or_default();
        let target = pseudo_value(&pseudo, ":path")
            .or_else(|| pseudo_value(&pseudo, ":authority"))
            .unwrap_or_default();
        let headers = with_host(headers, pseudo_value(&pseudo, ":authority"));
        if let Some(last) = self.goaway_last[di(Direction::ServerToClient)]
            && id > last
        {
            stream.refused = true;
            let what = format!(
                "stream {id} opened after the server's GOAWAY (last stream {last}): not processed"
            );
            let problem = (AnomalyKind::H2StreamAfterGoaway, what);
            self.anomaly(problem, Direction::ClientToServer, mark, sink);
        }
        stream.request = Some(Message {
            payload: Payload::new(&headers),
            start: Start::Request { method, target },
            headers,
            first: block.first,
            last: mark,
        });
        self.streams.insert(id, stream);
        if block.end_stream {
            self.end_side(Direction::ClientToServer, id, mark, sink);
        }
    }

    /// A response on a stream whose request the capture lost (the client's frames became
    /// unreadable before it): reported as an exchange with no request, as HTTP/1.1 reports a
    /// response whose request was lost.
    fn open_orphan(&mut self, id: u32) {
        let lost = self.readers[di(Direction::ClientToServer)].is_broken();
        if !lost
            || id.is_multiple_of(2)
            || id <= self.last_stream[0]
            || self.streams.contains_key(&id)
        {
            return;
        }
        let Some(mut stream) = self.next_stream() else {
            return;
        };
        self.last_stream[0] = id;
        stream.request_done = true;
        self.streams.insert(id, stream);
    }

    /// A new stream of the client's, the connection's next exchange; none past
    /// [`MAX_OPEN_STREAMS`] open at once (counted).
    fn next_stream(&mut self) -> Option<Stream> {
        if self.streams.len() >= MAX_OPEN_STREAMS {
            self.streams_refused += 1;
            return None;
        }
        let exchange = ExchangeId {
            conn: self.id,
            index: self.next_index,
        };
        self.next_index += 1;
        Some(self.new_stream(exchange))
    }

    fn response_head(
        &mut self,
        id: u32,
        block: Block,
        fields: Vec<(String, String)>,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let (pseudo, headers) = split_pseudo(fields);
        let status = pseudo_value(&pseudo, ":status")
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or(0);
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if s.responded {
            return;
        }
        if (100..200).contains(&status) {
            s.interim.push(status);
            return;
        }
        s.responded = true;
        let event_stream =
            (200..300).contains(&status) && headers.media_type_is("text/event-stream");
        let head = ResponseHead {
            exchange: s.exchange,
            status,
            reason: String::new(),
            version: HTTP2_VERSION,
            headers: headers.clone(),
            interim: std::mem::take(&mut s.interim),
            first: block.first,
            event_stream,
            head_complete: true,
            upstream: None,
        };
        let mut payload = Payload::new(&headers);
        if event_stream {
            payload.sse = Some(SseParser::new());
        }
        s.response = Some(Message {
            start: Start::Response,
            headers,
            payload,
            first: block.first,
            last: mark,
        });
        self.emit(
            id,
            vec![HttpEvent::ResponseHead(Box::new(head))],
            mark,
            sink,
        );
        if block.end_stream {
            self.end_side(Direction::ServerToClient, id, mark, sink);
        }
    }

    fn body(
        &mut self,
        dir: Direction,
        id: u32,
        bytes: &[u8],
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let msg = match dir {
            Direction::ClientToServer => s.request.as_mut(),
            Direction::ServerToClient => s.response.as_mut(),
        };
        let Some(msg) = msg else {
            return;
        };
        msg.last = mark;
        let failed = msg
            .payload
            .write(bytes, true, mark, &mut self.events, &mut self.counts);
        let exchange = s.exchange;
        let events: Vec<HttpEvent> = self
            .events
            .drain(..)
            .map(|event| HttpEvent::SseEvent { exchange, event })
            .collect();
        self.emit(id, events, mark, sink);
        if let Some(e) = failed {
            self.anomaly((e.kind(), format!("stream {id}: {e}")), dir, mark, sink);
        }
    }

    /// Reports response events of stream `id` now, or holds them until its request is reported
    /// (a server may answer before the client ends its stream); past [`MAX_QUEUED`] events on
    /// the stream, or [`MAX_QUEUED_BYTES`] over the connection, the request is reported as it
    /// stands, so that they can go on.
    fn emit(&mut self, id: u32, events: Vec<HttpEvent>, mark: Mark, sink: &mut impl HttpSink) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if s.request_done {
            return events.into_iter().for_each(|e| sink.on_http(e));
        }
        let bytes: usize = events.iter().map(event_bytes).sum();
        s.queued.extend(events);
        s.queued_bytes += bytes;
        self.queued_bytes += bytes;
        let over = s.queued.len() > MAX_QUEUED || self.queued_bytes > MAX_QUEUED_BYTES;
        if over {
            let what = format!(
                "stream {id}: the response went on past {MAX_QUEUED} events or {} MiB while the \
                 request was still being sent; the request is reported as it stood",
                MAX_QUEUED_BYTES >> 20
            );
            let problem = (AnomalyKind::H2ResponseQueueFull, what);
            self.anomaly(problem, Direction::ServerToClient, mark, sink);
            let end = End {
                outcome: Outcome::Gap,
                closed_by: None,
                mark,
                cut: Cut::default(),
            };
            self.end_request(id, end, sink);
        }
    }

    /// `dir` ended its side of a stream (`END_STREAM`).
    fn end_side(&mut self, dir: Direction, id: u32, mark: Mark, sink: &mut impl HttpSink) {
        let end = End {
            outcome: Outcome::Complete,
            closed_by: None,
            mark,
            cut: Cut::default(),
        };
        match dir {
            Direction::ClientToServer => {
                self.end_request(id, end, sink);
                if self.streams.get(&id).is_some_and(|s| s.refused) {
                    self.refuse_stream(id, mark, sink);
                }
            }
            Direction::ServerToClient => self.end_stream(id, end, false, sink),
        }
    }

    /// Reports the request of a stream (ended as `end` says) and the response events it held.
    fn end_request(&mut self, id: u32, end: End, sink: &mut impl HttpSink) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if s.request_done {
            return;
        }
        s.request_done = true;
        if let Some(msg) = s.request.take() {
            let exchange = s.exchange;
            let events = self.finish(Direction::ClientToServer, exchange, msg, end, sink);
            events.into_iter().for_each(|e| sink.on_http(e));
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        self.queued_bytes -= std::mem::take(&mut s.queued_bytes).min(self.queued_bytes);
        for event in s.queued.drain(..) {
            sink.on_http(event);
        }
        if s.response.is_none() && s.responded {
            // The response had ended before the request did.
            self.streams.remove(&id);
        }
    }

    /// Ends a stream: its request if still open, and its response, or says none came
    /// (`unknown`: whether one came is not known, after a gap).
    fn end_stream(&mut self, id: u32, end: End, unknown: bool, sink: &mut impl HttpSink) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let exchange = s.exchange;
        let response = s.response.take();
        let responded = s.responded;
        s.responded = true;
        let events = match response {
            Some(msg) => self.finish(Direction::ServerToClient, exchange, msg, end, sink),
            None if !responded => vec![HttpEvent::NoResponse {
                exchange,
                outcome: end.outcome,
                closed_by: end.closed_by,
                mark: end.mark,
                unknown,
                when_unknown: false,
                gap_bytes: end.cut.gap_bytes,
                snaplen_bytes: end.cut.snaplen_bytes,
            }],
            None => Vec::new(),
        };
        // Before the request ended, they wait for it (with what the response sent before).
        self.emit(id, events, end.mark, sink);
        if self.streams.get(&id).is_some_and(|s| s.request_done) {
            self.streams.remove(&id);
        }
    }

    /// The events that report a finished message: the events its body still held, then the
    /// request, or the end of the response.
    fn finish(
        &mut self,
        dir: Direction,
        exchange: ExchangeId,
        mut msg: Message,
        end: End,
        sink: &mut impl HttpSink,
    ) -> Vec<HttpEvent> {
        let complete = end.outcome == Outcome::Complete;
        let notes = msg
            .payload
            .finish(complete, end.mark, &mut self.events, &mut self.counts);
        for problem in notes {
            self.anomaly(problem, dir, end.mark, sink);
        }
        let mut events: Vec<HttpEvent> = self
            .events
            .drain(..)
            .map(|event| HttpEvent::SseEvent { exchange, event })
            .collect();
        if !complete && end.mark > msg.last {
            msg.last = end.mark;
        }
        msg.payload.body.gap_bytes += end.cut.gap_bytes;
        msg.payload.body.snaplen_bytes += end.cut.snaplen_bytes;
        events.push(match msg.start {
            Start::Request { method, target } => HttpEvent::Request(Box::new(Request {
                exchange,
                client: self.client,
                server: self.server,
                method,
                target,
                version: HTTP2_VERSION,
                headers: msg.headers,
                body: msg.payload.body,
                first: msg.first,
                last: msg.last,
                outcome: end.outcome,
                head_complete: true,
            })),
            Start::Response => HttpEvent::ResponseEnd(Box::new(ResponseEnd {
                exchange,
                body: msg.payload.body,
                last: msg.last,
                outcome: end.outcome,
                closed_by: end.closed_by,
                sse: msg.payload.sse.map(|s| s.stats),
                when_unknown: false,
            })),
        });
        events
    }

    fn reset(&mut self, dir: Direction, id: u32, code: u32, mark: Mark, sink: &mut impl HttpSink) {
        if !self.streams.contains_key(&id) {
            return;
        }
        // A client cancelling a stream is how it stops reading one (an event stream it is done
        // with): an ordinary end, like closing an HTTP/1.1 connection. So is a server's NO_ERROR
        // after its whole response: the request's body is no longer wanted (§8.1).
        let answered = self
            .streams
            .get(&id)
            .is_some_and(|s| s.responded && s.response.is_none());
        let ordinary = match dir {
            Direction::ClientToServer => matches!(code, 0 | 8),
            Direction::ServerToClient => code == 0 && answered,
        };
        if !ordinary {
            let what = format!(
                "stream {id} reset by the {}: {}",
                side(dir),
                error_name(code)
            );
            self.anomaly((AnomalyKind::H2StreamReset, what), dir, mark, sink);
        }
        match (dir, code) {
            (Direction::ServerToClient, REFUSED_STREAM) => self.refuse_stream(id, mark, sink),
            _ => self.reset_stream(id, dir, mark, sink),
        }
    }

    /// Ends a stream the server refused (never processed).
    fn refuse_stream(&mut self, id: u32, mark: Mark, sink: &mut impl HttpSink) {
        self.end_reset(id, Outcome::Refused, Direction::ServerToClient, mark, sink);
    }

    /// Ends a stream reset by `by` with RST_STREAM.
    fn reset_stream(&mut self, id: u32, by: Direction, mark: Mark, sink: &mut impl HttpSink) {
        self.end_reset(id, Outcome::StreamReset, by, mark, sink);
    }

    fn end_reset(
        &mut self,
        id: u32,
        outcome: Outcome,
        by: Direction,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        self.counts.h2_streams_reset += 1;
        self.report_stall(id, mark, "the stream was reset", sink);
        let end = End {
            outcome,
            closed_by: Some(by),
            mark,
            cut: Cut::default(),
        };
        self.end_request(id, end, sink);
        self.end_stream(id, end, false, sink);
        self.streams.remove(&id);
    }

    fn goaway(&mut self, dir: Direction, payload: &[u8], mark: Mark, sink: &mut impl HttpSink) {
        self.counts.h2_goaways += 1;
        let last = u32::from_be_bytes([payload[0] & 0x7f, payload[1], payload[2], payload[3]]);
        // A later GOAWAY may lower the last stream, never raise it (§6.8).
        let d = di(dir);
        self.goaway_last[d] = Some(self.goaway_last[d].map_or(last, |l| l.min(last)));
        let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
        // Streams the sender's peer opened above `last` were not processed (§6.8).
        // Only the client's streams are followed: a server's GOAWAY above the last of them
        // leaves nothing to look for (and a flood of them costs no scan).
        let unprocessed: Vec<u32> =
            if dir == Direction::ServerToClient && last < self.last_stream[0] {
                let mut ids: Vec<u32> = self
                    .streams
                    .keys()
                    .copied()
                    .filter(|&id| id > last)
                    .collect();
                ids.sort_unstable();
                ids
            } else {
                Vec::new()
            };
        if code != 0 || !unprocessed.is_empty() {
            let debug = String::from_utf8_lossy(&payload[8..payload.len().min(8 + 256)]);
            let what = format!(
                "GOAWAY from the {}: {}, last stream {last}{}{}",
                side(dir),
                error_name(code),
                match unprocessed.len() {
                    0 => String::new(),
                    n => format!("; {n} stream(s) above it not processed"),
                },
                if debug.is_empty() {
                    String::new()
                } else {
                    format!(" (\"{debug}\")")
                }
            );
            self.anomaly((AnomalyKind::H2Goaway, what), dir, mark, sink);
        }
        for id in unprocessed {
            self.refuse_stream(id, mark, sink);
        }
    }

    fn settings(&mut self, dir: Direction, payload: &[u8]) {
        for entry in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([entry[0], entry[1]]);
            let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
            match id {
                // What `dir` decodes with: the bound of the table the other side encodes with.
                1 => self.decoders[di(other(dir))]
                    .set_max_allowed_table_size((value as usize).min(MAX_TABLE)),
                4 => self.flow.set_initial(other(dir), value),
                _ => {}
            }
        }
    }

    /// `sender` sent `len` flow-controlled bytes on stream `id`.
    fn spend_window(&mut self, sender: Direction, id: u32, len: u32, mark: Mark) {
        if len == 0 {
            return;
        }
        let stream = self.streams.get_mut(&id).map(|s| &mut s.window);
        self.flow.spend(sender, stream, len, mark);
    }

    /// The other side granted `sender` `inc` more bytes on stream `id` (0: the connection).
    fn window_update(&mut self, sender: Direction, id: u32, inc: i64, mark: Mark) {
        match id {
            0 => self.flow.grant_conn(sender, inc, mark, &mut self.counts),
            _ => {
                if let Some(s) = self.streams.get_mut(&id) {
                    let counts = &mut self.counts;
                    self.flow
                        .grant_stream(sender, &mut s.window, inc, mark, counts);
                }
            }
        }
    }

    /// A stream that ends, or the capture, while its sender still waits for flow-control credit
    /// was stalled, not idle: said with the frame that used the window up.
    fn report_stall(&mut self, id: u32, mark: Mark, until: &str, sink: &mut impl HttpSink) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let stalls: Vec<_> = [Direction::ClientToServer, Direction::ServerToClient]
            .into_iter()
            .filter(|&dir| side_open(s, dir))
            .filter_map(|dir| self.flow.waiting(&s.window, dir).map(|w| (dir, w)))
            .collect();
        for (dir, (since, which)) in stalls {
            let what = format!(
                "stream {id}: the {} used all of the {which} flow-control window at {} and was \
                 granted no more for {:.3} s, until {until}",
                side(dir),
                frame_name(since),
                mark.time.seconds_since(since.time).max(0.0)
            );
            self.counts.h2_flow_stalled_at_end += 1;
            self.anomaly((AnomalyKind::H2FlowControlStall, what), dir, mark, sink);
        }
    }

    pub(crate) fn gap(
        &mut self,
        dir: Direction,
        len: u64,
        snaplen: bool,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        if self.readers[di(dir)].is_broken() {
            return;
        }
        let why = format!(
            "{len} bytes are missing from the capture (the frame boundaries and the HPACK table \
             are lost with them)"
        );
        let cut = Cut {
            gap_bytes: len,
            snaplen_bytes: if snaplen { len } else { 0 },
        };
        self.unreadable_at(dir, (AnomalyKind::H2CaptureGap, why), cut, mark, sink);
    }

    pub(crate) fn fin(&mut self, dir: Direction) {
        self.first_fin.get_or_insert(dir);
    }

    pub(crate) fn close(
        &mut self,
        outcome: Outcome,
        by: Option<Direction>,
        mark: Mark,
        sink: &mut impl HttpSink,
    ) {
        let end = End {
            outcome,
            closed_by: by.or(self.first_fin),
            mark,
            cut: Cut::default(),
        };
        // Past a point where the server's frames became unreadable, whether a response came is
        // not known: the streams are cut, not unanswered.
        let server_lost = self.readers[di(Direction::ServerToClient)].is_broken();
        let response_end = if server_lost {
            End {
                outcome: Outcome::Gap,
                closed_by: None,
                mark,
                cut: self.cut[di(Direction::ServerToClient)],
            }
        } else {
            end
        };
        let until = match outcome {
            Outcome::CutByCaptureEnd => "the capture ended",
            _ => "the connection ended",
        };
        for id in self.open_streams() {
            if self.streams.get(&id).is_some_and(|s| s.refused) {
                self.refuse_stream(id, mark, sink);
                continue;
            }
            self.report_stall(id, mark, until, sink);
            self.end_request(id, end, sink);
            self.end_stream(id, response_end, server_lost, sink);
        }
    }
}

/// The decoded bytes a block may keep when its direction kept `spent` before it.
fn block_allowance(spent: u64) -> usize {
    if spent < MAX_CONN_FIELD_BYTES {
        MAX_BLOCK_FIELD_BYTES
    } else {
        LEAST_BLOCK_FIELD_BYTES
    }
}

/// The fields of one header block as they are decoded: each kept while the block's decoded
/// bytes allow it, a regular one also only among the first [`MAX_HEADERS`] unless it frames the
/// message or names its session; a pseudo-header only the first time it comes.
#[derive(Debug)]
struct Fields {
    kept: Vec<(String, String)>,
    allowance: usize,
    kept_bytes: usize,
    /// Names of the pseudo-headers kept.
    pseudo: Vec<Box<[u8]>>,
    /// Fields dropped past the count of fields, and past the bytes (or repeated pseudo-headers)
    /// with their decoded bytes.
    past_count: u64,
    past_bytes: u64,
    bytes_dropped: u64,
}

impl Fields {
    fn new(allowance: usize) -> Self {
        Fields {
            kept: Vec::new(),
            allowance,
            kept_bytes: 0,
            pseudo: Vec::new(),
            past_count: 0,
            past_bytes: 0,
            bytes_dropped: 0,
        }
    }

    fn take(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len();
        let pseudo = name.starts_with(b":");
        let repeated =
            pseudo && (self.pseudo.len() >= MAX_PSEUDO || self.pseudo.iter().any(|p| **p == *name));
        if repeated || self.kept_bytes + size > self.allowance {
            self.past_bytes += 1;
            self.bytes_dropped += size as u64;
            return;
        }
        if !(self.kept.len() < MAX_HEADERS || pseudo || never_dropped(name)) {
            self.past_count += 1;
            return;
        }
        if pseudo {
            self.pseudo.push(name.into());
        }
        self.kept_bytes += size;
        self.kept.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
}

fn new_decoder() -> Box<loona_hpack::Decoder<'static>> {
    let mut d = Box::new(loona_hpack::Decoder::new());
    // Until SETTINGS say otherwise, the protocol's default (RFC 9113 §6.5.2).
    d.set_max_allowed_table_size(4096);
    d
}

/// Whether what `dir` sends on the stream is still to come: the request until the client ends
/// it, the response (or word that none came) once the request was sent.
fn in_progress(s: &Stream, dir: Direction) -> bool {
    match dir {
        Direction::ClientToServer => !s.request_done,
        Direction::ServerToClient => s.request_done,
    }
}

/// Whether `dir` has not ended its side of the stream yet.
fn side_open(s: &Stream, dir: Direction) -> bool {
    match dir {
        Direction::ClientToServer => !s.request_done,
        Direction::ServerToClient => s.responded && s.response.is_some(),
    }
}

/// What an event held in a queue costs: the bytes it carries, and its own size.
fn event_bytes(e: &HttpEvent) -> usize {
    std::mem::size_of::<HttpEvent>() + e.payload_bytes()
}

/// The header block fragment of a HEADERS or PUSH_PROMISE frame (§6.2, §6.6): without its
/// padding, priority or promised stream. None when the frame is too short for what its flags
/// say it holds.
fn block_fragment(head: FrameHead, payload: &[u8]) -> Option<&[u8]> {
    let mut p = payload;
    let mut pad = 0usize;
    if head.has(PADDED) {
        pad = usize::from(*p.first()?);
        p = &p[1..];
    }
    let skip = match head.kind {
        Kind::PushPromise => 4,
        _ if head.has(PRIORITY) => 5,
        _ => 0,
    };
    let p = p.get(skip..)?;
    p.get(..p.len().checked_sub(pad)?)
}

/// Pseudo-header fields (`:method`, `:status`, ...) apart from the others.
fn split_pseudo(fields: Vec<(String, String)>) -> (Vec<(String, String)>, Headers) {
    let (pseudo, regular): (Vec<_>, Vec<_>) =
        fields.into_iter().partition(|(n, _)| n.starts_with(':'));
    (pseudo, Headers(regular))
}

fn pseudo_value(pseudo: &[(String, String)], name: &str) -> Option<String> {
    pseudo
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}

/// HTTP/2 carries the host in `:authority` (RFC 9113 §8.3.1); what reads `Host` finds it there.
fn with_host(mut headers: Headers, authority: Option<String>) -> Headers {
    if let Some(a) = authority
        && !headers.has("host")
    {
        headers.0.insert(0, ("host".into(), a));
    }
    headers
}

#[cfg(test)]
mod tests;
