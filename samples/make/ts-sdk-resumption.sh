#!/usr/bin/env bash
# Re-creates samples/ts-sdk-resumption.pcap (client <-> relay, port 3002),
# samples/ts-sdk-resumption-server-leg.pcap (relay <-> server, port 3001) and the truth file:
# official TypeScript SDK server + client (pinned in _node/), a relay of our own that RSTs the
# tools/call POST stream after 4 events; the client resumes with GET + Last-Event-ID.
source "$(dirname "$0")/_common.sh"
NAME=ts-sdk-resumption
SPORT=3001
RPORT=3002
need_capture_tools
require_free_port "$SPORT" "$RPORT"
D="$(node_deps "$NAME")"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"
LEG="$SAMPLES_DIR/$NAME-server-leg.pcap"

(cd "$D" && exec node server.mjs "$SPORT" "$WORK/server.jsonl") >"$WORK/server.log" 2>&1 &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
(cd "$D" && exec node relay.mjs "$RPORT" "$SPORT" "$WORK/relay.jsonl" '"name":"countdown"' 4 200) >"$WORK/relay.log" 2>&1 &
RELAY_PID=$!; _MCPF_PIDS+=("$RELAY_PID")
wait_listen "$SPORT"
wait_listen "$RPORT"
capture_start lo "tcp port $RPORT" "$PCAP"; C1=$CAPTURE_PID
capture_start lo "tcp port $SPORT" "$LEG"; C2=$CAPTURE_PID
sleep 0.3
(cd "$D" && node client.mjs "http://127.0.0.1:$RPORT/mcp" "$WORK/client.jsonl")
sleep 1; kill -INT "$C1" "$C2"; wait "$C1" "$C2" || true
stop_pid "$RELAY_PID"; stop_pid "$SERVER_PID"
/usr/bin/python3 "$MAKE_DIR/$NAME/truth.py" "$WORK/client.jsonl" "$WORK/server.jsonl" "$WORK/relay.jsonl" \
  "$SAMPLES_DIR/$NAME.truth.json" "$RPORT" "$SPORT"
tshark_counts "$PCAP" "$RPORT"
tshark_counts "$LEG" "$SPORT"
