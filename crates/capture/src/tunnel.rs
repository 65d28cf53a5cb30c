//! Tunnels: the headers that mirroring and overlays wrap a captured packet in, unwrapped until
//! the TCP segment inside, whose flow is then the inner addresses' as if it had been captured
//! plainly.
//!
//! What is read (each header length-checked; nothing here can panic on any bytes):
//! - VXLAN (RFC 7348): UDP to port 4789, an 8-byte header, an Ethernet frame.
//! - Geneve (RFC 8926): UDP to port 6081, an 8-byte header and its options (their length in
//!   4-byte words is in the header), then what its protocol type says: Ethernet (0x6558), IPv4,
//!   IPv6 or MPLS.
//! - GRE (RFC 2784, with RFC 2890's key and sequence number): IP protocol 47, 4 bytes and the
//!   optional checksum, key and sequence words its flags announce, then what its protocol type
//!   says: IPv4, IPv6, MPLS, Ethernet (0x6558, transparent Ethernet bridging) or ERSPAN.
//! - ERSPAN (draft-foschiano-erspan), over GRE 0x88BE or 0x22EB, read as Wireshark reads it: a
//!   GRE header with no flag at all is type I (the Ethernet frame follows GRE at once);
//!   otherwise the ERSPAN header's version says: 1 is type II (8 bytes), 2 is type III (12
//!   bytes, and an 8-byte platform-specific subheader when its O bit is set). An Ethernet frame
//!   follows.
//! - IP in IP: protocol 4 (IPv4 inside, RFC 2003) and 41 (IPv6 inside: 6in4, RFC 4213, or IPv6
//!   in IPv6, RFC 2473).
//! - MPLS (RFC 3032): ethertypes 0x8847 and 0x8848, 4-byte labels to the one with the
//!   bottom-of-stack bit; what follows has no type field, so its first nibble decides, as
//!   Wireshark does for a stack without a control word: 4 is IPv4, 6 is IPv6, 0 is a pseudowire
//!   control word (RFC 4385) before an Ethernet frame (RFC 4448).
//!
//! Any of them may carry another, to [`MAX_TUNNELS`] deep. UDP to another port is not a tunnel
//! unless the user said so (`--tunnel udp:PORT=vxlan`): [`UdpTunnel`].

use etherparse::{IpNumber, LaxIpSlice};
use mcpf_model::Tunnel;

use crate::decode::{
    ETHERTYPE_IPV4, ETHERTYPE_IPV6, Link, Skip, TcpSegment, be16, ethernet, ip_to_tcp, link,
};

/// How many tunnels may wrap one packet; a packet in more is skipped and counted ("tunnels
/// nested more than 4 deep"). Real overlays nest two or three (MPLS in GRE in VXLAN).
pub const MAX_TUNNELS: usize = 4;
/// More MPLS labels than this before the bottom of the stack is a crafted packet.
const MAX_MPLS_LABELS: usize = 16;

const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;
/// Transparent Ethernet bridging: an Ethernet frame (GRE and Geneve protocol type).
const ETHERTYPE_TEB: u16 = 0x6558;
/// GRE protocol types of ERSPAN: types I and II, and type III.
const GRE_ERSPAN: u16 = 0x88be;
const GRE_ERSPAN_III: u16 = 0x22eb;

/// The UDP port IANA assigns to VXLAN (RFC 7348 §5).
pub const VXLAN_PORT: u16 = 4789;
/// The UDP port IANA assigns to Geneve (RFC 8926 §3.3).
pub const GENEVE_PORT: u16 = 6081;

/// What a UDP port carries when it carries a tunnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpTunnelKind {
    Vxlan,
    Geneve,
}

/// A UDP destination port the user says carries a tunnel (`--tunnel udp:PORT=KIND`), besides
/// the ports the standards assign; it wins over them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpTunnel {
    pub port: u16,
    pub kind: UdpTunnelKind,
}

/// The tunnels one packet was unwrapped from, outermost first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Path {
    layers: [Option<Tunnel>; MAX_TUNNELS],
}

impl Path {
    fn push(&mut self, tunnel: Tunnel) -> Result<(), Skip> {
        let free = self
            .layers
            .iter_mut()
            .find(|l| l.is_none())
            .ok_or(Skip::TunnelTooDeep)?;
        *free = Some(tunnel);
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.layers[0].is_none()
    }

    /// The tunnels, outermost first, each once (a VXLAN inside a VXLAN is one kind of tunnel the
    /// frame came in).
    pub(crate) fn distinct(&self) -> impl Iterator<Item = Tunnel> + '_ {
        self.layers
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.filter(|t| !self.layers[..i].contains(&Some(*t))))
    }
}

