#!/usr/bin/env python3
"""Build samples/replicas-<variant>.truth.json for make/replicas.sh from what was recorded during the
run: the clients' taps (clients.jsonl: every request, response head, SSE event and its exact data),
each replica's own log (replica-A.jsonl, replica-B.jsonl: requests received, sessions minted or
adopted, event IDs its store minted, replays), the shared store's log (store.jsonl, shared-store
only) and nginx's access log (its `upstream_addr` per request). Never from the captures.

Fails (exit 1, after writing the file) unless the run shows what the variant is for, so that
replicas.sh can run it again:
  own-store:    a resume routed by nginx to the replica that did not mint its Last-Event-ID, answered
                200 with that replica's own events: a response the client already had, and none of
                the awaited events; healthy sessions answered once each, never resumed.
  404:          that resume answered 404 (nothing replayed), the SDK's next try at the minting
                replica replaying the rest; nothing lost.
  shared-store: that resume answered 200 with the minting replica's events, byte for byte, the
                awaited response among them; nothing lost, no duplicate.

usage: truth.py VARIANT WORK_DIR OUT_JSON
"""
import json
import os
import sys
from collections import OrderedDict, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import dumps_compact, read_jsonl  # noqa: E402

variant, work, out = sys.argv[1], sys.argv[2], sys.argv[3]
NAME = "replicas-" + variant
REPLICAS = OrderedDict([("A", "127.0.0.1:18712"), ("B", "127.0.0.1:18713")])
NGINX = "127.0.0.1:18711"
problems = []


def want(ok, what):
    if not ok:
        problems.append(what)


def rpc_key(rpc):
    rpc = rpc or {}
    return (rpc.get("method"), json.dumps(rpc.get("id")) if "id" in rpc else None)


def what_of(msg):
    """'priming', 'notifications/progress', 'response 5'..."""
    if msg is None:
        return "priming"
    m = msg.get("method") or msg.get("kind")
    return "%s %s" % (m, json.dumps(msg["id"])) if "id" in msg else m


# --- the replicas' own records ------------------------------------------------------------------
rep_requests = []  # every request either replica received
minted_at, adopted_at = {}, defaultdict(list)
store = {}  # (replica, session, event id) -> {"stream", "what", "data"}; IDs minted by that replica
minted = defaultdict(lambda: defaultdict(list))  # session -> replica -> [[id, stream, what]]
replays = defaultdict(list)  # (replica, session) -> replay records in order
closes = []
for rname in REPLICAS:
    reqs = OrderedDict()
    for e in read_jsonl(os.path.join(work, "replica-%s.jsonl" % rname)):
        ev = e["ev"]
        if ev == "http_request":
            reqs[e["seq"]] = {"replica": rname, "seq": e["seq"], "t": e["t"], "method": e["method"],
                              "session_id": e.get("mcp_session_id"), "jsonrpc": e.get("jsonrpc"),
                              "last_event_id": e.get("last_event_id"), "peer_port": e.get("peer_port")}
        elif ev == "http_response" and e["seq"] in reqs:
            r = reqs[e["seq"]]
            r["status"] = e["status"]
            r["session_id"] = r["session_id"] or e.get("mcp_session_id")
        elif ev == "http_end" and e["seq"] in reqs:
            reqs[e["seq"]]["end"] = e["outcome"]
            reqs[e["seq"]].setdefault("status", e.get("status"))
        elif ev == "session_minted":
            minted_at[e["session_id"]] = rname
        elif ev == "session_adopted":
            adopted_at[e["session_id"]].append(rname)
        elif ev == "store":
            w = "priming" if e.get("priming") else what_of(e.get("message"))
            store[(rname, e["session_id"], e["event_id"])] = {"stream": e["stream_id"], "what": w, "data": e.get("data")}
            minted[e["session_id"]][rname].append([e["event_id"], e["stream_id"], w])
        elif ev in ("replay", "replay_unknown"):
            replays[(rname, e["session_id"])].append(e)
        elif ev == "close_sse_stream":
            closes.append(e)
    rep_requests.extend(reqs.values())
