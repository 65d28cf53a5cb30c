//! Unit tests of the connection, each a trace fed event by event as a capture would feed it
//! (`Wire`), read back by the kind of event reported. [`mark`] and [`Events`] serve the
//! HTTP/2 tests too.

use super::*;
use crate::{Outcome, Request, ResponseEnd, ResponseHead};
use mcpf_model::{FrameRef, Timestamp};

use Direction::{ClientToServer as C2S, ServerToClient as S2C};

/// Frame `n`, `n` ms into the capture.
pub(crate) fn mark(n: u64) -> Mark {
    Mark {
        time: Timestamp(n as i64 * 1_000_000),
        frame: FrameRef::new(0, n),
    }
}

/// What a connection reported, in order.
#[derive(Default)]
pub(crate) struct Events(pub(crate) Vec<HttpEvent>);

impl HttpSink for Events {
    fn on_http(&mut self, event: HttpEvent) {
        self.0.push(event);
    }
}

/// `fn $name(&self) -> Vec<&$ty>`: what the events of one kind carry, in order.
macro_rules! events_of {
    ($name:ident, $ty:ty, $pat:pat => $out:expr) => {
        fn $name(&self) -> Vec<&$ty> {
            let events = self.events.0.iter();
            events
                .filter_map(|e| match e {
                    $pat => Some(&**$out),
                    _ => None,
                })
                .collect()
        }
    };
}

/// One connection fed event by event, frame numbers from 1; what it reported.
struct Wire {
    conn: Connection,
    frame: u64,
    events: Events,
}

impl Wire {
    fn new() -> Wire {
        let conn = Connection::new(
            ConnId::tcp(0),
            "10.0.0.1:40000".parse().unwrap(),
            "10.0.0.2:9123".parse().unwrap(),
            mark(0),
            false,
        );
        Wire {
            conn,
            frame: 0,
            events: Events::default(),
        }
    }

    fn tick(&mut self) -> Mark {
        self.frame += 1;
        mark(self.frame)
    }

    fn data(&mut self, dir: Direction, bytes: &[u8]) -> &mut Self {
        let m = self.tick();
        self.conn.data(dir, bytes, m, None, &mut self.events);
        self
    }

    fn acking(&mut self, dir: Direction, bytes: &[u8], acked: u64) -> &mut Self {
        let m = self.tick();
        self.conn.data(dir, bytes, m, Some(acked), &mut self.events);
        self
    }

    fn gap(&mut self, dir: Direction, len: u64) -> &mut Self {
        let m = self.tick();
        self.conn.gap(dir, len, false, m, &mut self.events);
        self
    }

    fn fin(&mut self, dir: Direction) -> &mut Self {
        let m = self.tick();
        self.conn.fin(dir, m, &mut self.events);
        self
    }

    fn inconsistent(&mut self, dir: Direction, offset: u64, len: u64, first: u64) -> &mut Self {
        let m = self.tick();
        self.conn
            .inconsistent(dir, offset, len, mark(first), m, &mut self.events);
        self
    }

    fn close(&mut self) -> &mut Self {
        let m = self.tick();
        self.conn
            .close(Outcome::CutByCaptureEnd, None, m, &mut self.events);
        self
    }

    events_of!(requests, Request, HttpEvent::Request(r) => r);
    events_of!(heads, ResponseHead, HttpEvent::ResponseHead(h) => h);
    events_of!(ends, ResponseEnd, HttpEvent::ResponseEnd(e) => e);

    /// The anomalies' sentences, in order.
    fn anomalies(&self) -> Vec<&str> {
        self.reported_anomalies()
            .map(|a| a.detail.as_str())
            .collect()
    }

    /// The anomalies' kinds, in order.
    fn anomaly_kinds(&self) -> Vec<AnomalyKind> {
        self.reported_anomalies().map(|a| a.kind).collect()
    }

