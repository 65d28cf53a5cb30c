//! Small versions of the stress inputs of issue 12 (bench/stress/gen.rs), analysed by the built
//! binary under an address-space limit: the right findings and counts, no finding above info on
//! harmless traffic, every accounting ledger balanced, no secret printed. The big versions are
//! bench/stress/run.sh.

use std::path::PathBuf;

use serde_json::Value;

#[path = "../bench/stress/gen.rs"]
mod stress;

#[path = "support/limited.rs"]
mod limited;

use limited::run;

/// Writes the input of `class` at size `n` under the target's temporary directory.
fn input(class: &str, n: u64) -> PathBuf {
    let ext = stress::extension(class).unwrap();
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("stress-{class}-{n}.{ext}"));
    // Two tests may ask for the same input at once: each writes its own copy and renames it in
    // place, so neither reads the other's half-written file.
    let tmp = path.with_extension(format!("{ext}.{:?}.tmp", std::thread::current().id()));
    stress::generate(class, n, &tmp).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// `analyze --format json` of the input, with the ledger check every report must pass.
fn analyze(class: &str, n: u64, extra: &[&str]) -> Value {
    let path = input(class, n);
    let mut args = vec!["analyze", "--format", "json"];
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    let out = run(&args);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{class}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_ledgers_balance(class, &doc);
    doc
}

fn assert_ledgers_balance(class: &str, doc: &Value) {
    for input in doc["inputs"].as_array().unwrap() {
        let Some(acc) = input.get("accounting").filter(|a| !a.is_null()) else {
            continue;
        };
        for unit in ["packets", "bytes"] {
            let l = &acc[unit];
            let sum = |k: &str| {
                l[k].as_object()
                    .unwrap()
                    .values()
                    .map(|v| v.as_u64().unwrap())
            };
            let total = l["total"].as_u64().unwrap();
            let parts = l["analysed"].as_u64().unwrap()
                + sum("skipped").sum::<u64>()
                + sum("lost").sum::<u64>();
            assert_eq!(parts, total, "{class}: {unit} ledger does not add up: {l}");
        }
    }
}

fn findings_above_info(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| format!("{} ({}): {}", f["kind"], f["severity"], f["summary"]))
        .collect()
}

fn assert_harmless(class: &str, doc: &Value) {
    let above = findings_above_info(doc);
    assert!(above.is_empty(), "{class}: false findings {above:#?}");
}

fn kinds(doc: &Value) -> Vec<&str> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect()
}

fn counts(doc: &Value, k: &str) -> u64 {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["counts"][k].as_u64().unwrap())
        .sum()
}

fn limits_or_anomalies(doc: &Value) -> u64 {
    let s = &doc["summary"];
    s["http_anomalies"].as_u64().unwrap_or(0) + s["limits"].as_array().map_or(0, |l| l.len() as u64)
}

fn warnings(doc: &Value) -> Vec<String> {
    doc["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["warnings"].as_array().cloned().unwrap_or_default())
        .map(|w| w.as_str().unwrap_or_default().to_string())
        .collect()
}

fn lost(doc: &Value, bucket: &str) -> u64 {
    doc["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["accounting"]["bytes"]["lost"][bucket]
                .as_u64()
                .unwrap_or(0)
        })
        .sum()
}

#[test]
fn brotli_generator_writes_a_valid_stream() {
    // 2 meta-blocks of 16 MiB in 27 bytes: the HTTP stage decodes them (up to its cap).
    assert!(stress::brotli_zeros(2).len() < 30);
    let doc = http_json_of_brotli_bomb(&["--show-secrets"]);
    let last = doc["exchanges"].as_array().unwrap().last().unwrap();
    let body = &last["response_body"];
    assert_eq!(body["content_encoding"], "br");
    // All 16 MiB, or as much as the decoding budget allows (a stream the decoder rejects stops
    // at its first bytes with another error).
    let decoded = body["decoded_bytes"].as_u64().unwrap();
    let error = body["decode_error"].as_str().unwrap_or_default();
    assert!(
        decoded == 16 << 20 || (decoded >= 1 << 20 && error.contains("budget")),
        "{body}"
    );
}

