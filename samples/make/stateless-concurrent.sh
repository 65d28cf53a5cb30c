#!/usr/bin/env bash
# Re-creates samples/stateless-concurrent.{pcap,truth.json}: the official Python SDK (mcp, pinned)
# MCPServer with stateless_http=True on 127.0.0.1:19101, and four official Python SDK clients in
# one process (mode="auto": they speak the stateless 2026-07-28 revision: server/discover, then
# self-contained POSTs, no sessions), each with its own connection pool, running at the same time;
# each does tools/list and 5 tools/call, 3 of them at once on separate connections.
source "$(dirname "$0")/_common.sh"
NAME=stateless-concurrent
PORT=19101
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
(cd "$H" && "$PY" client.py "http://127.0.0.1:$PORT/mcp" "$WORK/client.jsonl" 4)
capture_stop "$CAPTURE_PID"
stop_pid "$SERVER_PID"
/usr/bin/python3 "$H/truth.py" "$WORK/client.jsonl" "$WORK/server.jsonl" "$SAMPLES_DIR/$NAME.truth.json" "$PORT"
tshark_counts "$PCAP" "$PORT"
