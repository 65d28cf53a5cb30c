//! Every sample gives exactly the findings its truth file records (written by the clients and
//! servers during the run, never derived from the capture), on the right session; the same with
//! and without `--events`; and the same when unrelated concurrent traffic shares the run.

#[path = "support/samples.rs"]
mod samples;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn analyze(args: &[&str]) -> Value {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .current_dir(root())
        .arg("analyze")
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn truth(name: &str) -> Value {
    let text = std::fs::read_to_string(root().join("samples").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// What a sample must give: the finding kinds above info, by `Mcp-Session-Id` (`None` for a
/// session without one), and how many sessions.
struct Expect {
    sessions: usize,
    above_info: &'static [(Option<&'static str>, &'static [&'static str])],
}

const SEED_CHAIN: &[&str] = &[
    "cross_namespace_replay",
    "duplicate_response",
    "event_id_reset",
    "skipped_events",
    "unanswered_request",
    "unsafe_resumption_after_fallback",
];

const HEALTHY: &[(Option<&str>, &[&str])] = &[];

/// The kinds above info in a report, by session ID.
fn above_info(report: &Value) -> BTreeMap<Option<String>, BTreeSet<String>> {
    let mut out: BTreeMap<Option<String>, BTreeSet<String>> = BTreeMap::new();
    for f in report["findings"].as_array().unwrap() {
        if f["severity"] == "info" {
            continue;
        }
        let sid = f["session_id"].as_str().map(str::to_string);
        out.entry(sid)
            .or_default()
            .insert(f["kind"].as_str().unwrap().to_string());
    }
    out
}

