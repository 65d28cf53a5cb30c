#!/usr/bin/env python3
"""Merge the client's and the server's own logs into http-basic.truth.json.

c2s bytes come from the client's writes, s2c bytes from the server's writes; the
bytes each side read are checked against what the other side wrote.
"""
import json
import sys

client_log, server_log, out_path = sys.argv[1:4]
client = json.load(open(client_log))
server = json.load(open(server_log))
conns = []
for c in client:
    s = server[str(c["client_port"])]
    assert c["c2s_b64"] == s["c2s_read_b64"], "server read != client wrote"
    assert s["s2c_b64"] == c["s2c_read_b64"], "client read != server wrote"
    assert [(r["method"], r["target"]) for r in c["requests"]] == [(r["method"], r["target"]) for r in s["requests"]]
    assert c["statuses"] == [r["status"] for r in s["responses"]]
    import base64
    conns.append({
        "client_port": c["client_port"],
        "server_port": None,
        "c2s_len": len(base64.b64decode(c["c2s_b64"])),
        "s2c_len": len(base64.b64decode(s["s2c_b64"])),
        "c2s_b64": c["c2s_b64"],
        "s2c_b64": s["s2c_b64"],
        "first_fin_by": c["closed_by"],
        "requests": [{"method": r["method"], "target": r["target"], "pipelined": r["pipelined"],
                      "body_len": r["body_len"]} for r in c["requests"]],
        "responses": s["responses"],
    })
port = int(sys.argv[4])
for c in conns:
    c["server_port"] = port
truth = {
    "capture": "http-basic.pcap",
    "source": "client.py and server.py logs (bytes each side wrote), not the pcap",
    "server": "127.0.0.1:%d" % port,
    "connections": conns,
    "totals": {"connections": len(conns),
               "requests": sum(len(c["requests"]) for c in conns),
               "responses": sum(len(c["responses"]) for c in conns)},
    "notes": [
        "connection 1: keep-alive; POST with Content-Length body; chunked response (4 data chunks, no trailer); "
        "GET /pipe/a and GET /pipe/b sent in ONE write (pipelined) and answered in order",
        "connection 2: gzip Content-Encoding response with Content-Length; then a Connection: close response "
        "without Content-Length whose body ends when the server closes (server sends FIN first)",
        "connection 3: a 404; a HEAD whose 200 response carries Content-Length but no body",
    ],
}
with open(out_path, "w") as f:
    json.dump(truth, f, indent=1)
    f.write("\n")
