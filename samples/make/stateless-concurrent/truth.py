#!/usr/bin/env python3
"""Build stateless-concurrent.truth.json from the clients' log (tapping httpx2 transport: what
each client sent, on which local port, and every response byte it read) and the server's ASGI
log (what it got from which peer port, every byte it sent) — never from the pcap. Fails if the
two records disagree or the run is not the expected shape.

usage: truth.py CLIENT_LOG SERVER_LOG OUT PORT
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from truthlib import bodies, decode_body, load_jsonl, summarize  # noqa: E402

cl_path, sv_path, out_path, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cl, sv = load_jsonl(cl_path), load_jsonl(sv_path)


# --- client side -------------------------------------------------------------------------
reqs = [e for e in cl if e["ev"] == "http_request"]
resp = {e["seq"]: e for e in cl if e["ev"] == "http_response"}
rbody = collections.defaultdict(bytes, bodies(cl))
results = {e["client"]: e["results"] for e in cl if e["ev"] == "results"}
progress = {e["client"]: e["progress"] for e in cl if e["ev"] == "progress"}
versions = {e["client"]: e["protocol_version"] for e in cl if e["ev"] == "connected"}

# --- server side -------------------------------------------------------------------------
s_req = {e["seq"]: e for e in sv if e["ev"] == "http_request"}
s_body = {e["seq"]: e["body"] for e in sv if e["ev"] == "http_request_body"}
s_start = {e["seq"]: e for e in sv if e["ev"] == "http_response_start"}
s_out = collections.defaultdict(bytes, bodies(sv))
server_by_key = collections.defaultdict(list)
for seq, r in s_req.items():
    server_by_key[(r["peer_port"], s_body.get(seq) or None)].append(seq)

problems = []
clients = collections.OrderedDict()
all_exchanges = []
for r in reqs:
    c = r["client"]
    rs = resp[r["seq"]]
    body = json.loads(r["body"]) if r["body"] else None
    ex = {"client_seq": r["seq"], "local_port": rs["local_port"], "method": r["method"], "path": r["path"],
          "request_headers": r["headers"],
          "jsonrpc": summarize(body) if body else None,
          "status": rs["status"], "response_content_type": rs["content_type"],
          "response_mcp_session_id": rs["mcp_session_id"]}
    ex.update(decode_body(rs["content_type"], bytes(rbody[r["seq"]])))
    # the server's own record of the same exchange (same peer port, same body)
    cand = server_by_key.get((rs["local_port"], r["body"]), [])
    if len(cand) != 1:
        problems.append("client seq %d: %d server records for port %s" % (r["seq"], len(cand), rs["local_port"]))
    else:
        sseq = cand[0]
        ex["server_seq"] = sseq
        if s_start[sseq]["status"] != rs["status"]:
            problems.append("status mismatch on client seq %d" % r["seq"])
        if bytes(s_out[sseq]) != bytes(rbody[r["seq"]]):
            problems.append("response bytes differ on client seq %d" % r["seq"])
    clients.setdefault(c, []).append(ex)
    all_exchanges.append(ex)

out_clients = []
for c, exs in clients.items():
    ports = []
    for ex in exs:
        if ex["local_port"] not in ports:
            ports.append(ex["local_port"])
    conns = [{"local_port": p, "client_seqs": [ex["client_seq"] for ex in exs if ex["local_port"] == p],
              "jsonrpc": [ex["jsonrpc"] for ex in exs if ex["local_port"] == p]} for p in ports]
    ids = [ex["jsonrpc"]["id"] for ex in exs if ex["jsonrpc"] and "id" in ex["jsonrpc"]]
    resp_ids = [m["id"] for ex in exs for m in ex["messages"] if m["kind"] in ("response", "error")]
    if sorted(ids) != sorted(resp_ids):
        problems.append("%s: request ids %s vs response ids %s" % (c, ids, resp_ids))
    out_clients.append({
        "client": c,
        "client_info_name": "mcpf-stateless-%s" % c,
        "protocol_version": versions.get(c),
        "local_ports": ports,
        "connections": conns,
        "http_request_count": len(exs),
        "request_ids": ids,
        "exchanges": exs,
        "tool_results": results.get(c),
        "progress_seen": progress.get(c),
    })

n_clients = len(out_clients)
n_http = len(all_exchanges)
ports_all = [p for c in out_clients for p in c["local_ports"]]
if len(set(ports_all)) != len(ports_all):
    problems.append("a local port is shared by two clients: %s" % ports_all)
if n_clients < 4:
    problems.append("fewer than 4 clients")
for c in out_clients:
    if len(c["local_ports"]) < 2:
        problems.append("%s used fewer than 2 connections" % c["client"])
    if c["protocol_version"] != "2026-07-28":
        problems.append("%s negotiated %s" % (c["client"], c["protocol_version"]))
if any(ex["response_mcp_session_id"] for ex in all_exchanges):
    problems.append("a response carried Mcp-Session-Id")
if len(s_req) != n_http:
    problems.append("server saw %d requests, clients sent %d" % (len(s_req), n_http))

methods = collections.Counter(ex["jsonrpc"]["method"] for ex in all_exchanges if ex["jsonrpc"])
truth = {
    "capture": "stateless-concurrent.pcap",
    "source": "clients' tapping httpx2 transport log (request, local port, every response byte read) + "
              "server ASGI log (peer port, request body, every response byte sent); cross-checked; not the pcap",
    "server": "127.0.0.1:%d" % port,
    "endpoint": "/mcp",
    "sdk": {"python": {"package": "mcp", "version": "2.3.0"}},
    "server_setup": "MCPServer.streamable_http_app(stateless_http=True, json_response=False) served by uvicorn",
    "client_setup": "%d x mcp.Client(streamable_http_client(URL), mode='auto', cache=None), each with its own "
                    "httpx2.AsyncClient (own connection pool), all in one process, all from 127.0.0.1" % n_clients,
    "protocol_revision_on_the_wire": "2026-07-28 (stateless): each client probes server/discover first; every POST "
                                     "carries MCP-Protocol-Version: 2026-07-28, Mcp-Method (and Mcp-Name for tools/call) "
                                     "and _meta io.modelcontextprotocol/protocolVersion + clientInfo; no initialize, no "
                                     "notifications/initialized, no GET stream, no DELETE, no Mcp-Session-Id, no SSE event ids",
    "sessions_on_the_wire": [],
    "how_to_tell_clients_apart": "by TCP connection (local port); each connection belongs to exactly one client; "
                                 "in the bodies, _meta io.modelcontextprotocol/clientInfo.name differs per client. "
                                 "All clients share the source address 127.0.0.1 and the same JSON-RPC ids 1..8.",
    "client_count": n_clients,
    "tcp_connection_count": len(ports_all),
    "http_request_count": n_http,
    "http_response_count": n_http,
    "jsonrpc_request_count": sum(methods.values()),
    "jsonrpc_methods": dict(sorted(methods.items())),
    "responses_by_content_type": dict(collections.Counter(ex["response_content_type"] for ex in all_exchanges)),
    "clients": out_clients,
    "expected_analysis": {
        "max_finding_severity": "info",
        "mcp_sessions": "none on the wire (2026-07-28 has no sessions); if the analyzer groups, it must group by "
                        "connection/clientInfo into %d clients, never all %d connections of 127.0.0.1 into one" % (
                            n_clients, len(ports_all)),
        "must_not_report": ["reused_request_id (each client reuses nothing; ids 1..8 recur only across clients)",
                            "duplicate_response", "unanswered_request", "missing_session_id", "sse_fallback",
                            "retry_without_idempotency_key (no request is ever re-sent)"],
        "resumption_verdict": "not_attempted",
        "notes": "every request answered on its own POST; countdown answers as SSE (3 progress notifications then the "
                 "result, CRLF framing, no ids), everything else as application/json; 3 calls per client overlap on 3 "
                 "connections",
    },
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
if problems:
    print("truth.py: the run is not as expected:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("truth.py: %d clients, %d connections, %d HTTP requests, %s" % (n_clients, len(ports_all), n_http, dict(methods)))
