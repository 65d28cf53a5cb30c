//! The floor of issue 17: reading a capture and decoding its Ethernet, IP and TCP headers, and
//! nothing else, with the crates mcp-forensics reads captures with (pcap-parser, etherparse).
//! What mcp-forensics does on top of this is the analysis; its wall time against this one's is
//! the "within N× of the floor" figure of docs/performance.md.
//!
//! ```text
//! cargo run --release --example read_floor -- FILE.pcap|FILE.pcapng
//! ```
//! Prints one JSON line: frames, TCP segments, TCP payload bytes, seconds.

use std::fs::File;
use std::process::ExitCode;
use std::time::Instant;

use etherparse::{SlicedPacket, TransportSlice};
use pcap_parser::{Linktype, PcapBlockOwned, PcapError, create_reader};

#[derive(Default)]
struct Counts {
    frames: u64,
    tcp: u64,
    payload: u64,
}

impl Counts {
    fn frame(&mut self, linktype: Linktype, data: &[u8]) {
        self.frames += 1;
        let sliced = match linktype {
            Linktype::ETHERNET => SlicedPacket::from_ethernet(data),
            Linktype::LINUX_SLL => SlicedPacket::from_linux_sll(data),
            // SLL2 (`tcpdump -i any`): a 20-byte header etherparse does not read, then IP.
            Linktype(276) => SlicedPacket::from_ip(data.get(20..).unwrap_or_default()),
            _ => SlicedPacket::from_ip(data),
        };
        if let Ok(SlicedPacket {
            transport: Some(TransportSlice::Tcp(tcp)),
            ..
        }) = sliced
        {
            self.tcp += 1;
            self.payload += tcp.payload().len() as u64;
        }
    }
}

fn read(path: &str) -> Result<Counts, String> {
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut reader = create_reader(1 << 20, file).map_err(|e| format!("{path}: {e:?}"))?;
    let mut counts = Counts::default();
    let mut linktypes: Vec<Linktype> = Vec::new();
    loop {
        match reader.next() {
            Ok((used, block)) => {
                match block {
                    PcapBlockOwned::LegacyHeader(h) => linktypes = vec![h.network],
                    PcapBlockOwned::Legacy(b) => counts.frame(linktypes[0], b.data),
                    PcapBlockOwned::NG(pcap_parser::Block::InterfaceDescription(i)) => {
                        linktypes.push(i.linktype)
                    }
                    PcapBlockOwned::NG(pcap_parser::Block::EnhancedPacket(p)) => {
                        let lt = linktypes.get(p.if_id as usize).copied();
                        counts.frame(lt.unwrap_or(Linktype::ETHERNET), p.data)
                    }
                    _ => {}
                }
                reader.consume(used);
            }
            Err(PcapError::Eof) => return Ok(counts),
            Err(PcapError::Incomplete(_)) => {
                reader.refill().map_err(|e| format!("{path}: {e:?}"))?;
            }
            Err(e) => return Err(format!("{path}: {e:?}")),
        }
    }
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: read_floor FILE.pcap|FILE.pcapng");
        return ExitCode::from(2);
    };
    let start = Instant::now();
    match read(&path) {
        Ok(c) => {
            println!(
                "{{\"frames\":{},\"tcp_segments\":{},\"tcp_payload_bytes\":{},\"seconds\":{:.3}}}",
                c.frames,
                c.tcp,
                c.payload,
                start.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("read_floor: {e}");
            ExitCode::FAILURE
        }
    }
}
