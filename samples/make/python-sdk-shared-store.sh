#!/usr/bin/env bash
# Re-creates samples/python-sdk-shared-store.pcap (clients <-> relay, port 18211),
# samples/python-sdk-shared-store-server-leg.pcap (relay <-> server, port 18212) and
# samples/python-sdk-shared-store.truth.json: make/python-sdk-resume-many.sh with 6 sessions and the
# server's ONE event store shared by every session, as the official Python SDK's session manager
# does when it is given a store (make/_py/py_server.py shared-store). Its streams are keyed by stream
# id alone (every standalone stream is `_GET_stream`, a POST stream its request id), so a session's
# resume replays the events other sessions' streams of the same name got after its Last-Event-ID:
# the events of one session delivered to another.
#
#   6 concurrent official Python SDK client sessions (make/python-sdk-resume-many/clients.py)
#     -> relay (make/python-sdk-resume-many/relay.py: resets some GET streams after 3 events, some
#        POST streams after 2) -> official Python SDK server (MCPServer), one shared event store
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18211 and 18212 only.
# Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}. Takes about 15 s (plus installs on a fresh machine).
source "$(dirname "$0")/_common.sh"
NAME=python-sdk-shared-store
H="$MAKE_DIR/python-sdk-resume-many"
RPORT=18211
SPORT=18212
N=6
STAGGER=0.1
need_capture_tools
require_free_port "$RPORT" "$SPORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"
LEG="$SAMPLES_DIR/$NAME-server-leg.pcap"
log "scratch: $WORK"

# The cut rules, by User-Agent (mcpf-py-client/NN): GET of i%3 != 2 after 3 events, POST of
# slow_count of i%4 in (1, 2) after 2 events.
/usr/bin/python3 - "$N" >"$WORK/rules.json" <<'EOF'
import json, sys
n = int(sys.argv[1])
ua = lambda i: "mcpf-py-client/%02d" % i
print(json.dumps({"get": {"clients": [ua(i) for i in range(n) if i % 3 != 2], "cut_after_events": 3},
                  "post": {"clients": [ua(i) for i in range(n) if i % 4 in (1, 2)], "tool": "slow_count",
                           "cut_after_events": 2},
                  "hold_ms": 150}, indent=1))
EOF

(cd "$MAKE_DIR/_py" && exec "$PY" py_server.py "$SPORT" "$WORK/server.jsonl" shared-store) >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
/usr/bin/python3 "$H/relay.py" "$RPORT" "$SPORT" "$WORK/rules.json" "$WORK/relay.jsonl" >"$WORK/relay.log" 2>&1 &
RELAY_PID=$!; _MCPF_PIDS+=("$RELAY_PID")
wait_listen "$SPORT"
wait_listen "$RPORT"
capture_start lo "tcp port $RPORT" "$PCAP"; C1=$CAPTURE_PID
capture_start lo "tcp port $SPORT" "$LEG"; C2=$CAPTURE_PID
sleep 0.3
log "running $N Python SDK client sessions through the relay"
"$PY" "$H/clients.py" "http://127.0.0.1:$RPORT/mcp" "$N" "$STAGGER" "$WORK/clients.jsonl" >"$WORK/clients.log" 2>&1 || {
  log "clients failed"; tail -20 "$WORK/clients.log" >&2; exit 1; }
sleep 1; kill -INT "$C1" "$C2"; wait "$C1" "$C2" || true
stop_pid "$RELAY_PID"; stop_pid "$SERVER_PID"
/usr/bin/python3 "$MAKE_DIR/$NAME/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json" "$RPORT" "$SPORT"
tshark_counts "$PCAP" "$RPORT"
tshark_counts "$LEG" "$SPORT"
