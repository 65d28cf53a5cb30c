#!/usr/bin/env python3
"""python-sdk-h2.truth.json from what the clients and the server logged (never from a capture):
per client leg, the sessions the SDK clients had and the HTTP requests each sent.

usage: truth.py WORK_DIR OUT
"""
import json
import sys

work, out = sys.argv[1], sys.argv[2]


def leg(path):
    log = [json.loads(l) for l in open(path)]
    failed = [e for e in log if e.get("ev") == "session_failed"]
    assert not failed, failed
    sessions = {}
    for e in log:
        if e.get("ev") == "http_response" and e.get("mcp_session_id"):
            sessions.setdefault(e["session"], e["mcp_session_id"])
    requests = [e for e in log if e.get("ev") == "http_request"]
    return {
        "sessions": {tag: sid for tag, sid in sorted(sessions.items())},
        "requests": len(requests),
        "requests_by_method": {m: sum(1 for r in requests if r["method"] == m)
                               for m in sorted({r["method"] for r in requests})},
        "client_events": log,
    }


server = [json.loads(l) for l in open(f"{work}/server.jsonl")]
truth = {
    "tls": leg(f"{work}/clients-tls.jsonl"),
    "h2c": leg(f"{work}/clients-h2c.jsonl"),
    "server_events": server,
    "keylog_lines": sum(1 for _ in open(f"{work}/keys.txt")),
}
json.dump(truth, open(out, "w"), indent=1)
for name in ("tls", "h2c"):
    t = truth[name]
    print(f"{name}: {len(t['sessions'])} sessions, {t['requests']} requests {t['requests_by_method']}")
