#!/usr/bin/env bash
# Re-creates samples/h2c-upgrade.pcap and samples/h2c-upgrade.truth.json: one MCP session of
# curl (`--http2` on http:// URLs: every request offers `Upgrade: h2c`) against the official
# Python SDK server served by Hypercorn on 127.0.0.1:18449, which takes the upgrade for requests
# without a body and declines it for the others:
#   POST initialize, POST notifications/initialized   HTTP/1.1 (upgrade declined: a body)
#   GET /mcp (standalone stream)                       101, then HTTP/2: the SSE on stream 1
#   POST tools/call touch  (a list_changed notification on the GET stream), POST tools/list
#   the GET ends when curl gives up on it (--max-time), then DELETE: 101, then HTTP/2
# The truth is what curl received (its -D header dumps and bodies) and the server's request log.
source "$(dirname "$0")/_common.sh"
NAME=h2c-upgrade
PORT=18449
need_capture_tools
need_apt curl:curl
require_free_port "$PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION-h2" "$MAKE_DIR/python-sdk-h2/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
(cd "$MAKE_DIR/_py" && MCPF_ASGI_SERVER=hypercorn exec "$PY" py_server.py "$PORT" "$WORK/server.jsonl") \
  >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$SAMPLES_DIR/$NAME.pcap"; CAP=$CAPTURE_PID
URL="http://127.0.0.1:$PORT/mcp"
H=(-H 'Accept: application/json, text/event-stream' -H 'Content-Type: application/json'
   -H 'Mcp-Protocol-Version: 2025-11-25')
N=0
# call NAME CURL_ARGS... : one curl, its header dump and body kept as WORK/NAME.{headers,body}.
call() {
  local name="$1"; shift
  N=$((N + 1))
  curl -s --http2 -D "$WORK/$N-$name.headers" -o "$WORK/$N-$name.body" "$@" "$URL" || true
}
call initialize "${H[@]}" -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"7"}}}'
SID="$(grep -i '^mcp-session-id:' "$WORK/1-initialize.headers" | cut -d' ' -f2 | tr -d '\r')"
H+=(-H "Mcp-Session-Id: $SID")
call initialized "${H[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
N=$((N + 1)); GET_N=$N
curl -s --http2 --max-time 2 -D "$WORK/$GET_N-get.headers" -o "$WORK/$GET_N-get.body" \
  -H 'Accept: text/event-stream' -H 'Mcp-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $SID" \
  "$URL" &
GET_PID=$!
sleep 0.5
call touch "${H[@]}" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"touch","arguments":{}}}'
call tools-list "${H[@]}" -d '{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
wait "$GET_PID" || true
call delete -X DELETE -H 'Mcp-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $SID"
capture_stop "$CAP"
stop_pid "$SERVER_PID"
/usr/bin/python3 "$MAKE_DIR/$NAME/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json"
