#!/usr/bin/env python3
"""Build samples/concurrent-nginx.truth.json from what the clients and servers recorded during the
run (JSONL logs of the SDK clients' taps and of the servers, the seed-client's and seed-server's
own JSON, merged and checked by seed-incident/truth.py), never from the captures. Fails when the run
did not give exactly what the sample is meant to show.

usage: truth.py WORK_DIR OUT_JSON NGINX_PORT PY_PORT TS_PORT SEED_PORT
"""
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import checked_sdk_sessions, dumps_compact, read_jsonl  # noqa: E402

work, out = sys.argv[1], sys.argv[2]
nginx_port, py_port, ts_port, seed_port = (int(x) for x in sys.argv[3:7])

INCIDENT_CHAIN = ["sse_fallback", "event_id_reset", "unsafe_resumption_after_fallback", "cross_namespace_replay",
                  "duplicate_response", "skipped_events", "unanswered_request"]

problems = []


def want(what, got, exp):
    if got != exp:
        problems.append("%s: got %r, expected %r" % (what, got, exp))


sessions = []
for sdk, cfile, sfile, endpoint, port, pkg in (
        ("python", "py-clients.jsonl", "py-server.jsonl", "/py/mcp", py_port, {"package": "mcp (PyPI)", "version": "2.3.0"}),
        ("typescript", "ts-clients.jsonl", "ts-server.jsonl", "/ts/mcp", ts_port,
         {"package": "@modelcontextprotocol/sdk (npm)", "version": "1.32.2"})):
    for idx, c, sv in checked_sdk_sessions(read_jsonl(os.path.join(work, cfile)),
                                           read_jsonl(os.path.join(work, sfile)), problems):
        sid = c["session_id"]
        sessions.append({
            "session_id": sid,
            "sdk": sdk,
            "sdk_package": pkg,
            "client_info": {"name": "mcpf-%s-client-%02d" % ("py" if sdk == "python" else "ts", idx), "version": "1.0.0"},
            "endpoint_client_leg": "127.0.0.1:%d%s" % (nginx_port, endpoint),
            "upstream_server_leg": "127.0.0.1:%d/mcp" % port,
            **c,
            "server": sv,
            "expected_findings": {"above_info": [], "max_severity": "info"},
        })

# --- the incident session ---------------------------------------------------------------------------
inc = json.load(open(os.path.join(work, "incident.truth.json")))
seed_client = json.load(open(os.path.join(work, "seed-client.json")))
seed_server = json.load(open(os.path.join(work, "seed-server.json")))
inc_ports = [c["local_port"] for c in seed_client["connections"]]
inc_srv_ports = []
for r in seed_server["http_requests"]:
    if r["peer_port"] not in inc_srv_ports:
        inc_srv_ports.append(r["peer_port"])
client = inc["client"]
inc_session = {
    "session_id": inc["session_id"],
    "sdk": "none (seed-client / seed-server of samples/make/seed-incident, standard library)",
    "client_info": inc["client_info"],
    "server_info": inc["server_info"],
    "protocol_version": inc["protocol_version"],
    "event_id_format": inc["event_id_format"],
    "endpoint_client_leg": "127.0.0.1:%d/mcp" % nginx_port,
    "upstream_server_leg": "127.0.0.1:%d/mcp" % seed_port,
    "nginx_location": "location = /mcp: proxy_buffering on, upstream HTTP/1.0 (one connection per request)",
    "client_leg_local_ports": inc_ports,
    "client_leg_connections": [{"index": c["index"], "label": c["label"], "local_port": c["local_port"],
                                "purpose": c["purpose"], "http_request_seqs": c["requests"],
                                "closed_by_client": c["closed_by_client"]} for c in seed_client["connections"]],
    "http_request_count": inc["http_request_counts"]["client_leg_sent_by_client"],
    "requests_sent": [{k: m[k] for k in ("id", "method", "tool", "progressToken", "http_request_seq") if k in m}
                      for m in client["sent_messages"] if m["kind"] == "request"],
    "notifications_sent": [{"method": m["method"], "http_request_seq": m["http_request_seq"]}
                           for m in client["sent_messages"] if m["kind"] == "notification"],
    "responses_received": [{"id": json.loads(k), **v} for k, v in seed_client["responses_first_seen"].items()]
                          + [{"id": d["response_to_id"], **d["again"], "duplicate": True} for d in client["duplicate_responses"]],
    "sse_event_ids_seen_per_stream": {st["label"]: [e["id"] for e in st["events"]] for st in client["received_streams"]},
    "resumes": [{"last_event_id_sent": client["last_event_id_sent"],
                 "resolved_namespace": inc["summary"]["resume_resolved_in_namespace"],
                 "replayed": inc["summary"]["replayed"]}],
    "delete": {"sent": any(r["method"] == "DELETE" for r in client["http_requests"]),
               "status": next((r.get("status") for r in client["http_requests"] if r["method"] == "DELETE"), None)},
    "server_leg_nginx_ports": inc_srv_ports,
    "client": client,
    "server": inc["server"],
    "summary": inc["summary"],
    "expected_findings": {
        "above_info": INCIDENT_CHAIN,
        "chain": ["sse_fallback", "unsafe_resumption_after_fallback", "cross_namespace_replay",
                  "duplicate_response", "skipped_events", "unanswered_request"],
        "also": ["event_id_reset"],
        "details": {
            "sse_fallback": "POST tools/call 7 got no byte through the buffering location (nginx 499); the client fell back to GET /mcp",
            "event_id_reset": "the GET stream's ids start again at 1 after POST ids reached 18",
            "unsafe_resumption_after_fallback": "GET with Last-Event-ID %s after the fallback" % client["last_event_id_sent"],
            "cross_namespace_replay": "Last-Event-ID 41 was seen on the GET stream; the resume replayed 42, minted by the POST stream of request 19",
            "duplicate_response": "the result of 19 arrived twice (POST stream event 42, again on the resume)",
            "skipped_events": "GET ids 42-47 (progress of 7 and the result of 7) never delivered",
            "unanswered_request": "tools/call 7",
        },
        "verdict": "unsafe",
    },
}
sessions.append(inc_session)

