#!/usr/bin/env python3
"""Three small HTTP/1.1 services that are NOT MCP, standard library only (asyncio):

  :JSONRPC_PORT  an Ethereum-style JSON-RPC 2.0 API: POST / with eth_blockNumber, eth_chainId,
                 net_version, eth_getBalance, eth_getBlockByNumber, eth_gasPrice, batches (arrays,
                 a notification inside), errors -32601 / -32602 / -32700; keep-alive.
  :SSE_PORT      a stock ticker: GET /prices -> text/event-stream (chunked), `retry: 300`,
                 `event: price`, integer `id:`, JSON data, `: keep-alive` comments; honours
                 Last-Event-ID (continues after it). The first connection of the client named
                 "ticker-resume" is cut (RST) after its 5th event, like a dropped network.
  :REST_PORT     plain JSON over HTTP: GET /api/v1/status, GET /api/v1/users/<n>, POST
                 /api/v1/orders (201), a 404 with a JSON error body.

Every request (peer port, request line, headers, body) and every byte written is logged as JSONL
(server-side truth).

usage: server.py JSONRPC_PORT SSE_PORT REST_PORT LOG_JSONL
"""
import asyncio
import base64
import json
import signal
import socket
import struct
import sys
import time

JSONRPC_PORT, SSE_PORT, REST_PORT = (int(x) for x in sys.argv[1:4])
LOG = open(sys.argv[4], "a", buffering=1)
SEQ = [0]


def note(**kw):
    kw["t"] = time.time()
    LOG.write(json.dumps(kw) + "\n")


class Conn:
    def __init__(self, service, reader, writer):
        self.service, self.reader, self.writer = service, reader, writer
        self.peer_port = writer.get_extra_info("peername")[1]

    async def read_request(self):
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0") or 0)
        body = await self.reader.readexactly(n) if n else b""
        SEQ[0] += 1
        seq = SEQ[0]
        note(ev="http_request", seq=seq, service=self.service, peer_port=self.peer_port, method=method,
             target=target, version=version, headers=headers, body=body.decode("utf-8", "replace") if body else None)
        return seq, method, target, headers, body

    async def write(self, seq, data):
        note(ev="http_response_bytes", seq=seq, b64=base64.b64encode(data).decode())
        self.writer.write(data)
        await self.writer.drain()

    async def respond(self, seq, status, reason, body=b"", ctype="application/json", extra=(), close=False):
        h = ["HTTP/1.1 %d %s" % (status, reason), "Date: Mon, 30 Nov 2026 00:00:00 GMT", "Server: mcpf-not-mcp/1.0"]
        if ctype and body:
            h.append("Content-Type: " + ctype)
        h.append("Content-Length: %d" % len(body))
        h += ["%s: %s" % kv for kv in extra]
        if close:
            h.append("Connection: close")
        note(ev="http_response", seq=seq, status=status, content_type=ctype if body else None)
        await self.write(seq, ("\r\n".join(h) + "\r\n\r\n").encode() + body)


# --- Ethereum-style JSON-RPC ------------------------------------------------------------------
BLOCK = [0x12A05F2]  # the head block; constant so that content does not depend on scheduling
BALANCES = {"0xde0b295669a9fd93d5f28d9ec85e40f4cb697bae": 0x1BC16D674EC80000,
            "0x742d35cc6634c0532925a3b844bc454e4438f44e": 0x0}


def eth_call(m):
    if not isinstance(m, dict) or m.get("jsonrpc") != "2.0" or "method" not in m:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}}
    meth, params, mid = m["method"], m.get("params") or [], m.get("id")
    if meth == "eth_blockNumber":
        res = hex(BLOCK[0])
    elif meth == "eth_chainId":
        res = "0x1"
    elif meth == "net_version":
        res = "1"
    elif meth == "eth_gasPrice":
        res = "0x3b9aca00"
    elif meth == "eth_getBalance":
        if len(params) != 2 or not isinstance(params[0], str):
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "missing value for required argument 1"}}
        res = hex(BALANCES.get(params[0].lower(), 0))
    elif meth == "eth_getBlockByNumber":
        n = int(params[0], 16) if params and params[0] not in ("latest", "pending") else BLOCK[0]
        res = {"number": hex(n), "hash": "0x%064x" % (n * 7919), "parentHash": "0x%064x" % ((n - 1) * 7919),
               "timestamp": hex(1796000000 + n % 100000), "transactions": [] if not params[1:2] or not params[1] else
               [{"hash": "0x%064x" % (n * 31 + i), "value": hex(10 ** 15 * i)} for i in range(1, 3)]}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601,
                                                       "message": "the method %s does not exist/is not available" % meth}}
    return {"jsonrpc": "2.0", "id": mid, "result": res} if "id" in m else None


async def serve_jsonrpc(conn):
    while True:
        r = await conn.read_request()
        if r is None:
            return
        seq, method, target, headers, body = r
        if method != "POST":
            await conn.respond(seq, 405, "Method Not Allowed", b'{"error":"POST only"}')
            continue
        try:
            msg = json.loads(body)
        except ValueError:
            out = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        else:
            if isinstance(msg, list):
                out = [x for x in (eth_call(x) for x in msg) if x is not None]
            else:
                out = eth_call(msg)
        data = json.dumps(out, separators=(",", ":")).encode() if out is not None else b""
        await conn.respond(seq, 200, "OK", data, "application/json")
        if headers.get("connection", "").lower() == "close":
            return


