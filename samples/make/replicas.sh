#!/usr/bin/env bash
# Re-creates, for each VARIANT of own-store, 404 and shared-store:
#   samples/replicas-VARIANT-client-leg.pcap  (clients <-> nginx, port 18711)
#   samples/replicas-VARIANT-server-leg.pcap  (nginx <-> both replicas, ports 18712 and 18713, one file)
#   samples/replicas-VARIANT.nginx.jsonl      (nginx's JSON access log, with $upstream_addr)
#   samples/replicas-VARIANT.truth.json
#
#   official Python SDK client sessions (make/replicas/clients.py, one process)
#     --> nginx 127.0.0.1:18711 (one worker, round robin, no stickiness, proxy_next_upstream off)
#     --> two replicas of the official Python SDK server (make/replicas/replica.py):
#         A 127.0.0.1:18712, B 127.0.0.1:18713
#
# Each replica's `poll_count` tool closes its own POST stream after 2 progress notifications
# (SEP-1699 polling, `retry: 1500`); the SDK client comes back with GET + Last-Event-ID, which
# nginx routes to the OTHER replica (the incident session is alone on the wire then, and the
# one worker's round robin alternates).
#   own-store:    the replicas accept each other's sessions (signed session IDs, adopted on first
#                 sight) but each keeps its own event store, integer IDs per session: the other
#                 replica answers the resume with ITS OWN events after that ID (the end of an
#                 earlier call's stream: a duplicate response the SDK takes as the poll's result),
#                 and the poll's own events and result are never delivered. 3 healthy sessions too.
#   404:          the SDK's own sessions: the other replica answers the resume 404 (nothing
#                 replayed); the SDK's next try reaches the minting replica, which replays the rest.
#   shared-store: signed session IDs and ONE event store for both (make/replicas/store.py on a Unix
#                 socket): the other replica replays the minting replica's events byte for byte.
#                 3 healthy sessions too.
# The truth is merged from the clients' taps, the replicas' logs, the store's log and nginx's log
# (make/replicas/truth.py), never from the captures; a run that did not show what its variant is
# for (a timing slip put another request between the poll and its resume) is run again.
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18711-18713 only. Takes about 75 s.
# usage: replicas.sh [VARIANT...]   (default: all three)
source "$(dirname "$0")/_common.sh"
H="$MAKE_DIR/replicas"
NGINX_PORT=18711; A_PORT=18712; B_PORT=18713   # must match replicas/nginx.conf
VARIANTS=("$@"); [ "${#VARIANTS[@]}" -gt 0 ] || VARIANTS=(own-store 404 shared-store)

need_capture_tools
need_apt nginx:nginx
require_free_port "$NGINX_PORT" "$A_PORT" "$B_PORT"
PY="$(py_venv "py-mcp-$MCPF_PY_MCP_VERSION" "$MAKE_DIR/python-sdk-healthy/requirements.lock.txt")"
TOP="$(mktemp -d "$SCRATCH/replicas.XXXXXX")"
log "scratch: $TOP"

# run_variant VARIANT WORK: one run; its files in $SAMPLES_DIR, its records in WORK.
run_variant() {
  local v="$1" w="$2" sessions store healthy store_args=() name="replicas-$1"
  case "$v" in
    own-store)    sessions=signed; store=own;    healthy=3 ;;
    404)          sessions=local;  store=own;    healthy=0 ;;
    shared-store) sessions=signed; store=shared; healthy=3 ;;
    *) log "unknown variant $v"; exit 2 ;;
  esac
  mkdir -p "$w"
  if [ "$store" = shared ]; then
    bg STORE /usr/bin/python3 "$H/store.py" "$w/store.sock" "$w/store.jsonl"
    for _ in $(seq 1 100); do [ -S "$w/store.sock" ] && break; sleep 0.05; done
    store_args=(--store-socket "$w/store.sock")
  fi
  bg REPLICA_A "$PY" "$H/replica.py" A "$A_PORT" "$w/replica-A.jsonl" --sessions "$sessions" --store "$store" \
      "${store_args[@]}" >"$w/replica-A.log" 2>&1
  bg REPLICA_B "$PY" "$H/replica.py" B "$B_PORT" "$w/replica-B.jsonl" --sessions "$sessions" --store "$store" \
      "${store_args[@]}" >"$w/replica-B.log" 2>&1
  wait_listen "$A_PORT"; wait_listen "$B_PORT"
  run_nginx "$w/nginx" "$H/nginx.conf" "$NGINX_PORT"
  capture_start lo "tcp port $NGINX_PORT" "$SAMPLES_DIR/$name-client-leg.pcap"; local cap_c=$CAPTURE_PID
  capture_start lo "tcp port $A_PORT or tcp port $B_PORT" "$SAMPLES_DIR/$name-server-leg.pcap"; local cap_s=$CAPTURE_PID
  sleep 0.3
  log "$v: $((healthy + 1)) Python SDK sessions -> nginx :$NGINX_PORT -> replicas :$A_PORT, :$B_PORT ($sessions sessions, $store store)"
  "$PY" "$H/clients.py" "http://127.0.0.1:$NGINX_PORT/mcp" "$healthy" "$w/clients.jsonl" >"$w/clients.log" 2>&1 \
    || { log "the clients failed"; tail -20 "$w/clients.log" >&2; }
  capture_stop "$cap_c"; capture_stop "$cap_s"
  stop_nginx
  stop_pid "$REPLICA_A"; stop_pid "$REPLICA_B"
  [ "$store" = shared ] && stop_pid "$STORE"
  cp "$w/nginx/access.jsonl" "$SAMPLES_DIR/$name.nginx.jsonl"
  /usr/bin/python3 "$H/truth.py" "$v" "$w" "$SAMPLES_DIR/$name.truth.json"
}

for v in "${VARIANTS[@]}"; do
  ok=0
  for attempt in 1 2 3; do
    if run_variant "$v" "$TOP/$v.$attempt"; then ok=1; break; fi
    log "$v: attempt $attempt did not show the variant; again"
  done
  [ "$ok" = 1 ] || { log "$v: failed three times (records under $TOP)"; exit 1; }
  name="replicas-$v"
  tshark_counts "$SAMPLES_DIR/$name-client-leg.pcap" "$NGINX_PORT"
  # the server leg: both replicas' ports decoded as HTTP
  f="$SAMPLES_DIR/$name-server-leg.pcap"
  req=$(_tc "$f" -d "tcp.port==$A_PORT,http" -d "tcp.port==$B_PORT,http" -Y http.request -T fields -e http.request.method)
  resp=$(_tc "$f" -d "tcp.port==$A_PORT,http" -d "tcp.port==$B_PORT,http" -Y http.response -T fields -e http.response.code)
  resph=$(_tc "$f" -d "tcp.port==$A_PORT,http" -d "tcp.port==$B_PORT,http" -o http.desegment_body:FALSE -Y http.response -T fields -e http.response.code)
  streams=$(tshark -r "$f" -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
  echo "$(basename "$f"): http.request=$req http.response=$resp (desegment_body:FALSE: $resph) tcp.streams=$streams size=$(stat -c %s "$f")B"
  echo "$name.nginx.jsonl: $(wc -l <"$SAMPLES_DIR/$name.nginx.jsonl") lines, $(stat -c %s "$SAMPLES_DIR/$name.nginx.jsonl")B"
done
