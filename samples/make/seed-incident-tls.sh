#!/usr/bin/env bash
# Re-creates samples/seed-incident-tls-client-leg.pcap + .keys, samples/seed-incident-tls-server-
# leg.pcap and samples/seed-incident-tls.truth.json: the seed incident (make/seed-incident/:
# seed-client, the buffering nginx, seed-server in buggy mode) with nginx terminating TLS:
#   seed-client --HTTPS :18450--> nginx (make/seed-incident/nginx.conf, listen ... ssl) --HTTP
#   :18451--> seed-server
# The client's key log comes from Python's ssl module (SSLKEYLOGFILE); the certificate is made
# here and thrown away. Decrypted, the client leg must give the findings the plaintext seed
# incident gives; without its key log, nothing.
source "$(dirname "$0")/_common.sh"
NAME=seed-incident-tls
SEED_NAME=seed-incident   # the same session IDs as the plaintext seed incident
TPORT=18450
SPORT=18451
need_capture_tools
need_apt nginx:nginx openssl:openssl
require_free_port "$TPORT" "$SPORT"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
throwaway_cert "$WORK"
seed_nginx_conf "$TPORT" "$SPORT" "$WORK/nginx.conf"
sed -i "s|listen 127.0.0.1:$TPORT;|listen 127.0.0.1:$TPORT ssl; ssl_certificate $WORK/ec.crt; ssl_certificate_key $WORK/ec.key; ssl_buffer_size 4k;|" \
  "$WORK/nginx.conf"
grep -q "listen 127.0.0.1:$TPORT ssl;" "$WORK/nginx.conf" || { log "could not add TLS to nginx.conf"; exit 1; }
start_seed_server "$SPORT"
run_nginx "$WORK/nginx" "$WORK/nginx.conf" "$TPORT"
capture_start lo "tcp port $TPORT" "$SAMPLES_DIR/$NAME-client-leg.pcap"; C1=$CAPTURE_PID
capture_start lo "tcp port $SPORT" "$SAMPLES_DIR/$NAME-server-leg.pcap"; C2=$CAPTURE_PID
SSLKEYLOGFILE="$WORK/keys.txt" /usr/bin/python3 "$MAKE_DIR/seed-incident/client.py" --port "$TPORT" \
  --tls-ca "$WORK/ec.crt" --truth-out "$WORK/seed-client.json" 2>"$WORK/seed-client.err" \
  || { log "seed-client failed"; tail -20 "$WORK/seed-client.err" >&2; exit 1; }
capture_stop "$C1"; capture_stop "$C2"
stop_seed_behind_nginx
cp "$WORK/keys.txt" "$SAMPLES_DIR/$NAME.keys"; chmod 644 "$SAMPLES_DIR/$NAME.keys"
/usr/bin/python3 "$MAKE_DIR/seed-incident/truth.py" "$NAME" buggy "$WORK/seed-client.json" \
  "$WORK/seed-server.json" "$SAMPLES_DIR/$NAME.truth.json"
