#!/usr/bin/env python3
"""Official Python SDK (mcp 2.x) server behind mitmproxy: Streamable HTTP, SSE responses,
sessions, an in-memory event store (SSE events carry ids, POST streams are primed).

usage: server.py PORT EVENT_LOG_JSONL
"""
import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

# The same event store as the python-sdk-healthy sample (whose SDK lock this sample uses too).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-sdk-healthy"))
from event_store import LoggingInMemoryEventStore  # noqa: E402

PORT = int(sys.argv[1])
EVENT_LOG = sys.argv[2]

mcp = MCPServer("mcpf-har-python", version="1.0.0")


@mcp.tool()
async def slow_count(steps: int, ctx: Context) -> str:
    """Counts to `steps`, reporting progress after each step."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0.2)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"counted to {steps}"


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


if __name__ == "__main__":
    mcp.run(
        "streamable-http",
        host="127.0.0.1",
        port=PORT,
        json_response=False,
        stateless_http=False,
        event_store=LoggingInMemoryEventStore(EVENT_LOG),
    )
