#!/usr/bin/env python3
"""Write samples/har-seed.truth.json for make/har-seed.sh: the truth of the seed incident recorded
through mitmproxy, from what seed-client and seed-server recorded during the run, never from the HAR.

make/seed-incident/truth.py checks the run reproduced the incident's exact ids (it fails
otherwise); make/_py/proxy_logs_truth.py's seed part keeps what a record of the client leg can be
held to. The only thing read from the HAR is its entry count, checked against the requests the
client sent (mitmproxy writes one entry per request it saw, answered or not).

usage: truth.py --work DIR --mitmproxy-version V --topology T --har FILE --sanitized-har FILE --out OUT
"""
import argparse
import json
import os
import sys

MAKE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(MAKE))
sys.path.insert(0, os.path.join(MAKE, "_py"))
import proxy_logs_truth  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    for k in ("work", "mitmproxy-version", "topology", "har", "sanitized-har", "out"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--concurrent-har")
    ap.add_argument("--concurrent-topology")
    a = ap.parse_args()
    seed = proxy_logs_truth.seed_part(argparse.Namespace(
        work=a.work, proxy="mitmproxy", seed_log=a.har, seed_topology=a.topology))
    seed["sanitized_copy"] = a.sanitized_har
    seed["expected_analysis"] = {
        "findings": ["sse_fallback", "event_id_reset", "unsafe_resumption_after_fallback",
                     "cross_namespace_replay", "duplicate_response", "skipped_events", "unanswered_request"],
        "resumption_verdict": "unsafe",
        "notes": "a HAR of the client leg holds what the client saw, bodies and SSE event ids included "
                 "(record_sse.py): the same chain as samples/seed-incident-client-leg.pcap (event_id_reset: "
                 "the GET counter starts at 1). The events "
                 "of POST 7 never reached mitmproxy (nginx held them and dropped them when the client "
                 "left), so its entry has no response. The sanitised copy loses nothing the analysis "
                 "needs: the seed client sends no Authorization or Cookie.",
    }
    entries = json.load(open(os.path.join(ROOT, a.har)))["log"]["entries"]
    truth = {
        "scenario": "har-seed",
        "generated_by": "samples/make/har-seed.sh",
        "recorded_by": "seed-client and seed-server during the run (not derived from the HAR)",
        "recorder": {"name": "mitmproxy (mitmdump --mode reverse, --set hardump)",
                     "version": a.mitmproxy_version,
                     "addon": "samples/make/mitmproxy-har/record_sse.py"},
        "seed": seed,
    }
    if a.concurrent_har:
        # The same seed run among many SDK sessions, recorded by one mitmdump: with the bodies,
        # the whole chain on the incident's session.
        c = proxy_logs_truth.concurrent_part(argparse.Namespace(
            work=a.work, proxy="mitmproxy", concurrent_log=a.concurrent_har,
            concurrent_topology=a.concurrent_topology))
        c["expected_analysis"]["incident_findings"] = seed["expected_analysis"]["findings"]
        c["incident"]["expected_analysis"] = seed["expected_analysis"]
        truth["concurrent"] = c
        got = len(json.load(open(os.path.join(ROOT, a.concurrent_har)))["log"]["entries"])
        if got != c["http_request_count"]:
            sys.exit("har-seed truth.py: %s has %d entries for %d requests the clients sent"
                     % (a.concurrent_har, got, c["http_request_count"]))
    with open(a.out, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    n = len(seed["http_requests_sent_by_client"])
    if len(entries) != n:
        sys.exit("har-seed truth.py: %s has %d entries for %d requests the client sent" % (a.har, len(entries), n))
    print("har-seed truth.py: session %s, %d requests, %d HAR entries" % (seed["session_id"], n, len(entries)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