/// What is to be read next.
#[derive(Debug)]
enum Next<'a> {
    /// An Ethernet frame (with VLAN tags, perhaps).
    Ethernet(&'a [u8]),
    /// A payload of this EtherType.
    Ether(u16, &'a [u8]),
    /// An IP packet.
    Ip(&'a [u8]),
}

/// Finds the TCP segment inside the tunnels of a frame in which plain decoding found none
/// (`plain` is why): the segment, the innermost IP packet, the tunnels. A frame with no tunnel
/// keeps the plain decoding's reason; a damaged tunnel header or one nested too deep has its own.
#[cold]
#[inline(never)]
pub(crate) fn unwrap<'a>(
    linktype: i32,
    frame: &'a [u8],
    udp_tunnels: &[UdpTunnel],
    plain: Skip,
) -> Result<(TcpSegment<'a>, &'a [u8], Path), Skip> {
    let mut path = Path::default();
    match walk(linktype, frame, udp_tunnels, &mut path) {
        Ok((seg, ip)) => Ok((seg, ip, path)),
        Err(e @ (Skip::MalformedTunnel(_) | Skip::TunnelTooDeep)) => Err(e),
        Err(_) if path.is_empty() => Err(plain),
        Err(e) => Err(e),
    }
}

fn walk<'a>(
    linktype: i32,
    frame: &'a [u8],
    udp_tunnels: &[UdpTunnel],
    path: &mut Path,
) -> Result<(TcpSegment<'a>, &'a [u8]), Skip> {
    let mut next = match link(linktype, frame)? {
        Link::Ether(ethertype, payload) => Next::Ether(ethertype, payload),
        Link::Ip(packet) => Next::Ip(packet),
    };
    // Every turn of the loop reads a header off the front of what is left, and every turn that
    // comes back to IP has added a tunnel to `path`, which holds at most `MAX_TUNNELS`: it ends.
    loop {
        next = match next {
            Next::Ethernet(frame) => {
                let (ethertype, payload) = ethernet(frame)?;
                Next::Ether(ethertype, payload)
            }
            Next::Ether(ethertype, payload) => match ethertype {
                ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Next::Ip(payload),
                ETHERTYPE_MPLS | ETHERTYPE_MPLS_MULTICAST => {
                    path.push(Tunnel::Mpls)?;
                    mpls(payload)?
                }
                _ => return Err(Skip::NotIp),
            },
            Next::Ip(packet) => match ip_to_tcp(packet) {
                Ok(seg) => return Ok((seg, packet)),
                Err(Skip::NotTcp) => inside_ip(packet, udp_tunnels, path)?,
                Err(e) => return Err(e),
            },
        };
    }
}

/// What an IP packet that is not TCP carries, when it is a tunnel.
fn inside_ip<'a>(
    packet: &'a [u8],
    udp_tunnels: &[UdpTunnel],
    path: &mut Path,
) -> Result<Next<'a>, Skip> {
    let (ip, _ext_error) = LaxIpSlice::from_slice(packet).map_err(|_| Skip::MalformedIp)?;
    let payload = ip.payload();
    if payload.fragmented {
        return Err(Skip::Ipv4Fragment);
    }
    let data = payload.payload;
    match payload.ip_number {
        IpNumber::IPV4 => {
            path.push(Tunnel::IpInIp)?;
            Ok(Next::Ip(data))
        }
        IpNumber::IPV6 => {
            path.push(Tunnel::Ipv6InIp)?;
            Ok(Next::Ip(data))
        }
        IpNumber::GRE => gre(data, path),
        IpNumber::UDP => udp(data, udp_tunnels, path),
        _ => Err(Skip::NotTcp),
    }
}

/// GRE (RFC 2784 §2, RFC 2890 §2): C, R, K and S flags, version; the protocol type; then the
/// checksum and reserved word (C, or R under RFC 1701), the key (K), the sequence number (S).
fn gre<'a>(data: &'a [u8], path: &mut Path) -> Result<Next<'a>, Skip> {
    let malformed = Skip::MalformedTunnel(Tunnel::Gre);
    let flags = be16(data, 0).ok_or(malformed)?;
    let proto = be16(data, 2).ok_or(malformed)?;
    // Version 1 is PPTP's enhanced GRE (RFC 2637), which carries PPP.
    if flags & 0x0007 != 0 {
        return Err(Skip::NotIp);
    }
    // RFC 1701's routing present bit puts a list of source routes after the header, which RFC
    // 2784 §2.3 says a receiver that does not implement them must discard.
    if flags & 0x4000 != 0 {
        return Err(malformed);
    }
    let words = [0x8000u16, 0x2000, 0x1000]
        .iter()
        .filter(|&&bit| flags & bit != 0)
        .count();
    let payload = data.get(4 + 4 * words..).ok_or(malformed)?;
    match proto {
        ETHERTYPE_TEB => {
            path.push(Tunnel::GreEthernet)?;
            Ok(Next::Ethernet(payload))
        }
        GRE_ERSPAN | GRE_ERSPAN_III => erspan(proto, flags, payload, path),
        _ => {
            path.push(Tunnel::Gre)?;
            Ok(Next::Ether(proto, payload))
        }
    }
}

