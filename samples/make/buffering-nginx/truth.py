#!/usr/bin/env python3
"""Build samples/buffering-nginx.truth.json from what the server's event store (when it minted
each event, for which session and stream) and the clients' taps (when each event arrived)
recorded during the run; never from the captures. One host, one clock: how long nginx held an
event is its arrival minus its minting.

Per event stream: the events minted, those the client read and how long each was held at most,
and those it never read. The standalone GET's events are released by nginx only when the server
ends the stream (after the DELETE), when the SDK has stopped reading it: on the client leg they
then arrive late (held) or, when the client closed first, never (lost); which one is a race. Fails unless some stream
was held a second or more (what the sample is for).

usage: truth.py WORK_DIR OUT_JSON NGINX_PORT SERVER_PORT
"""
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import dumps_compact, read_jsonl  # noqa: E402

work, out = sys.argv[1], sys.argv[2]
nginx_port, server_port = int(sys.argv[3]), int(sys.argv[4])
minted = {}  # event id -> (session id, stream id, when, what)
for e in read_jsonl(os.path.join(work, "py-server.jsonl")):
    if e["ev"] == "store":
        what = "priming" if e.get("priming") else (e.get("message") or {}).get("method") or (e.get("message") or {}).get("kind")
        minted[e["event_id"]] = (e["session_id"], e["stream_id"], e["t"], what)

clients = read_jsonl(os.path.join(work, "py-clients.jsonl"))
sid_of, requests, got = {}, {}, defaultdict(dict)
for e in clients:
    tag = e.get("session")
    if e["ev"] == "http_response" and e.get("mcp_session_id"):
        sid_of.setdefault(tag, e["mcp_session_id"])
    elif e["ev"] == "http_request":
        requests[(tag, e["seq"])] = e
    elif e["ev"] == "sse_event" and e.get("id"):
        got[(tag, e["seq"])].setdefault(e["id"], e["t"])


def server_stream(req):
    """The event store's name for the stream a request opened."""
    if req["method"] == "GET":
        return "_GET_stream" if not req.get("last_event_id") else None
    rpc = req.get("jsonrpc") or {}
    return str(rpc["id"]) if rpc.get("kind") == "request" else None


streams = []
for (tag, seq), req in sorted(requests.items()):
    sid = sid_of.get(tag)
    name = server_stream(req)
    if name is None or sid is None:
        continue
    ids = [(eid, t) for eid, (s, st, t, _) in minted.items() if s == sid and st == name]
    if not ids:
        continue
    arrived = got[(tag, seq)]
    held = [arrived[eid] - t for eid, t in ids if eid in arrived]
    rpc = req.get("jsonrpc") or {}
    streams.append({
        "client": tag,
        "session_id": sid,
        "request": "GET standalone" if req["method"] == "GET" else "%s %s" % (rpc.get("method"), rpc.get("id")),
        "events_minted": len(ids),
        "events_read_by_client": len(held),
        "events_never_read_by_client": len(ids) - len(held),
        "held_max_s": round(max(held), 3) if held else None,
    })

problems = []
if not any((s["held_max_s"] or 0) >= 1.0 for s in streams):
    problems.append("no stream was held a second or more")
truth = {
    "scenario": "buffering-nginx",
    "generated_by": "samples/make/buffering-nginx.sh",
    "recorded_by": "the server's event-store log and the clients' taps, during the run; not derived from the "
                   "captures",
    "topology": {"client_leg": {"pcap": "samples/buffering-nginx-client-leg.pcap", "nginx": "127.0.0.1:%d" % nginx_port},
                 "server_leg": {"pcap": "samples/buffering-nginx-server-leg.pcap", "server": "127.0.0.1:%d" % server_port},
                 "nginx": "samples/make/buffering-nginx/nginx.conf: proxy_buffering on and HTTP/1.0 upstream (nginx's "
                          "defaults), proxy_ignore_headers X-Accel-Buffering"},
    "sessions": [{"client": tag, "session_id": sid} for tag, sid in sorted(sid_of.items())],
    "streams": streams,
    "expected_findings": {
        "note": "with both legs: a stream_stalled (info) on each stream the truth holds a second or more (its "
                "held_s about held_max_s), none on streams held well under a second; each standalone GET stream "
                "(never read by the client) either held (stream_stalled) or lost (lost_in_transit) on the wire; "
                "with one leg alone nothing can be measured, and nothing is raised",
        "stalled_at_least_s": 1.0,
    },
}
with open(out, "w") as f:
    f.write(dumps_compact(truth, depth=3) + "\n")
if problems:
    sys.exit("buffering-nginx truth.py: " + "; ".join(problems))
print("buffering-nginx truth.py: %d sessions, %d event streams, %d held 1 s or more, %d with events never received" % (
    len(sid_of), len(streams), sum(1 for s in streams if (s["held_max_s"] or 0) >= 1.0),
    sum(1 for s in streams if s["events_never_read_by_client"])), file=sys.stderr)
