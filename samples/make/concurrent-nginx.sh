#!/usr/bin/env bash
# Re-creates samples/concurrent-nginx-client-leg.pcap, samples/concurrent-nginx-server-leg.pcap,
# samples/concurrent-nginx.nginx.jsonl and samples/concurrent-nginx.truth.json:
#
#   26 official Python SDK client sessions (one asyncio process)  --/py/mcp-->  \
#   26 official TypeScript SDK client sessions (one Node process) --/ts/mcp-->   nginx 127.0.0.1:18080
#   1 seed-client session (samples/make/seed-incident/client.py)  --/mcp----->  /
#        nginx --> Python SDK server 127.0.0.1:18101 (MCPServer, one event store per session)
#              --> TypeScript SDK server 127.0.0.1:18102 (example InMemoryEventStore per session)
#              --> seed-server 127.0.0.1:18103 (buggy mode: the seed incident)
#
# 52 healthy sessions (not buffered: proxy_buffering off, upstream HTTP/1.1 keep-alive) and, at the
# same time, exactly one session that suffers the seed incident (location = /mcp: proxy_buffering
# on, upstream HTTP/1.0, as samples/make/seed-incident/nginx.conf). One tcpdump per leg.
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18080, 18101-18103 only.
# Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}. Takes about 30 s (plus installs on a fresh machine).
source "$(dirname "$0")/_common.sh"
NAME=concurrent-nginx
H="$MAKE_DIR/$NAME"
NGINX_PORT=18080   # must match nginx.conf
PY_PORT=18101
TS_PORT=18102
SEED_PORT=18103
N_PY=${MCPF_N_PY:-26}
N_TS=${MCPF_N_TS:-26}
STAGGER=0.12       # seconds between the starts of two sessions of one SDK

need_capture_tools
need_apt nginx:nginx
require_free_port "$NGINX_PORT" "$PY_PORT" "$TS_PORT" "$SEED_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
D="$(node_deps "$NAME")"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$WORK/nginx/tmp"
CLIENT_PCAP="$SAMPLES_DIR/$NAME-client-leg.pcap"
SERVER_PCAP="$SAMPLES_DIR/$NAME-server-leg.pcap"
log "scratch: $WORK"

# --- servers and nginx ------------------------------------------------------------------------
(cd "$MAKE_DIR/_py" && exec "$PY" py_server.py "$PY_PORT" "$WORK/py-server.jsonl") >"$WORK/py-server.log" 2>&1 &
PY_SERVER=$!; _MCPF_PIDS+=("$PY_SERVER")
(cd "$D" && exec node ts_server.mjs "$TS_PORT" "$WORK/ts-server.jsonl") >"$WORK/ts-server.log" 2>&1 &
TS_SERVER=$!; _MCPF_PIDS+=("$TS_SERVER")
"$PY" "$H/seed_wrap.py" server --port "$SEED_PORT" --session-seed "mcp-forensics/$NAME" \
    --truth-out "$WORK/seed-server.json" >"$WORK/seed-server.out" 2>"$WORK/seed-server.err" &
SEED_SERVER=$!; _MCPF_PIDS+=("$SEED_SERVER")
wait_listen "$PY_PORT"; wait_listen "$TS_PORT"; wait_listen "$SEED_PORT"
"$NGINX" -p "$WORK/nginx/" -e "$WORK/nginx/error.log" -c "$H/nginx.conf" &
NGINX_PID=$!; _MCPF_PIDS+=("$NGINX_PID")
wait_listen "$NGINX_PORT"

# --- captures ---------------------------------------------------------------------------------
capture_start lo "tcp port $NGINX_PORT" "$CLIENT_PCAP"; CAP_C=$CAPTURE_PID
capture_start lo "tcp port $PY_PORT or tcp port $TS_PORT or tcp port $SEED_PORT" "$SERVER_PCAP"; CAP_S=$CAPTURE_PID
sleep 0.3

# --- the clients, all at once -------------------------------------------------------------------
log "starting $N_PY Python SDK sessions, $N_TS TypeScript SDK sessions and the seed-client"
"$PY" "$H/py_clients.py" "http://127.0.0.1:$NGINX_PORT/py/mcp" "$N_PY" "$STAGGER" "$WORK/py-clients.jsonl" \
    >"$WORK/py-clients.log" 2>&1 &
PY_CLIENTS=$!
(cd "$D" && exec node ts_clients.mjs "http://127.0.0.1:$NGINX_PORT/ts/mcp" "$N_TS" "$STAGGER" "$WORK/ts-clients.jsonl") \
    >"$WORK/ts-clients.log" 2>&1 &
TS_CLIENTS=$!
sleep 1.0   # the incident starts while every healthy session is being set up
"$PY" "$H/seed_wrap.py" client --port "$NGINX_PORT" --truth-out "$WORK/seed-client.json" 2>"$WORK/seed-client.err" &
SEED_CLIENT=$!
rc=0
wait "$PY_CLIENTS" || { log "Python clients failed"; tail -20 "$WORK/py-clients.log" >&2; rc=1; }
wait "$TS_CLIENTS" || { log "TypeScript clients failed"; tail -20 "$WORK/ts-clients.log" >&2; rc=1; }
wait "$SEED_CLIENT" || { log "seed-client failed"; tail -20 "$WORK/seed-client.err" >&2; rc=1; }

sleep 1; kill -INT "$CAP_C" "$CAP_S"; wait "$CAP_C" "$CAP_S" || true
kill -QUIT "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true
stop_pid "$SEED_SERVER"; stop_pid "$PY_SERVER"; stop_pid "$TS_SERVER"
[ "$rc" = 0 ] || exit 1

# --- results --------------------------------------------------------------------------------------
cp "$WORK/nginx/access.jsonl" "$SAMPLES_DIR/$NAME.nginx.jsonl"
# The seed-incident's own merge and checks, for the incident session alone.
/usr/bin/python3 "$MAKE_DIR/seed-incident/truth.py" "$NAME-incident" buggy "$WORK/seed-client.json" \
    "$WORK/seed-server.json" "$WORK/incident.truth.json"
/usr/bin/python3 "$H/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json" "$NGINX_PORT" "$PY_PORT" "$TS_PORT" "$SEED_PORT"
tshark_counts "$CLIENT_PCAP" "$NGINX_PORT"
for f in "$SERVER_PCAP"; do
  req=$(tshark -r "$f" -d "tcp.port==$PY_PORT,http" -d "tcp.port==$TS_PORT,http" -d "tcp.port==$SEED_PORT,http" \
        -Y http.request 2>/dev/null | wc -l)
  streams=$(tshark -r "$f" -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
  log "$(basename "$f"): http.request=$req tcp.streams=$streams size=$(stat -c %s "$f")B"
done
