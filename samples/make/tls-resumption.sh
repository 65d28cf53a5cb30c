#!/usr/bin/env bash
# samples/tls-resumption.pcap + .keys + .truth.json: HTTPS (HTTP/1.1) between clients and Debian's
# nginx on loopback :18452, made to exercise what a key log may lack and what the record layer
# may be:
#   - curl, one invocation fetching /mcp twice with `Connection: close`: two connections, the
#     second resuming the first's session (TLS 1.3 PSK from a ticket);
#   - the same over TLS 1.2 (a session ticket, the session ID echoed);
#   - openssl s_client over TLS 1.2 AES-128-CBC-SHA with `-no_etm`: MAC-then-encrypt records.
# curl and s_client write the key log (SSLKEYLOGFILE, -keylogfile); the certificate is made here
# and thrown away. The truth is what each client received and which connections resumed, as the
# clients report it (curl -w, s_client's "Reused" line).
source "$(dirname "$0")/_common.sh"
need_capture_tools
need_apt nginx:nginx-light curl:curl openssl:openssl
NAME=tls-resumption
PORT=18452
require_free_port "$PORT"
W="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$W/www" "$W/tmp"
chmod 755 "$W"   # nginx's worker reads www/ as its own user
throwaway_cert "$W"
printf '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}' > "$W/www/mcp.json"
cat > "$W/nginx.conf" <<CONF
daemon off;
pid $W/nginx.pid;
error_log $W/error.log;
events {}
http {
  access_log $W/access.log;
  client_body_temp_path $W/tmp;
  server {
    listen 127.0.0.1:$PORT ssl;
    ssl_certificate $W/ec.crt;
    ssl_certificate_key $W/ec.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-SHA;
    ssl_session_cache shared:mcpf:1m;
    ssl_session_tickets on;
    location /mcp { default_type application/json; alias $W/www/mcp.json; }
  }
}
CONF
bg NGINX nginx -c "$W/nginx.conf" -p "$W/"
wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$SAMPLES_DIR/$NAME.pcap"; CAP=$CAPTURE_PID
export SSLKEYLOGFILE="$W/keys.txt"
URL="https://localhost:$PORT/mcp"
: > "$W/clients.tsv"
twice() { # NAME CURL-ARGS...: two connections in one curl, the second resuming the first
  local name="$1"; shift
  curl -s --cacert "$W/ec.crt" --http1.1 -H 'Connection: close' "$@" \
    -w "$name\t%{num_connects}\t%{http_code}\t%{size_download}\n" "$URL" "$URL" -o /dev/null -o /dev/null \
    >> "$W/clients.tsv"
}
twice tls13 --tlsv1.3
twice tls12 --tls-max 1.2 --ciphers ECDHE-ECDSA-AES128-GCM-SHA256
printf 'GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' \
  | openssl s_client -quiet -ign_eof -connect "127.0.0.1:$PORT" -servername localhost \
      -CAfile "$W/ec.crt" -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA -no_etm \
      -keylogfile "$W/keys.txt" > "$W/s_client.out" 2>"$W/s_client.err" || true
capture_stop "$CAP"
stop_pid "$NGINX"
cp "$W/keys.txt" "$SAMPLES_DIR/$NAME.keys"; chmod 644 "$SAMPLES_DIR/$NAME.keys"
/usr/bin/python3 - "$W" "$SAMPLES_DIR/$NAME.truth.json" <<'PY'
import json, sys
w, out = sys.argv[1], sys.argv[2]
curl = [l.rstrip("\n").split("\t") for l in open(f"{w}/clients.tsv")]
body = open(f"{w}/s_client.out", "rb").read()
log = [l.split()[0] for l in open(f"{w}/keys.txt") if l.strip() and not l.startswith("#")]
json.dump({
    "curl_transfers": [{"run": r[0], "new_connections": int(r[1]), "status": int(r[2]), "bytes": int(r[3])}
                       for r in curl],
    "s_client_mte_response_starts": body[:15].decode("latin-1"),
    "s_client_mte_body_ends_with": body[-20:].decode("latin-1"),
    "keylog_labels": {k: log.count(k) for k in sorted(set(log))},
    "served": open(f"{w}/www/mcp.json").read(),
}, open(out, "w"), indent=1)
print(open(out).read())
PY
