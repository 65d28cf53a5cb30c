#!/usr/bin/env python3
"""Official Python SDK client sessions (mcp 2.x, mode="legacy", one asyncio process) for
make/replicas.sh, all through one nginx (so every client is 127.0.0.1 to it). Each has its own
httpx2 client whose transport is mcpf_pylib.TapTransport, here also recording the exact `data:` of
every SSE event the client read (client-side truth). Every resume with Last-Event-ID is the SDK's
own: the replica's `poll_count` closes its POST stream, and the SDK comes back after the priming
event's `retry`.

One INCIDENT session (`inc-00`), alone on the wire during its window so that nginx's round robin
alternates its requests between the replicas (the rr counter is nginx's, shared by all requests):
  +0.0 initialize (the SDK then sends notifications/initialized and opens its standalone GET)
  +0.5 tools/list  +0.9 add  +1.3 add  +1.7 slow_count(10)  (100 ms a step)
  +3.0 poll_count(steps 6, cut_after 2): the replica closes the stream after progress 2; the SDK
       resumes 1.5 s later with GET + Last-Event-ID, the next request nginx routes: to the OTHER
       replica than the one that ran the poll
  +7.2 add  +7.8 leave with DELETE
tools/list and poll_count are made once more if the first try failed (a 404 from the replica that
does not know the session), so the poll runs where the session lives.

H HEALTHY sessions (`ok-01`...), open through the incident, quiet during its window: each at
0.3*(i-1) s initialize, 1.0+0.2(i-1) tools/list, 1.8+0.2(i-1) add, 2.6+0.3(i-1) slow_count(4); after
the incident add, then leave (DELETE for even i, just stop for odd i).

usage: clients.py URL HEALTHY LOG_JSONL
"""
import asyncio
import os
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
import mcpf_pylib  # noqa: E402
from mcpf_pylib import JsonlLog, TapTransport  # noqa: E402

URL, HEALTHY = sys.argv[1], int(sys.argv[2])
note = JsonlLog(sys.argv[3])

T_INCIDENT = 4.2 if HEALTHY else 0.3  # incident window start, s after the process start
INCIDENT_LEN = 8.4  # its last request (DELETE) at +7.8
T_AFTER = T_INCIDENT + INCIDENT_LEN + 0.3


class DataTappedStream(mcpf_pylib._TappedStream):
    """mcpf_pylib's tapped stream, also keeping each dispatched event's exact data."""

    def _event(self, ev):
        if ev.get("dispatched") and ev.get("data"):
            self._note(ev="sse_data", session=self._base["session"], seq=self._base["seq"], n=self.events + 1,
                       id=ev["id"], data=ev["data"])
        super()._event(ev)


mcpf_pylib._TappedStream = DataTappedStream


def text_of(r):
    return [c.text for c in r.content if getattr(c, "type", None) == "text"]


async def call(tag, what, coro_fn, retry=False):
    """Make a call; log its result or the error the SDK surfaced; with retry, once more on error."""
    for attempt in (1, 2) if retry else (1,):
        try:
            r = await coro_fn()
            if hasattr(r, "tools"):
                note(ev="result", session=tag, what=what, attempt=attempt, tools=sorted(t.name for t in r.tools))
            else:
                note(ev="result", session=tag, what=what, attempt=attempt, content=text_of(r),
                     is_error=bool(getattr(r, "is_error", False)))
            return r
        except Exception as e:  # noqa: BLE001 - what the SDK raised is the record
            note(ev="call_failed", session=tag, what=what, attempt=attempt, error="%s: %s" % (type(e).__name__, e))
            await asyncio.sleep(0.3)
    return None


async def run_session(tag, t_start, client_no, steps, delete):
    await asyncio.sleep(max(0.0, t_start - time.monotonic()))
    t0 = time.monotonic()

    async def at(s):
        await asyncio.sleep(max(0.0, t0 + s - time.monotonic()))

    async def on_progress(p, total, message):
        note(ev="progress", session=tag, progress=p, total=total, message=message)

    tap = TapTransport(note, tag)
    http = httpx2.AsyncClient(transport=tap, timeout=httpx2.Timeout(10.0, read=60.0),
                              headers={"User-Agent": "mcpf-replicas-client/%02d" % client_no})
    async with http:
        transport = streamable_http_client(URL, http_client=http, terminate_on_close=delete)
        async with Client(transport, mode="legacy", read_timeout_seconds=15.0,
                          client_info=Implementation(name="mcpf-replicas-client-%02d" % client_no,
                                                     version="1.0.0")) as c:
            note(ev="connected", session=tag)
            for s, what, fn, retry in steps(c, on_progress):
                await at(s)
                if fn is not None:  # None: "leave", closing the client (DELETE if delete)
                    await call(tag, what, fn, retry)
            note(ev="leaving", session=tag, delete=delete)
    note(ev="closed", session=tag, delete=delete)


def incident_steps(c, on_progress):
    return [
        (0.5, "tools/list", lambda: c.list_tools(), True),
        (0.9, "tools/call add", lambda: c.call_tool("add", {"a": 1, "b": 2}), False),
        (1.3, "tools/call add", lambda: c.call_tool("add", {"a": 3, "b": 4}), False),
        (1.7, "tools/call slow_count", lambda: c.call_tool("slow_count", {"steps": 10}, progress_callback=on_progress),
         False),
        (3.0, "tools/call poll_count",
         lambda: c.call_tool("poll_count", {"steps": 6, "cut_after": 2}, progress_callback=on_progress), True),
        (7.2, "tools/call add", lambda: c.call_tool("add", {"a": 5, "b": 6}), False),
        (7.8, "leave", None, False),
    ]


def healthy_steps(i, t0):
    def steps(c, on_progress):
        rel = lambda t: t - t0  # noqa: E731 - absolute schedule -> the session's own clock
        return [
            (rel(1.0 + 0.2 * (i - 1)), "tools/list", lambda: c.list_tools(), False),
            (rel(1.8 + 0.2 * (i - 1)), "tools/call add", lambda: c.call_tool("add", {"a": i, "b": 100}), False),
            (rel(2.6 + 0.3 * (i - 1)), "tools/call slow_count",
             lambda: c.call_tool("slow_count", {"steps": 4}, progress_callback=on_progress), False),
            (rel(T_AFTER + 0.2 * (i - 1)), "tools/call add", lambda: c.call_tool("add", {"a": i, "b": 200}), False),
            (rel(T_AFTER + 0.8 + 0.3 * (i - 1)), "leave", None, False),
        ]
    return steps


async def main():
    t = time.monotonic()
    jobs = []
    for i in range(1, HEALTHY + 1):
        t0 = 0.3 * (i - 1)
        jobs.append(("ok-%02d" % i, t + t0, i, healthy_steps(i, t0), i % 2 == 0))
    jobs.append(("inc-00", t + T_INCIDENT, 0, incident_steps, True))

    results = await asyncio.gather(*(run_session(*j) for j in jobs), return_exceptions=True)
    for j, r in zip(jobs, results):
        if isinstance(r, BaseException):
            note(ev="session_failed", session=j[0], error=repr(r))
            print("session %s failed: %r" % (j[0], r), file=sys.stderr)


asyncio.run(main())
