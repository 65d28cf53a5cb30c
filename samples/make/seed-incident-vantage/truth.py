#!/usr/bin/env python3
"""samples/seed-incident-vantage.truth.json: what each vantage-point sample holds, from what the
seed-client, the seed-server (make/seed-incident-vantage/wrap.py: ports and times added to their
own records), nginx (its JSON access log) and tcpdump (its own messages) recorded during the runs.
The seed incident's merge and checks are make/seed-incident/truth.py's (run first by the script);
this adds the hops, the files and their clocks, and what must be reported once per logical session.
Nothing here reads a capture; the tshark counts are kept apart under "tshark_oracle".

usage: truth.py --work DIR --nginx-port N --upstream-port N --server-leg-skew S --twice-skew S --out FILE
"""
import argparse
import json
import os
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--work", required=True)
ap.add_argument("--nginx-port", type=int, required=True)
ap.add_argument("--upstream-port", type=int, required=True)
ap.add_argument("--server-leg-skew", type=float, required=True)
ap.add_argument("--twice-skew", type=float, required=True)
ap.add_argument("--out", required=True)
args = ap.parse_args()
W = args.work
NP, UP = args.nginx_port, args.upstream_port
NAME = "seed-incident-vantage"
problems = []


def want(what, got, exp):
    if got != exp:
        problems.append("%s: got %r, expected %r" % (what, got, exp))


def load(*p):
    return json.load(open(os.path.join(W, *p)))


def jsonl(*p):
    return [json.loads(line) for line in open(os.path.join(W, *p)) if line.strip()]


def tcpdump_log(tag):
    """tcpdump's own messages: the link type it wrote and its packet counts."""
    text = open(os.path.join(W, tag + ".tcpdump")).read()
    m = re.search(r"listening on (\S+), link-type (\S+) \(([^)]*)\)", text)
    cap = re.search(r"(\d+) packets captured", text)
    drop = re.search(r"(\d+) packets dropped by kernel", text)
    return {"interface": m.group(1), "link_type": m.group(2), "link_type_name": m.group(3),
            "packets_captured": int(cap.group(1)), "packets_dropped_by_kernel": int(drop.group(1)),
            "stderr": [line for line in text.splitlines() if line]}


