#!/usr/bin/env python3
"""Clients of late-mcp (httpx2, the HTTP client of the official Python SDK's venv). Every request
goes through mcpf_pylib.TapTransport, which logs what was sent, the response head, the client's
local TCP port of the connection that carried it and every SSE event read (client-side truth).

late URL SIZE TAG LOG
    ONE keep-alive connection (`httpx2.Limits(max_connections=1)`: the pool can never open a
    second one) that first downloads SIZE bytes (`GET /download?size=SIZE`, no
    `Accept: text/event-stream`: a request that cannot be MCP) and then carries a whole MCP
    session: initialize, notifications/initialized, tools/list, tools/call echo, tools/call
    slow_count (with a progressToken: progress on the POST stream), DELETE. The JSON-RPC requests
    are written by hand, because the SDK client opens a standalone GET stream after initialized
    that would hold the only connection (the POSTs would wait for it forever). Exits non-zero
    unless every request went out on the same local port and every request was answered.

plain URL TAG LOG WHAT [WHAT ...]
    Ordinary HTTP, each request on a connection of its own (a new client each time):
    WHAT is `healthz`, `download=N`, or `sleep=S` (wait S seconds first).
"""
import asyncio
import json
import os
import sys

import httpx2
from mcp_types.version import LATEST_HANDSHAKE_VERSION

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from mcpf_pylib import JsonlLog, SseParser, TapTransport  # noqa: E402

ACCEPT_MCP = "application/json, text/event-stream"


def sse_messages(body: bytes):
    """The JSON-RPC messages of a complete SSE response body (priming events have no data)."""
    p = SseParser()
    return [json.loads(e["data"]) for e in p.feed(body) if e.get("dispatched") and e["data"]]


async def late(url, size, tag, note):
    base = url.rsplit("/", 1)[0]
    tap = TapTransport(note, tag, limits=httpx2.Limits(max_connections=1, max_keepalive_connections=1))
    ports = []

    def port_of(resp):
        ns = resp.extensions.get("network_stream")
        ports.append(ns.get_extra_info("client_addr")[1])

    async with httpx2.AsyncClient(transport=tap, timeout=httpx2.Timeout(30.0)) as http:
        r = await http.get(f"{base}/download?size={size}")
        port_of(r)
        note(ev="download", session=tag, size=size, status=r.status_code, bytes=len(r.content),
             content_type=r.headers.get("content-type"))
        assert r.status_code == 200 and len(r.content) == size, (r.status_code, len(r.content))

        async def rpc(msg, headers):
            resp = await http.post(url, json=msg, headers={"Accept": ACCEPT_MCP, **headers})
            port_of(resp)
            return resp

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                           "clientInfo": {"name": "mcpf-late-%s" % tag, "version": "1.0.0"}}}
        r = await rpc(init, {})
        sid = r.headers["mcp-session-id"]
        res = [m for m in sse_messages(r.content) if m.get("id") == 1][0]["result"]
        pv = res["protocolVersion"]
        note(ev="result", session=tag, what="initialize", protocol_version=pv,
             server=res["serverInfo"]["name"])
        h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": pv}
        r = await rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
        assert r.status_code == 202, r.status_code

        r = await rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, h)
        tools = [m for m in sse_messages(r.content) if m.get("id") == 2][0]["result"]["tools"]
        note(ev="result", session=tag, what="tools/list", tools=sorted(t["name"] for t in tools))

        r = await rpc({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": "after a %d-byte download" % size}}}, h)
        m = [m for m in sse_messages(r.content) if m.get("id") == 3][0]
        note(ev="result", session=tag, what="tools/call echo", content=[c["text"] for c in m["result"]["content"]])

        r = await rpc({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": "slow_count", "arguments": {"steps": 3},
                                  "_meta": {"progressToken": "late-%s" % tag}}}, h)
        msgs = sse_messages(r.content)
        progress = [x["params"]["progress"] for x in msgs if x.get("method") == "notifications/progress"]
        for p in progress:
            note(ev="progress", session=tag, progress=p, total=3)
        m = [m for m in msgs if m.get("id") == 4][0]
        note(ev="result", session=tag, what="tools/call slow_count",
             content=[c["text"] for c in m["result"]["content"]], progress=progress)

        r = await http.delete(url, headers=h)
        port_of(r)
        assert r.status_code == 200, r.status_code
        note(ev="closed", session=tag, delete=True)
    note(ev="one_connection", session=tag, local_ports=sorted(set(ports)), requests=len(ports))
    if len(set(ports)) != 1:
        sys.exit("%s: requests went out on several connections: %s" % (tag, ports))


async def plain(url, tag, note, whats):
    base = url.rsplit("/", 1)[0]
    n = 0
    for w in whats:
        if w.startswith("sleep="):
            await asyncio.sleep(float(w.split("=", 1)[1]))
            continue
        n += 1
        one = "%s-%02d" % (tag, n)
        path = "/healthz" if w == "healthz" else "/download?size=%d" % int(w.split("=", 1)[1])
        # A client (a pool) per request: each request on a connection of its own.
        async with httpx2.AsyncClient(transport=TapTransport(note, one), timeout=httpx2.Timeout(30.0)) as http:
            r = await http.get(base + path)
            note(ev="plain", session=one, path=path, status=r.status_code, bytes=len(r.content),
                 content_type=r.headers.get("content-type"))
            assert r.status_code == 200, (path, r.status_code)


def main():
    cmd = sys.argv[1]
    if cmd == "late":
        url, size, tag, log = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
        asyncio.run(late(url, size, tag, JsonlLog(log)))
    elif cmd == "plain":
        url, tag, log = sys.argv[2], sys.argv[3], sys.argv[4]
        asyncio.run(plain(url, tag, JsonlLog(log), sys.argv[5:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
