use super::frame::tests::frame;
use super::*;
use crate::ConnKind;
use crate::conn::Connection;
use crate::conn::tests::{Events, mark};

const C: Direction = Direction::ClientToServer;
const S: Direction = Direction::ServerToClient;

fn new_conn() -> Connection {
    Connection::new(
        ConnId::tcp(0),
        "127.0.0.1:40000".parse().unwrap(),
        "127.0.0.1:8443".parse().unwrap(),
        mark(0),
        false,
    )
}

/// Both sides of an HTTP/2 connection, written frame by frame with real HPACK encoders, and
/// read back through the connection parser.
struct Wire {
    enc: [loona_hpack::Encoder<'static>; 2],
    bytes: Vec<(Direction, Vec<u8>)>,
}

impl Wire {
    fn new() -> Wire {
        let mut w = Wire {
            enc: [loona_hpack::Encoder::new(), loona_hpack::Encoder::new()],
            bytes: Vec::new(),
        };
        let mut preface = PREFACE.to_vec();
        preface.extend(frame(4, 0, 0, &[]));
        w.bytes.push((C, preface));
        w.bytes.push((S, frame(4, 0, 0, &[])));
        w
    }

    fn send(&mut self, dir: Direction, bytes: Vec<u8>) -> &mut Self {
        self.bytes.push((dir, bytes));
        self
    }

    fn headers(
        &mut self,
        dir: Direction,
        stream: u32,
        fields: &[(&str, &str)],
        end: bool,
    ) -> &mut Self {
        let block =
            self.enc[di(dir)].encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
        let flags = END_HEADERS | if end { END_STREAM } else { 0 };
        self.send(dir, frame(1, flags, stream, &block))
    }

    fn post(&mut self, stream: u32, body: &str) -> &mut Self {
        self.headers(
            C,
            stream,
            &[
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "mcp.example:8443"),
                (":path", "/mcp"),
                ("content-type", "application/json"),
                ("mcp-session-id", "s-1"),
            ],
            false,
        )
        .send(C, frame(0, END_STREAM, stream, body.as_bytes()))
    }

    fn sse_head(&mut self, stream: u32) -> &mut Self {
        self.headers(
            S,
            stream,
            &[(":status", "200"), ("content-type", "text/event-stream")],
            false,
        )
    }

    /// Reads everything back, each direction's bytes cut in `chunk`-byte pieces.
    fn read(&self, chunk: usize, end: Outcome) -> Vec<HttpEvent> {
        let mut conn = new_conn();
        let mut events = Events::default();
        let mut n = 0;
        for (dir, bytes) in &self.bytes {
            for piece in bytes.chunks(chunk) {
                n += 1;
                conn.data(*dir, piece, mark(n), None, &mut events);
            }
        }
        conn.close(end, None, mark(n + 1), &mut events);
        assert_eq!(conn.kind(), ConnKind::Http2);
        events.0
    }
}

