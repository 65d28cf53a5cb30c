#!/usr/bin/env bash
# Re-creates samples/late-mcp.{pcap,truth.json}: MCP that begins late on a connection. One official
# Python SDK (mcp, pinned) MCPServer on 127.0.0.1:3007 serves Streamable HTTP on /mcp and, on the same
# port, plain GET /download?size=N and GET /healthz (make/late-mcp/server.py). In this order:
# plain requests on their own connections (nothing has spoken MCP yet); a client whose ONE keep-alive
# connection downloads 1 MiB and then carries a whole MCP session; the same with 16 KiB; then 12
# concurrent official SDK client sessions (make/concurrent-nginx/py_clients.py), all from 127.0.0.1,
# with plain requests on their own connections in between. The capture is what an analyzer must
# classify late: a connection whose first request cannot be MCP turns out to carry it.
source "$(dirname "$0")/_common.sh"
NAME=late-mcp
PORT=3007
H="$MAKE_DIR/$NAME"
need_capture_tools
require_free_port "$PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"
URL="http://127.0.0.1:$PORT/mcp"

(cd "$H" && exec "$PY" server.py "$PORT" "$WORK/server.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$PCAP"
sleep 0.3
fail() { log "$1 failed"; tail -20 "$2" >&2; exit 1; }
# Before any MCP: connections that never show MCP at all.
"$PY" "$H/clients.py" plain "$URL" pre "$WORK/plain.jsonl" healthz sleep=0.2 download=8192 \
  >"$WORK/plain-pre.log" 2>&1 || fail "plain (pre)" "$WORK/plain-pre.log"
sleep 0.5
# 1 MiB, more than the analyzer's 64 KiB replay window, before the first MCP byte of the connection.
"$PY" "$H/clients.py" late "$URL" 1048576 late-1 "$WORK/late.jsonl" >"$WORK/late-1.log" 2>&1 \
  || fail "late-1" "$WORK/late-1.log"
sleep 0.5
# 16 KiB: within the window.
"$PY" "$H/clients.py" late "$URL" 16384 late-2 "$WORK/late.jsonl" >"$WORK/late-2.log" 2>&1 \
  || fail "late-2" "$WORK/late-2.log"
sleep 0.5
# 12 concurrent SDK sessions (about 13 s) and, meanwhile, plain requests on their own connections.
"$PY" "$MAKE_DIR/concurrent-nginx/py_clients.py" "$URL" 12 0.12 "$WORK/py-clients.jsonl" \
  >"$WORK/py-clients.log" 2>&1 &
CLIENTS=$!
"$PY" "$H/clients.py" plain "$URL" mid "$WORK/plain.jsonl" sleep=2.0 healthz sleep=1.0 download=4096 \
  sleep=1.5 healthz sleep=1.5 download=131072 sleep=2.0 healthz sleep=1.5 download=1024 sleep=1.0 healthz \
  >"$WORK/plain-mid.log" 2>&1 || fail "plain (mid)" "$WORK/plain-mid.log"
wait "$CLIENTS" || fail "the SDK clients" "$WORK/py-clients.log"
capture_stop "$CAPTURE_PID"
stop_pid "$SERVER_PID"
/usr/bin/python3 "$H/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json" "$PORT"
tshark_counts "$PCAP" "$PORT"
# Oracle (not the truth): the TCP stream of each late download and the requests it carried.
for size in 1048576 16384; do
  stream=$(tshark -r "$PCAP" -d "tcp.port==$PORT,http" -Y "http.request.uri == \"/download?size=$size\"" \
    -T fields -e tcp.stream 2>/dev/null)
  log "tcp.stream $stream (download of $size): $(tshark -r "$PCAP" -d "tcp.port==$PORT,http" \
    -Y "tcp.stream == $stream && http.request" -T fields -e http.request.method 2>/dev/null | tr '\n' ' ')"
done
