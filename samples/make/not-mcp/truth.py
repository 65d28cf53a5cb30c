#!/usr/bin/env python3
"""Build not-mcp.truth.json from the clients' own records (every exchange with its local port,
request, response head and body; every SSE (re)connect, event and comment) and the server's
(every request with its peer port, every byte it wrote) — never from the pcap. Fails if they
disagree.

usage: truth.py CLIENT_LOG SERVER_LOG OUT JSONRPC_PORT SSE_PORT REST_PORT
"""
import base64
import collections
import json
import sys

cl_path, sv_path, out_path = sys.argv[1:4]
ports = {"jsonrpc": int(sys.argv[4]), "sse": int(sys.argv[5]), "rest": int(sys.argv[6])}
load = lambda p: [json.loads(l) for l in open(p) if l.strip()]
cl, sv = load(cl_path), load(sv_path)
problems = []

s_req = [e for e in sv if e["ev"] == "http_request"]
s_resp = {e["seq"]: e for e in sv if e["ev"] == "http_response"}
s_bytes = collections.defaultdict(bytearray)
for e in sv:
    if e["ev"] == "http_response_bytes":
        s_bytes[e["seq"]].extend(base64.b64decode(e["b64"]))
s_by_key = collections.defaultdict(list)
for r in s_req:
    s_by_key[(r["peer_port"], r["method"], r["target"], r["body"])].append(r["seq"])


def server_side(port, method, path, body):
    c = s_by_key.get((port, method, path, body), [])
    if len(c) != 1:
        problems.append("%s %s from port %s: %d server records" % (method, path, port, len(c)))
        return None
    return c[0]


def jsonrpc_summary(m):
    if isinstance(m, list):
        return {"batch": [jsonrpc_summary(x) for x in m]}
    if not isinstance(m, dict):
        return {"not_an_object": True}
    s = {}
    for k in ("id", "method"):
        if k in m:
            s[k] = m[k]
    if "method" in m and "id" not in m:
        s["notification"] = True
    if "result" in m:
        s["result"] = m["result"] if not isinstance(m["result"], dict) else {"keys": sorted(m["result"])}
    if "error" in m:
        s["error"] = m["error"]
    return s


exchanges = []
for e in cl:
    if e["ev"] != "exchange":
        continue
    svc = "jsonrpc" if e["client"].startswith("wallet") else "rest"
    raw = base64.b64decode(e["response_b64"])
    x = {"client": e["client"], "client_seq": e["seq"], "service": svc, "server": "127.0.0.1:%d" % ports[svc],
         "local_port": e["local_port"], "method": e["method"], "path": e["path"],
         "request_content_type": e["request_headers"].get("Content-Type"),
         "connection_close": e["request_headers"].get("Connection") == "close",
         "status": e["status"], "response_content_type": e["response_headers"].get("content-type"),
         "response_content_length": int(e["response_headers"].get("content-length", "0"))}
    body = e["request_body"]
    if svc == "jsonrpc":
        try:
            x["jsonrpc_request"] = jsonrpc_summary(json.loads(body))
        except ValueError:
            x["jsonrpc_request"] = {"unparsable_body": body}
        x["jsonrpc_response"] = jsonrpc_summary(json.loads(raw)) if raw else None
    else:
        x["request_json"] = json.loads(body) if body else None
        x["response_json"] = json.loads(raw) if raw else None
    sseq = server_side(e["local_port"], e["method"], e["path"], body)
    if sseq is not None:
        x["server_seq"] = sseq
        head, _, sbody = bytes(s_bytes[sseq]).partition(b"\r\n\r\n")
        if sbody != raw or s_resp[sseq]["status"] != e["status"]:
            problems.append("client seq %d: response differs from what the server wrote" % e["seq"])
    exchanges.append(x)

sse = []
by_conn = collections.OrderedDict()
for e in cl:
    if e["ev"] == "sse_connect":
        by_conn[(e["client"], e["seq"])] = {"client": e["client"], "client_seq": e["seq"], "service": "sse",
                                            "server": "127.0.0.1:%d" % ports["sse"], "attempt": e["attempt"],
                                            "local_port": e["local_port"], "method": "GET", "path": "/prices",
                                            "last_event_id_sent": e["last_event_id"], "events": [],
                                            "comments": []}
    elif e["ev"] in ("sse_head", "sse_event", "sse_comment", "sse_end"):
        c = by_conn[(e["client"], e["seq"])]
        if e["ev"] == "sse_head":
            c["status_line"] = e["status_line"]
            c["response_headers"] = e["headers"]
        elif e["ev"] == "sse_event":
            c["events"].append({"event": e["event"], "id": e["id"], "data": e["data"]})
        elif e["ev"] == "sse_comment":
            c["comments"].append(e["comment"])
        else:
            c["end"] = e["reason"]
            c["retry_ms"] = e["retry_ms"]
            c["body_bytes_read"] = len(base64.b64decode(e["body_b64"]))
            c["_raw"] = base64.b64decode(e["body_b64"])
