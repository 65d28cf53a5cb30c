#!/usr/bin/env bash
# Re-creates samples/haproxy-seed.jsonl, samples/haproxy-healthy.jsonl, samples/haproxy-concurrent.jsonl
# and samples/haproxy-logs.truth.json: JSON access logs written by Debian's HAProxy 2.6
# (make/haproxy-logs/haproxy.cfg, hand-written JSON log-format on stdout) for three runs:
#
#   seed:    seed-client --> HAProxy fe_seed 127.0.0.1:18480 --> nginx 127.0.0.1:18482
#            (make/seed-incident/nginx.conf, buffering, ports rewritten) --> seed-server 127.0.0.1:18483
#   healthy: official Python SDK client --> HAProxy fe_healthy 127.0.0.1:18481
#            --> official Python SDK server 127.0.0.1:18484 (make/python-sdk-healthy/)
#   concurrent: both at once, in one log: the seed-client through fe_seed as above while
#            12 (MCPF_N_CONCURRENT) official Python SDK client sessions (make/concurrent-nginx/py_clients.py)
#            go through fe_healthy to the SDK server of make/_py/py_server.py; every client is 127.0.0.1
#
# HAProxy does not buffer an SSE response, so the incident's buffering comes from the nginx behind
# it; HAProxy logs what the client saw. One HAProxy process per run, so each log holds one run.
# The truth is merged from the clients' and servers' own records (make/_py/proxy_logs_truth.py).
#
# Needs root (apt-get). Uses TCP ports 18480-18484 only. Takes about 45 s.
source "$(dirname "$0")/_common.sh"
NAME=haproxy-logs
H="$MAKE_DIR/$NAME"
SEED_FE=18480; HEALTHY_FE=18481   # must match haproxy.cfg
NGINX_PORT=18482; SEED_PORT=18483; SDK_PORT=18484
N_CONCURRENT=${MCPF_N_CONCURRENT:-12}

need_apt haproxy:haproxy nginx:nginx
require_free_port "$SEED_FE" "$HEALTHY_FE" "$NGINX_PORT" "$SEED_PORT" "$SDK_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
HAPROXY="$(command -v haproxy || echo /usr/sbin/haproxy)"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
log "scratch: $WORK"
"$HAPROXY" -c -q -f "$H/haproxy.cfg"

# start_haproxy LOGFILE : one HAProxy in the foreground, its access log (stdout) to LOGFILE.
start_haproxy() {
  "$HAPROXY" -db -f "$H/haproxy.cfg" >"$1" 2>"$1.stderr" &
  HAPROXY_PID=$!; _MCPF_PIDS+=("$HAPROXY_PID")
  wait_listen "$SEED_FE"; wait_listen "$HEALTHY_FE"
}
# HAProxy writes a line when a request ends, and every request has ended when the client exits.
# SIGTERM, not a soft stop: a soft stop writes "Proxy ... stopped" lines into the access log.
stop_haproxy() { sleep 0.5; kill -TERM "$HAPROXY_PID" 2>/dev/null || true; wait "$HAPROXY_PID" 2>/dev/null || true; }

# --- run 1: the seed incident through HAProxy and the buffering nginx --------------------------------
start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_haproxy "$WORK/haproxy-seed.jsonl"
log "seed-client -> HAProxy :$SEED_FE -> nginx :$NGINX_PORT -> seed-server :$SEED_PORT"
run_seed_client "$SEED_FE"
stop_haproxy
stop_seed_behind_nginx

# --- run 2: a healthy official Python SDK session through HAProxy --------------------------------------
start_sdk_server "$SDK_PORT"
start_haproxy "$WORK/haproxy-healthy.jsonl"
log "Python SDK client -> HAProxy :$HEALTHY_FE -> Python SDK server :$SDK_PORT"
run_sdk_client "http://127.0.0.1:$HEALTHY_FE/mcp"
stop_haproxy
stop_pid "$SDK_SERVER"

# --- run 3: the seed incident among many concurrent SDK sessions, one log ---------------------------
WORK_ALL="$WORK"; WORK="$WORK_ALL/concurrent"; mkdir -p "$WORK"; SEED_NAME="$NAME-concurrent"
start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_many_sdk_server "$SDK_PORT"
start_haproxy "$WORK/haproxy-concurrent.jsonl"
log "$N_CONCURRENT Python SDK sessions -> HAProxy :$HEALTHY_FE, and the seed-client -> HAProxy :$SEED_FE, at once"
seed_among_many_sdk_sessions "http://127.0.0.1:$HEALTHY_FE/mcp" "$SEED_FE" "$N_CONCURRENT"
stop_haproxy
stop_pid "$MANY_SERVER"
stop_seed_behind_nginx
WORK="$WORK_ALL"

# --- results ---------------------------------------------------------------------------------------------
cp "$WORK/haproxy-seed.jsonl" "$SAMPLES_DIR/haproxy-seed.jsonl"
cp "$WORK/haproxy-healthy.jsonl" "$SAMPLES_DIR/haproxy-healthy.jsonl"
cp "$WORK/concurrent/haproxy-concurrent.jsonl" "$SAMPLES_DIR/haproxy-concurrent.jsonl"
/usr/bin/python3 "$MAKE_DIR/_py/proxy_logs_truth.py" --proxy haproxy \
    --proxy-version "$("$HAPROXY" -v | head -1 | cut -d" " -f1-3) (Debian package $(dpkg-query -W -f '${Version}' haproxy 2>/dev/null || echo '?'))" --config "samples/make/$NAME/haproxy.cfg" \
    --seed-topology "seed-client -> HAProxy fe_seed 127.0.0.1:$SEED_FE -> nginx 127.0.0.1:$NGINX_PORT (samples/make/seed-incident/nginx.conf: proxy_buffering on, upstream HTTP/1.0) -> seed-server 127.0.0.1:$SEED_PORT" \
    --healthy-topology "official Python SDK client -> HAProxy fe_healthy 127.0.0.1:$HEALTHY_FE -> official Python SDK server 127.0.0.1:$SDK_PORT" \
    --concurrent-topology "$N_CONCURRENT official Python SDK client sessions (one process) -> HAProxy fe_healthy 127.0.0.1:$HEALTHY_FE -> official Python SDK server 127.0.0.1:$SDK_PORT (samples/make/_py/py_server.py), and at the same time the seed run's path through fe_seed; one HAProxy, one log" \
    --work "$WORK" --healthy-port "$SDK_PORT" --seed-log samples/haproxy-seed.jsonl --healthy-log samples/haproxy-healthy.jsonl \
    --concurrent-log samples/haproxy-concurrent.jsonl \
    --out "$SAMPLES_DIR/$NAME.truth.json"
for f in haproxy-seed.jsonl haproxy-healthy.jsonl haproxy-concurrent.jsonl; do
  log "$f: $(wc -l <"$SAMPLES_DIR/$f") lines, $(stat -c %s "$SAMPLES_DIR/$f") bytes"
done
