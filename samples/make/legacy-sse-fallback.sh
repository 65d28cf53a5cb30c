#!/usr/bin/env bash
# Re-creates samples/legacy-sse-fallback.{pcap,truth.json}: a Python SDK (mcp, pinned) server
# speaking only legacy HTTP+SSE on 127.0.0.1:3003, and the TS SDK (pinned) client using the
# SDK's documented fallback: Streamable HTTP POST first (405), then SSEClientTransport.
source "$(dirname "$0")/_common.sh"
NAME=legacy-sse-fallback
PORT=3003
H="$MAKE_DIR/$NAME"
need_capture_tools
require_free_port "$PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
D="$(node_deps "$NAME")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"

(cd "$H" && exec "$PY" server.py "$PORT" "$WORK/server.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$PCAP"
sleep 0.3
(cd "$D" && node client.mjs "http://127.0.0.1:$PORT/sse" "$WORK/client.jsonl")
sleep 0.3
capture_stop "$CAPTURE_PID"
stop_pid "$SERVER_PID"
/usr/bin/python3 "$H/truth.py" "$WORK/client.jsonl" "$WORK/server.jsonl" "$SAMPLES_DIR/$NAME.truth.json" "$PORT"
tshark_counts "$PCAP" "$PORT"
