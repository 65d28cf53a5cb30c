#!/usr/bin/env bash
# samples/tls-nginx-curl.pcap + .keys + .truth.json (and -dsb.pcapng, the key log inside): HTTPS (HTTP/1.1) between curl and Debian's
# nginx on loopback, one connection per cipher suite: TLS 1.3 with AES-128-GCM, AES-256-GCM and
# ChaCha20-Poly1305; TLS 1.2 ECDHE with AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305; and
# TLS 1.2 AES-128-CBC-SHA (with encrypt-then-MAC, OpenSSL's default). curl writes the key
# log (SSLKEYLOGFILE); the certificate is made here and thrown away. The truth is what nginx
# served (the file it was given) and what each curl received, written by the script.
source "$(dirname "$0")/_common.sh"
need_capture_tools
need_apt nginx:nginx-light curl:curl openssl:openssl

PORT=18443
require_free_port "$PORT"
W="$SCRATCH/tls-nginx-curl"
rm -rf "$W"; mkdir -p "$W/www" "$W/tmp"
cd "$W"
throwaway_cert "$W"
# The body nginx serves: a JSON-RPC result, as an MCP server's would be.
printf '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"reindex"}]}}' > www/mcp.json
cat > nginx.conf <<CONF
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
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-SHA;
    location /mcp { default_type application/json; alias $W/www/mcp.json; }
  }
}
CONF
bg NGINX nginx -c "$W/nginx.conf" -p "$W/"
wait_listen "$PORT"
capture_start lo "tcp port $PORT" "$W/tls.pcap"
export SSLKEYLOGFILE="$W/keys.txt"
: > "$W/received.tsv"
fetch() { # NAME CURL-ARGS...
  local name="$1"; shift
  curl -sk --http1.1 "$@" -o "$W/$name.body" -w '%{ssl_verify_result}' "https://localhost:$PORT/mcp" >/dev/null
  printf '%s\t%s\n' "$name" "$(base64 -w0 < "$W/$name.body")" >> "$W/received.tsv"
}
fetch tls13-aes128gcm --tlsv1.3 --tls13-ciphers TLS_AES_128_GCM_SHA256
fetch tls13-aes256gcm --tlsv1.3 --tls13-ciphers TLS_AES_256_GCM_SHA384
fetch tls13-chacha20 --tlsv1.3 --tls13-ciphers TLS_CHACHA20_POLY1305_SHA256
fetch tls12-aes128gcm --tls-max 1.2 --ciphers ECDHE-ECDSA-AES128-GCM-SHA256
fetch tls12-aes256gcm --tls-max 1.2 --ciphers ECDHE-ECDSA-AES256-GCM-SHA384
fetch tls12-chacha20 --tls-max 1.2 --ciphers ECDHE-ECDSA-CHACHA20-POLY1305
fetch tls12-aes128cbc --tls-max 1.2 --ciphers ECDHE-ECDSA-AES128-SHA
capture_stop "$CAPTURE_PID"
stop_pid "$NGINX"
cp "$W/tls.pcap" "$SAMPLES_DIR/tls-nginx-curl.pcap"
cp "$W/keys.txt" "$SAMPLES_DIR/tls-nginx-curl.keys"
# The same capture with the key log inside it, as Wireshark's editcap puts it (a pcapng
# Decryption Secrets Block): read with no --tls-keylog.
editcap --inject-secrets "tls,$W/keys.txt" "$W/tls.pcap" "$SAMPLES_DIR/tls-nginx-curl-dsb.pcapng"
python3 - "$W" "$SAMPLES_DIR/tls-nginx-curl.truth.json" <<'PY'
import base64, json, sys
w, out = sys.argv[1], sys.argv[2]
served = open(f"{w}/www/mcp.json", "rb").read()
received = [l.split("\t") for l in open(f"{w}/received.tsv").read().splitlines()]
conns = [{"name": n, "received_b64": b} for n, b in received]
assert all(base64.b64decode(c["received_b64"]) == served for c in conns), "a curl got other bytes"
json.dump({
    "served_body": served.decode(),
    "connections": conns,
    "decryptable": [c["name"] for c in conns],
    "unsupported": [],
    "keylog_lines": sum(1 for _ in open(f"{w}/keys.txt")),
}, open(out, "w"), indent=2)
print(f"{len(conns)} connections, each received the {len(served)} bytes nginx served")
PY
