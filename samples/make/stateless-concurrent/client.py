#!/usr/bin/env python3
"""Four official Python SDK (mcp 2.x) clients in one process, all from 127.0.0.1, against one
stateless server. Each is an `mcp.Client(..., mode="auto")` with its own httpx2 client (its own
connection pool): it probes `server/discover` at 2026-07-28 and then sends every request as a
self-contained POST. Each client runs: tools/list, two tools/call in a row, then three tools/call
at once (separate connections, one of them with progress on an SSE response), then one more.
The four clients run at the same time.

Every HTTP exchange is logged (JSONL) by a tapping httpx2 transport: the request (method,
headers, body), the local port of the connection it went out on, the response head and every
response byte the client read (client-side truth, not from a capture).

usage: client.py URL LOG_JSONL [N_CLIENTS]
"""
import asyncio
import os
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp_types import Implementation

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from httptap import TapTransport, make_note  # noqa: E402

URL = sys.argv[1]
note = make_note(sys.argv[2])
N = int(sys.argv[3]) if len(sys.argv) > 3 else 4


async def one_client(k):
    name = f"client-{k}"
    http = httpx2.AsyncClient(transport=TapTransport(note, name),
                              timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
    results = []

    async def call(tool, args, **kw):
        r = await client.call_tool(tool, args, **kw)
        txt = [c.text for c in r.content if getattr(c, "type", None) == "text"]
        results.append({"tool": tool, "arguments": args, "text": txt, "is_error": bool(r.is_error)})
        return r

    async with http:
        transport = streamable_http_client(URL, http_client=http, terminate_on_close=True)
        async with Client(transport, mode="auto", cache=None,
                          client_info=Implementation(name=f"mcpf-stateless-{name}", version="1.0.0")) as client:
            note(ev="connected", client=name,
                 protocol_version=getattr(client.session, "protocol_version", None) or
                 str(getattr(getattr(client.session, "discover_result", None), "supported_versions", None)))
            tools = await client.list_tools()
            note(ev="result", client=name, what="tools/list", tools=sorted(t.name for t in tools.tools))
            await call("add", {"a": k, "b": 10})
            await call("add", {"a": k, "b": 20})
            progress = []

            async def on_progress(p, total, message):
                progress.append([p, total, message])

            # three at once: each needs its own connection (the first two are held open by the server)
            await asyncio.gather(
                call("slow_add", {"a": k, "b": 100, "delay_ms": 600}),
                call("countdown", {"start": 3}, progress_callback=on_progress),
                call("slow_add", {"a": k, "b": 200, "delay_ms": 300}),
            )
            note(ev="progress", client=name, tool="countdown", progress=progress)
            await call("add", {"a": k, "b": 1000})
    note(ev="results", client=name, results=results)
    note(ev="closed", client=name)


async def main():
    async def staggered(k):
        await asyncio.sleep(0.05 * (k - 1))
        await one_client(k)
    await asyncio.gather(*(staggered(k) for k in range(1, N + 1)))


asyncio.run(main())
