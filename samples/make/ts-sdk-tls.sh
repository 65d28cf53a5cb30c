#!/usr/bin/env bash
# samples/ts-sdk-tls-client-leg.pcap + .keys, samples/ts-sdk-tls-server-leg.pcap and the truth:
# the official TypeScript SDK client and server (pinned in _node/) with Debian's nginx between
# them terminating TLS: client --HTTPS :18444--> nginx --HTTP :18445--> server. The client's
# key log comes from `node --tls-keylog`; the certificate is made here and thrown away. The
# same session is captured encrypted (client leg) and in clear (server leg), so the decrypted
# leg can be held to the plaintext one. The client and the server log what they did.
source "$(dirname "$0")/_common.sh"
NAME=ts-sdk-tls
TPORT=18444
SPORT=18445
need_capture_tools
need_apt nginx:nginx-light openssl:openssl
require_free_port "$TPORT" "$SPORT"
# The client and server of ts-sdk-resumption, unchanged.
D="$(node_deps ts-sdk-resumption)"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$WORK/tmp"
throwaway_cert "$WORK"
nginx_conf "$WORK" "  server {
    listen 127.0.0.1:$TPORT ssl;
    ssl_certificate $WORK/ec.crt;
    ssl_certificate_key $WORK/ec.key;
$(mcp_location "$SPORT")
  }"
(cd "$D" && exec node server.mjs "$SPORT" "$WORK/server.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
bg NGINX nginx -c "$WORK/nginx.conf" -p "$WORK/"
wait_listen "$SPORT"
wait_listen "$TPORT"
capture_start lo "tcp port $TPORT" "$SAMPLES_DIR/$NAME-client-leg.pcap"; C1=$CAPTURE_PID
capture_start lo "tcp port $SPORT" "$SAMPLES_DIR/$NAME-server-leg.pcap"; C2=$CAPTURE_PID
(cd "$D" && NODE_EXTRA_CA_CERTS="$WORK/ec.crt" node --tls-keylog="$WORK/keys.txt" client.mjs \
  "https://localhost:$TPORT/mcp" "$WORK/client.jsonl")
sleep 1; kill -INT "$C1" "$C2"; wait "$C1" "$C2" || true
stop_pid "$NGINX"; stop_pid "$SERVER_PID"
cp "$WORK/keys.txt" "$SAMPLES_DIR/$NAME.keys"; chmod 644 "$SAMPLES_DIR/$NAME.keys"
/usr/bin/python3 - "$WORK" "$SAMPLES_DIR/$NAME.truth.json" <<'PY'
import json, sys
w, out = sys.argv[1], sys.argv[2]
client = [json.loads(l) for l in open(f"{w}/client.jsonl")]
server = [json.loads(l) for l in open(f"{w}/server.jsonl")]
sessions = sorted({e["session_id"] for e in client if e.get("ev") == "connected"})
requests = [e for e in client if e.get("ev") == "http_request"]
json.dump({
    "client_sessions": sessions,
    "client_requests": len(requests),
    "client_events": client,
    "server_events": server,
    "keylog_lines": sum(1 for _ in open(f"{w}/keys.txt")),
}, open(out, "w"), indent=1)
print(f"{len(sessions)} session(s), {len(requests)} requests by the client")
PY