fn http_json_of_brotli_bomb(extra: &[&str]) -> Value {
    let path = input("brotli_bomb", 1);
    let mut args = vec!["http", "--format", "json"];
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    serde_json::from_slice(&run(&args).stdout).unwrap()
}

#[test]
fn redacting_a_body_of_nul_bytes_ends_in_time() {
    // 1 s with --show-secrets; it took more than 100 s with the first redaction.
    let doc = http_json_of_brotli_bomb(&[]);
    assert!(doc["exchanges"].as_array().unwrap().len() >= 3);
}

#[test]
fn brotli_bomb_is_capped_and_reported() {
    // 200 meta-blocks: 3.2 GiB decoded from 2.6 KB, more than the memory limit allows.
    let doc = analyze("brotli_bomb", 200, &[]);
    assert!(
        limits_or_anomalies(&doc) > 0,
        "decode cap not reported: {}",
        doc["summary"]
    );
    assert!(limit_says(&doc, "decoding budget"), "{}", doc["summary"]);
    assert_harmless("brotli_bomb", &doc);
}

#[test]
fn brotli_windows_held_together_are_capped() {
    // 100 streams each filling a 16 MiB window: 1.6 GiB of windows, 512 MiB allowed.
    let n = 100;
    let doc = analyze("brotli_windows", n, &[]);
    assert_eq!(doc["summary"]["sessions"], n);
    assert!(
        limit_says(&doc, "decoding windows a shard may hold"),
        "{}",
        doc["summary"]
    );
    // A stream not decoded is unknown, not empty: its request is not called unanswered.
    assert!(
        !kinds(&doc).contains(&"unanswered_request"),
        "{:?}",
        kinds(&doc)
    );
    assert_harmless("brotli_windows", &doc);
}

#[test]
fn brotli_windows_under_the_cap_are_decoded() {
    let doc = analyze("brotli_windows", 8, &[]);
    assert!(!limit_says(&doc, "decoding windows"), "{}", doc["summary"]);
    assert_eq!(counts(&doc, "responses"), 8 * 2);
    assert_harmless("brotli_windows", &doc);
}

#[test]
fn bodies_in_progress_are_held_within_one_budget() {
    // 100 responses of 15 MiB decoded each, open at once: 1.5 GiB, 1 GiB allowed.
    let n = 100;
    let doc = analyze("held_bodies", n, &[]);
    assert_eq!(doc["summary"]["sessions"], n);
    assert!(
        limit_says(&doc, "bodies and events a shard may hold"),
        "{}",
        doc["summary"]
    );
    // Kept shrunk, every answer keeps its envelope: all answered.
    assert_eq!(counts(&doc, "responses"), n * 2);
    assert_harmless("held_bodies", &doc);
}

#[test]
fn gzip_bomb_is_no_crash_and_no_false_finding() {
    // 40 MiB of JSON text from 40 KB.
    let doc = analyze("gzip_bomb", 40, &[]);
    assert_eq!(doc["summary"]["sessions"], 1);
    assert_harmless("gzip_bomb", &doc);
}

#[test]
fn many_large_answers_are_dropped_as_they_are_read() {
    // 200 answers of 16 MiB each (3.2 GiB decoded, from 3 MB): all answered, within the
    // memory limit (they once queued between the threads, 1,024 events to a batch).
    let n = 200;
    let doc = analyze("gzip_answers", n, &[]);
    assert_eq!(doc["summary"]["sessions"], 1);
    assert_eq!(counts(&doc, "responses"), n + 1);
    assert_harmless("gzip_answers", &doc);
}

#[test]
fn gzip_bomb_is_capped_and_reported() {
    let doc = analyze("gzip_bomb", 40, &[]);
    assert!(
        limits_or_anomalies(&doc) > 0,
        "decode cap not reported: {}",
        doc["summary"]
    );
}

