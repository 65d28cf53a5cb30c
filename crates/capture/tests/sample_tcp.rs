//! The capture layer on a real tcpdump capture of loopback HTTP traffic: the reassembled bytes of
//! every connection must equal what the client and server wrote, as their own logs recorded
//! (`samples/http-basic.truth.json`, written by the script that made the capture).

use std::collections::BTreeMap;

use base64::Engine;
use mcpf_capture::tcp::{Direction, TcpEvent};
use mcpf_capture::{CaptureStage, Settings, open_capture, run};

#[test]
fn http_basic_bytes_match_what_each_side_sent() {
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../samples/http-basic.truth.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut inputs = vec![
        open_capture(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/http-basic.pcap"),
            0,
        )
        .unwrap(),
    ];
    let mut stage = CaptureStage::new(Settings::default(), 1);
    let mut streams: BTreeMap<(u16, Direction), Vec<u8>> = BTreeMap::new();
    let mut ports: BTreeMap<mcpf_model::ConnId, u16> = BTreeMap::new();
    let mut gaps = 0;
    let mut sink = |ev: TcpEvent<'_>| match ev {
        TcpEvent::Opened { conn, client, .. } => {
            ports.insert(conn, client.port());
        }
        TcpEvent::Data {
            conn, dir, data, ..
        } => streams
            .entry((ports[&conn], dir))
            .or_default()
            .extend_from_slice(data),
        TcpEvent::Gap { .. } => gaps += 1,
        _ => {}
    };
    run(&mut inputs, &mut stage, &mut sink);
    assert_eq!(gaps, 0);
    let conns = truth["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 3);
    let b64 = base64::engine::general_purpose::STANDARD;
    for c in conns {
        let port = c["client_port"].as_u64().unwrap() as u16;
        let c2s = b64.decode(c["c2s_b64"].as_str().unwrap()).unwrap();
        let s2c = b64.decode(c["s2c_b64"].as_str().unwrap()).unwrap();
        assert_eq!(
            streams[&(port, Direction::ClientToServer)],
            c2s,
            "port {port} c→s"
        );
        assert_eq!(
            streams[&(port, Direction::ServerToClient)],
            s2c,
            "port {port} s→c"
        );
    }
}
