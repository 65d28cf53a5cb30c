#!/usr/bin/env python3
"""Checks that two `analyze --format json` reports find the same MCP sessions and findings.

    compare_reports.py MIXED_REPORT ALONE_REPORT

For the mostly-not-MCP benchmark input: MIXED_REPORT analyses the mixed capture, ALONE_REPORT
the same MCP traffic captured alone (`gen_capture --noise-share … --mcp-out`). The MCP packets
and their times are the same in both files, but the noise shifts every frame number and TCP
connection number, so before comparing, each report is normalised:

- frame numbers are dropped (`frames`, `frame_refs`, `frame`, `opened_frame`, `ended_frame`,
  `first_frame`, `display_filters`, and `frame N` / `frames N, M` inside sentences);
- TCP connection numbers (`tcp48#2`) are renumbered by first appearance in the report, so that
  which streams share a connection is still compared, not the number the capture gave it;
- input paths (`sources`) are dropped.

Everything else is compared as it is: every session record with its streams (IDs, event IDs,
times, statuses, counts, verdicts), every finding (kind, severity, session, streams, summary,
evidence, causes), the timeline and the call profile, and the summary's session and finding
counts and MCP exchange counts. Prints a markdown table and the first differences; exits 1 when
anything differs.
"""

import json
import re
import sys

FRAME_KEYS = {"frames", "frame_refs", "frame", "opened_frame", "ended_frame", "first_frame",
              "display_filters"}
DROP_KEYS = FRAME_KEYS | {"sources"}
SUMMARY_KEYS = ["sessions", "findings", "mcp_exchanges", "mcp_unattributed", "mcp_requests_cut"]
TCP = re.compile(r"\btcp(\d+)")
FRAME_TEXT = re.compile(r"\b(frames?) \d+(?:(?:, | and |–|-)\d+)*")


class Normaliser:
    def __init__(self):
        self.conns = {}

    def conn(self, m):
        n = self.conns.setdefault(m.group(1), len(self.conns) + 1)
        return "conn%d" % n

    def text(self, s):
        return FRAME_TEXT.sub(r"\1 N", TCP.sub(self.conn, s))

    def value(self, v):
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items() if k not in DROP_KEYS}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, str):
            return self.text(v)
        return v


def normalised(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    n = Normaliser()
    # Sessions first: their streams name the connections in the order the report lists them.
    out = {k: n.value(doc.get(k) or []) for k in ("sessions", "findings", "timeline", "profile")}
    summary = doc.get("summary") or {}
    out["summary"] = {k: summary.get(k) for k in SUMMARY_KEYS}
    return out


def differences(a, b, path="", out=None, limit=10):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if type(a) is not type(b):
        out.append((path, a, b))
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            differences(a.get(k), b.get(k), "%s.%s" % (path, k), out, limit)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append((path + " (length)", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, "%s[%d]" % (path, i), out, limit)
    elif a != b:
        out.append((path, a, b))
    return out


def by_kind(findings):
    kinds = {}
    for f in findings:
        kinds[f.get("kind")] = kinds.get(f.get("kind"), 0) + 1
    return kinds


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mixed, alone = normalised(sys.argv[1]), normalised(sys.argv[2])
    rows = [
        ("sessions", len(mixed["sessions"]), len(alone["sessions"])),
        ("streams", sum(len(s.get("streams") or []) for s in mixed["sessions"]),
         sum(len(s.get("streams") or []) for s in alone["sessions"])),
        ("SSE events", sum((s.get("counts") or {}).get("events", 0) for s in mixed["sessions"]),
         sum((s.get("counts") or {}).get("events", 0) for s in alone["sessions"])),
        ("MCP exchanges", mixed["summary"]["mcp_exchanges"], alone["summary"]["mcp_exchanges"]),
        ("findings", len(mixed["findings"]), len(alone["findings"])),
    ]
    km, ka = by_kind(mixed["findings"]), by_kind(alone["findings"])
    rows += [("findings: " + k, km.get(k, 0), ka.get(k, 0)) for k in sorted(set(km) | set(ka))]
    print("| compared (frame and connection numbers aside) | mixed capture | MCP alone | |")
    print("|---|---:|---:|---|")
    for name, x, y in rows:
        print("| %s | %s | %s | %s |" % (name, x, y, "ok" if x == y else "DIFFERENT"))
    bad = False
    for part in ("sessions", "findings", "timeline", "profile", "summary"):
        diff = differences(mixed[part], alone[part], part)
        status = "identical" if not diff else "DIFFERENT"
        bad |= bool(diff)
        print("\n%s: %s" % (part, status))
        for p, x, y in diff:
            print("  %s: mixed %s, alone %s" % (p, json.dumps(x)[:200], json.dumps(y)[:200]))
    print("\n%s: sessions, findings, timeline and profile of the mixed capture %s those of the "
          "MCP traffic alone" % ("MISMATCH" if bad else "OK", "differ from" if bad else "equal"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
