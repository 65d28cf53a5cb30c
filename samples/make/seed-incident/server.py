#!/usr/bin/env python3
"""seed-server: a small MCP Streamable-HTTP server (protocol 2025-06-18) that
reproduces the "seed incident" (cross-namespace Last-Event-ID resumption).

Standard library only (asyncio, plain HTTP/1.1 on a TCP socket).

Per session it keeps TWO independent integer SSE event counters:
  * the POST counter: events written on POST response streams;
  * the GET counter: events of the standalone GET channel (stored per
    session, whether or not a GET stream is connected).

THE BUG (default mode): a GET carrying `Last-Event-ID: N` is resumed by
looking N up in the POST event store FIRST; when found, the POST-namespace
events after N are replayed (original ids and data) instead of the GET
events after N, which are therefore never delivered.

With --namespaced the ids are `post:N` / `sse:N` and a resume replays from
the namespace (and, for `post:`, the stream) named in the id: the negative
control.

Run: python3 server.py --port 9000 [--namespaced] --truth-out server.json
"""
import argparse
import asyncio
import hashlib
import json
import signal
import sys
import time

PROTOCOL_VERSION = "2025-06-18"
SERVER_INFO = {"name": "seed-server", "version": "0.3.1"}

# Timeline of the long tool "reindex", in seconds after the tools/call is
# received. The gaps are wide so the event counts per namespace do not depend
# on scheduling jitter (client timeout at 1.5 s, client drop right after GET
# event 41, client reconnect 3 s after the drop).
REINDEX_PHASES = [
    # (start_s, count, interval_s, phase name)
    (0.05, 17, 0.05, "scan"),      # -> POST stream of the request (POST ids 2..18)
    (2.50, 41, 0.075, "rebuild"),  # -> GET channel (GET ids 1..41)
    (6.80, 5, 0.10, "verify"),     # -> GET channel while it is down (GET 42..46)
]
REINDEX_RESULT_AFTER = 0.10  # after the last progress: the result (GET 47)
REINDEX_TOTAL = sum(p[1] for p in REINDEX_PHASES)


def log(*a):
    print("[server %.3f]" % time.monotonic(), *a, file=sys.stderr, flush=True)


def summarize(msg):
    """Short, deterministic description of a JSON-RPC message."""
    if "method" in msg:
        if msg["method"] == "notifications/progress":
            p = msg.get("params", {})
            return {"kind": "progress", "progressToken": p.get("progressToken"),
                    "progress": p.get("progress"), "total": p.get("total")}
        if msg["method"] == "notifications/message":
            return {"kind": "log", "related_request_id": msg.get("params", {}).get("data", {}).get("request")}
        return {"kind": "notification", "method": msg["method"]}
    if "result" in msg or "error" in msg:
        return {"kind": "response", "response_to_id": msg.get("id"),
                "is_error": "error" in msg}
    return {"kind": "other"}


class SseStream:
    """One HTTP response body carrying SSE events (close-delimited)."""

    def __init__(self, kind, writer, label):
        self.kind = kind  # "post" or "get"
        self.writer = writer
        self.label = label
        self.alive = True
        self.gone = asyncio.Event()

    def mark_gone(self):
        if self.alive:
            self.alive = False
            self.gone.set()

    async def send(self, event_id, msg):
        if not self.alive:
            return False
        data = json.dumps(msg, separators=(",", ":"))
        frame = "event: message\nid: %s\ndata: %s\n\n" % (event_id, data)
        try:
            self.writer.write(frame.encode())
            await self.writer.drain()
            return True
        except (ConnectionError, OSError):
            self.mark_gone()
            return False

    async def close(self):
        self.alive = False
        try:
            self.writer.close()
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


