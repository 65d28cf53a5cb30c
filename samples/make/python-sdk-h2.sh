#!/usr/bin/env bash
# Re-creates samples/python-sdk-h2-tls.{pcap,keys}, samples/python-sdk-h2c.pcap,
# samples/python-sdk-h2-server-leg.pcap and samples/python-sdk-h2.truth.json:
#
#   N official Python SDK client sessions over ONE HTTP/2 connection  --TLS h2 :18446-->  \
#   N more over ONE cleartext HTTP/2 connection (prior knowledge)   --h2c    :18447-->   nginx
#        nginx --HTTP/1.1 :18448--> the official Python SDK server (_py/py_server.py)
#
# Debian's nginx terminates TLS and HTTP/2 (`listen ... ssl http2` / `listen ... http2`) and
# speaks HTTP/1.1 upstream, so the server leg is the plaintext equivalent of both client legs.
# The client's key log comes from Python's ssl module (SSLKEYLOGFILE); the certificate is made
# here and thrown away. The clients and the server log what they did (the truth).
source "$(dirname "$0")/_common.sh"
NAME=python-sdk-h2
TPORT=18446
CPORT=18447
SPORT=18448
N=${MCPF_N_H2:-6}
H="$MAKE_DIR/$NAME"
need_capture_tools
need_apt nginx:nginx-light openssl:openssl
require_free_port "$TPORT" "$CPORT" "$SPORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION-h2" "$H/requirements.lock.txt")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$WORK/tmp"
throwaway_cert "$WORK"
nginx_conf "$WORK" "  server {
    listen 127.0.0.1:$TPORT ssl http2;
    listen 127.0.0.1:$CPORT http2;
    ssl_certificate $WORK/ec.crt;
    ssl_certificate_key $WORK/ec.key;
$(mcp_location "$SPORT")
  }"
(cd "$MAKE_DIR/_py" && exec "$PY" py_server.py "$SPORT" "$WORK/server.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
bg NGINX nginx -c "$WORK/nginx.conf" -p "$WORK/"
wait_listen "$SPORT"; wait_listen "$TPORT"; wait_listen "$CPORT"
capture_start lo "tcp port $TPORT" "$SAMPLES_DIR/$NAME-tls.pcap"; C1=$CAPTURE_PID
capture_start lo "tcp port $CPORT" "$SAMPLES_DIR/python-sdk-h2c.pcap"; C2=$CAPTURE_PID
capture_start lo "tcp port $SPORT" "$SAMPLES_DIR/$NAME-server-leg.pcap"; C3=$CAPTURE_PID
SSLKEYLOGFILE="$WORK/keys.txt" "$PY" "$H/clients.py" "https://localhost:$TPORT/mcp" "$N" \
  "$WORK/clients-tls.jsonl" "$WORK/ec.crt"
"$PY" "$H/clients.py" "http://127.0.0.1:$CPORT/mcp" "$N" "$WORK/clients-h2c.jsonl"
sleep 1; kill -INT "$C1" "$C2" "$C3"; wait "$C1" "$C2" "$C3" || true
stop_pid "$NGINX"; stop_pid "$SERVER_PID"
cp "$WORK/keys.txt" "$SAMPLES_DIR/$NAME-tls.keys"; chmod 644 "$SAMPLES_DIR/$NAME-tls.keys"
/usr/bin/python3 "$H/truth.py" "$WORK" "$SAMPLES_DIR/$NAME.truth.json"
