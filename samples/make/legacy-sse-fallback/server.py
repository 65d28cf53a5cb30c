#!/usr/bin/env python3
"""Official Python SDK (mcp 2.x) server speaking ONLY the legacy HTTP+SSE transport
(GET /sse, POST /messages/?session_id=...). This is what MCPServer.run("sse") does
(sse_app() served by uvicorn), plus an ASGI wrapper that logs every request the server
got and every byte of every response it sent (server-side truth).

usage: server.py PORT LOG_JSONL
"""
import base64
import json
import sys
import time

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
LOG = open(sys.argv[2], "a", buffering=1)
_seq = [0]


def note(**kw):
    kw["t"] = time.time()
    LOG.write(json.dumps(kw) + "\n")


mcp = MCPServer("mcpf-python-legacy-sse", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def logging_asgi(app):
    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        _seq[0] += 1
        seq = _seq[0]
        hdrs = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        note(ev="http_request", seq=seq, method=scope["method"], path=scope["path"],
             query=scope["query_string"].decode(), peer_port=scope["client"][1],
             accept=hdrs.get("accept"), mcp_protocol_version=hdrs.get("mcp-protocol-version"))
        body = bytearray()

        async def rcv():
            m = await receive()
            if m["type"] == "http.request":
                body.extend(m.get("body", b""))
                if not m.get("more_body"):
                    note(ev="http_request_body", seq=seq, body=body.decode("utf-8", "replace"))
            return m

        async def snd(m):
            if m["type"] == "http.response.start":
                h = {k.decode("latin-1"): v.decode("latin-1") for k, v in m["headers"]}
                note(ev="http_response_start", seq=seq, status=m["status"], content_type=h.get("content-type"))
            elif m["type"] == "http.response.body" and m.get("body"):
                note(ev="http_response_body", seq=seq, b64=base64.b64encode(m["body"]).decode())
            await send(m)

        try:
            await app(scope, rcv, snd)
        finally:
            note(ev="http_done", seq=seq)
    return wrapped


async def main():
    app = mcp.sse_app(sse_path="/sse", message_path="/messages/", host="127.0.0.1")
    config = uvicorn.Config(logging_asgi(app), host="127.0.0.1", port=PORT, log_level="info")
    await uvicorn.Server(config).serve()


anyio.run(main)