# --- totals and checks ------------------------------------------------------------------------------
healthy = [s for s in sessions if s is not inc_session]
by_sdk = Counter(s["sdk"] for s in healthy)
client_total = sum(s["http_request_count"] for s in sessions)
server_total = (sum(s["server"]["http_request_count"] for s in healthy if s["server"])
                + inc["http_request_counts"]["server_leg_received_by_server"])
want("sessions", len(sessions), by_sdk["python"] + by_sdk["typescript"] + 1)
want("client leg == server leg requests", client_total, server_total)
want("distinct session ids", len({s["session_id"] for s in sessions}), len(sessions))

# concurrency: every healthy session was open at the same moment, and so was the incident
t_open = max(s["t_first"] for s in healthy)
t_close = min(s["t_last"] for s in healthy)
if not t_open < t_close:
    problems.append("the healthy sessions were not all open at once")
inc_req_t = {r["seq"]: r["t"] for r in seed_client["http_requests"]}
resume_seq = next(r["seq"] for r in seed_client["http_requests"] if r["headers"].get("Last-Event-ID"))
inc_window = {"first_request": min(inc_req_t.values()), "tools_call_7": inc_req_t[3],
              "resume_with_last_event_id": inc_req_t[resume_seq], "last_request": max(inc_req_t.values())}
if not (inc_window["tools_call_7"] < t_close and t_open < inc_window["resume_with_last_event_id"] < t_close):
    problems.append("the incident did not happen while the healthy sessions ran: %r vs %r" % (inc_window, (t_open, t_close)))

ts_conns = [e for e in read_jsonl(os.path.join(work, "ts-clients.jsonl")) if e["ev"] == "tcp_connected"]
ts_ports_used = {p for s in healthy if s["sdk"] == "typescript" for p in s["client_leg_local_ports"]}
ts_unused = sorted(e["local_port"] for e in ts_conns if e["local_port"] not in ts_ports_used)
if not ts_ports_used <= {e["local_port"] for e in ts_conns}:
    problems.append("TypeScript requests on connections undici did not report")
py_ports = {p for s in healthy if s["sdk"] == "python" for p in s["client_leg_local_ports"]}
tcp_counts = {"python_sdk_clients": len(py_ports), "typescript_sdk_clients_opened": len(ts_conns),
              "typescript_opened_without_any_request": len(ts_unused),
              "typescript_without_request_local_ports": ts_unused,
              "incident_seed_client": len(inc_ports)}
tcp_counts["total"] = len(py_ports) + len(ts_conns) + len(inc_ports)