    fn reported_anomalies(&self) -> impl Iterator<Item = &Anomaly> {
        self.events.0.iter().filter_map(|e| match e {
            HttpEvent::Anomaly(a) => Some(a),
            _ => None,
        })
    }
}

const POST: &[u8] = b"POST /mcp HTTP/1.1\r\nContent-Length: 10\r\n\r\n";

#[test]
fn inconsistent_bytes_of_a_message_in_progress_mark_it() {
    let mut w = Wire::new();
    w.data(C2S, POST).data(C2S, b"{\"a\"");
    // Bytes 3..5 of the body (stream offsets 46 and 47) were retransmitted differently.
    let at = POST.len() as u64 + 2;
    w.inconsistent(C2S, at, 2, 2).data(C2S, b":1234}");
    let [req] = w.requests()[..] else {
        panic!("{:?}", w.events.0)
    };
    assert_eq!(req.body.inconsistent_bytes, 2);
    assert_eq!(
        w.anomalies(),
        [format!(
            "retransmitted bytes differ from the first copy: 2 bytes at stream offset {at} \
             in the request of tcp0#1 (first copy in frame 2, retransmission in frame 3; \
             the first copy was kept)"
        )]
    );
    assert_eq!(w.anomaly_kinds(), [AnomalyKind::RetransmissionInconsistent]);
    assert_eq!(w.conn.counts.inconsistent_bytes, 2);
}

#[test]
fn inconsistent_bytes_not_parsed_yet_mark_the_message_that_carries_them() {
    let mut w = Wire::new();
    // TCP still buffers the first copy of the response's body when the retransmission
    // comes: the mark waits for the message.
    w.data(C2S, b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
    let first = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let second = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine";
    w.inconsistent(S2C, (first.len() + second.len() - 2) as u64, 1, 9);
    w.data(S2C, first).data(S2C, second);
    let ends = w.ends();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0].body.inconsistent_bytes, 0);
    assert_eq!(ends[1].body.inconsistent_bytes, 1);
    assert_eq!(w.anomalies().len(), 1);
    assert_eq!(w.anomaly_kinds(), [AnomalyKind::RetransmissionInconsistent]);
    assert!(w.anomalies()[0].contains("frame 9"), "{:?}", w.anomalies());
}

