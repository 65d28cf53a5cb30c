#!/usr/bin/env python3
"""The seed-client of samples/make/seed-incident/client.py, unchanged, plus two hooks for a
capture that starts late:

  --marker-file PATH   written (wall-clock time) as soon as the response head of the fallback
                       GET (the one without Last-Event-ID) has been read: the make script starts
                       tcpdump then, so the capture has no initialize, no POST of request 7, no
                       SYN and no response head of the GET.
  --timeline-out PATH  wall-clock time of every HTTP request the client wrote and every SSE event
                       it read (with its stream and id), to tell afterwards what happened before
                       the capture started.

All other arguments are the seed-client's.
"""
import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("seed_client", os.path.join(HERE, "..", "seed-incident", "client.py"))
seed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed)


def take(flag):
    if flag in sys.argv:
        i = sys.argv.index(flag)
        val = sys.argv[i + 1]
        del sys.argv[i:i + 2]
        return val
    return None


MARKER = take("--marker-file")
TIMELINE = take("--timeline-out")
timeline = []

_send = seed.Conn.send


def send(self, method, body=None, extra=()):
    rec = _send(self, method, body, extra)
    timeline.append({"t": time.time(), "what": "http_request", "seq": rec["seq"], "connection": self.label,
                     "method": method,
                     "last_event_id": dict(extra).get("Last-Event-ID")})
    return rec


seed.Conn.send = send

_get_stream = seed.Client.get_stream


async def get_stream(self, conn, label, last_event_id=None):
    out = await _get_stream(self, conn, label, last_event_id)
    timeline.append({"t": time.time(), "what": "response_head", "seq": out[0]["seq"], "connection": conn.label,
                     "status": out[0]["status"]})
    if last_event_id is None and MARKER:
        with open(MARKER + ".tmp", "w") as f:
            f.write("%.6f\n" % time.time())
        os.rename(MARKER + ".tmp", MARKER)
    return out


seed.Client.get_stream = get_stream

_on_event = seed.Client.on_event


def on_event(self, stream, ev):
    timeline.append({"t": time.time(), "what": "sse_event", "stream": stream["label"], "id": ev["id"]})
    return _on_event(self, stream, ev)


seed.Client.on_event = on_event

_post = seed.Client.post


async def post(self, conn, msg, first_byte_timeout=None):
    rec, hdrs = await _post(self, conn, msg, first_byte_timeout)
    timeline.append({"t": time.time(), "what": "post_done", "seq": rec["seq"], "connection": conn.label,
                     "status": rec.get("status"), "jsonrpc": rec.get("jsonrpc")})
    return rec, hdrs


seed.Client.post = post

if __name__ == "__main__":
    try:
        seed.asyncio.run(seed.main())
    finally:
        if TIMELINE:
            with open(TIMELINE, "w") as f:
                json.dump(timeline, f, indent=0)
                f.write("\n")
