#!/usr/bin/env bash
# Re-creates the vantage-point samples of the seed incident (issue 28): ONE real run of the seed
# incident (make/seed-incident/: seed-client -> the buffering nginx of make/seed-incident/nginx.conf
# -> seed-server in buggy mode) captured by six tcpdumps at once, and from those captures:
#
#   samples/seed-incident-any.pcap          tcpdump -i any, both ports: both legs in one file
#                                           (Linux cooked capture; this tcpdump writes SLL2)
#   samples/seed-incident-lo.pcap           tcpdump -i lo, both ports: both legs in one file
#   samples/seed-incident-two-ifaces.pcapng the client leg and the upstream leg captured apart and
#                                           merged by `mergecap -I none`: one pcapng, two
#                                           interfaces (interface 0 the client leg, 1 the upstream)
#   samples/seed-incident-skew-client-leg.pcap + samples/seed-incident-skew-server-leg.pcap
#                                           the two legs as two files, the server leg's clock moved
#                                           by `editcap -t 2.5` (two hosts' clocks)
#   samples/seed-incident-twice-a.pcap + samples/seed-incident-twice-b.pcap
#                                           the client leg captured twice by two tcpdumps (a on -i lo,
#                                           b on -i any), b's clock moved by `editcap -t 2`: one
#                                           link, one vantage point, two inputs
# then two more runs through the same nginx.conf on the same ports, each captured with -i any:
#   samples/namespaced-ids-any.pcap         seed-server --namespaced (the replay chain's negative
#                                           control; nginx still holds and drops progress 1-17)
#   samples/python-sdk-healthy-nginx-any.pcap
#                                           the official Python SDK client and server
#                                           (make/python-sdk-healthy/) through the same nginx: the
#                                           server's X-Accel-Buffering: no makes nginx stream every
#                                           response, nothing is held; a healthy session
# and samples/seed-incident-vantage.truth.json, written from what the client, the server and
# nginx (its JSON access log) recorded during the runs, never from the captures (the tshark counts
# in it are labelled as an oracle read from the files).
#
#   seed-client -> nginx 127.0.0.1:18701 (proxy_buffering on, HTTP/1.0 upstream) -> server 127.0.0.1:18702
#
# Needs root (tcpdump, apt-get). Uses TCP ports 18701 and 18702 only. Loopback only.
# The healthy run uses the venv of make/python-sdk-healthy/requirements.lock.txt (mcp pinned, from
# PyPI; made once under the scratch directory, as make/python-sdk-healthy.sh does).
# Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}. Takes about 2.5 min (the runs 40 s, tshark's counts the rest).
source "$(dirname "$0")/_common.sh"
NAME=seed-incident-vantage
V="$MAKE_DIR/$NAME"
SEED="$MAKE_DIR/seed-incident"
NGINX_PORT=18701
UPSTREAM_PORT=18702
SERVER_LEG_SKEW=2.5   # editcap -t for the server leg of the skew pair
TWICE_SKEW=2          # editcap -t for the second copy of the twice-captured client leg
BOTH="tcp port $NGINX_PORT or tcp port $UPSTREAM_PORT"

need_capture_tools
need_apt nginx:nginx mergecap:wireshark-common capinfos:wireshark-common python3:python3
require_free_port "$NGINX_PORT" "$UPSTREAM_PORT"
PY=/usr/bin/python3   # seed-server and seed-client use the standard library only
SDK_PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
log "scratch: $WORK"
S="$SAMPLES_DIR"

# cap TAG IFACE FILTER : a tcpdump writing $WORK/TAG.pcap, its stderr (link type, drop counts) in
# $WORK/TAG.tcpdump; its pid appended to CAPS.
CAPS=()
cap() {
  local tag="$1" iface="$2" filter="$3" i
  tcpdump -i "$iface" -U -s 0 -Z root -w "$WORK/$tag.pcap" "$filter" 2>"$WORK/$tag.tcpdump" &
  CAPS+=("$!"); _MCPF_PIDS+=("$!")
  for i in $(seq 1 100); do grep -qs "listening on" "$WORK/$tag.tcpdump" && return 0; sleep 0.05; done
  cat "$WORK/$tag.tcpdump" >&2; exit 1
}
# stop_caps TAG... : SIGINT about a second after the traffic ended; fails on any kernel drop.
stop_caps() {
  local t p
  sleep 1
  for p in "${CAPS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${CAPS[@]}"; do wait "$p" 2>/dev/null || true; done
  CAPS=()
  for t in "$@"; do
    grep -q "^0 packets dropped by kernel" "$WORK/$t.tcpdump" \
      || { log "tcpdump $t dropped packets:"; cat "$WORK/$t.tcpdump" >&2; exit 1; }
  done
}

