#!/usr/bin/env python3
"""A big nginx JSON access log of many ordinary MCP sessions, for the ingest stress cases.

Each session: POST initialize (200, SSE, mints Mcp-Session-Id), POST notifications/initialized
(202), GET stream (200 SSE, open until the DELETE), POST tools/call (200 SSE), DELETE (200).
`--concurrent` sessions overlap; lines are written in end order, as nginx writes them.
Nothing in it is an incident: analysing it must raise no finding above info.

    accesslog.py SESSIONS [--concurrent N] > big.nginx.jsonl
"""
import argparse
import heapq
import json
import sys

BASE = 1796013365.0


def line(end, conn, nreq, port, method, status, duration, req_sid, resp_sid, ctype, accept):
    return {
        "msec": f"{end:.3f}",
        "remote_addr": "10.0.0.7",
        "remote_port": str(port),
        "connection": str(conn),
        "connection_requests": str(nreq),
        "request_method": method,
        "request_uri": "/mcp",
        "server_protocol": "HTTP/1.1",
        "status": str(status),
        "request_time": f"{duration:.3f}",
        "body_bytes_sent": "0" if status == 202 else "211",
        "http_mcp_session_id": req_sid,
        "sent_http_mcp_session_id": resp_sid,
        "http_mcp_protocol_version": "2025-06-18" if req_sid else "",
        "http_last_event_id": "",
        "http_accept": accept,
        "content_type": "application/json" if method == "POST" else "",
        "sent_http_content_type": ctype,
        "http_user_agent": "stress-client/1.0",
    }


def session(i, start):
    """The (end time, record) of the requests of session i, which starts at `start`."""
    sid = f"{i:08x}" + "a" * 24
    conn = 2 * i + 1
    port = 20000 + (2 * i) % 40000
    both = "application/json, text/event-stream"
    t = start
    out = []
    out.append((t + 0.004, line(t + 0.004, conn, 1, port, "POST", 200, 0.004, "", sid, "text/event-stream", both)))
    t += 0.010
    out.append((t + 0.002, line(t + 0.002, conn, 2, port, "POST", 202, 0.002, sid, sid, "", both)))
    t += 0.010
    get_start = t
    t += 0.010
    out.append((t + 0.050, line(t + 0.050, conn, 3, port, "POST", 200, 0.050, sid, sid, "text/event-stream", both)))
    t += 0.100
    # The GET stream ran on a connection of its own until the DELETE.
    out.append((t, line(t, conn + 1, 1, port + 1, "GET", 200, t - get_start, sid, sid, "text/event-stream", "text/event-stream")))
    t += 0.005
    out.append((t + 0.002, line(t + 0.002, conn, 4, port, "DELETE", 200, 0.002, sid, sid, "", both)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sessions", type=int)
    ap.add_argument("--concurrent", type=int, default=50)
    a = ap.parse_args()
    heap = []
    out = sys.stdout
    for i in range(a.sessions):
        start = BASE + (i // a.concurrent) * 0.2 + (i % a.concurrent) * 0.001
        for end, rec in session(i, start):
            heapq.heappush(heap, (end, i, json.dumps(rec, separators=(",", ":"))))
        # Lines end no later than their session's start plus 0.2 s: flush what is final.
        while heap and heap[0][0] < start - 0.5:
            out.write(heapq.heappop(heap)[2] + "\n")
    while heap:
        out.write(heapq.heappop(heap)[2] + "\n")


if __name__ == "__main__":
    main()
