#!/usr/bin/env python3
"""Build legacy-sse-concurrent.truth.json from the clients' log (tapping httpx2 transport: each
request, the local port it went out on, every response byte read, the whole GET /sse stream)
and the server's ASGI log (peer ports, bodies, every byte it sent) — never from the pcap.
Fails if the two disagree, or a client got anything that was not its own.

usage: truth.py CLIENT_LOG SERVER_LOG OUT PORT
"""
import collections
import json
import os
import sys
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from truthlib import bodies, decode_body, load_jsonl, sse_events, summarize  # noqa: E402

cl_path, sv_path, out_path, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cl, sv = load_jsonl(cl_path), load_jsonl(sv_path)

reqs = [e for e in cl if e["ev"] == "http_request"]
resp = {e["seq"]: e for e in cl if e["ev"] == "http_response"}
rbody = collections.defaultdict(bytes, bodies(cl))
results = {e["client"]: e["results"] for e in cl if e["ev"] == "results"}
progress = {e["client"]: e["progress"] for e in cl if e["ev"] == "progress"}
created = {e["client"]: e["session_id"] for e in cl if e["ev"] == "session_created"}

s_req = {e["seq"]: e for e in sv if e["ev"] == "http_request"}
s_body = {e["seq"]: e["body"] for e in sv if e["ev"] == "http_request_body"}
s_start = {e["seq"]: e for e in sv if e["ev"] == "http_response_start"}
s_out = collections.defaultdict(bytes, bodies(sv))
by_key = collections.defaultdict(list)
for seq, r in s_req.items():
    by_key[(r["peer_port"], r["method"], r["path"] + ("?" + r["query"] if r["query"] else ""),
            s_body.get(seq) or None)].append(seq)

problems = []
clients = collections.OrderedDict()
for r in reqs:
    rs = resp[r["seq"]]
    body = json.loads(r["body"]) if r["body"] else None
    ex = {"client_seq": r["seq"], "local_port": rs["local_port"], "method": r["method"], "target": r["path"],
          "request_headers": r["headers"], "jsonrpc": summarize(body) if body else None,
          "status": rs["status"], "response_content_type": rs["content_type"]}
    raw = rbody.get(r["seq"], b"")
    if r["method"] == "GET":
        evs, comments, partial = sse_events(raw)
        ex["sse_bytes_read"] = len(raw)
        ex["sse_comments"] = len(comments)
        ex["framing"] = "CRLF" if b"\r\n" in raw else "LF"
        ex["events"] = []
        for e in evs:
            item = {"event": e["event"], "id": e["id"]}
            if e["event"] == "endpoint":
                item["data"] = e["data"]
            else:
                item["message"] = summarize(json.loads(e["data"]))
            ex["events"].append(item)
    else:
        ex["response_body"] = raw.decode("utf-8", "replace")
    cand = by_key.get((rs["local_port"], r["method"], r["path"], r["body"]), [])
    if len(cand) != 1:
        problems.append("client seq %d: %d server records" % (r["seq"], len(cand)))
    else:
        sseq = cand[0]
        ex["server_seq"] = sseq
        if s_start[sseq]["status"] != rs["status"]:
            problems.append("status differs on client seq %d" % r["seq"])
        # the client closes its GET /sse itself: it has read everything the server wrote
        if s_out.get(sseq, b"") != raw:
            problems.append("bytes differ on client seq %d (%d server, %d client)" % (
                r["seq"], len(s_out.get(sseq, b"")), len(raw)))
    clients.setdefault(r["client"], []).append(ex)

