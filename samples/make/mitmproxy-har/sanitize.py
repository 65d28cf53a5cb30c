#!/usr/bin/env python3
"""Make a Chrome-style sanitized copy of a HAR: what DevTools' default "Export HAR (sanitized)"
leaves out, plus a body the exporter did not keep (as happens with fetch-based SSE).

- Authorization, Cookie and Set-Cookie headers removed, request/response cookie lists emptied;
- the response body (content.text) of the tools/call whose name is given (if one is) dropped, its
  size kept;
- creator set to DevTools' ("WebInspector"), with a comment saying what was done.

usage: sanitize.py IN.har OUT.har [TOOL_NAME]
"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
tool = sys.argv[3] if len(sys.argv) > 3 else None
har = json.load(open(src))
STRIP = {"authorization", "cookie", "set-cookie"}
dropped = 0
for e in har["log"]["entries"]:
    for side in ("request", "response"):
        m = e[side]
        m["headers"] = [h for h in m.get("headers", []) if h["name"].lower() not in STRIP]
        m["cookies"] = []
    text = (e["request"].get("postData") or {}).get("text") or ""
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = {}
    if body.get("method") == "tools/call" and body.get("params", {}).get("name") == tool:
        e["response"]["content"].pop("text", None)
        e["response"]["content"].pop("encoding", None)
        dropped += 1
assert dropped == (1 if tool else 0), dropped
har["log"]["creator"] = {
    "name": "WebInspector",
    "version": "537.36",
    "comment": "Chrome-style sanitized copy of %s made by samples/make/mitmproxy-har/sanitize.py "
               "(credentials stripped%s)" % (src.rsplit("/", 1)[-1],
                                             ", the %s response body dropped" % tool if tool else ""),
}
with open(dst, "w") as f:
    json.dump(har, f, indent=4)
    f.write("\n")
