"""Per-session truth from the JSONL logs written during a run by mcpf_pylib.TapTransport (Python SDK
clients), tap.mjs (TypeScript SDK clients), mcpf_pylib.AsgiRequestLog/SessionEventStore (Python SDK
server) and concurrent-nginx/ts_server.mjs (TypeScript SDK server). Never reads a capture.
Standard library only.
"""
import json
import os
from collections import OrderedDict, defaultdict


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _clean(d, drop=("ev", "t", "session")):
    return {k: v for k, v in d.items() if k not in drop and v is not None}


def client_sessions(lines):
    """Group a client log by session tag -> OrderedDict tag -> dict of parts."""
    out = OrderedDict()
    for e in lines:
        tag = e.get("session")
        if tag is None:
            continue
        s = out.setdefault(tag, {"http": OrderedDict(), "events": defaultdict(list), "other": []})
        ev = e["ev"]
        if ev == "http_request":
            s["http"][e["seq"]] = {"request": e}
        elif ev in ("http_response", "http_sent", "response_end", "http_error"):
            s["http"].setdefault(e["seq"], {})[ev] = e
        elif ev == "sse_event":
            s["events"][e["seq"]].append(e)
        else:
            s["other"].append(e)
    return out


def stream_label(req):
    rpc = req.get("jsonrpc") or {}
    if req["method"] == "GET":
        if req.get("last_event_id"):
            return "GET resume (Last-Event-ID %s)" % req["last_event_id"]
        return "GET standalone"
    if rpc.get("kind") == "request":
        return "POST %s id %s" % (rpc.get("method"), json.dumps(rpc.get("id")))
    return "POST %s" % rpc.get("method")


def build_client_session(tag, s):
    """What one SDK client session sent and received, in order."""
    http_requests, requests_sent, notifications_sent = [], [], []
    streams, responses, ports = [], [], []
    resumes, delete = [], None
    session_id = None
    for seq, x in s["http"].items():
        req = x["request"]
        resp = x.get("http_response", {})
        port = resp.get("local_port") or x.get("http_sent", {}).get("local_port")
        if port is not None and port not in ports:
            ports.append(port)
        if session_id is None and resp.get("mcp_session_id"):
            session_id = resp["mcp_session_id"]
        rpc = req.get("jsonrpc")
        item = {"seq": seq, "method": req["method"], "path": req["path"], "local_port": port,
                "mcp_session_id": req.get("mcp_session_id"),
                "mcp_protocol_version": req.get("mcp_protocol_version"),
                "last_event_id": req.get("last_event_id"),
                "status": resp.get("status"), "content_type": resp.get("content_type"),
                "response_mcp_session_id": resp.get("mcp_session_id")}
        item = {k: v for k, v in item.items() if v is not None or k in ("status", "local_port")}
        if rpc is not None:
            item["jsonrpc"] = rpc
            if rpc.get("kind") == "request":
                r = {"id": rpc["id"], "method": rpc["method"], "http_seq": seq}
                for k in ("tool", "progressToken"):
                    if k in rpc:
                        r[k] = rpc[k]
                requests_sent.append(r)
            elif rpc.get("kind") == "notification":
                notifications_sent.append({"method": rpc["method"], "http_seq": seq})
        end = x.get("response_end") or {}
        if x.get("http_error"):
            item["error"] = x["http_error"]["error"]
        item["response_end"] = _clean(end, ("ev", "t", "session", "seq")) or None
        http_requests.append(item)
        if req.get("last_event_id"):
            resumes.append({"http_seq": seq, "last_event_id_sent": req["last_event_id"],
                            "status": resp.get("status")})
        if req["method"] == "DELETE":
            delete = {"sent": True, "http_seq": seq, "status": resp.get("status")}
        evs = s["events"].get(seq, [])
        if (resp.get("content_type") or "").startswith("text/event-stream"):
            label = stream_label(req)
            st = {"http_seq": seq, "label": label, "local_port": port,
                  "kind": "GET" if req["method"] == "GET" else "POST",
                  "request_id": (rpc or {}).get("id") if req["method"] == "POST" else None,
                  "last_event_id_sent": req.get("last_event_id"),
                  "events": [], "event_ids": [],
                  "end": (end.get("outcome") + (" (%s)" % end["error"] if end.get("error") else "")) if end else None}
            for e in evs:
                one = {"n": e["n"], "id": e.get("id")}
                if e.get("retry") is not None:
                    one["retry"] = e["retry"]
                if e.get("priming"):
                    one["priming"] = True
                elif e.get("dispatched") is False:
                    one["dispatched"] = False
                else:
                    one["message"] = e.get("message")
                    m = e.get("message") or {}
                    if m.get("kind") in ("response", "error"):
                        responses.append({"id": m.get("id"), "http_seq": seq, "stream": label,
                                          "event_id": e.get("id")})
                if e.get("id"):
                    st["event_ids"].append(e["id"])
                st["events"].append(one)
            streams.append(st)
    if delete is None:
        delete = {"sent": False}
    answered = {json.dumps(r["id"]) for r in responses}
    counts = defaultdict(int)
    for r in responses:
        counts[json.dumps(r["id"])] += 1
    other = s["other"]
    progress = [{"progress": e["progress"], "total": e.get("total")} for e in other if e["ev"] == "progress"]
    results = [_clean(e) for e in other if e["ev"] == "result"]
    return {
        "client_tag": tag,
        "session_id": session_id,
        "client_leg_local_ports": ports,
        "http_request_count": len(http_requests),
        "http_requests": http_requests,
        "requests_sent": requests_sent,
        "notifications_sent": notifications_sent,
        "responses_received": responses,
        "streams": streams,
        "sse_event_ids_seen_per_stream": {"%d %s" % (st["http_seq"], st["label"]): st.pop("event_ids") for st in streams},
        "resumes": resumes,
        "delete": delete,
        "ended_by": "DELETE" if delete["sent"] else "client stopped without DELETE (closed its connections)",
        "progress_received": progress,
        "tool_results": results,
        "unanswered_requests": [r["id"] for r in requests_sent if json.dumps(r["id"]) not in answered],
        "duplicate_responses": [json.loads(k) for k, v in counts.items() if v > 1],
        "transport_errors": [e.get("error") for e in other if e["ev"] == "transport_error"],
        "t_first": min((x["request"]["t"] for x in s["http"].values()), default=None),
        "t_last": max((e["t"] for x in s["http"].values() for e in x.values()), default=None),
    }


