#!/usr/bin/env python3
"""Build midstream-incident.truth.json: the seed truth of the run (made by
seed-incident/truth.py from the client's and server's own records, which also checks that the
incident reproduced) plus what the late capture start leaves outside the file, from the client's
own timeline (wall-clock time of every request it wrote and every SSE event it read) and the time
tcpdump was listening. Nothing here reads the capture.

usage: truth.py SEED_TRUTH CLIENT_TIMELINE MARKER CAPTURE_STARTED OUT NGINX_PORT UPSTREAM_PORT
"""
import json
import sys

seed_path, tl_path, marker_path, cap_path, out_path, nginx_port, upstream_port = sys.argv[1:8]
t = json.load(open(seed_path))
tl = json.load(open(tl_path))
marker_t = float(open(marker_path).read())
cap_t = float(open(cap_path).read())
MARGIN = 0.15  # an event counts as captured only if it came this long after tcpdump listened

problems = []
reqs = t["client"]["http_requests"]
req_t = {e["seq"]: e["t"] for e in tl if e["what"] == "http_request"}
head_t = {e["seq"]: e["t"] for e in tl if e["what"] == "response_head"}
done_t = {e["seq"]: e["t"] for e in tl if e["what"] == "post_done"}
events = [e for e in tl if e["what"] == "sse_event"]
conns = t["client"]["connections"]
conn_label = {c["index"]: c["label"] for c in conns}

before = [r for r in reqs if req_t[r["seq"]] < cap_t]
after = [r for r in reqs if req_t[r["seq"]] >= cap_t + MARGIN]
if len(before) + len(after) != len(reqs):
    problems.append("a request was written within %.2f s of the capture start" % MARGIN)
ev_before = [e for e in events if e["t"] < cap_t]
ev_after = [e for e in events if e["t"] >= cap_t + MARGIN]
if len(ev_before) + len(ev_after) != len(events):
    problems.append("an SSE event arrived within %.2f s of the capture start" % MARGIN)

fallback_get = next(r for r in reqs if r["method"] == "GET" and "last-event-id" not in {k.lower() for k in r["headers"]})
if not (head_t[fallback_get["seq"]] <= marker_t <= cap_t):
    problems.append("capture did not start after the GET head")
get_label = next(s["label"] for s in t["client"]["received_streams"] if s["http_request_seq"] == fallback_get["seq"])
get_events = [e for e in events if e["stream"] == get_label]
if not get_events or get_events[0]["t"] < cap_t + MARGIN:
    problems.append("the first GET event came before (or too close to) the capture start")
expect_before = [("POST", "initialize"), ("POST", "notifications/initialized"), ("POST", "tools/call"), ("GET", None)]
got_before = [(r["method"], (r.get("jsonrpc") or {}).get("method")) for r in before]
if got_before != expect_before:
    problems.append("requests before the capture: %s" % got_before)

def rdesc(r):
    d = {"seq": r["seq"], "connection": conn_label[r["connection"]], "method": r["method"]}
    if r.get("jsonrpc"):
        d["jsonrpc"] = r["jsonrpc"]
    if r["headers"].get("Last-Event-ID"):
        d["last_event_id"] = r["headers"]["Last-Event-ID"]
    return d

in_capture_streams = []
for s in t["client"]["received_streams"]:
    evs = [e for e in events if e["stream"] == s["label"]]
    inside = [e["id"] for e in evs if e["t"] >= cap_t]
    in_capture_streams.append({"label": s["label"], "connection": conn_label[s["connection"]],
                               "events_total": len(evs), "events_in_capture": len(inside),
                               "ids_in_capture": inside})

name = "midstream-incident"
t["scenario"] = name
t["generated_by"] = "samples/make/%s.sh" % name
t["topology"] = {"client_leg": {"pcap": "samples/%s.pcap" % name, "client": "127.0.0.1:<ephemeral>",
                                "nginx": "127.0.0.1:%s" % nginx_port},
                 "server_leg": {"pcap": None, "upstream": "127.0.0.1:%s" % upstream_port,
                                "note": "not captured (only the client <-> nginx leg is in this sample)"}}
t["http_request_counts"] = {"sent_by_client": len(reqs), "in_capture": len(after),
                            "before_capture_start": len(before)}
