#!/usr/bin/env python3
"""A big HAR of one ordinary MCP session, for the ingest stress cases: the initialize and
initialized entries of samples/mitmproxy-python-sdk.har, then `calls` tools/call entries (one
every 10 ms, ids from 3), every `--big-every`th answered by an SSE result carrying a
`--big-mib` MiB text (a base64 screenshot, say). Written entry by entry, never held whole.
Nothing in it is an incident: no finding above info.

    har.py CALLS [--big-every 50] [--big-mib 4] > big.har
"""
import argparse
import copy
import json
import os
import sys
from datetime import datetime, timedelta

SAMPLE = os.path.join(os.path.dirname(__file__), "../../../../samples/mitmproxy-python-sdk.har")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("calls", type=int)
    ap.add_argument("--big-every", type=int, default=50)
    ap.add_argument("--big-mib", type=float, default=4)
    a = ap.parse_args()
    doc = json.load(open(SAMPLE))
    entries = doc["log"]["entries"]
    init, initialized, call = entries[0], entries[1], entries[3]
    out = sys.stdout
    log = {k: v for k, v in doc["log"].items() if k != "entries"}
    out.write('{"log":' + json.dumps(log)[:-1] + ',"entries":[\n')
    out.write(json.dumps(init) + ",\n" + json.dumps(initialized))
    t0 = datetime.fromisoformat(call["startedDateTime"])
    big = "A" * int(a.big_mib * (1 << 20))
    for i in range(a.calls):
        e = copy.deepcopy(call)
        rid = i + 3
        e["startedDateTime"] = (t0 + timedelta(milliseconds=10 * i)).isoformat()
        e["request"]["postData"]["text"] = json.dumps(
            {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
             "params": {"name": "add", "arguments": {"a": i, "b": 1}}}, separators=(",", ":"))
        text = str(i + 1) if i % a.big_every else big
        result = {"jsonrpc": "2.0", "id": rid,
                  "result": {"content": [{"type": "text", "text": text}], "isError": False}}
        body = "event: message\r\ndata: " + json.dumps(result, separators=(",", ":")) + "\r\n\r\n"
        c = e["response"]["content"]
        c["text"] = body
        c["size"] = len(body)
        e["response"]["bodySize"] = len(body)
        out.write(",\n" + json.dumps(e))
    out.write("\n]}}\n")


if __name__ == "__main__":
    main()