#[test]
fn syn_flood_leaves_the_sessions_around_it_whole() {
    let doc = analyze("syn_flood", 20_000, &[]);
    assert_eq!(doc["summary"]["sessions"], 2);
    assert_eq!(counts(&doc, "requests"), 2 * 3);
    assert_eq!(counts(&doc, "responses"), 2 * 3);
    assert_harmless("syn_flood", &doc);
}

#[test]
fn every_sse_event_is_listed_with_events() {
    let n = 20_000;
    let doc = analyze("sse_events", n, &["--events"]);
    // initialize's event, n progress notifications and the result.
    assert_eq!(doc["events"].as_array().unwrap().len() as u64, n + 2);
    assert_eq!(counts(&doc, "notifications"), n + 1);
    assert_harmless("sse_events", &doc);
    let path = input("sse_events", n);
    let out = run(&[
        "analyze",
        "--format",
        "ndjson",
        "--events",
        path.to_str().unwrap(),
    ]);
    let events = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["type"] == "event")
        .count() as u64;
    assert_eq!(events, n + 2);
}

#[test]
fn events_past_the_session_cap_are_counted_and_conclude_nothing() {
    let (n, cap) = (20_000, 5_000);
    let doc = analyze("sse_events", n, &["--max-session-events", &cap.to_string()]);
    let session = &doc["sessions"][0];
    let streams = session["streams"].as_array().unwrap();
    let held_and_not: u64 = streams
        .iter()
        .map(|st| st["events"].as_u64().unwrap())
        .sum();
    let unheld: u64 = streams
        .iter()
        .map(|st| st["events_unheld"].as_u64().unwrap())
        .sum();
    // initialize's event, n progress notifications and the result: all counted, the cap held.
    assert_eq!(held_and_not, n + 2);
    assert_eq!(unheld, n + 2 - cap);
    assert!(limit_says(&doc, "--max-session-events"));
    // The result was among the events not held: its request is not called unanswered, at any
    // severity.
    assert_harmless("sse_events", &doc);
    assert!(
        !kinds(&doc).contains(&"unanswered_request"),
        "{:?}",
        kinds(&doc)
    );
    let undecided: Vec<&str> = session["not_determinable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    for kind in ["unanswered_request", "skipped_events", "resume_gap"] {
        assert!(undecided.contains(&kind), "{kind} in {undecided:?}");
    }
}

#[test]
fn under_the_session_cap_every_event_is_held() {
    let n = 2_000;
    let doc = analyze(
        "sse_events",
        n,
        &["--max-session-events", &(n + 2).to_string()],
    );
    assert!(!limit_says(&doc, "--max-session-events"));
    assert_eq!(
        doc["sessions"][0]["not_determinable"],
        serde_json::json!([])
    );
    assert_eq!(counts(&doc, "notifications"), n + 1);
}

#[test]
fn thousands_of_calls_in_one_session_are_all_answered() {
    let n = 3_000;
    let doc = analyze("many_calls", n, &[]);
    assert_eq!(doc["summary"]["sessions"], 1);
    assert_eq!(counts(&doc, "requests"), n + 1);
    assert_eq!(counts(&doc, "responses"), n + 1);
    assert_harmless("many_calls", &doc);
}

#[test]
fn thousands_of_calls_on_one_http2_connection_are_all_answered() {
    let n = 3_000;
    let doc = analyze("h2_calls", n, &[]);
    assert_eq!(doc["summary"]["sessions"], 1);
    assert_eq!(doc["summary"]["http"]["connections_http2"], 1);
    // initialize, notifications/initialized and the calls: one stream each.
    assert_eq!(doc["summary"]["http_exchanges"], n + 2);
    assert_eq!(counts(&doc, "responses"), n + 1);
    assert_harmless("h2_calls", &doc);
}

#[test]
fn a_header_block_that_never_ends_stops_its_direction_without_holding_it() {
    // 100 CONTINUATION frames of 16 KiB (1.6 MiB) after a HEADERS without END_HEADERS: read up
    // to the 1 MiB a block may take, then that direction is read no further.
    let doc = analyze("h2_continuation", 100, &[]);
    assert_eq!(doc["summary"]["http_anomalies"], 1);
    assert!(doc["summary"]["http"]["skipped_bytes"].as_u64().unwrap() > 0);
    assert_harmless("h2_continuation", &doc);
}