/// ERSPAN after its GRE header (`gre_proto`, `gre_flags`: that header's protocol type, and its
/// flags and version).
fn erspan<'a>(
    gre_proto: u16,
    gre_flags: u16,
    data: &'a [u8],
    path: &mut Path,
) -> Result<Next<'a>, Skip> {
    // Type I has no ERSPAN header, and its GRE header no flag (no sequence number); it exists
    // only as 0x88BE, which type II shares, so the flags tell them apart.
    if gre_proto == GRE_ERSPAN && gre_flags == 0 {
        path.push(Tunnel::ErspanI)?;
        return Ok(Next::Ethernet(data));
    }
    let version = data.first().map(|b| b >> 4);
    let (tunnel, header) = match version {
        // Version, VLAN, COS, encapsulation, truncated, session ID; reserved, index.
        Some(1) => (Tunnel::ErspanII, 8),
        // Version, VLAN, COS, BSO, truncated, session ID; timestamp; SGT, P, frame type,
        // hardware ID, direction, granularity, O: the platform subheader follows when set.
        Some(2) => {
            let o = data.get(11).is_some_and(|b| b & 0x01 != 0);
            (Tunnel::ErspanIII, if o { 20 } else { 12 })
        }
        _ if gre_proto == GRE_ERSPAN_III => return Err(Skip::MalformedTunnel(Tunnel::ErspanIII)),
        _ => return Err(Skip::MalformedTunnel(Tunnel::ErspanII)),
    };
    path.push(tunnel)?;
    let frame = data.get(header..).ok_or(Skip::MalformedTunnel(tunnel))?;
    Ok(Next::Ethernet(frame))
}

/// A UDP datagram: a tunnel if its destination port is one.
fn udp<'a>(data: &'a [u8], udp_tunnels: &[UdpTunnel], path: &mut Path) -> Result<Next<'a>, Skip> {
    let Some(port) = be16(data, 2) else {
        return Err(Skip::NotTcp);
    };
    let kind = udp_tunnels
        .iter()
        .find(|t| t.port == port)
        .map(|t| t.kind)
        .or(match port {
            VXLAN_PORT => Some(UdpTunnelKind::Vxlan),
            GENEVE_PORT => Some(UdpTunnelKind::Geneve),
            _ => None,
        });
    let tunnel = match kind {
        Some(UdpTunnelKind::Vxlan) => Tunnel::Vxlan { udp_port: port },
        Some(UdpTunnelKind::Geneve) => Tunnel::Geneve { udp_port: port },
        None => return Err(Skip::NotTcp),
    };
    let malformed = Skip::MalformedTunnel(tunnel);
    let len = usize::from(be16(data, 4).ok_or(malformed)?);
    if len < 8 {
        return Err(malformed);
    }
    // The datagram ends where its length says, or where the capture cut it.
    let body = data.get(8..len.min(data.len())).ok_or(malformed)?;
    path.push(tunnel)?;
    match tunnel {
        // Flags (the I bit says the VNI is valid), reserved, VNI, reserved (RFC 7348 §5). The
        // I bit is not required: Wireshark does not, and the frame inside is whole either way.
        Tunnel::Vxlan { .. } => Ok(Next::Ethernet(body.get(8..).ok_or(malformed)?)),
        _ => geneve(body, malformed),
    }
}

/// Geneve (RFC 8926 §3.4): version and option length, flags, protocol type, VNI; then the
/// options.
fn geneve(body: &[u8], malformed: Skip) -> Result<Next<'_>, Skip> {
    let first = *body.first().ok_or(malformed)?;
    // Only version 0 exists; a packet of another is to be dropped (§3.4).
    if first >> 6 != 0 {
        return Err(malformed);
    }
    let options = usize::from(first & 0x3f) * 4;
    let proto = be16(body, 2).ok_or(malformed)?;
    let payload = body.get(8 + options..).ok_or(malformed)?;
    Ok(match proto {
        ETHERTYPE_TEB => Next::Ethernet(payload),
        other => Next::Ether(other, payload),
    })
}