methods = Counter((r["method"], r["path"]) for s in healthy for r in s["http_requests"])
truth = {
    "scenario": "concurrent-nginx",
    "generated_by": "samples/make/concurrent-nginx.sh",
    "recorded_by": "the SDK clients (httpx2 / fetch taps), the SDK servers (request logs, event-store logs) and "
                   "seed-client / seed-server, during the run; not derived from the captures",
    "topology": {
        "client_leg": {"pcap": "samples/concurrent-nginx-client-leg.pcap", "clients": "127.0.0.1:<ephemeral>",
                       "nginx": "127.0.0.1:%d" % nginx_port},
        "server_leg": {"pcap": "samples/concurrent-nginx-server-leg.pcap", "nginx": "127.0.0.1:<ephemeral>",
                       "upstreams": {"/py/mcp -> Python SDK server": "127.0.0.1:%d" % py_port,
                                     "/ts/mcp -> TypeScript SDK server": "127.0.0.1:%d" % ts_port,
                                     "/mcp -> seed-server (incident)": "127.0.0.1:%d" % seed_port}},
        "nginx_access_log": "samples/concurrent-nginx.nginx.jsonl",
        "nginx": "one nginx (Debian 1.22); /py/ and /ts/: proxy_buffering off, proxy_http_version 1.1, upstream "
                 "keep-alive (a server-leg connection carries requests of several sessions); = /mcp: proxy_buffering "
                 "on, HTTP/1.0 upstream (samples/make/concurrent-nginx/nginx.conf)",
        "client_processes": "one Python process for the 26 Python SDK sessions (one httpx2 client each: a new TCP "
                            "connection per POST); one Node process for the 26 TypeScript SDK sessions (one "
                            "shared undici pool: a client-leg connection can carry requests of several sessions); "
                            "the seed-client; all from 127.0.0.1",
    },
    "counts": {
        "sessions": len(sessions),
        "healthy_sessions": len(healthy),
        "healthy_by_sdk": dict(by_sdk),
        "incident_sessions": 1,
        "sessions_ended_by_delete": sum(1 for s in sessions if s["delete"]["sent"]),
        "client_leg_http_requests": client_total,
        "server_leg_http_requests": server_total,
        "client_leg_http_requests_by_sdk": {
            "python": sum(s["http_request_count"] for s in healthy if s["sdk"] == "python"),
            "typescript": sum(s["http_request_count"] for s in healthy if s["sdk"] == "typescript"),
            "incident": inc_session["http_request_count"]},
        "healthy_http_requests_by_method_and_path": {"%s %s" % k: v for k, v in sorted(methods.items())},
        "client_leg_tcp_connections": tcp_counts,
    },
    "all_healthy_sessions_open_between": [t_open, t_close],
    "incident_times": inc_window,
    "incident_session_id": inc_session["session_id"],
    "expected_findings": {
        "sessions_with_findings_above_info": [inc_session["session_id"]],
        "per_session": {s["session_id"]: s["expected_findings"]["above_info"] for s in sessions},
        "incident_session": inc_session["expected_findings"],
        "healthy_sessions": "no finding above info on any of the %d healthy sessions (standalone GET streams "
                            "of the SDKs are not fallbacks; nothing is resumed)" % len(healthy),
        "note": "the findings of the seed incident must land on the incident session alone",
    },
    "notes": [
        "Session i of each SDK starts i*0.12 s after its process; its schedule (s after its start): 1.0 tools/list, "
        "2.5 add, 4.0 slow_count/countdown with 3 progress notifications (i%3 != 2) or echo, 6.0 touch (i%4 == 0: "
        "notifications/tools/list_changed on the standalone GET stream) or echo, 8.5 add, 11.0 echo, 12.0 leave: "
        "DELETE for even i, just close for odd i.",
        "The seed-client starts about 1 s after the SDK clients; its tools/call 7 and fallback, the GET drop and the "
        "Last-Event-ID resume all happen while the healthy sessions run (see samples/make/seed-incident/README.md "
        "for its timeline).",
        "undici (the TypeScript clients' fetch) opens a spare connection when a session that does not DELETE "
        "closes (its GET stream aborted); it carries no request and is closed when the process exits "
        "(counts.client_leg_tcp_connections).",
        "Which server-leg connection nginx picks from its keep-alive pool, and so the number of server-leg TCP "
        "connections, varies from run to run; every request's nginx-side port is in sessions[].server.http_requests.",
        "The Python SDK client closes a POST response as soon as it has the JSON-RPC response, so whether the "
        "terminating chunk of that response is on the wire before the client's FIN varies from run to run.",
        "Python SDK SSE framing is CRLF (sse-starlette), TypeScript SDK and seed-server LF.",
    ],
    "sessions": sessions,
}

with open(out, "w") as f:
    f.write(dumps_compact(truth, depth=4) + "\n")
if problems:
    print("concurrent-nginx truth.py: the run did NOT give what it should:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("concurrent-nginx truth.py: %d sessions (%s + 1 incident %s), client leg %d requests, server leg %d" % (
    len(sessions), dict(by_sdk), inc_session["session_id"], client_total, server_total))
