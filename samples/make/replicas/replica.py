#!/usr/bin/env python3
"""One replica of the official Python SDK server (mcp 2.x `MCPServer`, Streamable HTTP, SSE
responses, sessions) for make/replicas.sh: two of these run behind a round-robin nginx.

What differs from the SDK's defaults, each a small wrapper around the SDK's own session manager
(`StreamableHTTPSessionManager`), never a change of its transport:

* `--sessions signed`: the replicas share session knowledge without sharing memory. A session ID is
  `<uuid4 hex>.<first 24 hex digits of HMAC-SHA256(secret, uuid4 hex)>`, and a replica that is sent
  an ID it did not mint but whose signature holds ADOPTS the session: it opens its own transport for
  that ID, ready (initialized) at once, speaking the protocol version of the request's
  `MCP-Protocol-Version` header. `--sessions local`: the SDK as it is (uuid4 hex IDs, in memory):
  the other replica answers 404 "Session not found".
* `--store own`: the replica's own event store, one per session: integer event IDs counted per
  session from 1 on this replica alone (so the two replicas mint the same IDs for a session), and
  the SDK example store's replay rules (the events after the given ID in the same stream, priming
  rows skipped; an unknown ID replays nothing). `--store shared --store-socket PATH`: the same
  store kept by one store process (make/replicas/store.py) for both replicas: one counter per
  session, so a resume at either replica replays what either minted, byte for byte.
* Every priming event carries `retry: RETRY_MS` (`retry_interval`), and the tool `poll_count`
  closes its own POST stream after `cut_after` progress notifications (`ctx.close_sse_stream()`,
  SEP-1699 polling), so the SDK client resumes by itself with GET + `Last-Event-ID`, which the
  balancer may send to the other replica.

Logs (JSONL, this replica's own record, never a capture): every HTTP request it received (peer
port, MCP headers, JSON-RPC body, status, end), sessions minted and adopted, every event ID its
store minted (stream, the exact `data:` JSON), every replay.

usage: replica.py NAME PORT LOG_JSONL --sessions signed|local --store own|shared [--store-socket P]
       [--secret S] [--retry-ms N]
"""
import argparse
import asyncio
import hashlib
import hmac
import json
import os
import sys
from uuid import uuid4

import anyio
import uvicorn
from mcp.server.connection import Connection
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import (MCP_SESSION_ID_HEADER, EventCallback, EventId, EventMessage, EventStore,
                                        StreamableHTTPServerTransport, StreamId)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types import jsonrpc_message_adapter
from starlette.requests import Request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from mcpf_pylib import AsgiRequestLog, JsonlLog, describe_message  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("name")
ap.add_argument("port", type=int)
ap.add_argument("log")
ap.add_argument("--sessions", choices=("signed", "local"), required=True)
ap.add_argument("--store", choices=("own", "shared"), required=True)
ap.add_argument("--store-socket")
ap.add_argument("--secret", default="mcpf-replicas-shared-secret")
ap.add_argument("--retry-ms", type=int, default=1500)
args = ap.parse_args()
note = JsonlLog(args.log)
SECRET = args.secret.encode()
REPLICA = {"replica": args.name, "addr": "127.0.0.1:%d" % args.port}

