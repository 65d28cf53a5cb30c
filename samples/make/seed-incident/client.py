#!/usr/bin/env python3
"""seed-client: a scripted, deterministic MCP Streamable-HTTP client that
reproduces the seed incident through a buffering nginx.

Standard library only (asyncio streams, HTTP/1.1 by hand, WHATWG SSE parser).

Script:
  conn A  POST initialize (id 1), POST notifications/initialized,
          POST tools/call id 7 "reindex" -> no byte within 1.5 s -> close (FIN)
  conn B  GET /mcp (SSE fallback, no Last-Event-ID); after GET event #5 the
          quick calls start; after the 41st GET event the connection "drops"
          (SO_LINGER 0 -> RST)
  conn C  POST tools/call ids 8..19 "lookup" (keep-alive, one after another),
          later DELETE /mcp
  conn D  3 s after the drop: GET /mcp with Last-Event-ID = last GET id seen;
          waits up to 4 s for the result of request 7, then closes (FIN)

Everything the client sends and receives is recorded (not from a capture) in
the JSON written to --truth-out.
"""
import argparse
import ssl
import asyncio
import json
import socket
import struct
import sys
import time

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "seed-client", "version": "1.0.0"}
USER_AGENT = "seed-client/1.0.0"


def log(*a):
    print("[client %.3f]" % time.monotonic(), *a, file=sys.stderr, flush=True)


def summarize(msg):
    if "method" in msg:
        if msg["method"] == "notifications/progress":
            p = msg.get("params", {})
            return {"kind": "progress", "progressToken": p.get("progressToken"),
                    "progress": p.get("progress"), "total": p.get("total")}
        if msg["method"] == "notifications/message":
            return {"kind": "log", "related_request_id": msg.get("params", {}).get("data", {}).get("request")}
        return {"kind": "notification", "method": msg["method"]}
    if "result" in msg or "error" in msg:
        return {"kind": "response", "response_to_id": msg.get("id"), "is_error": "error" in msg}
    return {"kind": "other"}


class SseParser:
    """WHATWG event-stream parsing (CR, LF or CRLF line ends)."""

    def __init__(self):
        self.buf = ""
        self.pending_cr = False
        self.data = []
        self.event = ""
        self.last_id = ""
        self.id_seen_in_event = False

    def feed(self, text):
        out = []
        if self.pending_cr and text.startswith("\n"):
            text = text[1:]
        self.pending_cr = False
        self.buf += text
        while True:
            idx = [i for i in (self.buf.find("\r"), self.buf.find("\n")) if i >= 0]
            if not idx:
                break
            i = min(idx)
            line = self.buf[:i]
            if self.buf[i] == "\r":
                if i + 1 < len(self.buf):
                    rest = self.buf[i + 2:] if self.buf[i + 1] == "\n" else self.buf[i + 1:]
                else:
                    rest = ""
                    self.pending_cr = True
            else:
                rest = self.buf[i + 1:]
            self.buf = rest
            ev = self._line(line)
            if ev is not None:
                out.append(ev)
        return out

    def _line(self, line):
        if line == "":
            if not self.data:
                self.event = ""
                return None
            data = "\n".join(self.data)
            ev = {"id": self.last_id, "event": self.event or "message", "data": data}
            self.data, self.event = [], ""
            return ev
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self.data.append(value)
        elif name == "event":
            self.event = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        return None


