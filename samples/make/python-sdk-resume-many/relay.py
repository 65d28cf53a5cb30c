#!/usr/bin/env python3
"""A small TCP relay of our own between MCP clients and an MCP server (standard library only).

It forwards bytes both ways untouched, and watches them: it reads each HTTP request head (and
JSON-RPC body) a client sends, and decodes the response that follows (chunked or not) far enough to
count the SSE events carrying an `id:`. A few streams are cut on purpose, by rules read from a JSON
file keyed by the client's User-Agent:

  {"get":  {"clients": ["mcpf-py-client/00", ...], "cut_after_events": 3},
   "post": {"clients": [...], "tool": "slow_count", "cut_after_events": 2},
   "hold_ms": 150}

* get: the first standalone GET of that client (a GET without Last-Event-ID) is cut after
  `cut_after_events` events with an id have been forwarded;
* post: the first POST of that client calling `tool` has its SSE response cut after
  `cut_after_events` events with an id.

A cut forwards the bytes up to the end of the last counted event and nothing more, waits hold_ms
(so the client has read them), then resets (RST) both the client side and the upstream side.
Resumed streams (GET with Last-Event-ID) are never cut. Everything is logged as JSONL.

usage: relay.py LISTEN_PORT UPSTREAM_PORT RULES_JSON LOG_JSONL
"""
import asyncio
import json
import signal
import socket
import struct
import sys
import time

LISTEN, UPSTREAM = int(sys.argv[1]), int(sys.argv[2])
RULES = json.load(open(sys.argv[3]))
LOG = open(sys.argv[4], "a", buffering=1)
HOLD = RULES.get("hold_ms", 150) / 1000.0


def note(**kw):
    kw["t"] = round(time.time(), 6)
    LOG.write(json.dumps(kw, separators=(",", ":")) + "\n")


cut_done = set()  # (user agent, "get" | "post")
conn_seq = 0


class SseCounter:
    """Counts SSE events that carry an id, in decoded body text (CR, LF or CRLF line ends)."""

    def __init__(self):
        self.line = bytearray()
        self.prev_cr = False
        self.has_id = False
        self.has_field = False
        self.cur_id = None
        self.ids = []

    def feed(self, data):
        """Feed body bytes; returns the list of (offset_after_event, event_id) completed in data."""
        done = []
        for i, b in enumerate(data):
            if self.prev_cr and b == 0x0A:  # LF of a CRLF
                self.prev_cr = False
                if done and done[-1][0] == i:
                    done[-1] = (i + 1, done[-1][1])
                continue
            self.prev_cr = False
            if b in (0x0A, 0x0D):
                self.prev_cr = b == 0x0D
                line = bytes(self.line)
                self.line.clear()
                if not line:
                    if self.has_id:
                        self.ids.append(self.cur_id)
                        done.append((i + 1, self.cur_id))
                    self.has_id = self.has_field = False
                    self.cur_id = None
                elif not line.startswith(b":"):
                    name, _, value = line.partition(b":")
                    if name == b"id":
                        self.has_id = True
                        self.cur_id = value[1:].decode() if value.startswith(b" ") else value.decode()
            else:
                self.line.append(b)
        return done


class ResponseWatcher:
    """Decodes one HTTP response (head, then chunked / content-length / close-delimited body)
    from raw server->client bytes and counts its SSE events with ids, reporting raw offsets."""

    def __init__(self):
        self.head = bytearray()
        self.in_head = True
        self.status = None
        self.sse = False
        self.chunked = False
        self.chunk_left = 0
        self.chunk_state = "size"  # size | data | data_crlf
        self.size_line = bytearray()
        self.counter = SseCounter()

    def feed(self, raw):
        """Returns list of (raw_offset_after_event, event_id)."""
        out = []
        i = 0
        n = len(raw)
        if self.in_head:
            self.head += raw
            k = self.head.find(b"\r\n\r\n")
            if k < 0:
                return out
            body_start_in_raw = len(raw) - (len(self.head) - (k + 4))
            head = bytes(self.head[:k]).decode("latin-1").split("\r\n")
            self.status = int(head[0].split()[1])
            hs = {}
            for line in head[1:]:
                a, _, b = line.partition(":")
                hs[a.strip().lower()] = b.strip()
            self.sse = hs.get("content-type", "").startswith("text/event-stream")
            self.chunked = "chunked" in hs.get("transfer-encoding", "").lower()
            self.in_head = False
            i = body_start_in_raw
        if not self.sse:
            return out
        if not self.chunked:
            for off, eid in self.counter.feed(raw[i:]):
                out.append((i + off, eid))
            return out
        while i < n:
            if self.chunk_state == "size":
                j = raw.find(b"\n", i)
                if j < 0:
                    self.size_line += raw[i:]
                    return out
                self.size_line += raw[i:j]
                i = j + 1
                size = int(bytes(self.size_line).split(b";")[0].strip() or b"0", 16)
                self.size_line.clear()
                self.chunk_left = size
                self.chunk_state = "data" if size else "size"
            elif self.chunk_state == "data":
                take = min(self.chunk_left, n - i)
                for off, eid in self.counter.feed(raw[i:i + take]):
                    out.append((i + off, eid))
                i += take
                self.chunk_left -= take
                if self.chunk_left == 0:
                    self.chunk_state = "data_crlf"
            else:  # skip the CRLF after a chunk
                j = raw.find(b"\n", i)
                if j < 0:
                    return out
                i = j + 1
                self.chunk_state = "size"
        return out


