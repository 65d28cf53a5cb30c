#!/usr/bin/env python3
"""Checks an mcp-forensics JSON report against the generator's exact counts.

    check_counts.py COUNTS_JSON REPORT_JSON [--view analyze|http|flows] [--strict]
                    [--alone ALONE_COUNTS_JSON]

COUNTS_JSON is the FILE.counts.json that examples/gen_capture.rs writes next to the capture.
REPORT_JSON is the output of `mcp-forensics <view> --format json FILE`.

A mixed capture (`gen_capture --noise-share`) has counts for the whole file (what the report must
find: the MCP traffic's sessions, messages and events, every connection and HTTP exchange of
both) and, under "mcp", the counts of its MCP traffic; --alone compares those, every one, with
the counts of the MCP-alone file (`--mcp-out`), which must be equal.

Views:
  analyze  the full analysis (docs/report-format.md): ANALYZE_FIELDS below maps each generator
           count to a path expression in the report (see the syntax there). A count whose
           expression is None or absent from the report is listed as "not reported"; it fails
           only with --strict.
  http     the `http` view (one object per exchange). Counts are derived from the exchanges,
           which are read one at a time, so multi-gigabyte reports fit in memory.
  flows    the `flows` view: connections, packets, bytes, and zero gaps.

Prints a markdown table of expected vs found and a final OK / MISMATCH line; exits 1 on a
mismatch.
"""

import argparse
import json
import sys

# ---------------------------------------------------------------------------------------------
# Where the `analyze` report keeps each count. PROVISIONAL: the analyze JSON (schema_version 1) is
# still settling; these paths match it as of commit 94c79b2 plus the working tree of 2026-11-30.
# Syntax: dotted paths into the report; a list index is a number ("inputs.0.bytes"); "*" maps
# over a list and the values are summed ("sessions.*.counts.events"); a path ending at a list
# gives its length; terms can be joined with " + " and " - ". None = not reported.
ANALYZE_FIELDS = {
    "sessions": "summary.sessions",
    "connections": "summary.connections",
    "http_requests": "summary.http_exchanges",
    "http_responses": "summary.http_responses",
    "jsonrpc_requests": "sessions.*.counts.requests",
    "jsonrpc_responses": "sessions.*.counts.responses + sessions.*.counts.errors",
    "jsonrpc_notifications": "sessions.*.counts.notifications",
    "sse_events": "sessions.*.counts.events",
    "resumed_streams": "sessions.*.resumption.resumes",
    "non_mcp_requests": "summary.http_exchanges - summary.mcp_exchanges",
    "jsonrpc_not_mcp": "summary.jsonrpc_not_mcp",
    "bytes": "inputs.*.bytes",
    "packets": "inputs.*.packets",
}

# Counts the generator writes and the order they are shown in.
COUNT_KEYS = [
    "sessions",
    "connections",
    "http_requests",
    "http_responses",
    "jsonrpc_requests",
    "jsonrpc_responses",
    "jsonrpc_notifications",
    "sse_events",
    "resumed_streams",
    "non_mcp_requests",
    "jsonrpc_not_mcp",
    "bytes",
    "packets",
]

# Counts only some captures have (the mixed one): compared when the counts file has them.
OPTIONAL_KEYS = {"jsonrpc_not_mcp"}

MCP_PATH = "/mcp"


def lookup(doc, path):
    """Value at a dotted path; "*" sums over a list; None when absent."""
    parts = path.split(".")
    cur = doc
    for i, part in enumerate(parts):
        if part == "*":
            if not isinstance(cur, list):
                return None
            rest = ".".join(parts[i + 1:])
            vals = [lookup(x, rest) if rest else x for x in cur]
            vals = [len(v) if isinstance(v, list) else v for v in vals]
            if any(not isinstance(v, (int, float)) for v in vals):
                return None
            return sum(vals)
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return None
        elif isinstance(cur, dict):
            if part not in cur:
                return None
            cur = cur[part]
        else:
            return None
    return cur


def resolve(doc, expr):
    """Evaluates "path [+|- path]..." against the report; None when a term is absent."""
    tokens = expr.split()
    total, sign = 0, 1
    for tok in tokens:
        if tok in ("+", "-"):
            sign = 1 if tok == "+" else -1
            continue
        v = lookup(doc, tok)
        if isinstance(v, list):
            v = len(v)
        if not isinstance(v, (int, float)):
            return None
        total += sign * v
    return total


