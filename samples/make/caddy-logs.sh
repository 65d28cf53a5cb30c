#!/usr/bin/env bash
# Re-creates samples/caddy-seed.jsonl, samples/caddy-healthy.jsonl, samples/caddy-concurrent.jsonl and
# samples/caddy-logs.truth.json: JSON access logs written by Debian's Caddy 2.6
# (make/caddy-logs/Caddyfile, `log { format json }`, its default access log) for three runs:
#
#   seed:    seed-client --> Caddy 127.0.0.1:18490 (reverse_proxy, defaults) --> nginx 127.0.0.1:18492
#            (make/seed-incident/nginx.conf, buffering, ports rewritten) --> seed-server 127.0.0.1:18493
#   healthy: official Python SDK client --> Caddy 127.0.0.1:18491 (reverse_proxy, flush_interval -1)
#            --> official Python SDK server 127.0.0.1:18494 (make/python-sdk-healthy/)
#   concurrent: both at once, both sites logging to one file: the seed-client through :18490 as above
#            while 12 (MCPF_N_CONCURRENT) official Python SDK client sessions
#            (make/concurrent-nginx/py_clients.py) go through :18491 to make/_py/py_server.py; every
#            client is 127.0.0.1
#
# Caddy does not buffer an event stream, so the incident's buffering comes from the nginx behind it;
# Caddy logs what the client saw. One Caddy process per run, so each log holds one run.
# The truth is merged from the clients' and servers' own records (make/_py/proxy_logs_truth.py).
#
# Needs root (apt-get). Uses TCP ports 18490-18494 only. Takes about 45 s.
source "$(dirname "$0")/_common.sh"
NAME=caddy-logs
H="$MAKE_DIR/$NAME"
SEED_FE=18490; HEALTHY_FE=18491   # must match Caddyfile
NGINX_PORT=18492; SEED_PORT=18493; SDK_PORT=18494
N_CONCURRENT=${MCPF_N_CONCURRENT:-12}

need_apt caddy:caddy nginx:nginx
require_free_port "$SEED_FE" "$HEALTHY_FE" "$NGINX_PORT" "$SEED_PORT" "$SDK_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
CADDY="$(command -v caddy || echo /usr/bin/caddy)"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
log "scratch: $WORK"
mkdir -p "$WORK/caddy-config" "$WORK/caddy-data" "$WORK/caddy-validate"
# Caddy keeps its state under XDG_CONFIG_HOME/XDG_DATA_HOME: the scratch folder, not $HOME.
# `env` execs Caddy, so $! below is Caddy's own pid.
CADDY_ENV=(env XDG_CONFIG_HOME="$WORK/caddy-config" XDG_DATA_HOME="$WORK/caddy-data")
"${CADDY_ENV[@]}" MCPF_LOG_DIR="$WORK/caddy-validate" "$CADDY" validate --adapter caddyfile --config "$H/Caddyfile" \
    >"$WORK/caddy-validate.log" 2>&1 || { cat "$WORK/caddy-validate.log" >&2; exit 1; }

# start_caddy RUN [LOG]: one Caddy in the foreground writing its access logs to $WORK/RUN/
# (seed.jsonl, healthy.jsonl: one file per site; both to LOG.jsonl when LOG is given).
start_caddy() {
  mkdir -p "$WORK/$1"
  "${CADDY_ENV[@]}" MCPF_LOG_DIR="$WORK/$1" ${2:+MCPF_SEED_LOG="$2" MCPF_HEALTHY_LOG="$2"} "$CADDY" run --adapter caddyfile --config "$H/Caddyfile" \
      >"$WORK/$1/caddy.log" 2>&1 &
  CADDY_PID=$!; _MCPF_PIDS+=("$CADDY_PID")
  wait_listen "$SEED_FE"; wait_listen "$HEALTHY_FE"
}
# Caddy writes a line when a request ends, and every request has ended when the client exits.
stop_caddy() { sleep 0.5; kill -TERM "$CADDY_PID" 2>/dev/null || true; wait "$CADDY_PID" 2>/dev/null || true; }