for c in by_conn.values():
    sseq = server_side(c["local_port"], "GET", "/prices", None)
    raw = c.pop("_raw", b"")
    if sseq is not None:
        c["server_seq"] = sseq
        head, _, sbody = bytes(s_bytes[sseq]).partition(b"\r\n\r\n")
        if not sbody.startswith(raw):
            problems.append("ticker seq %d: client bytes are not a prefix of the server's" % c["client_seq"])
        c["server_wrote_bytes"] = len(sbody)
        c["server_wrote_event_ids"] = [str(x["id"]) for x in sv if x["ev"] == "sse_event_sent" and x["seq"] == sseq]
        if c["server_wrote_event_ids"][:len(c["events"])] != [ev["id"] for ev in c["events"]]:
            problems.append("ticker seq %d: events read are not the first ones written" % c["client_seq"])
        cut = next((x for x in sv if x["ev"] == "cut" and x["seq"] == sseq), None)
        if cut:
            c["cut_by_server"] = {"after_id": str(cut["after_id"]), "how": cut["how"]}
    c["event_ids"] = [ev["id"] for ev in c["events"]]
    sse.append(c)

res = [c for c in sse if c["client"] == "ticker-resume"]
if [c["event_ids"] for c in res] != [[str(i) for i in range(1, 6)], [str(i) for i in range(6, 11)]] or \
        res[1]["last_event_id_sent"] != "5":
    problems.append("ticker-resume did not go 1..5, cut, Last-Event-ID 5, 6..10: %s" % [c["event_ids"] for c in res])
plain = [c for c in sse if c["client"] == "ticker-plain"]
if [c["event_ids"] for c in plain] != [[str(i) for i in range(1, 9)]]:
    problems.append("ticker-plain: %s" % [c["event_ids"] for c in plain])

# one list per client, in the order each client made them (the threads interleave differently each run)
exchanges.sort(key=lambda x: (x["client"], x["client_seq"]))
sse.sort(key=lambda c: (c["client"], c["attempt"]))
n_http = len(exchanges) + len(sse)
if len(s_req) != n_http:
    problems.append("server saw %d requests, clients made %d" % (len(s_req), n_http))
conns = sorted({x["local_port"] for x in exchanges} | {c["local_port"] for c in sse})
per_service = collections.Counter(x["service"] for x in exchanges + sse)
rpc_methods = collections.Counter()
for x in exchanges:
    r = x.get("jsonrpc_request") or {}
    for item in r.get("batch", [r]):
        if "method" in item:
            rpc_methods[item["method"]] += 1

truth = {
    "capture": "not-mcp.pcap",
    "source": "clients' own records (local port, request, response head and body, SSE events) + server records "
              "(peer port, request, every byte written); cross-checked; not the pcap",
    "services": {
        "jsonrpc": {"server": "127.0.0.1:%d" % ports["jsonrpc"], "what": "Ethereum-style JSON-RPC 2.0 over HTTP POST / "
                    "(application/json), batches, errors; not MCP (no initialize, no MCP methods, no MCP headers)"},
        "sse": {"server": "127.0.0.1:%d" % ports["sse"], "what": "stock ticker GET /prices, text/event-stream, chunked, "
                "retry: 300, event: price, integer id:, JSON data that is not JSON-RPC, ': keep-alive' comments; "
                "honours Last-Event-ID"},
        "rest": {"server": "127.0.0.1:%d" % ports["rest"], "what": "plain JSON REST (GET/POST, 200/201/404)"},
    },
    "clients": sorted({x["client"] for x in exchanges + sse}),
    "tcp_connection_count": len(conns),
    "http_request_count": n_http,
    "http_requests_by_service": dict(per_service),
    "http_responses_complete": len(exchanges),
    "sse_streams": len(sse),
    "sse_streams_note": "the ticker bodies are chunked and never terminated (client closed or server reset): "
                        "tshark with default preferences does not count their responses. After a client closed, "
                        "the server still wrote one more event (server_wrote_event_ids) before it saw the close: "
                        "those bytes are on the wire (answered by the client's RST) but were never read",
    "jsonrpc_methods": dict(sorted(rpc_methods.items())),
    "jsonrpc_batches": sum(1 for x in exchanges if "batch" in (x.get("jsonrpc_request") or {})),
    "exchanges": exchanges,
    "sse_connections": sse,
    "resume": {"client": "ticker-resume", "cut_after_event_id": "5", "cut": "server reset the connection (RST)",
               "reconnect_after_ms": res[0]["retry_ms"] if res else None, "last_event_id_sent": "5",
               "resumed_with_ids": res[1]["event_ids"] if len(res) > 1 else None,
               "note": "a correct, same-stream resume of a non-MCP feed: not an MCP finding of any kind"},
    "expected": {
        "mcp_sessions": 0,
        "mcp_exchanges": 0,
        "findings": [],
        "http_exchanges": n_http,
        "analyzer_must": "count all of it as non-MCP HTTP; no MCP session (not even a 'stateless MCP session' for "
                         "the JSON-RPC POSTs or the SSE feed), no finding of any severity; JSON-RPC ids 1..8 recur "
                         "across the three wallets, the ticker's Last-Event-ID resume is not an MCP resume",
    },
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
if problems:
    print("truth.py: the run is not as expected:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("truth.py: %d HTTP requests (%s), %d connections, %d SSE streams" % (n_http, dict(per_service), len(conns), len(sse)))
