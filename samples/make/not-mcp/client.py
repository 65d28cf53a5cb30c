#!/usr/bin/env python3
"""Clients of the three non-MCP services of server.py, standard library only, all at the same
time from 127.0.0.1 (one thread each):

  wallet-1, wallet-2   http.client keep-alive: 7 JSON-RPC exchanges each (single calls, a batch
                       with a notification in it, a string id, -32601, -32602)
  wallet-3             the same with `Connection: close` on every request (a new connection each),
                       plus a body that is not JSON (-32700)
  ticker-resume        an EventSource-like client: GET /prices, the server cuts it (RST) after
                       event 5, it waits the `retry:` time and reconnects with Last-Event-ID: 5,
                       reads events 6..10 and closes
  ticker-plain         GET /prices, reads 8 events, closes
  rest-1               keep-alive: GET status, 2 users, POST an order (201), a 404
  rest-2               `Connection: close`: GET status, GET a user

Every exchange is recorded (JSONL) by the client itself: local port, request, status, response
headers and body bytes; the SSE clients record every event they parsed and every (re)connect.

usage: client.py JSONRPC_PORT SSE_PORT REST_PORT LOG_JSONL
"""
import base64
import http.client
import json
import socket
import sys
import threading
import time

JSONRPC_PORT, SSE_PORT, REST_PORT = (int(x) for x in sys.argv[1:4])
LOG = open(sys.argv[4], "a", buffering=1)
LOCK = threading.Lock()
SEQ = [0]


def note(**kw):
    kw["t"] = time.time()
    with LOCK:
        LOG.write(json.dumps(kw) + "\n")


def next_seq():
    with LOCK:
        SEQ[0] += 1
        return SEQ[0]


ADDR = ["0xde0b295669a9fd93d5f28d9ec85e40f4cb697bae", "0x742d35cc6634c0532925a3b844bc454e4438f44e"]


def exchange(client, conn, method, path, body=None, headers=None):
    headers = dict(headers or {})
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        headers.setdefault("Content-Type", "application/json")
    headers.setdefault("Accept", "application/json")
    seq = next_seq()
    conn.request(method, path, body=data, headers=headers)
    port = conn.sock.getsockname()[1]
    resp = conn.getresponse()
    raw = resp.read()
    note(ev="exchange", client=client, seq=seq, local_port=port, method=method, path=path,
         request_headers=headers, request_body=data.decode() if data else None,
         status=resp.status, response_headers={k.lower(): v for k, v in resp.getheaders()},
         response_b64=base64.b64encode(raw).decode())
    if resp.getheader("connection", "").lower() == "close" or headers.get("Connection") == "close":
        conn.close()
    return json.loads(raw) if raw else None


def wallet(name, k, close_each):
    conn = http.client.HTTPConnection("127.0.0.1", JSONRPC_PORT, timeout=10)
    h = {"Connection": "close"} if close_each else {}
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_blockNumber", "params": []},
        {"jsonrpc": "2.0", "id": 3, "method": "eth_getBalance", "params": [ADDR[k % 2], "latest"]},
        [{"jsonrpc": "2.0", "id": 4, "method": "eth_blockNumber", "params": []},
         {"jsonrpc": "2.0", "id": 5, "method": "eth_gasPrice", "params": []},
         {"jsonrpc": "2.0", "method": "net_version", "params": []},
         {"jsonrpc": "2.0", "id": 6, "method": "net_version", "params": []}],
        {"jsonrpc": "2.0", "id": "blk-%d" % k, "method": "eth_getBlockByNumber", "params": ["0x12a05f0", k == 1]},
        {"jsonrpc": "2.0", "id": 7, "method": "eth_sendBundle", "params": [{}]},
        {"jsonrpc": "2.0", "id": 8, "method": "eth_getBalance", "params": []},
    ]
    for c in calls:
        exchange(name, conn, "POST", "/", c, h)
        time.sleep(0.03)
    if close_each:
        exchange(name, conn, "POST", "/", b'{"jsonrpc":"2.0","id":9,"method":"eth_chainId"', h)
    conn.close()
    note(ev="done", client=name)


def rest(name, close_each):
    conn = http.client.HTTPConnection("127.0.0.1", REST_PORT, timeout=10)
    h = {"Connection": "close"} if close_each else {}
    exchange(name, conn, "GET", "/api/v1/status", None, h)
    if close_each:
        exchange(name, conn, "GET", "/api/v1/users/42", None, h)
    else:
        for u in ("1", "42"):
            exchange(name, conn, "GET", "/api/v1/users/" + u, None, h)
            time.sleep(0.03)
        exchange(name, conn, "POST", "/api/v1/orders",
                 {"customer": 42, "items": [{"sku": "A-1", "qty": 2, "unit_price": 1250},
                                            {"sku": "B-7", "qty": 1, "unit_price": 499}]}, h)
        exchange(name, conn, "GET", "/api/v1/users/999", None, h)
    conn.close()
    note(ev="done", client=name)


