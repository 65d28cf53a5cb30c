#!/usr/bin/env python3
"""Build python-sdk-healthy.truth.json from the client's HTTP log and the server's
event-store log (never from the pcap).

usage: truth.py CLIENT_LOG EVENT_LOG OUT PORT
"""
import json
import sys

client_log, event_log, out_path, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cl = [json.loads(l) for l in open(client_log)]
ev = [json.loads(l) for l in open(event_log)]

reqs = [e for e in cl if e["ev"] == "http_request"]
resps = {e["seq"]: e for e in cl if e["ev"] == "http_response"}
session_ids = {e["mcp_session_id"] for e in cl if e["ev"] == "http_response" and e["mcp_session_id"]}
assert len(session_ids) == 1, session_ids
session_id = session_ids.pop()
token = reqs[0]["authorization"]
assert all(r["authorization"] == token for r in reqs)

http_requests = []
client_messages = []
post_seq_by_id = {}
for r in reqs:
    resp = resps.get(r["seq"], {})
    item = {"seq": r["seq"], "method": r["method"], "path": "/mcp",
            "mcp_session_id": r["mcp_session_id"], "mcp_protocol_version": r["mcp_protocol_version"],
            "last_event_id": r["last_event_id"], "status": resp.get("status"),
            "response_content_type": resp.get("content_type")}
    if r["body"] is not None:
        b = r["body"]
        msg = {"method": b.get("method"), "id": b.get("id"), "kind": "request" if "id" in b else "notification"}
        if "id" not in b:
            del msg["id"]
        client_messages.append(msg)
        item["jsonrpc"] = msg
        if "id" in b:
            post_seq_by_id[str(b["id"])] = r["seq"]
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
         "priming": e["priming"]}
    if not e["priming"]:
        x["message"] = {k: e[k] for k in ("kind", "method", "id", "progress") if e.get(k) is not None}
    sse_events.append(x)

results = [e for e in cl if e["ev"] == "result"]
truth = {
    "capture": "python-sdk-healthy.pcap",
    "also": ["python-sdk-healthy.pcapng (editcap -F pcapng of the same file)",
             "python-sdk-healthy-any.pcap (second tcpdump, -i any, Linux cooked v2, same run)"],
    "source": "client httpx event hooks (what the client sent) + server EventStore log (ids the server minted); not the pcap",
    "server": "127.0.0.1:%d" % port,
    "endpoint": "/mcp",
    "sdk": {"python": {"package": "mcp", "version": "2.3.0"}},
    "transport": "streamable-http (SSE responses, sessions, event store with uuid4 ids)",
    "negotiated_protocol_version": reqs[1]["mcp_protocol_version"],
    "session_id": session_id,
    "authorization_header_value": token,
    "secret_that_must_be_redacted": token.split(" ", 1)[1],
    "http_request_count": len(reqs),
    "http_requests": http_requests,
    "client_messages": client_messages,
    "sse_events_minted": sse_events,
    "sse_event_ids_in_order": [e["event_id"] for e in sse_events],
    "priming_event_ids": [e["event_id"] for e in sse_events if e["priming"]],
    "last_event_id_sent": [r["last_event_id"] for r in reqs if r["last_event_id"]],
    "tool_results": [{k: v for k, v in r.items() if k not in ("ev", "t")} for r in results],
    "expected_analysis": {
        "resumption_verdict": "not_attempted",
        "max_finding_severity": "info",
        "notes": "healthy session: every request answered on its own POST stream, each POST stream primed "
                 "(id + empty data), no Last-Event-ID, session ended by DELETE 200; standalone GET stream "
                 "carries no events and is not primed; SSE framing is CRLF (sse-starlette)",
    },
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
