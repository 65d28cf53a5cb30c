#!/usr/bin/env bash
# Re-creates samples/mitmproxy-python-sdk.{har,truth.json} and mitmproxy-python-sdk.sanitized.har:
# the official Python SDK (mcp, pinned) client and server over Streamable HTTP (SSE responses,
# a session, an event store), with mitmdump (pinned, its own venv) as a reverse proxy between them
# writing a HAR (--set hardump). The record_sse.py addon streams event streams live and keeps
# their bytes for the HAR. Ports: server 3100, proxy 3101 (loopback only).
source "$(dirname "$0")/_common.sh"
NAME=mitmproxy-python-sdk
SERVER_PORT=3100
PROXY_PORT=3101
H="$MAKE_DIR/mitmproxy-har"
require_free_port "$SERVER_PORT" "$PROXY_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
MITM_PY="$(py_venv mitmproxy "$H/requirements.mitmproxy.txt")"
MITMDUMP="$(dirname "$MITM_PY")/mitmdump"
MITM_VERSION="$("$MITM_PY" -c 'from mitmproxy import version; print(version.VERSION)')"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
HAR="$SAMPLES_DIR/$NAME.har"

(cd "$H" && exec "$PY" server.py "$SERVER_PORT" "$WORK/events.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$SERVER_PORT"
# A fresh confdir: mitmproxy writes its CA there on first start (unused: plain HTTP only).
"$MITMDUMP" --mode "reverse:http://127.0.0.1:$SERVER_PORT" --listen-host 127.0.0.1 -p "$PROXY_PORT" \
  --set confdir="$WORK/mitmproxy" --set hardump="$WORK/raw.har" -s "$H/record_sse.py" -q \
  >"$WORK/mitmdump.log" 2>&1 &
PROXY_PID=$!; _MCPF_PIDS+=("$PROXY_PID")
wait_listen "$PROXY_PORT"
(cd "$H" && "$PY" client.py "http://127.0.0.1:$PROXY_PORT/mcp" "$WORK/client.jsonl")
sleep 0.5
# SIGINT: mitmdump writes the HAR on a clean shutdown.
kill -INT "$PROXY_PID"; wait "$PROXY_PID" || true
stop_pid "$SERVER_PID"
[ -s "$WORK/raw.har" ] || { echo "mitmdump wrote no HAR; see $WORK/mitmdump.log" >&2; exit 1; }
cp "$WORK/raw.har" "$HAR"
/usr/bin/python3 "$H/sanitize.py" "$HAR" "$SAMPLES_DIR/$NAME.sanitized.har" slow_count
/usr/bin/python3 "$H/truth.py" "$WORK/client.jsonl" "$WORK/events.jsonl" "$SAMPLES_DIR/$NAME.truth.json" \
  "$SERVER_PORT" "$PROXY_PORT" "$MITM_VERSION"
log "wrote $HAR ($(stat -c %s "$HAR") bytes), $NAME.sanitized.har, $NAME.truth.json"
