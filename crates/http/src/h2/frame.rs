//! HTTP/2 framing (RFC 9113 §4): one direction's bytes in, frames out, sans-IO and
//! chunk-agnostic.
//!
//! Hand-written: a frame is a 9-byte header and a payload, and what a passive reader needs of
//! it (DATA handed on as it arrives, so a 16 MiB frame is never buffered; other payloads kept
//! within a cap) is not what the protocol crates offer: `h2` is an endpoint that owns its socket
//! and answers its peer, `httlib-h2`-style codecs buffer whole frames.

use mcpf_model::AnomalyKind;

/// The client's connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const HEAD_LEN: usize = 9;
/// Payload bytes kept of a frame other than DATA; past it the frame is handed on `cut`. A header
/// block is at most 16 KiB unless an endpoint raised SETTINGS_MAX_FRAME_SIZE, and the other
/// frames are a few bytes (GOAWAY's debug data aside).
pub(crate) const MAX_KEPT_PAYLOAD: usize = 1 << 20;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY: u8 = 0x20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Data,
    Headers,
    Priority,
    RstStream,
    Settings,
    PushPromise,
    Ping,
    GoAway,
    WindowUpdate,
    Continuation,
    /// Extension frames, which a receiver ignores (§4.1).
    Unknown(u8),
}

