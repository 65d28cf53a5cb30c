#!/usr/bin/env python3
"""Deterministically degrade a capture of python-sdk-healthy into lossy.pcap.

Segments are chosen by what they carry (not by frame number), so the script works on any
re-capture of python-sdk-healthy:
  drop      - the client->server segment carrying the tools/call `add` request body, and the
              server->client segment carrying the 2nd progress event of the slow_count stream;
  duplicate - the initialize response event, the notifications/initialized body, the 3rd
              progress event (each copy inserted right after the original, as a retransmission);
  reorder   - three data segments swapped with the next data segment of the same connection
              and direction (initialize response head <-> priming event; tools/list request
              head <-> body; 4th progress event <-> final response event).
Timestamps stay monotonic: a swapped pair exchanges timestamps, a duplicate gets the midpoint
between its original and the next frame. Writes the truth JSON from its own bookkeeping.

usage: lossy.py IN.pcap OUT.pcap TRUTH.json SERVER_PORT
"""
import hashlib
import json
import re
import sys

import dpkt

IN, OUT, TRUTH, SPORT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

with open(IN, "rb") as f:
    rd = dpkt.pcap.Reader(f)
    linktype, snaplen = rd.datalink(), rd.snaplen
    pkts = [(ts, bytes(buf)) for ts, buf in rd]
assert linktype == dpkt.pcap.DLT_EN10MB, linktype

info = []   # per frame: dict(conn, dir, seq, rel, len, payload)
isn = {}
for i, (ts, buf) in enumerate(pkts):
    tcp = dpkt.ethernet.Ethernet(buf).data.data
    c2s = tcp.dport == SPORT
    cport = tcp.sport if c2s else tcp.dport
    d = "c2s" if c2s else "s2c"
    if tcp.flags & dpkt.tcp.TH_SYN:
        isn[(cport, d)] = tcp.seq
    info.append({"frame": i + 1, "client_port": cport, "dir": d, "seq": tcp.seq,
                 "len": len(tcp.data), "payload": bytes(tcp.data)})
for x in info:
    x["stream_offset"] = (x["seq"] - isn[(x["client_port"], x["dir"])] - 1) & 0xFFFFFFFF


def find(direction, *needles):
    hits = [x for x in info if x["dir"] == direction and x["len"] and all(n in x["payload"] for n in needles)]
    assert len(hits) == 1, (direction, needles, [h["frame"] for h in hits])
    return hits[0]


def next_data(x):
    later = [y for y in info if y["frame"] > x["frame"] and y["len"] and y["client_port"] == x["client_port"]
             and y["dir"] == x["dir"]]
    return later[0]


drops = [find("c2s", b'"name":"add"'), find("s2c", b"notifications/progress", b'"progress":2,')]
dups = [find("s2c", b'"protocolVersion"', b'"result"', b"event: message"),
        find("c2s", b'"method":"notifications/initialized"'),
        find("s2c", b"notifications/progress", b'"progress":3,')]
init_head = [x for x in info if x["dir"] == "s2c" and x["client_port"] == dups[0]["client_port"]
             and x["payload"].startswith(b"HTTP/1.1 200")][0]
list_body = find("c2s", b'"method":"tools/list"')
list_head = [x for x in info if x["dir"] == "c2s" and x["client_port"] == list_body["client_port"]
             and x["payload"].startswith(b"POST ")][0]
p4 = find("s2c", b"notifications/progress", b'"progress":4,')
swaps = [(init_head, next_data(init_head)), (list_head, next_data(list_head)), (p4, next_data(p4))]
touched = [x["frame"] for x in drops + dups] + [f for a, b in swaps for f in (a["frame"], b["frame"])]
assert len(touched) == len(set(touched)), "selections overlap"
assert list_head["frame"] < list_body["frame"] and next_data(list_head) is list_body

order = list(range(len(pkts)))
for a, b in swaps:
    ia, ib = order.index(a["frame"] - 1), order.index(b["frame"] - 1)
    order[ia], order[ib] = order[ib], order[ia]
