#!/usr/bin/env python3
"""N concurrent sessions of the official Python SDK client (mcp 2.x, mode="legacy": initialize,
Mcp-Session-Id, the SDK's own standalone GET) in one asyncio process, each with its own httpx2
client and a TapTransport that logs what it sent and received (client-side truth).

Session i starts i*STAGGER s after the process and follows a fixed schedule (seconds after its
start): 1.0 tools/list, 2.5 add, 4.0 slow_count (progress) or echo, 6.0 touch or echo, 8.5 add,
11.0 echo, 12.0 leave: DELETE (even i, terminate_on_close) or just stop (odd i).

usage: py_clients.py URL N STAGGER LOG_JSONL
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

    tap = TapTransport(note, tag)
    http = httpx2.AsyncClient(transport=tap, timeout=httpx2.Timeout(30.0, read=300.0))
    progress = []

    async def on_progress(p, total, message):
        progress.append(p)
        note(ev="progress", session=tag, progress=p, total=total)

    async with http:
        transport = streamable_http_client(URL, http_client=http, terminate_on_close=delete)
        async with Client(transport, mode="legacy",
                          client_info=Implementation(name="mcpf-py-client-%02d" % i, version="1.0.0")) as c:
            note(ev="connected", session=tag)
            await at(1.0)
            tools = await c.list_tools()
            note(ev="result", session=tag, what="tools/list", tools=sorted(t.name for t in tools.tools))
            await at(2.5)
            r = await c.call_tool("add", {"a": i, "b": 100})
            note(ev="result", session=tag, what="tools/call add", content=text_of(r))
            await at(4.0)
            if i % 3 != 2:
                r = await c.call_tool("slow_count", {"steps": 3}, progress_callback=on_progress)
                note(ev="result", session=tag, what="tools/call slow_count", content=text_of(r),
                     progress=list(progress))
            else:
                r = await c.call_tool("echo", {"text": "no progress for session %d" % i})
                note(ev="result", session=tag, what="tools/call echo", content=text_of(r))
            await at(6.0)
            if i % 4 == 0:
                r = await c.call_tool("touch", {})
                note(ev="result", session=tag, what="tools/call touch", content=text_of(r))
            else:
                r = await c.call_tool("echo", {"text": "session %d" % i})
                note(ev="result", session=tag, what="tools/call echo", content=text_of(r))
            await at(8.5)
            r = await c.call_tool("add", {"a": i, "b": 200})
            note(ev="result", session=tag, what="tools/call add", content=text_of(r))
            await at(11.0)
            r = await c.call_tool("echo", {"text": "bye"})
            note(ev="result", session=tag, what="tools/call echo", content=text_of(r))
            await at(12.0)
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
