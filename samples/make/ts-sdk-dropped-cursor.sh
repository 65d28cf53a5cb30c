#!/usr/bin/env bash
# Re-creates samples/ts-sdk-dropped-cursor.pcap (client <-> relay, port 3012),
# samples/ts-sdk-dropped-cursor-server-leg.pcap (relay <-> server, port 3011) and the truth file:
# typescript-sdk issue #2499 with the real SDK. Official TypeScript SDK server + client (pinned in
# _node/), a relay of our own that RSTs the tools/call POST stream after 3 events (priming +
# 2 progress), then RSTs the client's first resume (GET + Last-Event-ID) right after its response
# head, before any event. The client's next reconnect GETs carry no Last-Event-ID; the server
# answers them 409 (the standalone GET stream is open), the client gives up after 2 and the
# tools/call is never answered (it times out after 5 s on the client).
source "$(dirname "$0")/_common.sh"
NAME=ts-sdk-dropped-cursor
SPORT=3011
RPORT=3012
need_capture_tools
require_free_port "$SPORT" "$RPORT"
D="$(node_deps "$NAME")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"
LEG="$SAMPLES_DIR/$NAME-server-leg.pcap"

# The server of ts-sdk-resumption, as it is (the same SDK, store and tools), under its own name.
cp "$MAKE_DIR/ts-sdk-resumption/server.mjs" "$D/server.mjs"
(cd "$D" && exec node server.mjs "$SPORT" "$WORK/server.jsonl" mcpf-ts-dropped-cursor) >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
(cd "$D" && exec node relay.mjs "$RPORT" "$SPORT" "$WORK/relay.jsonl" '"name":"countdown"' 3 200) >"$WORK/relay.log" 2>&1 &
RELAY_PID=$!; _MCPF_PIDS+=("$RELAY_PID")
wait_listen "$SPORT"
wait_listen "$RPORT"
capture_start lo "tcp port $RPORT" "$PCAP"; C1=$CAPTURE_PID
capture_start lo "tcp port $SPORT" "$LEG"; C2=$CAPTURE_PID
sleep 0.3
(cd "$D" && node client.mjs "http://127.0.0.1:$RPORT/mcp" "$WORK/client.jsonl")
sleep 1; kill -INT "$C1" "$C2"; wait "$C1" "$C2" || true
stop_pid "$RELAY_PID"; stop_pid "$SERVER_PID"
log "logs in $WORK"
/usr/bin/python3 "$MAKE_DIR/$NAME/truth.py" "$WORK/client.jsonl" "$WORK/server.jsonl" "$WORK/relay.jsonl" \
  "$SAMPLES_DIR/$NAME.truth.json" "$RPORT" "$SPORT"
tshark_counts "$PCAP" "$RPORT"
tshark_counts "$LEG" "$SPORT"
