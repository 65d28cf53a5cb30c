"""Shared by the Python capture scripts of samples/make (concurrent-nginx, python-sdk-resume-many).

Everything here records what a client or a server did while the run happened (JSONL), so the
truth files never come from parsing a capture:

* `TapTransport`: an httpx2 transport for the official Python SDK client. It logs every HTTP
  request the SDK sends (method, path, MCP headers, the JSON-RPC body), the response head, the
  client's local TCP port of the connection that carried it, every SSE event the client read on
  that response (id, priming, the JSON-RPC message it carries) and how the response ended.
* `SessionEventStore` + `per_session_event_stores`: an in-memory EventStore modelled on the SDK's
  example store (uuid4 ids, replay skips priming rows), one per session (the SDK's session manager
  would hand one store to every session), logging every id it mints and every replay; or, with
  `shared`, one store behind every session's view, as the SDK does (its streams keyed by stream id
  alone: every standalone stream is `_GET_stream`), the views only naming the session in the log.
* `AsgiRequestLog`: an ASGI wrapper logging every HTTP request the server receives (peer port,
  MCP headers, the JSON-RPC body, status, how the response ended).
"""
import codecs
import json
import time
from collections import deque
from dataclasses import dataclass
from uuid import uuid4

import httpx2
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId


class JsonlLog:
    def __init__(self, path):
        self._f = open(path, "a", buffering=1)

    def __call__(self, **kw):
        kw["t"] = round(time.time(), 6)
        self._f.write(json.dumps(kw, separators=(",", ":")) + "\n")


def describe_message(m):
    """Short, deterministic description of a JSON-RPC message (a dict)."""
    if not isinstance(m, dict):
        return {"kind": "batch" if isinstance(m, list) else "other"}
    d = {}
    if "method" in m:
        d["method"] = m["method"]
        d["kind"] = "request" if "id" in m else "notification"
    elif "result" in m:
        d["kind"] = "response"
    elif "error" in m:
        d["kind"] = "error"
    else:
        d["kind"] = "other"
    if "id" in m:
        d["id"] = m["id"]
    p = m.get("params") or {}
    if m.get("method") == "tools/call":
        d["tool"] = p.get("name")
        tok = (p.get("_meta") or {}).get("progressToken")
        if tok is not None:
            d["progressToken"] = tok
    if m.get("method") == "notifications/progress":
        d["progressToken"] = p.get("progressToken")
        d["progress"] = p.get("progress")
    if m.get("method") == "notifications/message":
        d["level"] = p.get("level")
        data = p.get("data")
        if isinstance(data, dict) and "seq" in data:
            d["seq"] = data["seq"]
    return d


class SseParser:
    """WHATWG event-stream parsing (CR, LF or CRLF line ends, split anywhere)."""

    def __init__(self):
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")
        self.buf = ""
        self.pending_cr = False
        self.data = []
        self.event = ""
        self.last_id = ""
        self.this_id = None
        self.retry = None
        self.comments = 0

    def feed(self, chunk: bytes):
        text = self._dec.decode(chunk)
        out = []
        if self.pending_cr and text.startswith("\n"):
            text = text[1:]
        self.pending_cr = False
        self.buf += text
        while True:
            cands = [i for i in (self.buf.find("\r"), self.buf.find("\n")) if i >= 0]
            if not cands:
                break
            i = min(cands)
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
            had_id, self_id, retry = self.this_id is not None, self.this_id, self.retry
            self.this_id, self.retry = None, None
            if not self.data:
                self.event = ""
                if had_id or retry is not None:
                    # an id (or retry) without data: moves the cursor, dispatches nothing
                    return {"dispatched": False, "id": self_id, "last_event_id": self.last_id, "retry": retry}
                return None
            ev = {"dispatched": True, "id": self_id, "last_event_id": self.last_id,
                  "event": self.event or "message", "data": "\n".join(self.data), "retry": retry}
            self.data, self.event = [], ""
            return ev
        if line.startswith(":"):
            self.comments += 1
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
            self.this_id = value
        elif name == "retry" and value.isdigit():
            self.retry = int(value)
        return None


