//! Writes captures: pcap and pcapng files and the frames inside them.
//!
//! Used by the tests (every link type and file variant, built byte by byte) and by the benchmark
//! capture generator. It writes what tcpdump writes, with valid IP and TCP checksums, so tshark
//! can read the result too.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};

use super::decode::{TcpFlags, linktype};
use mcpf_model::Timestamp;

/// One TCP segment to put on the wire.
#[derive(Clone, Debug)]
pub struct SegmentSpec<'a> {
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    pub(crate) seq: u32,
    pub(crate) ack: u32,
    pub flags: TcpFlags,
    pub window: u16,
    /// A window scale option (RFC 7323 §2.2) to put in the header, for SYN segments.
    pub wscale: Option<u8>,
    pub(crate) payload: &'a [u8],
    /// IPv4 options (a multiple of 4 bytes) or, for IPv6, a hop-by-hop extension header's
    /// option bytes (6 + 8n bytes): lets tests exercise variable-length headers.
    pub ip_options: &'a [u8],
}

impl<'a> SegmentSpec<'a> {
    pub fn new(src: SocketAddr, dst: SocketAddr, seq: u32, ack: u32, payload: &'a [u8]) -> Self {
        SegmentSpec {
            src,
            dst,
            seq,
            ack,
            flags: TcpFlags {
                ack: true,
                ..TcpFlags::default()
            },
            window: 65_535,
            wscale: None,
            payload,
            ip_options: &[],
        }
    }

    pub fn flags(mut self, flags: TcpFlags) -> Self {
        self.flags = flags;
        self
    }
}

fn checksum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn checksum_finish(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Serialises the TCP header and payload with a valid checksum over the pseudo-header.
fn tcp_bytes(spec: &SegmentSpec<'_>, pseudo: u32) -> Vec<u8> {
    let mut tcp = Vec::with_capacity(20 + spec.payload.len());
    tcp.extend_from_slice(&spec.src.port().to_be_bytes());
    tcp.extend_from_slice(&spec.dst.port().to_be_bytes());
    tcp.extend_from_slice(&spec.seq.to_be_bytes());
    tcp.extend_from_slice(&spec.ack.to_be_bytes());
    let mut flags = 0u8;
    if spec.flags.fin {
        flags |= 0x01;
    }
    if spec.flags.syn {
        flags |= 0x02;
    }
    if spec.flags.rst {
        flags |= 0x04;
    }
    if !spec.payload.is_empty() {
        flags |= 0x08; // PSH, as stacks set it on the last segment of a write
    }
    if spec.flags.ack {
        flags |= 0x10;
    }
    // Window scale: kind 3, length 3, the shift, then a NOP to fill the 32-bit word.
    let wscale_option;
    let options: &[u8] = match spec.wscale {
        Some(shift) => {
            wscale_option = [3, 3, shift, 1];
            &wscale_option
        }
        None => &[],
    };
    tcp.push((((20 + options.len()) / 4) as u8) << 4);
    tcp.push(flags);
    tcp.extend_from_slice(&spec.window.to_be_bytes());
    tcp.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    tcp.extend_from_slice(options);
    tcp.extend_from_slice(spec.payload);
    let sum = checksum_add(pseudo + tcp.len() as u32, &tcp);
    let c = checksum_finish(sum);
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    tcp
}

/// An IP packet (v4 or v6, after the addresses of the spec) carrying the TCP segment.
pub fn ip_packet(spec: &SegmentSpec<'_>) -> Vec<u8> {
    match (spec.src.ip(), spec.dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let pseudo = checksum_add(checksum_add(6, &s.octets()), &d.octets());
            let tcp = tcp_bytes(spec, pseudo);
            let header_len = 20 + spec.ip_options.len();
            let total = header_len + tcp.len();
            let mut ip = Vec::with_capacity(total);
            ip.push(0x40 | (header_len / 4) as u8);
            ip.push(0);
            ip.extend_from_slice(&(total as u16).to_be_bytes());
            ip.extend_from_slice(&[0x12, 0x34, 0x40, 0x00]); // id, DF
            ip.push(64);
            ip.push(6);
            ip.extend_from_slice(&[0, 0]);
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            ip.extend_from_slice(spec.ip_options);
            let c = checksum_finish(checksum_add(0, &ip[..header_len]));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            ip.extend_from_slice(&tcp);
            ip
        }
        (s, d) => {
            let s6 = match s {
                IpAddr::V6(a) => a,
                IpAddr::V4(a) => a.to_ipv6_mapped(),
            };
            let d6 = match d {
                IpAddr::V6(a) => a,
                IpAddr::V4(a) => a.to_ipv6_mapped(),
            };
            let pseudo = checksum_add(checksum_add(6, &s6.octets()), &d6.octets());
            let tcp = tcp_bytes(spec, pseudo);
            let mut ext = Vec::new();
            if !spec.ip_options.is_empty() {
                // Hop-by-hop options header: next header, length in 8-byte units minus one.
                ext.push(6);
                ext.push(((spec.ip_options.len() + 2) / 8 - 1) as u8);
                ext.extend_from_slice(spec.ip_options);
            }
            let mut ip = Vec::with_capacity(40 + ext.len() + tcp.len());
            ip.extend_from_slice(&[0x60, 0, 0, 0]);
            ip.extend_from_slice(&((ext.len() + tcp.len()) as u16).to_be_bytes());
            ip.push(if ext.is_empty() { 6 } else { 0 });
            ip.push(64);
            ip.extend_from_slice(&s6.octets());
            ip.extend_from_slice(&d6.octets());
            ip.extend_from_slice(&ext);
            ip.extend_from_slice(&tcp);
            ip
        }
    }
}

