#!/usr/bin/env python3
"""Four official Python SDK (mcp 2.x) legacy HTTP+SSE clients in one process, all from
127.0.0.1, at the same time against one server: each is `mcp.Client(sse_client(URL),
mode="legacy")` with its own httpx2 client (its own connection pool): GET /sse, the `endpoint`
event names its POST URL /messages/?session_id=<hex>, every message is a POST there (202), every
response arrives on its own GET /sse stream. Each client: initialize, notifications/initialized,
tools/list, two tools/call in a row, three at once (one with progress), one more.

Every HTTP exchange is logged (JSONL) by a tapping httpx2 transport: the request, the local port
of its connection, the response head and every response byte the client read, including the
whole SSE stream (client-side truth, not from a capture).

usage: client.py URL LOG_JSONL [N_CLIENTS]
"""
import asyncio
import os
import sys

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp_types import Implementation

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from httptap import TapTransport, make_note  # noqa: E402

URL = sys.argv[1]
note = make_note(sys.argv[2])
N = int(sys.argv[3]) if len(sys.argv) > 3 else 4


async def one_client(k):
    name = f"client-{k}"

    def factory(headers=None, timeout=None, auth=None):
        return httpx2.AsyncClient(transport=TapTransport(note, name), headers=headers, timeout=timeout, auth=auth)

    results = []

    async def call(tool, args, **kw):
        r = await client.call_tool(tool, args, **kw)
        txt = [c.text for c in r.content if getattr(c, "type", None) == "text"]
        results.append({"tool": tool, "arguments": args, "text": txt, "is_error": bool(r.is_error)})
        return r

    def on_session(sid):
        note(ev="session_created", client=name, session_id=sid)

    transport = sse_client(URL, httpx_client_factory=factory, on_session_created=on_session)
    async with Client(transport, mode="legacy", cache=None,
                      client_info=Implementation(name=f"mcpf-legacy-sse-{name}", version="1.0.0")) as client:
        note(ev="connected", client=name)
        tools = await client.list_tools()
        note(ev="result", client=name, what="tools/list", tools=sorted(t.name for t in tools.tools))
        await call("add", {"a": k, "b": 10})
        await call("add", {"a": k, "b": 20})
        progress = []

        async def on_progress(p, total, message):
            progress.append([p, total, message])

        await asyncio.gather(
            call("slow_add", {"a": k, "b": 100, "delay_ms": 600}),
            call("countdown", {"start": 3}, progress_callback=on_progress),
            call("slow_add", {"a": k, "b": 200, "delay_ms": 380}),  # between progress 2 and 3
        )
        note(ev="progress", client=name, tool="countdown", progress=progress)
        await call("add", {"a": k, "b": 1000})
        await asyncio.sleep(0.2)
    note(ev="results", client=name, results=results)
    note(ev="closed", client=name)


async def main():
    async def staggered(k):
        await asyncio.sleep(0.05 * (k - 1))
        await one_client(k)
    await asyncio.gather(*(staggered(k) for k in range(1, N + 1)))


asyncio.run(main())