class Conn:
    def __init__(self, client, label, purpose):
        self.client = client
        self.label = label
        self.purpose = purpose
        self.index = len(client.connections)
        self.rec = {"index": self.index, "label": label, "purpose": purpose,
                    "requests": [], "closed_by_client": None}
        client.connections.append(self.rec)

    async def open(self):
        c = self.client
        tls = {"ssl": c.tls, "server_hostname": "localhost"} if c.tls else {}
        self.reader, self.writer = await asyncio.open_connection(c.host, c.port, **tls)
        return self

    def send(self, method, body=None, extra=()):
        c = self.client
        h = [("Host", "%s:%d" % (c.host, c.port)), ("User-Agent", USER_AGENT)]
        h += list(extra)
        if body is not None:
            h.append(("Content-Type", "application/json"))
            h.append(("Content-Length", str(len(body))))
        head = "%s /mcp HTTP/1.1\r\n" % method + "".join("%s: %s\r\n" % kv for kv in h) + "\r\n"
        self.writer.write(head.encode() + (body or b""))
        c.http_seq += 1
        rec = {"seq": c.http_seq, "connection": self.index, "method": method, "path": "/mcp",
               "headers": {k: v for k, v in h if k.lower() in (
                   "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id")}}
        c.http_requests.append(rec)
        self.rec["requests"].append(rec["seq"])
        return rec

    async def head(self, first_byte_timeout=None):
        if first_byte_timeout is not None:
            first = await asyncio.wait_for(self.reader.read(1), first_byte_timeout)
            if not first:
                raise ConnectionError("closed before response")
            rest = await self.reader.readuntil(b"\r\n\r\n")
            raw = first + rest
        else:
            raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
        return status, hdrs

    async def body(self, hdrs):
        r = self.reader
        if "chunked" in hdrs.get("transfer-encoding", "").lower():
            while True:
                line = await r.readuntil(b"\r\n")
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while (await r.readuntil(b"\r\n")) != b"\r\n":
                        pass
                    return
                data = await r.readexactly(size)
                await r.readexactly(2)
                yield data
        elif "content-length" in hdrs:
            n = int(hdrs["content-length"])
            if n:
                yield await r.readexactly(n)
        else:
            while True:
                d = await r.read(65536)
                if not d:
                    return
                yield d

    def close_fin(self):
        self.rec["closed_by_client"] = "FIN"
        if self.client.tls:
            # A FIN without TLS's close_notify first: nginx, holding the response in its
            # buffers, learns of a close_notify only when it next reads, of a FIN at once (as
            # over plaintext, which the incident's timing rests on).
            self.writer.transport.abort()
            return
        self.writer.close()

    def abort_rst(self):
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rec["closed_by_client"] = "RST (SO_LINGER 0)"
        self.writer.transport.abort()