slot_ts = [pkts[i][0] for i in range(len(pkts))]   # timestamps stay with positions
out = []  # (ts, buf, original_frame, kind)
drop_frames = {x["frame"] for x in drops}
dup_frames = {x["frame"] for x in dups}
for pos, orig in enumerate(order):
    fr = orig + 1
    if fr in drop_frames:
        continue
    out.append((slot_ts[pos], pkts[orig][1], fr, "original"))
    if fr in dup_frames:
        nxt = slot_ts[pos + 1] if pos + 1 < len(slot_ts) else slot_ts[pos] + 0.0001
        out.append(((slot_ts[pos] + nxt) / 2, pkts[orig][1], fr, "duplicate"))

with open(OUT, "wb") as f:
    wr = dpkt.pcap.Writer(f, snaplen=snaplen, linktype=linktype)
    for ts, buf, _, _ in out:
        wr.writepkt(buf, ts=ts)

new_frames = {}
for n, (_, _, fr, kind) in enumerate(out, 1):
    new_frames.setdefault(fr, []).append(n)


def desc(x):
    d = {"original_frame": x["frame"], "client_port": x["client_port"], "server_port": SPORT,
         "direction": x["dir"], "stream_offset": x["stream_offset"], "payload_len": x["len"],
         "payload_sha256": hashlib.sha256(x["payload"]).hexdigest(),
         "payload_head": x["payload"][:80].decode("latin-1")}
    m = re.search(rb"id: ([0-9a-f-]{36})", x["payload"])
    if m:
        d["sse_event_id"] = m.group(1).decode()
    if x["frame"] in new_frames:
        d["lossy_frames"] = new_frames[x["frame"]]
    return d


conn_rank = {p: i for i, p in enumerate(dict.fromkeys(x["client_port"] for x in info))}
truth = {
    "capture": "lossy.pcap",
    "derived_from": {"file": IN.rsplit("/", 1)[-1], "frames": len(pkts),
                     "sha256": hashlib.sha256(open(IN, "rb").read()).hexdigest()},
    "frames": len(out),
    "source": "lossy.py's own bookkeeping of what it dropped, duplicated and moved",
    "dropped": [dict(desc(x), tcp_stream_index=conn_rank[x["client_port"]]) for x in drops],
    "duplicated": [dict(desc(x), tcp_stream_index=conn_rank[x["client_port"]]) for x in dups],
    "reordered": [{"pair": [desc(a), desc(b)], "tcp_stream_index": conn_rank[a["client_port"]],
                   "note": "the later segment now arrives first"} for a, b in swaps],
    "expected_analysis": {
        "gaps": [{"client_port": x["client_port"], "server_port": SPORT, "direction": x["dir"],
                  "tcp_stream_index": conn_rank[x["client_port"]],
                  "stream_offset": x["stream_offset"], "missing_bytes": x["len"]} for x in drops],
        "gap_effects": [
            "c2s gap = the whole JSON body of the tools/call `add` request (its headers survive): the request's "
            "method/id cannot be read from the wire; the server's SSE response (id 3) is still there",
            "s2c gap = exactly one SSE event (progress 2 of the slow_count stream, its event id is listed above) "
            "in the middle of a POST SSE response; the events before and after it parse normally",
        ],
        "duplicates": "3 exact retransmissions: no gap, no double-counted message or event",
        "reordering": "3 swapped pairs: reassembly by sequence number gives the original byte streams",
        "everything_else": "as python-sdk-healthy.truth.json",
    },
}
with open(TRUTH, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
print("lossy: %d -> %d frames; dropped %s (%s bytes); duplicated %s; swapped %s" % (
    len(pkts), len(out), [x["frame"] for x in drops], [x["len"] for x in drops],
    [x["frame"] for x in dups], [(a["frame"], b["frame"]) for a, b in swaps]), file=sys.stderr)
