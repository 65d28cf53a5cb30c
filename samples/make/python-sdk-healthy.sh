#!/usr/bin/env bash
# Re-creates samples/python-sdk-healthy.{pcap,pcapng,truth.json} and python-sdk-healthy-any.pcap:
# official Python SDK (mcp, pinned) server + client over Streamable HTTP on 127.0.0.1:3000,
# SSE responses, a session, an in-memory event store (uuid4 ids, priming events).
source "$(dirname "$0")/_common.sh"
NAME=python-sdk-healthy
PORT=3000
H="$MAKE_DIR/$NAME"
need_capture_tools
require_free_port "$PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$H/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"
ANY="$SAMPLES_DIR/$NAME-any.pcap"

(cd "$H" && exec "$PY" server.py "$PORT" "$WORK/events.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$PCAP"; LO_PID=$CAPTURE_PID
capture_start any "tcp port $PORT" "$ANY"; ANY_PID=$CAPTURE_PID
sleep 0.3
(cd "$H" && "$PY" client.py "http://127.0.0.1:$PORT/mcp" "$WORK/client.jsonl")
sleep 0.5
sleep 1; kill -INT "$LO_PID" "$ANY_PID"; wait "$LO_PID" "$ANY_PID" || true
stop_pid "$SERVER_PID"
editcap -F pcapng "$PCAP" "$SAMPLES_DIR/$NAME.pcapng"
/usr/bin/python3 "$H/truth.py" "$WORK/client.jsonl" "$WORK/events.jsonl" "$SAMPLES_DIR/$NAME.truth.json" "$PORT"
tshark_counts "$PCAP" "$PORT"
tshark_counts "$SAMPLES_DIR/$NAME.pcapng" "$PORT"
tshark_counts "$ANY" "$PORT"
