#!/usr/bin/env bash
# Re-creates samples/buffering-nginx-client-leg.pcap (clients <-> nginx, port 18311),
# samples/buffering-nginx-server-leg.pcap (nginx <-> server, port 18312) and
# samples/buffering-nginx.truth.json:
#
#   4 official Python SDK client sessions (make/python-sdk-resume-many/clients.py, one process:
#     broadcast, slow_count with progress, notifications on the standalone GET stream)
#     --> nginx 127.0.0.1:18311 (make/buffering-nginx/nginx.conf: nginx's defaults, proxy_buffering
#         on and HTTP/1.0 upstream, with the server's X-Accel-Buffering: no ignored)
#     --> official Python SDK server 127.0.0.1:18312 (make/_py/py_server.py)
#
# nginx holds each event stream's events until its buffers fill or the stream ends: the progress
# of a call reaches the client in one burst with its result, the standalone GET's notifications
# only if the stream ends before the client leaves. The truth is merged from the server's
# event-store log (when each event was minted) and the clients' taps (when each arrived), never
# from the captures (make/buffering-nginx/truth.py).
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18311-18312 only. Takes about 25 s.
source "$(dirname "$0")/_common.sh"
NAME=buffering-nginx
H="$MAKE_DIR/$NAME"
NGINX_PORT=18311; SDK_PORT=18312   # must match nginx.conf
N=${MCPF_N:-4}

need_capture_tools
need_apt nginx:nginx
require_free_port "$NGINX_PORT" "$SDK_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
CLIENT_PCAP="$SAMPLES_DIR/$NAME-client-leg.pcap"
SERVER_PCAP="$SAMPLES_DIR/$NAME-server-leg.pcap"
log "scratch: $WORK"

start_many_sdk_server "$SDK_PORT"
run_nginx "$WORK/nginx" "$H/nginx.conf" "$NGINX_PORT"
capture_start lo "tcp port $NGINX_PORT" "$CLIENT_PCAP"; CAP_C=$CAPTURE_PID
capture_start lo "tcp port $SDK_PORT" "$SERVER_PCAP"; CAP_S=$CAPTURE_PID
sleep 0.3
log "$N Python SDK sessions -> buffering nginx :$NGINX_PORT -> Python SDK server :$SDK_PORT"
"$PY" "$MAKE_DIR/python-sdk-resume-many/clients.py" "http://127.0.0.1:$NGINX_PORT/mcp" "$N" 0.12 \
    "$WORK/py-clients.jsonl" >"$WORK/py-clients.log" 2>&1 \
  || { log "the SDK clients failed"; tail -20 "$WORK/py-clients.log" >&2; exit 1; }
capture_stop "$CAP_C"; capture_stop "$CAP_S"
stop_nginx
stop_pid "$MANY_SERVER"

/usr/bin/python3 "$H/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json" "$NGINX_PORT" "$SDK_PORT"
tshark_counts "$CLIENT_PCAP" "$NGINX_PORT"
log "$(basename "$SERVER_PCAP"): $(stat -c %s "$SERVER_PCAP")B"