def iter_array(path, key, chunk=1 << 20):
    """Yields the elements of the top-level array `key` of a JSON object file one by one, then
    returns (via StopIteration.value) the rest of the document with that array emptied."""
    dec = json.JSONDecoder()
    with open(path, "r", encoding="utf-8") as f:
        buf = ""
        needle = '"%s"' % key
        while needle not in buf:
            more = f.read(chunk)
            if not more:
                raise ValueError("no %s array in %s" % (needle, path))
            buf += more
        at = buf.index(needle)
        prefix = buf[:at]
        pos = buf.index("[", at) + 1
        eof = False
        want = chunk
        while True:
            # Skip separators, refilling as needed.
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n,":
                    pos += 1
                if pos < len(buf) or eof:
                    break
                more = f.read(chunk)
                eof = not more
                buf = buf[pos:] + more
                pos = 0
            if pos >= len(buf):
                raise ValueError("unterminated %s array" % needle)
            if buf[pos] == "]":
                rest = buf[pos + 1:] + f.read()
                return prefix + needle + ": []" + rest
            try:
                value, end = dec.raw_decode(buf, pos)
            except json.JSONDecodeError:
                if eof:
                    raise
                more = f.read(want)
                want *= 2
                eof = not more
                buf = buf[pos:] + more
                pos = 0
                continue
            want = chunk
            yield value
            pos = end
            if pos > chunk:
                buf = buf[pos:]
                pos = 0


def header(headers, name):
    name = name.lower()
    for pair in headers or []:
        if pair[0].lower() == name:
            return pair[1]
    return None


def http_counts(path):
    found = dict.fromkeys(
        [k for k in COUNT_KEYS if k not in ("bytes", "packets")], 0
    )
    conns = set()
    sessions = set()
    kinds = {}
    gen = iter_array(path, "exchanges")
    rest = None
    while True:
        try:
            e = next(gen)
        except StopIteration as stop:
            rest = stop.value
            break
        conns.add(e.get("connection"))
        method = e.get("method")
        if method:
            found["http_requests"] += 1
            target = (e.get("target") or "").split("?")[0]
            if target != MCP_PATH:
                found["non_mcp_requests"] += 1
            if method == "GET" and header(e.get("request_headers"), "last-event-id"):
                found["resumed_streams"] += 1
        if e.get("status") is not None:
            found["http_responses"] += 1
        found["sse_events"] += len(e.get("sse_events") or [])
        rpc = e.get("jsonrpc") or {}
        msgs = list(rpc.get("request") or []) + list(rpc.get("response") or [])
        for ev in rpc.get("events") or []:
            msgs.extend(ev)
        for m in msgs:
            kinds[m.get("kind")] = kinds.get(m.get("kind"), 0) + 1
        if any(m.get("method") == "initialize" for m in rpc.get("request") or []):
            sid = header(e.get("response_headers"), "mcp-session-id")
            if sid:
                sessions.add(sid)
    found["connections"] = len(conns)
    found["sessions"] = len(sessions)
    found["jsonrpc_requests"] = kinds.get("request", 0)
    found["jsonrpc_responses"] = kinds.get("response", 0) + kinds.get("error", 0)
    found["jsonrpc_notifications"] = kinds.get("notification", 0)
    doc = json.loads(rest)
    inputs = doc.get("inputs") or []
    if inputs:
        found["bytes"] = sum(i.get("bytes", 0) for i in inputs)
        found["packets"] = sum(i.get("packets", 0) for i in inputs)
    notes = ["jsonrpc malformed (non-MCP JSON bodies): %d" % kinds.get("malformed", 0)]
    if doc.get("anomalies"):
        notes.append("http anomalies: %d" % len(doc["anomalies"]))
    return found, {}, notes