/// Wraps an IP packet in the link layer of `linktype`. `vlan_tags` applies to Ethernet only.
pub fn link_frame(linktype: i32, ip: &[u8], vlan_tags: &[u16]) -> Vec<u8> {
    let v6 = ip.first().is_some_and(|b| b >> 4 == 6);
    let ethertype: u16 = if v6 { 0x86dd } else { 0x0800 };
    let mut f = Vec::with_capacity(ip.len() + 32);
    match linktype {
        linktype::ETHERNET => {
            f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01]);
            for (i, tag) in vlan_tags.iter().enumerate() {
                // The outer tag of a stack is 802.1ad, inner ones 802.1Q.
                let tpid: u16 = if i == 0 && vlan_tags.len() > 1 {
                    0x88a8
                } else {
                    0x8100
                };
                f.extend_from_slice(&tpid.to_be_bytes());
                f.extend_from_slice(&tag.to_be_bytes());
            }
            f.extend_from_slice(&ethertype.to_be_bytes());
        }
        linktype::LINUX_SLL => {
            f.extend_from_slice(&[0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
            f.extend_from_slice(&ethertype.to_be_bytes());
        }
        linktype::LINUX_SLL2 => {
            f.extend_from_slice(&ethertype.to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
        }
        linktype::NULL => {
            let family: u32 = if v6 { 24 } else { 2 };
            f.extend_from_slice(&family.to_le_bytes());
        }
        linktype::LOOP => {
            let family: u32 = if v6 { 24 } else { 2 };
            f.extend_from_slice(&family.to_be_bytes());
        }
        _ => {}
    }
    f.extend_from_slice(ip);
    f
}

/// Classic pcap writer.
pub struct PcapWriter<W: Write> {
    out: W,
    nanos: bool,
    big_endian: bool,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(
        mut out: W,
        linktype: i32,
        snaplen: u32,
        nanos: bool,
        big_endian: bool,
    ) -> io::Result<Self> {
        let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let mut h = Vec::with_capacity(24);
        let u32b = |v: u32| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u16b = |v: u16| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        h.extend_from_slice(&u32b(magic));
        h.extend_from_slice(&u16b(2));
        h.extend_from_slice(&u16b(4));
        h.extend_from_slice(&u32b(0));
        h.extend_from_slice(&u32b(0));
        h.extend_from_slice(&u32b(snaplen));
        h.extend_from_slice(&u32b(linktype as u32));
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            nanos,
            big_endian,
        })
    }

    /// Writes a record; `orig_len` larger than `data` marks it as cut by the snap length.
    pub fn packet(&mut self, time: Timestamp, data: &[u8], orig_len: u32) -> io::Result<()> {
        let sub = if self.nanos {
            time.subsec_nanos()
        } else {
            time.subsec_nanos() / 1000
        };
        let fields = [time.secs() as u32, sub, data.len() as u32, orig_len];
        for v in fields {
            let b = if self.big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.out.write_all(&b)?;
        }
        self.out.write_all(data)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// pcapng writer: sections, interfaces with their own link type and `if_tsresol`, and the three
/// kinds of packet block.
pub struct PcapNgWriter<W: Write> {
    out: W,
    big_endian: bool,
    /// Units per second of each interface of the current section.
    resolutions: Vec<u64>,
}

impl<W: Write> PcapNgWriter<W> {
    pub fn new(out: W, big_endian: bool) -> io::Result<Self> {
        let mut w = PcapNgWriter {
            out,
            big_endian,
            resolutions: Vec::new(),
        };
        w.section(big_endian)?;
        Ok(w)
    }

    fn u32b(&self, v: u32) -> [u8; 4] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn u16b(&self, v: u16) -> [u8; 2] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn block(&mut self, block_type: u32, body: &[u8]) -> io::Result<()> {
        let padded = body.len().div_ceil(4) * 4;
        let total = (12 + padded) as u32;
        let mut b = Vec::with_capacity(total as usize);
        b.extend_from_slice(&self.u32b(block_type));
        b.extend_from_slice(&self.u32b(total));
        b.extend_from_slice(body);
        b.resize(8 + padded, 0);
        b.extend_from_slice(&self.u32b(total));
        self.out.write_all(&b)
    }

    /// Starts a new section (interfaces are numbered from 0 again).
    pub fn section(&mut self, big_endian: bool) -> io::Result<()> {
        self.big_endian = big_endian;
        self.resolutions.clear();
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32b(0x1a2b_3c4d));
        body.extend_from_slice(&self.u16b(1));
        body.extend_from_slice(&self.u16b(0));
        body.extend_from_slice(&[0xff; 8]); // section length unknown
        self.block(0x0a0d_0d0a, &body)
    }

    /// Declares an interface; `tsresol` is the raw `if_tsresol` byte (6 = µs, 9 = ns, 0x80|n =
    /// 2^-n). Returns its interface ID.
    pub fn interface(&mut self, linktype: i32, snaplen: u32, tsresol: u8) -> io::Result<u32> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16b(linktype as u16));
        body.extend_from_slice(&self.u16b(0));
        body.extend_from_slice(&self.u32b(snaplen));
        // if_tsresol option (code 9, length 1), then opt_endofopt.
        body.extend_from_slice(&self.u16b(9));
        body.extend_from_slice(&self.u16b(1));
        body.extend_from_slice(&[tsresol, 0, 0, 0]);
        body.extend_from_slice(&[0, 0, 0, 0]);
        self.block(1, &body)?;
        let units = if tsresol & 0x80 != 0 {
            1u64 << (tsresol & 0x7f)
        } else {
            10u64.pow(u32::from(tsresol))
        };
        self.resolutions.push(units);
        Ok(self.resolutions.len() as u32 - 1)
    }

    fn raw_ts(&self, if_id: u32, time: Timestamp) -> u64 {
        let units = self
            .resolutions
            .get(if_id as usize)
            .copied()
            .unwrap_or(1_000_000);
        let secs = time.secs() as u64;
        let frac = u128::from(time.subsec_nanos()) * u128::from(units) / 1_000_000_000;
        secs * units + frac as u64
    }

    /// Enhanced packet block.
    pub fn packet(
        &mut self,
        if_id: u32,
        time: Timestamp,
        data: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        let ts = self.raw_ts(if_id, time);
        let mut body = Vec::with_capacity(20 + data.len() + 3);
        body.extend_from_slice(&self.u32b(if_id));
        body.extend_from_slice(&self.u32b((ts >> 32) as u32));
        body.extend_from_slice(&self.u32b(ts as u32));
        body.extend_from_slice(&self.u32b(data.len() as u32));
        body.extend_from_slice(&self.u32b(orig_len));
        body.extend_from_slice(data);
        self.block(6, &body)
    }

    /// Simple packet block (interface 0, no timestamp).
    pub fn simple_packet(&mut self, data: &[u8]) -> io::Result<()> {
        let mut body = Vec::with_capacity(4 + data.len());
        body.extend_from_slice(&self.u32b(data.len() as u32));
        body.extend_from_slice(data);
        self.block(3, &body)
    }

    /// The obsolete packet block (type 2) of old captures.
    pub fn obsolete_packet(&mut self, if_id: u16, time: Timestamp, data: &[u8]) -> io::Result<()> {
        let ts = self.raw_ts(u32::from(if_id), time);
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16b(if_id));
        body.extend_from_slice(&self.u16b(0));
        body.extend_from_slice(&self.u32b((ts >> 32) as u32));
        body.extend_from_slice(&self.u32b(ts as u32));
        body.extend_from_slice(&self.u32b(data.len() as u32));
        body.extend_from_slice(&self.u32b(data.len() as u32));
        body.extend_from_slice(data);
        self.block(2, &body)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}