impl Kind {
    fn of(byte: u8) -> Kind {
        match byte {
            0 => Kind::Data,
            1 => Kind::Headers,
            2 => Kind::Priority,
            3 => Kind::RstStream,
            4 => Kind::Settings,
            5 => Kind::PushPromise,
            6 => Kind::Ping,
            7 => Kind::GoAway,
            8 => Kind::WindowUpdate,
            9 => Kind::Continuation,
            other => Kind::Unknown(other),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrameHead {
    pub(crate) len: u32,
    pub(crate) kind: Kind,
    pub(crate) flags: u8,
    pub(crate) stream: u32,
}

impl FrameHead {
    fn parse(b: &[u8; HEAD_LEN]) -> FrameHead {
        FrameHead {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: Kind::of(b[3]),
            flags: b[4],
            // The reserved bit is ignored on receipt (§4.1).
            stream: u32::from_be_bytes([b[5] & 0x7f, b[6], b[7], b[8]]),
        }
    }

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// What a direction's reader hands on, in wire order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// The client's preface was read whole.
    Preface,
    /// A whole frame other than DATA: its payload, of which only the first
    /// [`MAX_KEPT_PAYLOAD`] bytes are kept (`cut`).
    Frame {
        head: FrameHead,
        payload: &'a [u8],
        cut: bool,
    },
    /// Data of a DATA frame (its padding taken off), as it comes.
    Data { stream: u32, bytes: &'a [u8] },
    /// The end of a DATA frame, after its data: `flow_len` is what it counts against flow
    /// control (its whole payload, padding included).
    DataEnd {
        stream: u32,
        end_stream: bool,
        flow_len: u32,
    },
    /// The bytes cannot be read as HTTP/2 from here on: which anomaly that is, and why.
    Broken(AnomalyKind, String),
}

#[derive(Debug)]
enum State {
    Preface { matched: usize },
    Head { buf: [u8; HEAD_LEN], have: usize },
    Payload(Current),
    Broken,
}

#[derive(Debug)]
struct Current {
    head: FrameHead,
    /// Payload bytes not read yet.
    left: u32,
    /// DATA: the pad length once read (`None` before the first payload byte of a PADDED
    /// frame), and the data bytes still to hand on.
    pad: Option<u8>,
    data_left: u32,
    kept: Vec<u8>,
}

/// One direction's frame reader.
#[derive(Debug)]
pub(crate) struct Reader {
    state: State,
    pub(crate) frames: u64,
}

impl Reader {
    /// `client`: the client's direction, which starts with the preface.
    pub(crate) fn new(client: bool) -> Reader {
        let state = if client {
            State::Preface { matched: 0 }
        } else {
            State::Head {
                buf: [0; HEAD_LEN],
                have: 0,
            }
        };
        Reader { state, frames: 0 }
    }

    /// The reader gave up: what follows is not read.
    pub(crate) fn is_broken(&self) -> bool {
        matches!(self.state, State::Broken)
    }

    /// Stops reading: what follows cannot be framed (a capture gap).
    pub(crate) fn stop(&mut self) {
        self.state = State::Broken;
    }

    pub(crate) fn feed(&mut self, mut data: &[u8], out: &mut impl FnMut(Piece<'_>)) {
        while !data.is_empty() {
            let used = self.step(data, out);
            data = &data[used..];
        }
    }

    fn step(&mut self, data: &[u8], out: &mut impl FnMut(Piece<'_>)) -> usize {
        match &mut self.state {
            State::Broken => data.len(),
            State::Preface { matched } => {
                let take = (PREFACE.len() - *matched).min(data.len());
                if data[..take] != PREFACE[*matched..*matched + take] {
                    self.state = State::Broken;
                    out(Piece::Broken(
                        AnomalyKind::H2BadPreface,
                        "the client's bytes do not start with the HTTP/2 preface".into(),
                    ));
                    return data.len();
                }
                *matched += take;
                if *matched == PREFACE.len() {
                    self.state = State::Head {
                        buf: [0; HEAD_LEN],
                        have: 0,
                    };
                    out(Piece::Preface);
                }
                take
            }
            State::Head { buf, have } => {
                let take = (HEAD_LEN - *have).min(data.len());
                buf[*have..*have + take].copy_from_slice(&data[..take]);
                *have += take;
                if *have == HEAD_LEN {
                    let head = FrameHead::parse(buf);
                    self.begin(head, out);
                }
                take
            }
            State::Payload(cur) if cur.head.kind == Kind::Data => {
                let used = data_step(cur, data, out);
                if cur.left == 0 {
                    self.end_data(out);
                }
                used
            }
            State::Payload(cur) => {
                let take = (cur.left as usize).min(data.len());
                let room = MAX_KEPT_PAYLOAD.saturating_sub(cur.kept.len());
                cur.kept.extend_from_slice(&data[..take.min(room)]);
                cur.left -= take as u32;
                if cur.left == 0 {
                    self.end_frame(out);
                }
                take
            }
        }
    }

    fn begin(&mut self, head: FrameHead, out: &mut impl FnMut(Piece<'_>)) {
        self.frames += 1;
        let padded = head.kind == Kind::Data && head.has(PADDED);
        self.state = State::Payload(Current {
            head,
            left: head.len,
            pad: (!padded).then_some(0),
            data_left: if padded { 0 } else { head.len },
            kept: Vec::new(),
        });
        if head.len == 0 {
            match head.kind {
                Kind::Data => self.end_data(out),
                _ => self.end_frame(out),
            }
        }
    }

    fn end_frame(&mut self, out: &mut impl FnMut(Piece<'_>)) {
        let State::Payload(cur) = std::mem::replace(&mut self.state, fresh_head()) else {
            return;
        };
        out(Piece::Frame {
            head: cur.head,
            payload: &cur.kept,
            cut: cur.kept.len() < cur.head.len as usize,
        });
    }

    fn end_data(&mut self, out: &mut impl FnMut(Piece<'_>)) {
        let State::Payload(cur) = std::mem::replace(&mut self.state, fresh_head()) else {
            return;
        };
        if cur.pad.is_none() {
            // A PADDED frame too short to hold its pad length.
            self.state = State::Broken;
            out(Piece::Broken(
                AnomalyKind::H2FrameError,
                format!(
                    "a padded DATA frame on stream {} has no pad length",
                    cur.head.stream
                ),
            ));
            return;
        }
        out(Piece::DataEnd {
            stream: cur.head.stream,
            end_stream: cur.head.has(END_STREAM),
            flow_len: cur.head.len,
        });
    }
}

fn fresh_head() -> State {
    State::Head {
        buf: [0; HEAD_LEN],
        have: 0,
    }
}

/// Reads DATA payload bytes: the pad length, then the data (handed on), then the padding.
fn data_step(cur: &mut Current, data: &[u8], out: &mut impl FnMut(Piece<'_>)) -> usize {
    if cur.pad.is_none() {
        let pad = data[0];
        cur.left -= 1;
        // A pad as long as the rest is a protocol error (§6.1): then nothing is data.
        cur.data_left = cur.left.saturating_sub(u32::from(pad));
        cur.pad = Some(pad);
        return 1;
    }
    let take = (cur.left as usize).min(data.len());
    let data_take = (cur.data_left as usize).min(take);
    if data_take > 0 {
        out(Piece::Data {
            stream: cur.head.stream,
            bytes: &data[..data_take],
        });
    }
    cur.data_left -= data_take as u32;
    cur.left -= take as u32;
    take
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A frame's bytes.
    pub(crate) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut v = len.to_be_bytes()[1..].to_vec();
        v.push(kind);
        v.push(flags);
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Preface,
        Frame(Kind, u8, u32, Vec<u8>, bool),
        Data(u32, Vec<u8>),
        DataEnd(u32, bool, u32),
        Broken,
    }

    fn read(client: bool, bytes: &[u8], chunk: usize) -> Vec<Seen> {
        let mut r = Reader::new(client);
        let mut seen = Vec::new();
        for piece in bytes.chunks(chunk) {
            r.feed(piece, &mut |p| {
                seen.push(match p {
                    Piece::Preface => Seen::Preface,
                    Piece::Frame { head, payload, cut } => {
                        Seen::Frame(head.kind, head.flags, head.stream, payload.to_vec(), cut)
                    }
                    Piece::Data { stream, bytes } => Seen::Data(stream, bytes.to_vec()),
                    Piece::DataEnd {
                        stream,
                        end_stream,
                        flow_len,
                    } => Seen::DataEnd(stream, end_stream, flow_len),
                    Piece::Broken(..) => Seen::Broken,
                })
            });
        }
        // Data pieces split by chunking are joined, so that any chunking compares equal.
        let mut joined: Vec<Seen> = Vec::new();
        for s in seen {
            if let (Some(Seen::Data(a, prev)), Seen::Data(b, more)) = (joined.last_mut(), &s)
                && a == b
            {
                prev.extend_from_slice(more);
                continue;
            }
            joined.push(s);
        }
        joined
    }

    #[test]
    fn frames_read_the_same_in_any_chunking_and_padding_is_not_data() {
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(4, 0, 0, &[0, 4, 0, 0, 0xff, 0xff]));
        bytes.extend(frame(1, END_HEADERS, 1, b"\x82\x84"));
        let mut padded = vec![3];
        padded.extend_from_slice(b"hello");
        padded.extend_from_slice(&[0, 0, 0]);
        bytes.extend(frame(0, PADDED | END_STREAM, 1, &padded));
        bytes.extend(frame(0, 0, 3, b""));
        bytes.extend(frame(0xfa, 0, 0, b"ext"));
        let want = vec![
            Seen::Preface,
            Seen::Frame(Kind::Settings, 0, 0, vec![0, 4, 0, 0, 0xff, 0xff], false),
            Seen::Frame(Kind::Headers, END_HEADERS, 1, b"\x82\x84".to_vec(), false),
            Seen::Data(1, b"hello".to_vec()),
            Seen::DataEnd(1, true, 9),
            Seen::DataEnd(3, false, 0),
            Seen::Frame(Kind::Unknown(0xfa), 0, 0, b"ext".to_vec(), false),
        ];
        for chunk in [1, 2, 7, 9, 10, 1000] {
            assert_eq!(read(true, &bytes, chunk), want, "chunk {chunk}");
        }
    }

    #[test]
    fn a_client_without_the_preface_is_not_read_and_a_huge_frame_is_kept_cut() {
        assert_eq!(read(true, b"GET / HTTP/1.1\r\n\r\n", 3), vec![Seen::Broken]);
        let big = vec![7u8; MAX_KEPT_PAYLOAD + 10];
        let seen = read(false, &frame(7, 0, 0, &big), 4096);
        let [Seen::Frame(Kind::GoAway, 0, 0, kept, true)] = &seen[..] else {
            panic!("{seen:?}")
        };
        assert_eq!(kept.len(), MAX_KEPT_PAYLOAD);
    }

    #[test]
    fn a_pad_longer_than_the_frame_leaves_no_data() {
        let seen = read(false, &frame(0, PADDED, 1, &[200, 1, 2]), 1);
        assert_eq!(seen, vec![Seen::DataEnd(1, false, 3)]);
    }
}
