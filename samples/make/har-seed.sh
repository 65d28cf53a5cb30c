#!/usr/bin/env bash
# Re-creates samples/seed-incident.mitmproxy.har, samples/seed-incident.mitmproxy.sanitized.har and
# samples/har-seed.truth.json: the seed incident seen by mitmproxy, in the HAR it writes.
#
#   seed-client --> mitmdump 127.0.0.1:18601 (reverse proxy, --set hardump, make/mitmproxy-har/record_sse.py)
#     --> nginx 127.0.0.1:18602 (make/seed-incident/nginx.conf, buffering, ports rewritten)
#     --> seed-server 127.0.0.1:18603 (buggy mode)
#
# mitmdump sits where the client's browser or SDK would be recording: it sees what the client saw.
# The buffering comes from the nginx behind it. The sanitised copy is what a browser's default
# export would keep (make/mitmproxy-har/sanitize.py, no body dropped). The truth is merged from the
# client's and server's own records (make/har-seed/truth.py), never from the HAR.
#
# Needs root (apt-get nginx). Uses TCP ports 18601-18603 only. Takes about 20 s.
source "$(dirname "$0")/_common.sh"
NAME=har-seed
HAR_NAME=seed-incident.mitmproxy
H="$MAKE_DIR/mitmproxy-har"
PROXY_PORT=18601; NGINX_PORT=18602; SEED_PORT=18603

need_apt nginx:nginx
require_free_port "$PROXY_PORT" "$NGINX_PORT" "$SEED_PORT"
MITM_PY="$(py_venv mitmproxy "$H/requirements.mitmproxy.txt")"
MITMDUMP="$(dirname "$MITM_PY")/mitmdump"
MITM_VERSION="$("$MITM_PY" -c 'from mitmproxy import version; print(version.VERSION)')"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
log "scratch: $WORK"

start_seed_behind_nginx "$NGINX_PORT" "$SEED_PORT"
# A fresh confdir: mitmproxy writes its CA there on first start (unused: plain HTTP only).
"$MITMDUMP" --mode "reverse:http://127.0.0.1:$NGINX_PORT" --listen-host 127.0.0.1 -p "$PROXY_PORT" \
  --set confdir="$WORK/mitmproxy" --set hardump="$WORK/raw.har" -s "$H/record_sse.py" -q \
  >"$WORK/mitmdump.log" 2>&1 &
PROXY_PID=$!; _MCPF_PIDS+=("$PROXY_PID")
wait_listen "$PROXY_PORT"

log "seed-client -> mitmdump :$PROXY_PORT -> nginx :$NGINX_PORT -> seed-server :$SEED_PORT"
run_seed_client "$PROXY_PORT"
sleep 0.5
# SIGINT: mitmdump writes the HAR on a clean shutdown.
kill -INT "$PROXY_PID"; wait "$PROXY_PID" || true
stop_seed_behind_nginx
[ -s "$WORK/raw.har" ] || { log "mitmdump wrote no HAR; see $WORK/mitmdump.log"; exit 1; }

cp "$WORK/raw.har" "$SAMPLES_DIR/$HAR_NAME.har"
/usr/bin/python3 "$H/sanitize.py" "$SAMPLES_DIR/$HAR_NAME.har" "$SAMPLES_DIR/$HAR_NAME.sanitized.har"
/usr/bin/python3 "$MAKE_DIR/$NAME/truth.py" --work "$WORK" --mitmproxy-version "$MITM_VERSION" \
    --topology "seed-client -> mitmdump $MITM_VERSION 127.0.0.1:$PROXY_PORT (reverse proxy, hardump, record_sse.py) -> nginx 127.0.0.1:$NGINX_PORT (samples/make/seed-incident/nginx.conf: proxy_buffering on, upstream HTTP/1.0) -> seed-server 127.0.0.1:$SEED_PORT" \
    --har "samples/$HAR_NAME.har" --sanitized-har "samples/$HAR_NAME.sanitized.har" \
    --out "$SAMPLES_DIR/$NAME.truth.json"
for f in "$HAR_NAME.har" "$HAR_NAME.sanitized.har"; do
  log "$f: $(stat -c %s "$SAMPLES_DIR/$f") bytes"
done
