#!/usr/bin/env python3
"""Build late-mcp.truth.json from what the clients and the server logged during the run (never
from the capture): make/late-mcp/clients.py (late.jsonl, plain.jsonl), the official Python SDK
clients of make/concurrent-nginx/py_clients.py (py-clients.jsonl) and make/late-mcp/server.py
(server.jsonl). Checks the run did what the sample is for and exits non-zero if not:

* each `late` session rode on ONE TCP connection (one client local port, and the server saw every
  request of it from that one peer port) whose first request was `GET /download?size=N`;
* the first late session's download began before any client sent any MCP request;
* each session (late or SDK) got an answer to every request; the SDK sessions are checked healthy
  by make/_py/sdk_truth.py (every event minted seen, no resume, statuses 200/202, ...);
* the server served every plain request the clients sent, and nothing else.

usage: truth.py WORK OUT PORT
Standard library only.
"""
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import (build_client_session, checked_sdk_sessions, client_sessions,  # noqa: E402
                       dumps_compact, read_jsonl, server_sessions)

work, out_path, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
late_log = read_jsonl(os.path.join(work, "late.jsonl"))
plain_log = read_jsonl(os.path.join(work, "plain.jsonl"))
py_log = read_jsonl(os.path.join(work, "py-clients.jsonl"))
srv_log = read_jsonl(os.path.join(work, "server.jsonl"))
problems = []


def want(what, got, exp):
    if got != exp:
        problems.append("%s: got %r, expected %r" % (what, got, exp))


srv = server_sessions(srv_log)
srv_reqs = [e for e in srv_log if e["ev"] == "http_request"]
tool_calls_run = Counter((e["session_id"], e["tool"]) for e in srv_log if e["ev"] == "tool_call")


def session_record(c, kind):
    """One session as the truth lists it: what its client sent by method, each tool call and
    whether it was answered (the client read a response with its id)."""
    answered = {json.dumps(r["id"]) for r in c["responses_received"]}
    http_by_method = Counter(r["method"] for r in c["http_requests"])
    rpc_by_method = Counter(r["method"] for r in c["requests_sent"])
    rpc_by_method.update(n["method"] for n in c["notifications_sent"])
    calls = [{"id": r["id"], "tool": r.get("tool"), "answered": json.dumps(r["id"]) in answered,
              "progress_token": r.get("progressToken")} for r in c["requests_sent"] if r["method"] == "tools/call"]
    for x in calls:
        if x["progress_token"] is None:
            del x["progress_token"]
    ran = sum(v for (sid, _), v in tool_calls_run.items() if sid == c["session_id"])
    want("%s tool calls run by the server" % c["client_tag"], ran, len(calls))
    sv = srv.get(c["session_id"])
    return {
        "session_id": c["session_id"],
        "client_tag": c["client_tag"],
        "client": kind,
        "client_local_ports": c["client_leg_local_ports"],
        "server_peer_ports": sorted({r["peer_port"] for r in sv["http_requests"]}) if sv else None,
        "http_request_count": c["http_request_count"],
        "http_requests_by_method": dict(sorted(http_by_method.items())),
        "jsonrpc_by_method": dict(sorted(rpc_by_method.items())),
        "tool_calls": calls,
        "unanswered_requests": c["unanswered_requests"],
        "progress_received": [p["progress"] for p in c["progress_received"]],
        "ended_by": c["ended_by"],
        "t_first": c["t_first"], "t_last": c["t_last"],
    }


# --- the sessions that began their connection with a download ---------------------------------
late = []
for tag, s in client_sessions(late_log).items():
    c = build_client_session(tag, s)
    rec = session_record(c, "make/late-mcp/clients.py late (hand-written JSON-RPC over httpx2, one connection)")
    first = c["http_requests"][0]
    dl = next(e for e in late_log if e["ev"] == "download" and e["session"] == tag)
    want(tag + " first request", (first["method"], first["path"].split("?")[0]), ("GET", "/download"))
    want(tag + " one client port", len(c["client_leg_local_ports"]), 1)
    want(tag + " download complete", dl["bytes"], dl["size"])
    one = next(e for e in late_log if e["ev"] == "one_connection" and e["session"] == tag)
    want(tag + " requests on the one connection", one["requests"], c["http_request_count"])
    lport = c["client_leg_local_ports"][0]
    # The server's own view of that TCP connection: every request it read from that peer port.
    on_conn = [r for r in srv_reqs if r["peer_port"] == lport]
    want(tag + " server: first request on the connection", (on_conn[0]["method"], on_conn[0]["path"]), ("GET", "/download"))
    want(tag + " server: requests on the connection", len(on_conn), c["http_request_count"])
    served = [e for e in srv_log if e["ev"] == "served" and e["peer_port"] == lport]
    want(tag + " server: bytes served first", [e["size"] for e in served], [dl["size"]])
    want(tag + " unanswered", c["unanswered_requests"], [])
    want(tag + " every answer on its own POST", sorted(r["http_seq"] for r in c["responses_received"]),
         sorted(r["http_seq"] for r in c["requests_sent"]))
    rec["rode_on_download_connection"] = {
        "client_local_port": lport, "first_request": first["path"], "download_size": dl["size"],
        "download_bytes_received": dl["bytes"], "content_type": dl["content_type"],
        "requests_on_the_connection_after_it": [
            r["method"] + (" " + r["jsonrpc"]["method"] if r.get("jsonrpc") else "") for r in c["http_requests"][1:]],
        "over_64KiB_before_first_mcp_byte": dl["size"] > 65536,
    }
    late.append(rec)

