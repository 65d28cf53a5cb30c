#!/usr/bin/env python3
"""Write samples/chromium-har.truth.json for make/chromium-har.sh: the truth of the two runs in
Chromium, from what the pages and the servers recorded during them, never from the HARs.

Seed: make/seed-incident/truth.py checks the run reproduced the incident's exact ids (it fails
otherwise); make/_py/proxy_logs_truth.py's seed part keeps what a record of the client leg can be
held to. Healthy: the TypeScript SDK client's requests as its fetch wrapper recorded them, and the
events the Python SDK server's event store minted. The only things read from the HARs are their
creator and their count of /mcp entries, checked against the requests the pages sent.

usage: truth.py --work DIR --versions JSON --seed-topology T --healthy-topology T
                --seed-har FILE --sanitized-har FILE --healthy-har FILE --out OUT
"""
import argparse
import json
import os
import sys

MAKE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(MAKE))
sys.path.insert(0, os.path.join(MAKE, "_py"))
import proxy_logs_truth  # noqa: E402


def har_mcp_entries(path):
    har = json.load(open(os.path.join(ROOT, path)))["log"]
    return har["creator"], [e for e in har["entries"] if e["request"]["url"].endswith("/mcp")]


def seed_part(a):
    seed = proxy_logs_truth.seed_part(argparse.Namespace(
        work=a.work, proxy="chromium", seed_log=a.seed_har, seed_topology=a.seed_topology))
    seed["client"] = ("samples/make/chromium-har/seed-client.js (the seed-client script in a page, "
                      "fetch() and AbortController; 'connection' is the script's logical channel, "
                      "Chromium chose the sockets)")
    seed["sanitized_copy"] = a.sanitized_har
    seed["expected_analysis"] = {
        "findings": ["sse_fallback", "unsafe_resumption_after_fallback"],
        "not_determinable": ["cross_namespace_replay", "duplicate_response", "skipped_events",
                             "unanswered_request"],
        "resumption_verdict": "unsafe",
        "notes": "Playwright's recorder keeps the body of a response only when it completes: the two "
                 "GET streams the page aborted (the fallback after %d events, the resume) are entries "
                 "with status 200, _failureText net::ERR_ABORTED, receive -1 and no body, so what the "
                 "resume replayed (the duplicate response to 19) is not in the HAR, and whether 7 was "
                 "answered on them is not determinable. POST 7 is an entry with status -1 and "
                 "_failureText net::ERR_ABORTED whose time (about 1.5 s) is the client's wait: the "
                 "fallback. The sanitised copy loses nothing the analysis needs."
                 % seed["client_streams"][1]["event_count"],
    }
    return seed


def healthy_session(notes):
    """One SDK session of the page, from its notes (its fetch wrapper's records and results)."""
    connected = next(n for n in notes if n["ev"] == "connected")
    reqs = {}
    for n in notes:
        if n["ev"] == "http_request":
            body = n.get("body") or {}
            reqs[n["seq"]] = {"seq": n["seq"], "method": n["method"],
                              "jsonrpc": {k: body[k] for k in ("method", "id") if k in body} or None,
                              "mcp_session_id": n.get("mcp_session_id"), "last_event_id": n.get("last_event_id"),
                              "status": None, "content_type": None, "sse_event_ids": []}
        elif n["ev"] == "http_response":
            reqs[n["seq"]].update(status=n["status"], content_type=n["content_type"])
        elif n["ev"] == "sse_event":
            reqs[n["seq"]]["sse_event_ids"].append(n.get("id"))
        elif n["ev"] == "http_error":
            reqs[n["seq"]]["error"] = n["error"]
    results = [n for n in notes if n["ev"] == "result"]
    tag = notes[0]["session"]
    assert [r["what"] for r in results] == ["tools/list", "tools/call slow_count", "tools/call add"], (tag, results)
    assert any(n["ev"] == "closed" for n in notes), "%s did not close" % tag
    return {
        "tag": tag,
        "session_id": connected["session_id"],
        "protocol_version": connected["protocol_version"],
        "http_request_count": len(reqs),
        "http_requests_sent_by_client": list(reqs.values()),
        "results": results,
        "transport_errors_seen_by_client": [n for n in notes if n["ev"] == "transport_error"],
        "t_first": min(n["t"] for n in notes),
        "t_last": max(n["t"] for n in notes),
    }