def server_sessions(lines):
    """Server log -> per session id: requests received (peer ports), ids minted, replays."""
    reqs = OrderedDict()
    for e in lines:
        if e["ev"] == "http_request":
            reqs[e["seq"]] = {"request": e}
        elif e["ev"] in ("http_response", "http_end") and e["seq"] in reqs:
            reqs[e["seq"]][e["ev"]] = e
    out = defaultdict(lambda: {"http_requests": [], "store": [], "replays": []})
    for seq, x in reqs.items():
        req = x["request"]
        resp = x.get("http_response", {})
        sid = req.get("mcp_session_id") or resp.get("mcp_session_id")
        out[sid]["http_requests"].append({
            "seq": seq, "method": req["method"], "path": req["path"], "peer_port": req.get("peer_port"),
            "last_event_id": req.get("last_event_id"), "jsonrpc": req.get("jsonrpc"),
            "status": resp.get("status") or x.get("http_end", {}).get("status"),
            "end": x.get("http_end", {}).get("outcome")})
    for e in lines:
        if e["ev"] == "store":
            one = {"event_id": e["event_id"], "stream_id": e["stream_id"]}
            if e.get("priming"):
                one["priming"] = True
            else:
                one["message"] = e.get("message")
            out[e.get("session_id")]["store"].append(one)
        elif e["ev"] in ("replay", "replay_unknown"):
            out[e.get("session_id")]["replays"].append(_clean(e, ("ev", "t", "session_id")))
    return out


def minted_what(e):
    if e.get("priming"):
        return "priming"
    m = e["message"]
    w = m.get("method") or m.get("kind")
    return "%s %s" % (w, json.dumps(m["id"])) if "id" in m else w


def server_view(srv):
    ports = []
    for r in srv["http_requests"]:
        if r["peer_port"] not in ports:
            ports.append(r["peer_port"])
    return {
        "http_request_count": len(srv["http_requests"]),
        "server_leg_nginx_ports": ports,
        "http_requests": [{k: v for k, v in r.items() if v is not None} for r in srv["http_requests"]],
        "sse_events_minted_note": "[event_id, stream_id, what] in the order the server's event store minted them",
        "sse_events_minted": [[e["event_id"], e["stream_id"], minted_what(e)] for e in srv["store"]],
        "replays": srv["replays"],
    }


