#!/usr/bin/env python3
"""N concurrent sessions of the official Python SDK client (mcp 2.x, mode="legacy") in one asyncio
process, each with its own httpx2 client (User-Agent mcpf-py-client/NN, which the relay's cut rules
key on) and a TapTransport logging what it sent and received (client-side truth). Every
reconnection with Last-Event-ID is the SDK's own; nothing here resumes anything.

Session i starts i*STAGGER s after the process; schedule (s after its start): 0.8 tools/list,
1.5 broadcast(6 GET-stream notifications, 300 ms apart), 4.5 slow_count(4 progress, 250 ms),
7.0 broadcast(3, 200 ms), 8.5 add, 9.5 leave: DELETE (even i) or just stop (odd i).

usage: clients.py URL N STAGGER LOG_JSONL
"""
import asyncio
import os
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from mcpf_pylib import JsonlLog, TapTransport  # noqa: E402

URL, N, STAGGER = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
note = JsonlLog(sys.argv[4])


def text_of(r):
    return [c.text for c in r.content if getattr(c, "type", None) == "text"]


async def session(i, t_start):
    tag = "py-%02d" % i
    await asyncio.sleep(max(0.0, t_start + i * STAGGER - time.monotonic()))
    t0 = time.monotonic()
    delete = i % 2 == 0

    async def at(s):
        await asyncio.sleep(max(0.0, t0 + s - time.monotonic()))

    progress = []

    async def on_progress(p, total, message):
        progress.append(p)
        note(ev="progress", session=tag, progress=p, total=total)

    async def on_log(params):
        note(ev="log_message", session=tag, data=params.data)

    tap = TapTransport(note, tag)
    http = httpx2.AsyncClient(transport=tap, timeout=httpx2.Timeout(30.0, read=300.0),
                              headers={"User-Agent": "mcpf-py-client/%02d" % i})
    async with http:
        transport = streamable_http_client(URL, http_client=http, terminate_on_close=delete)
        async with Client(transport, mode="legacy", logging_callback=on_log,
                          client_info=Implementation(name="mcpf-py-client-%02d" % i, version="1.0.0")) as c:
            note(ev="connected", session=tag)
            await at(0.8)
            tools = await c.list_tools()
            note(ev="result", session=tag, what="tools/list", tools=sorted(t.name for t in tools.tools))
            await at(1.5)
            r = await c.call_tool("broadcast", {"count": 6, "interval_ms": 300}, progress_callback=on_progress)
            note(ev="result", session=tag, what="tools/call broadcast", content=text_of(r), progress=list(progress))
            await at(4.5)
            progress.clear()
            r = await c.call_tool("slow_count", {"steps": 4}, progress_callback=on_progress)
            note(ev="result", session=tag, what="tools/call slow_count", content=text_of(r), progress=list(progress))
            await at(7.0)
            progress.clear()
            r = await c.call_tool("broadcast", {"count": 3, "interval_ms": 200}, progress_callback=on_progress)
            note(ev="result", session=tag, what="tools/call broadcast", content=text_of(r), progress=list(progress))
            await at(8.5)
            r = await c.call_tool("add", {"a": i, "b": 1000})
            note(ev="result", session=tag, what="tools/call add", content=text_of(r))
            await at(9.5)
            note(ev="leaving", session=tag, delete=delete)
    note(ev="closed", session=tag, delete=delete)


async def main():
    t_start = time.monotonic()
    results = await asyncio.gather(*(session(i, t_start) for i in range(N)), return_exceptions=True)
    bad = [(i, repr(r)) for i, r in enumerate(results) if isinstance(r, BaseException)]
    for i, r in bad:
        note(ev="session_failed", session="py-%02d" % i, error=r)
        print("session py-%02d failed: %s" % (i, r), file=sys.stderr)
    sys.exit(1 if bad else 0)


asyncio.run(main())
