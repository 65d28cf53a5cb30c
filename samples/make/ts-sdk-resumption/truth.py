#!/usr/bin/env python3
"""Build ts-sdk-resumption.truth.json from the client's, the relay's and the server's own
logs (never from the pcap).

usage: truth.py CLIENT_LOG SERVER_LOG RELAY_LOG OUT RELAY_PORT SERVER_PORT
"""
import json
import re
import sys

cl_path, sv_path, rl_path, out_path = sys.argv[1:5]
relay_port, server_port = int(sys.argv[5]), int(sys.argv[6])
load = lambda p: [json.loads(l) for l in open(p)]
cl, sv, rl = load(cl_path), load(sv_path), load(rl_path)

reqs = [e for e in cl if e["ev"] == "http_request"]
resp = {e["seq"]: e for e in cl if e["ev"] == "http_response"}
events_by_seq = {}
for e in cl:
    if e["ev"] == "sse_event":
        events_by_seq.setdefault(e["seq"], []).append(e)

session_id = next(e["session_id"] for e in sv if e["ev"] == "session")
http_requests, client_messages = [], []
seq_of_request_id = {}
for r in reqs:
    item = {"seq": r["seq"], "method": r["method"], "last_event_id": r["last_event_id"],
            "mcp_session_id": r["mcp_session_id"], "status": resp.get(r["seq"], {}).get("status"),
            "response_content_type": resp.get(r["seq"], {}).get("content_type"),
            "sse_event_ids_received": [e["id"] for e in events_by_seq.get(r["seq"], []) if "id" in e]}
    if r["body"] is not None:
        b = r["body"]
        msg = {"method": b.get("method"), "kind": "request" if "id" in b else "notification"}
        if "id" in b:
            msg["id"] = b["id"]
            seq_of_request_id[json.dumps(b["id"])] = r["seq"]
        client_messages.append(msg)
        item["jsonrpc"] = msg
    http_requests.append(item)

# every event id the server minted, in order, with its stream and where the client got it
received_on = {}
for seq, evs in events_by_seq.items():
    for e in evs:
        if "id" in e:
            received_on.setdefault(e["id"], []).append(seq)
stores = [e for e in sv if e["ev"] == "store"]
stream_first_post = {}
for s in stores:  # a POST stream's first event is received on its POST
    seqs = received_on.get(s["event_id"], [])
    if s["stream_id"] not in stream_first_post and seqs:
        stream_first_post[s["stream_id"]] = seqs[0]
minted = []
for s in stores:
    m = {"event_id": s["event_id"], "stream_id": s["stream_id"],
         "origin_http_request_seq": stream_first_post.get(s["stream_id"]),
         "priming": s["priming"], "received_on_http_request_seq": received_on.get(s["event_id"], [])}
    if not s["priming"]:
        m["message"] = {k: s[k] for k in ("kind", "method", "id", "progress") if k in s}
    minted.append(m)

id_re = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}_\d{13}_[0-9a-z]{1,8}$")
assert all(id_re.match(m["event_id"]) for m in minted), "unexpected id shape"
assert all(m["event_id"].split("_")[0] == m["stream_id"] for m in minted)

resume_reqs = [r for r in reqs if r["method"] == "GET" and r["last_event_id"]]
assert len(resume_reqs) == 1, resume_reqs
rr = resume_reqs[0]
replay = next(e for e in sv if e["ev"] == "replay")
cut = next(e for e in rl if e["ev"] == "reset")
target_relay_conn = next(e for e in rl if e["ev"] == "closed" and e["conn"] == cut["conn"])
tool_seq = seq_of_request_id[json.dumps(next(m["id"] for m in client_messages
                                              if m["method"] == "tools/call"))]
cut_stream = rr["last_event_id"].split("_")[0]
got_before = [e["id"] for e in events_by_seq.get(tool_seq, []) if "id" in e]
got_after = [e["id"] for e in events_by_seq.get(rr["seq"], []) if "id" in e]
replayed_ids = [x["event_id"] for x in replay["replayed"]]
stream_ids = [m["event_id"] for m in minted if m["stream_id"] == cut_stream]
assert got_before + got_after == stream_ids, "client did not get every event of the cut stream exactly once"
assert got_after[:len(replayed_ids)] == replayed_ids
result = next(e for e in cl if e["ev"] == "result" and e["what"] == "tools/call countdown")
disc = next(e for e in cl if e["ev"] == "transport_error" and "disconnected" in e["error"])
retry_ms = sorted({e["retry"] for e in cl if e["ev"] == "sse_event" and "retry" in e})

truth = {
    "capture": "ts-sdk-resumption.pcap",
    "also": ["ts-sdk-resumption-server-leg.pcap: the relay<->server leg on port %d, same run" % server_port],
    "source": "client fetch-wrapper log, relay log, server EventStore/HTTP log; not the pcap",
    "client_to_relay": "127.0.0.1:%d" % relay_port,
    "relay_to_server": "127.0.0.1:%d" % server_port,
    "endpoint": "/mcp",
    "sdk": {"typescript": {"package": "@modelcontextprotocol/sdk", "version": "1.32.2"}},
    "transport": "streamable-http, sessions, SSE responses, SDK example InMemoryEventStore, retryInterval 500 ms",
    "negotiated_protocol_version": next(e["protocol_version"] for e in cl if e["ev"] == "connected"),
    "session_id": session_id,
    "http_request_count": len(reqs),
    "http_requests": http_requests,
    "client_messages": client_messages,
    "request_ids": [m["id"] for m in client_messages if "id" in m],
    "sse_events_minted": minted,
    "sse_event_ids_in_order": [m["event_id"] for m in minted],
    "priming_event_ids": [m["event_id"] for m in minted if m["priming"]],
    "resumption": {
        "cut_tcp_connection": {"client_port": cut["client_port"], "relay_port": relay_port,
                               "how": "relay sent RST to the client (and to the server) %s events after the tools/call POST" % target_relay_conn["events_forwarded_after_match"],
                               "server_leg_local_port": cut["upstream_local_port"],
                               "http_requests_on_it": target_relay_conn["request_lines"]},
        "cut_request": {"http_request_seq": tool_seq, "jsonrpc_id": next(m["id"] for m in client_messages if m["method"] == "tools/call")},
        "stream_id": cut_stream,
        "event_ids_received_before_cut": got_before,
        "last_event_id_sent": rr["last_event_id"],
        "resume_http_request_seq": rr["seq"],
        "resume_status": resp[rr["seq"]]["status"],
        "client_saw_disconnect_error": disc["error"],
        "server_retry_ms_seen_by_client": retry_ms,
        "reconnect_delay_ms": round((rr["t"] - disc["t"]) * 1000),
        "replayed_event_ids": replayed_ids,
        "live_event_ids_after_replay": got_after[len(replayed_ids):],
        "event_ids_delivered_after_resume": got_after,
        "response_delivered_on_resume": True,
        "progress_seen_by_client": result["progress"],
        "tool_result": result["content"],
    },
    "expected_analysis": {
        "resumption_verdict": "safe",
        "event_id_namespacing": "TS POST-stream ids <streamUUID>_<13-digit ms>_<base36>; prefix = stream id; "
                                "resume GET inherits the cut POST stream's namespace",
        "notes": "one cut POST stream (RST mid-stream, response body incomplete), resumed by GET with Last-Event-ID "
                 "= last id received; replay keeps original ids, no gap, no duplicate, no cross-stream event; the "
                 "replayed stream is not re-primed (TS); client reconnect honours retry: 500",
    },
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