class _TappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner, note, base):
        self._inner = inner
        self._note = note
        self._base = base
        self._parser = SseParser() if base.get("sse") else None
        self._done = False
        self.events = 0
        self.nbytes = 0

    async def __aiter__(self):
        try:
            async for chunk in self._inner:
                self.nbytes += len(chunk)
                if self._parser is not None:
                    for ev in self._parser.feed(chunk):
                        self._event(ev)
                yield chunk
        except BaseException as e:  # noqa: BLE001 - re-raised
            if not self._done:
                self._done = True
                self._note(ev="response_end", **self._ids(), outcome="error", error=type(e).__name__,
                           bytes=self.nbytes, events=self.events)
            raise
        if not self._done:
            self._done = True
            self._note(ev="response_end", **self._ids(), outcome="complete", bytes=self.nbytes,
                       events=self.events)

    def _ids(self):
        return {"session": self._base["session"], "seq": self._base["seq"]}

    def _event(self, ev):
        rec = {"session": self._base["session"], "seq": self._base["seq"], "n": self.events + 1,
               "id": ev["id"], "last_event_id": ev["last_event_id"] or None}
        if ev.get("retry") is not None:
            rec["retry"] = ev["retry"]
        if not ev["dispatched"]:
            rec["dispatched"] = False
        else:
            rec["event"] = ev["event"]
            if ev["data"] == "":
                rec["priming"] = True
            else:
                try:
                    rec["message"] = describe_message(json.loads(ev["data"]))
                except ValueError:
                    rec["message"] = {"kind": "unparsable"}
        self.events += 1
        self._note(ev="sse_event", **rec)

    async def aclose(self):
        if not self._done:
            self._done = True
            self._note(ev="response_end", **self._ids(), outcome="closed_by_client", bytes=self.nbytes,
                       events=self.events)
        await self._inner.aclose()


class TapTransport(httpx2.AsyncHTTPTransport):
    """httpx2 transport that logs what the SDK client sends and receives, per session tag.
    With `inner`, requests go through that transport (one connection pool, and over HTTP/2 one
    connection, shared by several sessions' taps)."""

    def __init__(self, note, session, inner=None, **kw):
        super().__init__(**kw)
        self._inner = inner
        self._note = note
        self.session = session
        self._seq = 0

    async def handle_async_request(self, request):
        self._seq += 1
        seq = self._seq
        body = None
        if request.method == "POST":
            try:
                body = json.loads(request.content)
            except ValueError:
                body = None
        h = request.headers
        self._note(ev="http_request", session=self.session, seq=seq, method=request.method,
                   path=request.url.raw_path.decode(), mcp_session_id=h.get("mcp-session-id"),
                   mcp_protocol_version=h.get("mcp-protocol-version"), last_event_id=h.get("last-event-id"),
                   accept=h.get("accept"), user_agent=h.get("user-agent"),
                   jsonrpc=describe_message(body) if body is not None else None)
        try:
            if self._inner is not None:
                resp = await self._inner.handle_async_request(request)
            else:
                resp = await super().handle_async_request(request)
        except BaseException as e:
            self._note(ev="http_error", session=self.session, seq=seq, error=type(e).__name__)
            raise
        ns = resp.extensions.get("network_stream")
        local = ns.get_extra_info("client_addr") if ns is not None else None
        ctype = resp.headers.get("content-type")
        sse = bool(ctype and ctype.startswith("text/event-stream"))
        self._note(ev="http_response", session=self.session, seq=seq, status=resp.status_code,
                   content_type=ctype, mcp_session_id=resp.headers.get("mcp-session-id"),
                   local_port=local[1] if local else None)
        resp.stream = _TappedStream(resp.stream, self._note,
                                    {"session": self.session, "seq": seq, "sse": sse})
        return resp


# --- server side --------------------------------------------------------------------------------

@dataclass
class _Entry:
    event_id: EventId
    stream_id: StreamId
    message: object  # JSONRPCMessage | None (None = priming event)
    session_id: str | None = None  # the session whose view minted it