def version(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    return (out.stdout + out.stderr).strip().splitlines()[0]


# --- one seed run: the requests as each party recorded them, hop by hop -------------------------
def seed_run(run):
    c = load(run, "client.json")
    s = load(run, "server.json")
    log = jsonl(run, "nginx", "access.jsonl")
    seed = load(run, "seed.truth.json")
    conns = {x["index"]: x for x in c["connections"]}
    by_port = {}
    for line in log:
        by_port.setdefault(int(line["remote_port"]), []).append(line)
    for lines in by_port.values():
        lines.sort(key=lambda x: int(x["connection_requests"]))
    want(run + ": nginx log lines", len(log), c["http_requests_sent"])
    want(run + ": server requests", len(s["http_requests"]), c["http_requests_sent"])
    rows = []
    for cr in c["http_requests"]:
        conn = conns[cr["connection"]]
        k = conn["requests"].index(cr["seq"])
        ng = by_port[conn["local_port"]][k]
        sr = s["http_requests"][cr["seq"] - 1]  # the server read them in the client's order (checked)
        want("%s: request %d method (client, nginx, server)" % (run, cr["seq"]),
             (ng["request_method"], sr["method"]), (cr["method"], cr["method"]))
        cj = cr.get("jsonrpc") or {}
        sj = sr.get("jsonrpc") or {}
        want("%s: request %d JSON-RPC (client, server)" % (run, cr["seq"]),
             (sj.get("method"), sj.get("id")), (cj.get("method"), cj.get("id")))
        want("%s: request %d Last-Event-ID (client, nginx, server)" % (run, cr["seq"]),
             (ng["http_last_event_id"] or None, sr["last_event_id"]),
             (cr["headers"].get("Last-Event-ID"),) * 2)
        rows.append({
            "seq": cr["seq"], "method": cr["method"], "jsonrpc": cj or None,
            "last_event_id": cr["headers"].get("Last-Event-ID"),
            "client_nginx": {"connection": conn["label"], "client_port": conn["local_port"],
                             "nginx_port": NP, "client_sent_at": cr["t"],
                             "client_got": cr.get("status"), "client_outcome": cr.get("outcome")},
            "nginx": {k2: ng[k2] for k2 in ("msec", "status", "request_time", "body_bytes_sent",
                                             "upstream_addr", "upstream_status", "upstream_response_time",
                                             "upstream_bytes_received", "connection", "connection_requests")},
            "nginx_server": {"nginx_port": sr["peer_port"], "server_port": UP,
                             "server_read_at": sr["t"], "http_version": sr["http_version"]},
        })
    return c, s, log, seed, rows


def hops(c, rows):
    return {
        "client_nginx": {
            "told_by": "TCP port %d (nginx's listening address 127.0.0.1:%d) on one side" % (NP, NP),
            "tcp": "127.0.0.1:<client port> <-> 127.0.0.1:%d" % NP,
            "connections": [{"label": x["label"], "client_port": x["local_port"], "purpose": x["purpose"],
                             "http_request_seqs": x["requests"], "closed_by_client": x["closed_by_client"]}
                            for x in c["connections"]],
            "http_requests": len(rows),
        },
        "nginx_server": {
            "told_by": "TCP port %d (the upstream address 127.0.0.1:%d) on one side" % (UP, UP),
            "tcp": "127.0.0.1:<nginx port> <-> 127.0.0.1:%d" % UP,
            "connections": [{"nginx_port": r["nginx_server"]["nginx_port"], "http_request_seq": r["seq"]}
                            for r in rows],
            "note": "nginx speaks HTTP/1.0 to the upstream (its default): one connection per request, "
                    "closed after it",
            "http_requests": len(rows),
        },
        "same_session_on_both": True,
    }


# --- run 1: the incident -------------------------------------------------------------------------
c, s, log, seed, rows = seed_run("incident")
# make/seed-incident/truth.py names files of its own scenario and the one-leg expectations: replaced
# here by "files", "analyses" and the expected findings per logical session.
for t in (seed,):
    t.pop("topology"); t.pop("expected_findings"); t.pop("generated_by")
(sess,) = s["sessions"]
sid = sess["session_id"]
post7 = next(r for r in rows if (r["jsonrpc"] or {}).get("id") == 7)
held = [e for e in sess["post_events_minted"] if e["stream"] == "post(request id 7)"]
held_ids = [e["id"] for e in held]
want("held events (the POST stream of 7)", held_ids, [str(n) for n in range(2, 19)])
want("held events written to nginx", {e["written_to_connection"] for e in held}, {True})
want("POST 7 at nginx (status, body bytes sent)", (post7["nginx"]["status"], post7["nginx"]["body_bytes_sent"]),
     ("499", "0"))
if not int(post7["nginx"]["upstream_bytes_received"]) > 0:
    problems.append("nginx received nothing from the upstream for POST 7")
stored = [e for e in sess["get_events_minted"] if not e["written_to_connection"]]
want("GET events never written", [e["id"] for e in stored], [str(n) for n in range(42, 48)])
conn_a = next(x for x in c["connections"] if x["label"] == "A")

incident_hold = {
    "request": {"jsonrpc_id": 7, "method": "tools/call", "tool": "reindex", "http_request_seq": post7["seq"]},
    "events": held_ids,
    "namespace": "post (the POST stream of request 7)",
    "carry": "notifications/progress 1-17 of progressToken reindex-7",
    "written_by_server_to_nginx": {
        "hop": "nginx_server", "nginx_port": post7["nginx_server"]["nginx_port"], "server_port": UP,
        "first_minted_at": held[0]["t_minted"], "last_minted_at": held[-1]["t_minted"],
        "recorded_by": "seed-server (each event's written_to_connection is true)"},
    "at_nginx": {"status": 499, "upstream_bytes_received": int(post7["nginx"]["upstream_bytes_received"]),
                 "body_bytes_sent": 0, "request_time": float(post7["nginx"]["request_time"]),
                 "why": "proxy_buffering on and an HTTP/1.0 (close-delimited) upstream response without "
                        "X-Accel-Buffering: no: nginx holds the stream until its buffer fills or the "
                        "upstream closes; the client closed first, nginx logged 499 and closed the upstream",
                 "recorded_by": "nginx's access log"},
    "at_client": {"hop": "client_nginx", "connection": "A", "client_port": conn_a["local_port"],
                  "outcome": post7["client_nginx"]["client_outcome"], "closed": conn_a["closed_by_client"],
                  "closed_at": conn_a["t_closed"], "response_bytes": 0,
                  "recorded_by": "seed-client"},
    "then": "the client fell back to GET /mcp; the server routed the rest of request 7 to the GET channel",
}
never_written = {
    "events": [e["id"] for e in stored], "namespace": "get",
    "what": "minted on the GET channel while the client's GET was down (the resume replayed POST event 42 "
            "instead): never written to any connection, so on no hop; skipped_events, not lost_in_transit",
    "carry": "progress 59-63 and the result of request 7",
}

findings_chain = [
    {"kind": "lost_in_transit", "severity": "high", "count": 1,
     "what": "the 17 events %s-%s of the POST stream of request 7, written by the server to nginx "
             "(nginx_server hop) and never delivered to the client (client_nginx hop): nginx held them and "
             "dropped them at the client's 499" % (held_ids[0], held_ids[-1]),
     "seen_at": "nginx_server", "missing_at": "client_nginx",
     "must_cite_frames_in": ["client_nginx", "nginx_server"],
     "only_with_both_hops": True},
    {"kind": "sse_fallback", "severity": "info", "count": 1,
     "what": "POST tools/call 7 abandoned after 1.5 s: with no response bytes at the client_nginx hop, with "
             "part of the response (the held events) at the nginx_server hop; then GET /mcp"},
    {"kind": "unsafe_resumption_after_fallback", "severity": "high", "count": 1,
     "what": "Last-Event-ID %s after the fallback, integer IDs" % c["last_event_id_sent"]},
    {"kind": "cross_namespace_replay", "severity": "critical", "count": 1,
     "what": "Last-Event-ID 41 (GET namespace) resolved in the POST namespace: replayed %s"
             % seed["summary"]["replayed_ids"]},
    {"kind": "duplicate_response", "severity": "high", "count": 1, "request_id": 19},
    {"kind": "skipped_events", "severity": "high", "count": 1, "events": never_written["events"],
     "namespace": "get"},
    {"kind": "unanswered_request", "severity": "high", "count": 1, "request_id": 7},
]
findings_also = [
    {"kind": "event_id_reset", "severity": "high", "count": 1,
     "what": "the GET channel's counter starts at 1 after the POST counter, minting IDs the POST counter minted too"},
]
client_leg_kinds = [f["kind"] for f in findings_chain + findings_also if f["kind"] != "lost_in_transit"]
all_kinds = [f["kind"] for f in findings_chain + findings_also]

# --- tcpdump's own messages ------------------------------------------------------------------------
td = {t: tcpdump_log(t) for t in ("any", "lo", "client-leg", "server-leg", "twice-a", "twice-b",
                                   "namespaced-any", "healthy-any")}
for t, d in td.items():
    want("tcpdump %s drops" % t, d["packets_dropped_by_kernel"], 0)
want("-i any holds both legs (packets)", td["any"]["packets_captured"],
     td["client-leg"]["packets_captured"] + td["server-leg"]["packets_captured"])
want("-i lo holds both legs (packets)", td["lo"]["packets_captured"], td["any"]["packets_captured"])
want("the twice-captured link: same packets in both copies", td["twice-b"]["packets_captured"],
     td["twice-a"]["packets_captured"])
want("the twice-captured link is the client leg", td["twice-a"]["packets_captured"],
     td["client-leg"]["packets_captured"])
for t in ("any", "twice-b", "namespaced-any", "healthy-any"):
    want("tcpdump -i any link type (%s)" % t, td[t]["link_type"], "LINUX_SLL2")

SK, TW = args.server_leg_skew, args.twice_skew
both = ["client_nginx", "nginx_server"]
f = lambda n: "samples/" + n  # noqa: E731
files = {
    f("seed-incident-any.pcap"): {
        "run": "incident", "made_by": "tcpdump -i any -U -s 0 'tcp port %d or tcp port %d'" % (NP, UP),
        "link_type": "LINUX_SLL2 (DLT 276, Linux cooked v2: 20-byte header with the interface index); "
                     "every packet is on lo, captured once",
        "tcpdump": td["any"],
        "inputs": [{"input": "I1", "hops": both, "interfaces": "one (pcap)"}],
        "vantage_points": 2, "clock_offset_s": 0.0},
    f("seed-incident-lo.pcap"): {
        "run": "incident", "made_by": "tcpdump -i lo -U -s 0 'tcp port %d or tcp port %d'" % (NP, UP),
        "link_type": "EN10MB (DLT 1, Ethernet-like loopback framing, zero MACs)",
        "tcpdump": td["lo"],
        "inputs": [{"input": "I1", "hops": both, "interfaces": "one (pcap)"}],
        "vantage_points": 2, "clock_offset_s": 0.0},
    f("seed-incident-two-ifaces.pcapng"): {
        "run": "incident",
        "made_by": "mergecap -I none -w seed-incident-two-ifaces.pcapng CLIENT_LEG.pcap SERVER_LEG.pcap, where "
                   "CLIENT_LEG is tcpdump -i lo 'tcp port %d' and SERVER_LEG tcpdump -i lo 'tcp port %d' "
                   "(two captures at once); -I none keeps one Interface Description Block per input "
                   "(the default, -I all, merges identical ones into one)" % (NP, UP),
        "link_type": "EN10MB on both interfaces",
        "tcpdump": {"interface 0": td["client-leg"], "interface 1": td["server-leg"]},
        "inputs": [{"input": "I1", "interfaces": [
            {"interface_id": 0, "hops": ["client_nginx"], "from": "the client-leg capture"},
            {"interface_id": 1, "hops": ["nginx_server"], "from": "the upstream-leg capture"}]}],
        "vantage_points": 2, "clock_offset_s": 0.0},
    f("seed-incident-skew-client-leg.pcap"): {
        "run": "incident", "made_by": "tcpdump -i lo -U -s 0 'tcp port %d' (as captured)" % NP,
        "link_type": "EN10MB", "tcpdump": td["client-leg"],
        "inputs": [{"input": "I1 of the pair", "hops": ["client_nginx"]}],
        "clock_offset_s": 0.0, "pair": f("seed-incident-skew-server-leg.pcap")},
    f("seed-incident-skew-server-leg.pcap"): {
        "run": "incident",
        "made_by": "tcpdump -i lo -U -s 0 'tcp port %d', then editcap -F pcap -t %g" % (UP, SK),
        "link_type": "EN10MB", "tcpdump": td["server-leg"],
        "inputs": [{"input": "I2 of the pair", "hops": ["nginx_server"]}],
        "clock_offset_s": SK, "pair": f("seed-incident-skew-client-leg.pcap")},
    f("seed-incident-twice-a.pcap"): {
        "run": "incident", "made_by": "tcpdump -i lo -U -s 0 'tcp port %d' (as captured)" % NP,
        "link_type": "EN10MB", "tcpdump": td["twice-a"],
        "inputs": [{"input": "I1 of the pair", "hops": ["client_nginx"]}],
        "clock_offset_s": 0.0, "pair": f("seed-incident-twice-b.pcap")},
    f("seed-incident-twice-b.pcap"): {
        "run": "incident",
        "made_by": "a second tcpdump at the same time, -i any -U -s 0 'tcp port %d', then editcap -F pcap -t %g"
                   % (NP, TW),
        "link_type": "LINUX_SLL2 (another capture point's framing; the same TCP segments)",
        "tcpdump": td["twice-b"],
        "inputs": [{"input": "I2 of the pair", "hops": ["client_nginx"]}],
        "clock_offset_s": float(TW), "pair": f("seed-incident-twice-a.pcap")},
    f("namespaced-ids-any.pcap"): {
        "run": "namespaced", "made_by": "tcpdump -i any -U -s 0 'tcp port %d or tcp port %d'" % (NP, UP),
        "link_type": "LINUX_SLL2", "tcpdump": td["namespaced-any"],
        "inputs": [{"input": "I1", "hops": both}], "vantage_points": 2, "clock_offset_s": 0.0},
    f("python-sdk-healthy-nginx-any.pcap"): {
        "run": "healthy", "made_by": "tcpdump -i any -U -s 0 'tcp port %d or tcp port %d'" % (NP, UP),
        "link_type": "LINUX_SLL2", "tcpdump": td["healthy-any"],
        "inputs": [{"input": "I1", "hops": both}], "vantage_points": 2, "clock_offset_s": 0.0},
}

one_clock = ("every capture was made on one host at the same time (one kernel clock); the only offsets "
             "between inputs are the ones editcap -t applied (the captures' own stamps of one packet "
             "differ by microseconds)")
analyses = [
    {"args": [f("seed-incident-any.pcap")], "run": "incident", "logical_sessions": 1, "vantage_points": 2,
     "hops": both, "findings_once": all_kinds, "verdict_lines": 1, "exit": 1},
    {"args": [f("seed-incident-lo.pcap")], "run": "incident", "logical_sessions": 1, "vantage_points": 2,
     "hops": both, "findings_once": all_kinds, "verdict_lines": 1, "exit": 1},
    {"args": [f("seed-incident-two-ifaces.pcapng")], "run": "incident", "logical_sessions": 1,
     "vantage_points": 2, "hops": {"interface 0": "client_nginx", "interface 1": "nginx_server"},
     "findings_once": all_kinds, "verdict_lines": 1, "exit": 1},
    {"args": [f("seed-incident-skew-client-leg.pcap"), f("seed-incident-skew-server-leg.pcap")],
     "run": "incident", "logical_sessions": 1, "vantage_points": 2,
     "hops": {"I1": "client_nginx", "I2": "nginx_server"}, "findings_once": all_kinds, "verdict_lines": 1,
     "exit": 1,
     "clock": "I2 reads %+g s against I1 (editcap -t %g on the server leg; %s): an offset measured from "
              "matched exchanges must come out at %+g s within the proxy's forwarding delay (milliseconds), "
              "and once applied the server leg's events precede the client leg's" % (SK, SK, one_clock, SK)},
    {"args": [f("seed-incident-twice-a.pcap"), f("seed-incident-twice-b.pcap")], "run": "incident",
     "logical_sessions": 1, "vantage_points": 1,
     "hops": {"I1": "client_nginx", "I2": "client_nginx (the same link: the same TCP segments, sequence "
                                          "numbers and bytes)"},
     "findings_once": client_leg_kinds, "must_not_report": ["lost_in_transit", "request_id_reused"],
     "verdict_lines": 1, "exit": 1,
     "clock": "I2 reads %+g s against I1 (editcap -t %g; %s): every packet of I1 is in I2 %g s later, "
              "within a few microseconds (each tcpdump stamps a packet itself)" % (TW, TW, one_clock, TW)},
    {"args": [f("seed-incident-skew-client-leg.pcap")], "run": "incident", "logical_sessions": 1,
     "vantage_points": 1, "findings_once": client_leg_kinds, "exit": 1,
     "note": "alone: what samples/seed-incident-client-leg.pcap gives"},
    {"args": [f("seed-incident-skew-server-leg.pcap")], "run": "incident", "logical_sessions": 1,
     "vantage_points": 1, "findings_once": client_leg_kinds, "exit": 1,
     "note": "alone: what samples/seed-incident-server-leg.pcap gives"},
    {"args": [f("seed-incident-twice-a.pcap")], "run": "incident", "logical_sessions": 1, "vantage_points": 1,
     "findings_once": client_leg_kinds, "exit": 1},
    {"args": [f("seed-incident-twice-b.pcap")], "run": "incident", "logical_sessions": 1, "vantage_points": 1,
     "findings_once": client_leg_kinds, "exit": 1},
    {"args": [f("namespaced-ids-any.pcap")], "run": "namespaced", "logical_sessions": 1, "vantage_points": 2,
     "hops": both, "findings_once": ["lost_in_transit", "sse_fallback"], "resumption": "safe", "exit": 1,
     "note": "no replay chain (namespaced IDs, a correct resume), but the hop comparison is still right to "
             "report the 17 progress events nginx held and dropped (post:2-post:18): this file is the "
             "negative control of the replay chain, not a healthy session"},
    {"args": [f("python-sdk-healthy-nginx-any.pcap")], "run": "healthy", "logical_sessions": 1,
     "vantage_points": 2, "hops": both, "findings_above_info": 0, "exit": 0},
    {"args": "any of the incident argument lists above plus " + f("python-sdk-healthy-nginx-any.pcap"),
     "adds": "one healthy session (its own Mcp-Session-Id) and no finding"},
]

# --- run 2: namespaced --------------------------------------------------------------------------------
nc, ns, nlog, nseed, nrows = seed_run("namespaced")
for k in ("topology", "expected_findings", "generated_by"):
    nseed.pop(k)
(nsess,) = ns["sessions"]
npost7 = next(r for r in nrows if (r["jsonrpc"] or {}).get("id") == 7)
nheld = [e for e in nsess["post_events_minted"] if e["stream"] == "post(request id 7)"]
want("namespaced: held events", [e["id"] for e in nheld], ["post:%d" % n for n in range(2, 19)])
want("namespaced: POST 7 at nginx", (npost7["nginx"]["status"], npost7["nginx"]["body_bytes_sent"]), ("499", "0"))

# --- run 3: the official SDK through the same nginx ------------------------------------------------
hc = jsonl("healthy", "client.jsonl")
hlog = jsonl("healthy", "nginx", "access.jsonl")
hsdk = load("healthy", "sdk.truth.json")
hreqs = [e for e in hc if e["ev"] == "http_request"]
hresp = [e for e in hc if e["ev"] == "http_response"]
want("healthy: nginx log lines", len(hlog), len(hreqs))
want("healthy: client statuses 2xx", sorted({r["status"] // 100 for r in hresp}), [2])
want("healthy: nginx statuses 2xx", sorted({int(x["status"]) // 100 for x in hlog}), [2])
want("healthy: one session in nginx's log", len({x["http_mcp_session_id"] for x in hlog
                                                 if x["http_mcp_session_id"]}), 1)
want("healthy: every SSE response streamed (X-Accel-Buffering: no)",
     {x["upstream_http_x_accel_buffering"] for x in hlog if x["sent_http_content_type"] == "text/event-stream"},
     {"no"})

truth = {
    "scenario": NAME,
    "generated_by": "samples/make/%s.sh" % NAME,
    "recorded_by": "the seed-client, the seed-server (with make/seed-incident-vantage/wrap.py: TCP ports "
                   "and wall-clock times), nginx's JSON access log and tcpdump's own messages, during the "
                   "runs; the official SDK client's HTTP log and the SDK server's event-store log for the "
                   "healthy run. Not derived from the captures, except tshark_oracle",
    "tools": {"nginx": version(["nginx", "-v"]), "tcpdump": version(["tcpdump", "--version"]),
              "tshark (oracle only)": version(["tshark", "--version"])},
    "topology": {
        "path": "client -> nginx 127.0.0.1:%d -> server 127.0.0.1:%d, loopback, one host" % (NP, UP),
        "nginx_conf": "make/seed-incident/nginx.conf with the two ports replaced (proxy_buffering on, the "
                      "default proxy_http_version 1.0, JSON access log); for the healthy run also "
                      "`proxy_set_header Host $http_host` (the SDK server refuses a Host without its port: 421)",
        "hop_names": {"client_nginx": "client <-> nginx, TCP port %d on nginx's side" % NP,
                      "nginx_server": "nginx <-> server, TCP port %d on the server's side" % UP},
        "how_hops_are_told_apart": "by TCP endpoints: nginx's listening port on one hop, the upstream port "
                                   "on the other; every client address is 127.0.0.1 (nginx's too)",
        "clocks": one_clock,
    },
    "files": files,
    "clock_offsets_applied": {
        f("seed-incident-skew-server-leg.pcap"): {"editcap_t": SK, "against": f("seed-incident-skew-client-leg.pcap")},
        f("seed-incident-twice-b.pcap"): {"editcap_t": float(TW), "against": f("seed-incident-twice-a.pcap")},
    },
    "twice_captured_link": {
        "files": [f("seed-incident-twice-a.pcap"), f("seed-incident-twice-b.pcap")],
        "one_vantage_point": True,
        "hop": "client_nginx",
        "what": "two tcpdumps on the one host at the same time, both 'tcp port %d' (a: -i lo, EN10MB; b: -i "
                "any, LINUX_SLL2), b then moved %g s by editcap -t: the same link twice, as a SPAN copy and "
                "a second host's capture give it. Both copies hold every packet (tcpdump: %d and %d packets "
                "captured); told to be the same by TCP endpoints, sequence numbers and bytes, not by frame "
                "bytes (the link-layer headers differ)" % (NP, TW, td["twice-a"]["packets_captured"],
                                                           td["twice-b"]["packets_captured"]),
        "must_not_report": ["request_id_reused (each request is one request, seen twice)",
                            "a second event_id_reset or any finding stated twice",
                            "lost_in_transit (nothing differs between the copies)"],
    },
    "analyses": analyses,
    "incident": {
        "session_id": sid,
        "logical_sessions": 1,
        "server_mode": "buggy",
        "requests_hop_by_hop": rows,
        "held_at_proxy_never_delivered": incident_hold,
        "never_written_to_any_connection": never_written,
        "never_delivered_to_client": seed["summary"]["never_delivered_to_client"],
        "expected_findings_once_per_logical_session": {
            "chain": findings_chain, "also": findings_also, "verdict": "unsafe", "exit": 1,
            "with_one_hop_only": client_leg_kinds,
            "note": "each kind exactly once for the one session, whatever the number of inputs, interfaces "
                    "or copies it is seen in, with its evidence per vantage point; lost_in_transit only when "
                    "both hops are given, citing frames of both (tshark_oracle[file].frames lists, per file, "
                    "the frames of each hop's POST of request 7 and of the server's held response bytes)",
        },
    },
    "namespaced": {
        "file": f("namespaced-ids-any.pcap"),
        "session_id": nsess["session_id"],
        "server_mode": "namespaced",
        "requests_hop_by_hop": nrows,
        "held_at_proxy_never_delivered": {
            "events": [e["id"] for e in nheld], "request": 7,
            "nginx": {"status": 499, "upstream_bytes_received": int(npost7["nginx"]["upstream_bytes_received"]),
                      "body_bytes_sent": 0},
            "client_port": next(x for x in nc["connections"] if x["label"] == "A")["local_port"],
            "nginx_upstream_port": npost7["nginx_server"]["nginx_port"]},
        "replayed_ids": nseed["summary"]["replayed_ids"],
        "expected_findings_once_per_logical_session": {
            "chain": [{"kind": "lost_in_transit", "severity": "high", "count": 1,
                       "events": [e["id"] for e in nheld], "must_cite_frames_in": both},
                      {"kind": "sse_fallback", "severity": "info", "count": 1}],
            "resumption": "safe", "exit": 1,
            "note": "the replay chain's negative control; with one hop only (as samples/namespaced-ids-*-leg.pcap): "
                    "sse_fallback (info) only, exit 0"},
        "seed_truth": nseed,
    },
    "healthy": {
        "file": f("python-sdk-healthy-nginx-any.pcap"),
        "session_id": hsdk["session_id"],
        "sdk": hsdk["sdk"],
        "http_request_count": hsdk["http_request_count"],
        "http_requests": hsdk["http_requests"],
        "sse_events_minted": hsdk["sse_events_minted"],
        "nginx": [{k2: x[k2] for k2 in ("msec", "remote_port", "request_method", "status", "request_time",
                                         "body_bytes_sent", "upstream_bytes_received",
                                         "upstream_http_x_accel_buffering", "sent_http_content_type")}
                  for x in hlog],
        "secret_that_must_be_redacted": hsdk["secret_that_must_be_redacted"],
        "expected": {"logical_sessions": 1, "vantage_points": 2, "findings_above_info": 0, "exit": 0,
                     "note": "nginx forwarded every event at once (the server sends X-Accel-Buffering: no): "
                             "nothing held, nothing lost between the hops"},
    },
    "seed_truth": seed,
    "nginx_access_log": {"incident": log, "namespaced": nlog, "healthy": hlog},
    "tshark_oracle": {
        "note": "read from the committed files by tshark 4.0 (make/seed-incident-vantage/oracle.py), not "
                "ground truth: HTTP is decoded on ports %d and %d only when told (-d tcp.port==N,http), "
                "http_response counts only responses whose body completed, http_response_heads "
                "(http.desegment_body:FALSE) every head; frame numbers are per file" % (NP, UP),
        "files": {f(k): v for k, v in load("oracle.json").items()},
    },
}

with open(args.out, "w") as fh:
    json.dump(truth, fh, indent=1)
    fh.write("\n")
if problems:
    print("seed-incident-vantage truth.py: the runs did NOT give what they should:", *problems,
          sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("seed-incident-vantage truth.py: session %s, %d events held at nginx (%s-%s), clocks +%g/+%g s"
      % (sid, len(held_ids), held_ids[0], held_ids[-1], SK, TW), file=sys.stderr)
