#!/usr/bin/env python3
"""Official Python SDK (mcp 2.x) server for late-mcp: MCPServer, Streamable HTTP with SSE responses
and sessions on /mcp, one in-memory event store per session (as make/_py/py_server.py), and on the
SAME port two plain HTTP routes registered with the SDK's own `custom_route`:

* `GET /download?size=N`: N bytes of application/octet-stream (a fixed pattern, Content-Length N);
* `GET /healthz`: text/plain "ok".

So one server carries both MCP and ordinary HTTP, and a keep-alive connection can begin with a
download and then carry an MCP session: what the analyzer's early classification sets aside and
must resume.

Logs (JSONL, server-side truth, never from a capture): every HTTP request received with its peer
port and JSON-RPC body (mcpf_pylib.AsgiRequestLog), every session admitted and event id minted
(per_session_event_stores), every tool call (`tool_call`, with the session it ran in) and every
plain route served (`served`, with the byte count).

Tools: add, echo, slow_count (progress on the POST stream), touch (a list_changed notification on
the standalone GET stream): the ones make/concurrent-nginx/py_clients.py calls.

usage: server.py PORT LOG_JSONL
"""
import asyncio
import os
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from mcpf_pylib import AsgiRequestLog, JsonlLog, per_session_event_stores  # noqa: E402

PORT = int(sys.argv[1])
note = JsonlLog(sys.argv[2])

mcp = MCPServer("mcpf-late-mcp", version="1.0.0")

# The download body: a repeating printable pattern, so the bytes are the same at every run (and a
# hex dump shows where a cut falls) but never look like HTTP or JSON.
_PATTERN = bytes(range(0x41, 0x5B)) * 4 + b"\n"


def _session_of(ctx: Context):
    # The Mcp-Session-Id of the request that called the tool, for the tool_call log line.
    req = getattr(ctx.request_context, "request", None)
    return req.headers.get("mcp-session-id") if req is not None else None


@mcp.tool()
def add(a: int, b: int, ctx: Context) -> int:
    """Adds two integers."""
    note(ev="tool_call", tool="add", session_id=_session_of(ctx), arguments={"a": a, "b": b})
    return a + b


@mcp.tool()
def echo(text: str, ctx: Context) -> str:
    """Echoes its input."""
    note(ev="tool_call", tool="echo", session_id=_session_of(ctx), arguments={"text": text})
    return text


@mcp.tool()
async def slow_count(steps: int, ctx: Context) -> str:
    """Counts to `steps`, one progress notification every 250 ms."""
    note(ev="tool_call", tool="slow_count", session_id=_session_of(ctx), arguments={"steps": steps})
    for i in range(1, steps + 1):
        await asyncio.sleep(0.25)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"counted to {steps}"


@mcp.tool()
async def touch(ctx: Context) -> str:
    """Sends notifications/tools/list_changed, unrelated to this request (standalone GET stream)."""
    note(ev="tool_call", tool="touch", session_id=_session_of(ctx), arguments={})
    await ctx.session.send_tool_list_changed()
    return "touched"


@mcp.custom_route("/download", methods=["GET"])
async def download(request: Request) -> Response:
    size = int(request.query_params.get("size", "0"))
    body = (_PATTERN * (size // len(_PATTERN) + 1))[:size]
    note(ev="served", route="/download", size=size, peer_port=request.client.port if request.client else None)
    return Response(body, media_type="application/octet-stream")


@mcp.custom_route("/healthz", methods=["GET"])
async def healthz(request: Request) -> Response:
    note(ev="served", route="/healthz", size=2, peer_port=request.client.port if request.client else None)
    return PlainTextResponse("ok")


async def main():
    app = mcp.streamable_http_app(json_response=False, stateless_http=False, host="127.0.0.1")
    per_session_event_stores(mcp._lowlevel_server._session_manager, note)
    logged = AsgiRequestLog(app, note)
    note(ev="listening", port=PORT)
    config = uvicorn.Config(logged, host="127.0.0.1", port=PORT, log_level="warning")
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    asyncio.run(main())