rep_requests.sort(key=lambda r: r["t"])

shared_log = []
if variant == "shared-store":
    shared_log = read_jsonl(os.path.join(work, "store.jsonl"))
    # which replica stored each ID (the store's own record) must agree with the replicas' logs
    for e in shared_log:
        if e["ev"] == "store":
            want((e["replica"], e["session_id"], e["event_id"]) in store,
                 "store.jsonl: %s %s stored by %s is not in that replica's log" % (e["session_id"], e["event_id"], e["replica"]))


def store_entry(session, event_id):
    """(replica that minted it, entry) for an event ID: one store per replica, or the shared one."""
    hits = [(r, store[(r, session, event_id)]) for r in REPLICAS if (r, session, event_id) in store]
    return hits


# --- the clients' taps --------------------------------------------------------------------------
client = OrderedDict()  # tag -> {"reqs": OrderedDict seq -> req, "events": seq -> [ev], "data": {(seq, n): data}}
other = defaultdict(list)
for e in read_jsonl(os.path.join(work, "clients.jsonl")):
    tag = e.get("session")
    if tag is None:
        continue
    c = client.setdefault(tag, {"reqs": OrderedDict(), "events": defaultdict(list), "data": {}})
    ev = e["ev"]
    if ev == "http_request":
        c["reqs"][e["seq"]] = dict(e)
    elif ev in ("http_response", "response_end", "http_error") and e["seq"] in c["reqs"]:
        c["reqs"][e["seq"]][ev] = e
    elif ev == "sse_event":
        c["events"][e["seq"]].append(e)
    elif ev == "sse_data":
        c["data"][(e["seq"], e["n"])] = e["data"]
    else:
        other[tag].append(e)

# the nginx access log: per session, in the order nginx wrote the lines (each at the request's end)
nginx_lines = read_jsonl(os.path.join(work, "nginx", "access.jsonl"))
by_sid_nginx = defaultdict(list)
for ln in nginx_lines:
    sid = ln.get("http_mcp_session_id") or ln.get("sent_http_mcp_session_id")
    by_sid_nginx[sid].append(ln)
addr_name = {a: n for n, a in REPLICAS.items()}

# client request -> the replica request it became (same session, method, JSON-RPC method and id,
# Last-Event-ID; in order)
pool = defaultdict(list)
for r in rep_requests:
    pool[(r["session_id"], r["method"], rpc_key(r["jsonrpc"]), r["last_event_id"])].append(r)

