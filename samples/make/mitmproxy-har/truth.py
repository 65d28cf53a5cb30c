#!/usr/bin/env python3
"""Build mitmproxy-python-sdk.truth.json from the client's HTTP log and the server's event-store
log (never from the HAR).

usage: truth.py CLIENT_LOG EVENT_LOG OUT SERVER_PORT PROXY_PORT MITMPROXY_VERSION
"""
import json
import sys

client_log, event_log, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
server_port, proxy_port, mitm_version = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
cl = [json.loads(l) for l in open(client_log)]
ev = [json.loads(l) for l in open(event_log)]

reqs = [e for e in cl if e["ev"] == "http_request"]
resps = {e["seq"]: e for e in cl if e["ev"] == "http_response"}
session_ids = {e["mcp_session_id"] for e in cl if e["ev"] == "http_response" and e["mcp_session_id"]}
assert len(session_ids) == 1, session_ids
session_id = session_ids.pop()
token = reqs[0]["authorization"]
cookie = reqs[0]["cookie"]
assert all(r["authorization"] == token and r["cookie"] == cookie for r in reqs)

http_requests = []
post_seq_by_id = {}
for r in reqs:
    resp = resps.get(r["seq"], {})
    item = {"seq": r["seq"], "method": r["method"], "path": "/mcp", "accept": r["accept"],
            "mcp_session_id": r["mcp_session_id"], "mcp_protocol_version": r["mcp_protocol_version"],
            "last_event_id": r["last_event_id"], "status": resp.get("status"),
            "response_content_type": resp.get("content_type"),
            "response_mcp_session_id": resp.get("mcp_session_id")}
    if r["body"] is not None:
        b = r["body"]
        msg = {"method": b.get("method"), "kind": "request" if "id" in b else "notification"}
        if "id" in b:
            msg["id"] = b["id"]
            post_seq_by_id[str(b["id"])] = r["seq"]
        item["jsonrpc"] = msg
    http_requests.append(item)

get_seq = [r["seq"] for r in reqs if r["method"] == "GET"]
sse_events = []
for e in ev:
    if e["ev"] != "store":
        continue
    sid = e["stream_id"]
    x = {"event_id": e["event_id"], "stream_id": sid,
         "http_request_seq": post_seq_by_id.get(sid) if sid != "_GET_stream" else (get_seq[0] if get_seq else None),
         "stream_kind": "standalone GET" if sid == "_GET_stream" else "POST",
         "priming": e["priming"], "stored_at": e["t"]}
    if not e["priming"]:
        x["message"] = {k: e[k] for k in ("kind", "method", "id", "progress") if e.get(k) is not None}
    sse_events.append(x)

events_by_seq = {}
for e in sse_events:
    events_by_seq.setdefault(e["http_request_seq"], []).append(e["event_id"])
for item in http_requests:
    item["sse_event_ids"] = events_by_seq.get(item["seq"], [])

results = [e for e in cl if e["ev"] == "result"]
truth = {
    "scenario": "mitmproxy-python-sdk",
    "har": "mitmproxy-python-sdk.har",
    "also": ["mitmproxy-python-sdk.sanitized.har (Chrome-style sanitized copy made by "
             "samples/make/mitmproxy-har/sanitize.py: no Authorization, Cookie or Set-Cookie, "
             "the SSE body of the slow_count call dropped)"],
    "generated_by": "samples/make/mitmproxy-har.sh",
    "recorded_by": "client httpx event hooks (what the client sent and the response heads it got) + "
                   "server EventStore log (event ids the server minted); not the HAR",
    "topology": {"client": "127.0.0.1:<ephemeral>",
                 "mitmproxy": "127.0.0.1:%d (mitmdump --mode reverse, hardump, record_sse.py addon)" % proxy_port,
                 "server": "127.0.0.1:%d" % server_port},
    "mitmproxy_version": mitm_version,
    "endpoint": "/mcp",
    "sdk": {"python": {"package": "mcp", "version": "2.3.0"}},
    "transport": "streamable-http (SSE responses, sessions, event store with uuid4 ids)",
    "negotiated_protocol_version": reqs[1]["mcp_protocol_version"],
    "session_id": session_id,
    "authorization_header_value": token,
    "cookie_header_value": cookie,
    "secrets_that_must_be_redacted": [token.split(" ", 1)[1], cookie.split("=", 1)[1]],
    "http_request_count": len(reqs),
    "har_entry_count": len(reqs),
    "http_requests": http_requests,
    "sse_events_minted": sse_events,
    "priming_event_ids": [e["event_id"] for e in sse_events if e["priming"]],
    "tool_results": [{k: v for k, v in r.items() if k not in ("ev", "t")} for r in results],
    "notes": "healthy session through a recording reverse proxy: every POST answered on its own primed "
             "SSE stream (id + empty data), notifications get 202, the standalone GET stream carries no "
             "events and is ended by the client at close (mitmproxy records it with the bytes it saw), "
             "DELETE 200 ends the session; SSE framing is CRLF with sse-starlette",
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
