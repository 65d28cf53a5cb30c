//! Issue 30: a finding that rests on event IDs must rest on what they prove. For every cleartext
//! sample, each SSE event ID (in `id:` lines and in `Last-Event-ID` headers alike) is replaced
//! by a random opaque string of the same length, the same one everywhere it occurs, so the
//! bytes and TCP sequence numbers do not move. Opaque IDs prove less than counters: findings may
//! be lost, but none above info may be added.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

/// The finding kinds above info of a report, with their session's ID.
fn above_info(doc: &Value) -> BTreeSet<(String, String)> {
    let sid_of: BTreeMap<&str, String> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["key"].as_str().unwrap(), s["session_id"].to_string()))
        .collect();
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| {
            let sid = sid_of.get(f["session"].as_str().unwrap()).cloned();
            (
                f["kind"].as_str().unwrap().to_string(),
                sid.unwrap_or_default(),
            )
        })
        .collect()
}

fn analyze(path: &Path) -> Value {
    let out = Command::cargo_bin("mcp-forensics")
        .unwrap()
        .args(["analyze", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{path:?}: no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A small deterministic generator (xorshift): each run rewrites the same way.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Letters only: an opaque ID, never a counter.
    fn opaque(&mut self, len: usize) -> Vec<u8> {
        const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        (0..len)
            .map(|_| LETTERS[(self.next() % LETTERS.len() as u64) as usize])
            .collect()
    }
}

/// Where an event ID's value starts after each of these, up to the end of its line.
const ID_FIELDS: &[&[u8]] = &[
    b"\nid: ",
    b"\nid:",
    b"\nLast-Event-ID: ",
    b"\nlast-event-id: ",
];

/// The IDs a packet holds whole (the line ends in the packet), by where they are.
fn ids_in(packet: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for field in ID_FIELDS {
        let mut at = 0;
        while let Some(i) = find(&packet[at..], field) {
            let start = at + i + field.len();
            at = start;
            if field == b"\nid:" && packet.get(start) == Some(&b' ') {
                continue; // `\nid: ` is its own field
            }
            let Some(len) = packet[start..]
                .iter()
                .position(|&b| b == b'\r' || b == b'\n')
            else {
                continue;
            };
            if len > 0 {
                found.push((start, len));
            }
        }
    }
    found
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The sample with every event ID replaced by its opaque stand-in; `None` when it holds none.
fn with_opaque_ids(bytes: &[u8], seed: u64) -> Option<Vec<u8>> {
    if bytes.get(..4) != Some(&[0xd4, 0xc3, 0xb2, 0xa1]) {
        return None; // classic little-endian pcap only
    }
    // HTTP/2 carries `Last-Event-ID` in HPACK, which this does not rewrite: the IDs would no
    // longer agree with each other.
    if find(bytes, b"PRI * HTTP/2.0").is_some() || find(bytes, b"h2c").is_some() {
        return None;
    }
    let mut out = bytes.to_vec();
    let mut rng = Rng(seed);
    let mut stand_in: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut used: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut at = 24;
    while at + 16 <= out.len() {
        let incl = u32::from_le_bytes(out[at + 8..at + 12].try_into().unwrap()) as usize;
        let packet = at + 16..(at + 16 + incl).min(out.len());
        for (start, len) in ids_in(&out[packet.clone()]) {
            let id = out[packet.start + start..packet.start + start + len].to_vec();
            let new = match stand_in.get(&id) {
                Some(new) => new.clone(),
                None => {
                    // One stand-in per ID: two IDs made one would be a collision of our own.
                    let mut new = rng.opaque(len);
                    while used.contains(&new) {
                        new = rng.opaque(len);
                    }
                    used.insert(new.clone());
                    stand_in.insert(id, new.clone());
                    new
                }
            };
            out[packet.start + start..packet.start + start + len].copy_from_slice(&new);
        }
        at = packet.end;
    }
    (!stand_in.is_empty()).then_some(out)
}

#[test]
fn opaque_event_ids_never_add_a_finding_above_info() {
    let dir = tempfile::tempdir().unwrap();
    let mut rewritten = 0;
    let mut samples: Vec<_> = std::fs::read_dir("samples")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    samples.sort();
    for sample in samples {
        let bytes = std::fs::read(&sample).unwrap();
        for seed in [0x9e37_79b9_7f4a_7c15, 0x2545_f491_4f6c_dd1d] {
            let Some(opaque) = with_opaque_ids(&bytes, seed) else {
                continue;
            };
            let path = dir.path().join(sample.file_name().unwrap());
            std::fs::write(&path, opaque).unwrap();
            let before = above_info(&analyze(&sample));
            let after = above_info(&analyze(&path));
            // IDs minted twice are stated by the reset the client saw when the IDs are counters,
            // and as a collision when they are opaque (no reset shows): one fact either way.
            let stated_as_reset = |(kind, sid): &&(String, String)| {
                kind == "event_id_collision"
                    && before.contains(&("event_id_reset".to_string(), sid.clone()))
            };
            let added: Vec<_> = after
                .difference(&before)
                .filter(|x| !stated_as_reset(x))
                .collect();
            assert!(
                added.is_empty(),
                "{sample:?} with opaque IDs (seed {seed:#x}) adds {added:?}"
            );
            rewritten += 1;
        }
    }
    // The samples that carry SSE event IDs in the clear: most of them.
    assert!(rewritten >= 40, "{rewritten} rewritten");
}