t["capture_window"] = {
    "how": "tcpdump on lo, 'tcp port %s', started only after the client had read the response head of its "
           "fallback GET (client wrote a marker file; the script then started tcpdump)" % nginx_port,
    "marker_written_at": marker_t,
    "tcpdump_listening_at": cap_t,
    "seconds_from_initialize_to_capture": round(cap_t - req_t[reqs[0]["seq"]], 3),
    "seconds_from_capture_to_first_get_event": round(get_events[0]["t"] - cap_t, 3) if get_events else None,
}
t["outside_capture"] = {
    "http_requests": [rdesc(r) for r in before],
    "connections_entirely_outside": ["A (initialize 1, notifications/initialized, tools/call 7 abandoned "
                                     "after 1.5 s with no byte, closed by the client: SYN to FIN all before)"],
    "connections_partly_outside": ["B (the fallback GET /mcp without Last-Event-ID: its SYN, request and "
                                   "200 text/event-stream response head are outside; the file starts in the "
                                   "middle of its body, at the segment carrying GET event id 1; that body is "
                                   "chunked (nginx to an HTTP/1.1 client), so the first in-file bytes are a "
                                   "chunk-size line and then 'event: message', 'id: 1', 'data: ...'; the client's "
                                   "RST after id 41 is in the file)"],
    "sse_events_before_capture": [{"stream": e["stream"], "id": e["id"]} for e in ev_before],
    "not_in_file": ["the initialize request/response (protocol version, capabilities, serverInfo, the response "
                    "head that minted Mcp-Session-Id; later requests do carry the header)",
                    "POST event id 1 (the initialize response)",
                    "the POST of tools/call 7 and its abandonment (the fallback trigger)",
                    "the GET request line, its headers (Accept: text/event-stream, no Last-Event-ID) and its "
                    "response head (200, text/event-stream, X-Accel-Buffering: no)"],
}
t["in_capture"] = {
    "http_requests": [rdesc(r) for r in after],
    "streams": in_capture_streams,
    "notes": "GET events 1..41 (progress 18..58 of token reindex-7, total 63) arrive on a connection whose "
             "start is not in the file; POST event ids 19..42 on the keep-alive connection C (tools/call 8..19, "
             "each a 2-event SSE response); ids 19..41 are minted fresh on both the GET stream and the POST "
             "streams; the resume GET on connection D (SYN in the file) sends Last-Event-ID 41 and gets event 42 "
             "= the result of 19 again; then nothing for 4 s; the client closes D and sends DELETE on C",
}
t["expected_findings"] = {
    "client_leg": ["cross_namespace_replay", "duplicate_response", "event_id_collision", "skipped_events"],
    "determinable_from_the_file": {
        "cross_namespace_replay": "Last-Event-ID 41 was last seen on the mid-stream GET connection B; the resume "
                                  "replayed event 42, which the file shows minted on the POST stream of request 19 "
                                  "(connection C)",
        "duplicate_response": "response to 19 on C (event 42), then again on the resume stream (event 42)",
        "skipped_events": "ids after 41 of the GET namespace were never delivered: the resume replayed another "
                          "namespace",
        "two_counters": "ids 19..41 minted fresh on the GET stream and on the POST streams (the seed's "
                        "event_id_reset is not determinable as a reset: the earlier POST id 1 is outside the file)",
        "session_id": "from the Mcp-Session-Id request header of the in-file requests (C, D), not from an "
                      "initialize response",
    },
    "not_determinable_from_the_file": {
        "sse_fallback": "the abandoned POST of 7 and the GET request/response head are outside the file; the GET "
                        "stream is only seen as a server-to-client SSE body on a connection of unknown start",
        "initialize": "outside the file: no protocolVersion/capabilities/clientInfo/serverInfo from the handshake "
                      "(MCP-Protocol-Version 2025-06-18 is on the in-file requests)",
        "unsafe_resumption_after_fallback": "the resume is visible, that it followed a fallback is not",
        "event_id_reset": "see two_counters",
    },
    "unanswered_request": "NOT determinable as unanswered_request 7: the id 7 never appears in the file (its POST "
                          "is outside). What is determinable: progress for token reindex-7 stops at 58 of 63 and "
                          "no response ever follows, so at most an open/abandoned progress token (reduced "
                          "confidence, request unseen); an analyzer must not claim request 7 by id",
    "must_report": "the capture starts mid-stream (connections without SYN, a body without a request) and findings "
                   "that depend on it are marked reduced confidence; never 'no MCP' or an empty result",
    "verdict": "unsafe",
}
t["expected_findings_full_run"] = {"note": "what the full client leg (samples/seed-incident-client-leg.pcap) shows",
                                   "client_leg": ["sse_fallback", "unsafe_resumption_after_fallback",
                                                  "cross_namespace_replay", "duplicate_response",
                                                  "skipped_events", "unanswered_request"]}
with open(out_path, "w") as f:
    json.dump(t, f, indent=1)
    f.write("\n")
if problems:
    print("midstream truth: the capture window is not as intended:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("midstream truth: %d requests before the capture, %d in it; capture started %.3f s before GET event 1" % (
    len(before), len(after), t["capture_window"]["seconds_from_capture_to_first_get_event"]))
