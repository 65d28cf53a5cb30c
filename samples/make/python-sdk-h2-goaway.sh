#!/usr/bin/env bash
# Re-creates samples/python-sdk-h2-goaway.pcap and samples/python-sdk-h2-goaway.truth.json: an
# incident of software we did not write. N official Python SDK client sessions share ONE
# cleartext HTTP/2 connection (make/python-sdk-h2/clients.py) to Debian's nginx, which ends each
# connection after 8 requests (keepalive_requests 8: a GOAWAY naming the last stream it will
# process); the SDK server (_py/py_server.py) is behind it over HTTP/1.1. The streams the client
# opened above that last stream are never processed, and httpx2 (httpcore with h2) fails them
# instead of retrying them on a new connection: those sessions' requests go unanswered. The truth
# is what the clients logged, their failures included, and the server's request log.
source "$(dirname "$0")/_common.sh"
NAME=python-sdk-h2-goaway
PORT=18453
SPORT=18454
N=${MCPF_N_H2:-6}
H="$MAKE_DIR/python-sdk-h2"
need_capture_tools
need_apt nginx:nginx-light
require_free_port "$PORT" "$SPORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION-h2" "$H/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$WORK/tmp"
nginx_conf "$WORK" "  server {
    listen 127.0.0.1:$PORT http2;
    keepalive_requests 8;
$(mcp_location "$SPORT")
  }"
(cd "$MAKE_DIR/_py" && exec "$PY" py_server.py "$SPORT" "$WORK/server.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
bg NGINX nginx -c "$WORK/nginx.conf" -p "$WORK/"
wait_listen "$SPORT"; wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$SAMPLES_DIR/$NAME.pcap"; CAP=$CAPTURE_PID
# Sessions fail here (that is the incident): their failures are in the log, not fatal.
"$PY" "$H/clients.py" "http://127.0.0.1:$PORT/mcp" "$N" "$WORK/clients.jsonl" 2>"$WORK/clients.err" || true
capture_stop "$CAP"
stop_pid "$NGINX"; stop_pid "$SERVER_PID"
/usr/bin/python3 - "$WORK" "$SAMPLES_DIR/$NAME.truth.json" <<'PY'
import json, sys
work, out = sys.argv[1], sys.argv[2]
log = [json.loads(l) for l in open(f"{work}/clients.jsonl")]
sessions = {}
for e in log:
    if e.get("ev") == "http_response" and e.get("mcp_session_id"):
        sessions.setdefault(e["session"], e["mcp_session_id"])
failed = {e["session"]: e["error"] for e in log if e.get("ev") == "session_failed"}
errors = [e for e in log if e.get("ev") == "http_error"]
server = [json.loads(l) for l in open(f"{work}/server.jsonl")]
json.dump({
    "sessions": sessions,
    "failed_sessions": failed,
    "requests_failed_by_the_client": [{"session": e["session"], "seq": e["seq"], "error": e["error"]}
                                      for e in errors],
    "requests_sent": sum(1 for e in log if e.get("ev") == "http_request"),
    "requests_the_server_got": sum(1 for e in server if e.get("ev") == "http_request"),
    "client_events": log,
    "server_events": server,
}, open(out, "w"), indent=1)
print(f"{len(sessions)} sessions, {len(failed)} failed; {len(errors)} requests failed in the client")
PY
