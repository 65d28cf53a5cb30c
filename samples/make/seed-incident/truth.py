#!/usr/bin/env python3
"""Merge the client's and the server's own records of one run into
samples/<name>.truth.json, and check the run reproduced what it should.

Nothing here reads a capture: the client and the server each recorded what
they sent, received and minted while the run happened.

Usage: truth.py NAME MODE CLIENT_JSON SERVER_JSON OUT_JSON
"""
import json
import sys

EXPECTED_FINDINGS = {
    "buggy": {
        "client_leg": ["sse_fallback", "unsafe_resumption_after_fallback", "cross_namespace_replay",
                       "duplicate_response", "skipped_events", "unanswered_request"],
        "note": "the seed incident: Last-Event-ID 41 from the GET namespace resolved in the POST namespace",
    },
    "namespaced": {
        "client_leg": [],
        "note": "negative control: nothing above info (an SSE fallback with namespaced ids, correct resume)",
    },
}


def main():
    name, mode, cpath, spath, out = sys.argv[1:6]
    c = json.load(open(cpath))
    s = json.load(open(spath))
    (sess,) = s["sessions"]

    def ids(events):
        return [e["id"] for e in events]

    post_minted = sess["post_events_minted"]
    get_minted = sess["get_events_minted"]
    (resume,) = sess["resumes"]
    replayed = resume["replayed"]

    # which (namespace, id) pairs reached the client, by stream
    delivered = set()
    per_stream = []
    for st in c["streams"]:
        lab = st["label"]
        evs = st["events"]
        if lab.startswith("post("):
            ns = "post"
        elif "resume" in lab:
            ns = "resume"
        else:
            ns = "get"
        if ns == "resume":
            # the server's record says which namespace each replayed id came from
            assert ids(evs) == [r["id"] for r in replayed][:len(evs)], (ids(evs), replayed)
            for r in replayed[:len(evs)]:
                delivered.add((r["namespace"], r["id"]))
        else:
            for e in evs:
                delivered.add((ns, e["id"]))
        per_stream.append({
            "label": lab, "connection": st["connection"], "http_request_seq": st["http_request_seq"],
            "event_count": len(evs),
            "first_event_id": evs[0]["id"] if evs else None,
            "last_event_id": evs[-1]["id"] if evs else None,
        })

    # ids the client saw fresh on more than one stream (replays excluded)
    seen_on = {}
    for st in c["streams"]:
        if "resume" in st["label"]:
            continue
        for e in st["events"]:
            seen_on.setdefault(e["id"], []).append(st["label"])
    collisions = [{"event_id": i, "streams": sorted(set(v))} for i, v in seen_on.items()
                  if len(set(v)) > 1]
    progress_7 = [e["summary"]["progress"] for st in c["streams"] for e in st["events"]
                  if e["summary"].get("progressToken") == "reindex-7"]
    total_7 = [e["summary"]["total"] for st in c["streams"] for e in st["events"]
               if e["summary"].get("progressToken") == "reindex-7"]

    never = {
        "post": [e["id"] for e in post_minted if ("post", e["id"]) not in delivered],
        "get": [e["id"] for e in get_minted if ("get", e["id"]) not in delivered],
    }
    never_detail = {
        "post": "written by the server on the POST stream of request 7 into nginx's buffer; "
                "nginx dropped them when the client gave up (499)" if never["post"] else None,
        "get": "minted on the GET channel while the client's GET was down; the resume did not replay them"
               if never["get"] else None,
    }

    truth = {
        "scenario": name,
        "server_mode": mode,
        "generated_by": "samples/make/%s.sh" % name,
        "recorded_by": "client and server during the run (not derived from the captures)",
        "protocol_version": s["protocol_version"],
        "server_info": s["server_info"],
        "client_info": c["client_info"],
        "session_id": sess["session_id"],
        "event_id_format": sess["id_format"],
        "topology": {
            "client_leg": {"pcap": "samples/%s-client-leg.pcap" % name,
                           "client": "127.0.0.1:<ephemeral>", "nginx": c["target"]},
            "server_leg": {"pcap": "samples/%s-server-leg.pcap" % name,
                           "nginx": "127.0.0.1:<ephemeral>", "upstream": s["listen"]},
            "nginx_access_log": "samples/%s.nginx.jsonl" % name,
        },
        "http_request_counts": {
            "client_leg_sent_by_client": c["http_requests_sent"],
            "server_leg_received_by_server": s["http_requests_received"],
        },
        "client": {
            "connections": c["connections"],
            "http_requests": c["http_requests"],
            "sent_messages": c["sent_messages"],
            "received_streams": c["streams"],
            "last_event_id_sent": c["last_event_id_sent"],
            "duplicate_responses": c["duplicate_responses"],
            "unanswered_requests": c["unanswered_requests"],
            "notes": c["notes"],
        },
        "server": {
            "http_requests": s["http_requests"],
            "post_events_minted": post_minted,
            "get_events_minted": get_minted,
            "post_counter_final": sess["post_counter_final"],
            "get_counter_final": sess["get_counter_final"],
            "disconnects_observed": sess["disconnects_observed"],
            "resume": resume,
        },
        "summary": {
            "client_streams": per_stream,
            "last_event_id_sent": c["last_event_id_sent"],
            "resume_resolved_in_namespace": resume["resolved_namespace"],
            "replayed_ids": [r["id"] for r in replayed],
            "replayed": [{"id": r["id"], "namespace": r["namespace"], "stream": r["stream"],
                          "carries": r["summary"]} for r in replayed],
            "never_delivered_to_client": never,
            "never_delivered_explanation": never_detail,
            "duplicate_responses": [{"response_to_id": d["response_to_id"],
                                     "first": d["first"], "again": d["again"]}
                                    for d in c["duplicate_responses"]],
            "unanswered_requests": c["unanswered_requests"],
            "event_ids_seen_fresh_on_several_streams": collisions,
            "progress_of_request_7_seen_by_client": {
                "count": len(progress_7),
                "first": progress_7[0] if progress_7 else None,
                "last": progress_7[-1] if progress_7 else None,
                "total": total_7[0] if total_7 else None},
        },
        "expected_findings": EXPECTED_FINDINGS[mode],
    }

    # --- the run must have reproduced the scenario exactly ----------------
    sm = truth["summary"]
    fmt = (lambda ns, n: "%s:%d" % ("post" if ns == "post" else "sse", n)) if mode == "namespaced" \
        else (lambda ns, n: str(n))
    problems = []

    def want(what, got, exp):
        if got != exp:
            problems.append("%s: got %r, expected %r" % (what, got, exp))

    want("post counter", sess["post_counter_final"], 42)
    want("get counter", sess["get_counter_final"], 47)
    want("http requests (client)", c["http_requests_sent"], 18)
    want("http requests (server)", s["http_requests_received"], 18)
    want("get#1 ids", [e["id"] for e in c["streams"][1]["events"]], [fmt("get", n) for n in range(1, 42)])
    want("last event id sent", c["last_event_id_sent"], fmt("get", 41))
    want("post stream of 19", [e["id"] for e in c["streams"][-2]["events"]], [fmt("post", 41), fmt("post", 42)])
    want("never delivered post", never["post"], [fmt("post", n) for n in range(2, 19)])
    if mode == "buggy":
        want("replayed", sm["replayed_ids"], ["42"])
        want("resolved namespace", resume["resolved_namespace"], "post")
        want("never delivered get", never["get"], [str(n) for n in range(42, 48)])
        want("duplicates", [d["response_to_id"] for d in sm["duplicate_responses"]], [19])
        want("unanswered", sm["unanswered_requests"], [7])
    else:
        want("replayed", sm["replayed_ids"], ["sse:%d" % n for n in range(42, 48)])
        want("resolved namespace", resume["resolved_namespace"], "get")
        want("never delivered get", never["get"], [])
        want("duplicates", sm["duplicate_responses"], [])
        want("unanswered", sm["unanswered_requests"], [])
    for n in c["notes"]:
        if n.endswith("False"):
            problems.append("timing: " + n)

    with open(out, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    if problems:
        print("truth.py: the run did NOT reproduce the scenario:", *problems, sep="\n  ", file=sys.stderr)
        sys.exit(1)
    print("truth.py: %s reproduced (replayed %s, never delivered get=%s, duplicates=%s, unanswered=%s)" % (
        name, sm["replayed_ids"], never["get"], [d["response_to_id"] for d in sm["duplicate_responses"]],
        sm["unanswered_requests"]))


if __name__ == "__main__":
    main()
