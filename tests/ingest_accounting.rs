//! Issue 12: every HAR entry and access-log line ends in exactly one accounting bucket, and
//! every byte of the file too, on every sample and on hostile inputs (a truncated HAR, nesting
//! past serde_json's limit, entries far out of order, a line over the line cap, corrupt and
//! unrecognised lines). Hostile inputs are built here, small, so the suite stays fast.

use std::io::Write;

use mcpf_http::HttpEvent;
use mcpf_ingest::{self as ingest, FormatChoice};
use mcpf_model::{InputReport, NoteKind, bucket};

/// Reads `path` as its content says, checks its ledgers balance and match the report's
/// counts, and returns the report and the number of events the sink saw.
fn read_balanced(path: &str) -> (InputReport, u64) {
    let format =
        ingest::resolve(path, FormatChoice::Auto, false).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut events = 0u64;
    let mut sink = |_: HttpEvent| events += 1;
    let (report, _) =
        ingest::read(path, 0, format, None, &mut sink).unwrap_or_else(|e| panic!("{path}: {e}"));
    let acc = &report.accounting;
    assert!(acc.balanced(), "{path}: {acc:?}");
    assert_eq!(acc.packets.total, report.packets, "{path}: packets");
    assert_eq!(acc.bytes.total, report.bytes, "{path}: bytes");
    (report, events)
}

fn temp(name: &str, bytes: &[u8]) -> tempfile::TempPath {
    let mut f = tempfile::Builder::new().suffix(name).tempfile().unwrap();
    f.write_all(bytes).unwrap();
    f.into_temp_path()
}

#[test]
fn every_har_and_access_log_sample_balances() {
    let mut seen = 0;
    for e in std::fs::read_dir("samples").unwrap() {
        let path = e.unwrap().path();
        let name = path.to_string_lossy().to_string();
        if !(name.ends_with(".har") || name.ends_with(".jsonl")) {
            continue;
        }
        let (report, _) = read_balanced(&name);
        assert!(report.accounting.packets.analysed > 0, "{name}");
        assert!(report.accounting.packets.lost.is_empty(), "{name}");
        seen += 1;
    }
    assert!(seen >= 6, "{seen} samples");
}

const ENTRY: &str = r#"{"startedDateTime":"2026-11-30T05:10:57.000+00:00","time":1,
"request":{"method":"POST","url":"http://127.0.0.1:3100/mcp","headers":[],
"postData":{"text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"}},
"response":{"status":200,"headers":[{"name":"content-type","value":"application/json"}],
"content":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"}}}"#;

fn har(entries: &[String]) -> String {
    format!(
        "{{\"log\":{{\"version\":\"1.2\",\"entries\":[{}]}}}}",
        entries.join(",")
    )
}

fn at(second: u32) -> String {
    ENTRY.replace(
        "05:10:57.000",
        &format!("05:{:02}:{:02}.000", second / 60, second % 60),
    )
}

#[test]
fn a_truncated_har_keeps_its_whole_entries_and_loses_the_rest() {
    let full = har(&[at(1), at(2), at(3)]);
    let cut = &full[..full.len() - 40];
    let path = temp(".har", cut.as_bytes());
    let (report, _) = read_balanced(path.to_str().unwrap());
    let acc = &report.accounting;
    assert_eq!(acc.packets.analysed, 2);
    assert_eq!(acc.packets.lost[bucket::TRUNCATED], 1);
    assert!(acc.bytes.lost[bucket::TRUNCATED] > 0);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| matches!(w.kind, NoteKind::HarReadingStopped { entry: 3, .. }))
    );
}

#[test]
fn nesting_past_the_limit_ends_the_read_where_it_is() {
    let deep = format!("{{\"x\":{}1{}}}", "[".repeat(5000), "]".repeat(5000));
    let path = temp(".har", har(&[at(1), deep, at(3)]).as_bytes());
    let (report, _) = read_balanced(path.to_str().unwrap());
    let acc = &report.accounting;
    assert_eq!(acc.packets.analysed, 1);
    assert_eq!(acc.packets.lost[bucket::CORRUPT_RECORD], 1);
}

#[test]
fn an_entry_that_is_no_exchange_is_not_recognised() {
    let path = temp(".har", har(&[at(1), "{\"x\":1}".into(), at(3)]).as_bytes());
    let (report, _) = read_balanced(path.to_str().unwrap());
    let acc = &report.accounting;
    assert_eq!(acc.packets.analysed, 2);
    assert_eq!(acc.packets.skipped[bucket::NOT_RECOGNISED], 1);
    assert!(acc.bytes.skipped[bucket::FILE_FRAMING] > 0);
}

#[test]
fn entries_out_of_order_come_out_in_time_order() {
    // Reverse start order: the whole file waits for its first start, nothing is out of order.
    let entries: Vec<String> = (0..50).rev().map(at).collect();
    let path = temp(".har", har(&entries).as_bytes());
    let format = ingest::resolve(path.to_str().unwrap(), FormatChoice::Auto, false).unwrap();
    let mut times = Vec::new();
    let mut sink = |e: HttpEvent| {
        if let HttpEvent::Request(r) = e {
            times.push(r.first.time);
        }
    };
    let (report, _) = ingest::read(path.to_str().unwrap(), 0, format, None, &mut sink).unwrap();
    assert!(report.accounting.balanced());
    assert_eq!(times.len(), 50);
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert!(
        !report
            .warnings
            .iter()
            .any(|w| matches!(w.kind, NoteKind::HarOutOfOrder { .. }))
    );
}

const LINE: &str = r#"{"msec":"1796013365.100","request_method":"POST","request_uri":"/mcp","status":"200","request_time":"0.004","remote_addr":"10.0.0.7","remote_port":"4000","body_bytes_sent":"10"}"#;

#[test]
fn an_access_log_line_over_the_cap_is_skipped_unheld_and_counted() {
    let mut log = format!("{LINE}\n{LINE}\n");
    // 17 MiB without a newline, at the end of the file.
    log.push_str(&format!("{{\"x\":\"{}", "a".repeat(17 << 20)));
    let path = temp(".jsonl", log.as_bytes());
    let (report, events) = read_balanced(path.to_str().unwrap());
    let acc = &report.accounting;
    assert_eq!(acc.packets.analysed, 2);
    assert_eq!(acc.packets.lost[bucket::CAP_REACHED], 1);
    assert!(acc.bytes.lost[bucket::CAP_REACHED] > 17 << 20);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| matches!(w.kind, NoteKind::LineTooLong { .. }))
    );
    assert!(events > 0);
}

#[test]
fn corrupt_unrecognised_and_cut_lines_each_have_their_bucket() {
    let log = format!("{LINE}\n{{not json\n[1,2]\n\n{LINE}\n{{\"msec\":\"17960");
    let path = temp(".jsonl", log.as_bytes());
    let (report, _) = read_balanced(path.to_str().unwrap());
    let acc = &report.accounting;
    assert_eq!(acc.packets.analysed, 2);
    assert_eq!(acc.packets.lost[bucket::CORRUPT_RECORD], 1);
    assert_eq!(acc.packets.skipped[bucket::NOT_RECOGNISED], 1);
    assert_eq!(acc.packets.lost[bucket::TRUNCATED], 1);
    assert_eq!(acc.bytes.skipped[bucket::FILE_FRAMING], 1);
}
