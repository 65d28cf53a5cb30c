//! Link layer and IP decoding: from a captured frame to a TCP segment, or a named reason why not.
//!
//! Link layers are small and fixed, so they are read here with explicit length checks; IPv4 (with
//! options) and IPv6 (with extension headers) are read with `etherparse`'s lax slicer, which keeps
//! working on frames that a snap length cut short. A frame in which this finds no TCP is given to
//! [`crate::tunnel`], which unwraps the tunnels mirroring and overlays deliver packets in (VXLAN,
//! Geneve, GRE, ERSPAN, IP in IP, MPLS): the common case pays nothing for them.

use std::net::{IpAddr, SocketAddr};

use etherparse::{IpNumber, LaxIpSlice, TcpOptionElement, TcpSlice};
use mcpf_model::Tunnel;

use crate::tcp::SeqNumber;
use crate::tunnel::{self, Path, UdpTunnel};

/// Link types we decode (the LINKTYPE_* values of the tcpdump registry).
pub mod linktype {
    pub const NULL: i32 = 0;
    pub const ETHERNET: i32 = 1;
    /// DLT_RAW as most systems number it, and OpenBSD's number for it.
    pub const RAW_12: i32 = 12;
    pub const RAW_14: i32 = 14;
    pub const RAW: i32 = 101;
    pub const LOOP: i32 = 108;
    pub const LINUX_SLL: i32 = 113;
    pub const IPV4: i32 = 228;
    pub const IPV6: i32 = 229;
    pub const LINUX_SLL2: i32 = 276;
}

pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(crate) const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
/// More VLAN tags than this is a crafted frame, not a network.
const MAX_VLAN_TAGS: usize = 8;

/// TCP control bits we act on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

/// A TCP segment as the reassembler needs it. `payload` may be shorter than the segment really
/// was when the capture cut it: `missing` says how many payload bytes the frame did not keep.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TcpSegment<'a> {
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    pub(crate) seq: SeqNumber,
    pub(crate) ack: SeqNumber,
    pub(crate) flags: TcpFlags,
    /// The receive window the sender advertises, as on the wire (not yet scaled).
    pub(crate) window: u16,
    /// The window scale option (RFC 7323 §2), read from SYN segments only: the shift the
    /// sender will apply to the windows it advertises once both sides offered it.
    pub(crate) wscale: Option<u8>,
    pub(crate) payload: &'a [u8],
    pub(crate) missing: u32,
    /// Captured length of the frame that carried it, for the connection's byte count.
    pub(crate) frame_len: u32,
}

/// Why a frame did not yield a TCP segment. The names are shown to users in skip counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    UnknownLinkType(i32),
    NotIp,
    NotTcp,
    Ipv4Fragment,
    MalformedLink,
    MalformedIp,
    MalformedTcp,
    /// A tunnel header too short or of a version we do not know.
    MalformedTunnel(Tunnel),
    /// Tunnels nested deeper than [`tunnel::MAX_TUNNELS`].
    TunnelTooDeep,
}

impl Skip {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Skip::UnknownLinkType(_) => "unsupported link type",
            Skip::NotIp => "not IP (ARP, LLDP, ...)",
            Skip::NotTcp => "IP but not TCP (UDP, ICMP, ...)",
            Skip::Ipv4Fragment => "IP fragment (not reassembled)",
            Skip::MalformedLink => "malformed link-layer header",
            Skip::MalformedIp => "malformed IP header",
            Skip::MalformedTcp => "malformed or cut TCP header",
            Skip::MalformedTunnel(t) => match t {
                Tunnel::Vxlan { .. } => "malformed VXLAN header",
                Tunnel::Geneve { .. } => "malformed Geneve header",
                Tunnel::Gre | Tunnel::GreEthernet => "malformed GRE header",
                Tunnel::ErspanI | Tunnel::ErspanII | Tunnel::ErspanIII => "malformed ERSPAN header",
                Tunnel::IpInIp | Tunnel::Ipv6InIp => "malformed IP header",
                Tunnel::Mpls => "malformed MPLS label stack",
            },
            Skip::TunnelTooDeep => "tunnels nested more than 4 deep",
        }
    }
}

// The reason above spells the cap out, as a `&'static str` must.
const _: () = assert!(tunnel::MAX_TUNNELS == 4);

/// A frame decoded down to its TCP segment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Decoded<'a> {
    pub(crate) seg: TcpSegment<'a>,
    /// The IP packet that carried the segment (the innermost one, in a tunnel), as long as its
    /// header says within what was captured: the padding of a short Ethernet frame or a
    /// trailer is not part of it.
    pub(crate) ip: &'a [u8],
    /// The tunnels the packet was unwrapped from, outermost first.
    pub(crate) tunnels: Path,
}