/// An MPLS label stack (RFC 3032 §2.1): label, traffic class, bottom of stack, TTL.
fn mpls(data: &[u8]) -> Result<Next<'_>, Skip> {
    let malformed = Skip::MalformedTunnel(Tunnel::Mpls);
    for label in 0..MAX_MPLS_LABELS {
        let entry: [u8; 4] = data
            .get(label * 4..label * 4 + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or(malformed)?;
        if entry[2] & 0x01 == 0 {
            continue;
        }
        let payload = data.get(label * 4 + 4..).ok_or(malformed)?;
        return match payload.first().map(|b| b >> 4) {
            Some(4 | 6) => Ok(Next::Ip(payload)),
            Some(0) => Ok(Next::Ethernet(payload.get(4..).ok_or(malformed)?)),
            Some(_) => Err(Skip::NotIp),
            None => Err(malformed),
        };
    }
    Err(malformed)
}

#[cfg(test)]
mod tests {
    //! Each test is a packet trace: the headers, outermost first, then what decoding finds.

    use super::*;
    use crate::decode::{Decoded, TcpFlags, linktype, tcp_segment};
    use crate::writer::{SegmentSpec, ip_packet, link_frame};
    use proptest::prelude::*;

    const CLIENT: &str = "10.1.0.1:40000";
    const SERVER: &str = "10.1.0.2:8080";
    const PAYLOAD: &[u8] = b"GET /mcp HTTP/1.1\r\n\r\n";

    /// The inner packet: TCP from the client to the server (IPv4, or IPv6 with `v6`).
    fn inner_ip(v6: bool) -> Vec<u8> {
        let (c, s) = if v6 {
            ("[fd00::1]:40000", "[fd00::2]:8080")
        } else {
            (CLIENT, SERVER)
        };
        let ack = TcpFlags {
            ack: true,
            ..TcpFlags::default()
        };
        ip_packet(
            &SegmentSpec::new(c.parse().unwrap(), s.parse().unwrap(), 7, 9, PAYLOAD).flags(ack),
        )
    }

    /// The inner packet in an Ethernet frame.
    fn inner_frame() -> Vec<u8> {
        link_frame(linktype::ETHERNET, &inner_ip(false), &[])
    }

    fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// An underlay IPv4 packet (192.0.2.1 → 192.0.2.2) of protocol `proto`.
    fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
        let total = (20 + payload.len()) as u16;
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2]);
        p.extend_from_slice(payload);
        p
    }

    /// An underlay IPv6 packet (2001:db8::1 → 2001:db8::2) of next header `next`.
    fn ipv6(next: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        p.extend_from_slice(&[next, 64]);
        for last in [1u8, 2] {
            p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            p.extend_from_slice(&[0; 11]);
            p.push(last);
        }
        p.extend_from_slice(payload);
        p
    }

    fn udp(dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut d = 54321u16.to_be_bytes().to_vec();
        d.extend_from_slice(&dport.to_be_bytes());
        d.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend_from_slice(payload);
        d
    }

    fn vxlan(frame: &[u8]) -> Vec<u8> {
        let mut h = vec![0x08, 0, 0, 0, 0, 0x10, 0x92, 0];
        h.extend_from_slice(frame);
        h
    }

    /// Geneve with `options` 4-byte words of options.
    fn geneve(options: u8, proto: u16, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![options & 0x3f, 0];
        h.extend_from_slice(&proto.to_be_bytes());
        h.extend_from_slice(&[0, 0x10, 0x92, 0]);
        h.extend(std::iter::repeat_n(0xee, usize::from(options) * 4));
        h.extend_from_slice(payload);
        h
    }

    /// GRE with these flags (checksum, key, sequence words filled in as they announce).
    fn gre(flags: u16, proto: u16, payload: &[u8]) -> Vec<u8> {
        let mut h = flags.to_be_bytes().to_vec();
        h.extend_from_slice(&proto.to_be_bytes());
        for bit in [0x8000, 0x2000, 0x1000] {
            if flags & bit != 0 {
                h.extend_from_slice(&[0xab, 0xcd, 0xef, 0x01]);
            }
        }
        h.extend_from_slice(payload);
        h
    }

    fn erspan2(frame: &[u8]) -> Vec<u8> {
        let mut h = vec![0x10, 0x0a, 0x00, 0x05, 0, 0, 0, 0x03];
        h.extend_from_slice(frame);
        gre(0x1000, GRE_ERSPAN, &h)
    }

    fn erspan3(subheader: bool, frame: &[u8]) -> Vec<u8> {
        let mut h = vec![0x20, 0x0a, 0x00, 0x05, 0, 0, 0x03, 0xe8, 0, 0, 0, 0];
        if subheader {
            h[11] |= 0x01;
            h.extend_from_slice(&[0x0c, 0, 0, 0, 0, 0, 0, 0]);
        }
        h.extend_from_slice(frame);
        gre(0x1000, GRE_ERSPAN_III, &h)
    }

    /// An MPLS stack of `labels` labels, the last bottom of stack.
    fn mpls_stack(labels: usize, payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        for i in 0..labels {
            let bos = u8::from(i + 1 == labels);
            h.extend_from_slice(&[0x00, 0x3e, 0x80 | bos, 64]);
        }
        h.extend_from_slice(payload);
        h
    }

    fn decode(frame: &[u8]) -> Result<Decoded<'_>, Skip> {
        tcp_segment(linktype::ETHERNET, frame, &[])
    }

    /// Decodes `frame` to the inner client's segment, and returns the tunnels it came through.
    fn unwrapped(frame: &[u8]) -> Vec<Tunnel> {
        let d = decode(frame).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(d.seg.payload, PAYLOAD);
        assert_eq!(d.seg.dst.port(), 8080);
        let inner = inner_ip(d.seg.src.is_ipv6());
        assert_eq!(d.ip, inner, "the innermost IP packet, exactly");
        d.tunnels.layers.iter().flatten().copied().collect()
    }

    #[test]
    fn vxlan_carries_an_ethernet_frame() {
        let f = eth(0x0800, &ipv4(17, &udp(4789, &vxlan(&inner_frame()))));
        assert_eq!(unwrapped(&f), [Tunnel::Vxlan { udp_port: 4789 }]);
        let d = decode(&f).unwrap();
        assert_eq!(
            d.seg.src,
            CLIENT.parse().unwrap(),
            "the flow is the inner one"
        );
        assert_eq!(d.seg.frame_len as usize, f.len());
    }

    #[test]
    fn vxlan_over_ipv6_with_vlan_tags_inside() {
        let inner = link_frame(linktype::ETHERNET, &inner_ip(false), &[100, 200]);
        let f = eth(0x86dd, &ipv6(17, &udp(4789, &vxlan(&inner))));
        assert_eq!(unwrapped(&f), [Tunnel::Vxlan { udp_port: 4789 }]);
    }

    #[test]
    fn geneve_skips_its_options_and_carries_ethernet_or_ip() {
        let f = eth(
            0x0800,
            &ipv4(17, &udp(6081, &geneve(3, 0x6558, &inner_frame()))),
        );
        assert_eq!(unwrapped(&f), [Tunnel::Geneve { udp_port: 6081 }]);
        let f = eth(
            0x0800,
            &ipv4(17, &udp(6081, &geneve(0, 0x0800, &inner_ip(false)))),
        );
        assert_eq!(unwrapped(&f), [Tunnel::Geneve { udp_port: 6081 }]);
        let f = eth(
            0x0800,
            &ipv4(17, &udp(6081, &geneve(1, 0x86dd, &inner_ip(true)))),
        );
        assert_eq!(unwrapped(&f), [Tunnel::Geneve { udp_port: 6081 }]);
    }

    #[test]
    fn geneve_of_another_version_is_malformed() {
        let mut g = geneve(0, 0x6558, &inner_frame());
        g[0] |= 0x40;
        let f = eth(0x0800, &ipv4(17, &udp(6081, &g)));
        let geneve = Tunnel::Geneve { udp_port: 6081 };
        assert_eq!(decode(&f).unwrap_err(), Skip::MalformedTunnel(geneve));
    }

    #[test]
    fn gre_reads_its_optional_words() {
        for flags in [0, 0x8000, 0x2000, 0x1000, 0xb000] {
            let f = eth(0x0800, &ipv4(47, &gre(flags, 0x0800, &inner_ip(false))));
            assert_eq!(unwrapped(&f), [Tunnel::Gre], "flags {flags:#x}");
        }
        let f = eth(0x0800, &ipv4(47, &gre(0x2000, 0x86dd, &inner_ip(true))));
        assert_eq!(unwrapped(&f), [Tunnel::Gre]);
        let f = eth(0x86dd, &ipv6(47, &gre(0, 0x0800, &inner_ip(false))));
        assert_eq!(unwrapped(&f), [Tunnel::Gre]);
    }

    #[test]
    fn gre_bridging_ethernet() {
        let f = eth(0x0800, &ipv4(47, &gre(0x2000, 0x6558, &inner_frame())));
        assert_eq!(unwrapped(&f), [Tunnel::GreEthernet]);
    }

    #[test]
    fn gre_with_routing_or_of_pptp_is_not_unwrapped() {
        let f = eth(0x0800, &ipv4(47, &gre(0x4000, 0x0800, &inner_ip(false))));
        assert_eq!(decode(&f).unwrap_err(), Skip::MalformedTunnel(Tunnel::Gre));
        // Enhanced GRE (version 1) carries PPP: not a tunnel we read, as before.
        let f = eth(0x0800, &ipv4(47, &gre(0x2001, 0x880b, b"\xff\x03")));
        assert_eq!(decode(&f).unwrap_err(), Skip::NotTcp);
        // A keepalive: GRE carrying nothing we know.
        let f = eth(0x0800, &ipv4(47, &gre(0, 0, b"")));
        assert_eq!(decode(&f).unwrap_err(), Skip::NotIp);
    }

    #[test]
    fn erspan_types_one_two_and_three() {
        let f = eth(0x0800, &ipv4(47, &gre(0, GRE_ERSPAN, &inner_frame())));
        assert_eq!(unwrapped(&f), [Tunnel::ErspanI]);
        let f = eth(0x0800, &ipv4(47, &erspan2(&inner_frame())));
        assert_eq!(unwrapped(&f), [Tunnel::ErspanII]);
        for sub in [false, true] {
            let f = eth(0x0800, &ipv4(47, &erspan3(sub, &inner_frame())));
            assert_eq!(unwrapped(&f), [Tunnel::ErspanIII], "subheader {sub}");
        }
    }

    #[test]
    fn erspan_three_is_never_type_one() {
        // 0x22EB with no GRE flag: still type III (type I exists only as 0x88BE).
        let mut h = vec![0x20, 0x0a, 0x00, 0x05, 0, 0, 0x03, 0xe8, 0, 0, 0, 0];
        h.extend_from_slice(&inner_frame());
        let f = eth(0x0800, &ipv4(47, &gre(0, GRE_ERSPAN_III, &h)));
        assert_eq!(unwrapped(&f), [Tunnel::ErspanIII]);
        let f = eth(0x0800, &ipv4(47, &gre(0, GRE_ERSPAN_III, &inner_frame())));
        let e = decode(&f).unwrap_err();
        assert_eq!(e, Skip::MalformedTunnel(Tunnel::ErspanIII));
    }

    #[test]
    fn erspan_of_an_unknown_version_is_malformed() {
        let mut h = vec![0x30, 0, 0, 0, 0, 0, 0, 0];
        h.extend_from_slice(&inner_frame());
        let f = eth(0x0800, &ipv4(47, &gre(0x1000, GRE_ERSPAN, &h)));
        let e = decode(&f).unwrap_err();
        assert_eq!(e, Skip::MalformedTunnel(Tunnel::ErspanII));
        assert_eq!(e.reason(), "malformed ERSPAN header");
    }

    #[test]
    fn ip_in_ip_6in4_and_ipv6_in_ipv6() {
        let f = eth(0x0800, &ipv4(4, &inner_ip(false)));
        assert_eq!(unwrapped(&f), [Tunnel::IpInIp]);
        let f = eth(0x0800, &ipv4(41, &inner_ip(true)));
        assert_eq!(unwrapped(&f), [Tunnel::Ipv6InIp]);
        let f = eth(0x86dd, &ipv6(41, &inner_ip(true)));
        assert_eq!(unwrapped(&f), [Tunnel::Ipv6InIp]);
        let f = eth(0x86dd, &ipv6(4, &inner_ip(false)));
        assert_eq!(unwrapped(&f), [Tunnel::IpInIp]);
        // On a link type without Ethernet too.
        let raw = ipv4(41, &inner_ip(true));
        assert!(tcp_segment(linktype::RAW, &raw, &[]).is_ok());
    }

    #[test]
    fn mpls_stacks_decide_by_the_first_nibble() {
        let f = eth(0x8847, &mpls_stack(1, &inner_ip(false)));
        assert_eq!(unwrapped(&f), [Tunnel::Mpls]);
        let f = eth(0x8848, &mpls_stack(3, &inner_ip(true)));
        assert_eq!(unwrapped(&f), [Tunnel::Mpls]);
        // A pseudowire control word, then Ethernet (RFC 4385, RFC 4448).
        let mut pw = vec![0, 0, 0, 0];
        pw.extend_from_slice(&inner_frame());
        let f = eth(0x8847, &mpls_stack(2, &pw));
        assert_eq!(unwrapped(&f), [Tunnel::Mpls]);
        // On a Linux cooked capture.
        let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x88, 0x47];
        sll.extend_from_slice(&mpls_stack(1, &inner_ip(false)));
        assert!(tcp_segment(linktype::LINUX_SLL, &sll, &[]).is_ok());
    }

    #[test]
    fn mpls_without_a_bottom_or_with_an_unknown_payload() {
        // Labels to the end of the frame, none the bottom of the stack.
        let f = eth(0x8847, &[0, 0x3e, 0x80, 64, 0, 0x3e, 0x80, 64]);
        assert_eq!(decode(&f).unwrap_err(), Skip::MalformedTunnel(Tunnel::Mpls));
        let f = eth(0x8847, &mpls_stack(MAX_MPLS_LABELS + 1, &inner_ip(false)));
        assert_eq!(decode(&f).unwrap_err(), Skip::MalformedTunnel(Tunnel::Mpls));
        let f = eth(0x8847, &mpls_stack(1, b"\x15generic associated channel"));
        assert_eq!(decode(&f).unwrap_err(), Skip::NotIp);
    }

    #[test]
    fn tunnels_nest_four_deep_and_no_deeper() {
        // MPLS in GRE in VXLAN: an overlay's overlay.
        let gre_mpls = ipv4(47, &gre(0, 0x8847, &mpls_stack(1, &inner_ip(false))));
        let f = eth(
            0x0800,
            &ipv4(17, &udp(4789, &vxlan(&eth(0x0800, &gre_mpls)))),
        );
        assert_eq!(
            unwrapped(&f),
            [Tunnel::Vxlan { udp_port: 4789 }, Tunnel::Gre, Tunnel::Mpls]
        );
        let mut p = inner_ip(false);
        for _ in 0..MAX_TUNNELS {
            p = ipv4(4, &p);
        }
        assert_eq!(unwrapped(&eth(0x0800, &p)), [Tunnel::IpInIp; MAX_TUNNELS]);
        let deeper = eth(0x0800, &ipv4(4, &p));
        let e = decode(&deeper).unwrap_err();
        assert_eq!(e, Skip::TunnelTooDeep);
        assert_eq!(e.reason(), "tunnels nested more than 4 deep");
    }

    #[test]
    fn a_tunnel_in_itself_counts_once_for_the_frame() {
        let once = eth(0x0800, &ipv4(17, &udp(4789, &vxlan(&inner_frame()))));
        let f = eth(0x0800, &ipv4(17, &udp(4789, &vxlan(&once))));
        let d = decode(&f).unwrap();
        let distinct: Vec<Tunnel> = d.tunnels.distinct().collect();
        assert_eq!(distinct, [Tunnel::Vxlan { udp_port: 4789 }]);
    }

    #[test]
    fn other_udp_ports_are_not_tunnels_unless_the_user_says() {
        let f = eth(0x0800, &ipv4(17, &udp(8472, &vxlan(&inner_frame()))));
        assert_eq!(decode(&f).unwrap_err(), Skip::NotTcp);
        let user = [UdpTunnel {
            port: 8472,
            kind: UdpTunnelKind::Vxlan,
        }];
        let d = tcp_segment(linktype::ETHERNET, &f, &user).unwrap();
        let path: Vec<Tunnel> = d.tunnels.distinct().collect();
        assert_eq!(path, [Tunnel::Vxlan { udp_port: 8472 }]);
        // The user's word wins over the standard port's.
        let g = eth(
            0x0800,
            &ipv4(17, &udp(4789, &geneve(2, 0x6558, &inner_frame()))),
        );
        let user = [UdpTunnel {
            port: 4789,
            kind: UdpTunnelKind::Geneve,
        }];
        assert!(tcp_segment(linktype::ETHERNET, &g, &user).is_ok());
        assert!(decode(&g).is_err());
    }

    #[test]
    fn what_is_no_tunnel_keeps_its_reason() {
        let dns = eth(0x0800, &ipv4(17, &udp(53, b"\x12\x34\x01\x00")));
        assert_eq!(decode(&dns).unwrap_err(), Skip::NotTcp);
        let arp = eth(0x0806, &[0; 28]);
        assert_eq!(decode(&arp).unwrap_err(), Skip::NotIp);
        let icmp = eth(0x86dd, &ipv6(58, &[128, 0, 0, 0]));
        assert_eq!(decode(&icmp).unwrap_err(), Skip::NotTcp);
        // A fragment of a datagram: "not TCP", as before.
        let mut frag = ipv4(17, &udp(4789, &vxlan(&inner_frame())));
        frag[6] = 0x20;
        assert_eq!(decode(&eth(0x0800, &frag)).unwrap_err(), Skip::NotTcp);
        // A tunnelled packet that is not TCP inside says so.
        let f = eth(0x0800, &ipv4(17, &udp(4789, &vxlan(&dns))));
        assert_eq!(decode(&f).unwrap_err(), Skip::NotTcp);
        let f = eth(0x0800, &ipv4(17, &udp(4789, &vxlan(&arp))));
        assert_eq!(decode(&f).unwrap_err(), Skip::NotIp);
    }

    #[test]
    fn a_plain_frame_has_no_tunnel_and_its_ip_packet_without_padding() {
        let mut f = inner_frame();
        f.extend_from_slice(&[0; 6]);
        let d = decode(&f).unwrap();
        assert_eq!(d.tunnels, Path::default());
        assert_eq!(d.ip, inner_ip(false));
    }

    /// Every tunnel of the tests above, as one frame each.
    fn every_tunnel() -> Vec<(Tunnel, Vec<u8>)> {
        let ip4 = |proto, p: &[u8]| eth(0x0800, &ipv4(proto, p));
        vec![
            (
                Tunnel::Vxlan { udp_port: 4789 },
                ip4(17, &udp(4789, &vxlan(&inner_frame()))),
            ),
            (
                Tunnel::Geneve { udp_port: 6081 },
                ip4(17, &udp(6081, &geneve(2, 0x6558, &inner_frame()))),
            ),
            (Tunnel::Gre, ip4(47, &gre(0xb000, 0x0800, &inner_ip(false)))),
            (
                Tunnel::GreEthernet,
                ip4(47, &gre(0x2000, 0x6558, &inner_frame())),
            ),
            (
                Tunnel::ErspanI,
                ip4(47, &gre(0, GRE_ERSPAN, &inner_frame())),
            ),
            (Tunnel::ErspanII, ip4(47, &erspan2(&inner_frame()))),
            (Tunnel::ErspanIII, ip4(47, &erspan3(true, &inner_frame()))),
            (Tunnel::IpInIp, ip4(4, &inner_ip(false))),
            (Tunnel::Ipv6InIp, ip4(41, &inner_ip(true))),
            (Tunnel::Mpls, eth(0x8847, &mpls_stack(2, &inner_ip(false)))),
        ]
    }

    /// Where the tunnel's own header ends in `frame`: the inner frame or packet starts there.
    fn inner_start(tunnel: Tunnel, frame: &[u8]) -> usize {
        let inner: Vec<u8> = match tunnel {
            Tunnel::Gre | Tunnel::IpInIp | Tunnel::Mpls => inner_ip(false),
            Tunnel::Ipv6InIp => inner_ip(true),
            _ => inner_frame(),
        };
        frame.len() - inner.len()
    }

    #[test]
    fn a_header_cut_short_is_named_never_a_panic() {
        for (tunnel, frame) in every_tunnel() {
            let header_from = match tunnel {
                Tunnel::Mpls => 14,
                _ => 34,
            };
            for cut in header_from..frame.len() {
                let r = decode(&frame[..cut]);
                if cut < inner_start(tunnel, &frame) {
                    let e = r.expect_err("cut inside the tunnel's headers");
                    let named = matches!(e, Skip::MalformedTunnel(_) | Skip::NotTcp);
                    assert!(named, "{tunnel:?} cut at {cut}: {e:?}");
                }
            }
        }
        // Cut inside its own header, each tunnel says which.
        let vxlan_frame = &every_tunnel()[0].1;
        assert_eq!(
            decode(&vxlan_frame[..34 + 8 + 4]).unwrap_err(),
            Skip::MalformedTunnel(Tunnel::Vxlan { udp_port: 4789 })
        );
        let erspan3_frame = &every_tunnel()[6].1;
        assert_eq!(
            decode(&erspan3_frame[..34 + 8 + 12 + 4]).unwrap_err(),
            Skip::MalformedTunnel(Tunnel::ErspanIII)
        );
    }

    #[test]
    fn a_segment_cut_by_the_snap_length_inside_a_tunnel_says_what_is_missing() {
        let f = eth(0x0800, &ipv4(17, &udp(4789, &vxlan(&inner_frame()))));
        let d = decode(&f[..f.len() - 5]).unwrap();
        assert_eq!(d.seg.payload, &PAYLOAD[..PAYLOAD.len() - 5]);
        assert_eq!(d.seg.missing, 5);
    }

    proptest! {
        /// Whatever follows a tunnel's header, and whatever is changed in the headers before the
        /// inner packet, decoding returns a segment or a reason: never a panic, and never more
        /// than the frame.
        #[test]
        fn any_bytes_after_or_inside_a_tunnel_header_are_safe(
            which in 0usize..10,
            tail in proptest::collection::vec(any::<u8>(), 0..96),
            edits in proptest::collection::vec((0usize..96, any::<u8>()), 0..6),
        ) {
            let (tunnel, frame) = every_tunnel().swap_remove(which);
            let mut f = frame[..inner_start(tunnel, &frame)].to_vec();
            f.extend_from_slice(&tail);
            for (at, b) in edits {
                if let Some(x) = f.get_mut(at) {
                    *x = b;
                }
            }
            for lt in [linktype::ETHERNET, linktype::RAW, linktype::LINUX_SLL2] {
                if let Ok(d) = tcp_segment(lt, &f, &[]) {
                    prop_assert!(d.ip.len() <= f.len() && d.seg.payload.len() <= d.ip.len());
                }
            }
        }

        /// Any bytes at all, on every link type we read.
        #[test]
        fn any_frame_is_safe(frame in proptest::collection::vec(any::<u8>(), 0..160)) {
            let user = [UdpTunnel { port: 1, kind: UdpTunnelKind::Geneve }];
            for lt in [linktype::ETHERNET, linktype::RAW, linktype::LINUX_SLL, linktype::NULL] {
                let _ = tcp_segment(lt, &frame, &user);
            }
        }
    }
}
