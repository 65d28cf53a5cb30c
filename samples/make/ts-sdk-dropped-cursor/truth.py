#!/usr/bin/env python3
"""Build ts-sdk-dropped-cursor.truth.json from the client's, the relay's and the server's own
logs (never from the pcap). Fails if the run did not show typescript-sdk #2499 (one resume with
Last-Event-ID whose stream died before any event id, then reconnect GETs without it, answered 409,
and the tools/call never answered on the client).

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
ids_on = lambda seq: [e["id"] for e in events_by_seq.get(seq, []) if "id" in e]

# the server's view of each request, matched to the client's in order by what was sent
sv_reqs = [e for e in sv if e["ev"] == "http_request"]
sv_done = [e for e in sv if e["ev"] == "http_done"]
sig = lambda e: (e["method"], e["last_event_id"], json.dumps(e["body"], sort_keys=True))
assert [sig(r) for r in reqs] == [sig(r) for r in sv_reqs], "client and server saw different requests"
server_status = {}
for r, s in zip(reqs, sv_reqs):
    done = [d for d in sv_done if d["peer_port"] == s["peer_port"] and sig(d) == sig(s) and d["t"] >= s["t"]]
    server_status[r["seq"]] = min(done, key=lambda d: d["t"])["status"] if done else None

# the relay's two cuts, tied to the client's requests
cuts = {e["cut"]: e for e in rl if e["ev"] == "reset"}
targets = {e["cut"]: e for e in rl if e["ev"] == "target"}
relay_conn = {e["conn"]: e for e in rl if e["ev"] == "closed"}
id_line = re.compile(r"^id: ?(.*)$", re.M)

session_id = next(e["session_id"] for e in sv if e["ev"] == "session")
http_requests, client_messages = [], []
seq_of_request_id = {}
for r in reqs:
    item = {"seq": r["seq"], "method": r["method"], "last_event_id": r["last_event_id"],
            "mcp_session_id": r["mcp_session_id"], "status": resp.get(r["seq"], {}).get("status"),
            "server_status": server_status[r["seq"]],
            "response_content_type": resp.get(r["seq"], {}).get("content_type"),
            "sse_event_ids_received": ids_on(r["seq"])}
    if r["body"] is not None:
        b = r["body"]
        msg = {"method": b.get("method"), "kind": "request" if "id" in b else "notification"}
        if "id" in b:
            msg["id"] = b["id"]
            seq_of_request_id[json.dumps(b["id"])] = r["seq"]
        if b.get("method") == "notifications/cancelled":
            msg["params"] = {"requestId": b["params"]["requestId"], "reason": b["params"].get("reason")}
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

# --- the incident
call = next(m for m in client_messages if m["method"] == "tools/call")
call_id = call["id"]
tool_seq = seq_of_request_id[json.dumps(call_id)]
got_on_post = ids_on(tool_seq)
resumes = [r for r in reqs if r["method"] == "GET" and r["last_event_id"]]
assert len(resumes) == 1, resumes
rr = resumes[0]
cursor = got_on_post[-1]
assert rr["last_event_id"] == cursor, "the resume did not carry the last id the client held"
assert resp[rr["seq"]]["status"] == 200 and ids_on(rr["seq"]) == [], "the resumed stream was not empty"
assert targets["resumed_get"]["last_event_id"] == cursor
cursorless = [r for r in reqs if r["method"] == "GET" and not r["last_event_id"] and r["seq"] > rr["seq"]]
assert len(cursorless) == 2 and all(resp[r["seq"]]["status"] == 409 for r in cursorless), cursorless
standalone = [r for r in reqs if r["method"] == "GET" and r["seq"] < tool_seq]
assert len(standalone) == 1 and resp[standalone[0]["seq"]]["status"] == 200
replay = next(e for e in sv if e["ev"] == "replay")
assert replay["last_event_id"] == cursor
cut_stream = cursor.split("_")[0]
stream_events = [m for m in minted if m["stream_id"] == cut_stream]
response_event = next(m for m in stream_events if not m["priming"] and m["message"].get("kind") == "response")
assert response_event["message"]["id"] == call_id and response_event["received_on_http_request_seq"] == []
answered = {e["message"].get("id") for e in cl if e["ev"] == "sse_event" and e.get("message")
            and e["message"].get("method") is None}
assert call_id not in answered
failed = next(e for e in cl if e["ev"] == "call_failed")
assert failed["code"] == -32001, failed
cancelled = next(m for m in client_messages if m["method"] == "notifications/cancelled")
cancel_seq = next(r["seq"] for r in reqs if (r["body"] or {}).get("method") == "notifications/cancelled")
assert cancelled["params"]["requestId"] == call_id
errors = [e for e in cl if e["ev"] == "transport_error"]
gave_up = next(e for e in errors if "Maximum reconnection attempts" in e["error"])
disc = [e for e in errors if e["error"].startswith("SSE stream disconnected")]
assert len(disc) == 2, disc
retry_ms = sorted({e["retry"] for e in cl if e["ev"] == "sse_event" and "retry" in e})
t_of = {r["seq"]: r["t"] for r in reqs}
swallowed_resume = id_line.findall(cuts["resumed_get"]["swallowed_text"])
post_conn = relay_conn[cuts["post_stream"]["conn"]]
resume_conn = relay_conn[cuts["resumed_get"]["conn"]]

truth = {
    "capture": "ts-sdk-dropped-cursor.pcap",
    "also": ["ts-sdk-dropped-cursor-server-leg.pcap: the relay<->server leg on port %d, same run" % server_port],
    "source": "client fetch-wrapper log, relay log, server EventStore/HTTP log; not the pcap",
    "scenario": "typescript-sdk issue #2499 with the real SDK 1.32.2: the tools/call POST stream is reset after "
                "the priming event and 2 progress events; the client resumes with GET + Last-Event-ID (the last "
                "id it held); the relay resets that resumed GET after its 200 head, before any event; the client's "
                "next reconnect GETs carry NO Last-Event-ID (the cursor is not seeded from the resumption token), "
                "the server answers both 409 (the standalone GET stream is open), the client gives up after "
                "maxRetries 2 and the tools/call is never answered (client timeout, notifications/cancelled); "
                "the server had stored the response in its EventStore, under the stream the dropped cursor names.",
    "client_to_relay": "127.0.0.1:%d" % relay_port,
    "relay_to_server": "127.0.0.1:%d" % server_port,
    "endpoint": "/mcp",
    "sdk": {"typescript": {"package": "@modelcontextprotocol/sdk", "version": "1.32.2"}},
    "transport": "streamable-http, sessions, SSE responses, SDK example InMemoryEventStore, retryInterval 500 ms; "
                 "client default reconnection options (maxRetries 2)",
    "negotiated_protocol_version": next(e["protocol_version"] for e in cl if e["ev"] == "connected"),
    "session_id": session_id,
    "http_request_count": len(reqs),
    "http_requests": http_requests,
    "client_messages": client_messages,
    "request_ids": [m["id"] for m in client_messages if "id" in m],
    "sse_events_minted": minted,
    "sse_event_ids_in_order": [m["event_id"] for m in minted],
    "priming_event_ids": [m["event_id"] for m in minted if m["priming"]],
    "dropped_cursor": {
        "standalone_get_http_request_seq": standalone[0]["seq"],
        "cut_post_stream": {"http_request_seq": tool_seq, "jsonrpc_id": call_id, "stream_id": cut_stream,
                            "client_port": cuts["post_stream"]["client_port"], "relay_port": relay_port,
                            "server_leg_local_port": cuts["post_stream"]["upstream_local_port"],
                            "how": "relay sent RST to the client (and to the server) %d events after the tools/call POST"
                                   % post_conn["events_forwarded_after_match"],
                            "http_requests_on_it": post_conn["request_lines"],
                            "event_ids_received": got_on_post},
        "resume": {"http_request_seq": rr["seq"], "last_event_id": rr["last_event_id"], "status": resp[rr["seq"]]["status"],
                   "client_port": cuts["resumed_get"]["client_port"],
                   "server_leg_local_port": cuts["resumed_get"]["upstream_local_port"],
                   "how": "relay forwarded the 200 response head only, then RST to both sides %d ms later" %
                          round((cuts["resumed_get"]["t"] - next(e["t"] for e in rl if e["ev"] == "cut_scheduled" and e["cut"] == "resumed_get")) * 1000),
                   "event_ids_received": ids_on(rr["seq"]),
                   "server_replayed_event_ids": [x["event_id"] for x in replay["replayed"]],
                   "event_ids_the_server_sent_on_it_swallowed_by_relay": swallowed_resume,
                   "delay_after_post_cut_ms": round((rr["t"] - disc[0]["t"]) * 1000)},
        "cursorless_reconnects": [{"http_request_seq": r["seq"], "last_event_id": r["last_event_id"],
                                   "status": resp[r["seq"]]["status"], "server_status": server_status[r["seq"]],
                                   "delay_ms": round((r["t"] - prev_t) * 1000)}
                                  for r, prev_t in zip(cursorless, [disc[1]["t"]] + [t_of[c["seq"]] for c in cursorless[:-1]])],
        "client_transport_errors": [e["error"] for e in errors],
        "server_transport_errors": [e["error"] for e in sv if e["ev"] == "transport_error"],
        "server_retry_ms_seen_by_client": retry_ms,
        "response_event_id_stored_by_server": response_event["event_id"],
        "event_ids_of_cut_stream_never_received": [m["event_id"] for m in stream_events
                                                   if not m["received_on_http_request_seq"]],
        "progress_seen_by_client": failed["progress"],
        "client_outcome": failed["error"],
    },
    "expected": {
        "post_stream_event_ids_received_before_cut": got_on_post,
        "resume_with_last_event_id": {"http_request_seq": rr["seq"], "last_event_id": rr["last_event_id"],
                                      "status": 200, "event_ids_received": []},
        "reconnects_without_last_event_id": [{"http_request_seq": r["seq"], "method": "GET", "last_event_id": None,
                                              "status": resp[r["seq"]]["status"]} for r in cursorless],
        "dropped_cursor": cursor,
        "dropped_cursor_stream_id": cut_stream,
        "unanswered_request": {"method": "tools/call", "id": call_id, "http_request_seq": tool_seq,
                               "client_gave_up": "timeout after 5000 ms, then notifications/cancelled (seq %d)" % cancel_seq},
        "verdict_notes": "resumption attempted and lost: after an empty resumed stream the client reconnects without "
                         "Last-Event-ID (typescript-sdk #2499); the 409s are the standalone-stream conflict, not a "
                         "replay conflict; the response of %s was minted by the server (%s) and never delivered; "
                         "the session itself stays usable (echo id %s answered, DELETE 200)"
                         % (call_id, response_event["event_id"],
                            next(m["id"] for m in client_messages if m["method"] == "tools/call" and m["id"] != call_id)),
    },
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
