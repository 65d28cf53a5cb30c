#!/usr/bin/env bash
# Re-creates samples/balancer-no-stickiness-client-leg.pcap (clients <-> nginx, port 18301),
# samples/balancer-no-stickiness-server-leg.pcap (nginx <-> the two replicas, ports 18302, 18303),
# samples/balancer-no-stickiness.nginx.jsonl and samples/balancer-no-stickiness.truth.json:
#
#   6 official Python SDK client sessions (make/balancer-no-stickiness/clients.py, one process)
#     --> nginx 127.0.0.1:18301 (round robin over two replicas, no stickiness)
#     --> official Python SDK server replicas 127.0.0.1:18302 and 127.0.0.1:18303
#         (make/_py/py_server.py each, in-memory sessions: each knows only the sessions it minted)
#
# A request that lands on the replica that did not mint its session is answered 404 "Session not
# found" while the session goes on at the other one. The truth is merged from the replicas' request
# logs and the clients' taps (make/balancer-no-stickiness/truth.py), never from the captures.
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18301-18303 only. Takes about 15 s.
source "$(dirname "$0")/_common.sh"
NAME=balancer-no-stickiness
H="$MAKE_DIR/$NAME"
NGINX_PORT=18301; A_PORT=18302; B_PORT=18303   # must match nginx.conf
N=${MCPF_N:-6}

need_capture_tools
need_apt nginx:nginx
require_free_port "$NGINX_PORT" "$A_PORT" "$B_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
CLIENT_PCAP="$SAMPLES_DIR/$NAME-client-leg.pcap"
SERVER_PCAP="$SAMPLES_DIR/$NAME-server-leg.pcap"
log "scratch: $WORK"

# replica VAR PORT: one replica, its request log in $WORK/replica-PORT.jsonl.
replica() {
  bg "$1" env -C "$MAKE_DIR/_py" "$PY" py_server.py "$2" "$WORK/replica-$2.jsonl" >"$WORK/replica-$2.log" 2>&1
  wait_listen "$2"
}
replica REPLICA_A "$A_PORT"
replica REPLICA_B "$B_PORT"
run_nginx "$WORK/nginx" "$H/nginx.conf" "$NGINX_PORT"
capture_start lo "tcp port $NGINX_PORT" "$CLIENT_PCAP"; CAP_C=$CAPTURE_PID
capture_start lo "tcp port $A_PORT or tcp port $B_PORT" "$SERVER_PCAP"; CAP_S=$CAPTURE_PID
sleep 0.3
log "$N Python SDK sessions -> nginx :$NGINX_PORT -> replicas :$A_PORT, :$B_PORT (round robin)"
"$PY" "$H/clients.py" "http://127.0.0.1:$NGINX_PORT/mcp" "$N" 0.15 "$WORK/clients.jsonl" >"$WORK/clients.log" 2>&1
capture_stop "$CAP_C"; capture_stop "$CAP_S"
stop_nginx
stop_pid "$REPLICA_A"; stop_pid "$REPLICA_B"

cp "$WORK/nginx/access.jsonl" "$SAMPLES_DIR/$NAME.nginx.jsonl"
/usr/bin/python3 "$H/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json" "$NGINX_PORT" "$A_PORT" "$B_PORT"
tshark_counts "$CLIENT_PCAP" "$NGINX_PORT"
log "$(basename "$SERVER_PCAP"): $(stat -c %s "$SERVER_PCAP")B"
