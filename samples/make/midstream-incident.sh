#!/usr/bin/env bash
# Re-creates samples/midstream-incident.{pcap,truth.json}: the seed incident of
# make/seed-incident/ (its server.py and nginx.conf, and its client.py through the thin wrapper
# midstream-incident/client.py), on ports 19180 (nginx) and 19190 (seed-server), with the capture
# of the client <-> nginx leg STARTED LATE: tcpdump starts only once the client has read the
# response head of its fallback GET (the wrapper writes a marker file then). So the file has no
# initialize, no POST of request 7, no SYN and no response head of the GET stream; it has the GET
# events 1..41, the quick calls 8..19, the GET reset, the resume with Last-Event-ID 41, the replay
# of POST event 42 (the result of 19, again), the wait for 7 that never ends, the DELETE.
# seed-incident.sh itself is not touched and still makes the seed-incident samples.
source "$(dirname "$0")/_common.sh"
NAME=midstream-incident
NGINX_PORT=19180
UPSTREAM_PORT=19190
SEED="$MAKE_DIR/seed-incident"
H="$MAKE_DIR/$NAME"
need_capture_tools
need_apt python3:python3
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt_pkg nginx
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
require_free_port "$NGINX_PORT" "$UPSTREAM_PORT"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
mkdir -p "$WORK/nginx/tmp"
PCAP="$SAMPLES_DIR/$NAME.pcap"
PY=/usr/bin/python3   # the seed server and client use the standard library only

# the seed's nginx.conf with this sample's two ports
sed -e "s/server 127.0.0.1:9000;/server 127.0.0.1:$UPSTREAM_PORT;/" \
    -e "s/listen 127.0.0.1:8080;/listen 127.0.0.1:$NGINX_PORT;/" "$SEED/nginx.conf" >"$WORK/nginx.conf"
grep -q "127.0.0.1:$UPSTREAM_PORT;" "$WORK/nginx.conf" && grep -q "listen 127.0.0.1:$NGINX_PORT;" "$WORK/nginx.conf" \
  || { echo "nginx.conf of seed-incident changed shape; adjust the sed above" >&2; exit 1; }

"$PY" "$SEED/server.py" --port "$UPSTREAM_PORT" --session-seed "mcp-forensics/$NAME" \
  --truth-out "$WORK/server-truth.json" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
for _ in $(seq 100); do grep -q READY "$WORK/server.out" && break; sleep 0.1; done
grep -q READY "$WORK/server.out" || { cat "$WORK/server.err" >&2; exit 1; }
"$NGINX" -p "$WORK/nginx/" -e "$WORK/nginx/error.log" -c "$WORK/nginx.conf" &
NGINX_PID=$!; _MCPF_PIDS+=("$NGINX_PID")
wait_listen "$NGINX_PORT"

log "seed-client running; the capture starts when its fallback GET is open"
"$PY" "$H/client.py" --port "$NGINX_PORT" --truth-out "$WORK/client-truth.json" \
  --marker-file "$WORK/get-open.marker" --timeline-out "$WORK/client-timeline.json" 2>"$WORK/client.err" &
CLIENT_PID=$!; _MCPF_PIDS+=("$CLIENT_PID")
for _ in $(seq 200); do [ -f "$WORK/get-open.marker" ] && break; sleep 0.02; done
[ -f "$WORK/get-open.marker" ] || { echo "the client never opened its GET" >&2; cat "$WORK/client.err" >&2; exit 1; }
capture_start lo "tcp port $NGINX_PORT" "$PCAP"
date +%s.%N >"$WORK/capture-started"
wait "$CLIENT_PID" || { echo "client failed" >&2; cat "$WORK/client.err" >&2; exit 1; }
capture_stop "$CAPTURE_PID"
kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
kill -QUIT "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true
cp "$WORK/nginx/access.jsonl" "$WORK/access.jsonl" 2>/dev/null || true

# the seed's own checks and truth first (fails if the incident did not reproduce), then what the
# late start leaves outside the file
"$PY" "$SEED/truth.py" "$NAME" buggy "$WORK/client-truth.json" "$WORK/server-truth.json" "$WORK/seed-truth.json"
"$PY" "$H/truth.py" "$WORK/seed-truth.json" "$WORK/client-timeline.json" "$WORK/get-open.marker" \
  "$WORK/capture-started" "$SAMPLES_DIR/$NAME.truth.json" "$NGINX_PORT" "$UPSTREAM_PORT"
tshark_counts "$PCAP" "$NGINX_PORT"