sessions = []
incident = None
total_client_requests = 0
for tag, c in client.items():
    sid = None
    for r in c["reqs"].values():
        sid = sid or (r.get("http_response") or {}).get("mcp_session_id")
    reqs = []
    seen_responses = []  # [(wire id json, seq)] in the order the client read them
    streams = {}
    for seq, r in c["reqs"].items():
        total_client_requests += 1
        resp = r.get("http_response") or {}
        key = (r.get("mcp_session_id") or sid, r["method"], rpc_key(r.get("jsonrpc")), r.get("last_event_id"))
        rep = pool[key].pop(0) if pool[key] else None
        want(rep is not None, "%s seq %d %s: no replica received it" % (tag, seq, key))
        evs = []
        for e in c["events"].get(seq, []):
            one = {"id": e.get("id")}
            if e.get("priming"):
                one["what"] = "priming"
            elif e.get("dispatched") is False:
                one["what"] = "id only"
            else:
                one["what"] = what_of(e.get("message"))
                m = e.get("message") or {}
                if m.get("kind") in ("response", "error"):
                    seen_responses.append((json.dumps(m.get("id")), seq))
            one["data"] = c["data"].get((seq, e["n"]))
            evs.append(one)
        item = {"seq": seq, "method": r["method"], "jsonrpc": r.get("jsonrpc"), "last_event_id": r.get("last_event_id"),
                "status": resp.get("status"), "served_by": rep and rep["replica"],
                "replica_status": rep and rep.get("status"), "client_local_port": resp.get("local_port"),
                "replica_peer_port": rep and rep.get("peer_port"), "sse_events": evs,
                "end": (r.get("response_end") or {}).get("outcome") or (r.get("http_error") or {}).get("error"),
                "t": r["t"]}
        reqs.append(item)
        streams[seq] = item

    def received_data():
        return {e["data"] for it in reqs for e in it["sse_events"] if e.get("data")}

    # resumes: each GET with Last-Event-ID
    resumes = []
    nginx_resumes = [ln for ln in by_sid_nginx.get(sid, []) if ln.get("http_last_event_id")]
    for it in reqs:
        lei = it["last_event_id"]
        if not lei:
            continue
        cut = [s for s in reqs if s["t"] < it["t"] and not s["last_event_id"] and any(e["id"] == lei for e in s["sse_events"])]
        cut = cut[-1] if cut else None
        minted_by = cut and cut["served_by"]
        entry = store.get((minted_by, sid, lei)) if minted_by else None
        rp = [x for x in replays.get((it["served_by"], sid), []) if x["last_event_id"] == lei]
        # the replay record of THIS request: the replica logs one per resume it served, in order
        used = sum(1 for p in resumes if p["routed_to"] == it["served_by"] and p["last_event_id"] == lei and p["replica_replay"])
        rec = rp[used] if used < len(rp) and it["status"] == 200 else None
        replayed = []
        if rec is not None and rec["ev"] == "replay":
            for i, eid in enumerate(rec["replayed"]):
                by = rec["minted_by"][i] if "minted_by" in rec else it["served_by"]
                st = store.get((by, sid, eid), {})
                replayed.append({"event_id": eid, "minted_by": by, "stream": st.get("stream"), "what": st.get("what")})
        before = {rid for rid, s in seen_responses if s < it["seq"]}
        got = [e for e in it["sse_events"] if e["what"] != "priming"]
        dup = [e["what"] for e in got if e["what"].startswith(("response", "error")) and e["what"].split(" ", 1)[1] in before]
        orig_id = cut and (cut["jsonrpc"] or {}).get("id")
        answered_here = any(e["what"] == "response %s" % json.dumps(orig_id) for e in got)
        # byte for byte: each replayed event the client got vs what the minting replica stored
        same_bytes = all(e.get("data") is not None and e["data"] == store.get((r["minted_by"], sid, r["event_id"]), {}).get("data")
                         for e, r in zip(got, replayed)) and len(got) >= len(replayed) > 0
        ng = nginx_resumes.pop(0) if nginx_resumes else {}
        tool = ((cut or {}).get("jsonrpc") or {}).get("tool")
        returned = [x for x in other[tag] if x["ev"] in ("result", "call_failed") and x["what"] == "tools/call %s" % tool
                    and x["t"] > it["t"]]
        resumes.append({
            "client_seq": it["seq"], "sent_at": it["t"], "last_event_id": lei,
            "cut_stream": cut and {"client_seq": cut["seq"], "jsonrpc": cut["jsonrpc"], "served_by": cut["served_by"]},
            "last_event_id_minted_by": minted_by,
            "last_event_id_is": entry and {"stream": entry["stream"], "what": entry["what"]},
            "routed_to": it["served_by"],
            "cross_replica": bool(minted_by and it["served_by"] != minted_by),
            "status": it["status"],
            "nginx_logged": {k: ng.get(k) for k in ("status", "upstream_addr", "upstream_status", "http_last_event_id")},
            "replica_replay": None if rec is None else ("unknown Last-Event-ID: nothing replayed" if rec["ev"] == "replay_unknown"
                                                        else {"stream": rec["stream_id"], "events": replayed}),
            "client_received": [{"id": e["id"], "what": e["what"]} for e in it["sse_events"]],
            "duplicate_responses": dup,
            "answered_the_resumed_request": answered_here,
            "the_sdk_returned_for_the_resumed_request": returned and (returned[0].get("content") or returned[0].get("error")),
            "replayed_the_minting_replicas_events_byte_for_byte": bool(replayed) and same_bytes and all(
                r["minted_by"] == minted_by and r["stream"] == (entry or {}).get("stream") for r in replayed),
        })

    # what the client never received: events minted for the cut streams after each Last-Event-ID
    never = []
    got_data = received_data()
    for rs in resumes:
        if not rs["last_event_id_minted_by"] or not rs["last_event_id_is"]:
            continue
        rname, stream = rs["last_event_id_minted_by"], rs["last_event_id_is"]["stream"]
        ids = [x for x in minted[sid][rname] if x[1] == stream]
        after = False
        for eid, st, w in ids:
            d = store[(rname, sid, eid)]["data"]
            if after and d is not None and d not in got_data and not any(n["event_id"] == eid and n["minted_by"] == rname for n in never):
                never.append({"event_id": eid, "minted_by": rname, "stream": st, "what": w})
            if eid == rs["last_event_id"]:
                after = True

    sent = [(json.dumps(it["jsonrpc"]["id"]), it) for it in reqs
            if it["method"] == "POST" and (it["jsonrpc"] or {}).get("kind") == "request"]
    answered = defaultdict(int)
    for rid, _ in seen_responses:
        answered[rid] += 1
    rejected = [it for it in reqs if it["status"] == 404]
    deleted = any(it["method"] == "DELETE" and it["status"] == 200 for it in reqs)
    s = {
        "client": tag,
        "role": "incident" if tag.startswith("inc") else "healthy",
        "session_id": sid,
        "minted_at": minted_at.get(sid),
        "adopted_at": adopted_at.get(sid, []),
        "client_info_name": "mcpf-replicas-client-%s" % tag.split("-")[1],
        "http_request_count": len(reqs),
        "requests_served_by": {r: sum(1 for it in reqs if it["served_by"] == r) for r in REPLICAS},
        "requests": [{k: v for k, v in it.items() if k not in ("sse_events", "t") and v is not None}
                     | {"sse_event_ids": [e["id"] for e in it["sse_events"]]} for it in reqs],
        "event_ids_minted": {r: minted[sid].get(r, []) for r in REPLICAS},
        "event_ids_minted_by_both_replicas": sorted({x[0] for x in minted[sid].get("A", [])} & {x[0] for x in minted[sid].get("B", [])}, key=int),
        "resumes": resumes,
        "never_received": never,
        "requests_sent": [json.loads(rid) for rid, _ in sent],
        "responses_on_the_wire": {rid: n for rid, n in answered.items()},
        "never_answered_on_the_wire": [json.loads(rid) for rid, it in sent if answered[rid] == 0 and it["status"] != 404],
        "answered_twice_on_the_wire": [json.loads(rid) for rid, n in answered.items() if n > 1],
        "answered_404": [{"seq": it["seq"], "method": it["method"], "jsonrpc": it["jsonrpc"],
                          "last_event_id": it["last_event_id"], "served_by": it["served_by"]} for it in rejected],
        "what_the_client_got": [{k: v for k, v in e.items() if k not in ("ev", "t", "session")}
                                for e in other[tag] if e["ev"] in ("result", "call_failed")],
        "ended_by": "DELETE (200 at %s)" % next(it["served_by"] for it in reqs if it["method"] == "DELETE" and it["status"] == 200)
        if deleted else ("DELETE answered %s" % [it["status"] for it in reqs if it["method"] == "DELETE"]
                         if any(it["method"] == "DELETE" for it in reqs) else "client stopped without DELETE"),
        "t_first": reqs[0]["t"], "t_last": reqs[-1]["t"],
    }
    sessions.append(s)
    if s["role"] == "incident":
        incident = s

