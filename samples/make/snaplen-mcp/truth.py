#!/usr/bin/env python3
"""Build snaplen-mcp.truth.json: the truth of the source sample (written during its run by its
client and server) plus the snap length applied. The capture is not parsed here.

usage: truth.py SOURCE_TRUTH SOURCE_PCAP_NAME SOURCE_SHA256 SNAPLEN OUT
"""
import json
import sys

src_truth, src_name, src_sha, snaplen, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
orig = json.load(open(src_truth))
# Linux loopback as tcpdump -i lo writes it: Ethernet (14) + IPv4 (20) + TCP with timestamps (32)
HDR = 14 + 20 + 32
truth = {
    "capture": "snaplen-mcp.pcap",
    "derived_from": {"pcap": "samples/%s" % src_name, "sha256": src_sha,
                     "truth": "samples/%s" % src_truth.rsplit("/", 1)[-1]},
    "how": "editcap -F pcap -s %d (pcap kept; the file header's snaplen is %d; every packet longer than %d bytes "
           "is cut: caplen %d < original length)" % (snaplen, snaplen, snaplen, snaplen),
    "snaplen": snaplen,
    "bytes_of_tcp_payload_kept_per_packet": snaplen - HDR,
    "what_survives": "per data segment the first %d bytes of TCP payload (Ethernet 14 + IPv4 20 + TCP 32 with "
                     "timestamps = %d header bytes): request lines (POST /mcp HTTP/1.1, GET, DELETE) and status lines "
                     "(HTTP/1.1 200 OK, 202) survive, with the first header or two; the rest of every header block "
                     "(Mcp-Session-Id, Content-Type, Authorization, ...) and every JSON-RPC body and SSE event "
                     "beyond that is cut. Small segments (a chunk trailer, a short SSE frame) are whole. SYN/ACK/FIN "
                     "packets are whole." % (snaplen - HDR, HDR),
    "same_run_as_source": True,
    "source_truth": orig,
    "expected_analysis": {
        "is_mcp": True,
        "must_report": "the capture was taken with a snap length of %d: payload is truncated in most packets, so "
                       "bodies (and most headers) are unknown; advise re-capturing with `tcpdump -s 0`" % snaplen,
        "must_not_report": ["'no MCP traffic' / 'carried no MCP'", "capture_gap as packet loss (bytes are missing "
                            "because packets were cut, not lost)", "unanswered_request or any protocol finding "
                            "drawn from missing bytes"],
        "http": "the %d HTTP exchanges of the source (%s), whose bodies are unknown" % (
            orig["http_request_count"],
            ", ".join("%s%s" % (r["method"], " " + r["jsonrpc"]["method"] if r.get("jsonrpc") else "")
                      for r in orig["http_requests"])),
        "max_finding_severity": "info (a capture-quality notice, not a protocol finding)",
    },
}
with open(out, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
print("snaplen truth: %d of %s, %d HTTP requests in the source" % (snaplen, src_name, orig["http_request_count"]))