#[test]
fn streams_past_the_open_cap_are_not_followed() {
    let doc = analyze("h2_open_streams", 5_000, &[]);
    // 4096 followed, the rest counted in one anomaly.
    assert_eq!(doc["summary"]["http_exchanges"], 4096);
    assert_eq!(doc["summary"]["http_anomalies"], 1);
    assert_harmless("h2_open_streams", &doc);
}

#[test]
fn a_large_batch_is_answered_by_its_batch() {
    let n = 5_000;
    let doc = analyze("batch", n, &[]);
    assert_eq!(counts(&doc, "requests"), n + 1);
    assert_eq!(counts(&doc, "responses"), n + 1);
    assert_harmless("batch", &doc);
}

#[test]
fn duplicate_responses_are_found() {
    let n = 2_000;
    let doc = analyze("duplicates", n, &[]);
    let k = kinds(&doc);
    assert!(k.contains(&"duplicate_response"), "{k:?}");
    assert!(k.iter().all(|k| *k == "duplicate_response"), "{k:?}");
    // initialize's answer and the n + 1 copies of request 2's.
    assert_eq!(counts(&doc, "responses"), n + 2);
}

/// The findings of `kind`, in their order.
fn findings_of<'a>(doc: &'a Value, kind: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

#[test]
fn every_resume_continues_its_own_stream() {
    let n = 500;
    let doc = analyze("resumes", n, &[]);
    let streams = doc["sessions"][0]["streams"].as_array().unwrap();
    let resumes: Vec<&Value> = streams.iter().filter(|s| !s["resume"].is_null()).collect();
    assert_eq!(resumes.len() as u64, n);
    let resets = findings_of(&doc, "event_id_reset");
    assert_eq!(resets.len() as u64, n);
    for i in 0..n {
        // Streams: post:s1 (initialize), post:s2 (initialized), then a POST and its resume.
        let (post, get) = (
            format!("post:s{}", 2 * i + 3),
            format!("get:s{}", 2 * i + 4),
        );
        let lei = (2 * i + 2).to_string();
        let r = &resumes[i as usize];
        assert_eq!(r["id"], get);
        assert_eq!(r["resume"]["last_event_id"], lei);
        assert_eq!(r["resume"]["continues"], post, "{r:#}");
        assert_eq!(r["resume"]["also_seen_on"], serde_json::json!([]));
        let f = resets[i as usize];
        assert_eq!(f["streams"], serde_json::json!([get]));
        assert_eq!(f["evidence"]["highest_before"], lei, "{f:#}");
        assert_eq!(f["evidence"]["highest_seen_on"], post);
    }
}

#[test]
fn every_fallback_is_found_with_its_own_post() {
    let n = 500;
    let doc = analyze("fallbacks", n, &[]);
    let falls = findings_of(&doc, "sse_fallback");
    let resets = findings_of(&doc, "event_id_reset");
    assert_eq!((falls.len() as u64, resets.len() as u64), (n, n));
    for i in 0..n as usize {
        let (post, get) = (
            format!("post:s{}", 2 * i + 3),
            format!("get:s{}", 2 * i + 4),
        );
        let (f, r) = (falls[i], resets[i]);
        assert_eq!(f["evidence"]["from"], post, "{f:#}");
        assert_eq!(f["evidence"]["to"], get);
        assert_eq!(f["evidence"]["request_id"], i + 2);
        // The fallback; the first also names the collision of the two counters it shows.
        assert_eq!(r["caused_by"][0], f["id"]);
        assert_eq!(
            r["evidence"]["highest_before"],
            (i + 10).to_string(),
            "{r:#}"
        );
        assert_eq!(r["evidence"]["highest_seen_on"], post);
    }
}

#[test]
fn an_access_log_of_many_sessions() {
    let n = 1_000;
    let doc = analyze("access_log", n, &[]);
    assert_eq!(doc["summary"]["sessions"], n);
    assert_harmless("access_log", &doc);
}

