#!/usr/bin/env bash
# Re-creates the nginx-formats samples: real access logs written by Debian's nginx in three
# operator-style JSON log_formats and one text format at once (make/nginx-formats/nginx.conf), for the seed incident
# and for a healthy official-Python-SDK session, through ONE nginx:
#
#   seed-client (make/seed-incident/client.py)        --/mcp--------->  nginx 127.0.0.1:18541
#   official Python SDK client (make/python-sdk-healthy) --/healthy/mcp->  /
#        nginx --> seed-server 127.0.0.1:18542 (buggy mode; proxy_buffering on, HTTP/1.0 upstream)
#              --> official Python SDK server 127.0.0.1:18543 (proxy_buffering off, HTTP/1.1)
#
#   OUT/nginx-formats-seed.{ops-short,request-line,ingress}.jsonl
#   OUT/nginx-formats-healthy.{ops-short,request-line,ingress}.jsonl
#   OUT/nginx-formats-{seed,healthy}.combined-mcp.log (text: read with --log-format, see the truth)
#   OUT/nginx-formats-concurrent.{ops-short,request-line,ingress}.jsonl, .combined-mcp.log: the
#        incident among 12 (MCPF_N_CONCURRENT) official Python SDK client sessions run at the same
#        time (make/concurrent-nginx/py_clients.py -> nginx 127.0.0.1:18544/many/mcp -> make/_py/
#        py_server.py 127.0.0.1:18545), every client 127.0.0.1, in one file per format
#   OUT/nginx-formats.truth.json      (written from what the clients and servers recorded)
#   OUT/nginx-formats-client-leg.pcap (both sessions, client <-> nginx, for comparison)
#
# OUT is samples/ (or $MCPF_NGINX_FORMATS_OUT).
#
# The incident runs first (among the many SDK sessions), then the healthy session. Needs root
# (tcpdump on lo, apt-get). Uses TCP ports 18541-18545 only. Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}.
# Takes about 35 s.
source "$(dirname "$0")/_common.sh"
NAME=nginx-formats
H="$MAKE_DIR/$NAME"
SEED="$MAKE_DIR/seed-incident"
HEALTHY="$MAKE_DIR/python-sdk-healthy"
NGINX_PORT=18541   # must match nginx.conf
SEED_PORT=18542
PY_PORT=18543
MANY_NGINX_PORT=18544; MANY_PORT=18545   # must match nginx.conf
N_CONCURRENT=${MCPF_N_CONCURRENT:-12}
FORMATS="ops-short.jsonl request-line.jsonl ingress.jsonl combined-mcp.log"
OUT="${MCPF_NGINX_FORMATS_OUT:-$SAMPLES_DIR}"

need_capture_tools
need_apt nginx:nginx python3:python3
require_free_port "$NGINX_PORT" "$SEED_PORT" "$PY_PORT" "$MANY_NGINX_PORT" "$MANY_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$HEALTHY/requirements.lock.txt")"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$WORK/nginx/tmp" "$OUT"
CLIENT_PCAP="$OUT/$NAME-client-leg.pcap"
log "scratch: $WORK"

# --- servers and nginx ------------------------------------------------------------------------
# The seed-server and seed-client use the standard library only.
/usr/bin/python3 "$SEED/server.py" --port "$SEED_PORT" --session-seed "mcp-forensics/$NAME" \
    --truth-out "$WORK/seed-server.json" >"$WORK/seed-server.out" 2>"$WORK/seed-server.err" &
SEED_SERVER=$!; _MCPF_PIDS+=("$SEED_SERVER")
(cd "$HEALTHY" && exec "$PY" server.py "$PY_PORT" "$WORK/py-events.jsonl") >"$WORK/py-server.log" 2>&1 &
PY_SERVER=$!; _MCPF_PIDS+=("$PY_SERVER")
wait_listen "$SEED_PORT"; wait_listen "$PY_PORT"
start_many_sdk_server "$MANY_PORT"
"$NGINX" -p "$WORK/nginx/" -e "$WORK/nginx/error.log" -c "$H/nginx.conf" &
NGINX_PID=$!; _MCPF_PIDS+=("$NGINX_PID")
wait_listen "$NGINX_PORT"

capture_start lo "tcp port $NGINX_PORT" "$CLIENT_PCAP"; CAP_C=$CAPTURE_PID

# --- the two sessions, one after the other ------------------------------------------------------
log "seed incident through /mcp, among $N_CONCURRENT Python SDK sessions through :$MANY_NGINX_PORT/many/mcp"
seed_among_many_sdk_sessions "http://127.0.0.1:$MANY_NGINX_PORT/many/mcp" "$NGINX_PORT" "$N_CONCURRENT"
sleep 0.5
log "healthy Python SDK session through /healthy/mcp"
(cd "$HEALTHY" && "$PY" client.py "http://127.0.0.1:$NGINX_PORT/healthy/mcp" "$WORK/py-client.jsonl") \
    >"$WORK/py-client.log" 2>&1 || { log "Python SDK client failed"; tail -20 "$WORK/py-client.log" >&2; exit 1; }

capture_stop "$CAP_C"
kill -QUIT "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true
stop_pid "$SEED_SERVER"; stop_pid "$PY_SERVER"; stop_pid "$MANY_SERVER"

# --- results --------------------------------------------------------------------------------------
if [ -s "$WORK/nginx/stray.jsonl" ]; then
  log "requests outside the two locations:"; cat "$WORK/nginx/stray.jsonl" >&2; exit 1
fi
for f in $FORMATS; do
  cp "$WORK/nginx/seed.$f" "$OUT/$NAME-seed.$f"
  cp "$WORK/nginx/healthy.$f" "$OUT/$NAME-healthy.$f"
  cp "$WORK/nginx/concurrent.$f" "$OUT/$NAME-concurrent.$f"
done
# Each session's own merge and checks (they fail when the run did not reproduce the scenario).
/usr/bin/python3 "$SEED/truth.py" "$NAME-seed" buggy "$WORK/seed-client.json" "$WORK/seed-server.json" \
    "$WORK/seed.truth.json"
/usr/bin/python3 "$HEALTHY/truth.py" "$WORK/py-client.jsonl" "$WORK/py-events.jsonl" "$WORK/healthy.truth.json" "$PY_PORT"
/usr/bin/python3 "$H/truth.py" "$WORK" "$OUT" "$NGINX_PORT" "$SEED_PORT" "$PY_PORT"
tshark_counts "$CLIENT_PCAP" "$NGINX_PORT"
for f in "$OUT/$NAME"-*.jsonl "$OUT/$NAME"-*.log; do log "$(basename "$f"): $(wc -l <"$f") lines, $(stat -c %s "$f")B"; done
