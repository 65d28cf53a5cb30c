#!/usr/bin/env python3
"""h2c-upgrade.truth.json from what curl received (its -D header dumps, in order, and bodies)
and the server's own request log; never from the capture.

usage: truth.py WORK_DIR OUT
"""
import glob
import json
import os
import sys

work, out = sys.argv[1], sys.argv[2]
requests = []
for path in sorted(glob.glob(f"{work}/*.headers"), key=lambda p: int(os.path.basename(p).split("-")[0])):
    name = os.path.basename(path)[: -len(".headers")]
    statuses = [l.strip() for l in open(path, errors="replace") if l.startswith("HTTP/")]
    body = open(path[: -len(".headers")] + ".body", errors="replace").read()
    requests.append({"request": name, "status_lines": statuses,
                     "upgraded": any(" 101" in s for s in statuses),
                     "sse_data_lines": [l for l in body.splitlines() if l.startswith("data:")]})
server = [json.loads(l) for l in open(f"{work}/server.jsonl")]
session = sorted({e.get("mcp_session_id") for e in server if e.get("mcp_session_id")})
json.dump({"requests": requests, "sessions": session, "server_events": server}, open(out, "w"), indent=1)
for r in requests:
    print(r["request"], r["status_lines"])