# --- the official SDK client sessions, concurrent ---------------------------------------------
sdk = []
for idx, c, sv in checked_sdk_sessions(py_log, srv_log, problems):
    rec = session_record(c, "official Python SDK client (make/concurrent-nginx/py_clients.py, mode=legacy)")
    rec["rode_on_download_connection"] = None
    want(c["client_tag"] + " unanswered", c["unanswered_requests"], [])
    sdk.append(rec)

# --- plain HTTP, each request on its own connection -------------------------------------------
plain = []
for tag, s in client_sessions(plain_log).items():
    for seq, x in s["http"].items():
        req, resp = x["request"], x.get("http_response", {})
        done = next(e for e in plain_log if e["ev"] == "plain" and e["session"] == tag)
        plain.append({"client_tag": tag, "method": req["method"], "path": req["path"],
                      "status": resp.get("status"), "content_type": resp.get("content_type"),
                      "bytes": done["bytes"], "client_local_port": resp.get("local_port"), "t": req["t"]})
want("plain requests each on its own connection", len({p["client_local_port"] for p in plain}), len(plain))

first_mcp_t = min(e["t"] for e in late_log + py_log if e["ev"] == "http_request" and e.get("jsonrpc"))
first_late_t = min(e["t"] for e in late_log if e["ev"] == "http_request")
want("the first late download began before any MCP request", first_late_t < first_mcp_t, True)
late1_tag = min(late, key=lambda r: r["t_first"])["client_tag"]
for p in plain:
    p["before_any_mcp"] = p["t"] < first_mcp_t
sdk_window = [max(r["t_first"] for r in sdk), min(r["t_last"] for r in sdk)]
for p in plain:
    p["while_every_sdk_session_open"] = sdk_window[0] < p["t"] < sdk_window[1]
want("late sessions over before the SDK sessions began", max(r["t_last"] for r in late) < min(r["t_first"] for r in sdk), True)

srv_plain = [r for r in srv_reqs if r["path"] != "/mcp"]
want("server: plain requests (including the late connections' downloads)", len(srv_plain), len(plain) + len(late))
want("server: sessions admitted", sorted(e["session_id"] for e in srv_log if e["ev"] == "session_admitted"),
     sorted(r["session_id"] for r in late + sdk))

if problems:
    for p in problems:
        print("truth check failed: " + p, file=sys.stderr)
    sys.exit(1)

sessions = sorted(late + sdk, key=lambda r: r["t_first"])
truth = {
    "capture": "late-mcp.pcap",
    "source": "what the clients (httpx2 TapTransport logs) and the server (ASGI request log, event stores, tool "
              "and route logs) recorded during the run; never the pcap",
    "server": "127.0.0.1:%d" % port,
    "sdk": {"python": {"package": "mcp", "version": "2.3.0"}},
    "transport": "streamable-http (SSE responses, sessions, one event store per session) on /mcp; plain HTTP "
                 "routes GET /download?size=N (application/octet-stream) and GET /healthz (text/plain) on the "
                 "same port, registered with MCPServer.custom_route",
    "order": ["plain requests on their own connections, before any MCP",
              "late-1: GET /download?size=1048576 then a whole MCP session on the same connection",
              "late-2: GET /download?size=16384 then a whole MCP session on the same connection",
              "12 concurrent official SDK client sessions (0.12 s apart), with plain requests on their own "
              "connections in between"],
    "session_count": len(sessions),
    "sessions": sessions,
    "sessions_on_download_connections": [
        {"session_id": r["session_id"], "client_tag": r["client_tag"],
         "download_size": r["rode_on_download_connection"]["download_size"],
         "client_local_port": r["rode_on_download_connection"]["client_local_port"],
         "first_in_capture": r["client_tag"] == late1_tag}
        for r in late],
    "plain_requests": plain,
    "plain_request_count": len(plain),
    "non_mcp_http_request_count": len(plain) + len(late),
    "non_mcp_http_request_count_note": "the plain requests on their own connections plus the download that "
                                       "opened each late session's connection (as the server counted them)",
    "all_sdk_sessions_open_between": sdk_window,
    "first_mcp_request_t": first_mcp_t,
    "expected_analysis": {
        "sessions": len(sessions),
        "max_finding_severity": "info",
        "notes": "every session healthy: every request answered once on its own POST stream, no resume. The "
                 "late sessions' connections begin with a request that cannot be MCP (GET /download without "
                 "Accept: text/event-stream) while no connection to the server has yet begun with MCP; late-1's "
                 "1 MiB response is more than the 64 KiB replay window before the first MCP byte (its POST "
                 "initialize), late-2's 16 KiB is within it. The plain requests before any MCP are on "
                 "connections that never show MCP.",
    },
}
with open(out_path, "w") as f:
    f.write(dumps_compact(truth, depth=4) + "\n")