want(incident is not None, "no incident session")
want(len(nginx_lines) == total_client_requests,
     "nginx logged %d lines for %d client requests" % (len(nginx_lines), total_client_requests))
for ln in nginx_lines:
    want(ln["upstream_addr"] in addr_name, "nginx line without one replica: %r" % ln["upstream_addr"])
want(sum(len(v) for v in pool.values()) == 0, "replica requests no client sent: %r" % [k for k, v in pool.items() if v])

# --- per-variant checks and the findings expected once issue 28 is done -------------------------
inc = incident
cross = [r for r in inc["resumes"] if r["cross_replica"]]
expected = {}
for s in sessions:
    if s["role"] == "healthy":
        want(not s["resumes"], "%s resumed" % s["client"])
        want(not s["answered_404"], "%s got 404s" % s["client"])
        want(not s["never_answered_on_the_wire"] and not s["answered_twice_on_the_wire"],
             "%s: not every request answered once" % s["client"])
        want(all(it.get("status") in (200, 202) for it in s["requests"]), "%s: a status not 200/202" % s["client"])
        want(all(s["requests_served_by"][r] for r in REPLICAS), "%s was not served by both replicas" % s["client"])
        exp = []
        if variant == "own-store" and s["event_ids_minted_by_both_replicas"]:
            exp.append({"kind": "event_id_collision", "severity": "medium",
                        "event_ids": s["event_ids_minted_by_both_replicas"],
                        "why": "each replica counts the session's event IDs from 1 in its own store"})
        expected[s["session_id"]] = exp

