#!/usr/bin/env python3
"""Run the seed-incident server or client (samples/make/seed-incident/{server,client}.py,
unchanged) with what the vantage-point truth needs added to their own records:

  client: the local TCP port of every connection it opens (its end of the client <-> nginx hop),
          the wall-clock time of every request it sends and of every close;
  server: the peer TCP port of every request (nginx's end of the nginx <-> server hop), the
          wall-clock time each request was read, and the wall-clock time each SSE event was
          minted (POST and GET namespaces).

The same idea as make/concurrent-nginx/seed_wrap.py, plus the server-side times. Nothing here
reads a capture.

usage: wrap.py server|client ARGS...   (ARGS as for seed-incident/server.py / client.py)
"""
import asyncio
import importlib.util
import os
import sys
import time

role = sys.argv[1] if len(sys.argv) > 1 else ""
if role not in ("server", "client"):
    sys.exit("usage: wrap.py server|client ARGS...")
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "seed-incident", role + ".py")
spec = importlib.util.spec_from_file_location("seed_" + role, path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.argv = [path] + sys.argv[2:]


def now():
    return round(time.time(), 6)


if role == "client":
    _open = mod.Conn.open

    async def open_(self):
        r = await _open(self)
        self.rec["local_port"] = self.writer.get_extra_info("sockname")[1]
        self.rec["t_opened"] = now()
        return r

    _send = mod.Conn.send

    def send(self, *a, **kw):
        rec = _send(self, *a, **kw)
        rec["t"] = now()
        return rec

    _fin, _rst = mod.Conn.close_fin, mod.Conn.abort_rst

    def close_fin(self):
        self.rec.setdefault("t_closed", now())
        return _fin(self)

    def abort_rst(self):
        self.rec.setdefault("t_closed", now())
        return _rst(self)

    mod.Conn.open = open_
    mod.Conn.send = send
    mod.Conn.close_fin = close_fin
    mod.Conn.abort_rst = abort_rst
else:
    _dispatch = mod.Server.dispatch

    async def dispatch(self, method, target, headers, body, reader, writer, rec):
        peer = writer.get_extra_info("peername")
        rec["peer_port"] = peer[1] if peer else None
        rec["t"] = now()
        return await _dispatch(self, method, target, headers, body, reader, writer, rec)

    mod.Server.dispatch = dispatch

    # Each send_* call appends its event (counter + 1) before its first await, so the event with
    # that number is this call's; stamp it with the time the call began (the mint).
    def stamped(orig, counter, events):
        async def f(self, *a, **kw):
            n, t = getattr(self, counter) + 1, now()
            try:
                return await orig(self, *a, **kw)
            finally:
                for e in getattr(self, events):
                    if e["n"] == n:
                        e["t_minted"] = t
        return f

    mod.Session.send_on_post = stamped(mod.Session.send_on_post, "post_counter", "post_events")
    mod.Session.send_on_get = stamped(mod.Session.send_on_get, "get_counter", "get_events")

asyncio.run(mod.main())
