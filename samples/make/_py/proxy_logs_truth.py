#!/usr/bin/env python3
"""Write samples/<proxy>-logs.truth.json for make/{haproxy,caddy,traefik}-logs.sh: the truth of
the runs whose proxy access logs are committed (the seed incident through the proxy, a healthy
official Python SDK session through it, and both at once among many SDK sessions), from what the
clients and servers recorded during the runs, never from the logs.

The seed run is checked by make/seed-incident/truth.py (it fails unless the run reproduced the
incident's exact ids) and the healthy run summarised by make/python-sdk-healthy/truth.py; this
script keeps what a log can be held to (requests, sessions, the fallback, the resume) and checks
only that the proxy wrote one line per request the client sent.

usage: proxy_logs_truth.py --proxy NAME --proxy-version V --config PATH --work DIR
       --seed-topology T --healthy-topology T --seed-log FILE --healthy-log FILE --out OUT
       [--concurrent-log FILE --concurrent-topology T]   (the run's records in WORK/concurrent/)
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdk_truth import seed_among_sdk_sessions  # noqa: E402

MAKE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(MAKE))


def run_truth(script, args):
    subprocess.run([sys.executable, os.path.join(MAKE, script)] + args, check=True)


def log_lines(path):
    """The JSON objects of an access log (a line that is not one is an error here)."""
    out = []
    with open(os.path.join(ROOT, path)) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    sys.exit("%s:%d is not JSON: %r" % (path, n, line[:80]))
    return out


def seed_part(a):
    w = a.work
    out = os.path.join(w, "seed.truth.json")
    run_truth("seed-incident/truth.py", ["%s-seed" % a.proxy, "buggy", os.path.join(w, "seed-client.json"),
                                         os.path.join(w, "seed-server.json"), out])
    t = json.load(open(out))
    c, s, sm = t["client"], t["server"], t["summary"]
    reqs = []
    for r in c["http_requests"]:
        h = r.get("headers", {})
        reqs.append({"seq": r["seq"], "connection": r["connection"], "method": r["method"], "path": r["path"],
                     "jsonrpc": r.get("jsonrpc"), "mcp_session_id": h.get("Mcp-Session-Id"),
                     "last_event_id": h.get("Last-Event-ID"), "accept": h.get("Accept"),
                     "status_seen_by_client": r.get("status"), "outcome": r.get("outcome")})
    abandoned = [r for r in reqs if r["status_seen_by_client"] is None]
    gets = [r for r in reqs if r["method"] == "GET"]
    fallback = [r for r in gets if r["last_event_id"] is None]
    resumes = [r for r in gets if r["last_event_id"] is not None]
    assert len(abandoned) == 1 and abandoned[0]["jsonrpc"] == {"method": "tools/call", "id": 7}, abandoned
    assert len(fallback) == 1 and len(resumes) == 1, gets
    return {
        "file": a.seed_log,
        "topology": a.seed_topology,
        "client": "samples/make/seed-incident/client.py (seed-client, raw asyncio sockets)",
        "server": "samples/make/seed-incident/server.py (buggy mode: one integer counter per namespace)",
        "protocol_version": t["protocol_version"],
        "session_id": t["session_id"],
        "event_id_format": t["event_id_format"],
        "http_request_count": len(c["http_requests"]),
        "http_requests_sent_by_client": reqs,
        "connections": [{k: x[k] for k in ("index", "label", "purpose", "requests", "closed_by_client")}
                        for x in c["connections"]],
        "abandoned_post": {"seq": abandoned[0]["seq"], "jsonrpc": abandoned[0]["jsonrpc"],
                           "what_the_client_did": abandoned[0]["outcome"] + ", closed its connection (FIN)"},
        "fallback_get": {"seq": fallback[0]["seq"], "outcome": fallback[0]["outcome"]},
        "resume_get": {"seq": resumes[0]["seq"], "last_event_id": resumes[0]["last_event_id"],
                       "resolved_in_namespace": sm["resume_resolved_in_namespace"],
                       "replayed": sm["replayed"]},
        "server_disconnects_observed": s["disconnects_observed"],
        "never_delivered_to_client": sm["never_delivered_to_client"],
        "duplicate_responses": sm["duplicate_responses"],
        "unanswered_requests": sm["unanswered_requests"],
        "client_streams": sm["client_streams"],
        "expected_analysis": {
            "findings": ["sse_fallback", "unsafe_resumption_after_fallback"],
            "not_determinable": ["cross_namespace_replay", "duplicate_response", "skipped_events"],
            "resumption_verdict": "unsafe",
            "notes": "a log has no bodies: the fallback (POST 7 abandoned, then a GET stream of the same "
                     "session with no Last-Event-ID) and the resume (GET with Last-Event-ID %s after it) "
                     "are in it; what the resume replayed is not" % resumes[0]["last_event_id"],
        },
    }


def healthy_part(a, port):
    w = a.work
    out = os.path.join(w, "healthy.truth.json")
    run_truth("python-sdk-healthy/truth.py", [os.path.join(w, "sdk-client.jsonl"),
                                              os.path.join(w, "sdk-events.jsonl"), out, str(port)])
    t = json.load(open(out))
    for k in ("capture", "also", "authorization_header_value", "secret_that_must_be_redacted"):
        t.pop(k, None)
    t["file"] = a.healthy_log
    t["topology"] = a.healthy_topology
    t["client"] = "samples/make/python-sdk-healthy/client.py (official Python SDK, mode=legacy)"
    t["server"] = "samples/make/python-sdk-healthy/server.py (official Python SDK MCPServer, event store)"
    t["note"] = ("the client sends Authorization: Bearer on every request; the proxy's log format does "
                 "not log it")
    return t


def concurrent_part(a):
    """The seed incident and N SDK sessions at once, in one log: the seed part of that run, each
    SDK session checked healthy by sdk_truth, and the check that they overlapped in time."""
    w = os.path.join(a.work, "concurrent")
    seed = seed_part(argparse.Namespace(work=w, proxy=a.proxy + "-concurrent", seed_log=a.concurrent_log,
                                        seed_topology=a.concurrent_topology))
    problems = []
    run = seed_among_sdk_sessions(w, {what: seed[what]["seq"] for what in ("abandoned_post", "fallback_get",
                                                                           "resume_get")}, problems)
    sessions = run["sdk_sessions"]
    if problems:
        sys.exit("proxy_logs_truth.py: the concurrent run did not give what it should: " + "; ".join(problems))
    requests = seed["http_request_count"] + sum(s["http_request_count"] for s in sessions)
    return {
        "file": a.concurrent_log,
        "topology": a.concurrent_topology,
        "clients": "every client is 127.0.0.1: the seed-client (samples/make/concurrent-nginx/seed_wrap.py "
                   "around samples/make/seed-incident/client.py) and %d sessions of the official Python SDK "
                   "client (samples/make/concurrent-nginx/py_clients.py, one asyncio process)" % len(sessions),
        "session_count": len(sessions) + 1,
        "http_request_count": requests,
        "all_sdk_sessions_open_between": run["all_sdk_sessions_open_between"],
        "incident_request_times": run["incident_request_times"],
        "incident_session_id": seed["session_id"],
        "incident": {k: seed[k] for k in ("protocol_version", "http_request_count", "abandoned_post",
                                          "fallback_get", "resume_get", "expected_analysis")},
        "sdk_sessions": sessions,
        "expected_analysis": {
            "sessions_with_findings_above_info": [seed["session_id"]],
            "incident_findings": seed["expected_analysis"]["findings"],
            "notes": "the incident's findings land on its session alone; the SDK sessions, whose standalone "
                     "GET streams are not fallbacks, have none above info",
        },
    }


def main():
    ap = argparse.ArgumentParser()
    for k in ("proxy", "proxy-version", "config", "work", "seed-topology", "healthy-topology",
              "seed-log", "healthy-log", "out"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--healthy-port", type=int, default=0)
    ap.add_argument("--concurrent-log")
    ap.add_argument("--concurrent-topology")
    a = ap.parse_args()
    seed = seed_part(a)
    healthy = healthy_part(a, a.healthy_port)
    parts = [(seed, len(seed["http_requests_sent_by_client"])), (healthy, healthy["http_request_count"])]
    concurrent = None
    if a.concurrent_log:
        concurrent = concurrent_part(a)
        parts.append((concurrent, concurrent["http_request_count"]))
    problems = []
    for part, n in parts:
        got = len(log_lines(part["file"]))
        if got != n:
            problems.append("%s: %d lines for %d requests the client sent" % (part["file"], got, n))
    truth = {
        "scenario": "%s-logs" % a.proxy,
        "generated_by": "samples/make/%s-logs.sh" % a.proxy,
        "recorded_by": "the clients and servers during the runs (not derived from the logs)",
        "proxy": {"name": a.proxy, "version": a.proxy_version, "config": a.config},
        "seed": seed,
        "healthy": healthy,
    }
    if concurrent:
        truth["concurrent"] = concurrent
    with open(a.out, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    if problems:
        sys.exit("proxy_logs_truth.py: " + "; ".join(problems))
    print("proxy_logs_truth.py: %s: seed session %s (%d requests), healthy session %s (%d requests)" % (
        a.proxy, seed["session_id"], len(seed["http_requests_sent_by_client"]), healthy["session_id"],
        healthy["http_request_count"]), file=sys.stderr)


if __name__ == "__main__":
    main()
