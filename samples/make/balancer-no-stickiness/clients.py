#!/usr/bin/env python3
"""N concurrent sessions of the official Python SDK client (mcp 2.x, mode="legacy") against a
balancer without stickiness: each call is made whatever the previous one got, and what each got
(result or error) is logged with the TapTransport's record of every request and response
(client-side truth). Nothing here retries or re-initializes: what the SDK does on a 404 is what
the capture shows.

Session i starts i*STAGGER s after the process; schedule (s after its start): 0.5 tools/list,
1.0, 1.5, 2.0, 2.5 add(i, k), 3.0 leave (DELETE for even i).

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


async def call(tag, what, coro):
    try:
        r = await coro
        content = [c.text for c in getattr(r, "content", []) if getattr(c, "type", None) == "text"]
        note(ev="result", session=tag, what=what, content=content or None)
    except Exception as e:  # an error the SDK surfaced (the 404's JSON-RPC error)
        note(ev="call_failed", session=tag, what=what, error="%s: %s" % (type(e).__name__, e))


async def session(i, t_start):
    tag = "py-%02d" % i
    await asyncio.sleep(max(0.0, t_start + i * STAGGER - time.monotonic()))
    t0 = time.monotonic()
    delete = i % 2 == 0

    async def at(s):
        await asyncio.sleep(max(0.0, t0 + s - time.monotonic()))

    tap = TapTransport(note, tag)
    http = httpx2.AsyncClient(transport=tap, timeout=httpx2.Timeout(10.0, read=60.0))
    async with http:
        transport = streamable_http_client(URL, http_client=http, terminate_on_close=delete)
        async with Client(transport, mode="legacy",
                          client_info=Implementation(name="mcpf-py-client-%02d" % i, version="1.0.0")) as c:
            note(ev="connected", session=tag)
            await at(0.5)
            await call(tag, "tools/list", c.list_tools())
            for k, t in enumerate((1.0, 1.5, 2.0, 2.5)):
                await at(t)
                await call(tag, "tools/call add", c.call_tool("add", {"a": i, "b": k}))
            await at(3.0)
            note(ev="leaving", session=tag, delete=delete)
    note(ev="closed", session=tag, delete=delete)


async def main():
    t_start = time.monotonic()
    results = await asyncio.gather(*(session(i, t_start) for i in range(N)), return_exceptions=True)
    for i, r in enumerate(results):
        if isinstance(r, BaseException):
            note(ev="session_failed", session="py-%02d" % i, error=repr(r))
            print("session py-%02d failed: %r" % (i, r), file=sys.stderr)


asyncio.run(main())
