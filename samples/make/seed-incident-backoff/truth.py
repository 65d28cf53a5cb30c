#!/usr/bin/env python3
"""samples/seed-incident-backoff.truth.json: the seed incident's truth (made by
seed-incident/truth.py from the client's and server's own records, with its checks) plus what this
variant adds: the back-off the client waited (from the client's own clock: the reset of its GET and
the resume request), the -2h copy made by timeshift.py, and the expected findings, the same for the
three captures.

usage: truth.py SEED_TRUTH_JSON CLIENT_TRUTH_JSON BACKOFF_S SHIFT_S TIMESHIFT_LOG OUT_JSON
"""
import json
import re
import sys

seed_path, client_path, backoff, shift, tslog, out = sys.argv[1:7]
backoff, shift = float(backoff), float(shift)
t = json.load(open(seed_path))
c = json.load(open(client_path))
NAME = "seed-incident-backoff"

conns = {x["label"]: x for x in c["connections"]}
reqs = c["http_requests"]
resume = next(r for r in reqs if r["headers"].get("Last-Event-ID"))
t_reset = conns["B"]["t_closed"]
waited = resume["t"] - t_reset
problems = []
if not backoff - 0.5 <= waited <= backoff + 2.0:
    problems.append("the client waited %.3f s between the GET reset and the resume, not about %s s" % (waited, backoff))
before = [r for r in reqs if r["t"] < resume["t"]]
silence_from = max(max(r["t"] for r in before), t_reset)

m = re.search(r"split at ([0-9.]+) \(\+([0-9.]+) s from the first packet\) in a gap of ([0-9.]+) s; "
              r"(\d+) packets kept, (\d+) moved by ([+-][0-9.]+) s", open(tslog).read())
if not m:
    problems.append("timeshift log not understood")
split, split_rel, gap, kept, moved, off = m.groups() if m else (None,) * 6
if m and not float(gap) > backoff - 1:
    problems.append("the largest gap in the client leg (%s s) is not the back-off" % gap)

t["scenario"] = NAME
t["variant_of"] = "seed-incident (samples/make/seed-incident.sh): the same server, client and nginx.conf, the "\
                  "client's --reconnect-delay %g instead of 3, ports 18301/18302" % backoff
t["generated_by"] = "samples/make/%s.sh" % NAME
t["topology"]["client_leg"]["nginx"] = c["target"]
t["topology"]["timeshifted_copy"] = {
    "pcap": "samples/%s-2h.pcap" % NAME,
    "made_from": "samples/%s-client-leg.pcap" % NAME,
    "by": "samples/make/timeshift.py --at-largest-gap --offset %g" % shift,
    "what": "every packet after the middle of the back-off silence moved %g s later; nothing else changed "
            "(same packets, same bytes)" % shift,
    "split_epoch_s": float(split) if m else None,
    "split_after_first_packet_s": float(split_rel) if m else None,
    "gap_in_the_original_s": float(gap) if m else None,
    "gap_in_the_copy_s": float(gap) + shift if m else None,
    "packets_kept": int(kept) if m else None,
    "packets_moved": int(moved) if m else None,
    "note": "split time and packet counts are how the copy was made (read from the capture by timeshift.py), "
            "not ground truth of the traffic",
}
t["backoff"] = {
    "client_reconnect_delay_s": backoff,
    "get_reset_to_resume_s": round(waited, 3),
    "silence_from_last_client_action_to_resume_s": round(resume["t"] - silence_from, 3),
    "in_the_2h_copy_s": round(waited + shift, 3),
    "what_happens_in_it": "nothing on the wire: the GET was reset, conn C (keep-alive) is idle, the server "
                          "stores GET events 42-47 while the GET is down (about 1.3-1.8 s after the reset)",
    "recorded_by": "the client's own clock (seed_wrap.py: time of the GET reset and of the resume request)",
}
cc = conns["C"]
c_reqs = [r for r in reqs if r["connection"] == cc["index"]]
c_idle_from = max(r["t"] for r in c_reqs if r["method"] != "DELETE")
c_delete = next(r["t"] for r in c_reqs if r["method"] == "DELETE")
t["client_leg_tcp_connections"] = {
    "count": len(c["connections"]),
    "same_in_all_files": True,
    "connections": [{"label": x["label"], "local_port": x["local_port"], "purpose": x["purpose"],
                     "http_request_seqs": x["requests"], "closed_by_client": x["closed_by_client"]}
                    for x in c["connections"]],
    "idle_keep_alive": {"label": "C", "local_port": cc["local_port"],
                        "idle_from_last_call_to_delete_s": round(c_delete - c_idle_from, 3),
                        "in_the_2h_copy_s": round(c_delete - c_idle_from + shift, 3),
                        "note": "one TCP connection throughout (no FIN, no RST, no new SYN): tools/call 8-19, "
                                "then the DELETE after the back-off"},
}
t["http_request_times_epoch_s"] = [{"seq": r["seq"], "method": r["method"], "t": r["t"],
                                    "jsonrpc": r.get("jsonrpc")} for r in reqs]
ef = t["expected_findings"]
t["expected_findings"] = {
    "client_leg": ef["client_leg"],
    "also": ["event_id_reset"],
    "verdict": "unsafe",
    "applies_to": ["samples/%s-client-leg.pcap" % NAME, "samples/%s-server-leg.pcap" % NAME,
                   "samples/%s-2h.pcap" % NAME],
    "identical_for_all_files": True,
    "note": ef["note"] + "; the %g s (or 2 h) back-off before the resume must neither split the session nor end it "
            "before the resume, and must not change any finding; the client leg and its -2h copy hold 4 TCP "
            "connections each (the keep-alive connection C stays one connection across the back-off), the "
            "server leg 18 (HTTP/1.0, one per request)" % backoff,
}
with open(out, "w") as f:
    json.dump(t, f, indent=1)
    f.write("\n")
if problems:
    print("seed-incident-backoff truth.py:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("seed-incident-backoff truth.py: back-off %.3f s (GET reset -> resume), 2h copy split at +%s s" % (waited, split_rel))
