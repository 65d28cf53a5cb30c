#!/usr/bin/env python3
"""Build samples/python-sdk-resume-many.truth.json from what the clients (TapTransport logs), the
relay (its JSONL log of requests and cuts) and the server (request log, per-session event-store log)
recorded during the run; never from the captures. Fails when the run did not give what the sample is
meant to show (every cut stream resumed by the SDK client itself, every event delivered exactly once,
every request answered exactly once).

usage: truth.py WORK_DIR OUT_JSON RELAY_PORT SERVER_PORT
"""
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import build_client_session, client_sessions, dumps_compact, read_jsonl, server_sessions, server_view  # noqa: E402

work, out = sys.argv[1], sys.argv[2]
relay_port, server_port = int(sys.argv[3]), int(sys.argv[4])
rules = json.load(open(os.path.join(work, "rules.json")))
relay = read_jsonl(os.path.join(work, "relay.jsonl"))
cl = client_sessions(read_jsonl(os.path.join(work, "clients.jsonl")))
srv = server_sessions(read_jsonl(os.path.join(work, "server.jsonl")))

problems = []


def want(what, got, exp):
    if got != exp:
        problems.append("%s: got %r, expected %r" % (what, got, exp))


cuts_by_sid = {}
for e in relay:
    if e["ev"] == "cut_scheduled":
        cuts_by_sid.setdefault(e["mcp_session_id"], []).append(e)
relay_conns = {e["client_port"]: e["upstream_local_port"] for e in relay if e["ev"] == "conn"}

sessions = []
for tag, s in cl.items():
    c = build_client_session(tag, s)
    sid = c["session_id"]
    idx = int(tag.split("-")[1])
    ua = "mcpf-py-client/%02d" % idx
    what = "%s (%s)" % (tag, sid)
    sv = server_view(srv[sid])
    want(what + " requests client vs server", c["http_request_count"], sv["http_request_count"])
    minted = {m[0]: (m[1], m[2]) for m in sv["sse_events_minted"]}
    replays = {r["last_event_id"]: r for r in sv["replays"]}
    by_seq = {st["http_seq"]: st for st in c["streams"]}

    # which server stream each client stream belongs to
    def key_of(st):
        if st["kind"] == "POST":
            return str(st["request_id"])
        if st["last_event_id_sent"]:
            r = replays.get(st["last_event_id_sent"])
            return r["stream_id"] if r else None
        return "_GET_stream"

    for st in c["streams"]:
        st["server_stream_id"] = key_of(st)

    # cuts made by the relay on this session, and the SDK's own resume of each
    cuts = []
    expected_cut_kinds = sorted(k for k, r in (("get", rules["get"]), ("post", rules["post"])) if ua in r["clients"])
    want(what + " cut kinds", sorted(x["kind"] for x in cuts_by_sid.get(sid, [])), expected_cut_kinds)
    for x in cuts_by_sid.get(sid, []):
        cut_stream = next((st for st in c["streams"] if st["local_port"] == x["client_port"]), None)
        if cut_stream is None:
            problems.append("%s: no client stream on the cut connection %s" % (what, x["client_port"]))
            continue
        seen = [e["id"] for e in cut_stream["events"]]
        want(what + " ids seen on the cut stream", seen, x["event_ids_forwarded"])
        last = seen[-1]
        res = [st for st in c["streams"] if st["last_event_id_sent"] == last]
        want(what + " one resume of the cut stream", len(res), 1)
        if not res:
            continue
        rs = res[0]
        rp = replays.get(last)
        if rp is None:
            problems.append("%s: the server has no replay for %s" % (what, last))
            continue
        got = [e["id"] for e in rs["events"]]
        want(what + " resume starts with the replay", got[:len(rp["replayed"])], rp["replayed"])
        after = rs["events"][len(rp["replayed"]):]
        cuts.append({
            "kind": "standalone GET" if x["kind"] == "get" else "POST %s id %s" % (x["request"]["tool"], x["request"]["id"]),
            "server_stream_id": cut_stream["server_stream_id"],
            "cut_stream_http_seq": cut_stream["http_seq"],
            "client_leg_local_port": x["client_port"],
            "server_leg_relay_port": x["upstream_local_port"],
            "events_forwarded_before_reset": x["events_forwarded"],
            "event_ids_seen_before_cut": seen,
            "reset": "relay RST to both sides %d ms after the last forwarded event" % rules.get("hold_ms", 150),
            "resume": {
                "http_seq": rs["http_seq"],
                "client_leg_local_port": rs["local_port"],
                "last_event_id_sent": last,
                "server_replayed": rp["replayed"],
                "replayed_what": [minted.get(i, (None, None))[1] for i in rp["replayed"]],
                "after_replay": [{"id": e["id"], "what": "priming" if e.get("priming") else
                                  (e.get("message") or {}).get("method") or (e.get("message") or {}).get("kind")}
                                 for e in after],
                "end": rs["end"],
            },
        })

    # every event the server minted reached the client exactly once (priming of a resumed
    # connection at most once: the client may close right after the response it waited for)
    seen_count = Counter(e["id"] for st in c["streams"] for e in st["events"])
    for eid, (stream_id, w) in minted.items():
        n = seen_count.get(eid, 0)
        if w == "priming":
            if n > 1:
                problems.append("%s: priming %s seen %d times" % (what, eid, n))
        elif n != 1:
            problems.append("%s: event %s (%s on %s) seen %d times" % (what, eid, w, stream_id, n))
    unminted = [i for i in seen_count if i not in minted]
    want(what + " ids seen but not minted", unminted, [])
    not_seen_priming = [eid for eid, (sid_, w) in minted.items() if w == "priming" and seen_count.get(eid, 0) == 0]
    want(what + " unanswered", c["unanswered_requests"], [])
    want(what + " duplicates", c["duplicate_responses"], [])
    bad = [(r["seq"], r["status"]) for r in c["http_requests"] if r["status"] not in (200, 202)]
    want(what + " statuses", bad, [])
    want(what + " DELETE", c["delete"]["sent"], idx % 2 == 0)
    want(what + " resumes == cuts", len(c["resumes"]), len(cuts))

    for r in c["resumes"]:
        st = by_seq.get(r["http_seq"])
        r["resumes_server_stream_id"] = st["server_stream_id"] if st else None
    sessions.append({
        "session_id": sid,
        "sdk": "python",
        "client_info": {"name": "mcpf-py-client-%02d" % idx, "version": "1.0.0"},
        "user_agent": ua,
        **c,
        "cuts": cuts,
        "priming_minted_but_not_seen_by_client": not_seen_priming,
        "server": sv,
        "expected_findings": {"above_info": [], "max_severity": "info",
                              "resumption": "safe" if cuts else "not_attempted"},
    })