/// Decodes a frame of the given link type down to its TCP segment; `udp_tunnels` are the UDP
/// ports read as tunnels besides the standard ones.
pub(crate) fn tcp_segment<'a>(
    linktype: i32,
    frame: &'a [u8],
    udp_tunnels: &[UdpTunnel],
) -> Result<Decoded<'a>, Skip> {
    let skip = match network_layer(linktype, frame) {
        Ok(ip) => match ip_to_tcp(ip) {
            Ok(seg) => return Ok(Decoded::new(frame, seg, ip, Path::default())),
            Err(skip) => skip,
        },
        Err(skip) => skip,
    };
    match skip {
        // Only a frame in which no TCP was found is looked at for a tunnel: the common case
        // pays one failed match for them, no more.
        Skip::NotIp | Skip::NotTcp => {
            let (seg, ip, tunnels) = tunnel::unwrap(linktype, frame, udp_tunnels, skip)?;
            Ok(Decoded::new(frame, seg, ip, tunnels))
        }
        _ => Err(skip),
    }
}

impl<'a> Decoded<'a> {
    /// The segment `seg` of `frame`, read from the IP packet `ip`, found inside `tunnels`.
    #[inline(always)]
    fn new(frame: &'a [u8], mut seg: TcpSegment<'a>, ip: &'a [u8], tunnels: Path) -> Self {
        seg.frame_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let ip = ip.get(..ip_len(ip)).unwrap_or(ip);
        Decoded { seg, ip, tunnels }
    }
}

/// The length of the IP packet `ip` begins with, as its header gives it (IPv4 total length,
/// IPv6 header and payload length), within the bytes there are.
fn ip_len(ip: &[u8]) -> usize {
    let announced = match ip.first().map(|b| b >> 4) {
        Some(4) => be16(ip, 2).map(usize::from),
        // A payload length of 0 is a jumbogram's (RFC 2675): its length is elsewhere.
        Some(6) => be16(ip, 4).filter(|&n| n > 0).map(|n| 40 + usize::from(n)),
        _ => None,
    };
    announced.map_or(ip.len(), |n| n.min(ip.len()))
}

/// What a link layer carries: a payload of some EtherType, or (for the link types that carry
/// nothing else) an IP packet.
pub(crate) enum Link<'a> {
    Ether(u16, &'a [u8]),
    Ip(&'a [u8]),
}

/// Strips the link layer, returning the IP packet it carries.
pub(crate) fn network_layer(linktype: i32, frame: &[u8]) -> Result<&[u8], Skip> {
    match link(linktype, frame)? {
        Link::Ether(ethertype, payload) => ip_by_ethertype(ethertype, payload),
        Link::Ip(packet) => Ok(packet),
    }
}

/// Strips the link layer, returning what it carries.
#[inline]
pub(crate) fn link(linktype: i32, frame: &[u8]) -> Result<Link<'_>, Skip> {
    match linktype {
        linktype::ETHERNET => {
            let (ethertype, payload) = ethernet(frame)?;
            Ok(Link::Ether(ethertype, payload))
        }
        linktype::LINUX_SLL => {
            // 16-byte header: packet type, ARPHRD, address length, 8 address bytes, protocol.
            let proto = be16(frame, 14).ok_or(Skip::MalformedLink)?;
            Ok(Link::Ether(
                proto,
                frame.get(16..).ok_or(Skip::MalformedLink)?,
            ))
        }
        linktype::LINUX_SLL2 => {
            // 20-byte header that starts with the protocol type.
            let proto = be16(frame, 0).ok_or(Skip::MalformedLink)?;
            Ok(Link::Ether(
                proto,
                frame.get(20..).ok_or(Skip::MalformedLink)?,
            ))
        }
        linktype::RAW | linktype::RAW_12 | linktype::RAW_14 => match frame.first() {
            Some(b) if b >> 4 == 4 || b >> 4 == 6 => Ok(Link::Ip(frame)),
            Some(_) => Err(Skip::NotIp),
            None => Err(Skip::MalformedLink),
        },
        linktype::IPV4 | linktype::IPV6 => Ok(Link::Ip(frame)),
        linktype::NULL | linktype::LOOP => {
            let raw: [u8; 4] = frame
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or(Skip::MalformedLink)?;
            // NULL stores the address family in the capturing host's byte order, LOOP in network
            // order; a family always fits in the low 16 bits, which tells the order apart.
            let family = if linktype == linktype::LOOP {
                u32::from_be_bytes(raw)
            } else {
                let le = u32::from_le_bytes(raw);
                if le > 0xffff {
                    u32::from_be_bytes(raw)
                } else {
                    le
                }
            };
            let payload = &frame[4..];
            match family {
                // AF_INET everywhere; AF_INET6 on Linux (10), the BSDs (24), FreeBSD (28) and
                // macOS (30).
                2 | 10 | 24 | 28 | 30 => Ok(Link::Ip(payload)),
                _ => Err(Skip::NotIp),
            }
        }
        other => Err(Skip::UnknownLinkType(other)),
    }
}

