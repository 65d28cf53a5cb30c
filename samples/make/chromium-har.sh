#!/usr/bin/env bash
# Re-creates samples/seed-incident.chromium.har, samples/seed-incident.chromium.sanitized.har,
# samples/chromium-ts-sdk-healthy.har and samples/chromium-har.truth.json: HAR files written by
# Chromium itself, of the seed incident and of a healthy session of the official SDKs.
#
#   seed:    page seed-client.html (make/chromium-har/seed-client.js: the seed script, fetch())
#              --> nginx 127.0.0.1:18611 (make/seed-incident/nginx.conf, buffering; serves the page)
#              --> seed-server 127.0.0.1:18612 (buggy mode)
#   healthy: page sdk-client.html (4 sessions of the official TypeScript SDK client at once, bundled by esbuild)
#              --> nginx 127.0.0.1:18613 (the same conf with buffering off, HTTP/1.1 upstream)
#              --> the official Python SDK server 127.0.0.1:18614 (make/mitmproxy-har/server.py)
#
# The healthy HAR records the page and /mcp only (recordHar's urlFilter): the SDK bundle would
# be 300 KB of it. Chromium is Debian's, headless, driven by playwright-core; the HARs are written by Playwright's
# recordHar from Chromium's DevTools-protocol network events: what the browser saw, with its own
# timings and failure texts. The sanitised copy is what a browser's export would keep
# (make/mitmproxy-har/sanitize.py). The truth is merged from what the pages and the servers
# recorded during the run (make/chromium-har/truth.py), never from the HARs.
#
# Needs root (apt-get nginx chromium). Uses TCP ports 18611-18614 only. Takes about 40 s.
source "$(dirname "$0")/_common.sh"
NAME=chromium-har
SEED_HAR=seed-incident.chromium
HEALTHY_HAR=chromium-ts-sdk-healthy
H="$MAKE_DIR/$NAME"
NGINX_PORT=18611; SEED_PORT=18612; NGINX2_PORT=18613; SDK_PORT=18614

need_apt nginx:nginx chromium:chromium node:nodejs npm:npm
require_free_port "$NGINX_PORT" "$SEED_PORT" "$NGINX2_PORT" "$SDK_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
PW="$SCRATCH/chromium-har-node"
stamp="$(cat "$H/package.json" "$H/package-lock.json" | sha256sum | cut -c1-16)"
if [ ! -f "$PW/.stamp-$stamp" ]; then
  log "npm ci in $PW (no browser download: Debian's Chromium is used)"
  rm -rf "$PW"; mkdir -p "$PW"
  cp "$H/package.json" "$H/package-lock.json" "$PW/"
  (cd "$PW" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent) >&2
  touch "$PW/.stamp-$stamp"
fi
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
log "scratch: $WORK"

mkdir -p "$WORK/www" "$PW/$NAME"
cp "$H/record.mjs" "$PW/"
cp "$MAKE_DIR/_node/fetchtap.mjs" "$PW/"
cp "$H/sdk-client.mjs" "$PW/$NAME/"
cp "$H/seed-client.html" "$H/seed-client.js" "$H/sdk-client.html" "$WORK/www/"
"$PW/node_modules/.bin/esbuild" "$PW/$NAME/sdk-client.mjs" --bundle --minify --format=iife --platform=browser \
    --log-level=warning --outfile="$WORK/www/sdk-client.bundle.js"

# nginx_conf MODE LISTEN UPSTREAM OUT: make/seed-incident/nginx.conf on our ports, also serving the
# pages (one origin: fetch() sends no CORS preflight). MODE healthy turns buffering off and speaks
# HTTP/1.1 upstream, as a proxy for MCP should, and keeps the Host header's port (the Python SDK
# checks Host against 127.0.0.1:*, against DNS rebinding).
nginx_conf() {
  local mode="$1" out="$4"
  local pages="s#^\(        location /mcp {\)#        location ~ ^/(seed|sdk)-client\\\\. { root $WORK/www; }\n\1#"
  [ "$mode" = healthy ] && pages="$pages; s/proxy_buffering on;/proxy_buffering off; proxy_http_version 1.1; proxy_set_header Connection \"\";/; s/proxy_set_header Host \$host;/proxy_set_header Host \$http_host;/"
  seed_nginx_conf "$2" "$3" "$out" "$pages"
  grep -q "client" "$out" && { [ "$mode" != healthy ] || grep -q "proxy_buffering off;" "$out"; } \
    || { log "could not rewrite seed-incident/nginx.conf for $mode"; exit 1; }
}

