#!/usr/bin/env python3
"""Wrap a captured leg in the tunnels that mirroring and overlays deliver packets in.

Every frame of the source capture (Ethernet, IPv4, TCP) is wrapped as a cloud mirror, an
overlay or a switch would wrap it, between two underlay hosts of TEST-NET-1 (192.0.2.1 and
192.0.2.2, RFC 5737), its capture time kept to the microsecond:

  vxlan     Ether / IPv4 / UDP to 4789 / VXLAN, VNI 4242 (RFC 7348), as AWS VPC Traffic
            Mirroring sends it / the Ethernet frame
  geneve    Ether / IPv4 / UDP to 6081 / Geneve with two 8-byte options, as AWS Gateway Load
            Balancer sends them (RFC 8926) / the Ethernet frame
  gre       Ether / IPv4 / GRE with a key (RFC 2784, RFC 2890), protocol 0x0800 / the IP packet
  erspan2   Ether / IPv4 / GRE with a sequence number, 0x88BE / ERSPAN type II / the frame
  erspan3   Ether / IPv4 / GRE with a sequence number, 0x22EB / ERSPAN type III with the O bit
            and its 8-byte platform subheader / the frame
  ipip      Ether / IPv4 protocol 4 / the IP packet
  mpls      Ether 0x8847 / two MPLS labels, the second the bottom of the stack / the IP packet
  span-dup  every frame twice, byte for byte, as a SPAN session mirroring both ports of the
            link delivers it: the copy 7-11 us after the frame (so a copy sometimes comes after
            the next frame)

One frame in, one frame out (span-dup: two), so frame numbers are the source's (span-dup:
interleaved). Reading and writing pcap is the standard library's; scapy builds the outer
headers only, and the inner frame or IP packet is copied byte for byte (a frame's Ethernet
padding is left out where the tunnel carries the IP packet).

usage: tunnels.py SOURCE.pcap OUT_DIR   (writes OUT_DIR/NAME-KIND.pcap, NAME the source's
                                         name less -client-leg.pcap)
"""
import os
import struct
import sys

from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III, ERSPAN_PlatformSpecific
from scapy.contrib.geneve import GENEVE, GeneveOptions
from scapy.contrib.mpls import MPLS
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import GRE, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw

UNDERLAY = dict(src="192.0.2.1", dst="192.0.2.2", ttl=64)
MACS = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\xd4\xc3\xb2\xa1", "a little-endian microsecond pcap"
    (linktype,) = struct.unpack("<I", data[20:24])
    assert linktype == 1, f"Ethernet, not link type {linktype}"
    frames, at = [], 24
    while at < len(data):
        sec, usec, incl, _orig = struct.unpack("<IIII", data[at:at + 16])
        frames.append((sec, usec, data[at + 16:at + 16 + incl]))
        at += 16 + incl
    return frames


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for sec, usec, buf in frames:
            f.write(struct.pack("<IIII", sec, usec, len(buf), len(buf)))
            f.write(buf)


def ip_of(frame):
    """The IPv4 packet of an untagged Ethernet frame, without the frame's padding."""
    assert frame[12:14] == b"\x08\x00"
    (total,) = struct.unpack(">H", frame[16:18])
    return frame[14:14 + total]


def outer(i, proto=None):
    ip = IP(id=i & 0xFFFF, flags="DF", **UNDERLAY)
    if proto is not None:
        ip.proto = proto
    return Ether(**MACS) / ip


def sport(i):
    # RFC 7348 §5: the source port is a hash of the inner headers, from the dynamic range.
    return 49152 + (i * 2654435761) % 16384


def geneve_options(i):
    return [
        GeneveOptions(classid=0x0108, type=1, length=2, data=struct.pack(">Q", 0x1122334455667788 + i)),
        GeneveOptions(classid=0x0108, type=2, length=2, data=struct.pack(">Q", 0xA1B2C3D4)),
    ]


# scapy spells GRE's sequence number field "seqence_number".
WRAP = {
    "vxlan": lambda i, f: outer(i) / UDP(sport=sport(i), dport=4789)
    / VXLAN(flags=0x08, vni=4242) / Raw(f),
    "geneve": lambda i, f: outer(i) / UDP(sport=sport(i), dport=6081)
    / GENEVE(vni=4242, proto=0x6558, options=geneve_options(i)) / Raw(f),
    "gre": lambda i, f: outer(i) / GRE(key_present=1, key=7, proto=0x0800) / Raw(ip_of(f)),
    "erspan2": lambda i, f: outer(i) / GRE(seqnum_present=1, seqence_number=i, proto=0x88BE)
    / ERSPAN_II(ver=1, vlan=0, session_id=5, index=3) / Raw(f),
    "erspan3": lambda i, f: outer(i) / GRE(seqnum_present=1, seqence_number=i, proto=0x22EB)
    / ERSPAN_III(ver=2, session_id=5, timestamp=i * 1000, o=1)
    / ERSPAN_PlatformSpecific(platf_id=3, info1=0, info2=0) / Raw(f),
    "ipip": lambda i, f: outer(i, proto=4) / Raw(ip_of(f)),
    "mpls": lambda i, f: Ether(type=0x8847, **MACS) / MPLS(label=1000, s=0, ttl=64)
    / MPLS(label=2000, s=1, ttl=64) / Raw(ip_of(f)),
}


def span_dup(frames):
    """Each frame and its byte-identical copy 7-11 us later, in time order."""
    out = []
    for i, (sec, usec, f) in enumerate(frames):
        t = sec * 1_000_000 + usec
        out.append((t, i, 0, f))
        out.append((t + 7 + i % 5, i, 1, f))
    out.sort(key=lambda x: (x[0], x[1], x[2]))
    return [(t // 1_000_000, t % 1_000_000, f) for t, _, _, f in out]


def main():
    src, out_dir = sys.argv[1], sys.argv[2]
    frames = read_pcap(src)
    name = os.path.basename(src).replace("-client-leg.pcap", "")
    for kind, wrap in WRAP.items():
        wrapped = [(s, us, bytes(wrap(i + 1, f))) for i, (s, us, f) in enumerate(frames)]
        write_pcap(os.path.join(out_dir, f"{name}-{kind}.pcap"), wrapped)
    write_pcap(os.path.join(out_dir, f"{name}-span-dup.pcap"), span_dup(frames))


main()