def checked_sdk_sessions(client_lines, server_lines, problems):
    """Each session of a run of concurrent-nginx/py_clients.py or ts_clients.mjs, with what its
    server recorded, checked as healthy: every request answered once, every event the server
    minted seen by the client, no resume, statuses 200/202, one standalone GET, DELETE on even
    sessions. A check that fails is appended to `problems`. Yields (index, client, server view)."""
    def want(what, got, exp):
        if got != exp:
            problems.append("%s: got %r, expected %r" % (what, got, exp))
    srv = server_sessions(server_lines)
    for tag, s in client_sessions(client_lines).items():
        c = build_client_session(tag, s)
        sid = c["session_id"]
        sv = server_view(srv[sid]) if sid in srv else None
        what = "%s (%s)" % (tag, sid)
        if sv is None:
            problems.append("%s: the server has no record of this session" % what)
        else:
            want(what + " requests client vs server", c["http_request_count"], sv["http_request_count"])
            minted = [e[0] for e in sv["sse_events_minted"]]
            seen = [i for ids in c["sse_event_ids_seen_per_stream"].values() for i in ids]
            want(what + " event ids seen == minted", sorted(seen), sorted(minted))
        want(what + " unanswered", c["unanswered_requests"], [])
        want(what + " duplicates", c["duplicate_responses"], [])
        want(what + " resumes", c["resumes"], [])
        bad = [(r["seq"], r["status"]) for r in c["http_requests"] if r["status"] not in (200, 202)]
        want(what + " statuses", bad, [])
        want(what + " one standalone GET", [st["label"] for st in c["streams"] if st["kind"] == "GET"], ["GET standalone"])
        idx = int(tag.split("-")[1])
        want(what + " DELETE", c["delete"]["sent"], idx % 2 == 0)
        yield idx, c, sv


def seed_among_sdk_sessions(work, incident_seqs, problems):
    """What make/_common.sh's seed_among_many_sdk_sessions recorded in WORK: each SDK session (checked
    healthy by checked_sdk_sessions), the window in which every one was open, and when the
    seed-client sent the requests named by incident_seqs ({what: seq}), each of which must fall in
    that window. A check that fails is appended to `problems`."""
    sessions = []
    for idx, c, sv in checked_sdk_sessions(read_jsonl(os.path.join(work, "py-clients.jsonl")),
                                           read_jsonl(os.path.join(work, "py-server.jsonl")), problems):
        sessions.append({"session_id": c["session_id"], "client_info_name": "mcpf-py-client-%02d" % idx,
                         "http_request_count": c["http_request_count"], "ended_by": c["ended_by"],
                         "t_first": c["t_first"], "t_last": c["t_last"],
                         "server_events_minted": len(sv["sse_events_minted"]) if sv else None,
                         "expected_findings_above_info": []})
    window = [max(s["t_first"] for s in sessions), min(s["t_last"] for s in sessions)]
    with open(os.path.join(work, "seed-client.json")) as f:
        sent_at = {r["seq"]: r["t"] for r in json.load(f)["http_requests"]}
    times = {what: sent_at[seq] for what, seq in incident_seqs.items()}
    if not all(window[0] < t < window[1] for t in times.values()):
        problems.append("the incident %r did not happen while every SDK session was open (%.3f..%.3f)"
                        % (times, window[0], window[1]))
    return {"sdk_sessions": sessions, "all_sdk_sessions_open_between": window, "incident_request_times": times}


def dumps_compact(obj, depth=4, _level=0):
    """JSON text with containers indented down to `depth` levels and anything deeper on one line
    (keeps big truth files readable and small)."""
    if _level >= depth or not isinstance(obj, (dict, list)) or not obj:
        return json.dumps(obj, separators=(", ", ": "))
    pad = " " * (_level + 1)
    end = " " * _level
    if isinstance(obj, dict):
        items = ["%s%s: %s" % (pad, json.dumps(k), dumps_compact(v, depth, _level + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    items = ["%s%s" % (pad, dumps_compact(v, depth, _level + 1)) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + end + "]"
