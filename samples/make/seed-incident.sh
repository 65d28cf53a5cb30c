#!/usr/bin/env bash
# Re-create the seed-incident samples from real loopback traffic:
#   seed-server (samples/make/seed-incident/server.py, upstream 127.0.0.1:9000)
#   <- nginx (buffering proxy, samples/make/seed-incident/nginx.conf, 127.0.0.1:8080)
#   <- seed-client (samples/make/seed-incident/client.py)
# with one tcpdump per leg.
#
#   samples/make/seed-incident.sh               -> samples/seed-incident{-client-leg.pcap,-server-leg.pcap,.nginx.jsonl,.truth.json}
#   samples/make/seed-incident.sh --namespaced  -> samples/namespaced-ids{...}  (negative control)
#
# Needs root (tcpdump on lo, apt-get). Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}/<name>.
# Takes about 15 s per run.
set -euo pipefail

MODE=buggy
NAME=seed-incident
SERVER_FLAGS=()
case "${1:-}" in
  "") ;;
  --namespaced) MODE=namespaced; NAME=namespaced-ids; SERVER_FLAGS=(--namespaced) ;;
  *) echo "usage: $0 [--namespaced]" >&2; exit 2 ;;
esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MAKE=$HERE/seed-incident
SAMPLES=$(dirname "$HERE")
SCRATCH=${MCPF_SCRATCH:-/tmp/mcpf-scratch}
RUN=$SCRATCH/$NAME
NGINX_PORT=8080     # must match nginx.conf "listen"
UPSTREAM_PORT=9000  # must match nginx.conf "upstream"

log() { echo "[$NAME] $*" >&2; }

# --- packages ---------------------------------------------------------------
missing=()
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
command -v nginx   >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PY=python3
# The server and client use the standard library only; a venv is made only if
# requirements.txt ever lists a package.
if grep -qvE '^\s*(#|$)' "$MAKE/requirements.txt"; then
  if [ ! -x "$SCRATCH/venv/bin/python" ]; then
    $PY -m venv "$SCRATCH/venv" 2>/dev/null || {
      DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv; $PY -m venv "$SCRATCH/venv"; }
  fi
  "$SCRATCH/venv/bin/pip" install -q -r "$MAKE/requirements.txt"
  PY=$SCRATCH/venv/bin/python
fi

# --- helpers ------------------------------------------------------------------
listening() {  # port -> 0 if something listens on it (reads /proc, opens no connection)
  $PY - "$1" <<'EOF'
import sys
port = "%04X" % int(sys.argv[1])
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        for line in open(f).readlines()[1:]:
            p = line.split()
            if p[1].rsplit(":", 1)[1] == port and p[3] == "0A":
                sys.exit(0)
    except OSError:
        pass
sys.exit(1)
EOF
}
wait_for() {  # seconds command...
  local n=$(( $1 * 10 )); shift
  for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
  return 1
}

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

for port in $NGINX_PORT $UPSTREAM_PORT; do
  if listening "$port"; then log "port $port is already in use"; exit 1; fi
done

rm -rf "$RUN"
mkdir -p "$RUN/nginx/tmp"

# --- server and nginx -----------------------------------------------------------
log "starting seed-server ($MODE) on 127.0.0.1:$UPSTREAM_PORT"
$PY "$MAKE/server.py" --port "$UPSTREAM_PORT" "${SERVER_FLAGS[@]}" \
    --session-seed "mcp-forensics/$NAME" --truth-out "$RUN/server-truth.json" \
    >"$RUN/server.out" 2>"$RUN/server.err" &
SERVER_PID=$!; PIDS+=("$SERVER_PID")
wait_for 10 grep -q READY "$RUN/server.out" || { log "server did not start"; cat "$RUN/server.err" >&2; exit 1; }

log "starting nginx on 127.0.0.1:$NGINX_PORT"
"$NGINX" -p "$RUN/nginx/" -e "$RUN/nginx/error.log" -c "$MAKE/nginx.conf" &
NGINX_PID=$!; PIDS+=("$NGINX_PID")
wait_for 10 listening "$NGINX_PORT" || { log "nginx did not start"; cat "$RUN/nginx/error.log" >&2; exit 1; }

# --- captures ------------------------------------------------------------------------
tcpdump -i lo -U -s 0 -w "$RUN/client-leg.pcap" "tcp port $NGINX_PORT" 2>"$RUN/tcpdump-client.err" &
TCPDUMP_C=$!; PIDS+=("$TCPDUMP_C")
tcpdump -i lo -U -s 0 -w "$RUN/server-leg.pcap" "tcp port $UPSTREAM_PORT" 2>"$RUN/tcpdump-server.err" &
TCPDUMP_S=$!; PIDS+=("$TCPDUMP_S")
wait_for 10 grep -q "listening on" "$RUN/tcpdump-client.err" || { log "tcpdump (client leg) did not start"; exit 1; }
wait_for 10 grep -q "listening on" "$RUN/tcpdump-server.err" || { log "tcpdump (server leg) did not start"; exit 1; }
sleep 0.5

# --- the incident ----------------------------------------------------------------------
log "running seed-client"
$PY "$MAKE/client.py" --port "$NGINX_PORT" --truth-out "$RUN/client-truth.json" 2>"$RUN/client.err" || {
  log "client failed"; cat "$RUN/client.err" >&2; exit 1; }

sleep 1
kill -INT "$TCPDUMP_C" "$TCPDUMP_S"
wait "$TCPDUMP_C" "$TCPDUMP_S" 2>/dev/null || true
kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
kill -QUIT "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true
PIDS=()

# --- results ------------------------------------------------------------------------------
cp "$RUN/client-leg.pcap" "$SAMPLES/$NAME-client-leg.pcap"
cp "$RUN/server-leg.pcap" "$SAMPLES/$NAME-server-leg.pcap"
cp "$RUN/nginx/access.jsonl" "$SAMPLES/$NAME.nginx.jsonl"
$PY "$MAKE/truth.py" "$NAME" "$MODE" "$RUN/client-truth.json" "$RUN/server-truth.json" \
    "$SAMPLES/$NAME.truth.json"

if command -v tshark >/dev/null 2>&1; then
  for leg in client-leg:$NGINX_PORT server-leg:$UPSTREAM_PORT; do
    f=$SAMPLES/$NAME-${leg%%:*}.pcap; p=${leg##*:}
    req=$(tshark -r "$f" -d "tcp.port==$p,http" -Y http.request 2>/dev/null | wc -l)
    resp=$(tshark -r "$f" -d "tcp.port==$p,http" -o http.desegment_body:FALSE -Y http.response 2>/dev/null | wc -l)
    streams=$(tshark -r "$f" -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
    log "$(basename "$f"): $(stat -c %s "$f") bytes, $req HTTP requests, $resp response heads, $streams TCP streams"
  done
fi
log "done: $SAMPLES/$NAME-client-leg.pcap $SAMPLES/$NAME-server-leg.pcap $SAMPLES/$NAME.nginx.jsonl $SAMPLES/$NAME.truth.json"