want(len(cross) >= 1, "no resume crossed replicas")
first = cross[0] if cross else {}
poll_id = ((first.get("cut_stream") or {}).get("jsonrpc") or {}).get("id")
if variant == "own-store":
    want(len(inc["resumes"]) == 1, "own-store: %d resumes, expected 1" % len(inc["resumes"]))
    want(first.get("status") == 200, "own-store: the cross-replica resume was not answered 200")
    rr = first.get("replica_replay") or {}
    want(isinstance(rr, dict) and rr.get("events"), "own-store: the other replica replayed nothing")
    want(isinstance(rr, dict) and all(e["minted_by"] == first.get("routed_to") for e in rr.get("events", [])),
         "own-store: the replay was not the answering replica's own events")
    want(first.get("duplicate_responses"), "own-store: no duplicate response on the resume")
    want(not first.get("answered_the_resumed_request"), "own-store: the resumed request was answered")
    want(poll_id in inc["never_answered_on_the_wire"], "own-store: the poll was answered on the wire")
    want(inc["never_received"], "own-store: nothing the client never received")
    expected[inc["session_id"]] = [
        {"kind": "cross_namespace_replay", "severity": "critical", "cross_replica": True,
         "last_event_id": first["last_event_id"], "minted_by": REPLICAS[first["last_event_id_minted_by"]],
         "answered_by": REPLICAS[first["routed_to"]],
         "replayed": [e["event_id"] for e in rr["events"]],
         "why": "the resume went to the replica that did not mint its Last-Event-ID, which replayed the events "
                "after that ID in ITS own store (another stream of the session)"},
        {"kind": "duplicate_response", "severity": "high",
         "request_ids": [json.loads(d.split(" ", 1)[1]) for d in first["duplicate_responses"]],
         "caused_by": "cross_namespace_replay"},
        {"kind": "skipped_events", "severity": "high", "minted_by": REPLICAS[first["last_event_id_minted_by"]],
         "event_ids": [e["event_id"] for e in inc["never_received"]], "caused_by": "cross_namespace_replay"},
        {"kind": "unanswered_request", "severity": "high", "request_id": poll_id, "caused_by": "cross_namespace_replay"},
    ]
    if inc["event_ids_minted_by_both_replicas"]:
        expected[inc["session_id"]].append(
            {"kind": "event_id_collision", "severity": "medium", "event_ids": inc["event_ids_minted_by_both_replicas"],
             "why": "each replica counts the session's event IDs from 1 in its own store"})