mcp = MCPServer("mcpf-replica", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
async def slow_count(steps: int, ctx: Context) -> str:
    """Counts to `steps`, one progress notification every 100 ms."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0.1)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"counted to {steps}"


@mcp.tool()
async def poll_count(steps: int, cut_after: int, ctx: Context) -> str:
    """Counts to `steps`, one progress notification every 250 ms, and closes its own SSE stream
    after `cut_after` of them (the client comes back with Last-Event-ID after the priming event's
    `retry`); the rest, and the result, are stored for that resume."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0.25)
        await ctx.report_progress(i, steps, f"poll {i}/{steps}")
        if i == cut_after:
            await asyncio.sleep(0.05)  # the progress event written out before the stream goes
            note(ev="close_sse_stream", session_id=(ctx.headers or {}).get("mcp-session-id"),
                 request_id=ctx.request_id, after_progress=i, **REPLICA)
            await ctx.close_sse_stream()
    return f"polled to {steps}"


# --- event stores: integer IDs per session -------------------------------------------------------

def wire_json(message):
    """The `data:` of the SSE event the SDK writes for `message` (EventMessage -> _create_event_data)."""
    return message.model_dump_json(by_alias=True, exclude_unset=True)


def what(message):
    if message is None:
        return {"priming": True}
    return {"message": describe_message(json.loads(wire_json(message)))}


class OwnStore(EventStore):
    """This replica's store for ONE session: IDs 1, 2, 3... counted here alone."""

    def __init__(self):
        self.session_id = None
        self.counter = 0
        self.streams = {}  # stream id -> [(event id, message | None)]
        self.index = {}  # event id -> stream id

    async def store_event(self, stream_id: StreamId, message) -> EventId:
        self.counter += 1
        event_id = str(self.counter)
        self.streams.setdefault(stream_id, []).append((event_id, message))
        self.index[event_id] = stream_id
        note(ev="store", session_id=self.session_id, event_id=event_id, stream_id=stream_id,
             data=None if message is None else wire_json(message), **what(message), **REPLICA)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        stream_id = self.index.get(last_event_id)
        if stream_id is None:
            note(ev="replay_unknown", session_id=self.session_id, last_event_id=last_event_id, **REPLICA)
            return None
        sent, found = [], False
        for event_id, message in list(self.streams[stream_id]):
            if found and message is not None:
                await send_callback(EventMessage(message, event_id))
                sent.append(event_id)
            if event_id == last_event_id:
                found = True
        note(ev="replay", session_id=self.session_id, last_event_id=last_event_id, stream_id=stream_id,
             replayed=sent, **REPLICA)
        return stream_id


class SharedStore(EventStore):
    """A view of the store process (make/replicas/store.py) for ONE session; the process counts
    the IDs, so both replicas mint from one sequence per session."""

    def __init__(self, path):
        self.path = path
        self.session_id = None

    async def _call(self, **req):
        reader, writer = await asyncio.open_unix_connection(self.path)
        writer.write((json.dumps(req) + "\n").encode())
        await writer.drain()
        line = await reader.readline()
        writer.close()
        return json.loads(line)

    async def store_event(self, stream_id: StreamId, message) -> EventId:
        data = None if message is None else wire_json(message)
        r = await self._call(op="store", session_id=self.session_id, stream_id=stream_id, data=data,
                             replica=args.name)
        note(ev="store", session_id=self.session_id, event_id=r["event_id"], stream_id=stream_id, data=data,
             **what(message), **REPLICA)
        return r["event_id"]

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        r = await self._call(op="replay", session_id=self.session_id, last_event_id=last_event_id,
                             replica=args.name)
        if r["stream_id"] is None:
            note(ev="replay_unknown", session_id=self.session_id, last_event_id=last_event_id, **REPLICA)
            return None
        sent = []
        for event_id, data, minted_by in r["events"]:
            await send_callback(EventMessage(jsonrpc_message_adapter.validate_json(data, by_name=False), event_id))
            sent.append(event_id)
        note(ev="replay", session_id=self.session_id, last_event_id=last_event_id, stream_id=r["stream_id"],
             replayed=sent, minted_by=[m for _, _, m in r["events"]], **REPLICA)
        return r["stream_id"]


def new_store():
    return SharedStore(args.store_socket) if args.store == "shared" else OwnStore()


# --- sessions: minted here, or adopted from a signed ID -----------------------------------------

def sign(uid):
    return hmac.new(SECRET, uid.encode(), hashlib.sha256).hexdigest()[:24]


def signed_ok(sid):
    uid, dot, sig = sid.partition(".")
    return bool(dot) and len(uid) == 32 and hmac.compare_digest(sig, sign(uid))


def wrap_session_manager(manager):
    """Per-session stores (both modes), signed IDs and adoption (`--sessions signed`)."""
    orig_handle = manager._handle_stateful_request

    def admit(requestor):
        if manager.max_sessions is not None and len(manager._server_instances) >= manager.max_sessions:
            return None
        uid = uuid4().hex
        sid = "%s.%s" % (uid, sign(uid)) if args.sessions == "signed" else uid
        store = new_store()
        store.session_id = sid
        transport = StreamableHTTPServerTransport(
            mcp_session_id=sid, is_json_response_enabled=manager.json_response, event_store=store,
            security_settings=manager.security_settings, retry_interval=manager.retry_interval,
            idle_timeout=manager.session_idle_timeout)
        manager._server_instances[sid] = transport
        note(ev="session_minted", session_id=sid, **REPLICA)
        return transport

    async def adopt(sid, protocol_version):
        store = new_store()
        store.session_id = sid
        transport = StreamableHTTPServerTransport(
            mcp_session_id=sid, is_json_response_enabled=manager.json_response, event_store=store,
            security_settings=manager.security_settings, retry_interval=manager.retry_interval,
            idle_timeout=manager.session_idle_timeout)

        async def run_server(*, task_status=anyio.TASK_STATUS_IGNORED):
            async with transport.connect() as (read_stream, write_stream):
                task_status.started()
                try:
                    dispatcher = JSONRPCDispatcher(read_stream, write_stream,
                                                   inline_methods=frozenset({"initialize"}))
                    # Born ready: the client initialized this session at the other replica.
                    connection = Connection.for_loop(dispatcher, session_id=sid,
                                                     protocol_version_hint=protocol_version)
                    connection.initialized.set()
                    scope = transport.idle_scope or anyio.CancelScope()
                    with scope:
                        await serve_connection(manager.app, dispatcher, connection=connection,
                                               lifespan_state=manager._lifespan_state)
                finally:
                    await manager._discard_session(sid, transport)

        manager._server_instances[sid] = transport
        await manager._task_group.start(run_server)
        note(ev="session_adopted", session_id=sid, protocol_version=protocol_version, **REPLICA)

    async def handle(scope, receive, send):
        if args.sessions == "signed":
            request = Request(scope, receive)
            sid = request.headers.get(MCP_SESSION_ID_HEADER)
            if sid is not None and sid not in manager._server_instances and signed_ok(sid):
                async with manager._session_creation_lock:
                    if sid not in manager._server_instances:
                        await adopt(sid, request.headers.get(MCP_PROTOCOL_VERSION_HEADER))
        await orig_handle(scope, receive, send)

    manager._admit_session = admit
    manager._handle_stateful_request = handle
    manager.event_store = new_store()  # not None: the SDK turns resumability on


async def main():
    app = mcp.streamable_http_app(json_response=False, stateless_http=False, host="127.0.0.1",
                                  retry_interval=args.retry_ms)
    wrap_session_manager(mcp._lowlevel_server._session_manager)
    logged = AsgiRequestLog(app, note)
    note(ev="listening", sessions=args.sessions, store=args.store, retry_ms=args.retry_ms, **REPLICA)
    config = uvicorn.Config(logged, host="127.0.0.1", port=args.port, log_level="warning")
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    asyncio.run(main())