# start_nginx RUN [SED_EXPR] : make/seed-incident/nginx.conf with our two ports (and SED_EXPR, if
# any, applied), in the foreground with its own prefix $WORK/RUN/nginx; its access log is
# $WORK/RUN/nginx/access.jsonl.
start_nginx() {
  mkdir -p "$WORK/$1"
  seed_nginx_conf "$NGINX_PORT" "$UPSTREAM_PORT" "$WORK/$1/nginx.conf" "${2:-}"
  run_nginx "$WORK/$1/nginx" "$WORK/$1/nginx.conf" "$NGINX_PORT"
}

# seed_run RUN SESSION_SEED [--namespaced] : seed-server (wrapped: ports and times recorded)
# behind nginx, and the seed-client against nginx; records in $WORK/RUN/{server,client}.json.
seed_run() {
  local run="$1" seed="$2"; shift 2
  mkdir -p "$WORK/$run"
  "$PY" "$V/wrap.py" server --port "$UPSTREAM_PORT" "$@" --session-seed "$seed" \
      --truth-out "$WORK/$run/server.json" >"$WORK/$run/server.out" 2>"$WORK/$run/server.err" &
  SEED_SERVER=$!; _MCPF_PIDS+=("$SEED_SERVER")
  wait_listen "$UPSTREAM_PORT"
  start_nginx "$run"
}
seed_client() {
  "$PY" "$V/wrap.py" client --port "$NGINX_PORT" --truth-out "$WORK/$1/client.json" 2>"$WORK/$1/client.err" \
    || { log "seed-client failed"; tail -20 "$WORK/$1/client.err" >&2; exit 1; }
}

# --- run 1: the seed incident, six captures at once ---------------------------------------------
log "run 1: the seed incident (buggy server) on :$NGINX_PORT -> :$UPSTREAM_PORT"
seed_run incident "mcp-forensics/$NAME"
cap any any "$BOTH"
cap lo lo "$BOTH"
cap client-leg lo "tcp port $NGINX_PORT"
cap server-leg lo "tcp port $UPSTREAM_PORT"
cap twice-a lo "tcp port $NGINX_PORT"
cap twice-b any "tcp port $NGINX_PORT"
sleep 0.3
seed_client incident
stop_caps any lo client-leg server-leg twice-a twice-b
stop_nginx; stop_pid "$SEED_SERVER"

cp "$WORK/any.pcap" "$S/seed-incident-any.pcap"
cp "$WORK/lo.pcap" "$S/seed-incident-lo.pcap"
# -I none: one IDB per input file, even though both are identical (lo, pcap, same snaplen); the
# default (-I all) would merge them into one interface.
mergecap -I none -w "$S/seed-incident-two-ifaces.pcapng" "$WORK/client-leg.pcap" "$WORK/server-leg.pcap"
cp "$WORK/client-leg.pcap" "$S/seed-incident-skew-client-leg.pcap"
editcap -F pcap -t "$SERVER_LEG_SKEW" "$WORK/server-leg.pcap" "$S/seed-incident-skew-server-leg.pcap"
cp "$WORK/twice-a.pcap" "$S/seed-incident-twice-a.pcap"
editcap -F pcap -t "$TWICE_SKEW" "$WORK/twice-b.pcap" "$S/seed-incident-twice-b.pcap"

# --- run 2: the namespaced server (negative control of the replay chain) ------------------------
log "run 2: seed-server --namespaced"
seed_run namespaced "mcp-forensics/namespaced-ids-vantage" --namespaced
cap namespaced-any any "$BOTH"
sleep 0.3
seed_client namespaced
stop_caps namespaced-any
stop_nginx; stop_pid "$SEED_SERVER"
cp "$WORK/namespaced-any.pcap" "$S/namespaced-ids-any.pcap"