elif variant == "404":
    want(first.get("status") == 404, "404: the cross-replica resume was not answered 404")
    want(first.get("replica_replay") is None, "404: the 404 resume replayed something")
    later = [r for r in inc["resumes"] if r["client_seq"] > first.get("client_seq", 0)]
    want(later and later[0]["status"] == 200 and not later[0]["cross_replica"]
         and later[0]["answered_the_resumed_request"] and later[0]["replayed_the_minting_replicas_events_byte_for_byte"],
         "404: the SDK's next resume did not get the rest from the minting replica")
    want(not inc["never_received"], "404: something never received")
    want(not inc["never_answered_on_the_wire"] and not inc["answered_twice_on_the_wire"],
         "404: a request unanswered or answered twice")
    want(not inc["adopted_at"], "404: a replica adopted the session")
    rejected = [it for it in inc["answered_404"]]
    expected[inc["session_id"]] = [
        {"kind": "session_not_found", "severity": "high", "rejected": len(rejected),
         "including_the_resume": {"last_event_id": first["last_event_id"], "answered_404_by": REPLICAS[first["routed_to"]]},
         "why": "the replica that did not mint the session answered 404 while it went on at the other; "
                "nothing was replayed: no cross_namespace_replay, no duplicate, no skipped events"},
    ]
else:  # shared-store
    want(len(inc["resumes"]) == 1, "shared-store: %d resumes, expected 1" % len(inc["resumes"]))
    want(first.get("status") == 200 and first.get("answered_the_resumed_request"),
         "shared-store: the cross-replica resume did not deliver the awaited response")
    want(first.get("replayed_the_minting_replicas_events_byte_for_byte"),
         "shared-store: the replay was not the minting replica's events byte for byte")
    want(not first.get("duplicate_responses"), "shared-store: a duplicate response")
    want(not inc["never_received"] and not inc["never_answered_on_the_wire"] and not inc["answered_twice_on_the_wire"],
         "shared-store: something lost or doubled")
    expected[inc["session_id"]] = []
# every session was open while the incident's cross-replica resume happened
window = [max(s["t_first"] for s in sessions), min(s["t_last"] for s in sessions)]
if len(sessions) > 1:
    want(first and window[0] < first["sent_at"] < window[1],
         "the cross-replica resume did not happen while every session was open")