#[test]
fn connections_waiting_on_a_hole_do_not_disturb_the_others() {
    let doc = analyze("ooo_conns", 5_000, &[]);
    assert_eq!(doc["summary"]["sessions"], 2);
    assert_eq!(counts(&doc, "responses"), 2 * 3);
    assert_harmless("ooo_conns", &doc);
}

#[test]
fn one_byte_pieces_out_of_order() {
    let doc = analyze("ooo_bytes", 50_000, &[]);
    assert_eq!(doc["summary"]["sessions"], 2);
    assert_eq!(counts(&doc, "responses"), 2 * 3);
    assert_harmless("ooo_bytes", &doc);
}

#[test]
fn snap_length_cuts_of_out_of_order_pieces_are_counted() {
    let n = 2_000;
    let doc = analyze("snaplen_ooo", n, &[]);
    let missing: u64 = doc["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["accounting"]["missing_bytes"]["snap_length"]
                .as_u64()
                .unwrap_or(0)
        })
        .sum();
    // Each 1448-byte segment kept 74 bytes.
    assert_eq!(missing, n * (1448 - 74), "{}", doc["inputs"]);
}

#[test]
fn a_big_har() {
    let n = 100;
    let doc = analyze("big_har", n, &[]);
    assert_eq!(doc["summary"]["sessions"], 1);
    assert_eq!(counts(&doc, "requests"), n + 1);
    assert_eq!(counts(&doc, "responses"), n + 1);
    assert_harmless("big_har", &doc);
}

#[test]
fn a_screenshot_over_sse_is_an_answer() {
    let doc = analyze("sse_result", 3, &[]);
    assert_eq!(counts(&doc, "responses"), 3);
    assert_harmless("sse_result", &doc);
}

#[test]
fn a_result_over_16_mib_is_an_answer() {
    let doc = analyze("json_result", 17, &[]);
    assert_eq!(counts(&doc, "responses"), 3);
    assert_harmless("json_result", &doc);
}

#[test]
fn a_clock_stepping_back_leaves_no_call_unanswered() {
    let n = 20;
    let doc = analyze("ts_backwards", n, &[]);
    assert_eq!(counts(&doc, "responses"), n + 1);
    assert!(
        !kinds(&doc).contains(&"unanswered_request"),
        "{:?}",
        kinds(&doc)
    );
}

#[test]
fn a_tools_call_behind_200_headers_is_not_hidden() {
    let doc = analyze("many_headers", 200, &[]);
    assert_eq!(
        counts(&doc, "requests"),
        3,
        "the hidden tools/call is missing"
    );
    assert!(
        limits_or_anomalies(&doc) > 0,
        "header cap not reported: {}",
        doc["summary"]
    );
    assert!(
        limit_says(&doc, "header fields past the first 128"),
        "{}",
        doc["summary"]
    );
}

