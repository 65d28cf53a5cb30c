#!/usr/bin/env python3
"""Official Python SDK (mcp 2.x) MCPServer over Streamable HTTP with stateless_http=True and
SSE responses (json_response=False). A 2.x client in mode="auto" speaks the stateless
2026-07-28 revision to it (server/discover, then self-contained POSTs, no initialize, no
Mcp-Session-Id). An ASGI wrapper logs every request the server got (with the peer port of
its connection) and every byte of every response it sent (server-side truth).

usage: server.py PORT LOG_JSONL
"""
import asyncio
import os
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from httptap import logging_asgi, make_note  # noqa: E402

PORT = int(sys.argv[1])
note = make_note(sys.argv[2])

mcp = MCPServer("mcpf-python-stateless", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
async def slow_add(a: int, b: int, delay_ms: int) -> int:
    """Adds two integers after a delay (keeps the POST open so calls overlap)."""
    await asyncio.sleep(delay_ms / 1000)
    return a + b


@mcp.tool()
async def countdown(start: int, ctx: Context) -> str:
    """Counts down from `start`, one progress notification per step."""
    for i in range(1, start + 1):
        await asyncio.sleep(0.15)
        await ctx.report_progress(i, start, f"{start - i} left")
    return f"countdown from {start} done"


async def main():
    app = mcp.streamable_http_app(json_response=False, stateless_http=True, host="127.0.0.1")
    config = uvicorn.Config(logging_asgi(app, note), host="127.0.0.1", port=PORT, log_level="warning",
                            lifespan="on")
    await uvicorn.Server(config).serve()


anyio.run(main)