/// One line per event, what a reader compares.
fn summary(events: &[HttpEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            HttpEvent::Request(r) => format!(
                "req #{} {} {} host={} body={}",
                r.exchange.index,
                r.method,
                r.target,
                r.headers.get("host").unwrap_or("-"),
                String::from_utf8_lossy(&r.body.data)
            ),
            HttpEvent::ResponseHead(h) => {
                format!(
                    "head #{} {} sse={}",
                    h.exchange.index, h.status, h.event_stream
                )
            }
            HttpEvent::SseEvent { exchange, event } => {
                format!("event #{} id={:?} {}", exchange.index, event.id, event.data)
            }
            HttpEvent::ResponseEnd(e) => format!(
                "end #{} {:?} by={:?} body={}",
                e.exchange.index,
                e.outcome,
                e.closed_by,
                String::from_utf8_lossy(&e.body.data)
            ),
            HttpEvent::NoResponse {
                exchange,
                outcome,
                closed_by,
                unknown,
                ..
            } => format!(
                "none #{} {outcome:?} by={closed_by:?} unknown={unknown}",
                exchange.index
            ),
            HttpEvent::Anomaly(a) => format!("anomaly {} {}", a.kind.name(), a.detail),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_stream_is_an_exchange_and_its_event_stream_is_read_as_over_http_1_1_in_any_chunking() {
    let mut w = Wire::new();
    w.post(1, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .sse_head(1)
        .send(S, frame(0, 0, 1, b"id: a1\ndata: {\"x\":1}\n\n"))
        .send(S, frame(0, END_STREAM, 1, b"id: a2\ndata: two\n\n"));
    let want = vec![
        r#"req #0 POST /mcp host=mcp.example:8443 body={"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        "head #0 200 sse=true",
        r#"event #0 id=Some("a1") {"x":1}"#,
        r#"event #0 id=Some("a2") two"#,
        "end #0 Complete by=None body=",
    ];
    for chunk in [1, 3, 9, 10, 4096] {
        assert_eq!(
            summary(&w.read(chunk, Outcome::CutByCaptureEnd)),
            want,
            "chunk {chunk}"
        );
    }
    let events = w.read(4096, Outcome::CutByCaptureEnd);
    let HttpEvent::Request(r) = &events[0] else {
        panic!()
    };
    assert_eq!(r.version, HTTP2_VERSION);
    assert_eq!(r.headers.get("mcp-session-id"), Some("s-1"));
}

#[test]
fn interleaved_streams_are_separate_exchanges_and_a_reset_stream_leaves_the_others() {
    let mut w = Wire::new();
    w.headers(
        C,
        1,
        &[
            (":method", "GET"),
            (":path", "/mcp"),
            (":authority", "h"),
            ("accept", "text/event-stream"),
        ],
        true,
    )
    .post(3, "{}")
    .sse_head(1)
    .headers(
        S,
        3,
        &[(":status", "200"), ("content-type", "application/json")],
        false,
    )
    .send(S, frame(0, 0, 3, b"{\"re"))
    .send(S, frame(0, 0, 1, b"data: ping\n\n"))
    .send(S, frame(0, END_STREAM, 3, b"sult\":1}"))
    // The client is done with its event stream: CANCEL, an ordinary end.
    .send(C, frame(3, 0, 1, &8u32.to_be_bytes()))
    .post(5, "{}")
    // The server fails stream 5: the connection goes on.
    .send(S, frame(3, 0, 5, &2u32.to_be_bytes()))
    .post(7, "{}")
    .headers(S, 7, &[(":status", "202")], true);
    assert_eq!(
        summary(&w.read(7, Outcome::CutByCaptureEnd)),
        vec![
            "req #0 GET /mcp host=h body=",
            "req #1 POST /mcp host=mcp.example:8443 body={}",
            "head #0 200 sse=true",
            "head #1 200 sse=false",
            "event #0 id=None ping",
            r#"end #1 Complete by=None body={"result":1}"#,
            "end #0 StreamReset by=Some(ClientToServer) body=",
            "req #2 POST /mcp host=mcp.example:8443 body={}",
            "anomaly h2_stream_reset HTTP/2: stream 5 reset by the server: INTERNAL_ERROR (0x2)",
            "none #2 StreamReset by=Some(ServerToClient) unknown=false",
            "req #3 POST /mcp host=mcp.example:8443 body={}",
            "head #3 202 sse=false",
            "end #3 Complete by=None body=",
        ]
    );
}

#[test]
fn goaway_ends_the_streams_it_did_not_process_and_the_capture_end_cuts_the_rest() {
    let mut w = Wire::new();
    w.post(1, "{}").post(3, "{}").sse_head(1);
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    w.send(S, frame(7, 0, 0, &goaway));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert_eq!(
        got[3..],
        [
            "anomaly h2_goaway HTTP/2: GOAWAY from the server: NO_ERROR (0x0), last stream 1; 1 stream(s) above it not processed",
            "none #1 Refused by=Some(ServerToClient) unknown=false",
            "end #0 CutByCaptureEnd by=None body=",
        ]
    );
}

#[test]
fn a_response_before_its_request_ended_is_reported_after_it() {
    let mut w = Wire::new();
    w.headers(C, 1, &[(":method", "POST"), (":path", "/mcp")], false)
        .headers(S, 1, &[(":status", "413")], true)
        .send(C, frame(0, END_STREAM, 1, b"big"));
    assert_eq!(
        summary(&w.read(4096, Outcome::CutByCaptureEnd)),
        vec![
            "req #0 POST /mcp host=- body=big",
            "head #0 413 sse=false",
            "end #0 Complete by=None body="
        ]
    );
}

#[test]
fn a_sender_waiting_for_window_at_the_capture_end_is_a_stall_and_a_granted_wait_is_counted() {
    let chunk = vec![b'x'; 16_384];
    let mut w = Wire::new();
    w.post(1, "{}").headers(S, 1, &[(":status", "200")], false);
    for _ in 0..3 {
        w.send(S, frame(0, 0, 1, &chunk));
    }
    w.send(S, frame(0, 0, 1, &chunk[..16_383]));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(
        got.iter().any(|l| l.starts_with(
            "anomaly h2_flow_control_stall HTTP/2: stream 1: the server used all of the stream's flow-control window at frame"
        )),
        "{got:#?}"
    );
    // The client grants more: the wait ended, nothing to report.
    let mut update = frame(8, 0, 1, &1000u32.to_be_bytes());
    update.extend(frame(8, 0, 0, &1000u32.to_be_bytes()));
    w.send(C, update).send(S, frame(0, END_STREAM, 1, b"y"));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(!got.iter().any(|l| l.contains("flow-control")), "{got:#?}");
}

#[test]
fn a_gap_stops_its_direction_and_cuts_what_it_left_open() {
    let mut w = Wire::new();
    w.post(1, "{}")
        .sse_head(1)
        .send(S, frame(0, 0, 1, b"data: one\n\n"));
    let mut conn = new_conn();
    let mut events = Events::default();
    for (i, (dir, bytes)) in w.bytes.iter().enumerate() {
        conn.data(*dir, bytes, mark(i as u64 + 1), None, &mut events);
    }
    conn.gap(S, 100, false, mark(50), &mut events);
    conn.data(
        S,
        &frame(0, 0, 1, b"data: two\n\n"),
        mark(51),
        None,
        &mut events,
    );
    conn.close(Outcome::CutByCaptureEnd, None, mark(52), &mut events);
    let got = summary(&events.0);
    assert_eq!(got[2], "event #0 id=None one");
    assert!(got[3].starts_with(
        "anomaly h2_capture_gap HTTP/2: the server's frames are not read past here: 100 bytes"
    ));
    assert_eq!(got[4], "end #0 Gap by=None body=");
    assert_eq!(got.len(), 5, "{got:#?}");
}

#[test]
fn hostile_frames_never_panic_and_an_oversized_table_update_stops_the_direction() {
    let mut w = Wire::new();
    // A dynamic table size update to 1 MiB, past the 4096 bytes allowed by default.
    let mut block = vec![0x3f];
    let mut rest = (1u32 << 20) - 31;
    while rest >= 128 {
        block.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    block.push(rest as u8);
    block.extend_from_slice(b"\x82");
    w.send(C, frame(1, END_HEADERS | END_STREAM, 1, &block));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(
        got[0].starts_with(
            "anomaly h2_hpack_error HTTP/2: the client's frames are not read past here: HPACK"
        ),
        "{got:#?}"
    );

    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..200 {
        let mut w = Wire::new();
        let mut junk = Vec::new();
        for _ in 0..(round * 7 % 300) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            junk.push(seed as u8);
        }
        // Frame-shaped junk: small lengths, any type and flags.
        for piece in junk.chunks(12) {
            let mut f = vec![0, 0, piece.len().min(3) as u8];
            f.extend_from_slice(piece);
            w.send(if piece[0] % 2 == 0 { C } else { S }, f);
        }
        let _ = w.read(5, Outcome::Reset);
    }
}

#[test]
fn the_servers_settings_captured_before_the_clients_preface_are_read() {
    let mut w = Wire::new();
    // The server's SETTINGS first: a 4-byte initial window for what the client sends.
    let mut settings = 4u16.to_be_bytes().to_vec();
    settings.extend(4u32.to_be_bytes());
    w.bytes.insert(0, (S, frame(4, 0, 0, &settings)));
    w.headers(C, 1, &[(":method", "POST"), (":path", "/mcp")], false)
        .send(C, frame(0, 0, 1, b"{\"a\""));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(
        got.iter().any(|l| l.starts_with(
            "anomaly h2_flow_control_stall HTTP/2: stream 1: the client used all of the stream's flow-control window"
        )),
        "{got:#?}"
    );
}

#[test]
fn an_upgrade_to_h2c_answers_its_request_on_stream_1_and_goes_on_in_http2() {
    let mut w = Wire::new();
    let (client_start, server_start) = (w.bytes.remove(0).1, w.bytes.remove(0).1);
    let mut server =
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".to_vec();
    server.extend(server_start);
    w.bytes.push((
        C,
        b"GET /mcp HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAQAAP__\r\n\r\n".to_vec(),
    ));
    w.bytes.push((S, server));
    w.bytes.push((C, client_start));
    w.sse_head(1)
        .send(S, frame(0, END_STREAM, 1, b"data: up\n\n"))
        .post(3, "{}");
    let events = w.read(4096, Outcome::CutByCaptureEnd);
    assert_eq!(
        summary(&events),
        vec![
            "req #0 GET /mcp host=h body=",
            "head #0 200 sse=true",
            "event #0 id=None up",
            "end #0 Complete by=None body=",
            "req #1 POST /mcp host=mcp.example:8443 body={}",
            "none #1 CutByCaptureEnd by=None unknown=false",
        ]
    );
    let Some(HttpEvent::ResponseHead(head)) = events.get(1) else {
        panic!()
    };
    assert_eq!(head.interim, vec![101]);
}

#[test]
fn a_stream_opened_after_the_servers_goaway_is_refused_not_unanswered() {
    let mut w = Wire::new();
    w.post(1, "{}");
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    // The client had not read the GOAWAY when it opened stream 3.
    w.send(S, frame(7, 0, 0, &goaway)).post(3, "{}");
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert_eq!(
        got[1..],
        [
            "anomaly h2_stream_after_goaway HTTP/2: stream 3 opened after the server's GOAWAY (last stream 1): not processed",
            "req #1 POST /mcp host=mcp.example:8443 body={}",
            "none #1 Refused by=Some(ServerToClient) unknown=false",
            "none #0 CutByCaptureEnd by=None unknown=false",
        ]
    );
}

const UPGRADE_GET: &[u8] = b"GET /mcp HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nAccept: text/event-stream\r\n\r\n";
const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

#[test]
fn an_upgrade_whose_101_was_held_goes_on_in_http2_with_what_was_held_after_it() {
    // The server's segments are captured before the request they answer (a reordered
    // capture): both are held, then replayed once the request is read.
    let mut w = Wire::new();
    let client_start = w.bytes.remove(0).1;
    let mut later = w.bytes.remove(0).1;
    w.sse_head(1)
        .send(S, frame(0, END_STREAM, 1, b"data: up\n\n"));
    for (_, b) in &w.bytes {
        later.extend_from_slice(b);
    }
    let acked = UPGRADE_GET.len() as u64;
    let mut conn = new_conn();
    let mut ev = Events::default();
    conn.data(S, SWITCHING, mark(1), Some(acked), &mut ev);
    conn.data(S, &later, mark(2), Some(acked), &mut ev);
    conn.data(C, UPGRADE_GET, mark(3), None, &mut ev);
    conn.data(C, &client_start, mark(4), None, &mut ev);
    conn.close(Outcome::CutByCaptureEnd, None, mark(5), &mut ev);
    let got = summary(&ev.0);
    assert_eq!(
        got,
        vec![
            "req #0 GET /mcp host=h body=",
            "head #0 200 sse=true",
            "event #0 id=None up",
            "end #0 Complete by=None body=",
        ]
    );
}

#[test]
fn a_larger_initial_window_ends_a_wait_and_an_upgrade_reads_the_clients_http2_settings() {
    let chunk = vec![b'x'; 16_384];
    let mut w = Wire::new();
    w.headers(C, 1, &[(":method", "GET"), (":path", "/mcp")], true)
        .sse_head(1);
    for _ in 0..4 {
        w.send(S, frame(0, 0, 1, &chunk));
    }
    let mut settings = 4u16.to_be_bytes().to_vec();
    settings.extend((1u32 << 20).to_be_bytes());
    let mut up = frame(4, 0, 0, &settings);
    up.extend(frame(8, 0, 0, &(1u32 << 20).to_be_bytes()));
    w.send(C, up).send(S, frame(0, 0, 1, b"data: more\n\n"));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(!got.iter().any(|l| l.contains("flow-control")), "{got:#?}");

    // curl's HTTP2-Settings grants a 32 MiB initial window: 80 KB on stream 1 is no wait.
    let mut w = Wire::new();
    let server_start = w.bytes.remove(1).1;
    w.bytes[0] = (C, UPGRADE_GET.to_vec());
    let mut server = SWITCHING.to_vec();
    server.extend(server_start);
    w.bytes.push((S, server));
    w.sse_head(1);
    let event = format!("data: {}\n\n", "y".repeat(16_000));
    for _ in 0..5 {
        w.send(S, frame(0, 0, 1, event.as_bytes()));
    }
    let mut pre = PREFACE.to_vec();
    pre.extend(frame(8, 0, 0, &0x01ff_0001u32.to_be_bytes()));
    w.send(C, pre);
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(!got.iter().any(|l| l.contains("flow-control")), "{got:#?}");
    assert_eq!(got.iter().filter(|l| l.starts_with("event #0")).count(), 5);
}

#[test]
fn a_servers_no_error_reset_after_its_whole_response_is_no_anomaly() {
    let mut w = Wire::new();
    w.headers(C, 1, &[(":method", "POST"), (":path", "/mcp")], false)
        .send(C, frame(0, 0, 1, b"{\"jsonrpc\":\"2.0\","))
        .headers(S, 1, &[(":status", "202")], true)
        .send(S, frame(3, 0, 1, &0u32.to_be_bytes()));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(!got.iter().any(|l| l.starts_with("anomaly")), "{got:#?}");
    assert_eq!(got.last().unwrap(), "end #0 Complete by=None body=");
}

#[test]
fn response_events_held_for_an_open_request_stay_within_the_bytes_allowed() {
    // 20 MiB of events while the request is still being sent: past 16 MiB the request is
    // reported as it stood and the events go on, instead of being held.
    let mut w = Wire::new();
    w.headers(C, 1, &[(":method", "POST"), (":path", "/mcp")], false)
        .sse_head(1);
    let event = format!("data: {}\n\n", "z".repeat(1 << 20));
    for _ in 0..20 {
        w.send(S, frame(0, 0, 1, event.as_bytes()));
    }
    let got = summary(&w.read(1 << 16, Outcome::CutByCaptureEnd));
    let over = got
        .iter()
        .position(|l| l.contains("the request is reported as it stood"));
    let request = got.iter().position(|l| l.starts_with("req #0"));
    assert!(over.is_some() && request > over, "{:?}", &got[..3]);
    assert_eq!(got.iter().filter(|l| l.starts_with("event #0")).count(), 20);
}

#[test]
fn refused_stream_is_a_refusal_and_another_code_a_reset() {
    let mut w = Wire::new();
    w.post(1, "{}")
        .send(S, frame(3, 0, 1, &7u32.to_be_bytes()))
        .post(3, "{}")
        .send(S, frame(3, 0, 3, &2u32.to_be_bytes()));
    let got = summary(&w.read(4096, Outcome::CutByCaptureEnd));
    assert!(
        got.contains(&"none #0 Refused by=Some(ServerToClient) unknown=false".to_string()),
        "{got:#?}"
    );
    assert!(
        got.contains(&"none #1 StreamReset by=Some(ServerToClient) unknown=false".to_string()),
        "{got:#?}"
    );
}

#[test]
fn a_header_block_keeps_fields_within_its_decoded_bytes() {
    // Issue 29: a 4 KB :path referenced many times is kept once; past the block's bytes even a
    // field that frames the message is dropped, and every drop is counted with its bytes.
    let path = vec![b'a'; 4000];
    let mut f = Fields::new(MAX_BLOCK_FIELD_BYTES);
    for _ in 0..1000 {
        f.take(b":path", &path);
    }
    assert_eq!((f.kept.len(), f.past_bytes), (1, 999));
    for _ in 0..100 {
        f.take(b"mcp-session-id", &path);
    }
    let kept = f.kept.len() as u64;
    assert!(kept < 70 && f.kept_bytes <= MAX_BLOCK_FIELD_BYTES, "{kept}");
    assert_eq!(f.past_bytes, 999 + 101 - kept);
    // 999 copies of `:path` (4,005 bytes each), the session IDs not kept (4,014 each).
    assert_eq!(f.bytes_dropped, 999 * 4005 + (101 - kept) * 4014);
    // Once a direction kept its connection's bytes, a block keeps a few KiB.
    assert_eq!(
        block_allowance(MAX_CONN_FIELD_BYTES),
        LEAST_BLOCK_FIELD_BYTES
    );
    assert_eq!(block_allowance(0), MAX_BLOCK_FIELD_BYTES);
}