# --- run 1: the seed incident through Caddy and the buffering nginx --------------------------------
start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_caddy run-seed
log "seed-client -> Caddy :$SEED_FE -> nginx :$NGINX_PORT -> seed-server :$SEED_PORT"
run_seed_client "$SEED_FE"
stop_caddy
stop_seed_behind_nginx

# --- run 2: a healthy official Python SDK session through Caddy --------------------------------------
start_sdk_server "$SDK_PORT"
start_caddy run-healthy
log "Python SDK client -> Caddy :$HEALTHY_FE -> Python SDK server :$SDK_PORT"
run_sdk_client "http://127.0.0.1:$HEALTHY_FE/mcp"
stop_caddy
stop_pid "$SDK_SERVER"

# --- run 3: the seed incident among many concurrent SDK sessions, one log -----------------------------
WORK_ALL="$WORK"; WORK="$WORK_ALL/concurrent"; mkdir -p "$WORK"; SEED_NAME="$NAME-concurrent"
start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_many_sdk_server "$SDK_PORT"
start_caddy run-concurrent concurrent
log "$N_CONCURRENT Python SDK sessions -> Caddy :$HEALTHY_FE, and the seed-client -> Caddy :$SEED_FE, at once"
seed_among_many_sdk_sessions "http://127.0.0.1:$HEALTHY_FE/mcp" "$SEED_FE" "$N_CONCURRENT"
stop_caddy
stop_pid "$MANY_SERVER"
stop_seed_behind_nginx
WORK="$WORK_ALL"

# --- results ---------------------------------------------------------------------------------------------
# Each run's other site saw no request: its file must be empty.
for f in "$WORK/run-seed/healthy.jsonl" "$WORK/run-healthy/seed.jsonl"; do
  [ ! -s "$f" ] || { log "$f is not empty"; exit 1; }
done
cp "$WORK/run-seed/seed.jsonl" "$SAMPLES_DIR/caddy-seed.jsonl"
cp "$WORK/run-healthy/healthy.jsonl" "$SAMPLES_DIR/caddy-healthy.jsonl"
cp "$WORK/concurrent/run-concurrent/concurrent.jsonl" "$SAMPLES_DIR/caddy-concurrent.jsonl"
/usr/bin/python3 "$MAKE_DIR/_py/proxy_logs_truth.py" --proxy caddy \
    --proxy-version "caddy $("$CADDY" version | head -1) (Debian package $(dpkg-query -W -f '${Version}' caddy 2>/dev/null || echo '?'))" \
    --config "samples/make/$NAME/Caddyfile" \
    --seed-topology "seed-client -> Caddy 127.0.0.1:$SEED_FE (reverse_proxy, defaults) -> nginx 127.0.0.1:$NGINX_PORT (samples/make/seed-incident/nginx.conf: proxy_buffering on, upstream HTTP/1.0) -> seed-server 127.0.0.1:$SEED_PORT" \
    --healthy-topology "official Python SDK client -> Caddy 127.0.0.1:$HEALTHY_FE (reverse_proxy, flush_interval -1) -> official Python SDK server 127.0.0.1:$SDK_PORT" \
    --concurrent-topology "$N_CONCURRENT official Python SDK client sessions (one process) -> Caddy 127.0.0.1:$HEALTHY_FE -> official Python SDK server 127.0.0.1:$SDK_PORT (samples/make/_py/py_server.py), and at the same time the seed run's path through 127.0.0.1:$SEED_FE; one Caddy, both sites logging to one file" \
    --work "$WORK" --healthy-port "$SDK_PORT" --seed-log samples/caddy-seed.jsonl --healthy-log samples/caddy-healthy.jsonl \
    --concurrent-log samples/caddy-concurrent.jsonl \
    --out "$SAMPLES_DIR/$NAME.truth.json"
for f in caddy-seed.jsonl caddy-healthy.jsonl caddy-concurrent.jsonl; do
  log "$f: $(wc -l <"$SAMPLES_DIR/$f") lines, $(stat -c %s "$SAMPLES_DIR/$f") bytes"
done