/// An Ethernet frame's EtherType and payload, past its VLAN tags.
#[inline]
pub(crate) fn ethernet(frame: &[u8]) -> Result<(u16, &[u8]), Skip> {
    let mut ethertype = be16(frame, 12).ok_or(Skip::MalformedLink)?;
    let mut offset = 14;
    let mut tags = 0;
    while matches!(
        ethertype,
        ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD
    ) {
        tags += 1;
        if tags > MAX_VLAN_TAGS {
            return Err(Skip::MalformedLink);
        }
        // Tag control information (2 bytes), then the next EtherType.
        ethertype = be16(frame, offset + 2).ok_or(Skip::MalformedLink)?;
        offset += 4;
    }
    Ok((ethertype, frame.get(offset..).ok_or(Skip::MalformedLink)?))
}

fn ip_by_ethertype(ethertype: u16, payload: &[u8]) -> Result<&[u8], Skip> {
    match ethertype {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Ok(payload),
        _ => Err(Skip::NotIp),
    }
}

pub(crate) fn be16(data: &[u8], at: usize) -> Option<u16> {
    let b = data.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// The TCP segment an IP packet carries. Inlined into both its callers (the plain decoding and
/// the tunnels'), so that the plain one reads a packet as fast as when it was the only one.
#[inline(always)]
pub(crate) fn ip_to_tcp(packet: &[u8]) -> Result<TcpSegment<'_>, Skip> {
    plain_ipv4_tcp(packet).map_or_else(|| sliced_ip_to_tcp(packet), Ok)
}

const IP_PROTO_TCP: u8 = 6;

/// The common case read directly: a whole, unfragmented IPv4 packet carrying a TCP segment
/// that is not a SYN (whose options we read). It yields what `etherparse` would, at a fraction
/// of its instructions per packet; `None` sends every other packet to [`sliced_ip_to_tcp`].
#[inline(always)]
fn plain_ipv4_tcp(packet: &[u8]) -> Option<TcpSegment<'_>> {
    let &[
        version_ihl,
        _,
        len_hi,
        len_lo,
        _,
        _,
        frag_hi,
        frag_lo,
        _,
        proto,
        ..,
    ] = packet
    else {
        return None;
    };
    let header_len = usize::from(version_ihl & 0x0f) * 4;
    let total_len = usize::from(u16::from_be_bytes([len_hi, len_lo]));
    // More fragments, or a fragment offset: the flags' low bit and the 13 bits after it.
    let fragmented = u16::from_be_bytes([frag_hi, frag_lo]) & 0x3fff != 0;
    if version_ihl >> 4 != 4
        || header_len < 20
        || total_len < header_len
        || total_len > packet.len()
        || proto != IP_PROTO_TCP
        || fragmented
    {
        return None;
    }
    let addr = |at: usize| -> Option<IpAddr> {
        let b: [u8; 4] = packet.get(at..at + 4)?.try_into().ok()?;
        Some(IpAddr::from(b))
    };
    let (src_ip, dst_ip) = (addr(12)?, addr(16)?);
    plain_tcp(&packet[header_len..total_len], src_ip, dst_ip)
}

/// A TCP header that fits its segment, without SYN: see [`plain_ipv4_tcp`].
fn plain_tcp(data: &[u8], src_ip: IpAddr, dst_ip: IpAddr) -> Option<TcpSegment<'_>> {
    let h: &[u8; 20] = data.get(..20)?.try_into().ok()?;
    let header_len = usize::from(h[12] >> 4) * 4;
    let flags = h[13];
    if header_len < 20 || data.len() < header_len || flags & 0x02 != 0 {
        return None;
    }
    let be32 = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    Some(TcpSegment {
        src: SocketAddr::new(src_ip, u16::from_be_bytes([h[0], h[1]])),
        dst: SocketAddr::new(dst_ip, u16::from_be_bytes([h[2], h[3]])),
        seq: SeqNumber(be32(4)),
        ack: SeqNumber(be32(8)),
        flags: TcpFlags {
            syn: false,
            ack: flags & 0x10 != 0,
            fin: flags & 0x01 != 0,
            rst: flags & 0x04 != 0,
        },
        window: u16::from_be_bytes([h[14], h[15]]),
        wscale: None,
        payload: &data[header_len..],
        missing: 0,
        frame_len: 0,
    })
}

