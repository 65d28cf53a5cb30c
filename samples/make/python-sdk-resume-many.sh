#!/usr/bin/env bash
# Re-creates samples/python-sdk-resume-many.pcap (clients <-> relay, port 18201),
# samples/python-sdk-resume-many-server-leg.pcap (relay <-> server, port 18202) and
# samples/python-sdk-resume-many.truth.json:
# 24 concurrent official Python SDK client sessions (mcp, pinned; one asyncio process) -> a TCP relay
# of ours (make/python-sdk-resume-many/relay.py) that resets some standalone GET streams after 3
# events and some POST streams after 2 -> the official Python SDK server (MCPServer) with one event
# store per session. The SDK client resumes every cut stream by itself with GET + Last-Event-ID.
#
# make/python-sdk-shared-store.sh runs this script as a variant (MCPF_VARIANT=shared-store: 6
# sessions, one event store for all of them, its own name, ports and truth).
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18201 and 18202 only.
# Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}. Takes about 20 s (plus installs on a fresh machine).
source "$(dirname "$0")/_common.sh"
H="$MAKE_DIR/python-sdk-resume-many"
case "${MCPF_VARIANT:-}" in
  "") NAME=python-sdk-resume-many; RPORT=18201; SPORT=18202; N=24; STORE=(); TRUTH="$H/truth.py" ;;
  shared-store) NAME=python-sdk-shared-store; RPORT=18211; SPORT=18212; N=6; STORE=(shared-store)
                TRUTH="$MAKE_DIR/$NAME/truth.py" ;;
  *) log "unknown MCPF_VARIANT ${MCPF_VARIANT}"; exit 2 ;;
esac
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

(cd "$MAKE_DIR/_py" && exec "$PY" py_server.py "$SPORT" "$WORK/server.jsonl" "${STORE[@]}") >"$WORK/server.log" 2>&1 &
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
/usr/bin/python3 "$TRUTH" "$WORK" "$SAMPLES_DIR/$NAME.truth.json" "$RPORT" "$SPORT"
tshark_counts "$PCAP" "$RPORT"
tshark_counts "$LEG" "$SPORT"
