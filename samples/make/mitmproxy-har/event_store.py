"""In-memory EventStore modelled on the Python SDK's example store
(examples/servers/simple-streamablehttp: uuid4 event ids, opaque, no stream in the id,
a bounded history per stream, replay skips priming rows), plus a JSONL log of every
id it mints so the truth file is recorded on the server side, independently of the pcap.
"""
import json
import time
from collections import deque
from dataclasses import dataclass
from uuid import uuid4

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId


@dataclass
class _Entry:
    event_id: EventId
    stream_id: StreamId
    message: object  # JSONRPCMessage | None (None = priming event)


class LoggingInMemoryEventStore(EventStore):
    def __init__(self, log_path: str, max_events_per_stream: int = 100):
        self.max_events_per_stream = max_events_per_stream
        self.streams: dict[StreamId, deque[_Entry]] = {}
        self.index: dict[EventId, _Entry] = {}
        self._log = open(log_path, "a", buffering=1)

    def _note(self, **kw):
        kw["t"] = time.time()
        self._log.write(json.dumps(kw) + "\n")

    async def store_event(self, stream_id: StreamId, message) -> EventId:
        event_id = str(uuid4())
        entry = _Entry(event_id, stream_id, message)
        q = self.streams.setdefault(stream_id, deque(maxlen=self.max_events_per_stream))
        if len(q) == q.maxlen:
            self.index.pop(q[0].event_id, None)
        q.append(entry)
        self.index[event_id] = entry
        desc = {"priming": True}
        if message is not None:
            m = message.model_dump(by_alias=True, exclude_none=True, mode="json")
            desc = {"priming": False, "method": m.get("method"), "id": m.get("id"),
                    "kind": "request" if "method" in m and "id" in m else
                            "notification" if "method" in m else "response" if "result" in m else "error"}
            if m.get("method") == "notifications/progress":
                desc["progress"] = m.get("params", {}).get("progress")
        self._note(ev="store", event_id=event_id, stream_id=stream_id, **desc)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        entry = self.index.get(last_event_id)
        if entry is None:
            self._note(ev="replay_unknown", last_event_id=last_event_id)
            return None
        sent = []
        found = False
        for e in self.streams.get(entry.stream_id, ()):
            if found and e.message is not None:
                await send_callback(EventMessage(e.message, e.event_id))
                sent.append(e.event_id)
            if e.event_id == last_event_id:
                found = True
        self._note(ev="replay", last_event_id=last_event_id, stream_id=entry.stream_id, replayed=sent)
        return entry.stream_id
