//! The decryptor on a real capture: curl and Debian's nginx over TLS 1.3 and 1.2, one
//! connection per suite, with curl's key log (`samples/make/tls-nginx-curl.sh`). What comes out
//! is what the truth says nginx served and curl received, for every suite (the CBC one with
//! encrypt-then-MAC included); without the key log every connection is reported as having no key.

use std::collections::BTreeMap;

use base64::Engine;
use mcpf_capture::tcp::TcpEvent;
use mcpf_capture::{CaptureStage, Settings, open_capture};
use mcpf_model::{ConnId, Direction};
use mcpf_tls::{KeyLog, Output, TlsConnection, Undecryptable};

fn sample(name: &str) -> String {
    format!("{}/../../samples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// What a connection's decryptor yielded: client plaintext, server plaintext, what was lost.
type Yield = (Vec<u8>, Vec<u8>, Vec<Undecryptable>);

/// Each TCP connection of the capture with what its decryptor yielded, in capture order.
fn decrypt(keys: &KeyLog) -> BTreeMap<ConnId, Yield> {
    let mut inputs = vec![open_capture(&sample("tls-nginx-curl.pcap"), 0).unwrap()];
    let mut stage = CaptureStage::new(Settings::default(), 1);
    let mut conns: BTreeMap<ConnId, TlsConnection> = BTreeMap::new();
    let mut got: BTreeMap<ConnId, Yield> = BTreeMap::new();
    let mut sink = |ev: TcpEvent<'_>| {
        if let TcpEvent::Data {
            conn, dir, data, ..
        } = ev
        {
            let outs = conns.entry(conn).or_default().feed(dir, data, keys);
            let entry = got.entry(conn).or_default();
            for o in outs {
                match o {
                    Output::Plaintext {
                        direction: Direction::ClientToServer,
                        data,
                        ..
                    } => entry.0.extend(data),
                    Output::Plaintext { data, .. } => entry.1.extend(data),
                    Output::Undecryptable { why, .. } => entry.2.push(why),
                }
            }
        }
    };
    mcpf_capture::run(&mut inputs, &mut stage, &mut sink);
    got
}

fn truth() -> serde_json::Value {
    let text = std::fs::read_to_string(sample("tls-nginx-curl.truth.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_connection_decrypts_to_what_curl_received() {
    let t = truth();
    let keys = KeyLog::parse(&std::fs::read(sample("tls-nginx-curl.keys")).unwrap()).unwrap();
    let got = decrypt(&keys);
    let conns: Vec<_> = got.values().collect();
    let names: Vec<&str> = t["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(conns.len(), names.len());
    for ((client, server, lost), c) in conns.iter().zip(t["connections"].as_array().unwrap()) {
        let name = c["name"].as_str().unwrap();
        assert!(lost.is_empty(), "{name}: {lost:?}");
        assert!(
            client.starts_with(b"GET /mcp HTTP/1.1\r\n"),
            "{name}: {:?}",
            String::from_utf8_lossy(client)
        );
        let body = base64::engine::general_purpose::STANDARD
            .decode(c["received_b64"].as_str().unwrap())
            .unwrap();
        assert!(server.starts_with(b"HTTP/1.1 200 OK\r\n"), "{name}");
        assert!(server.ends_with(&body), "{name}: the body curl received");
    }
}

#[test]
fn without_its_secrets_a_connection_is_reported_not_guessed() {
    let other = format!("CLIENT_RANDOM {} {}", "00".repeat(32), "11".repeat(48));
    let keys = KeyLog::parse(other.as_bytes()).unwrap();
    for (client, server, lost) in decrypt(&keys).values() {
        assert!(client.is_empty() && server.is_empty());
        assert!(!lost.is_empty());
        assert!(
            lost.iter()
                .all(|w| matches!(w, Undecryptable::NoKey | Undecryptable::UnsupportedSuite(_))),
            "{lost:?}"
        );
    }
}

/// Hostile bytes: the sample's TLS streams with bytes flipped, cut and repeated at random (a
/// fixed seed, 300 rounds) never panic the decryptor, and each segment yields a bounded number
/// of outputs.
#[test]
fn damaged_records_are_reported_never_a_panic() {
    let keys = KeyLog::parse(&std::fs::read(sample("tls-nginx-curl.keys")).unwrap()).unwrap();
    let mut inputs = vec![open_capture(&sample("tls-nginx-curl.pcap"), 0).unwrap()];
    let mut stage = CaptureStage::new(Settings::default(), 1);
    let mut streams: BTreeMap<(ConnId, Direction), Vec<Vec<u8>>> = BTreeMap::new();
    let mut sink = |ev: TcpEvent<'_>| {
        if let TcpEvent::Data {
            conn, dir, data, ..
        } = ev
        {
            streams.entry((conn, dir)).or_default().push(data.to_vec());
        }
    };
    mcpf_capture::run(&mut inputs, &mut stage, &mut sink);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..300 {
        let mut conns: BTreeMap<ConnId, TlsConnection> = BTreeMap::new();
        let mut damaged = 0;
        for (&(conn, direction), segments) in &streams {
            for seg in segments {
                let mut seg = seg.clone();
                match next() % 8 {
                    0 if !seg.is_empty() => {
                        let i = (next() as usize) % seg.len();
                        seg[i] ^= 1 << (next() % 8);
                        damaged += 1;
                    }
                    1 => seg.truncate((next() as usize) % (seg.len() + 1)),
                    2 => seg.extend_from_within(..),
                    _ => {}
                }
                let outs = conns.entry(conn).or_default().feed(direction, &seg, &keys);
                assert!(outs.len() <= seg.len() + 1, "round {round}");
            }
        }
        assert!(damaged > 0 || round > 0);
    }
}
