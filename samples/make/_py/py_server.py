#!/usr/bin/env python3
"""Official Python SDK (mcp 2.x) server for the samples: MCPServer, Streamable HTTP, SSE responses,
sessions, and ONE in-memory event store PER SESSION (uuid4 ids, priming events), so that a
`Last-Event-ID` resume replays only that session's stream. Logs every HTTP request it receives,
every event id minted and every replay (server-side truth, not from a capture).

Tools: add, echo, slow_count (progress on the POST stream), touch (one
notifications/tools/list_changed, unrelated to any request: the standalone GET stream) and
broadcast (unrelated notifications/message on the GET stream, progress on the POST stream).

With a third argument `shared-store`, every session writes to ONE event store keyed by stream id
alone, as the SDK's session manager does when given one store (every standalone stream is
`_GET_stream`, every POST stream its request id): a resume can replay other sessions' events.

Served by uvicorn (HTTP/1.1), or with MCPF_ASGI_SERVER=hypercorn by Hypercorn, which also speaks
cleartext HTTP/2, by prior knowledge or after an `Upgrade: h2c`.

usage: py_server.py PORT LOG_JSONL [shared-store]
"""
import asyncio
import os
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

from mcpf_pylib import AsgiRequestLog, JsonlLog, per_session_event_stores

PORT = int(sys.argv[1])
note = JsonlLog(sys.argv[2])
SHARED_STORE = sys.argv[3:] == ["shared-store"]

mcp = MCPServer("mcpf-py-server", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Echoes its input."""
    return text


@mcp.tool()
async def slow_count(steps: int, ctx: Context) -> str:
    """Counts to `steps`, one progress notification every 250 ms."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0.25)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"counted to {steps}"


@mcp.tool()
async def touch(ctx: Context) -> str:
    """Sends notifications/tools/list_changed, unrelated to this request (standalone GET stream)."""
    await ctx.session.send_tool_list_changed()
    return "touched"


@mcp.tool()
async def broadcast(count: int, interval_ms: int, ctx: Context) -> str:
    """Sends `count` log notifications unrelated to this request (standalone GET stream), one every
    `interval_ms`, each followed by a progress notification on this request's POST stream."""
    for i in range(1, count + 1):
        await asyncio.sleep(interval_ms / 1000)
        await ctx.session.send_log_message("info", {"seq": i, "of": count}, logger="broadcast")
        await ctx.report_progress(i, count, f"broadcast {i}/{count}")
    return f"broadcast {count} done"


async def main():
    app = mcp.streamable_http_app(json_response=False, stateless_http=False, host="127.0.0.1")
    per_session_event_stores(mcp._lowlevel_server._session_manager, note, shared=SHARED_STORE)
    logged = AsgiRequestLog(app, note)
    note(ev="listening", port=PORT)
    if os.environ.get("MCPF_ASGI_SERVER") == "hypercorn":
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        config = Config()
        config.bind = [f"127.0.0.1:{PORT}"]
        await serve(logged, config)
        return
    config = uvicorn.Config(logged, host="127.0.0.1", port=PORT, log_level="warning")
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    asyncio.run(main())