def flows_counts(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = doc.get("connections") or []
    found = {"connections": len(rows)}
    inputs = doc.get("inputs") or []
    if inputs:
        found["bytes"] = sum(i.get("bytes", 0) for i in inputs)
        found["packets"] = sum(i.get("packets", 0) for i in inputs)
    extra = {
        "gaps": (0, sum(r.get("gaps", 0) for r in rows)),
        "retransmissions": (0, sum(r.get("retransmissions", 0) for r in rows)),
        "out_of_order": (0, sum(r.get("out_of_order", 0) for r in rows)),
    }
    ended = {}
    for r in rows:
        ended[r.get("ended")] = ended.get(r.get("ended"), 0) + 1
    notes = ["ended: " + ", ".join("%s %d" % (k, v) for k, v in sorted(ended.items()))]
    return found, extra, notes


def analyze_counts(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    found = {}
    for key in COUNT_KEYS:
        expr = ANALYZE_FIELDS.get(key)
        v = resolve(doc, expr) if expr else None
        if v is not None:
            found[key] = v
    notes = []
    findings = lookup(doc, "summary.findings")
    if findings is not None:
        notes.append("findings on this clean synthetic capture (expected none): %s" % json.dumps(findings))
    return found, {}, notes


def check_set_aside(counts_path, report_path, alone_path):
    """The noise's part of a classified report: what the classification set aside, by reason,
    and the HTTP exchanges it still examined (HTTP/2 whole, the first request of each connection
    set aside), each the mixed report's count less the MCP-alone report's."""
    with open(counts_path, encoding="utf-8") as f:
        noise = json.load(f)["noise"]
    summaries = []
    for path in (report_path, alone_path):
        with open(path, encoding="utf-8") as f:
            summaries.append(json.load(f)["summary"])
    mixed, alone = summaries
    aside = noise["set_aside"]
    rows = []
    for key in ("connections", "tls_without_keys", "request_not_mcp", "jsonrpc_not_mcp",
                "json_not_jsonrpc", "bytes_not_examined"):
        got = mixed["http"]["set_aside"][key] - alone["http"]["set_aside"][key]
        rows.append(("set_aside." + key, aside[key], got))
    for key, exp in (("http_exchanges", noise["h2_streams"] + aside["http_requests"]),
                     ("http_responses", noise["h2_streams"]),
                     ("jsonrpc_not_mcp", aside["jsonrpc_not_mcp"])):
        rows.append((key, exp, mixed[key] - alone[key]))
    print("| noise count (mixed less MCP alone) | generator | report | |")
    print("|---|---:|---:|---|")
    bad = 0
    for key, exp, got in rows:
        bad += exp != got
        print("| %s | %s | %s | %s |" % (key, exp, got, "ok" if exp == got else "MISMATCH"))
    print("\n%s: %d match, %d differ" % ("MISMATCH" if bad else "OK", len(rows) - bad, bad))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("counts")
    ap.add_argument("report")
    ap.add_argument("--view", choices=["analyze", "http", "flows"], default="analyze")
    ap.add_argument("--strict", action="store_true", help="fail on counts the report lacks")
    ap.add_argument("--alone", help="counts of the MCP-alone file of a mixed capture")
    ap.add_argument("--set-aside", metavar="ALONE_REPORT",
                    help="check only what the early classification set aside of a mixed capture: "
                    "REPORT (the mixed file's, classified) less ALONE_REPORT (the MCP-alone file's) "
                    "against the generator's noise.set_aside")
    args = ap.parse_args()
    if args.set_aside:
        return check_set_aside(args.counts, args.report, args.set_aside)

    with open(args.counts, encoding="utf-8") as f:
        doc = json.load(f)
    expected = doc["counts"]
    found, extra, notes = {
        "analyze": analyze_counts,
        "http": http_counts,
        "flows": flows_counts,
    }[args.view](args.report)

    rows = []
    bad = missing = ok = 0
    for key in COUNT_KEYS:
        exp = expected.get(key)
        if exp is None and key in OPTIONAL_KEYS:
            continue
        if key not in found:
            if args.view == "analyze":
                rows.append((key, exp, "not reported", "n/a"))
                missing += 1
            continue
        got = found[key]
        good = got == exp
        ok += good
        bad += not good
        rows.append((key, exp, got, "ok" if good else "MISMATCH"))
    if args.alone:
        with open(args.alone, encoding="utf-8") as f:
            alone = json.load(f)["counts"]
        mcp = doc.get("mcp")
        good = mcp == alone
        ok += good
        bad += not good
        differ = [k for k in sorted(set(alone) | set(mcp or {})) if (mcp or {}).get(k) != alone.get(k)]
        rows.append(("MCP part vs the MCP-alone file's counts (all %d, detail included)" % len(alone),
                     "equal", "equal" if good else "differ: " + ", ".join(differ), "ok" if good else "MISMATCH"))
    for key, (exp, got) in extra.items():
        good = got == exp
        ok += good
        bad += not good
        rows.append((key, exp, got, "ok" if good else "MISMATCH"))

    print("| count (%s view) | generator | report | |" % args.view)
    print("|---|---:|---:|---|")
    for r in rows:
        print("| %s | %s | %s | %s |" % r)
    for n in notes:
        print("\nnote: " + n)
    failed = bad or (args.strict and missing)
    status = "MISMATCH" if failed else "OK"
    print("\n%s: %d match, %d differ, %d not reported" % (status, ok, bad, missing))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