fn check(file: &str, want: &Expect) {
    let report = analyze(&[&format!("samples/{file}")]);
    assert_eq!(
        report["summary"]["sessions"].as_u64().unwrap() as usize,
        want.sessions,
        "{file}: sessions"
    );
    let got = above_info(&report);
    let wanted: BTreeMap<Option<String>, BTreeSet<String>> = want
        .above_info
        .iter()
        .map(|(sid, kinds)| {
            (
                sid.map(str::to_string),
                kinds.iter().map(|k| k.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(got, wanted, "{file}: findings above info by session");
}

#[test]
fn the_seed_incident_and_its_back_off_copies_give_the_whole_chain() {
    let t = truth("seed-incident-backoff.truth.json");
    assert_eq!(t["expected_findings"]["identical_for_all_files"], true);
    let sid = "52e742bf9479c815551f43ad3fcafec0";
    assert_eq!(
        t["client"]["session_id"]
            .as_str()
            .or(t["session_id"].as_str()),
        Some(sid)
    );
    let want = Expect {
        sessions: 1,
        above_info: &[(Some("52e742bf9479c815551f43ad3fcafec0"), SEED_CHAIN)],
    };
    // 45 s of silence before the resume, and the same capture with 2 h of it: the session is
    // neither split nor ended by silence.
    for file in [
        "seed-incident-backoff-client-leg.pcap",
        "seed-incident-backoff-server-leg.pcap",
        "seed-incident-backoff-2h.pcap",
    ] {
        check(file, &want);
    }
    check(
        "seed-incident-client-leg.pcap",
        &Expect {
            sessions: 1,
            above_info: &[(Some("2665c7c69224c221fa665378ef4692a9"), SEED_CHAIN)],
        },
    );
}

#[test]
fn a_capture_started_mid_stream_still_shows_the_replay() {
    // The capture begins inside the fallback GET's body: no SYN, no request, no response head,
    // no initialize. The replay, the duplicate answer and the skipped range are in the file;
    // the fallback and the unanswered request are not determinable from it.
    let t = truth("midstream-incident.truth.json");
    let want: BTreeSet<String> = t["expected_findings"]["client_leg"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let sid = t["session_id"].as_str().unwrap();
    let report = analyze(&["samples/midstream-incident.pcap"]);
    assert_eq!(report["summary"]["sessions"], 1);
    let got = above_info(&report);
    assert_eq!(got.get(&Some(sid.to_string())), Some(&want), "{got:?}");
    assert_eq!(got.len(), 1);
    assert_eq!(
        report["summary"]["mcp_unattributed"], 0,
        "the resume tied the stream"
    );
}

#[test]
fn among_53_concurrent_sessions_behind_nginx_only_the_incident_has_findings() {
    let t = truth("concurrent-nginx.truth.json");
    let incident = t["expected_findings"]["sessions_with_findings_above_info"][0]
        .as_str()
        .unwrap();
    assert_eq!(incident, "9b1651002e13a1fb4047dffc2760d7b8");
    let want = Expect {
        sessions: 53,
        above_info: &[(Some("9b1651002e13a1fb4047dffc2760d7b8"), SEED_CHAIN)],
    };
    check("concurrent-nginx-client-leg.pcap", &want);
    check("concurrent-nginx-server-leg.pcap", &want);
    // Its access log keeps no bodies: the unsafe resumption is what it can show.
    check(
        "concurrent-nginx.nginx.jsonl",
        &Expect {
            sessions: 53,
            above_info: &[(
                Some("9b1651002e13a1fb4047dffc2760d7b8"),
                &["unsafe_resumption_after_fallback"],
            )],
        },
    );
}

#[test]
fn healthy_traffic_of_the_sdks_gives_nothing_above_info() {
    for (file, sessions) in [
        ("python-sdk-healthy.pcap", 1),
        ("python-sdk-healthy.pcapng", 1),
        ("python-sdk-healthy-any.pcap", 1),
        ("python-sdk-resume-many.pcap", 24),
        ("python-sdk-resume-many-server-leg.pcap", 24),
        ("ts-sdk-resumption.pcap", 1),
        ("ts-sdk-resumption-server-leg.pcap", 1),
        ("namespaced-ids-client-leg.pcap", 1),
        ("namespaced-ids-server-leg.pcap", 1),
        ("legacy-sse-fallback.pcap", 1),
        ("legacy-sse-concurrent.pcap", 4),
        ("mitmproxy-python-sdk.har", 1),
        // The official TypeScript SDK in Chromium, its HAR written by Playwright: the bodies
        // the SDK cancels (a 202's, a DELETE's) are marked net::ERR_ABORTED, whole all the same.
        ("chromium-ts-sdk-healthy.har", 4),
        // A stateless (2026-07-28) server: no session IDs on the wire, so each connection's
        // exchanges are one group; 4 clients over 12 connections.
        ("stateless-concurrent.pcap", 12),
    ] {
        check(
            file,
            &Expect {
                sessions,
                above_info: HEALTHY,
            },
        );
    }
}

#[test]
fn the_sdks_own_resumes_after_a_standalone_get_are_not_fallbacks() {
    // 24 sessions whose standalone GET (and some POST streams) were cut and resumed by the
    // official client itself: no fallback, and every resume safe.
    let report = analyze(&["samples/python-sdk-resume-many.pcap"]);
    let fallbacks = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "sse_fallback")
        .count();
    assert_eq!(fallbacks, 0);
    let truth = truth("python-sdk-resume-many.truth.json");
    let per_session = truth["expected_findings"]["per_session"]
        .as_object()
        .unwrap();
    for s in report["sessions"].as_array().unwrap() {
        let sid = s["session_id"].as_str().unwrap();
        assert!(per_session.contains_key(sid), "{sid} is in the truth");
        let verdict = &s["resumption"]["verdict"];
        assert!(
            verdict == "safe" || verdict == "not_attempted",
            "{sid}: {verdict}"
        );
    }
}

#[test]
fn traffic_that_is_not_mcp_makes_no_session() {
    let t = truth("not-mcp.truth.json");
    assert_eq!(t["expected"]["mcp_sessions"], 0);
    for file in ["not-mcp.pcap", "http-basic.pcap"] {
        let report = analyze(&[&format!("samples/{file}")]);
        assert_eq!(report["summary"]["sessions"], 0, "{file}");
        assert_eq!(report["summary"]["mcp_exchanges"], 0, "{file}");
        assert_eq!(report["findings"].as_array().unwrap().len(), 0, "{file}");
    }
    let report = analyze(&["samples/not-mcp.pcap"]);
    assert!(report["summary"]["jsonrpc_not_mcp"].as_u64().unwrap() > 0);
    assert!(report["summary"]["event_streams_not_mcp"].as_u64().unwrap() > 0);
}

/// Every input under samples/.
fn samples() -> Vec<String> {
    samples::names()
}

#[test]
fn findings_do_not_depend_on_events_being_asked_for() {
    for file in samples() {
        let path = format!("samples/{file}");
        let plain = analyze(&[&path]);
        let with_events = analyze(&["--events", &path]);
        assert_eq!(
            plain["findings"], with_events["findings"],
            "{file}: findings differ with --events"
        );
        assert_eq!(plain["summary"], with_events["summary"], "{file}");
    }
}

/// `file` rewritten so that its first packet is at `start` (the rest keep their spacing).
fn shifted_copy(file: &Path, start: mcpf_model::Timestamp, out: &Path) {
    rewritten_copy(
        file,
        out,
        Rewrite {
            start: Some(start),
            ..Rewrite::default()
        },
    );
}

/// How [`rewritten_copy`] changes a capture.
#[derive(Default)]
struct Rewrite {
    /// Its first packet moved to this time, the rest keeping their spacing.
    start: Option<mcpf_model::Timestamp>,
    /// Every frame cut to this many bytes, as `tcpdump -s` cuts them.
    snap: Option<usize>,
    /// Only this many frames kept: the capture stopped early.
    frames: Option<usize>,
    /// These frames (numbered from 1) left out: the capturing host dropped them.
    dropped: Vec<usize>,
}

/// `file` written again as a pcap, changed as `how` says.
fn rewritten_copy(file: &Path, out: &Path, how: Rewrite) {
    let Rewrite {
        start,
        snap,
        frames,
        dropped,
    } = how;
    use mcpf_capture::reader::CaptureReader;
    use mcpf_capture::writer::PcapWriter;
    let input = std::fs::File::open(file).unwrap();
    let mut reader = CaptureReader::open(Box::new(input), 1).unwrap();
    let mut writer: Option<PcapWriter<std::fs::File>> = None;
    let mut offset = None;
    let mut left = frames.unwrap_or(usize::MAX);
    let mut number = 0;
    while let Some(frame) = reader.next_frame().unwrap() {
        if left == 0 {
            break;
        }
        left -= 1;
        number += 1;
        if dropped.contains(&number) {
            continue;
        }
        let off = *offset.get_or_insert(start.map_or(0, |s| s.0 - frame.time.0));
        let w = match writer.as_mut() {
            Some(w) => w,
            None => writer.insert(
                PcapWriter::new(
                    std::fs::File::create(out).unwrap(),
                    frame.linktype,
                    snap.map_or(65535, |s| s as u32),
                    true,
                    false,
                )
                .unwrap(),
            ),
        };
        let kept = &frame.data[..snap.unwrap_or(usize::MAX).min(frame.data.len())];
        w.packet(frame.time.add_nanos(off), kept, frame.orig_len)
            .unwrap();
    }
}

/// A finding as another run must give it again: everything but what names it among the run's
/// other sessions and connections (its ID, its session label, TCP connection numbers, which
/// count every connection of the run).
fn incident_findings(report: &Value, sid: &str) -> Vec<Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["session_id"] == sid)
        .map(|f| {
            let mut f = f.clone();
            f.as_object_mut().unwrap().remove("id");
            f.as_object_mut().unwrap().remove("session");
            f.as_object_mut().unwrap().remove("caused_by");
            f.as_object_mut().unwrap().remove("exchanges");
            strip_exchanges(&mut f);
            f
        })
        .collect()
}

#[test]
fn the_incidents_findings_are_the_same_beside_unrelated_concurrent_sessions() {
    let dir = tempfile_dir("merged");
    let incident = "samples/seed-incident-client-leg.pcap";
    let alone = analyze(&[incident]);
    let start = first_time(&alone);
    let others = dir.join("others.pcap");
    // 24 other SDK sessions, moved to start with the incident, so they run alongside it.
    shifted_copy(
        &root().join("samples/python-sdk-resume-many.pcap"),
        start,
        &others,
    );
    let together = analyze(&[incident, others.to_str().unwrap()]);
    assert_eq!(together["summary"]["sessions"], 25);
    let sid = "2665c7c69224c221fa665378ef4692a9";
    let a = incident_findings(&alone, sid);
    let b = incident_findings(&together, sid);
    assert!(!a.is_empty());
    assert_eq!(a, b, "the incident's findings changed beside other traffic");
    // And the other sessions gained nothing above info from it.
    let above = above_info(&together);
    assert_eq!(
        above.keys().collect::<Vec<_>>(),
        vec![&Some(sid.to_string())]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Drops every `exchange` field of an evidence tree (connection numbers).
fn strip_exchanges(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("exchange");
            o.values_mut().for_each(strip_exchanges);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_exchanges),
        _ => {}
    }
}

fn first_time(report: &Value) -> mcpf_model::Timestamp {
    let t = report["sessions"][0]["start"].as_str().unwrap();
    mcpf_model::Timestamp::parse_rfc3339(t).unwrap()
}

/// A directory of the test named `name` (tests run in parallel, each removes its own).
fn tempfile_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpf-truth-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Our label of the stream the truth names: `post(request id N)` is the POST stream that carried
/// request N, `get` the first GET stream (the one the fallback opened).
fn our_stream(session: &Value, truth_stream: &str) -> String {
    let streams = session["streams"].as_array().unwrap();
    if let Some(n) = truth_stream
        .strip_prefix("post(request id ")
        .and_then(|r| r.strip_suffix(')'))
    {
        let id: i64 = n.parse().unwrap();
        return streams
            .iter()
            .find(|st| st["requests"].as_array().unwrap().iter().any(|r| r == id))
            .map(|st| st["id"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no stream carried request {id}"));
    }
    assert_eq!(truth_stream, "get");
    streams
        .iter()
        .find(|st| st["method"] == "GET" && st["resume"].is_null())
        .map(|st| st["id"].as_str().unwrap().to_string())
        .unwrap()
}

#[test]
fn every_event_is_labelled_with_the_namespace_its_server_says_minted_it() {
    for (file, truth_file) in [
        ("seed-incident-client-leg.pcap", "seed-incident.truth.json"),
        ("seed-incident-server-leg.pcap", "seed-incident.truth.json"),
        (
            "namespaced-ids-client-leg.pcap",
            "namespaced-ids.truth.json",
        ),
        (
            "seed-incident-backoff-client-leg.pcap",
            "seed-incident-backoff.truth.json",
        ),
    ] {
        let t = truth(truth_file);
        let report = analyze(&["--events", &format!("samples/{file}")]);
        let session = &report["sessions"][0];
        let resume_streams: BTreeSet<String> = session["streams"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|st| !st["resume"].is_null())
            .map(|st| st["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(resume_streams.len(), 1, "{file}: one resume");
        let replayed: BTreeMap<String, String> = t["server"]["resume"]["replayed"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["written"] == true)
            .map(|r| {
                (
                    r["id"].as_str().unwrap().to_string(),
                    our_stream(session, r["stream"].as_str().unwrap()),
                )
            })
            .collect();
        let mut checked = 0;
        for ev in report["events"].as_array().unwrap() {
            let stream = ev["stream"].as_str().unwrap();
            let label = ev["namespace"].as_str().unwrap();
            if resume_streams.contains(stream) {
                let Some(id) = ev["id"].as_str() else {
                    continue;
                };
                if let Some(want) = replayed.get(id) {
                    assert_eq!(label, want, "{file}: event {id} on the resume");
                    checked += 1;
                }
            } else {
                // Delivered live: minted by the stream that carried it.
                assert_eq!(label, stream, "{file}: event {} on {stream}", ev["id"]);
                checked += 1;
            }
        }
        assert!(checked > 40, "{file}: only {checked} events compared");
        assert!(
            report["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| resume_streams.contains(e["stream"].as_str().unwrap()))
                .filter(|e| e["id"].is_string())
                .all(|e| replayed.contains_key(e["id"].as_str().unwrap())),
            "{file}: the resume delivered an event the server did not replay"
        );
    }
}

/// Every capture under samples/, changed each way `ways` gives (a name and how, from the
/// capture's packet count): whatever the change hides may cost findings, never add one. Above
/// info, each session of the changed capture has only kinds the whole capture gives it
/// (`capture_gap` aside when `losing`: bytes really are missing). Returns the runs, to check
/// more of them.
fn only_takes_evidence_away(
    dir: &str,
    losing: bool,
    ways: impl Fn(usize) -> Vec<(String, Rewrite)>,
) -> Vec<(String, Value, Value)> {
    let dir = tempfile_dir(dir);
    let captures = samples()
        .into_iter()
        .filter(|f| f.ends_with(".pcap") || f.ends_with(".pcapng"));
    let mut runs = Vec::new();
    for file in captures {
        let path = format!("samples/{file}");
        let whole = analyze(&[&path]);
        let whole_above = above_info(&whole);
        let packets = whole["inputs"][0]["packets"].as_u64().unwrap() as usize;
        for (i, (what, how)) in ways(packets).into_iter().enumerate() {
            let out = dir.join(format!("{i}-{file}.pcap"));
            rewritten_copy(&root().join(&path), &out, how);
            let changed = analyze(&[out.to_str().unwrap()]);
            let what = format!("{file} {what}");
            for (sid, mut kinds) in above_info(&changed) {
                if losing {
                    kinds.remove("capture_gap");
                }
                let had = whole_above.get(&sid).cloned().unwrap_or_default();
                // IDs minted twice are stated by the reset after a fallback; with the fallback
                // hidden, the same fact shows as a collision.
                if had.contains("event_id_reset") {
                    kinds.remove("event_id_collision");
                }
                assert!(
                    kinds.is_subset(&had),
                    "{what}: {sid:?} gained {kinds:?} (whole: {had:?})"
                );
            }
            runs.push((what, whole.clone(), changed));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    runs
}

#[test]
fn a_snap_length_only_takes_evidence_away() {
    // Cutting every frame, as `tcpdump -s N` does, at lengths that cut heads, bodies or only
    // large segments; the bytes cut were not lost, so no capture_gap above info either, and
    // no session more than whole.
    let runs = only_takes_evidence_away("snaplen", false, |_| {
        [128, 256, 600, 1400]
            .into_iter()
            .map(|snap| {
                let how = Rewrite {
                    snap: Some(snap),
                    ..Rewrite::default()
                };
                (format!("cut at {snap}"), how)
            })
            .collect()
    });
    for (what, whole, cut) in runs {
        assert!(
            cut["summary"]["sessions"].as_u64() <= whole["summary"]["sessions"].as_u64(),
            "{what}: more sessions than whole"
        );
    }
}

#[test]
fn the_heads_a_snap_length_leaves_still_prove_the_fallback_and_the_unsafe_resume() {
    // `tcpdump -s 400` of the seed: every head survives, bodies are cut. The fallback (POST 7
    // cut off after 1.5 s with no response byte, then the GET), the integer IDs of the GET's
    // events and the resume with Last-Event-ID 41 are all in what is left.
    let dir = tempfile_dir("snaplen-seed");
    let out = dir.join("seed-s400.pcap");
    let how = Rewrite {
        snap: Some(400),
        ..Rewrite::default()
    };
    rewritten_copy(
        &root().join("samples/seed-incident-client-leg.pcap"),
        &out,
        how,
    );
    let report = analyze(&[out.to_str().unwrap()]);
    let kinds = above_info(&report);
    let sid = truth("seed-incident.truth.json")["session_id"]
        .as_str()
        .map(str::to_string);
    let got = kinds.get(&sid).cloned().unwrap_or_default();
    assert!(got.contains("unsafe_resumption_after_fallback"), "{got:?}");
    assert_eq!(report["sessions"][0]["fell_back"]["stream"], "get:s4");
    let fallback = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "sse_fallback")
        .unwrap();
    assert!(
        fallback["confidence_note"]
            .as_str()
            .unwrap_or_default()
            .contains("snap length"),
        "{fallback}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_capture_cut_by_its_snap_length_is_still_known_for_mcp() {
    let t = truth("snaplen-mcp.truth.json");
    assert_eq!(t["expected_analysis"]["is_mcp"], true);
    let sent: BTreeSet<String> = t["source_truth"]["http_requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["jsonrpc"]["method"].as_str().map(str::to_string))
        .collect();
    let report = analyze(&["samples/snaplen-mcp.pcap"]);
    let summary = &report["summary"];
    assert_eq!(summary["sessions"], 0);
    assert_eq!(
        summary["snaplen_bytes"], summary["gap_bytes"],
        "cut, not lost"
    );
    assert!(summary["mcp_requests_cut"].as_u64().unwrap() > 0);
    let shown: BTreeSet<String> = summary["mcp_requests_cut_methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    assert!(
        shown.contains("initialize") && shown.is_subset(&sent),
        "{shown:?} vs {sent:?}"
    );
    assert!(above_info(&report).is_empty());
    let warning = report["inputs"][0]["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains(&format!("snap length ({} bytes)", t["snaplen"])),
        "{warning}"
    );
}

#[test]
fn a_capture_stopped_early_only_takes_evidence_away() {
    // A capture stopped while sessions run leaves requests whose streams are still open: they
    // may be answered after it, so they are pending (info), never "never answered".
    only_takes_evidence_away("stopped", false, |packets| {
        [4, 2]
            .into_iter()
            .map(|part| {
                let kept = packets * (part - 1) / part;
                let how = Rewrite {
                    frames: Some(kept),
                    ..Rewrite::default()
                };
                (format!("stopped after {kept} frames"), how)
            })
            .collect()
    });
}

#[test]
fn packets_the_capture_dropped_only_take_evidence_away() {
    // Frames the capturing host dropped leave holes TCP reports as gaps: the answers, events or
    // heads in them are unknown, which lowers confidence or makes a question not determinable,
    // never a finding above info that the whole capture does not give (capture_gap aside).
    only_takes_evidence_away("dropped", true, |packets| {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ packets as u64;
        let mut next = move || {
            // xorshift: the same frames on every run.
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            4 + (rng % (packets as u64 - 3)) as usize
        };
        (0..8)
            .map(|_| {
                let dropped: Vec<usize> = (0..3).map(|_| next()).collect();
                let what = format!("without frames {dropped:?}");
                let how = Rewrite {
                    dropped,
                    ..Rewrite::default()
                };
                (what, how)
            })
            .collect()
    });
}

/// The time of a capture's first frame.
fn first_frame_time(file: &Path) -> mcpf_model::Timestamp {
    let input = std::fs::File::open(file).unwrap();
    let mut reader = mcpf_capture::reader::CaptureReader::open(Box::new(input), 1).unwrap();
    reader.next_frame().unwrap().unwrap().time
}

#[test]
fn every_capture_gives_its_findings_beside_other_traffic() {
    // Each capture analysed together with other sessions running at the same time (the 24 of
    // python-sdk-resume-many, or the seed incident beside that capture's own legs): the sessions
    // add up, and each session's findings above info are its own alone.
    let dir = tempfile_dir("beside");
    let captures = samples()
        .into_iter()
        .filter(|f| f.ends_with(".pcap") || f.ends_with(".pcapng"));
    for file in captures {
        let other = if file.starts_with("python-sdk-resume-many") {
            "seed-incident-client-leg.pcap"
        } else {
            "python-sdk-resume-many.pcap"
        };
        let path = root().join("samples").join(&file);
        let moved = dir.join(format!("beside-{file}.pcap"));
        shifted_copy(
            &root().join("samples").join(other),
            first_frame_time(&path),
            &moved,
        );
        let alone = analyze(&[path.to_str().unwrap()]);
        let other_alone = analyze(&[moved.to_str().unwrap()]);
        let together = analyze(&[path.to_str().unwrap(), moved.to_str().unwrap()]);
        let count = |r: &Value| r["summary"]["sessions"].as_u64().unwrap();
        assert_eq!(
            count(&together),
            count(&alone) + count(&other_alone),
            "{file} beside {other}: sessions"
        );
        let mut want = above_info(&alone);
        for (sid, kinds) in above_info(&other_alone) {
            want.entry(sid).or_default().extend(kinds);
        }
        assert_eq!(above_info(&together), want, "{file} beside {other}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The seed incident in mitmproxy's HAR (bodies and SSE ids kept by its record_sse.py addon) and
/// in its browser-style sanitised copy: every finding its truth expects, on its session, and the
/// fallback among them (info, so not in `above_info`); and among many SDK sessions.
#[test]
fn the_seed_incident_in_a_mitmproxy_har_gives_the_whole_chain() {
    let t = truth("har-seed.truth.json");
    let sid = t["seed"]["session_id"].as_str().unwrap();
    let wanted: BTreeSet<String> = t["seed"]["expected_analysis"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert!(wanted.contains("sse_fallback") && wanted.contains("unsafe_resumption_after_fallback"));
    for file in [
        t["seed"]["file"].as_str().unwrap(),
        t["seed"]["sanitized_copy"].as_str().unwrap(),
    ] {
        let report = analyze(&[file]);
        assert_eq!(report["summary"]["sessions"], 1, "{file}: sessions");
        let got: BTreeSet<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["session_id"] == sid)
            .map(|f| f["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, wanted, "{file}: findings of session {sid}");
        assert_eq!(
            report["sessions"][0]["resumption"]["verdict"],
            t["seed"]["expected_analysis"]["resumption_verdict"],
            "{file}: resumption verdict"
        );
    }
    // The same run among 12 SDK sessions in one HAR: the whole chain, on its session alone.
    check_concurrent_log(&t["concurrent"]);
}

/// mitmproxy as the proxy that held the stalled POST's event stream records it as `200` with
/// empty content and times that stop at the sending (no `_error`): the fallback is inferred
/// from where the request's progress went (the GET the client opened next), and the HAR gives
/// the whole chain all the same.
#[test]
fn a_har_that_recorded_the_held_post_as_an_empty_200_still_shows_the_fallback() {
    let t = truth("har-seed.truth.json");
    let file = t["seed"]["file"].as_str().unwrap();
    let mut har: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(file)).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array_mut().unwrap();
    let held = entries
        .iter()
        .position(|e| e["response"]["status"] == 0 && e["request"]["method"] == "POST")
        .expect("the stalled POST");
    let sid = t["seed"]["session_id"].as_str().unwrap();
    entries[held]["response"] = serde_json::json!({
        "status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
        "headers": [
            {"name": "content-type", "value": "text/event-stream"},
            {"name": "mcp-session-id", "value": sid}
        ],
        "cookies": [], "redirectURL": "", "headersSize": -1, "bodySize": 0,
        "content": {"size": 0, "compression": 0, "mimeType": "text/event-stream", "text": ""}
    });
    entries[held]["timings"]["wait"] = 0.into();
    entries[held]["timings"]["receive"] = 0.into();
    let out = tempfile_dir("har-empty-200").join("seed-held.har");
    std::fs::write(&out, serde_json::to_vec(&har).unwrap()).unwrap();
    let report = analyze(&[out.to_str().unwrap()]);
    let got: BTreeSet<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["session_id"] == sid)
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect();
    let wanted: BTreeSet<String> = t["seed"]["expected_analysis"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, wanted);
    let fell_back = &report["sessions"][0]["fell_back"];
    assert_eq!(fell_back["stream"], "get:s4", "{fell_back}");
    assert!(
        fell_back["trigger"]
            .as_str()
            .unwrap()
            .contains("its messages arrived on get:s4"),
        "{fell_back}"
    );
}

/// The seed incident as Chromium records it (Playwright's recordHar): the fallback (POST 7 aborted
/// by the page after 1.5 s, then the GET) and the unsafe resumption are in it; the aborted GET
/// streams have no body, so what the truth says is not determinable is listed so, and nothing
/// resting on those bodies is raised above info.
#[test]
fn the_seed_incident_in_a_chromium_har_shows_the_fallback_and_the_unsafe_resume() {
    let t = truth("chromium-har.truth.json");
    let seed = &t["seed"];
    let sid = seed["session_id"].as_str().unwrap();
    for file in ["file", "sanitized_copy"] {
        let file = seed[file].as_str().unwrap();
        check_seed_log(file, sid, &seed["expected_analysis"], "findings");
    }
}

/// The official TypeScript SDK in Chromium cancels the bodies of a 202 and of the DELETE's answer;
/// Chromium records both as net::ERR_ABORTED although their Content-Length of 0 says they were
/// whole. Neither is an abandoned POST, so no fallback (not even at info) and no unknown body, on
/// any of the page's four sessions, which shared its connections.
#[test]
fn bodies_the_browser_cancelled_once_whole_are_not_abandoned() {
    let report = analyze(&["samples/chromium-ts-sdk-healthy.har"]);
    let kinds: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.is_empty(), "{kinds:?}");
    let t = truth("chromium-har.truth.json");
    let want = session_ids(&t["healthy"]["sessions"]);
    assert_eq!(want.len(), 4);
    assert_eq!(session_ids(&report["sessions"]), want);
    for session in report["sessions"].as_array().unwrap() {
        assert_eq!(
            session["fell_back"],
            Value::Null,
            "{}",
            session["session_id"]
        );
    }
    assert_eq!(
        report["summary"]["mcp_exchanges"],
        t["healthy"]["http_request_count"]
    );
}

/// The `session_id` of each object of a list (of sessions, in a report or a truth).
fn session_ids(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_string())
        .collect()
}

/// What a log (or HAR) of the seed incident must give, by its truth: every finding it lists, on the
/// session it names; nothing above info that the truth says a log cannot show; those listed as
/// not determinable; the resumption verdict.
fn check_seed_log(file: &str, sid: &str, want: &Value, findings: &str) {
    check_seed_log_read_with(&[file], sid, want, findings);
}

/// [`check_seed_log`] with the arguments that read the file (`--log-format …` and the file).
fn check_seed_log_read_with(args: &[&str], sid: &str, want: &Value, findings: &str) {
    let file = args.last().unwrap();
    let strings = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("{file}: truth lacks a list"))
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect()
    };
    let report = analyze(args);
    assert_eq!(report["summary"]["sessions"], 1, "{file}: sessions");
    let session = &report["sessions"][0];
    assert_eq!(session["session_id"], sid, "{file}");
    let of = |above: bool| -> BTreeSet<String> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["session_id"] == sid && (!above || f["severity"] != "info"))
            .map(|f| f["kind"].as_str().unwrap().to_string())
            .collect()
    };
    let all = of(false);
    assert!(strings(&want[findings]).is_subset(&all), "{file}: {all:?}");
    let not_determinable = strings(&want["not_determinable"]);
    let above = of(true);
    assert!(above.is_disjoint(&not_determinable), "{file}: {above:?}");
    let listed: BTreeSet<String> = session["not_determinable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap().to_string())
        .collect();
    assert!(
        not_determinable.is_subset(&listed),
        "{file}: not determinable {listed:?}"
    );
    let verdict = want.get("resumption_verdict").unwrap_or(&want["verdict"]);
    assert_eq!(&session["resumption"]["verdict"], verdict, "{file}");
}

/// The seed incident and a healthy session of the official SDKs as real proxies log them
/// (HAProxy, Caddy, Traefik; nginx in three operators' formats): what each truth expects.
#[test]
fn proxy_logs_give_what_their_truths_say() {
    for name in ["haproxy-logs", "caddy-logs", "traefik-logs"] {
        let t = truth(&format!("{name}.truth.json"));
        let seed = &t["seed"];
        check_seed_log(
            seed["file"].as_str().unwrap(),
            seed["session_id"].as_str().unwrap(),
            &seed["expected_analysis"],
            "findings",
        );
        let healthy = t["healthy"]["file"].as_str().unwrap();
        let file = healthy.strip_prefix("samples/").unwrap();
        check(
            file,
            &Expect {
                sessions: 1,
                above_info: HEALTHY,
            },
        );
        check_concurrent_log(&t["concurrent"]);
    }
    // nginx's three JSON formats, and its text one read with the --log-format the truth gives.
    let t = truth("nginx-formats.truth.json");
    let mut text_logs = 0;
    for (file, what) in t["files"].as_object().unwrap() {
        let part = &t["sessions"][what["session"].as_str().unwrap()];
        let want = &part["expected_from_access_log"];
        let mut args: Vec<&str> = what["analyze_args"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        text_logs += usize::from(!args.is_empty());
        args.push(file);
        match what["session"].as_str().unwrap() {
            "seed" => {
                let sid = part["session_id"].as_str().unwrap();
                check_seed_log_read_with(&args, sid, want, "above_info");
            }
            "concurrent" => check_concurrent_log_read_with(&args, part, want),
            _ => {
                // Not even an info: the text log's whole seconds cannot single out a POST
                // dropped for the standalone GET, so no fallback is inferred from them.
                let report = analyze(&args);
                assert_eq!(report["summary"]["sessions"], 1, "{file}: sessions");
                assert_eq!(report["findings"], Value::Array(vec![]), "{file}");
                let requests = &part["http_request_count"];
                assert_eq!(&report["summary"]["mcp_exchanges"], requests, "{file}");
            }
        }
    }
    assert_eq!(text_logs, 3, "the seed, healthy and concurrent text logs");
}

/// The seed incident among many SDK sessions, all from 127.0.0.1, in one proxy log: every session
/// the clients opened, the incident's findings on its session and nothing above info elsewhere.
fn check_concurrent_log(t: &Value) {
    check_concurrent_log_read_with(&[t["file"].as_str().unwrap()], t, &t["expected_analysis"]);
}

/// [`check_concurrent_log`] with the arguments that read the file, and what the truth expects.
fn check_concurrent_log_read_with(args: &[&str], t: &Value, expect: &Value) {
    let file = args.last().unwrap();
    let report = analyze(args);
    let mut want = session_ids(&t["sdk_sessions"]);
    let incident = t["incident_session_id"].as_str().unwrap();
    want.insert(incident.to_string());
    assert!(want.len() > 10, "{file}: {} sessions", want.len());
    assert_eq!(session_ids(&report["sessions"]), want, "{file}");
    assert_eq!(
        report["summary"]["mcp_exchanges"], t["http_request_count"],
        "{file}"
    );
    let above: BTreeSet<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| f["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(above, BTreeSet::from([incident]), "{file}");
    let kinds: BTreeSet<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["session_id"] == incident)
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    for k in expect["incident_findings"].as_array().unwrap() {
        assert!(
            kinds.contains(k.as_str().unwrap()),
            "{file}: {k} not in {kinds:?}"
        );
    }
}

fn lost_in_transit(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "lost_in_transit")
        .collect()
}

/// Both legs of the buggy proxy: the 17 progress events the server sent on the POST of
/// `tools/call` 7, which the server leg holds and the client leg never got, are the one
/// `lost_in_transit`, on the client's session, the cause of its fallback; the inputs' clocks
/// (one host) differ by less than a millisecond.
#[test]
fn the_two_legs_of_the_seed_show_what_the_proxy_held() {
    for (legs, truth_file) in [
        ("seed-incident", "seed-incident.truth.json"),
        ("seed-incident-backoff", "seed-incident-backoff.truth.json"),
        ("namespaced-ids", "namespaced-ids.truth.json"),
    ] {
        let t = truth(truth_file);
        let client = format!("samples/{legs}-client-leg.pcap");
        let server = format!("samples/{legs}-server-leg.pcap");
        let report = analyze(&[&client, &server]);
        let lost = lost_in_transit(&report);
        assert_eq!(lost.len(), 1, "{legs}: {lost:?}");
        let f = lost[0];
        let e = &f["evidence"];
        assert_eq!(e["seen_in"]["input_path"], server.as_str(), "{legs}");
        assert_eq!(e["missing_from"]["input_path"], client.as_str(), "{legs}");
        assert_eq!(e["delivered"], 0, "{legs}");
        let never = &t["summary"]["never_delivered_to_client"]["post"];
        assert_eq!(
            &e["event_ids"], never,
            "{legs}: the truth's never-delivered POST events"
        );
        let offset = e["clock_offset_s"]["estimate"].as_f64().unwrap();
        assert!(offset.abs() < 1e-3, "{legs}: one host, offset {offset}");
        // On the client's session, and the cause of the fallback there.
        let session = report["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == f["session"])
            .unwrap();
        let port = session["server"].as_str().unwrap();
        let client_port = t["topology"]["client_leg"]["nginx"].as_str().unwrap();
        assert_eq!(
            port, client_port,
            "{legs}: the finding is on the client leg"
        );
        let fallback = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["kind"] == "sse_fallback" && x["session"] == f["session"])
            .unwrap();
        assert!(
            fallback["caused_by"].as_array().unwrap().contains(&f["id"]),
            "{legs}: {fallback}"
        );
    }
}

/// The server leg rewritten an hour later (another host's clock): the same events lost, and the
/// offset measured from the matched exchanges.
#[test]
fn the_clock_offset_between_two_hosts_is_measured() {
    let dir = tempfile_dir("hop-offset");
    let server = dir.join("server-leg-plus-1h.pcap");
    let original = root().join("samples/seed-incident-server-leg.pcap");
    shifted_copy(
        &original,
        first_frame_time(&original).add_nanos(3_600_000_000_000),
        &server,
    );
    let report = analyze(&[
        "samples/seed-incident-client-leg.pcap",
        server.to_str().unwrap(),
    ]);
    let lost = lost_in_transit(&report);
    assert_eq!(lost.len(), 1);
    let clock = &lost[0]["evidence"]["clock_offset_s"];
    let offset = clock["estimate"].as_f64().unwrap();
    assert!((offset - 3600.0).abs() < 1e-3, "{clock}");
    assert!(clock["min"].as_f64().unwrap() <= 3600.0 + 1e-3);
    assert_eq!(lost[0]["evidence"]["events"], 17);
    // The report says it once for the pair of inputs, whatever was found.
    let summary = &report["summary"]["clock_offsets"];
    assert_eq!(summary.as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(
        (&summary[0]["far_input"], &summary[0]["near_input"]),
        (&Value::from(1), &Value::from(0))
    );
    let e = summary[0]["estimate"].as_f64().unwrap();
    assert!((e - 3600.0).abs() < 1e-3, "{summary}");
    let healthy = analyze(&[
        "samples/python-sdk-resume-many.pcap",
        "samples/python-sdk-resume-many-server-leg.pcap",
    ]);
    let c = &healthy["summary"]["clock_offsets"][0];
    assert_eq!(c["from_sessions"], 24, "{c}");
    assert!(
        c["estimate"].as_f64().unwrap().abs() < 1e-3,
        "one host: {c}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Healthy hops lose nothing: the 52 healthy sessions of both nginx legs, the SDK's own resumes
/// through a relay, and one input alone.
/// Past `--max-held-events` a session waiting for its other observation is reported at once;
/// the hop comparison still happens with what was kept of it, and the run says so.
#[test]
fn a_session_released_before_its_other_leg_ended_is_still_compared() {
    let legs = [
        "samples/seed-incident-client-leg.pcap",
        "samples/seed-incident-server-leg.pcap",
    ];
    let whole = analyze(&legs);
    let capped = analyze(&[legs[0], legs[1], "--max-held-events", "1"]);
    let (a, b) = (lost_in_transit(&whole), lost_in_transit(&capped));
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(a[0]["evidence"]["event_ids"], b[0]["evidence"]["event_ids"]);
    assert_eq!(a[0]["session"], b[0]["session"]);
    let limits = capped["summary"]["limits"].as_array().unwrap();
    assert!(
        limits.iter().any(|l| l
            .as_str()
            .unwrap()
            .starts_with("1 session was reported before its observations")),
        "{limits:?}"
    );
    assert!(whole["summary"]["limits"].as_array().unwrap().is_empty());
}

#[test]
fn hops_that_lost_nothing_get_no_lost_in_transit() {
    let t = truth("concurrent-nginx.truth.json");
    let report = analyze(&[
        "samples/concurrent-nginx-client-leg.pcap",
        "samples/concurrent-nginx-server-leg.pcap",
    ]);
    let lost = lost_in_transit(&report);
    assert_eq!(lost.len(), 1, "only the incident session");
    assert_eq!(lost[0]["session_id"], t["incident_session_id"]);
    for pair in [
        [
            "samples/python-sdk-resume-many.pcap",
            "samples/python-sdk-resume-many-server-leg.pcap",
        ],
        [
            "samples/ts-sdk-resumption.pcap",
            "samples/ts-sdk-resumption-server-leg.pcap",
        ],
    ] {
        let report = analyze(&pair);
        assert!(lost_in_transit(&report).is_empty(), "{pair:?}");
    }
    let one = analyze(&["samples/seed-incident-server-leg.pcap"]);
    assert!(lost_in_transit(&one).is_empty());
}

/// A directory of captures from two hosts is its captures (in name order), and the report says
/// how many sessions and findings each input and each server holds.
#[test]
fn a_directory_of_inputs_is_read_as_its_files_with_counts_per_input_and_server() {
    let dir = tempfile_dir("inputs-dir");
    for (host, leg) in [("proxy-host", "client"), ("server-host", "server")] {
        std::fs::create_dir_all(dir.join(host)).unwrap();
        let from = root().join(format!("samples/seed-incident-{leg}-leg.pcap"));
        std::fs::copy(from, dir.join(host).join("trace.pcap")).unwrap();
    }
    std::fs::write(dir.join("README.txt"), "not an input").unwrap();
    let report = analyze(&[dir.to_str().unwrap()]);
    let paths: Vec<&str> = report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert!(
        paths[0].ends_with("proxy-host/trace.pcap") && paths[1].ends_with("server-host/trace.pcap")
    );
    assert_eq!(lost_in_transit(&report).len(), 1);
    let by_input = report["summary"]["by_input"].as_array().unwrap();
    let by_server = report["summary"]["by_server"].as_array().unwrap();
    // One logical session, seen at both inputs and both servers: each counts it once.
    assert_eq!(by_input.len(), 2);
    assert_eq!(by_server.len(), 2);
    for row in by_input.iter().chain(by_server) {
        assert_eq!(row["sessions"], 1, "{row}");
    }
    let total = |rows: &[Value]| -> u64 {
        rows.iter()
            .flat_map(|r| r["findings"].as_object().unwrap().values())
            .map(|n| n.as_u64().unwrap())
            .sum()
    };
    let all: u64 = report["summary"]["findings"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(total(by_input), all);
    assert_eq!(total(by_server), all);
    // Stated at the client leg: its input holds every finding, each once (the server leg's sight
    // of them is their `seen_at`).
    assert_eq!(
        by_input[0]["findings"]["high"].as_u64().unwrap(),
        report["summary"]["findings"]["high"].as_u64().unwrap()
    );
    assert_eq!(by_input[1]["findings"]["high"], 0);
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["vantage_points"].as_array().unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The official Python SDK's session manager with one event store for every session: each
/// resume the relay forced is replayed other sessions' events, and each is a
/// `cross_session_replay` on the session that resumed, with exactly the events the server leg
/// proves (the same ID carried fresh by the other session first, the same bytes), none the
/// server says were the session's own; the duplicate responses the replays delivered name them
/// as their cause. With one store per session (python-sdk-resume-many) nothing of the kind.
#[test]
fn an_event_store_shared_across_sessions_is_seen_in_the_events_it_replays() {
    let t = truth("python-sdk-shared-store.truth.json");
    let want = t["expected_findings"]["cross_session_replay"]
        .as_array()
        .unwrap();
    assert!(want.len() >= 3, "{want:?}");
    for (file, exact) in [
        ("samples/python-sdk-shared-store-server-leg.pcap", true),
        ("samples/python-sdk-shared-store.pcap", false),
    ] {
        let report = analyze(&[file]);
        let found: Vec<&Value> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "cross_session_replay")
            .collect();
        assert_eq!(found.len(), want.len(), "{file}");
        for w in want {
            let lei = &w["last_event_id"];
            let f = found
                .iter()
                .find(|f| f["evidence"]["last_event_id"] == *lei)
                .unwrap_or_else(|| panic!("{file}: no finding for the resume from {lei}"));
            assert_eq!(f["session_id"], w["session_id"], "{file}");
            let resume = t["resumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["last_event_id"] == *lei)
                .unwrap();
            let foreign: BTreeSet<&str> = resume["replayed_minted_in_other_sessions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            for e in f["evidence"]["events"].as_array().unwrap() {
                let id = e["replayed"]["event_id"].as_str().unwrap();
                assert!(foreign.contains(id), "{file}: {id} was the session's own");
            }
            if exact {
                assert_eq!(
                    f["evidence"]["event_count"], w["events_on_the_server_leg"],
                    "{file}"
                );
            }
        }
        for d in report["findings"].as_array().unwrap() {
            if d["kind"] == "duplicate_response" {
                let cause = d["caused_by"][0].as_str().unwrap();
                let c = report["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["id"] == cause);
                assert_eq!(c.unwrap()["kind"], "cross_session_replay", "{file}");
            }
        }
    }
    let separate = analyze(&[
        "samples/python-sdk-resume-many.pcap",
        "samples/python-sdk-resume-many-server-leg.pcap",
    ]);
    assert_eq!(separate["findings"], Value::Array(vec![]));
}

/// Two replicas of the official Python SDK server behind an nginx without stickiness: every
/// request the replica that did not mint its session answered 404 while the session went on is
/// in one `session_not_found` per session, on the client leg, the server leg (where the replicas
/// are two observations of the session ID) and nginx's log alike, the client (which kept using
/// the session) named; and nothing else is raised.
#[test]
fn a_balancer_without_stickiness_gives_session_not_found() {
    let t = truth("balancer-no-stickiness.truth.json");
    let want = t["expected_findings"]["session_not_found"]
        .as_object()
        .unwrap();
    assert!(want.len() >= 3, "{want:?}");
    for file in [
        "samples/balancer-no-stickiness-client-leg.pcap",
        "samples/balancer-no-stickiness-server-leg.pcap",
        "samples/balancer-no-stickiness.nginx.jsonl",
    ] {
        let report = analyze(&[file]);
        let findings = report["findings"].as_array().unwrap();
        let mut got = serde_json::Map::new();
        for f in findings {
            assert_eq!(f["kind"], "session_not_found", "{file}: {}", f["summary"]);
            let sid = f["session_id"].as_str().unwrap().to_string();
            assert!(
                got.insert(sid, f["evidence"]["rejected"].clone()).is_none(),
                "{file}"
            );
            assert_eq!(
                f["evidence"]["client_reaction"]["what"], "kept_going",
                "{file}"
            );
        }
        assert_eq!(&got, want, "{file}");
    }
    // On the server leg the replica that served the session is named beside the one that refused.
    let report = analyze(&["samples/balancer-no-stickiness-server-leg.pcap"]);
    for f in report["findings"].as_array().unwrap() {
        let s = t["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == f["session_id"])
            .unwrap();
        let servers = &f["evidence"]["servers"];
        assert_eq!(
            servers["serving"],
            serde_json::json!([s["minted_at_replica"]])
        );
        assert_ne!(servers["answered_404"], s["minted_at_replica"]);
    }
}

/// nginx buffering the official Python SDK's event streams (its X-Accel-Buffering: no ignored):
/// with both legs, each call whose events the truth says were held well over a second is a
/// `stream_stalled` on its client-leg session, held about as long; calls held well under a
/// second are not; each standalone GET (released only when the server ended it) is held or lost,
/// one of the two. One leg alone cannot measure a hop: nothing is raised.
#[test]
fn a_buffering_proxy_shows_in_the_events_it_held() {
    let t = truth("buffering-nginx.truth.json");
    let client = "samples/buffering-nginx-client-leg.pcap";
    let report = analyze(&[client, "samples/buffering-nginx-server-leg.pcap"]);
    let findings = report["findings"].as_array().unwrap();
    let on = |sid: &Value, stream: &str, kind: &str| -> Vec<&Value> {
        findings
            .iter()
            .filter(|f| {
                f["session_id"] == *sid && f["kind"] == kind && f["evidence"]["stream"] == stream
            })
            .chain(findings.iter().filter(|f| {
                f["session_id"] == *sid
                    && f["kind"] == kind
                    && f["evidence"]["missing_from"]["stream"] == stream
            }))
            .collect()
    };
    let mut stalled = 0;
    for st in t["streams"].as_array().unwrap() {
        let sid = &st["session_id"];
        let session = report["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == *sid && s["streams"][0]["input"] == 0)
            .unwrap();
        let request = st["request"].as_str().unwrap();
        let label = session["streams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| match request.split_once(' ') {
                Some(("GET", _)) => x["transport"] == "get",
                Some((_, id)) => x["requests"] == serde_json::json!([id.parse::<i64>().unwrap()]),
                None => x["methods"] == serde_json::json!([request]),
            })
            .map(|x| x["id"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{request} not in {sid}"));
        let held = on(sid, &label, "stream_stalled");
        if request == "GET standalone" {
            let lost = on(sid, &label, "lost_in_transit");
            assert_eq!(
                held.len() + lost.len(),
                1,
                "{sid} {label}: {held:?} {lost:?}"
            );
            continue;
        }
        let truth_held = st["held_max_s"].as_f64().unwrap();
        if truth_held >= 1.5 {
            assert_eq!(held.len(), 1, "{sid} {label} held {truth_held}");
            let got = held[0]["evidence"]["held_s"].as_f64().unwrap();
            assert!(
                (truth_held - 0.25..=truth_held + 0.05).contains(&got),
                "{got} vs {truth_held}"
            );
            assert!(held[0]["evidence"]["burst_events"].as_u64().unwrap() >= 3);
            stalled += 1;
        } else if truth_held < 0.8 {
            assert!(held.is_empty(), "{sid} {label} held {truth_held}: {held:?}");
        }
    }
    assert!(stalled >= 4, "{stalled}");
    for leg in [client, "samples/buffering-nginx-server-leg.pcap"] {
        assert_eq!(analyze(&[leg])["findings"], Value::Array(vec![]), "{leg}");
    }
}

#[test]
fn the_typescript_sdks_reconnect_without_its_cursor_is_a_dropped_cursor() {
    // typescript-sdk #2499 with the real SDK: the resume of a call's stream dies before any
    // event and the client's next GETs carry no Last-Event-ID (409 twice); the truth is the
    // client's, relay's and server's own logs.
    let t = truth("ts-sdk-dropped-cursor.truth.json");
    let want = &t["expected"];
    let report = analyze(&["samples/ts-sdk-dropped-cursor.pcap"]);
    let above: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert_eq!(above.len(), 1, "{above:#?}");
    let f = above[0];
    assert_eq!(f["kind"], "cursor_dropped");
    assert_eq!(f["session_id"], t["session_id"]);
    let e = &f["evidence"];
    assert_eq!(e["last_seen_event_id"], want["dropped_cursor"]);
    assert_eq!(
        e["last_seen_event_id"],
        want["resume_with_last_event_id"]["last_event_id"]
    );
    let reconnects = want["reconnects_without_last_event_id"].as_array().unwrap();
    assert_eq!(e["attempts"].as_u64().unwrap() as usize, reconnects.len());
    let statuses: Vec<&Value> = reconnects.iter().map(|r| &r["status"]).collect();
    assert_eq!(
        e["statuses"].as_array().unwrap().iter().collect::<Vec<_>>(),
        statuses
    );
    let unanswered = want["unanswered_request"]["id"].to_string();
    assert_eq!(e["unanswered"], serde_json::json!([unanswered]));
    assert_eq!(f["severity"], "high");
    assert_eq!(report["sessions"][0]["resumption"]["verdict"], "unsafe");
    // Seen from the server: the relay, the server's client, dropped the resume; nothing more.
    check(
        "ts-sdk-dropped-cursor-server-leg.pcap",
        &Expect {
            sessions: 1,
            above_info: HEALTHY,
        },
    );
}

/// Each event ID the servers' own stores minted, by session ID (empty when the truth is of one
/// session), with the stream key it was minted under.
fn minted_by(t: &Value) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    if let Some(list) = t["sse_events_minted"].as_array() {
        for e in list {
            let key = (String::new(), e["event_id"].as_str().unwrap().to_string());
            out.insert(key, e["stream_id"].as_str().unwrap().to_string());
        }
    }
    for s in t["sessions"].as_array().into_iter().flatten() {
        let sid = s["session_id"].as_str().unwrap_or_default().to_string();
        for row in s["server"]["sse_events_minted"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let id = row[0].as_str().unwrap().to_string();
            out.insert((sid.clone(), id), row[1].as_str().unwrap().to_string());
        }
    }
    out
}

/// (right, wrong, unknown) namespaces of the events resume streams delivered, against the
/// stores' own record of which stream minted each.
fn attribution_score(file: &str, truth_file: &str) -> (usize, usize, usize, Vec<String>) {
    let minted = minted_by(&truth(truth_file));
    let one_session = minted.keys().all(|(sid, _)| sid.is_empty());
    let report = analyze(&["--events", &format!("samples/{file}")]);
    let (mut right, mut wrong, mut unknown, mut misses) = (0, 0, 0, Vec::new());
    for session in report["sessions"].as_array().unwrap() {
        let sid = if one_session {
            String::new()
        } else {
            session["session_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let label = session["key"].as_str().unwrap();
        let events: Vec<&Value> = report["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["session"] == label)
            .collect();
        let minted_in = |e: &Value| minted.get(&(sid.clone(), e["id"].as_str()?.to_string()));
        // Each stream's key in the store: the key of the events it delivered live.
        let resumes: BTreeSet<&str> = session["streams"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|st| !st["resume"].is_null())
            .map(|st| st["id"].as_str().unwrap())
            .collect();
        let mut key_of: BTreeMap<&str, &str> = BTreeMap::new();
        for e in &events {
            let stream = e["stream"].as_str().unwrap();
            if !resumes.contains(stream)
                && let Some(k) = minted_in(e)
            {
                key_of.entry(stream).or_insert(k);
            }
        }
        for e in events
            .iter()
            .filter(|e| resumes.contains(e["stream"].as_str().unwrap()))
        {
            let Some(key) = minted_in(e) else { continue };
            let Some(want) = key_of.iter().find(|(_, k)| *k == key).map(|(s, _)| *s) else {
                continue;
            };
            match e["namespace"].as_str().unwrap() {
                got if got == want => right += 1,
                "unknown" => {
                    unknown += 1;
                    misses.push(format!(
                        "{label} {} unknown ({})",
                        e["id"], e["attribution"]
                    ));
                }
                got => {
                    wrong += 1;
                    misses.push(format!("{label} {} {got}, minted by {want}", e["id"]));
                }
            }
        }
    }
    (right, wrong, unknown, misses)
}

#[test]
fn events_replayed_by_the_sdks_are_labelled_with_the_stream_that_minted_them() {
    let (mut right, mut wrong, mut unknown, mut misses) = (0, 0, 0, Vec::new());
    for (file, truth_file) in [
        (
            "python-sdk-resume-many.pcap",
            "python-sdk-resume-many.truth.json",
        ),
        (
            "python-sdk-resume-many-server-leg.pcap",
            "python-sdk-resume-many.truth.json",
        ),
        ("ts-sdk-resumption.pcap", "ts-sdk-resumption.truth.json"),
        (
            "ts-sdk-resumption-server-leg.pcap",
            "ts-sdk-resumption.truth.json",
        ),
        (
            "ts-sdk-dropped-cursor-server-leg.pcap",
            "ts-sdk-dropped-cursor.truth.json",
        ),
    ] {
        let (r, w, u, m) = attribution_score(file, truth_file);
        eprintln!("{file}: {r} right, {w} wrong, {u} unknown");
        right += r;
        wrong += w;
        unknown += u;
        misses.extend(m.into_iter().map(|m| format!("{file}: {m}")));
    }
    let total = right + wrong + unknown;
    assert!(total >= 100, "only {total} replayed events compared");
    assert_eq!(wrong, 0, "{misses:#?}");
    assert!(
        right * 100 >= total * 95,
        "{right} of {total} right: {misses:#?}"
    );
}