def healthy_part(a):
    notes = json.load(open(os.path.join(a.work, "sdk-client.json")))
    stored = [json.loads(l) for l in open(os.path.join(a.work, "sdk-events.jsonl")) if l.strip()]
    by_session = {}
    for n in notes:
        by_session.setdefault(n["session"], []).append(n)
    sessions = [healthy_session(ns) for ns in by_session.values()]
    assert len({s["session_id"] for s in sessions}) == len(sessions), "two tags share a session id"
    t_open, t_close = max(s["t_first"] for s in sessions), min(s["t_last"] for s in sessions)
    assert t_open < t_close, "the page's sessions were not all open at once"
    return {
        "file": a.healthy_har,
        "topology": a.healthy_topology,
        "client": "samples/make/chromium-har/sdk-client.mjs (official TypeScript SDK Client + "
                  "StreamableHTTPClientTransport in the page, one per session, sharing the page's "
                  "connections; fetch wrapper make/_node/fetchtap.mjs)",
        "server": "samples/make/mitmproxy-har/server.py (official Python SDK MCPServer, streamable-http, "
                  "SSE responses, in-memory event store)",
        "session_count": len(sessions),
        "all_sessions_open_between": [t_open, t_close],
        "http_request_count": sum(s["http_request_count"] for s in sessions),
        "events_stored_by_server": sum(1 for e in stored if e.get("ev") == "store"),
        "replays_by_server": [e for e in stored if e.get("ev", "").startswith("replay")],
        "sessions": sessions,
        "expected_analysis": {
            "findings_above_info": [],
            "notes": "healthy sessions of the official SDKs at once, from one page, through a "
                     "non-buffering nginx. Each standalone GET stream is aborted by its client when "
                     "it closes: Playwright records it with no body, so findings resting on its "
                     "events are not determinable, and nothing above info may be raised.",
        },
    }


def main():
    ap = argparse.ArgumentParser()
    for k in ("work", "versions", "seed-topology", "healthy-topology", "seed-har", "sanitized-har",
              "healthy-har", "out"):
        ap.add_argument("--" + k, required=True)
    a = ap.parse_args()
    versions = json.loads(a.versions)
    seed, healthy = seed_part(a), healthy_part(a)
    creator, seed_entries = har_mcp_entries(a.seed_har)
    _, healthy_entries = har_mcp_entries(a.healthy_har)
    truth = {
        "scenario": "chromium-har",
        "generated_by": "samples/make/chromium-har.sh",
        "recorded_by": "the pages' clients and the servers during the runs (not derived from the HARs)",
        "recorder": {"name": "Chromium (Debian), headless, driven by playwright-core with recordHar",
                     "chromium": versions["chromium"], "playwright_core": versions["playwright_core"],
                     "har_creator": creator},
        "other_entries": "each HAR also has the page's own GETs (its HTML and script): not MCP",
        "seed": seed,
        "healthy": healthy,
    }
    with open(a.out, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    for what, part, entries in (("seed", seed, seed_entries), ("healthy", healthy, healthy_entries)):
        n = part["http_request_count"]
        if len(entries) != n:
            sys.exit("chromium-har truth.py: the %s HAR has %d /mcp entries for %d requests the page sent"
                     % (what, len(entries), n))
        ids = [part["session_id"]] if "session_id" in part else [s["session_id"] for s in part["sessions"]]
        print("chromium-har truth.py: %s: sessions %s, %d requests" % (what, " ".join(ids), n), file=sys.stderr)


if __name__ == "__main__":
    main()