class SessionEventStore(EventStore):
    """The SDK example store's behaviour (uuid4 ids, opaque; bounded history per stream; replay
    skips priming rows), for ONE session, logging what it mints and replays."""

    def __init__(self, note, max_events_per_stream: int = 100, shared=None):
        self.note = note
        self.session_id = None
        self.max_events_per_stream = max_events_per_stream
        # shared: the (streams, index) of one store that every session's view writes to.
        self.streams: dict[StreamId, deque[_Entry]]
        self.index: dict[EventId, _Entry]
        self.streams, self.index = shared if shared is not None else ({}, {})

    async def store_event(self, stream_id: StreamId, message) -> EventId:
        event_id = str(uuid4())
        entry = _Entry(event_id, stream_id, message, self.session_id)
        q = self.streams.setdefault(stream_id, deque(maxlen=self.max_events_per_stream))
        if len(q) == q.maxlen:
            self.index.pop(q[0].event_id, None)
        q.append(entry)
        self.index[event_id] = entry
        desc = {"priming": True}
        if message is not None:
            m = message.model_dump(by_alias=True, exclude_none=True, mode="json")
            desc = {"priming": False, "message": describe_message(m)}
        self.note(ev="store", session_id=self.session_id, event_id=event_id, stream_id=stream_id, **desc)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        entry = self.index.get(last_event_id)
        if entry is None:
            self.note(ev="replay_unknown", session_id=self.session_id, last_event_id=last_event_id)
            return None
        sent = []
        foreign = {}
        found = False
        for e in list(self.streams.get(entry.stream_id, ())):
            if found and e.message is not None:
                await send_callback(EventMessage(e.message, e.event_id))
                sent.append(e.event_id)
                if e.session_id != self.session_id:
                    foreign[e.event_id] = e.session_id
            if e.event_id == last_event_id:
                found = True
        extra = {"minted_in_other_sessions": foreign} if foreign else {}
        self.note(ev="replay", session_id=self.session_id, last_event_id=last_event_id,
                  stream_id=entry.stream_id, replayed=sent, **extra)
        return entry.stream_id


def per_session_event_stores(manager, note, shared=False):
    """Make the SDK's StreamableHTTPSessionManager give every new session its own event store (or,
    with shared, its own view of one store: the SDK's own behaviour, logged per session).

    The manager reads `self.event_store` when it admits a session (under its creation lock), so a
    fresh store is put there just before each admission."""
    orig = manager._admit_session
    one_store = ({}, {}) if shared else None

    def admit(requestor):
        store = SessionEventStore(note, shared=one_store)
        manager.event_store = store
        transport = orig(requestor)
        if transport is not None:
            store.session_id = transport.mcp_session_id
            note(ev="session_admitted", session_id=transport.mcp_session_id)
        return transport

    manager._admit_session = admit
    manager.event_store = SessionEventStore(note, shared=one_store)  # non-None from the start: resumability on


class AsgiRequestLog:
    """ASGI wrapper: one JSONL line per HTTP request received and one when its response ends."""

    def __init__(self, app, note):
        self.app = app
        self.note = note
        self.seq = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.seq += 1
        seq = self.seq
        h = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        chunks = []
        state = {"status": None, "sid": None, "ctype": None, "ended": False, "logged_req": False}
        client = scope.get("client") or (None, None)
        base = {"seq": seq, "method": scope["method"], "path": scope["path"], "peer_port": client[1],
                "http_version": scope.get("http_version"),
                "mcp_session_id": h.get("mcp-session-id"), "last_event_id": h.get("last-event-id"),
                "mcp_protocol_version": h.get("mcp-protocol-version"), "user_agent": h.get("user-agent")}

        def log_request():
            if state["logged_req"]:
                return
            state["logged_req"] = True
            body = b"".join(chunks)
            rpc = None
            if body:
                try:
                    rpc = describe_message(json.loads(body))
                except ValueError:
                    rpc = {"kind": "unparsable"}
            self.note(ev="http_request", **base, jsonrpc=rpc)

        async def rcv():
            msg = await receive()
            if msg["type"] == "http.request":
                chunks.append(msg.get("body", b""))
                if not msg.get("more_body"):
                    log_request()
            elif msg["type"] == "http.disconnect" and not state["ended"]:
                log_request()
                state["ended"] = True
                self.note(ev="http_end", seq=seq, outcome="client_disconnected", status=state["status"],
                          mcp_session_id=state["sid"])
            return msg

        async def snd(msg):
            if msg["type"] == "http.response.start":
                log_request()
                state["status"] = msg["status"]
                for k, v in msg.get("headers", []):
                    k = k.decode("latin-1").lower()
                    if k == "mcp-session-id":
                        state["sid"] = v.decode("latin-1")
                    elif k == "content-type":
                        state["ctype"] = v.decode("latin-1")
                self.note(ev="http_response", seq=seq, status=msg["status"], content_type=state["ctype"],
                          mcp_session_id=state["sid"])
            elif msg["type"] == "http.response.body" and not msg.get("more_body") and not state["ended"]:
                state["ended"] = True
                self.note(ev="http_end", seq=seq, outcome="complete", status=state["status"],
                          mcp_session_id=state["sid"])
            await send(msg)

        try:
            await self.app(scope, rcv, snd)
        finally:
            log_request()
            if not state["ended"]:
                state["ended"] = True
                self.note(ev="http_end", seq=seq, outcome="handler_returned", status=state["status"],
                          mcp_session_id=state["sid"])
