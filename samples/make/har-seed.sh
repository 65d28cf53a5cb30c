#!/usr/bin/env bash
# Re-creates samples/seed-incident.mitmproxy.har, samples/seed-incident.mitmproxy.sanitized.har,
# samples/seed-incident-concurrent.mitmproxy.har and samples/har-seed.truth.json: the seed incident
# seen by mitmproxy, in the HAR it writes; then again among many SDK sessions:
#
#   seed-client --> mitmdump 127.0.0.1:18601 (reverse proxy, --set hardump, make/mitmproxy-har/record_sse.py)
#     --> nginx 127.0.0.1:18602 (make/seed-incident/nginx.conf, buffering, ports rewritten)
#     --> seed-server 127.0.0.1:18603 (buggy mode)
#   and, in a second run, at the same time through the same mitmdump (a second reverse mode):
#   12 (MCPF_N_CONCURRENT) official Python SDK client sessions (make/concurrent-nginx/py_clients.py)
#     --> mitmdump 127.0.0.1:18604 --> make/_py/py_server.py 127.0.0.1:18605; every client 127.0.0.1
#
# mitmdump sits where the client's browser or SDK would be recording: it sees what the client saw.
# The buffering comes from the nginx behind it. The sanitised copy is what a browser's default
# export would keep (make/mitmproxy-har/sanitize.py, no body dropped). The truth is merged from the
# client's and server's own records (make/har-seed/truth.py), never from the HAR.
#
# Needs root (apt-get nginx). Uses TCP ports 18601-18605 only. Takes about 40 s.
source "$(dirname "$0")/_common.sh"
NAME=har-seed
HAR_NAME=seed-incident.mitmproxy
H="$MAKE_DIR/mitmproxy-har"
PROXY_PORT=18601; NGINX_PORT=18602; SEED_PORT=18603
MANY_PROXY_PORT=18604; MANY_PORT=18605
N_CONCURRENT=${MCPF_N_CONCURRENT:-12}

need_apt nginx:nginx
require_free_port "$PROXY_PORT" "$NGINX_PORT" "$SEED_PORT" "$MANY_PROXY_PORT" "$MANY_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
MITM_PY="$(py_venv mitmproxy "$H/requirements.mitmproxy.txt")"
MITMDUMP="$(dirname "$MITM_PY")/mitmdump"
MITM_VERSION="$("$MITM_PY" -c 'from mitmproxy import version; print(version.VERSION)')"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
log "scratch: $WORK"

# start_mitmdump HAR MODE...: mitmdump with those reverse modes, writing HAR on a clean shutdown.
# A fresh confdir: mitmproxy writes its CA there on first start (unused: plain HTTP only).
start_mitmdump() {
  local har="$1"; shift
  local modes=(); for m in "$@"; do modes+=(--mode "$m"); done
  "$MITMDUMP" "${modes[@]}" --listen-host 127.0.0.1 --set confdir="$WORK/mitmproxy" \
    --set hardump="$har" -s "$H/record_sse.py" -q >>"$WORK/mitmdump.log" 2>&1 &
  PROXY_PID=$!; _MCPF_PIDS+=("$PROXY_PID")
}
# SIGINT: mitmdump writes the HAR on a clean shutdown.
stop_mitmdump() {
  sleep 0.5; kill -INT "$PROXY_PID"; wait "$PROXY_PID" || true
  [ -s "$1" ] || { log "mitmdump wrote no HAR; see $WORK/mitmdump.log"; exit 1; }
}

start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_mitmdump "$WORK/raw.har" "reverse:http://127.0.0.1:$NGINX_PORT@$PROXY_PORT"
wait_listen "$PROXY_PORT"
log "seed-client -> mitmdump :$PROXY_PORT -> nginx :$NGINX_PORT -> seed-server :$SEED_PORT"
run_seed_client "$PROXY_PORT"
stop_mitmdump "$WORK/raw.har"
stop_seed_behind_nginx

# --- again, among many concurrent SDK sessions, one mitmdump, one HAR --------------------------------
WORK_ALL="$WORK"; WORK="$WORK_ALL/concurrent"; mkdir -p "$WORK"; SEED_NAME="$NAME-concurrent"
start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_many_sdk_server "$MANY_PORT"
start_mitmdump "$WORK/raw.har" "reverse:http://127.0.0.1:$NGINX_PORT@$PROXY_PORT" \
    "reverse:http://127.0.0.1:$MANY_PORT@$MANY_PROXY_PORT"
wait_listen "$PROXY_PORT"; wait_listen "$MANY_PROXY_PORT"
log "$N_CONCURRENT Python SDK sessions -> mitmdump :$MANY_PROXY_PORT, and the seed-client -> mitmdump :$PROXY_PORT, at once"
seed_among_many_sdk_sessions "http://127.0.0.1:$MANY_PROXY_PORT/mcp" "$PROXY_PORT" "$N_CONCURRENT"
stop_mitmdump "$WORK/raw.har"
stop_pid "$MANY_SERVER"
stop_seed_behind_nginx
WORK="$WORK_ALL"

cp "$WORK/raw.har" "$SAMPLES_DIR/$HAR_NAME.har"
cp "$WORK/concurrent/raw.har" "$SAMPLES_DIR/seed-incident-concurrent.mitmproxy.har"
/usr/bin/python3 "$H/sanitize.py" "$SAMPLES_DIR/$HAR_NAME.har" "$SAMPLES_DIR/$HAR_NAME.sanitized.har"
/usr/bin/python3 "$MAKE_DIR/$NAME/truth.py" --work "$WORK" --mitmproxy-version "$MITM_VERSION" \
    --topology "seed-client -> mitmdump $MITM_VERSION 127.0.0.1:$PROXY_PORT (reverse proxy, hardump, record_sse.py) -> nginx 127.0.0.1:$NGINX_PORT (samples/make/seed-incident/nginx.conf: proxy_buffering on, upstream HTTP/1.0) -> seed-server 127.0.0.1:$SEED_PORT" \
    --har "samples/$HAR_NAME.har" --sanitized-har "samples/$HAR_NAME.sanitized.har" \
    --concurrent-har "samples/seed-incident-concurrent.mitmproxy.har" \
    --concurrent-topology "$N_CONCURRENT official Python SDK client sessions (one process) -> mitmdump $MITM_VERSION 127.0.0.1:$MANY_PROXY_PORT (a second reverse mode of the same mitmdump) -> official Python SDK server 127.0.0.1:$MANY_PORT (samples/make/_py/py_server.py), and at the same time the seed run's path through 127.0.0.1:$PROXY_PORT; one mitmdump, one HAR" \
    --out "$SAMPLES_DIR/$NAME.truth.json"
for f in "$HAR_NAME.har" "$HAR_NAME.sanitized.har" seed-incident-concurrent.mitmproxy.har; do
  log "$f: $(stat -c %s "$SAMPLES_DIR/$f") bytes"
done