# --- run 3: a healthy official-SDK session through the same nginx.conf -------------------------
log "run 3: the official Python SDK client and server through the same nginx"
mkdir -p "$WORK/healthy"
(cd "$MAKE_DIR/python-sdk-healthy" && exec "$SDK_PY" server.py "$UPSTREAM_PORT" "$WORK/healthy/events.jsonl") \
    >"$WORK/healthy/server.log" 2>&1 &
SDK_SERVER=$!; _MCPF_PIDS+=("$SDK_SERVER")
wait_listen "$UPSTREAM_PORT"
# The SDK server answers 421 to a Host without its port (DNS-rebinding protection: it allows
# 127.0.0.1:*), and the seed's nginx.conf sends `Host: $host` (no port): pass the client's Host.
start_nginx healthy 's/proxy_set_header Host \$host;/proxy_set_header Host \$http_host;/'
grep -q 'proxy_set_header Host \$http_host;' "$WORK/healthy/nginx.conf" || { log "could not rewrite Host"; exit 1; }
cap healthy-any any "$BOTH"
sleep 0.3
(cd "$MAKE_DIR/python-sdk-healthy" && "$SDK_PY" client.py "http://127.0.0.1:$NGINX_PORT/mcp" "$WORK/healthy/client.jsonl") \
    >"$WORK/healthy/client.log" 2>&1 || { log "SDK client failed"; tail -20 "$WORK/healthy/client.log" >&2; exit 1; }
sleep 0.5
stop_caps healthy-any
stop_nginx; stop_pid "$SDK_SERVER"
cp "$WORK/healthy-any.pcap" "$S/python-sdk-healthy-nginx-any.pcap"

# --- truth: the seed merges and checks, then what the vantage points add --------------------------
"$PY" "$SEED/truth.py" "$NAME" buggy "$WORK/incident/client.json" "$WORK/incident/server.json" \
    "$WORK/incident/seed.truth.json"
"$PY" "$SEED/truth.py" namespaced-ids-vantage namespaced "$WORK/namespaced/client.json" \
    "$WORK/namespaced/server.json" "$WORK/namespaced/seed.truth.json"
"$PY" "$MAKE_DIR/python-sdk-healthy/truth.py" "$WORK/healthy/client.jsonl" "$WORK/healthy/events.jsonl" \
    "$WORK/healthy/sdk.truth.json" "$NGINX_PORT"
# The oracle: tshark's counts on the committed files (read from the captures, so kept apart).
"$PY" "$V/oracle.py" "$NGINX_PORT" "$UPSTREAM_PORT" "$WORK" "$S" >"$WORK/oracle.json"
"$PY" "$V/truth.py" --work "$WORK" --nginx-port "$NGINX_PORT" --upstream-port "$UPSTREAM_PORT" \
    --server-leg-skew "$SERVER_LEG_SKEW" --twice-skew "$TWICE_SKEW" --out "$S/$NAME.truth.json"

for f in seed-incident-any.pcap seed-incident-lo.pcap seed-incident-two-ifaces.pcapng \
         seed-incident-skew-client-leg.pcap seed-incident-skew-server-leg.pcap \
         seed-incident-twice-a.pcap seed-incident-twice-b.pcap namespaced-ids-any.pcap \
         python-sdk-healthy-nginx-any.pcap; do
  "$PY" - "$WORK/oracle.json" "$f" <<'EOF' >&2
import json, sys
o = json.load(open(sys.argv[1]))[sys.argv[2]]
print("%s: %d B, %d packets, %s, http.request=%d (:%s %d, :%s %d), response heads %s, tcp.streams=%d" % (
    sys.argv[2], o["bytes"], o["packets"], "/".join(o["link_types"]), o["http_request"],
    *[x for p in o["per_port"] for x in (p, o["per_port"][p]["http_request"])],
    {p: o["per_port"][p]["http_response_heads"] for p in o["per_port"]}, o["tcp_streams"]))
EOF
done
log "done: $S/$NAME.truth.json"