class Session:
    def __init__(self, server, sid):
        self.server = server
        self.sid = sid
        self.namespaced = server.namespaced
        self.post_counter = 0
        self.get_counter = 0
        self.post_events = []  # dicts: n, id, stream, message, ...
        self.get_events = []
        self.get_stream = None
        self.request_streams = {}  # json(id) -> SseStream
        self.resumes = []
        self.disconnects = []
        self.tasks = []
        self.terminated = False

    # --- id minting -------------------------------------------------------
    def _fmt(self, ns, n):
        if self.namespaced:
            return "%s:%d" % ("post" if ns == "post" else "sse", n)
        return str(n)

    async def send_on_post(self, stream, req_key, msg):
        self.post_counter += 1
        n = self.post_counter
        ev = {"n": n, "id": self._fmt("post", n), "namespace": "post",
              "stream": "post(request id %s)" % req_key, "request_key": req_key,
              "message": msg, "summary": summarize(msg)}
        self.post_events.append(ev)
        ok = await stream.send(ev["id"], msg)
        ev["written_to_connection"] = ok
        ev["delivered_via"] = ["live-post-stream"] if ok else []
        return ok

    async def send_on_get(self, msg, origin):
        self.get_counter += 1
        n = self.get_counter
        ev = {"n": n, "id": self._fmt("get", n), "namespace": "get",
              "stream": "get", "origin": origin, "message": msg,
              "summary": summarize(msg), "delivered_via": []}
        self.get_events.append(ev)
        st = self.get_stream
        ok = False
        if st is not None and st.alive:
            ok = await st.send(ev["id"], msg)
        ev["written_to_connection"] = ok
        ev["connected_when_minted"] = ok
        if ok:
            ev["delivered_via"].append("live-get-stream")
        else:
            ev["stored_while_get_down"] = True
        return ok

    async def send_related(self, req_id, msg):
        """Send a message related to request req_id: on its POST stream while
        that stream is connected, otherwise on the GET channel."""
        key = json.dumps(req_id)
        st = self.request_streams.get(key)
        if st is not None and st.alive:
            if await self.send_on_post(st, key, msg):
                return "post"
        return "get" if await self.send_on_get(msg, "request %s" % key) else "get-stored"

    # --- tools ------------------------------------------------------------
    async def run_reindex(self, req_id, token, t0):
        k = 0
        for start, count, interval, phase in REINDEX_PHASES:
            for i in range(count):
                await _sleep_until(t0 + start + i * interval)
                k += 1
                await self.send_related(req_id, {
                    "jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": k,
                               "total": REINDEX_TOTAL,
                               "message": "%s %d/%d" % (phase, k, REINDEX_TOTAL)}})
        await asyncio.sleep(REINDEX_RESULT_AFTER)
        await self.send_related(req_id, {
            "jsonrpc": "2.0", "id": req_id,
            "result": {"content": [{"type": "text",
                                    "text": "reindex complete: 4096 documents, 63 segments"}],
                       "isError": False}})
        key = json.dumps(req_id)
        st = self.request_streams.pop(key, None)
        if st is not None:
            await st.close()

    def to_truth(self):
        def ev_out(e):
            return {k: v for k, v in e.items() if k not in ("message", "request_key")}
        return {
            "session_id": self.sid,
            "id_format": "namespaced" if self.namespaced else "bare-integer",
            "post_events_minted": [ev_out(e) for e in self.post_events],
            "get_events_minted": [ev_out(e) for e in self.get_events],
            "post_counter_final": self.post_counter,
            "get_counter_final": self.get_counter,
            "disconnects_observed": self.disconnects,
            "resumes": self.resumes,
            "terminated_by_delete": self.terminated,
        }


async def _sleep_until(t):
    d = t - time.monotonic()
    if d > 0:
        await asyncio.sleep(d)


