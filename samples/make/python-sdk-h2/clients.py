#!/usr/bin/env python3
"""N concurrent sessions of the official Python SDK client (mcp 2.x, mode="legacy") over ONE
HTTP/2 connection: every session's httpx2 client sends through one shared HTTP/2 transport, so
their requests, standalone GETs and event streams are streams of the same TCP connection (as an
agent host with one pooled client does). Each session's TapTransport logs what it sent and
received (client-side truth).

Session i starts i*0.1 s after the process: tools/list, add, slow_count (progress on its POST
stream), echo, then DELETE (even i) or just stop (odd i).

usage: clients.py URL N LOG_JSONL [CA_FILE]   (https URL: TLS with ALPN h2, the key log going to
SSLKEYLOGFILE; http URL: cleartext HTTP/2 with prior knowledge)
"""
import asyncio
import os
import ssl
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from mcpf_pylib import JsonlLog, TapTransport  # noqa: E402

URL, N = sys.argv[1], int(sys.argv[2])
note = JsonlLog(sys.argv[3])
CA = sys.argv[4] if len(sys.argv) > 4 else None


def text_of(r):
    return [c.text for c in r.content if getattr(c, "type", None) == "text"]


async def session(i, shared, t_start):
    tag = "h2-%02d" % i
    await asyncio.sleep(max(0.0, t_start + i * 0.1 - time.monotonic()))
    delete = i % 2 == 0
    tap = TapTransport(note, tag, inner=shared)
    http = httpx2.AsyncClient(transport=tap, timeout=httpx2.Timeout(30.0, read=300.0))
    async with http:
        transport = streamable_http_client(URL, http_client=http, terminate_on_close=delete)
        async with Client(transport, mode="legacy",
                          client_info=Implementation(name="mcpf-h2-client-%02d" % i, version="1.0.0")) as c:
            note(ev="connected", session=tag)
            tools = await c.list_tools()
            note(ev="result", session=tag, what="tools/list", tools=sorted(t.name for t in tools.tools))
            r = await c.call_tool("add", {"a": i, "b": 100})
            note(ev="result", session=tag, what="tools/call add", content=text_of(r))
            progress = []

            async def on_progress(p, total, message):
                progress.append(p)

            r = await c.call_tool("slow_count", {"steps": 2}, progress_callback=on_progress)
            note(ev="result", session=tag, what="tools/call slow_count", content=text_of(r), progress=progress)
            r = await c.call_tool("echo", {"text": "session %d over HTTP/2" % i})
            note(ev="result", session=tag, what="tools/call echo", content=text_of(r))
            note(ev="leaving", session=tag, delete=delete)
    note(ev="closed", session=tag, delete=delete)


async def main():
    if URL.startswith("https:"):
        # create_default_context writes the key log named by SSLKEYLOGFILE.
        shared = httpx2.AsyncHTTPTransport(http2=True, verify=ssl.create_default_context(cafile=CA))
    else:
        shared = httpx2.AsyncHTTPTransport(http1=False, http2=True)
    t_start = time.monotonic()
    async with shared:
        results = await asyncio.gather(*(session(i, shared, t_start) for i in range(N)),
                                       return_exceptions=True)
    bad = [(i, repr(r)) for i, r in enumerate(results) if isinstance(r, BaseException)]
    for i, r in bad:
        note(ev="session_failed", session="h2-%02d" % i, error=r)
        print("session h2-%02d failed: %s" % (i, r), file=sys.stderr)
    sys.exit(1 if bad else 0)


asyncio.run(main())
