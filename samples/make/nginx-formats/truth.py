#!/usr/bin/env python3
"""Build nginx-formats.truth.json (in OUT_DIR, beside the logs) from what the clients and servers recorded during the run
(the seed-client's and seed-server's own JSON, merged and checked by seed-incident/truth.py; the
Python SDK client's httpx log and server's event-store log, merged by python-sdk-healthy/truth.py),
never from the logs or the capture. The log_formats are read from the nginx.conf the run
used, so a test can check which key carried which nginx variable.

The access logs are only checked for shape (one valid JSON object a line, one line per HTTP request
the client sent, the same count in all three formats): the script fails otherwise.

usage: truth.py WORK_DIR OUT_DIR NGINX_PORT SEED_PORT PY_PORT
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_py"))
from sdk_truth import seed_among_sdk_sessions  # noqa: E402

work, out_dir = sys.argv[1], sys.argv[2]
nginx_port, seed_port, py_port = (int(x) for x in sys.argv[3:6])
here = os.path.dirname(os.path.abspath(__file__))
NAME = "nginx-formats"
REPO = os.path.abspath(os.path.join(here, "..", "..", ".."))


def rel(name):
    """A file of OUT_DIR as a path from the repository root, as the tests name samples."""
    return os.path.relpath(os.path.join(out_dir, name), REPO)


FORMATS = {"ops-short": "ops_short", "request-line": "request_line", "ingress": "ingress",
           "combined-mcp": "combined_mcp"}
# The text format's lines are read with --log-format and its template, not as JSON.
TEXT = {"combined-mcp"}


def log_formats(conf_path):
    """{log_format name: {"escape": ..., "keys": {json key: template}}} from nginx.conf."""
    text = open(conf_path).read()
    out = {}
    for m in re.finditer(r"^\s*log_format\s+(\S+)\s+(?:escape=(\S+)\s+)?(.*?);\s*$", text, re.M | re.S):
        name, escape, body = m.groups()
        escape = escape or "default"
        joined = "".join(re.findall(r"'([^']*)'", body))
        keys = {k: {"value": v, "json_type": "string" if quote else "number"}
                for k, quote, v in re.findall(r'"([^"]+)":("?)([^",}]*)', joined)}
        out[name] = {"escape": escape, "template": joined, "keys": keys}
    return out


def nginx_version():
    try:
        r = subprocess.run(["nginx", "-v"], capture_output=True, text=True)
        return r.stderr.strip().split("/", 1)[-1]
    except OSError:
        return None


problems = []


def want(what, got, exp):
    if got != exp:
        problems.append("%s: got %r, expected %r" % (what, got, exp))


seed = json.load(open(os.path.join(work, "seed.truth.json")))
healthy = json.load(open(os.path.join(work, "healthy.truth.json")))
formats = log_formats(os.path.join(here, "nginx.conf"))
for short, conf_name in FORMATS.items():
    if conf_name not in formats:
        problems.append("log_format %s not found in nginx.conf" % conf_name)

seed_requests = seed["http_request_counts"]["client_leg_sent_by_client"]
healthy_requests = healthy["http_request_count"]
abandoned = [r for r in seed["client"]["http_requests"] if r.get("status") is None]
gets = [r for r in seed["client"]["http_requests"] if r["method"] == "GET"]
concurrent = seed_among_sdk_sessions(work, {
    "abandoned_post": abandoned[0]["seq"],
    "fallback_get": next(r["seq"] for r in gets if not r.get("headers", {}).get("Last-Event-ID")),
    "resume_get": next(r["seq"] for r in gets if r.get("headers", {}).get("Last-Event-ID"))}, problems)
concurrent_requests = seed_requests + sum(x["http_request_count"] for x in concurrent["sdk_sessions"])

files = {}
for session, count in (("seed", seed_requests), ("healthy", healthy_requests), ("concurrent", concurrent_requests)):
    for short, conf_name in FORMATS.items():
        name = "%s-%s.%s.%s" % (NAME, session, short, "log" if short in TEXT else "jsonl")
        path = os.path.join(out_dir, name)
        lines = open(path).read().splitlines()
        entry = {"session": session, "log_format": short, "nginx_log_format_name": conf_name}
        files[rel(name)] = entry
        want("%s lines (one per request the client sent)" % name, len(lines), count)
        if short in TEXT:
            entry["analyze_args"] = ["--log-format", formats[conf_name]["template"]]
            continue
        for i, line in enumerate(lines, 1):
            try:
                obj = json.loads(line)
            except ValueError as e:
                problems.append("%s:%d is not JSON: %s" % (name, i, e))
                continue
            want("%s:%d keys" % (name, i), list(obj), list(formats[conf_name]["keys"]))

healthy.pop("capture", None)
healthy.pop("also", None)
healthy.update({
    "server": "127.0.0.1:%d" % py_port,
    "endpoint": "/mcp (upstream); the client used /healthy/mcp on nginx",
    "endpoint_client_leg": "127.0.0.1:%d/healthy/mcp" % nginx_port,
    "nginx_location": "location /healthy/: proxy_buffering off, upstream HTTP/1.1 keep-alive",
})
seed["generated_by"] = "samples/make/%s.sh" % NAME
seed["topology"] = {
    "client_leg": {"pcap": rel("%s-client-leg.pcap" % NAME), "client": "127.0.0.1:<ephemeral>",
                   "nginx": "127.0.0.1:%d" % nginx_port, "path": "/mcp"},
    "upstream": "127.0.0.1:%d" % seed_port,
    "nginx_location": "location = /mcp: proxy_buffering on, upstream HTTP/1.0 (one connection per request)",
}

truth = {
    "scenario": NAME,
    "generated_by": "samples/make/%s.sh" % NAME,
    "recorded_by": "the clients and servers during the run (not derived from the logs or the capture)",
    "nginx_version": nginx_version(),
    "nginx_conf": "samples/make/%s/nginx.conf" % NAME,
    "log_formats": {short: formats.get(conf_name) for short, conf_name in FORMATS.items()},
    "files": files,
    "client_leg_pcap": {"file": rel("%s-client-leg.pcap" % NAME),
                        "holds": "both sessions, client <-> nginx 127.0.0.1:%d, the incident first" % nginx_port},
    "sessions": {
        "seed": {
            "session_id": seed["session_id"],
            "http_request_count": seed_requests,
            "abandoned_by_client": [{"seq": r["seq"], "method": r["method"], "connection": r["connection"]}
                                    for r in abandoned],
            "last_event_id_sent": seed["summary"]["last_event_id_sent"],
            "expected_from_access_log": {
                "above_info": ["sse_fallback", "unsafe_resumption_after_fallback"],
                "not_determinable": ["cross_namespace_replay", "duplicate_response", "skipped_events"],
                "details": {
                    "sse_fallback": "the POST of tools/call 7 (client http request seq 3) got no response head "
                                    "before the client gave up after 1.5 s; a GET /mcp stream of the same "
                                    "session began at that moment",
                    "unsafe_resumption_after_fallback": "GET /mcp with Last-Event-ID %s after the fallback"
                                                        % seed["summary"]["last_event_id_sent"],
                },
                "verdict": "unsafe",
            },
            "truth": seed,
        },
        "healthy": {
            "session_id": healthy["session_id"],
            "http_request_count": healthy_requests,
            "expected_from_access_log": {
                "above_info": [], "max_severity": "info",
                "not_a_fallback": "the SDK opens its standalone GET (client http request seq %s) right after "
                                  "notifications/initialized, milliseconds after the event stream of the "
                                  "initialize POST ended; no POST was abandoned, so it is no fallback"
                                  % [r["seq"] for r in healthy["http_requests"] if r["method"] == "GET"],
            },
            "truth": healthy,
        },
        "concurrent": {
            "what": "the seed incident (through :%d/mcp) and, at the same time, %d official Python SDK client "
                    "sessions (make/concurrent-nginx/py_clients.py, one process, 0.12 s apart, through "
                    "nginx.conf's second port, /many/mcp, to make/_py/py_server.py): every client "
                    "127.0.0.1, one file per format" % (nginx_port, len(concurrent["sdk_sessions"])),
            "incident_session_id": seed["session_id"],
            "session_count": len(concurrent["sdk_sessions"]) + 1,
            "http_request_count": concurrent_requests,
            "all_sdk_sessions_open_between": concurrent["all_sdk_sessions_open_between"],
            "incident_request_times": concurrent["incident_request_times"],
            "sdk_sessions": concurrent["sdk_sessions"],
            "expected_from_access_log": {
                "sessions_with_findings_above_info": [seed["session_id"]],
                "incident_findings": ["sse_fallback", "unsafe_resumption_after_fallback"],
            },
        },
    },
}
want("seed requests abandoned by the client", [r["seq"] for r in abandoned], [3])
want("healthy statuses", [(r["seq"], r["status"]) for r in healthy["http_requests"] if r["status"] not in (200, 202)], [])
want("distinct session ids", seed["session_id"] != healthy["session_id"], True)

with open(os.path.join(out_dir, "%s.truth.json" % NAME), "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
if problems:
    print("nginx-formats/truth.py: the run did NOT give what the samples are meant to show:", *problems,
          sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("nginx-formats/truth.py: seed %s (%d requests), healthy %s (%d requests); %d logs checked" % (
    seed["session_id"], seed_requests, healthy["session_id"], healthy_requests, len(files)))
