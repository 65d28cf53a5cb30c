#!/usr/bin/env python3
"""Build samples/balancer-no-stickiness.truth.json from what the two replicas (their request logs:
each request, the session it named, its status, when it ended) and the clients (TapTransport logs,
the errors the SDK surfaced) recorded during the run; never from the captures or nginx's log.

A request is rejected while its session went on when the replica that answered it 404 did not
mint the session, the session had not been deleted before it was sent, and the session was alive
at the other replica: a request naming it answered 2xx after the 404, or an event stream of it
open across the 404. Fails unless some session has such a 404 (what the sample is for).

usage: truth.py WORK_DIR OUT_JSON NGINX_PORT REPLICA_A_PORT REPLICA_B_PORT
"""
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import dumps_compact, read_jsonl  # noqa: E402

work, out = sys.argv[1], sys.argv[2]
nginx_port, ports = int(sys.argv[3]), [int(x) for x in sys.argv[4:6]]

requests = []  # every request either replica received
minted_at = {}  # session id -> replica port
for port in ports:
    reqs = {}
    for e in read_jsonl(os.path.join(work, "replica-%d.jsonl" % port)):
        if e["ev"] == "http_request":
            reqs[e["seq"]] = {"replica": port, "seq": e["seq"], "method": e["method"],
                              "session_id": e.get("mcp_session_id"), "jsonrpc": e.get("jsonrpc"),
                              "last_event_id": e.get("last_event_id"), "sent": e["t"]}
        elif e["ev"] == "session_admitted":
            minted_at[e["session_id"]] = port
        elif e["ev"] in ("http_response", "http_end") and e["seq"] in reqs:
            r = reqs[e["seq"]]
            r["status"] = e.get("status") or r.get("status")
            if e["ev"] == "http_end":
                r["ended"] = e["t"]
    requests.extend(reqs.values())

by_session = defaultdict(list)
for r in requests:
    if r["session_id"]:
        by_session[r["session_id"]].append(r)


def alive_after(sid, r):
    rs = by_session[sid]
    deleted = [x["sent"] for x in rs if x["method"] == "DELETE" and 200 <= (x.get("status") or 0) < 300]
    if any(d < r["sent"] for d in deleted):
        return False
    end = r.get("ended", r["sent"])
    return any(200 <= (x.get("status") or 0) < 300 and
               (x["sent"] > end or (x["method"] == "GET" and x["sent"] <= r["sent"] and x.get("ended", 1e18) > end))
               for x in rs)


clients = read_jsonl(os.path.join(work, "clients.jsonl"))
sid_of = {}
for e in clients:
    if e["ev"] == "http_response" and e.get("mcp_session_id"):
        sid_of.setdefault(e["session"], e["mcp_session_id"])
failed = defaultdict(list)
for e in clients:
    if e["ev"] == "call_failed":
        failed[sid_of[e["session"]]].append({"what": e["what"], "error": e["error"]})

sessions = []
for tag, sid in sorted(sid_of.items()):
    rs = sorted(by_session[sid], key=lambda x: x["sent"])
    wrong = [r for r in rs if r.get("status") == 404 and r["replica"] != minted_at.get(sid)]
    rejected = [r for r in wrong if alive_after(sid, r)]
    sessions.append({
        "client": tag,
        "session_id": sid,
        "minted_at_replica": "127.0.0.1:%d" % minted_at[sid],
        "requests": len(rs) + 1,  # and the initialize, which named no session
        "answered_404_by_the_other_replica": len(wrong),
        "rejected_while_alive": [{k: r.get(k) for k in ("replica", "method", "jsonrpc", "last_event_id", "status")}
                                 for r in rejected],
        "errors_the_client_got": failed.get(sid, []),
        "expected_finding": {"kind": "session_not_found", "rejected": len(rejected)} if rejected else None,
    })

problems = []
if not any(s["rejected_while_alive"] for s in sessions):
    problems.append("no request was answered 404 while its session went on")
if any(r.get("status") == 404 and r["replica"] == minted_at.get(r["session_id"]) for r in requests if r["session_id"]):
    problems.append("a replica answered 404 for a session it minted")

truth = {
    "scenario": "balancer-no-stickiness",
    "generated_by": "samples/make/balancer-no-stickiness.sh",
    "recorded_by": "the replicas' request logs and the clients' taps, during the run; not derived from the "
                   "captures or the access log",
    "topology": {
        "client_leg": {"pcap": "samples/balancer-no-stickiness-client-leg.pcap", "nginx": "127.0.0.1:%d" % nginx_port},
        "server_leg": {"pcap": "samples/balancer-no-stickiness-server-leg.pcap",
                       "replicas": ["127.0.0.1:%d" % p for p in ports]},
        "nginx_access_log": "samples/balancer-no-stickiness.nginx.jsonl",
        "nginx": "round robin over the two replicas, no stickiness, proxy_next_upstream off "
                 "(samples/make/balancer-no-stickiness/nginx.conf)",
    },
    "http_request_count": len(requests),
    "sessions": sessions,
    "expected_findings": {
        "session_not_found": {s["session_id"]: len(s["rejected_while_alive"]) for s in sessions if s["rejected_while_alive"]},
        "note": "one session_not_found per session (and input) whose requests the replica that did not mint it "
                "answered 404 while it went on; `rejected` counts those requests; the client (the official Python "
                "SDK) surfaced each as an error and kept using the session",
    },
}
with open(out, "w") as f:
    f.write(dumps_compact(truth, depth=4) + "\n")
if problems:
    sys.exit("balancer-no-stickiness truth.py: " + "; ".join(problems))
print("balancer-no-stickiness truth.py: %d sessions, %d requests, %d sessions rejected while alive" % (
    len(sessions), len(requests), len(truth["expected_findings"]["session_not_found"])), file=sys.stderr)