class Server:
    def __init__(self, args):
        self.args = args
        self.namespaced = args.namespaced
        self.sessions = {}
        self.http_requests = []
        self.conn_counter = 0
        self.done = asyncio.Event()

    def mint_session_id(self):
        seed = "%s/%d" % (self.args.session_seed, len(self.sessions))
        return hashlib.sha256(seed.encode()).hexdigest()[:32]

    # --- HTTP plumbing ----------------------------------------------------
    async def handle_conn(self, reader, writer):
        self.conn_counter += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b""
        n = int(headers.get("content-length", "0") or 0)
        if n:
            body = await reader.readexactly(n)
        rec = {"seq": len(self.http_requests) + 1, "method": method, "path": target,
               "http_version": version,
               "mcp_session_id": headers.get("mcp-session-id"),
               "last_event_id": headers.get("last-event-id")}
        self.http_requests.append(rec)
        log("%s %s sid=%s lei=%s" % (method, target, rec["mcp_session_id"], rec["last_event_id"]))
        try:
            await self.dispatch(method, target, headers, body, reader, writer, rec)
        except (ConnectionError, OSError) as e:
            log("connection error", e)
        finally:
            try:
                writer.close()
            except Exception:
                pass

    def head(self, status, reason, headers):
        out = ["HTTP/1.1 %d %s" % (status, reason)]
        for k, v in headers:
            out.append("%s: %s" % (k, v))
        return ("\r\n".join(out) + "\r\n\r\n").encode()

    async def simple(self, writer, status, reason, body=b"", ctype=None, sid=None):
        h = []
        if ctype:
            h.append(("Content-Type", ctype))
        if sid:
            h.append(("Mcp-Session-Id", sid))
        h += [("Content-Length", str(len(body))), ("Connection", "close")]
        writer.write(self.head(status, reason, h) + body)
        await writer.drain()

    async def error(self, writer, status, reason, code, message, sid=None):
        body = json.dumps({"jsonrpc": "2.0", "id": None,
                           "error": {"code": code, "message": message}}).encode()
        await self.simple(writer, status, reason, body, "application/json", sid)

    async def start_sse(self, writer, kind, sid, label):
        h = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
             ("Mcp-Session-Id", sid)]
        if kind == "get":
            # The GET channel asks nginx not to buffer; POST streams do not
            # (the realistic misconfiguration of the incident).
            h.append(("X-Accel-Buffering", "no"))
        h.append(("Connection", "close"))
        writer.write(self.head(200, "OK", h))
        await writer.drain()
        return SseStream(kind, writer, label)

    def watch(self, reader, stream, session, what):
        """Mark the stream gone as soon as the peer (nginx) closes."""
        async def _watch():
            try:
                while True:
                    b = await reader.read(4096)
                    if not b:
                        break
            except (ConnectionError, OSError):
                pass
            if stream.alive:
                stream.mark_gone()
                session.disconnects.append({
                    "stream": what,
                    "post_counter_at_disconnect": session.post_counter,
                    "get_counter_at_disconnect": session.get_counter})
                log("peer closed", what)
                if session.get_stream is stream:
                    session.get_stream = None
        return asyncio.ensure_future(_watch())

    # --- MCP --------------------------------------------------------------
    async def dispatch(self, method, target, headers, body, reader, writer, rec):
        if target.split("?")[0] != "/mcp":
            await self.simple(writer, 404, "Not Found", b"not found\n", "text/plain")
            return
        sid = headers.get("mcp-session-id")
        if method == "POST":
            try:
                msg = json.loads(body)
            except ValueError:
                await self.error(writer, 400, "Bad Request", -32700, "Parse error")
                return
            rec["jsonrpc"] = {"method": msg.get("method"), "id": msg.get("id")} if isinstance(msg, dict) else "batch"
            if not isinstance(msg, dict):
                await self.error(writer, 400, "Bad Request", -32600, "Batching not supported")
                return
            if msg.get("method") == "initialize":
                await self.initialize(msg, writer)
                return
            session = self.sessions.get(sid) if sid else None
            if sid is None:
                await self.error(writer, 400, "Bad Request", -32000, "Missing Mcp-Session-Id")
                return
            if session is None or session.terminated:
                await self.error(writer, 404, "Not Found", -32001, "Session not found")
                return
            if "method" not in msg or "id" not in msg:
                # notification or response
                await self.simple(writer, 202, "Accepted", sid=sid)
                return
            await self.request(session, msg, reader, writer)
        elif method == "GET":
            session = self.sessions.get(sid) if sid else None
            if session is None or session.terminated:
                await self.error(writer, 404 if sid else 400, "Not Found" if sid else "Bad Request",
                                 -32001, "Session not found")
                return
            if "text/event-stream" not in headers.get("accept", ""):
                await self.error(writer, 406, "Not Acceptable", -32000, "Accept text/event-stream")
                return
            await self.get_channel(session, headers.get("last-event-id"), reader, writer)
        elif method == "DELETE":
            session = self.sessions.get(sid) if sid else None
            if session is None:
                await self.error(writer, 404, "Not Found", -32001, "Session not found")
                return
            session.terminated = True
            await self.simple(writer, 200, "OK", sid=sid)
            self.write_truth()
            self.done.set()
        else:
            await self.simple(writer, 405, "Method Not Allowed", b"", None)

    async def initialize(self, msg, writer):
        sid = self.mint_session_id()
        session = Session(self, sid)
        self.sessions[sid] = session
        st = await self.start_sse(writer, "post", sid, "post(initialize)")
        result = {"jsonrpc": "2.0", "id": msg.get("id"), "result": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": SERVER_INFO,
            "instructions": "seed-server: reindex (long) and lookup (quick)"}}
        await session.send_on_post(st, json.dumps(msg.get("id")), result)
        await st.close()

    async def request(self, session, msg, reader, writer):
        req_id = msg["id"]
        key = json.dumps(req_id)
        st = await self.start_sse(writer, "post", session.sid, "post(request id %s)" % key)
        session.request_streams[key] = st
        watcher = self.watch(reader, st, session, "post stream of request %s" % key)
        m = msg.get("method")
        params = msg.get("params") or {}
        if m == "tools/list":
            await session.send_related(req_id, {"jsonrpc": "2.0", "id": req_id, "result": {"tools": [
                {"name": "reindex", "description": "Rebuild the search index (slow)",
                 "inputSchema": {"type": "object", "properties": {"collection": {"type": "string"}}}},
                {"name": "lookup", "description": "Look a document up (fast)",
                 "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}}]}})
        elif m == "tools/call" and params.get("name") == "reindex":
            token = (params.get("_meta") or {}).get("progressToken")
            t0 = time.monotonic()
            task = asyncio.ensure_future(session.run_reindex(req_id, token, t0))
            session.tasks.append(task)
            # keep this HTTP response open until the tool finishes or the
            # peer goes away; the tool reroutes to GET when it is gone.
            await asyncio.wait([task, asyncio.ensure_future(st.gone.wait())],
                               return_when=asyncio.FIRST_COMPLETED)
            if not st.alive:
                session.request_streams.pop(key, None)
            watcher.cancel()
            await st.close()
            return
        elif m == "tools/call" and params.get("name") == "lookup":
            k = (params.get("arguments") or {}).get("key")
            await session.send_related(req_id, {"jsonrpc": "2.0", "method": "notifications/message",
                                                "params": {"level": "info", "logger": "lookup",
                                                           "data": {"request": req_id, "key": k,
                                                                    "cache": "hit"}}})
            await session.send_related(req_id, {"jsonrpc": "2.0", "id": req_id, "result": {
                "content": [{"type": "text", "text": "%s: found (rev %d)" % (k, 100 + (req_id if isinstance(req_id, int) else 0))}],
                "isError": False}})
        elif m == "ping":
            await session.send_related(req_id, {"jsonrpc": "2.0", "id": req_id, "result": {}})
        else:
            await session.send_related(req_id, {"jsonrpc": "2.0", "id": req_id, "error": {
                "code": -32601, "message": "Method not found"}})
        session.request_streams.pop(key, None)
        watcher.cancel()
        await st.close()

    async def get_channel(self, session, last_event_id, reader, writer):
        if last_event_id is None and session.get_stream is not None and session.get_stream.alive:
            await self.error(writer, 409, "Conflict", -32000, "Only one SSE stream is allowed per session")
            return
        replay = []
        resume = None
        if last_event_id is not None:
            resume = {"last_event_id": last_event_id, "mode": "namespaced" if self.namespaced else "buggy"}
            if self.namespaced:
                ns, _, num = last_event_id.partition(":")
                try:
                    n = int(num)
                except ValueError:
                    n = None
                if ns == "sse" and n is not None and any(e["n"] == n for e in session.get_events):
                    replay = [e for e in session.get_events if e["n"] > n]
                    resume["resolved_namespace"] = "get"
                elif ns == "post" and n is not None:
                    hit = [e for e in session.post_events if e["n"] == n]
                    if hit:
                        stream = hit[0]["stream"]
                        replay = [e for e in session.post_events if e["n"] > n and e["stream"] == stream]
                        resume["resolved_namespace"] = "post"
                        resume["resolved_stream"] = stream
                if "resolved_namespace" not in resume:
                    resume["resolved_namespace"] = None
                    await self.error(writer, 400, "Bad Request", -32000, "Unknown Last-Event-ID")
                    session.resumes.append(resume)
                    return
            else:
                # THE BUG: the POST counter/store is consulted first, and the
                # POST-namespace events after N are replayed.
                try:
                    n = int(last_event_id)
                except ValueError:
                    n = None
                if n is not None and any(e["n"] == n for e in session.post_events):
                    replay = [e for e in session.post_events if e["n"] > n]
                    resume["resolved_namespace"] = "post"
                elif n is not None and any(e["n"] == n for e in session.get_events):
                    replay = [e for e in session.get_events if e["n"] > n]
                    resume["resolved_namespace"] = "get"
                else:
                    resume["resolved_namespace"] = None
            if session.get_stream is not None and session.get_stream.alive:
                session.get_stream.mark_gone()  # supersede a stale one
        st = await self.start_sse(writer, "get", session.sid,
                                  "get(resume %s)" % last_event_id if last_event_id else "get")
        if resume is not None:
            resume["replayed"] = []
            for e in replay:
                ok = await st.send(e["id"], e["message"])
                e["delivered_via"].append("replay-on-get(Last-Event-ID %s)" % last_event_id)
                resume["replayed"].append({"id": e["id"], "namespace": e["namespace"],
                                           "stream": e["stream"], "summary": e["summary"],
                                           "written": ok})
            session.resumes.append(resume)
            log("resume", last_event_id, "->", [r["id"] for r in resume["replayed"]])
        session.get_stream = st
        watcher = self.watch(reader, st, session, "get stream" + (" (resumed from %s)" % last_event_id if last_event_id else ""))
        await st.gone.wait()
        watcher.cancel()
        await st.close()

    def truth(self):
        return {
            "recorded_by": "server",
            "server_info": SERVER_INFO,
            "protocol_version": PROTOCOL_VERSION,
            "mode": "namespaced" if self.namespaced else "buggy",
            "listen": "127.0.0.1:%d" % self.args.port,
            "http_requests_received": len(self.http_requests),
            "http_requests": self.http_requests,
            "sessions": [s.to_truth() for s in self.sessions.values()],
        }

    def write_truth(self):
        if self.args.truth_out:
            with open(self.args.truth_out, "w") as f:
                json.dump(self.truth(), f, indent=1)
                f.write("\n")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--namespaced", action="store_true",
                    help="correct server: post:N / sse:N ids, resume from the named namespace")
    ap.add_argument("--session-seed", default="mcp-forensics/seed-incident")
    ap.add_argument("--truth-out")
    args = ap.parse_args()
    srv = Server(args)
    server = await asyncio.start_server(srv.handle_conn, args.host, args.port)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, stop.set)
    log("listening on %s:%d namespaced=%s" % (args.host, args.port, args.namespaced))
    print("READY", flush=True)
    await stop.wait()
    server.close()
    srv.write_truth()


if __name__ == "__main__":
    asyncio.run(main())