#[test]
fn inconsistent_bytes_of_a_message_already_reported_mark_it_downstream() {
    let mut w = Wire::new();
    w.data(C2S, POST).data(C2S, b"0123456789");
    // Bytes of the request that ended, then bytes before any message remembered.
    w.inconsistent(C2S, 3, 1, 1)
        .inconsistent(C2S, 1 << 40, 2, 1)
        .close();
    assert_eq!(w.requests()[0].body.inconsistent_bytes, 0);
    let late: Vec<_> = w
        .events
        .0
        .iter()
        .filter_map(|e| match e {
            HttpEvent::LateInconsistency {
                exchange, bytes, ..
            } => Some((exchange.to_string(), *bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(late, [("tcp0#1".to_string(), 1)]);
    let counts = w.conn.counts;
    assert_eq!(
        (
            counts.inconsistent_retransmissions,
            counts.inconsistent_unattributed
        ),
        (2, 1)
    );
    assert_eq!(w.anomalies().len(), 2);
    assert!(w.anomalies()[0].contains("in the request of tcp0#1"));
}

#[test]
fn a_held_response_replays_its_gaps_and_fin_in_order_once_its_request_is_read() {
    let mut w = Wire::new();
    let req = b"GET /sse HTTP/1.1\r\n\r\n";
    let n = req.len() as u64;
    w.acking(
        S2C,
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
        n,
    )
    .acking(S2C, b"data: 1\n\n", n)
    .gap(S2C, 5)
    .acking(S2C, b"data: 3\n\n", n)
    .fin(S2C);
    assert!(w.events.0.is_empty(), "all held");
    assert_eq!(w.conn.held_bytes(), 52 + 9 + 9);
    // The request in two pieces: the response goes on once it is read.
    w.data(C2S, &req[..10]);
    assert!(w.events.0.is_empty());
    w.data(C2S, &req[10..]);
    let ends = w.ends();
    let [end] = ends[..] else {
        panic!("{:?}", w.events.0)
    };
    assert_eq!(end.exchange.index, 0);
    assert_eq!(end.outcome, Outcome::Gap);
    assert_eq!(end.closed_by, Some(S2C));
    // The event after the gap cannot be told from the tail of a cut one: skipped.
    assert_eq!(end.sse.as_ref().unwrap().events, 1);
    assert_eq!(w.requests()[0].exchange.index, 0);
    let c = w.conn.counts;
    assert_eq!(
        (c.responses_held, c.held_paired, c.held_released_early),
        (1, 1, 0)
    );
    assert_eq!(w.conn.held_bytes(), 0);
}

#[test]
fn a_head_cut_by_the_snap_length_keeps_its_whole_lines() {
    let mut w = Wire::new();
    w.data(C2S, b"GET /mcp HTTP/1.1\r\n\r\n");
    w.data(
        S2C,
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Sess",
    );
    let m = w.tick();
    w.conn.gap(S2C, 300, true, m, &mut w.events);
    let [head] = w.heads()[..] else {
        panic!("the head that survives: {:?}", w.events.0)
    };
    assert_eq!(head.status, 200);
    assert!(!head.head_complete && head.event_stream);
    assert_eq!(head.headers.0.len(), 1, "the cut line is not a header");
    let [end] = w.ends()[..] else {
        panic!("{:?}", w.events.0)
    };
    assert_eq!(end.outcome, Outcome::Gap);
    assert!(end.body.unknown);
    assert_eq!(
        w.anomalies(),
        [
            "response head cut by a 300-byte capture gap (cut by the capture's snap length): \
          its start line and 1 whole header lines kept"
        ]
    );
    let c = w.conn.counts;
    assert_eq!((c.heads_cut, c.heads_cut_by_snaplen), (1, 1));
}

/// A response of `len` bytes typed `media` (none: untyped), after a GET.
fn response_of(media: Option<&str>, len: usize) -> (Vec<u8>, u64, bool) {
    let mut w = Wire::new();
    w.data(C2S, b"GET /file HTTP/1.1\r\nHost: x\r\n\r\n");
    let typed = media.map_or(String::new(), |m| format!("Content-Type: {m}\r\n"));
    let head = format!("HTTP/1.1 200 OK\r\n{typed}Content-Length: {len}\r\n\r\n");
    w.data(S2C, head.as_bytes());
    let body = vec![b'{'; len];
    for piece in body.chunks(1460) {
        w.data(S2C, piece);
    }
    let [end] = w.ends()[..] else {
        panic!("{:?}", w.events.0)
    };
    let kept = end.body.data.to_vec();
    (
        kept,
        w.conn.counts.other_type_bodies_cut,
        end.body.truncated,
    )
}

#[test]
fn a_body_typed_as_nothing_mcp_sends_is_kept_to_its_window_and_counted() {
    let len = 1 << 20;
    let (kept, cut, truncated) = response_of(Some("application/octet-stream"), len);
    assert_eq!(
        (kept.len(), cut, truncated),
        (crate::payload::OTHER_TYPE_WINDOW, 1, true)
    );
    for media in [
        None,
        Some("application/json"),
        Some("application/problem+json; charset=utf-8"),
        Some("text/plain"),
    ] {
        let (kept, cut, truncated) = response_of(media, len);
        assert_eq!((kept.len(), cut, truncated), (len, 0, false), "{media:?}");
    }
    // Within the window: nothing cut, nothing counted.
    let (kept, cut, _) = response_of(Some("image/png"), 1000);
    assert_eq!((kept.len(), cut), (1000, 0));
}
