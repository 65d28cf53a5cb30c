#!/usr/bin/env python3
"""Build samples/keepalive-nginx.truth.json for make/keepalive-nginx.sh from what was recorded during
the run: the SDK clients' taps (py-clients.jsonl: every request, its client-side local port, every SSE
event), the SDK server's own log (py-server.jsonl: every request with nginx's local port on the
upstream connection, every event ID minted) and nginx's access log. Never from the capture.

Fails (exit 1, after writing the file) unless every session is healthy (sdk_truth.checked_sdk_sessions:
every request answered once, every event minted seen by the client, no resume, statuses 200/202) and
at least one upstream connection carried requests of several sessions.

usage: truth.py WORK_DIR OUT_JSON NGINX_PORT SERVER_PORT
"""
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import checked_sdk_sessions, dumps_compact, read_jsonl, server_sessions  # noqa: E402

work, out = sys.argv[1], sys.argv[2]
nginx_port, server_port = int(sys.argv[3]), int(sys.argv[4])
problems = []

client_lines = read_jsonl(os.path.join(work, "py-clients.jsonl"))
server_lines = read_jsonl(os.path.join(work, "py-server.jsonl"))
nginx_lines = read_jsonl(os.path.join(work, "nginx", "access.jsonl"))

sessions = []
tag_of = {}
for idx, c, sv in checked_sdk_sessions(client_lines, server_lines, problems):
    tag_of[c["session_id"]] = c["client_tag"]
    sessions.append({
        "client_tag": c["client_tag"],
        "session_id": c["session_id"],
        "client_info_name": "mcpf-py-client-%02d" % idx,
        "http_request_count": c["http_request_count"],
        "client_leg_local_ports": c["client_leg_local_ports"],
        "server_leg_nginx_ports": sv and sv["server_leg_nginx_ports"],
        "requests_sent": [{k: r[k] for k in ("id", "method", "tool") if k in r} for r in c["requests_sent"]],
        "sse_event_ids_seen_per_stream": c["sse_event_ids_seen_per_stream"],
        "server_events_minted": sv and len(sv["sse_events_minted"]),
        "ended_by": c["ended_by"],
        "t_first": c["t_first"], "t_last": c["t_last"],
        "expected_findings_above_info": [],
    })

# --- client leg: each connection belongs to one session (one httpx2 client per session) ----------
client_ports = OrderedDict()
for s in sessions:
    for p in s["client_leg_local_ports"]:
        client_ports.setdefault(p, []).append(s["client_tag"])
shared_client = {p: t for p, t in client_ports.items() if len(t) > 1}
if shared_client:
    problems.append("client-leg connections used by several sessions: %r" % shared_client)

# --- server leg: which sessions' requests each upstream connection carried, in order -------------
upstream = OrderedDict()  # nginx's local port -> [requests]
for sid, srv in server_sessions(server_lines).items():
    for r in srv["http_requests"]:
        upstream.setdefault(r["peer_port"], []).append({
            "t": next(e["t"] for e in server_lines if e["ev"] == "http_request" and e["seq"] == r["seq"]),
            "server_seq": r["seq"], "session": tag_of.get(sid, sid), "method": r["method"],
            "jsonrpc": (r["jsonrpc"] or {}).get("method"), "id": (r["jsonrpc"] or {}).get("id"),
            "status": r["status"]})
connections = []
for port, reqs in sorted(upstream.items(), key=lambda kv: min(x["t"] for x in kv[1])):
    reqs.sort(key=lambda x: x["t"])
    order = []
    for x in reqs:
        if not order or order[-1] != x["session"]:
            order.append(x["session"])
    connections.append({
        "nginx_local_port": port,
        "requests": len(reqs),
        "sessions": sorted({x["session"] for x in reqs}),
        "session_order": order,
        "carried": ["%s %s%s%s" % (x["session"], x["method"], " " + x["jsonrpc"] if x["jsonrpc"] else "",
                                   " id %s" % x["id"] if x["id"] is not None else "") for x in reqs],
    })