# --- stock ticker SSE -------------------------------------------------------------------------
SYMBOLS = ["ACME", "GLOBEX", "INITECH"]
ticker_connections = {}


def price_event(n):
    sym = SYMBOLS[(n - 1) % len(SYMBOLS)]
    cents = 10000 + (n * 137) % 2500
    return {"symbol": sym, "price": "%d.%02d" % divmod(cents, 100), "seq": n}


async def serve_sse(conn):
    r = await conn.read_request()
    if r is None:
        return
    seq, method, target, headers, body = r
    if method != "GET" or target.split("?")[0] != "/prices":
        await conn.respond(seq, 404, "Not Found", b'{"error":"no such feed"}', close=True)
        return
    who = headers.get("x-client-name", "?")
    k = ticker_connections[who] = ticker_connections.get(who, 0) + 1
    last = headers.get("last-event-id")
    start = int(last) + 1 if last and last.isdigit() else 1
    cut_after = 5 if (who == "ticker-resume" and k == 1) else None
    h = ("HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 00:00:00 GMT\r\nServer: mcpf-not-mcp/1.0\r\n"
         "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
    note(ev="http_response", seq=seq, status=200, content_type="text/event-stream", last_event_id=last,
         resume_from=start, cut_after=cut_after, client=who, connection_of_client=k)
    await conn.write(seq, h.encode())

    async def chunk(text):
        b = text.encode()
        await conn.write(seq, b"%x\r\n" % len(b) + b + b"\r\n")

    sent = 0
    try:
        await chunk("retry: 300\n: ticker for %s\n\n" % ",".join(SYMBOLS))
        n = start
        while True:
            await asyncio.sleep(0.08)
            if n % 4 == 0:
                await chunk(": keep-alive\n\n")
            await chunk("event: price\nid: %d\ndata: %s\n\n" % (n, json.dumps(price_event(n), separators=(",", ":"))))
            note(ev="sse_event_sent", seq=seq, id=n)
            sent += 1
            n += 1
            if cut_after is not None and sent >= cut_after:
                await asyncio.sleep(0.05)
                sock = conn.writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                note(ev="cut", seq=seq, after_id=n - 1, how="RST (SO_LINGER 0)")
                conn.writer.transport.abort()
                return
            if n > 60:  # a bound; clients close long before
                await conn.write(seq, b"0\r\n\r\n")
                return
    except (ConnectionError, OSError):
        note(ev="peer_gone", seq=seq, events_sent=sent)


# --- plain REST -------------------------------------------------------------------------------
USERS = {"1": {"id": 1, "name": "Ada Lovelace", "email": "ada@example.test", "roles": ["admin"]},
         "42": {"id": 42, "name": "Alan Turing", "email": "alan@example.test", "roles": ["user"]}}
ORDERS = [1000]


async def serve_rest(conn):
    while True:
        r = await conn.read_request()
        if r is None:
            return
        seq, method, target, headers, body = r
        path = target.split("?")[0]
        close = headers.get("connection", "").lower() == "close"
        if method == "GET" and path == "/api/v1/status":
            await conn.respond(seq, 200, "OK", b'{"status":"ok","version":"3.4.1","uptime_s":86400}', close=close)
        elif method == "GET" and path.startswith("/api/v1/users/"):
            u = USERS.get(path.rsplit("/", 1)[1])
            if u:
                await conn.respond(seq, 200, "OK", json.dumps(u, separators=(",", ":")).encode(), close=close)
            else:
                await conn.respond(seq, 404, "Not Found", b'{"error":{"code":"not_found","message":"no such user"}}',
                                   close=close)
        elif method == "POST" and path == "/api/v1/orders":
            o = json.loads(body)
            ORDERS[0] += 1
            out = {"id": ORDERS[0], "status": "accepted", "items": o.get("items", []),
                   "total": sum(i["qty"] * i["unit_price"] for i in o.get("items", []))}
            await conn.respond(seq, 201, "Created", json.dumps(out, separators=(",", ":")).encode(),
                               extra=[("Location", "/api/v1/orders/%d" % ORDERS[0])], close=close)
        else:
            await conn.respond(seq, 404, "Not Found", b'{"error":{"code":"not_found","message":"no route"}}', close=close)
        if close:
            return


def handler(service, fn):
    async def h(reader, writer):
        conn = Conn(service, reader, writer)
        try:
            await fn(conn)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass
    return h


async def main():
    servers = [await asyncio.start_server(handler("jsonrpc", serve_jsonrpc), "127.0.0.1", JSONRPC_PORT),
               await asyncio.start_server(handler("sse", serve_sse), "127.0.0.1", SSE_PORT),
               await asyncio.start_server(handler("rest", serve_rest), "127.0.0.1", REST_PORT)]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, stop.set)
    print("READY", flush=True)
    await stop.wait()
    for s in servers:
        s.close()


asyncio.run(main())
