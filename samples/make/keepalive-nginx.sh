#!/usr/bin/env bash
# Re-creates samples/keepalive-nginx-lo.pcap, samples/keepalive-nginx.nginx.jsonl and
# samples/keepalive-nginx.truth.json:
#
#   12 official Python SDK client sessions (make/concurrent-nginx/py_clients.py, one asyncio process,
#   0.12 s apart)  --> nginx 127.0.0.1:18721 (make/keepalive-nginx/nginx.conf: not buffered, upstream
#   HTTP/1.1 keep-alive, one worker)  --> official Python SDK server 127.0.0.1:18722
#   (make/_py/py_server.py, one event store per session)
#
# A healthy run: every request answered once, no resume. What it is for: nginx reuses its idle
# upstream connections for whichever request comes next, so one server-leg connection carries the
# requests of several sessions in turn (the truth lists, from the server's own log, which sessions'
# requests each upstream connection carried). Both legs are in ONE file: one tcpdump on lo for both
# ports, as on the proxy host.
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18721-18722 only. Takes about 20 s.
source "$(dirname "$0")/_common.sh"
NAME=keepalive-nginx
H="$MAKE_DIR/$NAME"
NGINX_PORT=18721; SERVER_PORT=18722   # must match keepalive-nginx/nginx.conf
N=${MCPF_N:-12}
STAGGER=0.12

need_capture_tools
need_apt nginx:nginx
require_free_port "$NGINX_PORT" "$SERVER_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME-lo.pcap"
log "scratch: $WORK"

(cd "$MAKE_DIR/_py" && exec "$PY" py_server.py "$SERVER_PORT" "$WORK/py-server.jsonl") >"$WORK/py-server.log" 2>&1 &
SERVER=$!; _MCPF_PIDS+=("$SERVER")
wait_listen "$SERVER_PORT"
run_nginx "$WORK/nginx" "$H/nginx.conf" "$NGINX_PORT"

capture_start lo "tcp port $NGINX_PORT or tcp port $SERVER_PORT" "$PCAP"; CAP=$CAPTURE_PID
sleep 0.3
log "$N Python SDK sessions -> nginx :$NGINX_PORT -> SDK server :$SERVER_PORT"
"$PY" "$MAKE_DIR/concurrent-nginx/py_clients.py" "http://127.0.0.1:$NGINX_PORT/mcp" "$N" "$STAGGER" \
    "$WORK/py-clients.jsonl" >"$WORK/py-clients.log" 2>&1 \
  || { log "the SDK clients failed"; tail -20 "$WORK/py-clients.log" >&2; exit 1; }
capture_stop "$CAP"
stop_nginx
stop_pid "$SERVER"
cp "$WORK/nginx/access.jsonl" "$SAMPLES_DIR/$NAME.nginx.jsonl"
/usr/bin/python3 "$H/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json" "$NGINX_PORT" "$SERVER_PORT"

# the oracle counts: both ports decoded as HTTP, and each leg alone
tshark_counts "$PCAP" ""
for p in "$NGINX_PORT" "$SERVER_PORT"; do
  req=$(_tc "$PCAP" -d "tcp.port==$NGINX_PORT,http" -d "tcp.port==$SERVER_PORT,http" -Y "http.request && tcp.port==$p" -T fields -e http.request.method)
  resph=$(_tc "$PCAP" -d "tcp.port==$NGINX_PORT,http" -d "tcp.port==$SERVER_PORT,http" -o http.desegment_body:FALSE -Y "http.response && tcp.port==$p" -T fields -e http.response.code)
  streams=$(tshark -r "$PCAP" -Y "tcp.port==$p" -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
  echo "  port $p: http.request=$req response heads=$resph tcp.streams=$streams"
done
echo "$NAME.nginx.jsonl: $(wc -l <"$SAMPLES_DIR/$NAME.nginx.jsonl") lines"