multi = [c for c in connections if len(c["sessions"]) > 1]
if not multi:
    problems.append("no upstream connection carried requests of several sessions")

total = sum(s["http_request_count"] for s in sessions)
if len(nginx_lines) != total:
    problems.append("nginx logged %d lines for %d client requests" % (len(nginx_lines), total))
bad_up = [ln["upstream_addr"] for ln in nginx_lines if ln["upstream_addr"] != "127.0.0.1:%d" % server_port]
if bad_up:
    problems.append("nginx lines not answered by the SDK server: %r" % bad_up)
server_total = sum(len(c) for c in upstream.values())
if server_total != total:
    problems.append("the server received %d requests, the clients sent %d" % (server_total, total))

window = [max(s["t_first"] for s in sessions), min(s["t_last"] for s in sessions)]
truth = {
    "scenario": "keepalive-nginx",
    "generated_by": "samples/make/keepalive-nginx.sh",
    "recorded_by": "the SDK clients' taps (requests, client-leg local ports, SSE events), the SDK server's own log "
                   "(requests with nginx's upstream local port, event IDs minted) and nginx's access log, during the "
                   "run; never from the capture",
    "topology": {
        "pcap": "samples/keepalive-nginx-lo.pcap",
        "capture": "one tcpdump -i lo 'tcp port %d or tcp port %d': both legs in one file, as on the proxy host"
                   % (nginx_port, server_port),
        "client_leg": "SDK clients <-> nginx 127.0.0.1:%d" % nginx_port,
        "server_leg": "nginx <-> SDK server 127.0.0.1:%d" % server_port,
        "nginx": "Debian nginx, one worker, proxy_buffering off, upstream HTTP/1.1 with keepalive 8 "
                 "(samples/make/keepalive-nginx/nginx.conf)",
        "server": "official Python SDK (mcp 2.3.0) MCPServer, Streamable HTTP, SSE responses, one event store per "
                  "session (samples/make/_py/py_server.py)",
        "clients": "%d official Python SDK client sessions (mcp 2.3.0, mode=\"legacy\"), one process, 0.12 s apart, "
                   "each its own httpx2 client (samples/make/concurrent-nginx/py_clients.py)" % len(sessions),
        "nginx_access_log": "samples/keepalive-nginx.nginx.jsonl",
    },
    "http_request_count": {"client_leg": total, "server_leg": server_total, "nginx_log_lines": len(nginx_lines)},
    "connection_count": {"client_leg": len(client_ports), "server_leg": len(connections),
                         "server_leg_carrying_several_sessions": len(multi),
                         "most_sessions_on_one_server_leg_connection": max(len(c["sessions"]) for c in connections)},
    "all_sessions_open_between": window,
    "sessions": sessions,
    "server_leg_connections_note": "each upstream connection (nginx's local port, from the SDK server's log), the "
                                   "sessions whose requests it carried, in order",
    "server_leg_connections": connections,
    "expected_findings": {
        "per_session": {s["session_id"]: [] for s in sessions},
        "note": "a healthy run: nothing above info on any session. Each session is seen at two vantage points of the "
                "one file (client <-> nginx :%d and nginx <-> server :%d); once issue 28 is done, one record per "
                "session (%d), never one per leg, and never a session made of two sessions' requests because they "
                "shared an upstream connection; no lost_in_transit and no stream_stalled (nothing buffered). The "
                "access log alone: the same %d sessions, nothing above info" % (nginx_port, server_port, len(sessions),
                                                                              len(sessions)),
    },
    "problems": problems,
}
with open(out, "w") as f:
    f.write(dumps_compact(truth, depth=4) + "\n")
if problems:
    sys.exit("keepalive-nginx truth.py: %s" % "; ".join(problems))
print("keepalive-nginx truth.py: %d sessions, %d requests, %d client-leg and %d server-leg connections, %d of them "
      "carrying several sessions (at most %d)" % (len(sessions), total, len(client_ports), len(connections), len(multi),
                                                  truth["connection_count"]["most_sessions_on_one_server_leg_connection"]),
      file=sys.stderr)