/// Any IP packet, with `etherparse`'s lax slicer.
fn sliced_ip_to_tcp(packet: &[u8]) -> Result<TcpSegment<'_>, Skip> {
    let (ip, _ext_error) = LaxIpSlice::from_slice(packet).map_err(|_| Skip::MalformedIp)?;
    let payload = ip.payload();
    if payload.ip_number != IpNumber::TCP {
        return Err(Skip::NotTcp);
    }
    if payload.fragmented {
        return Err(Skip::Ipv4Fragment);
    }
    // The length the IP header announces for its payload; when the capture cut the frame, the
    // difference is TCP payload that crossed the wire but is not in the file.
    let announced: Option<usize> = match &ip {
        LaxIpSlice::Ipv4(v4) => {
            let h = v4.header();
            usize::from(h.total_len()).checked_sub(h.slice().len())
        }
        LaxIpSlice::Ipv6(v6) => {
            let h = v6.header();
            let exts = v6.extensions().slice().len();
            usize::from(h.payload_length()).checked_sub(exts)
        }
    };
    let data = payload.payload;
    let (src_ip, dst_ip): (IpAddr, IpAddr) = (ip.source_addr(), ip.destination_addr());
    let tcp = TcpSlice::from_slice(data).map_err(|_| Skip::MalformedTcp)?;
    let captured_payload = tcp.payload();
    let header_len = data.len() - captured_payload.len();
    let missing = if payload.incomplete {
        announced
            .and_then(|a| a.checked_sub(header_len))
            .and_then(|want| want.checked_sub(captured_payload.len()))
            .unwrap_or(0)
    } else {
        0
    };
    // Options are read only where they matter to us: the window scale a SYN offers.
    let wscale = if tcp.syn() {
        tcp.options_iterator()
            .map_while(Result::ok)
            .find_map(|o| match o {
                TcpOptionElement::WindowScale(shift) => Some(shift),
                _ => None,
            })
    } else {
        None
    };
    Ok(TcpSegment {
        src: SocketAddr::new(src_ip, tcp.source_port()),
        dst: SocketAddr::new(dst_ip, tcp.destination_port()),
        seq: SeqNumber(tcp.sequence_number()),
        ack: SeqNumber(tcp.acknowledgment_number()),
        flags: TcpFlags {
            syn: tcp.syn(),
            ack: tcp.ack(),
            fin: tcp.fin(),
            rst: tcp.rst(),
        },
        window: tcp.window_size(),
        wscale,
        payload: captured_payload,
        missing: u32::try_from(missing).unwrap_or(u32::MAX),
        frame_len: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::{SegmentSpec, ip_packet};
    use proptest::prelude::*;

    fn packet(flags: TcpFlags, payload: &[u8]) -> Vec<u8> {
        let (c, s) = (
            "10.0.0.1:40000".parse().unwrap(),
            "10.0.0.2:8080".parse().unwrap(),
        );
        ip_packet(&SegmentSpec::new(c, s, 7, 9, payload).flags(flags))
    }

    proptest! {
        /// The direct read agrees with `etherparse` on every packet it takes, whatever bytes of
        /// a valid one are changed (lengths, flags, fragment fields, header lengths, protocol)
        /// and however it is cut or padded.
        #[test]
        fn plain_read_agrees_with_the_slicer(
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            edits in proptest::collection::vec((0usize..48, any::<u8>()), 0..4),
            flags in 0u8..32,
            cut in 0usize..8,
            pad in 0usize..8,
        ) {
            let flags = TcpFlags {
                fin: flags & 1 != 0,
                syn: flags & 2 != 0,
                rst: flags & 4 != 0,
                ack: flags & 16 != 0,
            };
            let mut p = packet(flags, &payload);
            for (at, b) in edits {
                if let Some(x) = p.get_mut(at) {
                    *x = b;
                }
            }
            p.truncate(p.len().saturating_sub(cut));
            p.extend(std::iter::repeat_n(0, pad));
            if let Some(plain) = plain_ipv4_tcp(&p) {
                let sliced = sliced_ip_to_tcp(&p).map(|s| format!("{s:?}"));
                prop_assert_eq!(Ok(format!("{plain:?}")), sliced);
            }
        }
    }

    #[test]
    fn plain_read_takes_the_common_case_and_leaves_syns() {
        let ack = TcpFlags {
            ack: true,
            ..TcpFlags::default()
        };
        let syn = TcpFlags {
            syn: true,
            ..TcpFlags::default()
        };
        assert!(plain_ipv4_tcp(&packet(ack, b"data")).is_some());
        assert!(plain_ipv4_tcp(&packet(syn, b"")).is_none());
    }
}
