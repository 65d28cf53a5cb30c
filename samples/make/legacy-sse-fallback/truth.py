#!/usr/bin/env python3
"""Build legacy-sse-fallback.truth.json from the client's fetch log and the server's ASGI
log (bytes it sent), never from the pcap.

usage: truth.py CLIENT_LOG SERVER_LOG OUT PORT
"""
import base64
import json
import re
import sys

cl_path, sv_path, out_path, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
load = lambda p: [json.loads(l) for l in open(p)]
cl, sv = load(cl_path), load(sv_path)

reqs = [e for e in cl if e["ev"] == "http_request"]
resp = {e["seq"]: e for e in cl if e["ev"] == "http_response"}
client_messages, http_requests = [], []
for r in reqs:
    item = {"seq": r["seq"], "method": r["method"], "target": r["url"].split(str(port), 1)[1],
            "status": resp[r["seq"]]["status"], "response_content_type": resp[r["seq"]]["content_type"]}
    if r["body"] is not None:
        b = r["body"]
        msg = {"method": b.get("method"), "kind": "request" if "id" in b else "notification"}
        if "id" in b:
            msg["id"] = b["id"]
        item["jsonrpc"] = msg
        item["transport_attempt"] = "streamable-http" if item["target"] == "/sse" else "legacy"
        client_messages.append(dict(msg, transport_attempt=item["transport_attempt"]))
    http_requests.append(item)

# the server's SSE bytes on the GET /sse stream, as it wrote them
sse_req = next(e for e in sv if e["ev"] == "http_request" and e["method"] == "GET" and e["path"] == "/sse")
raw = b"".join(base64.b64decode(e["b64"]) for e in sv if e["ev"] == "http_response_body" and e["seq"] == sse_req["seq"])
events = []
for block in raw.decode().split("\r\n\r\n"):
    if not block:
        continue
    ev = {}
    for line in block.split("\r\n"):
        if line.startswith(":"):
            ev.setdefault("comments", []).append(line)
            continue
        name, _, value = line.partition(":")
        ev.setdefault(name, value[1:] if value.startswith(" ") else value)
    if "data" in ev and ev.get("event") == "message":
        m = json.loads(ev["data"])
        ev["message"] = {"id": m.get("id"), "method": m.get("method"),
                         "kind": "response" if "result" in m else "error" if "error" in m else "other"}
        del ev["data"]
    events.append(ev)
endpoint = events[0]["data"]
session_id = endpoint.split("session_id=", 1)[1]
statuses = [e["status"] for e in sv if e["ev"] == "http_response_start"]

truth = {
    "capture": "legacy-sse-fallback.pcap",
    "source": "client fetch-wrapper log + server ASGI log (every response byte it sent); not the pcap",
    "server": "127.0.0.1:%d" % port,
    "sdk": {"server": {"package": "mcp (Python)", "version": "2.3.0", "transport": "legacy HTTP+SSE (sse_app, as run('sse'))"},
            "client": {"package": "@modelcontextprotocol/sdk", "version": "1.32.2",
                       "pattern": "StreamableHTTPClientTransport, then SSEClientTransport on error"}},
    "url_given_to_client": "http://127.0.0.1:%d/sse" % port,
    "fallback": {
        "streamable_http_attempt": {"method": "POST", "target": "/sse", "jsonrpc": {"method": "initialize", "id": reqs[0]["body"]["id"]},
                                    "status": resp[1]["status"]},
        "legacy_get": {"method": "GET", "target": "/sse", "status": resp[2]["status"]},
        "endpoint_event_data": endpoint,
    },
    "session_id": session_id,
    "session_key": "query parameter session_id of the POST endpoint (Python legacy transport)",
    "negotiated_protocol_version": next(r["mcp_protocol_version"] for r in reqs if r["mcp_protocol_version"]),
    "http_request_count": len(reqs),
    "http_requests": http_requests,
    "client_messages": client_messages,
    "request_ids": [m["id"] for m in client_messages if "id" in m],
    "sse_events_on_legacy_stream": events,
    "sse_event_ids": [],
    "expected_analysis": {
        "transport": "legacy HTTP+SSE after a failed Streamable HTTP attempt",
        "finding": "sse_fallback at connect: initialize POST to /sse answered 405, then GET /sse whose first event is `endpoint`",
        "resumption_verdict": "not_attempted",
        "notes": "the initialize request id 0 is sent twice (once per transport attempt, two different Client objects); "
                 "legacy events carry no ids; every message POST is 202 'Accepted'; responses arrive on the GET /sse stream; "
                 "SSE framing is CRLF (sse-starlette); the client closes the GET stream at the end (no DELETE in legacy)",
    },
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
