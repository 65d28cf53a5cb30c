#!/usr/bin/env python3
"""The event store both replicas share in make/replicas.sh's `replicas-shared-store` run: a small
process on a Unix socket (so it adds nothing to the loopback captures), one JSON line per call.

Per session: one counter (IDs 1, 2, 3... whichever replica stores the event), the events of each
stream in order with the exact JSON the replica wrote as the SSE `data:`, and which replica stored
each. Replay follows the SDK example store: the events after the given ID in the same stream,
priming rows (data null) skipped; an unknown ID gives `stream_id` null.

  {"op": "store", "session_id", "stream_id", "data": JSON text | null, "replica"} -> {"event_id"}
  {"op": "replay", "session_id", "last_event_id", "replica"}
      -> {"stream_id", "events": [[event_id, data, replica that stored it], ...]}

Logs every call (JSONL): the store's own record.

usage: store.py SOCKET_PATH LOG_JSONL
"""
import asyncio
import json
import os
import signal
import sys
import time

path, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)
sessions = {}  # session id -> {"counter": n, "streams": {stream: [[id, data, replica]]}, "index": {id: stream}}


def note(**kw):
    kw["t"] = round(time.time(), 6)
    log.write(json.dumps(kw, separators=(",", ":")) + "\n")


def call(req):
    s = sessions.setdefault(req["session_id"], {"counter": 0, "streams": {}, "index": {}})
    if req["op"] == "store":
        s["counter"] += 1
        eid = str(s["counter"])
        s["streams"].setdefault(req["stream_id"], []).append([eid, req["data"], req["replica"]])
        s["index"][eid] = req["stream_id"]
        note(ev="store", session_id=req["session_id"], event_id=eid, stream_id=req["stream_id"],
             replica=req["replica"], priming=req["data"] is None)
        return {"event_id": eid}
    if req["op"] == "replay":
        stream = s["index"].get(req["last_event_id"])
        if stream is None:
            note(ev="replay_unknown", session_id=req["session_id"], last_event_id=req["last_event_id"],
                 replica=req["replica"])
            return {"stream_id": None, "events": []}
        out, found = [], False
        for eid, data, replica in s["streams"][stream]:
            if found and data is not None:
                out.append([eid, data, replica])
            if eid == req["last_event_id"]:
                found = True
        note(ev="replay", session_id=req["session_id"], last_event_id=req["last_event_id"], stream_id=stream,
             replica=req["replica"], replayed=[[e[0], e[2]] for e in out])
        return {"stream_id": stream, "events": out}
    return {"error": "unknown op"}


async def handle(reader, writer):
    try:
        line = await reader.readline()
        if line:
            writer.write((json.dumps(call(json.loads(line))) + "\n").encode())
            await writer.drain()
    finally:
        writer.close()


async def main():
    if os.path.exists(path):
        os.unlink(path)
    server = await asyncio.start_unix_server(handle, path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    note(ev="listening", socket=path)
    await stop.wait()
    server.close()


asyncio.run(main())
