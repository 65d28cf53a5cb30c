#!/usr/bin/env python3
"""Run the seed-incident server or client (samples/make/seed-incident/{server,client}.py,
unchanged) with one addition to what they record: the TCP port of every connection (the client's
local port of each connection it opens, the wall-clock time of each request it sends and of
each close; the server's peer port, i.e. nginx's, of each request).
That lets the truth of concurrent-nginx tie the incident session to its connections in a capture
shared with many other sessions, without touching the seed-incident scripts.

usage: seed_wrap.py server|client ARGS...   (ARGS as for seed-incident/server.py / client.py)
"""
import asyncio
import importlib.util
import os
import sys
import time

role = sys.argv[1]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "seed-incident", role + ".py")
spec = importlib.util.spec_from_file_location("seed_" + role, path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.argv = [path] + sys.argv[2:]

if role == "client":
    _open = mod.Conn.open

    async def open_(self):
        r = await _open(self)
        self.rec["local_port"] = self.writer.get_extra_info("sockname")[1]
        return r

    _send = mod.Conn.send

    def send(self, *a, **kw):
        rec = _send(self, *a, **kw)
        rec["t"] = round(time.time(), 6)
        return rec

    _fin, _rst = mod.Conn.close_fin, mod.Conn.abort_rst

    def close_fin(self):
        self.rec.setdefault("t_closed", round(time.time(), 6))
        return _fin(self)

    def abort_rst(self):
        self.rec.setdefault("t_closed", round(time.time(), 6))
        return _rst(self)

    mod.Conn.open = open_
    mod.Conn.send = send
    mod.Conn.close_fin = close_fin
    mod.Conn.abort_rst = abort_rst
elif role == "server":
    _dispatch = mod.Server.dispatch

    async def dispatch(self, method, target, headers, body, reader, writer, rec):
        peer = writer.get_extra_info("peername")
        rec["peer_port"] = peer[1] if peer else None
        return await _dispatch(self, method, target, headers, body, reader, writer, rec)

    mod.Server.dispatch = dispatch
else:
    sys.exit("usage: seed_wrap.py server|client ARGS...")

asyncio.run(mod.main())