client_total = sum(s["http_request_count"] for s in sessions)
server_total = sum(s["server"]["http_request_count"] for s in sessions)
want("client vs server requests", client_total, server_total)
n_cut = Counter(x["kind"].split()[0] for s in sessions for x in s["cuts"])
truth = {
    "scenario": "python-sdk-resume-many",
    "generated_by": "samples/make/python-sdk-resume-many.sh",
    "recorded_by": "the SDK clients (httpx2 taps), the relay (its log of requests and cuts) and the SDK server "
                   "(request log, per-session event-store log), during the run; not derived from the captures",
    "topology": {
        "client_leg": {"pcap": "samples/python-sdk-resume-many.pcap", "clients": "127.0.0.1:<ephemeral>",
                       "relay": "127.0.0.1:%d" % relay_port},
        "server_leg": {"pcap": "samples/python-sdk-resume-many-server-leg.pcap", "relay": "127.0.0.1:<ephemeral>",
                       "server": "127.0.0.1:%d" % server_port},
        "relay": "samples/make/python-sdk-resume-many/relay.py: one upstream connection per client connection, "
                 "bytes forwarded untouched except the cuts",
    },
    "sdk": {"python": {"package": "mcp", "version": "2.3.0"}},
    "transport": "streamable-http, SSE responses, sessions; the server gives every session its own event store "
                 "(uuid4 ids, priming events; replay skips priming rows); the SSE framing is CRLF",
    "relay_rules": rules,
    "counts": {
        "sessions": len(sessions),
        "sessions_with_a_cut": sum(1 for s in sessions if s["cuts"]),
        "sessions_without_cut": sum(1 for s in sessions if not s["cuts"]),
        "cuts": dict(n_cut),
        "resumes_with_last_event_id": sum(len(s["resumes"]) for s in sessions),
        "client_leg_http_requests": client_total,
        "server_leg_http_requests": server_total,
        "client_leg_tcp_connections": len(relay_conns),
        "sessions_ended_by_delete": sum(1 for s in sessions if s["delete"]["sent"]),
    },
    "expected_findings": {
        "per_session": {s["session_id"]: [] for s in sessions},
        "all_sessions": "nothing above info on any session: every cut stream is resumed by the SDK client with "
                        "Last-Event-ID = the last id it saw on that stream, and the server replays exactly the "
                        "events after it from that session's own store, then (Python SDK) a fresh priming event "
                        "and live events; no event is lost or delivered twice, every request is answered once",
        "resumption_verdict": "safe on the sessions with a cut, not_attempted on the others",
    },
    "notes": [
        "Session i starts i*0.1 s after the client process; schedule (s after its start): 0.8 tools/list, 1.5 "
        "broadcast (6 notifications/message on the standalone GET stream, 300 ms apart, each followed by a progress "
        "on its POST stream), 4.5 slow_count (4 progress, 250 ms apart), 7.0 broadcast (3, 200 ms), 8.5 add, "
        "9.5 leave: DELETE for even i, just close for odd i.",
        "Cuts: the standalone GET of sessions with i%3 != 2 after its 3rd event; the POST stream of slow_count of "
        "sessions with i%4 in (1, 2) after its 2nd event (priming + progress 1). The SDK client waits 1 s "
        "(no retry field) and resumes with GET + Last-Event-ID by itself.",
        "A resumed POST stream ends when the client has the response; the Python SDK server writes a fresh priming "
        "event after the replay, which the client may close before reading (priming_minted_but_not_seen_by_client).",
    ],
    "sessions": sessions,
}
with open(out, "w") as f:
    f.write(dumps_compact(truth, depth=4) + "\n")
if problems:
    print("python-sdk-resume-many truth.py: the run did NOT give what it should:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("python-sdk-resume-many truth.py: %d sessions, cuts %s, %d resumes, %d requests per leg" % (
    len(sessions), dict(n_cut), truth["counts"]["resumes_with_last_event_id"], client_total))