truth = {
    "scenario": NAME,
    "generated_by": "samples/make/replicas.sh",
    "recorded_by": "the clients' taps (what each sent and read, every SSE event's exact data), each replica's own log "
                   "(requests received, sessions minted and adopted, event IDs minted, replays)%s and nginx's access log, "
                   "during the run; never from the captures" % (", the shared store's log" if shared_log else ""),
    "topology": {
        "client_leg": {"pcap": "samples/%s-client-leg.pcap" % NAME, "nginx": NGINX},
        "server_leg": {"pcap": "samples/%s-server-leg.pcap" % NAME, "replicas": dict(REPLICAS),
                       "note": "both replicas' upstream connections in one file"},
        "nginx_access_log": "samples/%s.nginx.jsonl" % NAME,
        "nginx": "Debian nginx, one worker, round robin over the two replicas, no stickiness, upstream keep-alive, "
                 "proxy_buffering off, proxy_next_upstream off (samples/make/replicas/nginx.conf)",
        "servers": "official Python SDK (mcp 2.3.0) MCPServer, Streamable HTTP, SSE responses, retry_interval 1500 ms "
                   "(samples/make/replicas/replica.py)",
        "clients": "official Python SDK client (mcp 2.3.0, mode=\"legacy\"), one process (samples/make/replicas/clients.py)",
    },
    "session_sharing": {
        "own-store": "signed session IDs (<uuid4 hex>.<HMAC-SHA256 prefix>, one secret for both replicas): the replica "
                     "that did not mint a session adopts it on its first request (its own transport, ready at once)",
        "404": "none: the SDK's own in-memory sessions (uuid4 hex); the replica that did not mint a session answers 404",
        "shared-store": "signed session IDs, adopted as in own-store",
    }[variant],
    "event_store": {
        "own-store": "one per session IN EACH REPLICA, integer IDs counted from 1 per session per replica (the replicas "
                     "mint the same IDs), the SDK example store's replay (events after the ID in its stream)",
        "404": "one per session in the replica that minted it, integer IDs from 1",
        "shared-store": "one store process both replicas call (make/replicas/store.py, a Unix socket): one counter per "
                        "session, so IDs are unique in the session whichever replica mints them",
    }[variant],
    "http_request_count": {"client_leg": total_client_requests, "nginx_log_lines": len(nginx_lines),
                           "server_leg": {r: sum(1 for x in rep_requests if x["replica"] == r) for r in REPLICAS}},
    "all_sessions_open_between": window,
    "incident_session_id": inc["session_id"],
    "incident_cross_replica_resume": first,
    "sessions": sessions,
    "expected_findings": {
        "per_session": expected,
        "note": {
            "own-store": "once issue 28 is done, on the server leg, on both legs together and with the access log: each "
                         "finding ONCE for the incident session (one logical session, served by both replicas): "
                         "cross_namespace_replay (cross-replica) caused the duplicate_response, the skipped_events and "
                         "the unanswered_request; the event IDs both replicas minted for a session collide "
                         "(event_id_collision, medium, also on the healthy sessions, which are otherwise answered once "
                         "each and never resumed). The client leg cannot tell the replicas apart: there the Last-Event-ID "
                         "was seen on two streams (minted by both replicas)",
            "404": "session_not_found once (the replica that did not mint the session answered 404 while it went on, "
                   "the resume among them); no replay claimed (no cross_namespace_replay, duplicate or skipped events); "
                   "the SDK's next resume at the minting replica replayed the rest: resumption safe",
            "shared-store": "no finding above info on any session: the cross-replica resume replayed the minting "
                            "replica's events byte for byte from the shared store",
        }[variant],
    },
    "expected_per_input": {
        "own-store": {
            "client_leg": "the incident session: cross_namespace_replay, duplicate_response, skipped_events, "
                          "unanswered_request, once each (the client leg cannot name the replicas: the Last-Event-ID was "
                          "seen on two streams, the poll's and the earlier slow_count's, as both replicas minted it); "
                          "event_id_collision (medium) on every session",
            "server_leg": "ONE record per session (each served by both replicas); on the incident session the chain above "
                          "once, the replay named cross-replica (the resume at the replica that did not mint its "
                          "Last-Event-ID, answered from its own store), with frames at both replicas; resumption not "
                          "'safe'; event_id_collision (medium) per session; the healthy sessions nothing else",
            "nginx_log": "the resume whose Last-Event-ID came from a stream the other replica served, answered 200 by this "
                         "one ($upstream_addr): a cross-replica resume reported (cross_namespace_replay with reduced "
                         "confidence: what it replayed is not in a log; duplicates and skips not determinable); today it "
                         "is not reported at all",
            "all_three": "each finding once per logical session, never twice",
        },
        "404": {
            "client_leg": "session_not_found once (the rejected requests, the first resume among them); no "
                          "cross_namespace_replay, duplicate_response, skipped_events or unanswered_request; resumption safe",
            "server_leg": "ONE record for the session (served by the minting replica, refused by the other); "
                          "session_not_found once, the 404 resume among its rejected requests, no replay claimed",
            "nginx_log": "session_not_found once, the 404 resume among the rejected requests; NO cross_namespace_replay "
                         "(nothing was replayed: today a CRITICAL one is reported for the 404)",
            "all_three": "session_not_found once",
        },
        "shared-store": {
            "client_leg": "nothing above info on any session",
            "server_leg": "ONE record per session; the cross-replica resume replayed the minting replica's events byte "
                          "for byte (IDs and data as minted at the other replica): nothing above info (today a CRITICAL "
                          "cross_namespace_replay and a HIGH unanswered_request are reported)",
            "nginx_log": "a log cannot show that the replicas share a store: alone, at most what own-store's log gives, "
                         "with its reduced confidence; with the server leg, nothing above info",
            "all_three": "nothing above info",
        },
    }[variant],
    "problems": problems,
}
with open(out, "w") as f:
    f.write(dumps_compact(truth, depth=5) + "\n")
if problems:
    sys.exit("%s truth.py: %s" % (NAME, "; ".join(problems)))
print("%s truth.py: %d sessions, %d client requests; cross-replica resume %s -> %s answered %s" % (
    NAME, len(sessions), total_client_requests, first.get("last_event_id_minted_by"), first.get("routed_to"),
    first.get("status")), file=sys.stderr)
