#!/usr/bin/env python3
"""Build samples/python-sdk-shared-store.truth.json from what the clients (TapTransport logs), the
relay (its cuts) and the server (request log, the shared event store's log: which session minted
each event, each replay and which of its events other sessions had minted) recorded during the
run; never from the captures.

For each resume the truth lists the events the server replayed on it that other sessions had
minted, the ones its client read (the SDK stops reading a POST stream once it has its response,
so it reads fewer than the wire carries), and the ones a capture can prove: the minting
session's client had received the same event fresh, on one of its own streams that is not a
resume (a replay may already be another session's event). Fails unless some resume was replayed other sessions'
events, which is what the sample is for.

usage: truth.py WORK_DIR OUT_JSON RELAY_PORT SERVER_PORT
"""
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import dumps_compact, read_jsonl  # noqa: E402

work, out = sys.argv[1], sys.argv[2]
relay_port, server_port = int(sys.argv[3]), int(sys.argv[4])
clients = read_jsonl(os.path.join(work, "clients.jsonl"))
server = read_jsonl(os.path.join(work, "server.jsonl"))

# Each client session's id, requests (seq -> Last-Event-ID) and the events it received.
sid_of, resumes_by_tag, received = {}, defaultdict(dict), defaultdict(list)
for e in clients:
    tag = e.get("session")
    if e["ev"] == "http_response" and e.get("mcp_session_id"):
        sid_of.setdefault(tag, e["mcp_session_id"])
    elif e["ev"] == "http_request" and e.get("last_event_id"):
        resumes_by_tag[tag][e["seq"]] = e["last_event_id"]
    elif e["ev"] == "sse_event" and e.get("id"):
        received[tag].append((e["seq"], e["id"], e["t"]))
tag_of = {sid: tag for tag, sid in sid_of.items()}
# (session id, event id) -> when that session's client first had it fresh, on a stream that is no
# resume: a replay may already be another session's event, so only a fresh one shows whose it is.
first_received = {}
for tag, evs in received.items():
    for seq, eid, t in evs:
        if seq not in resumes_by_tag[tag]:
            first_received.setdefault((sid_of[tag], eid), t)

resumes = []
for e in server:
    if e["ev"] != "replay":
        continue
    sid, lei = e["session_id"], e["last_event_id"]
    foreign = e.get("minted_in_other_sessions", {})
    tag = tag_of[sid]
    seqs = [seq for seq, l in resumes_by_tag[tag].items() if l == lei]
    got = [(eid, t) for seq, eid, t in received[tag] if seq in seqs]
    foreign_got = [eid for eid, _ in got if eid in foreign]
    # What the server sent on the resume that another session's client had been sent fresh: the
    # wire (the server leg holds all the server sent) proves each by the two copies.
    fresh_elsewhere = [eid for eid in e["replayed"] if eid in foreign and (foreign[eid], eid) in first_received]
    resumes.append({
        "session_id": sid,
        "client": tag,
        "last_event_id": lei,
        "server_stream_id": e["stream_id"],
        "replayed_by_server": len(e["replayed"]),
        "minted_in_other_sessions_by_server": len(foreign),
        "received_by_client": len(got),
        "received_from_other_sessions": foreign_got,
        "replayed_minted_in_other_sessions": sorted(foreign),
        "provable_from_the_wire": fresh_elsewhere,
        "minting_sessions": sorted({foreign[x] for x in fresh_elsewhere}),
        "expected_finding": "cross_session_replay" if fresh_elsewhere else None,
    })

minted = defaultdict(int)
for e in server:
    if e["ev"] == "store":
        minted[e["session_id"]] += 1
problems = []
if not any(r["provable_from_the_wire"] for r in resumes):
    problems.append("no resume was replayed another session's events that its client had received")
if len(sid_of) != len({e["session"] for e in clients if e.get("session")}):
    problems.append("a client session has no session id")

truth = {
    "scenario": "python-sdk-shared-store",
    "generated_by": "samples/make/python-sdk-shared-store.sh",
    "recorded_by": "the SDK clients' taps, the relay and the server's request and shared event-store logs, "
                   "during the run; not derived from the captures",
    "topology": {"client_leg": {"pcap": "samples/python-sdk-shared-store.pcap", "relay": "127.0.0.1:%d" % relay_port},
                 "server_leg": {"pcap": "samples/python-sdk-shared-store-server-leg.pcap",
                                "server": "127.0.0.1:%d" % server_port}},
    "server": "samples/make/_py/py_server.py shared-store: the official Python SDK MCPServer whose session "
              "manager hands ONE event store to every session (streams keyed by stream id alone: "
              "_GET_stream, or the POST's request id)",
    "sessions": [{"client": tag, "session_id": sid, "events_minted_for_it": minted[sid]}
                 for tag, sid in sorted(sid_of.items())],
    "resumes": resumes,
    "expected_findings": {
        "cross_session_replay": [{"session_id": r["session_id"], "last_event_id": r["last_event_id"],
                                  "events_on_the_server_leg": len(r["provable_from_the_wire"])}
                                 for r in resumes if r["provable_from_the_wire"]],
        "note": "one cross_session_replay per resume that carried events another session's client had received "
                "before (same id, same bytes), on the session that resumed; the duplicate responses those "
                "replays delivered (other sessions' results for the same request id) are caused by it",
    },
}
with open(out, "w") as f:
    f.write(dumps_compact(truth, depth=4) + "\n")
if problems:
    sys.exit("python-sdk-shared-store truth.py: " + "; ".join(problems))
print("python-sdk-shared-store truth.py: %d sessions, %d resumes, %d with other sessions' events provable" % (
    len(sid_of), len(resumes), len(truth["expected_findings"]["cross_session_replay"])), file=sys.stderr)
