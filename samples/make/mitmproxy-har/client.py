#!/usr/bin/env python3
"""Official Python SDK (mcp 2.x) client, talking to the server through mitmproxy: forced
initialize handshake (mode="legacy"), tools/list, tools/call add, tools/call slow_count (with
progress), then close (DELETE). Every request carries a bearer token and a cookie, so the
Chrome-style sanitized variant has something to strip. Logs every HTTP request it sends and
every response head it gets as JSONL, from httpx event hooks (the ground truth).

usage: client.py URL HTTP_LOG_JSONL
"""
import asyncio
import json
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = sys.argv[1]
LOG = open(sys.argv[2], "a", buffering=1)
TOKEN = "mcpf-har-token-DO-NOT-LEAK"
COOKIE = "mcpf_sid=mcpf-har-cookie-DO-NOT-LEAK"


def note(**kw):
    kw["t"] = time.time()
    LOG.write(json.dumps(kw) + "\n")


_seq = [0]


async def on_request(request: httpx2.Request):
    _seq[0] += 1
    request.extensions["mcpf_seq"] = _seq[0]
    body = None
    if request.method == "POST":
        body = json.loads(request.content)
    note(ev="http_request", seq=_seq[0], method=request.method, url=str(request.url),
         authorization=request.headers.get("authorization"),
         cookie=request.headers.get("cookie"),
         mcp_session_id=request.headers.get("mcp-session-id"),
         mcp_protocol_version=request.headers.get("mcp-protocol-version"),
         last_event_id=request.headers.get("last-event-id"),
         accept=request.headers.get("accept"), body=body)


async def on_response(response: httpx2.Response):
    note(ev="http_response", seq=response.request.extensions.get("mcpf_seq"),
         method=response.request.method, status=response.status_code,
         content_type=response.headers.get("content-type"),
         mcp_session_id=response.headers.get("mcp-session-id"))


async def main():
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}", "Cookie": COOKIE})
    http.event_hooks = {"request": [on_request], "response": [on_response]}
    progress = []

    async def on_progress(p, total, message):
        progress.append((p, total, message))

    async with http:
        transport = streamable_http_client(URL, http_client=http, terminate_on_close=True)
        async with Client(transport, mode="legacy") as client:
            tools = await client.list_tools()
            note(ev="result", what="tools/list", tools=sorted(t.name for t in tools.tools))
            r = await client.call_tool("add", {"a": 2, "b": 40})
            note(ev="result", what="tools/call add", content=[c.model_dump(mode="json") for c in r.content])
            r = await client.call_tool("slow_count", {"steps": 3}, progress_callback=on_progress)
            note(ev="result", what="tools/call slow_count",
                 content=[c.model_dump(mode="json") for c in r.content], progress=progress)
    note(ev="closed")


asyncio.run(main())