def parse_request(buf):
    """(head dict, total length) of the first complete request in buf, or None."""
    k = buf.find(b"\r\n\r\n")
    if k < 0:
        return None
    lines = bytes(buf[:k]).decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    hs = {}
    for line in lines[1:]:
        a, _, b = line.partition(":")
        hs[a.strip().lower()] = b.strip()
    n = int(hs.get("content-length", "0") or 0)
    if len(buf) < k + 4 + n:
        return None
    body = bytes(buf[k + 4:k + 4 + n])
    rpc = None
    if body:
        try:
            m = json.loads(body)
            rpc = {"method": m.get("method"), "id": m.get("id")}
            if m.get("method") == "tools/call":
                rpc["tool"] = (m.get("params") or {}).get("name")
        except ValueError:
            rpc = {"unparsable": True}
    return {"method": method, "path": target, "user_agent": hs.get("user-agent"),
            "mcp_session_id": hs.get("mcp-session-id"), "last_event_id": hs.get("last-event-id"),
            "jsonrpc": rpc}, k + 4 + n


def rst(writer):
    sock = writer.get_extra_info("socket")
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


async def handle(creader, cwriter):
    global conn_seq
    conn_seq += 1
    cid = conn_seq
    cport = cwriter.get_extra_info("peername")[1]
    try:
        ureader, uwriter = await asyncio.open_connection("127.0.0.1", UPSTREAM)
    except OSError as e:
        note(ev="upstream_connect_failed", conn=cid, error=str(e))
        cwriter.close()
        return
    uport = uwriter.get_extra_info("sockname")[1]
    note(ev="conn", conn=cid, client_port=cport, upstream_local_port=uport)
    st = {"req": None, "watch": None, "rule": None, "cut": False, "reqbuf": bytearray(), "nreq": 0,
          "forwarded_ids": []}

    def choose_rule(req):
        ua = req["user_agent"]
        if req["method"] == "GET" and not req["last_event_id"]:
            r = RULES.get("get")
            if r and ua in r["clients"] and (ua, "get") not in cut_done:
                return ("get", r["cut_after_events"])
        if req["method"] == "POST" and req["jsonrpc"] and req["jsonrpc"].get("tool"):
            r = RULES.get("post")
            if r and ua in r["clients"] and req["jsonrpc"]["tool"] == r["tool"] and (ua, "post") not in cut_done:
                return ("post", r["cut_after_events"])
        return None

    async def c2s():
        try:
            while True:
                d = await creader.read(65536)
                if not d:
                    break
                st["reqbuf"] += d
                while True:
                    p = parse_request(st["reqbuf"])
                    if p is None:
                        break
                    req, used = p
                    del st["reqbuf"][:used]
                    st["nreq"] += 1
                    st["req"] = req
                    st["watch"] = ResponseWatcher()
                    st["rule"] = choose_rule(req)
                    st["forwarded_ids"] = []
                    note(ev="request", conn=cid, n=st["nreq"], client_port=cport, **req,
                         cut_rule=st["rule"][0] if st["rule"] else None)
                if st["cut"]:
                    return
                uwriter.write(d)
                await uwriter.drain()
        except (ConnectionError, OSError):
            pass
        if not st["cut"]:
            try:
                uwriter.write_eof()
            except (OSError, RuntimeError):
                pass

    async def s2c():
        try:
            while True:
                d = await ureader.read(65536)
                if not d:
                    break
                if st["cut"]:
                    return
                w = st["watch"]
                if w is None:
                    cwriter.write(d)
                    await cwriter.drain()
                    continue
                events = w.feed(d)
                st["forwarded_ids"].extend(e for _, e in events)
                rule = st["rule"]
                if rule and len(w.counter.ids) >= rule[1]:
                    kind, n = rule
                    # the raw offset right after the n-th event of this response
                    before = len(w.counter.ids) - len(events)
                    off = events[n - before - 1][0]
                    cwriter.write(d[:off])
                    await cwriter.drain()
                    st["cut"] = True
                    cut_done.add((st["req"]["user_agent"], kind))
                    fwd = w.counter.ids[:n]
                    note(ev="cut_scheduled", conn=cid, kind=kind, client_port=cport, upstream_local_port=uport,
                         user_agent=st["req"]["user_agent"], mcp_session_id=st["req"]["mcp_session_id"],
                         request=st["req"]["jsonrpc"], events_forwarded=n, event_ids_forwarded=fwd,
                         event_ids_withheld=w.counter.ids[n:])
                    await asyncio.sleep(HOLD)
                    note(ev="reset", conn=cid, client_port=cport, upstream_local_port=uport)
                    rst(cwriter)
                    rst(uwriter)
                    return
                cwriter.write(d)
                await cwriter.drain()
        except (ConnectionError, OSError):
            pass
        if not st["cut"]:
            try:
                cwriter.write_eof()
            except (OSError, RuntimeError):
                pass

    await asyncio.gather(c2s(), s2c())
    for w in (cwriter, uwriter):
        try:
            w.close()
        except Exception:
            pass
    note(ev="closed", conn=cid, client_port=cport, upstream_local_port=uport, requests=st["nreq"], cut=st["cut"])


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", LISTEN)
    note(ev="listening", port=LISTEN, upstream=UPSTREAM, rules=RULES)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    srv.close()


asyncio.run(main())
