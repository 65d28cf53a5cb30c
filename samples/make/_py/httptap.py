"""Shared by the Python capture clients and servers of samples/make: a JSONL logger, an httpx2
transport that records every request a client sends, the local port of the connection it went
out on, the response head and every response byte the client read, and an ASGI wrapper that
records what a server got (with the peer port) and every byte it sent. Both are the run's own
records (truth), independent of any capture."""
import base64
import json
import time

import httpx2


def make_note(path):
    f = open(path, "a", buffering=1)

    def note(**kw):
        kw["t"] = time.time()
        f.write(json.dumps(kw) + "\n")
    return note


_KEEP = ("accept", "last-event-id", "content-type", "cache-control")


def _keep(headers):
    return {k.lower(): v for k, v in headers if k.lower().startswith("mcp") or k.lower() in _KEEP}


class _TapStream(httpx2.AsyncByteStream):
    def __init__(self, inner, note, client, seq):
        self.inner, self.note, self.client, self.seq = inner, note, client, seq

    async def __aiter__(self):
        try:
            async for chunk in self.inner:
                self.note(ev="http_response_body", client=self.client, seq=self.seq,
                          b64=base64.b64encode(chunk).decode())
                yield chunk
        except Exception as e:
            self.note(ev="http_response_error", client=self.client, seq=self.seq, error=repr(e))
            raise

    async def aclose(self):
        self.note(ev="http_response_end", client=self.client, seq=self.seq)
        await self.inner.aclose()


class TapTransport(httpx2.AsyncBaseTransport):
    """Wraps httpx2's own transport (one connection pool per instance)."""
    _seq = [0]  # shared by every client of the process: one numbering

    def __init__(self, note, client):
        self.note, self.client = note, client
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request):
        TapTransport._seq[0] += 1
        seq = TapTransport._seq[0]
        body = request.content if request.method == "POST" else b""
        self.note(ev="http_request", client=self.client, seq=seq, method=request.method,
                  path=request.url.raw_path.decode(), headers=_keep(request.headers.items()),
                  body=body.decode() if body else None)
        resp = await self.inner.handle_async_request(request)
        ns = resp.extensions.get("network_stream")
        local = ns.get_extra_info("client_addr") if ns is not None else None
        self.note(ev="http_response", client=self.client, seq=seq, local_port=local[1] if local else None,
                  status=resp.status_code, content_type=resp.headers.get("content-type"),
                  mcp_session_id=resp.headers.get("mcp-session-id"))
        return httpx2.Response(resp.status_code, headers=resp.headers,
                               stream=_TapStream(resp.stream, self.note, self.client, seq),
                               extensions=resp.extensions)

    async def aclose(self):
        await self.inner.aclose()


def logging_asgi(app, note):
    seqs = [0]

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        seqs[0] += 1
        seq = seqs[0]
        hdrs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        note(ev="http_request", seq=seq, method=scope["method"], path=scope["path"],
             query=scope["query_string"].decode(), peer_port=scope["client"][1], headers=_keep(hdrs))
        body = bytearray()

        async def rcv():
            m = await receive()
            if m["type"] == "http.request":
                body.extend(m.get("body", b""))
                if not m.get("more_body"):
                    note(ev="http_request_body", seq=seq, body=body.decode("utf-8", "replace"))
            elif m["type"] == "http.disconnect":
                note(ev="http_disconnect", seq=seq)
            return m

        async def snd(m):
            if m["type"] == "http.response.start":
                h = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in m["headers"]}
                note(ev="http_response_start", seq=seq, status=m["status"], content_type=h.get("content-type"),
                     mcp_session_id=h.get("mcp-session-id"))
            elif m["type"] == "http.response.body" and m.get("body"):
                note(ev="http_response_body", seq=seq, b64=base64.b64encode(m["body"]).decode())
            await send(m)

        try:
            await app(scope, rcv, snd)
        finally:
            note(ev="http_done", seq=seq)
    return wrapped
