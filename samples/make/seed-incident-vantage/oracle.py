#!/usr/bin/env python3
"""tshark's counts on the vantage-point samples: an oracle read from the committed files (not
ground truth; the truth is what the client, the server and nginx recorded). Printed as JSON, one
object per file; truth.py keeps it under "tshark_oracle".

Per file: size, packets, link types (capinfos), HTTP requests (tshark decodes HTTP on the two
ports only when told: -d tcp.port==N,http), per port (the hop: nginx's listening port, the
upstream port) requests, response heads (http.desegment_body:FALSE counts a head whose body never
completed), TCP streams and packets; per pcapng interface the packets and ports it holds; and the
frames of the POST of tools/call 7 on each hop and of the server's response bytes on its upstream
connection (the events nginx held), found by the TCP ports the client and the server recorded.

usage: oracle.py NGINX_PORT UPSTREAM_PORT WORK SAMPLES_DIR > oracle.json
"""
import json
import os
import re
import subprocess
import sys

NGINX, UPSTREAM = int(sys.argv[1]), int(sys.argv[2])
WORK, SAMPLES = sys.argv[3], sys.argv[4]
DECODE = ["-d", "tcp.port==%d,http" % NGINX, "-d", "tcp.port==%d,http" % UPSTREAM]

# file -> the run whose client/server records name its ports (None: the SDK run, no POST 7)
FILES = {
    "seed-incident-any.pcap": "incident",
    "seed-incident-lo.pcap": "incident",
    "seed-incident-two-ifaces.pcapng": "incident",
    "seed-incident-skew-client-leg.pcap": "incident",
    "seed-incident-skew-server-leg.pcap": "incident",
    "seed-incident-twice-a.pcap": "incident",
    "seed-incident-twice-b.pcap": "incident",
    "namespaced-ids-any.pcap": "namespaced",
    "python-sdk-healthy-nginx-any.pcap": None,
}


def tshark(path, *args):
    out = subprocess.run(["tshark", "-r", path, *DECODE, *args], check=True,
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def frames(path, flt):
    return [int(x) for x in tshark(path, "-Y", flt, "-T", "fields", "-e", "frame.number")]


def count_messages(path, flt, field, *opts):
    # one line per frame; a frame with two HTTP messages lists two values, comma-separated
    return sum(len(line.split(",")) for line in tshark(path, *opts, "-Y", flt, "-T", "fields", "-e", field))


def link_types(path):
    out = subprocess.run(["capinfos", "-E", "-I", path], check=True, capture_output=True, text=True).stdout
    per_iface = re.findall(r"Encapsulation = (.+)", out)
    return per_iface or re.findall(r"File encapsulation:\s+(.+)", out)


def post7_ports(run):
    if run is None:
        return None
    c = json.load(open(os.path.join(WORK, run, "client.json")))
    s = json.load(open(os.path.join(WORK, run, "server.json")))
    conn_a = next(x for x in c["connections"] if x["label"] == "A")
    up = next(r for r in s["http_requests"] if (r.get("jsonrpc") or {}).get("id") == 7)
    return conn_a["local_port"], up["peer_port"]


def main():
    result = {}
    for name, run in FILES.items():
        path = os.path.join(SAMPLES, name)
        o = {
            "bytes": os.path.getsize(path),
            "packets": len(tshark(path, "-T", "fields", "-e", "frame.number")),
            "link_types": link_types(path),
            "http_request": count_messages(path, "http.request", "http.request.method"),
            "command": "tshark -r samples/%s -d tcp.port==%d,http -d tcp.port==%d,http -Y http.request | wc -l"
                       % (name, NGINX, UPSTREAM),
            "tcp_streams": len(set(tshark(path, "-T", "fields", "-e", "tcp.stream"))),
            "first_packet_epoch": float(tshark(path, "-c", "1", "-T", "fields", "-e", "frame.time_epoch")[0]),
            "per_port": {},
        }
        for port in (NGINX, UPSTREAM):
            o["per_port"][str(port)] = {
                "http_request": count_messages(path, "http.request && tcp.dstport==%d" % port,
                                               "http.request.method"),
                "http_response": count_messages(path, "http.response && tcp.srcport==%d" % port,
                                                "http.response.code"),
                "http_response_heads": count_messages(path, "http.response && tcp.srcport==%d" % port,
                                                      "http.response.code", "-o", "http.desegment_body:FALSE"),
                "tcp_streams": len(set(tshark(path, "-Y", "tcp.port==%d" % port, "-T", "fields", "-e", "tcp.stream"))),
                "packets": len(frames(path, "tcp.port==%d" % port)),
            }
        ifaces = tshark(path, "-T", "fields", "-e", "frame.interface_id", "-e", "tcp.srcport", "-e", "tcp.dstport")
        per_iface = {}
        for line in ifaces:
            i, sp, dp = line.split("\t")
            d = per_iface.setdefault(i, {"packets": 0, "ports": set()})
            d["packets"] += 1
            d["ports"].update({int(sp), int(dp)} & {NGINX, UPSTREAM})
        o["per_interface"] = {i: {"packets": d["packets"], "server_ports": sorted(d["ports"])}
                              for i, d in sorted(per_iface.items())}
        ports = post7_ports(run)
        if ports:
            a, up = ports
            body = 'tcp.payload contains "\\"id\\":7,\\"method\\":\\"tools/call\\""'
            o["frames"] = {
                "what": "frame numbers in this file (1-based), found by the TCP ports the client and "
                        "server recorded: client conn A local port %d, nginx's upstream port %d for "
                        "the POST of tools/call 7" % (a, up),
                "post7_request_client_to_nginx": frames(path, "tcp.srcport==%d && tcp.dstport==%d && %s"
                                                        % (a, NGINX, body)),
                "post7_request_nginx_to_server": frames(path, "tcp.srcport==%d && tcp.dstport==%d && %s"
                                                        % (up, UPSTREAM, body)),
                "post7_response_bytes_server_to_nginx": frames(
                    path, "tcp.srcport==%d && tcp.dstport==%d && tcp.len>0" % (UPSTREAM, up)),
                "post7_response_bytes_nginx_to_client": frames(
                    path, "tcp.srcport==%d && tcp.dstport==%d && tcp.len>0 && frame.number>%d"
                    % (NGINX, a, max(frames(path, "tcp.srcport==%d && %s" % (a, body)) or [0]))),
                "client_fin_on_conn_a": frames(path, "tcp.srcport==%d && tcp.flags.fin==1" % a),
                "nginx_fin_or_rst_to_server_on_post7": frames(
                    path, "tcp.srcport==%d && tcp.dstport==%d && (tcp.flags.fin==1 || tcp.flags.reset==1)"
                    % (up, UPSTREAM)),
            }
        result[name] = o
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