class Client:
    def __init__(self, args):
        self.args = args
        self.host, self.port = args.host, args.port
        # TLS with the CA given (the certificate is for localhost); Python's ssl writes the key
        # log named by SSLKEYLOGFILE.
        self.tls = ssl.create_default_context(cafile=args.tls_ca) if args.tls_ca else None
        self.connections = []
        self.http_requests = []
        self.http_seq = 0
        self.sent = []
        self.streams = []
        self.responses = {}  # json(id) -> first sighting
        self.duplicates = []
        self.pending = {}  # json(id) -> method
        self.sid = None
        self.get_events_seen = 0
        self.last_get_event_id = None
        self.quick_start = asyncio.Event()
        self.got_7 = asyncio.Event()
        self.notes = []

    # --- JSON-RPC bookkeeping ---------------------------------------------
    def record_sent(self, msg, http_rec):
        entry = {"seq": len(self.sent) + 1, "method": msg["method"],
                 "kind": "request" if "id" in msg else "notification",
                 "http_request_seq": http_rec["seq"], "connection": http_rec["connection"]}
        if "id" in msg:
            entry["id"] = msg["id"]
            self.pending[json.dumps(msg["id"])] = msg["method"]
        if msg["method"] == "tools/call":
            entry["tool"] = msg["params"]["name"]
            pt = (msg["params"].get("_meta") or {}).get("progressToken")
            if pt is not None:
                entry["progressToken"] = pt
        self.sent.append(entry)
        http_rec["jsonrpc"] = {k: entry[k] for k in ("method", "id") if k in entry}

    def new_stream(self, label, http_rec):
        s = {"label": label, "http_request_seq": http_rec["seq"],
             "connection": http_rec["connection"], "events": []}
        self.streams.append(s)
        return s

    def on_event(self, stream, ev):
        try:
            msg = json.loads(ev["data"])
        except ValueError:
            stream["events"].append({"id": ev["id"], "summary": {"kind": "unparsable"}})
            return None
        summ = summarize(msg)
        stream["events"].append({"id": ev["id"], "summary": summ})
        if summ["kind"] == "response":
            key = json.dumps(msg["id"])
            where = {"stream": stream["label"], "event_id": ev["id"]}
            if key in self.responses:
                self.duplicates.append({"response_to_id": msg["id"],
                                        "first": self.responses[key], "again": where})
                log("DUPLICATE response for id", key, where)
            else:
                self.responses[key] = where
                self.pending.pop(key, None)
            if msg["id"] == 7:
                self.got_7.set()
        return msg

    async def read_stream(self, conn, hdrs, stream, on_each=None):
        parser = SseParser()
        nbytes = 0
        async for chunk in conn.body(hdrs):
            nbytes += len(chunk)
            for ev in parser.feed(chunk.decode("utf-8", "replace")):
                self.on_event(stream, ev)
                if on_each is not None and on_each(ev):
                    return nbytes, True
        return nbytes, False

    # --- requests -------------------------------------------------------
    def post_headers(self):
        h = [("Accept", "application/json, text/event-stream")]
        if self.sid:
            h += [("Mcp-Session-Id", self.sid), ("MCP-Protocol-Version", PROTOCOL_VERSION)]
        return h

    async def post(self, conn, msg, first_byte_timeout=None):
        body = json.dumps(msg, separators=(",", ":")).encode()
        rec = conn.send("POST", body, self.post_headers())
        self.record_sent(msg, rec)
        try:
            status, hdrs = await conn.head(first_byte_timeout)
        except asyncio.TimeoutError:
            rec["status"] = None
            rec["outcome"] = "no response byte within %.1f s; client gave up" % first_byte_timeout
            return rec, None
        rec["status"] = status
        rec["content_type"] = hdrs.get("content-type")
        if "mcp-session-id" in hdrs:
            rec["response_mcp_session_id"] = hdrs["mcp-session-id"]
        if hdrs.get("content-type", "").startswith("text/event-stream"):
            label = "post(id %s)" % json.dumps(msg.get("id"))
            stream = self.new_stream(label, rec)
            n, _ = await self.read_stream(conn, hdrs, stream)
            rec["body_bytes"] = n
        else:
            n = 0
            async for chunk in conn.body(hdrs):
                n += len(chunk)
            rec["body_bytes"] = n
        rec["outcome"] = "complete"
        return rec, hdrs

    async def get_stream(self, conn, label, last_event_id=None):
        h = [("Accept", "text/event-stream"), ("Cache-Control", "no-cache"),
             ("Mcp-Session-Id", self.sid), ("MCP-Protocol-Version", PROTOCOL_VERSION)]
        if last_event_id is not None:
            h.append(("Last-Event-ID", last_event_id))
        rec = conn.send("GET", None, h)
        status, hdrs = await conn.head()
        rec["status"] = status
        rec["content_type"] = hdrs.get("content-type")
        rec["response_mcp_session_id"] = hdrs.get("mcp-session-id")
        return rec, hdrs, self.new_stream(label, rec)

    # --- the scenario ----------------------------------------------------
    async def run(self):
        a = await Conn(self, "A", "initialize, notifications/initialized, tools/call 7 (buffered)").open()
        rec, hdrs = await self.post(a, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"roots": {"listChanged": False}},
            "clientInfo": CLIENT_INFO}})
        self.sid = hdrs["mcp-session-id"]
        log("session", self.sid)
        await self.post(a, {"jsonrpc": "2.0", "method": "notifications/initialized"})

        # The long tool call. nginx buffers its SSE response: nothing arrives.
        rec7, _ = await self.post(a, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "reindex", "arguments": {"collection": "docs"},
            "_meta": {"progressToken": "reindex-7"}}}, first_byte_timeout=self.args.post_timeout)
        assert rec7["status"] is None, "expected nginx to hold the POST response back"
        log("POST 7: no bytes, falling back to GET")
        a.close_fin()

        # SSE fallback: the standalone GET channel.
        b = await Conn(self, "B", "GET /mcp fallback stream (dropped with RST)").open()
        grec, ghdrs, gstream = await self.get_stream(b, "get#1 (fallback, no Last-Event-ID)")
        quick = asyncio.ensure_future(self.quick_calls())

        def on_get(ev):
            self.get_events_seen += 1
            self.last_get_event_id = ev["id"]
            if self.get_events_seen == 5:
                self.quick_start.set()
            return self.get_events_seen >= self.args.drop_after

        _, dropped = await self.read_stream(b, ghdrs, gstream, on_get)
        assert dropped, "GET stream ended before the drop point"
        self.notes.append("quick calls finished before the GET drop: %s" % quick.done())
        b.abort_rst()
        grec["outcome"] = "client reset the connection after GET event %s" % self.last_get_event_id
        log("GET dropped (RST) after event", self.last_get_event_id)
        await quick

        await asyncio.sleep(self.args.reconnect_delay)
        d = await Conn(self, "D", "GET /mcp resume with Last-Event-ID").open()
        self.last_event_id_sent = self.last_get_event_id
        rrec, rhdrs, rstream = await self.get_stream(
            d, "get#2 (resume, Last-Event-ID %s)" % self.last_get_event_id, self.last_get_event_id)

        async def read_resume():
            await self.read_stream(d, rhdrs, rstream, lambda ev: self.got_7.is_set())
        try:
            await asyncio.wait_for(read_resume(), self.args.resume_wait)
            rrec["outcome"] = "client closed after the result of request 7 arrived"
        except asyncio.TimeoutError:
            rrec["outcome"] = "client gave up waiting %.1f s for the result of request 7 and closed" % self.args.resume_wait
        d.close_fin()
        try:
            await d.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        await asyncio.sleep(0.05)
        log("resume stream closed; got 7:", self.got_7.is_set())

        drec, _ = await self.post_delete()
        self.c.close_fin()

    async def quick_calls(self):
        await self.quick_start.wait()
        self.c = c = await Conn(self, "C", "tools/call 8..19 (keep-alive), DELETE").open()
        for i in range(8, 20):
            await self.post(c, {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "lookup", "arguments": {"key": "doc-%d" % i}}})
            await asyncio.sleep(self.args.quick_spacing)

    async def post_delete(self):
        c = self.c
        rec = c.send("DELETE", None, [("Mcp-Session-Id", self.sid),
                                      ("MCP-Protocol-Version", PROTOCOL_VERSION)])
        status, hdrs = await c.head()
        async for _ in c.body(hdrs):
            pass
        rec["status"] = status
        rec["outcome"] = "complete"
        return rec, hdrs

    def truth(self):
        return {
            "recorded_by": "client",
            "client_info": CLIENT_INFO,
            "target": "%s:%d" % (self.host, self.port),
            "session_id": self.sid,
            "sent_messages": self.sent,
            "http_requests_sent": len(self.http_requests),
            "http_requests": self.http_requests,
            "connections": self.connections,
            "streams": self.streams,
            "last_event_id_sent": getattr(self, "last_event_id_sent", None),
            "responses_first_seen": {k: v for k, v in self.responses.items()},
            "duplicate_responses": self.duplicates,
            "unanswered_requests": [json.loads(k) for k in self.pending],
            "notes": self.notes,
        }


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--post-timeout", type=float, default=1.5)
    ap.add_argument("--drop-after", type=int, default=41)
    ap.add_argument("--quick-spacing", type=float, default=0.15)
    ap.add_argument("--reconnect-delay", type=float, default=3.0)
    ap.add_argument("--resume-wait", type=float, default=4.0)
    ap.add_argument("--truth-out")
    ap.add_argument("--tls-ca", help="speak TLS, trusting this CA file")
    args = ap.parse_args()
    cl = Client(args)
    try:
        await cl.run()
    finally:
        if args.truth_out:
            with open(args.truth_out, "w") as f:
                json.dump(cl.truth(), f, indent=1)
                f.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
