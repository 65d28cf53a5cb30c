//! Hostile inputs of issue 29 that are not captures of traffic: key logs and saved reports
//! that are not what they claim, and key logs large enough that a copy per thread would not
//! fit. Each runs under an address-space limit and a timeout (`support/limited.rs`).

#[path = "support/limited.rs"]
mod limited;

use std::io::Write;

use limited::run;

const SAMPLE: &str = "samples/seed-incident-client-leg.pcap";

/// `/dev/zero` given as a key log or as a saved report: refused at once, naming the file, not
/// read to the end of memory.
#[test]
fn an_endless_file_of_zeros_is_refused_at_once() {
    let started = std::time::Instant::now();
    let keylog = run(&["analyze", "--tls-keylog", "/dev/zero", SAMPLE]);
    assert_eq!(keylog.status.code(), Some(2));
    let err = String::from_utf8_lossy(&keylog.stderr);
    assert!(
        err.contains("/dev/zero") && err.contains("not an NSS key log"),
        "{err}"
    );
    let report = run(&["report", "/dev/zero"]);
    assert_eq!(report.status.code(), Some(4));
    let err = String::from_utf8_lossy(&report.stderr);
    assert!(
        err.contains("/dev/zero") && err.contains("not a JSON report"),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

/// A key log of 2 million lines (350 MB) is read once and shared by every thread and shard:
/// under a 3 GiB address space, where eight copies of it (one per HTTP shard) do not fit,
/// the capture is analysed with two threads and with one.
#[test]
fn a_big_key_log_is_shared_by_every_shard() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.keys");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let secret = "ab".repeat(48);
    for i in 0..2_000_000u64 {
        writeln!(w, "CLIENT_RANDOM {i:064x} {secret}").unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let keys = path.to_str().unwrap();
    for threads in ["1", "2"] {
        let out = run(&[
            "analyze",
            "--threads",
            threads,
            "--format",
            "json",
            "--tls-keylog",
            keys,
            SAMPLE,
        ]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(
            doc["sessions"].as_array().unwrap().len(),
            1,
            "threads {threads}"
        );
    }
}

#[path = "../bench/stress/wire.rs"]
#[allow(dead_code)]
mod wire;

/// A session whose calls carry the IDs (request, answer) as JSON text; `None`: no answer.
fn calls_with_ids(path: &std::path::Path, ids: &[(&str, Option<&str>)]) {
    use wire::*;
    let session = session_id(1);
    let mut cap = Capture::pcap(std::fs::File::create(path).unwrap(), 262_144).unwrap();
    let mut c = Conn::local(1);
    c.handshake(&mut cap).unwrap();
    open_session(&mut cap, &mut c, &session).unwrap();
    for (k, (asked, answered)) in ids.iter().enumerate() {
        let call = tools_call(2).replace(r#""id":2"#, &format!(r#""id":{asked}"#));
        let body = post("/mcp", Some(&session), &[], call.as_bytes());
        c.client_send(&mut cap, &body).unwrap();
        let events = match answered {
            Some(id) => {
                let result = tools_call_result(2).replace(r#""id":2"#, &format!(r#""id":{id}"#));
                vec![sse_event(&format!("{k}-1"), &result)]
            }
            None => Vec::new(),
        };
        c.server_send(&mut cap, &sse_response(&session, &events))
            .unwrap();
    }
    c.close(&mut cap).unwrap();
}

/// IDs a double cannot hold are kept as sent: 2^64 answered and 2^64+1 not are two requests,
/// one answered; `-0` answered as `0` is answered (the same number); `1e400` is printed as
/// sent, never as `null`.
#[test]
fn request_ids_keep_their_identity_past_what_a_double_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.pcap");
    calls_with_ids(
        &path,
        &[
            ("18446744073709551616", Some("18446744073709551616")),
            ("18446744073709551617", None),
            ("-0", Some("0")),
            ("1e400", Some("1e400")),
        ],
    );
    let out = run(&["analyze", "--format", "json", path.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let above: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert_eq!(above.len(), 1, "{above:#?}");
    assert_eq!(above[0]["kind"], "unanswered_request");
    let text = above[0].to_string();
    assert!(
        text.contains(r#"{"number":"18446744073709551617"}"#),
        "{text}"
    );
    assert!(
        !text.contains("e+19") && !text.contains("18446744073709551616"),
        "{text}"
    );
    let table = run(&["analyze", path.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("request 18446744073709551617 tools/call"),
        "{table}"
    );
    assert!(
        table.contains("#1e400") && !table.contains("null"),
        "{table}"
    );
}

/// A pcap record: its 16-byte header and the packet.
type Record = (Vec<u8>, Vec<u8>);

/// The global header and the records of a classic little-endian pcap.
fn pcap_records(bytes: &[u8]) -> (Vec<u8>, Vec<Record>) {
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push((
            bytes[at..at + 16].to_vec(),
            bytes[at + 16..at + 16 + incl].to_vec(),
        ));
        at += 16 + incl;
    }
    (bytes[..24].to_vec(), out)
}

fn write_pcap(path: &std::path::Path, global: &[u8], records: &[Record]) {
    let mut out = global.to_vec();
    for (h, p) in records {
        let mut h = h.clone();
        h[8..12].copy_from_slice(&(p.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(p);
    }
    std::fs::write(path, out).unwrap();
}

/// An Ethernet/IPv4/TCP packet with its TCP payload cut to `keep` bytes (the IP length says
/// so: sent short, not cut by a snap length).
fn shortened(packet: &[u8], keep: usize) -> Vec<u8> {
    let ihl = usize::from(packet[14] & 0x0f) * 4;
    let thl = usize::from(packet[14 + ihl + 12] >> 4) * 4;
    let total = ihl + thl + keep;
    let mut p = packet[..14 + total].to_vec();
    p[16..18].copy_from_slice(&(total as u16).to_be_bytes());
    p
}

/// The same packet as a bare RST after its payload.
fn reset_after(packet: &[u8]) -> Vec<u8> {
    let ihl = usize::from(packet[14] & 0x0f) * 4;
    let tcp = 14 + ihl;
    let thl = usize::from(packet[tcp + 12] >> 4) * 4;
    let total = u16::from_be_bytes([packet[16], packet[17]]) as usize;
    let seq = u32::from_be_bytes(packet[tcp + 4..tcp + 8].try_into().unwrap());
    let mut p = packet[..tcp + thl].to_vec();
    p[16..18].copy_from_slice(&((ihl + thl) as u16).to_be_bytes());
    let next = seq.wrapping_add((total - ihl - thl) as u32);
    p[tcp + 4..tcp + 8].copy_from_slice(&next.to_be_bytes());
    p[tcp + 13] = 0x14;
    p
}

const TLS_SAMPLE: &str = "samples/python-sdk-h2-tls.pcap";
const TLS_KEYS: &str = "samples/python-sdk-h2-tls.keys";

fn analyze_tls(path: &std::path::Path) -> serde_json::Value {
    let args = ["analyze", "--format", "json", "--tls-keylog", TLS_KEYS];
    let mut args = args.to_vec();
    args.push(path.to_str().unwrap());
    serde_json::from_slice(&run(&args).stdout).unwrap()
}

fn findings_above(doc: &serde_json::Value, floor: &[&str]) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !floor.contains(&f["severity"].as_str().unwrap()))
        .map(|f| format!("{} {}", f["severity"], f["summary"]))
        .collect()
}

/// TLS evidence that contradicts itself (issue 29): the official Python SDK over HTTP/2 and
/// TLS, its server's response record at frame 20 damaged (one byte flipped), or its record at
/// frame 35 cut short by the capture's end or by a reset. No request is called never answered
/// while its answer may be in the bytes the tool could not read: the damaged and the reset
/// record are failures naming their frame, their bytes missing to the exchange (at most a low
/// `capture_gap`); the record the capture's end cut is counted, its exchange open at the end.
#[test]
fn tls_records_that_fail_or_are_cut_never_make_an_answer_absent() {
    let dir = tempfile::tempdir().unwrap();
    let (global, records) = pcap_records(&std::fs::read(TLS_SAMPLE).unwrap());
    let anomaly_frames = |doc: &serde_json::Value, reason: &str| -> Vec<u64> {
        doc["summary"]["tls_not_decrypted"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["reason"].as_str().unwrap().contains(reason))
            .filter_map(|a| a["frame"].as_u64())
            .collect()
    };
    // A byte of frame 20's record flipped.
    let mut flipped = records.clone();
    let p = &mut flipped[19].1;
    let at = p.len() - 20;
    p[at] ^= 0xff;
    let path = dir.path().join("flipped.pcap");
    write_pcap(&path, &global, &flipped);
    let doc = analyze_tls(&path);
    assert_eq!(findings_above(&doc, &["info", "low"]), Vec::<String>::new());
    assert_eq!(anomaly_frames(&doc, "did not decrypt"), [20]);
    for f in doc["findings"].as_array().unwrap() {
        if f["kind"] == "unanswered_request" {
            assert_eq!(f["evidence"]["answer_may_be_in_missing_bytes"], true, "{f}");
        }
    }
    // Frame 35's record cut short, then the capture ends.
    let mut cut = records[..35].to_vec();
    cut[34].1 = shortened(&cut[34].1, 1000);
    let path = dir.path().join("cut.pcap");
    write_pcap(&path, &global, &cut);
    let doc = analyze_tls(&path);
    assert_eq!(findings_above(&doc, &["info"]), Vec::<String>::new());
    let limits = doc["summary"]["limits"].to_string();
    assert!(
        limits.contains("inside a record when the capture ended"),
        "{limits}"
    );
    // The same, then a reset from the server.
    let mut reset = cut.clone();
    let (h, p) = cut[34].clone();
    reset.push((h, reset_after(&p)));
    let path = dir.path().join("reset.pcap");
    write_pcap(&path, &global, &reset);
    let doc = analyze_tls(&path);
    assert_eq!(findings_above(&doc, &["info", "low"]), Vec::<String>::new());
    assert_eq!(
        anomaly_frames(&doc, "cut by the end of the connection"),
        [36]
    );
}

/// A FIFO no writer has opened yet: the first SIGTERM ends the wait at once (the open used to
/// be restarted by the kernel and the signal swallowed); with a writer, the capture is read.
#[cfg(unix)]
#[test]
fn a_fifo_without_a_writer_yields_to_the_first_signal() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("capture.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let bin = assert_cmd::cargo::cargo_bin("mcp-forensics");
    let child = std::process::Command::new(&bin)
        .args(["analyze", fifo.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("waiting for a writer"), "{err}");
    // With a writer, it is read as any capture.
    let writer = {
        let (fifo, sample) = (fifo.clone(), SAMPLE);
        std::thread::spawn(move || std::fs::write(fifo, std::fs::read(sample).unwrap()))
    };
    let out = run(&["analyze", "--format", "json", fifo.to_str().unwrap()]);
    writer.join().unwrap().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
}

/// A retransmission of the seed's `tools/call` that names another tool (an attacker's or a
/// broken middlebox's copy): the report rests on the first copy and says, with both frames,
/// that the capture said something else too; what rests on that request has its confidence
/// lowered, whether the copy came while the request was read or after it ended (five records
/// later, after the server's answer began).
#[test]
fn a_retransmission_that_says_something_else_is_reported_with_both_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (global, records) = pcap_records(&std::fs::read(SAMPLE).unwrap());
    let at = records
        .iter()
        .position(|(_, p)| p.windows(9).any(|w| w == b"\"reindex\""))
        .unwrap();
    let (h, p) = records[at].clone();
    let mut other = p.clone();
    let name = other.windows(9).position(|w| w == b"\"reindex\"").unwrap();
    other[name..name + 9].copy_from_slice(b"\"rm_rf_x\"");
    for later in [1, 6] {
        let mut two = records.clone();
        two.insert(at + later, (h.clone(), other.clone()));
        let path = dir.path().join(format!("two-versions-{later}.pcap"));
        write_pcap(&path, &global, &two);
        let doc: serde_json::Value = serde_json::from_slice(
            &run(&["analyze", "--format", "json", path.to_str().unwrap()]).stdout,
        )
        .unwrap();
        let conflicts = doc["summary"]["evidence_conflicts"].as_array().unwrap();
        assert_eq!(conflicts.len(), 1, "{conflicts:#?}");
        assert_eq!(conflicts[0]["frame"], (at + later) as u64 + 1);
        let detail = conflicts[0]["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("frame {}", at + 1)), "{detail}");
        // The fallback rests on the POST that carried the call.
        let fallback = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "sse_fallback")
            .unwrap();
        assert_eq!(fallback["confidence"], "reduced", "{later}: {fallback:#}");
        let note = fallback["confidence_note"].as_str().unwrap();
        assert!(note.contains("retransmitted bytes"), "{note}");
        let text = run(&["analyze", path.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(text.contains("the capture says two things"), "{text}");
        assert!(
            text.contains("\"reindex\"") && !text.contains("rm_rf_x"),
            "{text}"
        );
    }
}

/// Two records of the seed whose clocks jumped (to 1970, to 2096), as tshark reads them: every
/// packet is read (none skipped as corrupt), each lone record at the time of the one before it,
/// said in a warning, and the report is the seed's own.
#[test]
fn records_whose_clock_jumped_are_read_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (global, mut records) = pcap_records(&std::fs::read(SAMPLE).unwrap());
    records[19].0[..4].copy_from_slice(&5u32.to_le_bytes());
    records[39].0[..4].copy_from_slice(&4_000_000_000u32.to_le_bytes());
    let path = dir.path().join("jumps.pcap");
    write_pcap(&path, &global, &records);
    let kinds = |doc: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{} {}", f["kind"], f["time"]))
            .collect();
        k.sort();
        k
    };
    let analyze = |p: &str| -> serde_json::Value {
        serde_json::from_slice(&run(&["analyze", "--format", "json", p]).stdout).unwrap()
    };
    let (jumped, seed) = (analyze(path.to_str().unwrap()), analyze(SAMPLE));
    assert_eq!(jumped["inputs"][0]["packets"], records.len());
    assert_eq!(kinds(&jumped), kinds(&seed));
    let warnings = jumped["inputs"][0]["warnings"].to_string();
    assert!(
        warnings.contains("2 records have a timestamp more than 30 days"),
        "{warnings}"
    );
}

/// JSON-RPC over a WebSocket after a `101`: not read (MCP over WebSocket is not this tool's),
/// but said, with the exchange, in an anomaly; the upgrade is no SSE stream.
#[test]
fn a_connection_switched_to_websocket_is_said_not_dropped_in_silence() {
    use wire::*;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.pcap");
    let session = session_id(2);
    let mut cap = Capture::pcap(std::fs::File::create(&path).unwrap(), 262_144).unwrap();
    let mut c = Conn::local(1);
    c.handshake(&mut cap).unwrap();
    open_session(&mut cap, &mut c, &session).unwrap();
    let mut ws = Conn::local(2);
    ws.handshake(&mut cap).unwrap();
    let upgrade = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nmcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\n\r\n"
    );
    ws.client_send(&mut cap, upgrade.as_bytes()).unwrap();
    let switched = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    ws.server_send(&mut cap, switched.as_bytes()).unwrap();
    let call = tools_call(5);
    let mut frame = vec![0x81, 0x7e];
    frame.extend_from_slice(&(call.len() as u16).to_be_bytes());
    frame.extend_from_slice(call.as_bytes());
    ws.client_send(&mut cap, &frame).unwrap();
    ws.close(&mut cap).unwrap();
    c.close(&mut cap).unwrap();
    drop(cap);
    let doc: serde_json::Value = serde_json::from_slice(
        &run(&["analyze", "--format", "json", path.to_str().unwrap()]).stdout,
    )
    .unwrap();
    let kinds = doc["summary"]["http_anomalies_by_kind"].to_string();
    assert!(kinds.contains("protocol_switched"), "{kinds}");
    let streams = doc["sessions"][0]["streams"].as_array().unwrap();
    let upgrade = streams.iter().find(|s| s["status"] == 101);
    if let Some(u) = upgrade {
        assert_ne!(u["event_stream"], true, "{u}");
    }
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"] == "info"),
        "{}",
        doc["findings"]
    );
}

/// Summary numbers and each session's ID and counts, which splitting a capture into files must
/// not change.
fn what_was_found(doc: &serde_json::Value) -> (String, Vec<String>) {
    let s = &doc["summary"];
    let summary = format!(
        "{} sessions, {} exchanges, findings {}",
        s["sessions"], s["http_exchanges"], s["findings"]
    );
    let mut sessions: Vec<String> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| format!("{} {}", x["session_id"], x["counts"]))
        .collect();
    sessions.sort();
    (summary, sessions)
}

/// Issue 29: a directory of more files than `ulimit -n` allows open (a `tcpdump -C` ring), and
/// more files overlapping in time than are read at once, give what the one capture gives.
#[test]
fn more_inputs_than_open_files_allowed_are_read_a_few_at_a_time() {
    let sample = "samples/python-sdk-resume-many.pcap";
    let whole: serde_json::Value =
        serde_json::from_slice(&run(&["analyze", "--format", "json", sample]).stdout).unwrap();
    let (global, records) = pcap_records(&std::fs::read(sample).unwrap());
    let packets = records.len();
    let tmp = tempfile::tempdir().unwrap();
    // 1,100 files of consecutive records, and 100 files each of every 100th record.
    let ring = tmp.path().join("ring");
    let overlapping = tmp.path().join("overlapping");
    std::fs::create_dir(&ring).unwrap();
    std::fs::create_dir(&overlapping).unwrap();
    let per = packets.div_ceil(1100);
    for (k, part) in records.chunks(per).enumerate() {
        write_pcap(&ring.join(format!("ring{k:05}.pcap")), &global, part);
    }
    for k in 0..100 {
        let part: Vec<Record> = records.iter().skip(k).step_by(100).cloned().collect();
        write_pcap(
            &overlapping.join(format!("part{k:03}.pcap")),
            &global,
            &part,
        );
    }
    assert!(std::fs::read_dir(&ring).unwrap().count() > 1024);
    for dir in [&ring, &overlapping] {
        let args = ["analyze", "--format", "json", dir.to_str().unwrap()];
        let out = limited::run_with(&args, "ulimit -n 128;");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(what_was_found(&doc), what_was_found(&whole), "{dir:?}");
        let read: u64 = doc["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["packets"].as_u64().unwrap())
            .sum();
        assert_eq!(read, packets as u64, "{dir:?}: every packet read once");
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
