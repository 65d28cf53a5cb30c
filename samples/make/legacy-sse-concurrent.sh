#!/usr/bin/env bash
# Re-creates samples/legacy-sse-concurrent.{pcap,truth.json}: the official Python SDK (mcp, pinned)
# server speaking only the legacy HTTP+SSE transport (as run("sse")) on 127.0.0.1:19102, and four
# official Python SDK SSE clients (sse_client, mode="legacy") in one process at the same time, each
# with its own GET /sse stream and session_id; each posts initialize, initialized, tools/list and
# 6 tools/call (3 in flight at once, one with progress), all answered 202 with the responses on its
# own stream.
source "$(dirname "$0")/_common.sh"
NAME=legacy-sse-concurrent
PORT=19102
H="$MAKE_DIR/$NAME"
need_capture_tools
require_free_port "$PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"

(cd "$H" && exec "$PY" server.py "$PORT" "$WORK/server.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$PCAP"
sleep 0.3
(cd "$H" && "$PY" client.py "http://127.0.0.1:$PORT/sse" "$WORK/client.jsonl" 4)
capture_stop "$CAPTURE_PID"
stop_pid "$SERVER_PID"
/usr/bin/python3 "$H/truth.py" "$WORK/client.jsonl" "$WORK/server.jsonl" "$SAMPLES_DIR/$NAME.truth.json" "$PORT"
tshark_counts "$PCAP" "$PORT"