/// Whether a line of `summary.limits` says `what`.
fn limit_says(doc: &Value, what: &str) -> bool {
    doc["summary"]["limits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l.as_str().unwrap().contains(what))
}

#[test]
fn a_tools_call_behind_a_head_over_64_kib_is_not_hidden() {
    // 6,000 padding fields: a 150 KB head, its Content-Length past the 64 KiB limit.
    let doc = analyze("many_headers", 6000, &[]);
    assert_eq!(counts(&doc, "requests"), 3, "the tools/call is missing");
    assert_eq!(
        doc["summary"]["http"]["skipped_bytes"], 0,
        "{}",
        doc["summary"]
    );
    assert!(limits_or_anomalies(&doc) > 0, "{}", doc["summary"]);
    assert_harmless("many_headers", &doc);
}

#[test]
fn many_headers_under_the_cap_are_ordinary() {
    let doc = analyze("many_headers", 50, &[]);
    assert_eq!(counts(&doc, "requests"), 3);
    assert_harmless("many_headers", &doc);
}

/// Every output of every view of the secrets input, without and with `--show-secrets`.
fn outputs_of_secrets(show: bool) -> String {
    let path = input("secrets", 1);
    let p = path.to_str().unwrap();
    let mut all = String::new();
    let views: &[&[&str]] = &[
        &["analyze", "--format", "table"],
        &["analyze", "--format", "json", "--events"],
        &["analyze", "--format", "ndjson", "--events"],
        &["http", "--format", "table"],
        &["http", "--format", "json"],
        &["flows"],
    ];
    for view in views {
        let mut args = view.to_vec();
        // `flows` shows no payload, so it has no --show-secrets.
        if show && view[0] != "flows" {
            args.push("--show-secrets");
        }
        args.push(p);
        let out = run(&args);
        all.push_str(&String::from_utf8_lossy(&out.stdout));
        all.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    all
}

#[test]
fn the_secrets_input_carries_its_secrets() {
    let all = outputs_of_secrets(true);
    for s in stress::SECRETS {
        assert!(
            all.contains(s),
            "{s} is not in the input's output with --show-secrets"
        );
    }
}

#[test]
fn no_secret_is_printed() {
    let all = outputs_of_secrets(false);
    let leaked: Vec<&&str> = stress::SECRETS
        .iter()
        .filter(|s| all.contains(**s))
        .collect();
    assert!(
        leaked.is_empty(),
        "printed without --show-secrets: {leaked:?}"
    );
}

#[test]
fn a_corrupt_pcap_record_is_skipped_and_reported() {
    let n = 5;
    let doc = analyze("corrupt_pcap", n, &[]);
    assert_eq!(doc["summary"]["sessions"], 2 * n);
    assert!(lost(&doc, "corrupt_record") >= 1000, "{}", doc["inputs"]);
    assert!(!warnings(&doc).is_empty());
}

#[test]
fn a_corrupt_pcapng_block_is_skipped_and_reported() {
    let n = 5;
    let doc = analyze("corrupt_pcapng", n, &[]);
    assert_eq!(doc["summary"]["sessions"], 2 * n);
    assert!(lost(&doc, "corrupt_record") >= 997, "{}", doc["inputs"]);
    assert!(!warnings(&doc).is_empty());
}

#[test]
fn a_truncated_pcap_gz_is_salvaged() {
    // Small: 2 KB of gzip, cut in its last quarter.
    let n = 3;
    let doc = analyze("truncated_gz", n, &[]);
    let sessions = doc["summary"]["sessions"].as_u64().unwrap();
    assert!((1..n).contains(&sessions), "{sessions} of {n} sessions");
    assert!(!warnings(&doc).is_empty());
}

/// Issue 29: the healthy session after a bomb is analysed whole, with nothing above info.
fn assert_healthy_after(class: &str, doc: &Value, sessions: u64) {
    assert_eq!(
        doc["summary"]["sessions"], sessions,
        "{class}: {}",
        doc["summary"]
    );
    assert_harmless(class, doc);
    assert!(
        !kinds(doc).contains(&"unanswered_request"),
        "{class}: {:?}",
        kinds(doc)
    );
}

#[test]
fn an_hpack_bomb_keeps_each_header_block_within_its_bytes() {
    // Issue 29: 2 million one-byte references to a 4 KB :path (8 GB copied before) in 4 blocks.
    let doc = analyze("hpack_bomb", 2000, &[]);
    assert!(
        limit_says(&doc, "of decoded names and values a header block keeps"),
        "{}",
        doc["summary"]
    );
    let by_kind = doc["summary"]["http_anomalies_by_kind"].to_string();
    assert!(by_kind.contains("header_bytes_dropped"), "{by_kind}");
    // The healthy session on the next connection.
    assert_healthy_after("hpack_bomb", &doc, 1);
    assert_eq!(counts(&doc, "responses"), 3);
}

#[test]
fn an_sse_gzip_bomb_stops_at_the_connection_budget() {
    // Issue 29: 128 MiB of `data: {}` events (13 million) from 256 KB of gzip, in 60 KB
    // segments on HTTP/1.1 and HTTP/2, and in 1448-byte segments on HTTP/1.1 (84 s before).
    for class in ["sse_gzip_bomb", "sse_gzip_bomb_mss", "h2_sse_gzip_bomb"] {
        let start = std::time::Instant::now();
        let doc = analyze(class, 128, &[]);
        assert!(
            start.elapsed().as_secs() < 20,
            "{class}: {:?}",
            start.elapsed()
        );
        assert!(
            limit_says(&doc, "SSE events") && limit_says(&doc, "connection's decoding budget"),
            "{class}: {}",
            doc["summary"]
        );
        // The call the bomb answered is not concluded unanswered: its stream is not all known.
        assert_healthy_after(class, &doc, 2);
    }
}

#[test]
fn one_huge_har_event_stream_is_cut_and_said() {
    // Issue 29: 80 MiB of `data: {}` events in one entry's content.text, cut at 64 MiB.
    let doc = analyze("har_sse_bomb", 80, &[]);
    assert!(
        warnings(&doc).iter().any(|w| w.contains("cut at 64 MiB")),
        "{:?}",
        warnings(&doc)
    );
    assert!(lost(&doc, "cap_reached") >= 16 << 20, "{}", doc["inputs"]);
    assert_healthy_after("har_sse_bomb", &doc, 1);
    // initialize, the call answered after the bomb.
    assert!(counts(&doc, "responses") >= 2);
}

#[test]
fn the_generators_are_deterministic() {
    for (class, _, _) in stress::CLASSES {
        if *class == "truncated_gz" {
            continue;
        }
        assert_eq!(stress::bytes(class, 2), stress::bytes(class, 2), "{class}");
    }
}

#[test]
fn pipelined_notifications_past_the_exchange_cap_are_counted_not_held() {
    // Issue 29: 30,000 notifications POSTed back to back before any answer (a million took
    // 4 GiB before the cap), under a cap of 10,000 exchanges a session.
    let cap = ["--max-session-exchanges", "10000"];
    let doc = analyze("pipelined_notifications", 30_000, &cap);
    // initialize and notifications/initialized, then the notifications: 30,002 exchanges.
    assert!(
        limit_says(
            &doc,
            "20002 exchanges of 1 session came after their session held 10000"
        ),
        "{}",
        doc["summary"]["limits"]
    );
    let capped = &doc["sessions"][0];
    assert_eq!(capped["counts"]["streams"], 10_000);
    let not_determinable = capped["not_determinable"].to_string();
    assert!(
        not_determinable.contains("unanswered_request"),
        "{not_determinable}"
    );
    assert_healthy_after("pipelined_notifications", &doc, 2);
    assert_eq!(doc["summary"]["http_exchanges"], 30_006);
}

/// Sends SIGTERM to `child` after `after`; how long it took to end, and what it wrote.
#[cfg(unix)]
fn terminated(
    child: std::process::Child,
    after: std::time::Duration,
) -> (std::time::Duration, std::process::Output) {
    std::thread::sleep(after);
    // The child may have ended before the signal: then there was nothing to stop.
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    (started.elapsed(), out)
}

/// Issue 29: SIGTERM ends the run within a second wherever it is: on a pipe that stays open
/// (the report of what came is written), and in the work after reading, where a report that
/// takes longer is left unfinished and said so.
#[cfg(unix)]
#[test]
fn a_signal_ends_the_run_within_a_second() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let bin = assert_cmd::cargo::cargo_bin("mcp-forensics");
    let mut child = Command::new(&bin)
        .args(["analyze", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sample = std::fs::read("samples/python-sdk-healthy.pcap").unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&sample).unwrap();
    // The pipe stays open, silent.
    let (took, out) = terminated(child, std::time::Duration::from_millis(700));
    drop(stdin);
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("VERDICT") && report.contains("stopped by a signal"),
        "{report}"
    );
    // 300,000 notifications: the session of 200,000 exchanges takes seconds to analyse and
    // report after the signal.
    let path = input("pipelined_notifications", 300_000);
    let child = Command::new(&bin)
        .args(["analyze", "--format", "json", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (took, out) = terminated(child, std::time::Duration::from_millis(1500));
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(130) => assert!(err.contains("was not finished within a second"), "{err}"),
        Some(0..=3) => {}
        other => panic!("{other:?}: {err}"),
    }
}