class SseParser:
    """WHATWG event-stream parsing; keeps the last event id and the reconnection time."""

    def __init__(self):
        self.buf, self.data, self.event, self.last_id, self.retry = "", [], "", "", None

    def feed(self, text):
        out = []
        self.buf += text
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            line = line[:-1] if line.endswith("\r") else line
            if line == "":
                if self.data:
                    out.append({"event": self.event or "message", "id": self.last_id, "data": "\n".join(self.data)})
                self.data, self.event = [], ""
            elif line.startswith(":"):
                out.append({"comment": line})
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "data":
                    self.data.append(value)
                elif name == "event":
                    self.event = value
                elif name == "id" and "\0" not in value:
                    self.last_id = value
                elif name == "retry" and value.isdigit():
                    self.retry = int(value)
        return out


def ticker(name, stop_after_id=None, max_events=None):
    """EventSource-like: reconnects after a network error, with Last-Event-ID, after `retry` ms."""
    parser = SseParser()
    got = 0
    attempt = 0
    while True:
        attempt += 1
        s = socket.create_connection(("127.0.0.1", SSE_PORT), timeout=10)
        port = s.getsockname()[1]
        hdrs = ["Host: 127.0.0.1:%d" % SSE_PORT, "Accept: text/event-stream", "Cache-Control: no-cache",
                "User-Agent: mcpf-ticker/1.0", "X-Client-Name: " + name]
        if parser.last_id:
            hdrs.append("Last-Event-ID: " + parser.last_id)
        req = "GET /prices HTTP/1.1\r\n" + "".join(h + "\r\n" for h in hdrs) + "\r\n"
        seq = next_seq()
        s.sendall(req.encode())
        note(ev="sse_connect", client=name, seq=seq, attempt=attempt, local_port=port, request=req,
             last_event_id=parser.last_id or None)
        buf = b""
        head = None
        body_raw = bytearray()
        pending = b""
        reason = None
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    reason = "server closed (FIN)"
                    break
                if head is None:
                    buf += d
                    if b"\r\n\r\n" not in buf:
                        continue
                    head, d = buf.split(b"\r\n\r\n", 1)
                    lines = head.decode("latin-1").split("\r\n")
                    note(ev="sse_head", client=name, seq=seq, status_line=lines[0],
                         headers={l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]})
                body_raw += d
                pending += d
                # de-chunk what is complete
                text = ""
                while True:
                    i = pending.find(b"\r\n")
                    if i < 0:
                        break
                    size = int(pending[:i].split(b";")[0], 16)
                    if len(pending) < i + 2 + size + 2:
                        break
                    text += pending[i + 2:i + 2 + size].decode()
                    pending = pending[i + 2 + size + 2:]
                    if size == 0:
                        reason = "end of chunked body"
                for ev in parser.feed(text):
                    if "comment" in ev:
                        note(ev="sse_comment", client=name, seq=seq, comment=ev["comment"])
                        continue
                    got += 1
                    note(ev="sse_event", client=name, seq=seq, event=ev["event"], id=ev["id"], data=json.loads(ev["data"]))
                    if (stop_after_id and ev["id"] == str(stop_after_id)) or (max_events and got >= max_events):
                        reason = "client closed (done)"
                        break
                if reason:
                    break
        except ConnectionResetError:
            reason = "connection reset by peer"
        note(ev="sse_end", client=name, seq=seq, reason=reason, last_event_id=parser.last_id,
             retry_ms=parser.retry, body_b64=base64.b64encode(bytes(body_raw)).decode())
        s.close()
        if reason == "client closed (done)":
            break
        time.sleep((parser.retry or 3000) / 1000)
    note(ev="done", client=name)


def main():
    jobs = [threading.Thread(target=wallet, args=("wallet-1", 1, False)),
            threading.Thread(target=wallet, args=("wallet-2", 2, False)),
            threading.Thread(target=wallet, args=("wallet-3", 3, True)),
            threading.Thread(target=ticker, args=("ticker-resume",), kwargs={"stop_after_id": 10}),
            threading.Thread(target=ticker, args=("ticker-plain",), kwargs={"max_events": 8}),
            threading.Thread(target=rest, args=("rest-1", False)),
            threading.Thread(target=rest, args=("rest-2", True))]
    for i, j in enumerate(jobs):
        j.start()
        time.sleep(0.02)
    for j in jobs:
        j.join()


main()