# record PAGE_URL HAR TRUTH OPTIONS [URL_REGEX]: the page's client in Chromium; echoes the versions.
record() {
  node "$PW/record.mjs" "$@" 2>>"$WORK/record.err" \
    || { log "record.mjs failed on $1"; tail -20 "$WORK/record.err" >&2; exit 1; }
}

log "seed: chromium page -> nginx :$NGINX_PORT -> seed-server :$SEED_PORT"
nginx_conf seed "$NGINX_PORT" "$SEED_PORT" "$WORK/nginx-seed.conf"
start_seed_server "$SEED_PORT"
run_nginx "$WORK/nginx-seed" "$WORK/nginx-seed.conf" "$NGINX_PORT"
VERSIONS="$(record "http://127.0.0.1:$NGINX_PORT/seed-client.html" "$WORK/seed.har" "$WORK/seed-client.json" \
    '{"postTimeoutMs":1500,"dropAfter":41,"quickSpacingMs":150,"reconnectDelayMs":3000,"resumeWaitMs":4000}')"
stop_seed_behind_nginx

log "healthy: chromium page (TypeScript SDK) -> nginx :$NGINX2_PORT -> Python SDK server :$SDK_PORT"
nginx_conf healthy "$NGINX2_PORT" "$SDK_PORT" "$WORK/nginx-healthy.conf"
(cd "$MAKE_DIR/mitmproxy-har" && exec "$PY" server.py "$SDK_PORT" "$WORK/sdk-events.jsonl") >"$WORK/sdk-server.log" 2>&1 &
SDK_SERVER=$!; _MCPF_PIDS+=("$SDK_SERVER")
wait_listen "$SDK_PORT"
run_nginx "$WORK/nginx-healthy" "$WORK/nginx-healthy.conf" "$NGINX2_PORT"
record "http://127.0.0.1:$NGINX2_PORT/sdk-client.html" "$WORK/healthy.har" "$WORK/sdk-client.json" \
    '{"steps":5,"sessions":4,"staggerMs":150}' '/(mcp|sdk-client\.html)$' >/dev/null
stop_nginx
stop_pid "$SDK_SERVER"

for f in seed healthy; do [ -s "$WORK/$f.har" ] || { log "Playwright wrote no $f HAR; see $WORK/record.err"; exit 1; }; done
cp "$WORK/seed.har" "$SAMPLES_DIR/$SEED_HAR.har"
cp "$WORK/healthy.har" "$SAMPLES_DIR/$HEALTHY_HAR.har"
/usr/bin/python3 "$MAKE_DIR/mitmproxy-har/sanitize.py" "$SAMPLES_DIR/$SEED_HAR.har" "$SAMPLES_DIR/$SEED_HAR.sanitized.har"
/usr/bin/python3 "$H/truth.py" --work "$WORK" --versions "$VERSIONS" \
    --seed-topology "Chromium (headless, playwright-core recordHar) page http://127.0.0.1:$NGINX_PORT/seed-client.html -> nginx 127.0.0.1:$NGINX_PORT (samples/make/seed-incident/nginx.conf: proxy_buffering on, upstream HTTP/1.0; also serves the page) -> seed-server 127.0.0.1:$SEED_PORT" \
    --healthy-topology "Chromium (headless, playwright-core recordHar) page http://127.0.0.1:$NGINX2_PORT/sdk-client.html (@modelcontextprotocol/sdk $(node -p "require('$PW/node_modules/@modelcontextprotocol/sdk/package.json').version"), esbuild bundle) -> nginx 127.0.0.1:$NGINX2_PORT (proxy_buffering off, upstream HTTP/1.1) -> Python SDK server mcp $MCPF_PY_MCP_VERSION 127.0.0.1:$SDK_PORT (samples/make/mitmproxy-har/server.py)" \
    --seed-har "samples/$SEED_HAR.har" --sanitized-har "samples/$SEED_HAR.sanitized.har" \
    --healthy-har "samples/$HEALTHY_HAR.har" --out "$SAMPLES_DIR/$NAME.truth.json"
for f in "$SEED_HAR.har" "$SEED_HAR.sanitized.har" "$HEALTHY_HAR.har"; do
  log "$f: $(stat -c %s "$SAMPLES_DIR/$f") bytes"
done
log "recorded with $VERSIONS"