out_clients = []
all_sids = []
for c, exs in clients.items():
    gets = [ex for ex in exs if ex["method"] == "GET"]
    posts = [ex for ex in exs if ex["method"] == "POST"]
    if len(gets) != 1:
        problems.append("%s: %d GET /sse" % (c, len(gets)))
        continue
    g = gets[0]
    endpoint = g["events"][0]
    if endpoint["event"] != "endpoint":
        problems.append("%s: first event is not endpoint" % c)
    sid = parse_qs(urlparse(endpoint["data"]).query)["session_id"][0]
    all_sids.append(sid)
    if created.get(c) != sid:
        problems.append("%s: on_session_created %s vs endpoint %s" % (c, created.get(c), sid))
    for p in posts:
        if parse_qs(urlparse(p["target"]).query).get("session_id") != [sid]:
            problems.append("%s: POST %s not to its own session" % (c, p["target"]))
        if p["status"] != 202:
            problems.append("%s: POST seq %d answered %s" % (c, p["client_seq"], p["status"]))
    req_ids = [p["jsonrpc"]["id"] for p in posts if p["jsonrpc"]["kind"] == "request"]
    msgs = [e["message"] for e in g["events"][1:]]
    resp_ids = [m["id"] for m in msgs if m["kind"] in ("response", "error")]
    if sorted(req_ids) != sorted(resp_ids):
        problems.append("%s: requests %s, responses on its stream %s" % (c, req_ids, resp_ids))
    k = int(c.split("-")[1])
    # every tool result on this stream is this client's own (a = k in every call)
    want = {p["jsonrpc"]["id"]: p["jsonrpc"] for p in posts if p["jsonrpc"].get("method") == "tools/call"}
    for m in msgs:
        if m["kind"] == "response" and m["id"] in want and want[m["id"]]["tool"] in ("add", "slow_add"):
            a = want[m["id"]]["arguments"]
            if m["text"] != [str(a["a"] + a["b"])] or a["a"] != k:
                problems.append("%s: response %s carries %s" % (c, m["id"], m["text"]))
    out_clients.append({
        "client": c,
        "client_info_name": "mcpf-legacy-sse-%s" % c,
        "session_id": sid,
        "endpoint_event_data": endpoint["data"],
        "get_sse": {"client_seq": g["client_seq"], "local_port": g["local_port"], "status": g["status"],
                    "content_type": g["response_content_type"], "framing": g["framing"],
                    "event_count": len(g["events"]), "sse_comments": g["sse_comments"],
                    "closed_by": "client (at the end of its run)"},
        "post_local_ports": sorted({p["local_port"] for p in posts}),
        "http_request_count": len(exs),
        "request_ids": req_ids,
        "posted_messages": [dict(p["jsonrpc"], client_seq=p["client_seq"], local_port=p["local_port"],
                                 status=p["status"]) for p in posts],
        "stream_events": g["events"],
        "response_ids_on_its_stream": resp_ids,
        "progress_notifications_on_its_stream": sum(1 for m in msgs if m.get("method") == "notifications/progress"),
        "tool_results": results.get(c),
        "progress_seen": progress.get(c),
    })

if len(set(all_sids)) != len(all_sids) or len(all_sids) < 4:
    problems.append("session ids: %s" % all_sids)
n_http = len(reqs)
if len(s_req) != n_http:
    problems.append("server saw %d requests, clients sent %d" % (len(s_req), n_http))
conns = sorted({ex["local_port"] for exs in clients.values() for ex in exs})
methods = collections.Counter(ex["jsonrpc"]["method"] for exs in clients.values() for ex in exs if ex["jsonrpc"])

truth = {
    "capture": "legacy-sse-concurrent.pcap",
    "source": "clients' tapping httpx2 transport log (requests, local ports, every byte read incl. the whole "
              "GET /sse streams) + server ASGI log (peer ports, bodies, every byte sent); cross-checked; not the pcap",
    "server": "127.0.0.1:%d" % port,
    "sdk": {"python": {"package": "mcp", "version": "2.3.0"}},
    "server_setup": "MCPServer.sse_app(sse_path='/sse', message_path='/messages/') under uvicorn (as run('sse'))",
    "client_setup": "%d x mcp.Client(sse_client(URL), mode='legacy', cache=None) in one process, each with its own "
                    "httpx2 connection pool, all from 127.0.0.1, running at the same time" % len(out_clients),
    "transport": "legacy HTTP+SSE (2024-11-05 transport); no Mcp-Session-Id header; the session lives in the "
                 "endpoint URI's session_id query parameter; events carry no ids",
    "protocol_version_in_initialize": sorted({m["protocolVersion"] for c in out_clients for e in c["stream_events"]
                                              for m in [e.get("message") or {}] if "protocolVersion" in m}),
    "client_count": len(out_clients),
    "session_ids": all_sids,
    "tcp_connection_count": len(conns),
    "http_request_count": n_http,
    "http_response_count": n_http,
    "http_requests_by_method": dict(collections.Counter(ex["method"] for exs in clients.values() for ex in exs)),
    "jsonrpc_methods_posted": dict(sorted(methods.items())),
    "clients": out_clients,
    "expected_analysis": {
        "transport": "legacy-sse",
        "sessions": len(out_clients),
        "session_keys": all_sids,
        "max_finding_severity": "info",
        "each_session": "one GET /sse whose first event is `endpoint` naming /messages/?session_id=<its id>, "
                        "its POSTs (all 202) and the responses on its own stream; none mixed across sessions",
        "must_not_report": ["reused_request_id (ids 1..8 recur only across sessions)", "duplicate_response",
                            "unanswered_request", "sse_fallback (no Streamable HTTP attempt was made)",
                            "response_on_get_stream (legacy streams carry responses by design)",
                            "retry_without_idempotency_key (no request is ever re-sent; no session re-initializes)"],
        "resumption_verdict": "not_attempted",
    },
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
if problems:
    print("truth.py: the run is not as expected:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("truth.py: %d sessions %s, %d connections, %d HTTP requests" % (len(all_sids), all_sids, len(conns), n_http))
