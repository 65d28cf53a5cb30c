#!/usr/bin/env bash
# Re-creates samples/seed-incident-backoff{-client-leg.pcap,-server-leg.pcap,.nginx.jsonl,.truth.json}
# and samples/seed-incident-backoff-2h.pcap: the seed incident of make/seed-incident.sh (the same
# seed-server, seed-client and nginx.conf, unchanged: the config is copied with its two ports
# replaced), except that the client waits 45 s, not 3 s, between its GET being cut and the
# Last-Event-ID resume. Both legs therefore hold 45 s of silence before the resume. Then
# make/timeshift.py moves every client-leg packet after the middle of that silence 2 h later:
# samples/seed-incident-backoff-2h.pcap (the same bytes and the same findings, with a 2 h back-off).
#
#   seed-client -> nginx 127.0.0.1:18301 (proxy_buffering on, HTTP/1.0 upstream) -> seed-server 127.0.0.1:18302
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18301 and 18302 only.
# Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}. Takes about 65 s.
source "$(dirname "$0")/_common.sh"
NAME=seed-incident-backoff
SEED="$MAKE_DIR/seed-incident"
NGINX_PORT=18301
UPSTREAM_PORT=18302
BACKOFF=45          # seconds between the GET drop and the resume
SHIFT=7200          # the -2h copy: seconds added after the middle of the silence

need_capture_tools
need_apt nginx:nginx python3:python3
require_free_port "$NGINX_PORT" "$UPSTREAM_PORT"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
PY=/usr/bin/python3   # seed-server and seed-client use the standard library only
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$WORK/nginx/tmp"
CLIENT_PCAP="$SAMPLES_DIR/$NAME-client-leg.pcap"
SERVER_PCAP="$SAMPLES_DIR/$NAME-server-leg.pcap"
SHIFTED="$SAMPLES_DIR/$NAME-2h.pcap"
log "scratch: $WORK"

# seed-incident/nginx.conf with our two ports; nothing else changes.
grep -q 'listen 127.0.0.1:8080;' "$SEED/nginx.conf" && grep -q 'server 127.0.0.1:9000;' "$SEED/nginx.conf" || {
  log "seed-incident/nginx.conf no longer has the ports this script replaces"; exit 1; }
sed -e "s/listen 127.0.0.1:8080;/listen 127.0.0.1:$NGINX_PORT;/" \
    -e "s/server 127.0.0.1:9000;/server 127.0.0.1:$UPSTREAM_PORT;/" "$SEED/nginx.conf" >"$WORK/nginx.conf"

"$PY" "$MAKE_DIR/concurrent-nginx/seed_wrap.py" server --port "$UPSTREAM_PORT" --session-seed "mcp-forensics/$NAME" \
    --truth-out "$WORK/server-truth.json" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$UPSTREAM_PORT"
"$NGINX" -p "$WORK/nginx/" -e "$WORK/nginx/error.log" -c "$WORK/nginx.conf" &
NGINX_PID=$!; _MCPF_PIDS+=("$NGINX_PID")
wait_listen "$NGINX_PORT"

capture_start lo "tcp port $NGINX_PORT" "$CLIENT_PCAP"; CAP_C=$CAPTURE_PID
capture_start lo "tcp port $UPSTREAM_PORT" "$SERVER_PCAP"; CAP_S=$CAPTURE_PID
sleep 0.3

log "running seed-client with a $BACKOFF s back-off before the resume"
"$PY" "$MAKE_DIR/concurrent-nginx/seed_wrap.py" client --port "$NGINX_PORT" --reconnect-delay "$BACKOFF" \
    --truth-out "$WORK/client-truth.json" 2>"$WORK/client.err" || {
  log "client failed"; tail -20 "$WORK/client.err" >&2; exit 1; }

sleep 1; kill -INT "$CAP_C" "$CAP_S"; wait "$CAP_C" "$CAP_S" || true
kill -QUIT "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true
stop_pid "$SERVER_PID"

cp "$WORK/nginx/access.jsonl" "$SAMPLES_DIR/$NAME.nginx.jsonl"
"$PY" "$MAKE_DIR/timeshift.py" "$CLIENT_PCAP" "$SHIFTED" --offset "$SHIFT" --at-largest-gap 2>"$WORK/timeshift.log"
cat "$WORK/timeshift.log" >&2
# The seed incident's own merge and checks, then what this variant adds.
"$PY" "$SEED/truth.py" "$NAME" buggy "$WORK/client-truth.json" "$WORK/server-truth.json" "$WORK/seed.truth.json"
"$PY" "$MAKE_DIR/$NAME/truth.py" "$WORK/seed.truth.json" "$WORK/client-truth.json" "$BACKOFF" "$SHIFT" \
    "$WORK/timeshift.log" "$SAMPLES_DIR/$NAME.truth.json"
tshark_counts "$CLIENT_PCAP" "$NGINX_PORT"
tshark_counts "$SERVER_PCAP" "$UPSTREAM_PORT"
tshark_counts "$SHIFTED" "$NGINX_PORT"
