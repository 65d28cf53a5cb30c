#!/usr/bin/env python3
"""Rewrite the timestamps of a capture: every packet after a given time is moved later (or earlier)
by a given offset; packets at or before that time keep theirs. Nothing but the timestamps changes
(same format, same byte order, same resolution, same packet bytes). Python standard library only.

Reads and writes classic pcap (either byte order, microsecond or nanosecond magic) and pcapng
(Enhanced and obsolete Packet Blocks; if_tsresol and if_tsoffset of each interface honoured; Simple
Packet Blocks carry no timestamp and are copied as they are).

usage:
  timeshift.py IN OUT --offset SECONDS (--after TIME | --at-largest-gap)

  --offset SECONDS   how far to move the later packets, e.g. 7200 (2 h) or -30
  --after TIME       packets strictly after TIME move; TIME is epoch seconds (1796121000.5) or
                     +SECONDS from the first packet (+20)
  --at-largest-gap   split in the middle of the largest gap between two consecutive packets
                     (in file order), e.g. a client's back-off before a resume

It prints what it did (split time, packets kept, packets moved) on stderr. With a positive offset
the output stays in time order; a negative one larger than the gap would reorder packets and is
refused.
"""
import argparse
import struct
import sys
from fractions import Fraction

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 10 ** 6), b"\xa1\xb2\xc3\xd4": (">", 10 ** 6),
    b"\x4d\x3c\xb2\xa1": ("<", 10 ** 9), b"\xa1\xb2\x3c\x4d": (">", 10 ** 9),
}


class Packet:
    """One timestamped record: time (exact, as a Fraction of seconds) and how to rewrite it."""

    __slots__ = ("time", "set_time")

    def __init__(self, time, set_time):
        self.time = time
        self.set_time = set_time


def parse_pcap(buf):
    endian, per_sec = PCAP_MAGICS[bytes(buf[:4])]
    off = 24
    pkts = []
    while off + 16 <= len(buf):
        sec, frac, incl, _orig = struct.unpack_from(endian + "IIII", buf, off)
        t = Fraction(sec) + Fraction(frac, per_sec)

        def setter(new, off=off):
            ticks = round(new * per_sec)
            s, f = divmod(ticks, per_sec)
            if not 0 <= s < 2 ** 32:
                raise ValueError("timestamp out of range for pcap")
            struct.pack_into(endian + "II", buf, off, s, f)

        pkts.append(Packet(t, setter))
        off += 16 + incl
    if off != len(buf):
        raise ValueError("truncated pcap record at offset %d" % off)
    return pkts


def parse_pcapng(buf):
    pkts = []
    off = 0
    endian = "<"
    ifaces = []  # per interface: (ticks per second as Fraction, tsoffset seconds)
    while off + 12 <= len(buf):
        btype_raw = bytes(buf[off:off + 4])
        if btype_raw == b"\x0a\x0d\x0d\x0a":  # Section Header Block: byte order, new interface list
            bom = bytes(buf[off + 8:off + 12])
            endian = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            ifaces = []
        btype, blen = struct.unpack_from(endian + "II", buf, off)
        if blen < 12 or off + blen > len(buf):
            raise ValueError("bad pcapng block at offset %d" % off)
        body = off + 8
        if btype == 1:  # Interface Description Block
            resol, tsoff = Fraction(10 ** 6), 0
            o = body + 8
            end = off + blen - 4
            while o + 4 <= end:
                code, olen = struct.unpack_from(endian + "HH", buf, o)
                if code == 0:
                    break
                val = bytes(buf[o + 4:o + 4 + olen])
                if code == 9 and olen >= 1:
                    v = val[0]
                    resol = Fraction(2 ** (v & 0x7F)) if v & 0x80 else Fraction(10 ** v)
                elif code == 14 and olen == 8:
                    tsoff = struct.unpack(endian + "q", val)[0]
                o += 4 + ((olen + 3) & ~3)
            ifaces.append((resol, tsoff))
        elif btype in (6, 2):  # Enhanced Packet Block, obsolete Packet Block
            if btype == 6:
                iface, hi, lo = struct.unpack_from(endian + "III", buf, body)
                ts_at = body + 4
            else:
                iface, _drops, hi, lo = struct.unpack_from(endian + "HHII", buf, body)
                ts_at = body + 4
            resol, tsoff = ifaces[iface]
            ticks = (hi << 32) | lo
            t = Fraction(ticks) / resol + tsoff

            def setter(new, ts_at=ts_at, resol=resol, tsoff=tsoff):
                ticks = round((new - tsoff) * resol)
                if not 0 <= ticks < 2 ** 64:
                    raise ValueError("timestamp out of range for pcapng")
                struct.pack_into(endian + "II", buf, ts_at, ticks >> 32, ticks & 0xFFFFFFFF)

            pkts.append(Packet(t, setter))
        off += blen
    if off != len(buf):
        raise ValueError("trailing bytes in pcapng at offset %d" % off)
    return pkts


def parse_time(s, first):
    if s.startswith("+"):
        return first + Fraction(s[1:])
    return Fraction(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--offset", required=True, help="seconds to add to every packet after the split")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--after", help="epoch seconds, or +SECONDS from the first packet")
    g.add_argument("--at-largest-gap", action="store_true")
    a = ap.parse_args()

    buf = bytearray(open(a.input, "rb").read())
    magic = bytes(buf[:4])
    if magic in PCAP_MAGICS:
        kind, pkts = "pcap", parse_pcap(buf)
    elif magic == b"\x0a\x0d\x0d\x0a":
        kind, pkts = "pcapng", parse_pcapng(buf)
    else:
        sys.exit("%s: not a pcap or pcapng file" % a.input)
    if not pkts:
        sys.exit("%s: no packets" % a.input)
    offset = Fraction(a.offset)
    first = pkts[0].time
    if a.at_largest_gap:
        if len(pkts) < 2:
            sys.exit("need two packets to find a gap")
        i = max(range(1, len(pkts)), key=lambda k: pkts[k].time - pkts[k - 1].time)
        split = (pkts[i - 1].time + pkts[i].time) / 2
        gap = pkts[i].time - pkts[i - 1].time
    else:
        split = parse_time(a.after, first)
        gap = None
    moved = [p for p in pkts if p.time > split]
    kept = len(pkts) - len(moved)
    if offset < 0 and moved:
        last_kept = max((p.time for p in pkts if p.time <= split), default=None)
        if last_kept is not None and min(p.time for p in moved) + offset < last_kept:
            sys.exit("a negative offset of %s s would reorder packets" % float(offset))
    for p in moved:
        p.set_time(p.time + offset)
    with open(a.output, "wb") as f:
        f.write(buf)
    print("timeshift: %s %s: split at %.6f (+%.6f s from the first packet)%s; %d packets kept, %d moved by %+.6f s"
          % (kind, a.input, float(split), float(split - first),
             " in a gap of %.6f s" % float(gap) if gap is not None else "", kept, len(moved), float(offset)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
