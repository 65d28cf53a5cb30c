"""Standard-library helpers for the samples/make/*/truth.py scripts: read the JSONL records the
clients and servers wrote during a run (never a capture) and summarise the JSON-RPC messages
and SSE bodies in them."""
import base64
import collections
import json


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def bodies(records, ev="http_response_body", key="seq"):
    """Concatenate the base64 body chunks of each exchange: {seq: bytes}."""
    out = collections.defaultdict(bytearray)
    for e in records:
        if e["ev"] == ev:
            out[e[key]].extend(base64.b64decode(e["b64"]))
    return {k: bytes(v) for k, v in out.items()}


def sse_events(raw, complete=True):
    """WHATWG-style parse of an SSE body (CR, LF or CRLF). An unterminated last event is
    dropped (as a browser would) unless complete=False, when it is returned flagged."""
    text = raw.decode("utf-8")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    tail_open = not text.endswith("\n") and text != ""
    out, data, ev_type, last_id, comments, fields = [], [], "", None, [], False
    for line in lines[:-1] if lines else []:
        if line == "":
            if data:
                out.append({"event": ev_type or "message", "id": last_id, "data": "\n".join(data)})
            data, ev_type, fields = [], "", False
            continue
        if line.startswith(":"):
            comments.append(line)
            continue
        fields = True
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            ev_type = value
        elif name == "id":
            last_id = value
    partial = None
    if (data or fields or (tail_open and lines and lines[-1])) and not complete:
        partial = {"pending_data": data, "last_line_fragment": lines[-1] if lines else ""}
    return out, comments, partial


def summarize(m):
    if isinstance(m, list):
        return {"kind": "batch", "items": [summarize(x) for x in m]}
    if "method" in m:
        s = {"kind": "request" if "id" in m else "notification", "method": m["method"]}
        if "id" in m:
            s["id"] = m["id"]
        p = m.get("params") or {}
        if m["method"] == "notifications/progress":
            s.update(progressToken=p.get("progressToken"), progress=p.get("progress"), total=p.get("total"))
        elif m["method"] == "tools/call":
            s.update(tool=p.get("name"), arguments=p.get("arguments"))
            pt = (p.get("_meta") or {}).get("progressToken")
            if pt is not None:
                s["progressToken"] = pt
        return s
    s = {"kind": "error" if "error" in m else "response", "id": m.get("id")}
    r = m.get("result")
    if isinstance(r, dict):
        if isinstance(r.get("content"), list):
            s["text"] = [c.get("text") for c in r["content"] if c.get("type") == "text"]
        if "tools" in r:
            s["tools"] = sorted(t["name"] for t in r["tools"])
        if "supportedVersions" in r:
            s["supportedVersions"] = r["supportedVersions"]
        if "protocolVersion" in r:
            s["protocolVersion"] = r["protocolVersion"]
    if "error" in m:
        s["error"] = m["error"]
    return s


def decode_body(ctype, raw, complete=True):
    if not raw:
        return {"body": "empty", "messages": []}
    if (ctype or "").startswith("text/event-stream"):
        evs, comments, partial = sse_events(raw, complete)
        msgs = []
        for e in evs:
            try:
                msgs.append(summarize(json.loads(e["data"])))
            except ValueError:
                msgs.append({"kind": "not-json", "event": e["event"], "data": e["data"]})
        out = {"body": "sse", "sse_events": [{"event": e["event"], "id": e["id"]} for e in evs],
               "sse_comments": len(comments), "framing": "CRLF" if b"\r\n" in raw else "LF", "messages": msgs}
        if partial:
            out["unterminated_tail"] = partial
        return out
    if (ctype or "").startswith("application/json"):
        return {"body": "json", "messages": [summarize(json.loads(raw))]}
    return {"body": ctype, "text": raw.decode("utf-8", "replace"), "messages": []}
