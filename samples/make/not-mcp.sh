#!/usr/bin/env bash
# Re-creates samples/not-mcp.{pcap,truth.json}: traffic that is NOT MCP, from servers and clients of
# ours (standard library only), all on loopback at the same time:
#   127.0.0.1:19121  Ethereum-style JSON-RPC 2.0 over POST / (3 wallets, batches, errors)
#   127.0.0.1:19122  a stock-ticker SSE feed GET /prices (integer ids; one client is cut by the server
#                    after event 5 and resumes by itself with Last-Event-ID: 5; one reads 8 and leaves)
#   127.0.0.1:19123  plain JSON REST (GET/POST, 200/201/404)
source "$(dirname "$0")/_common.sh"
NAME=not-mcp
P_RPC=19121; P_SSE=19122; P_REST=19123
H="$MAKE_DIR/$NAME"
need_capture_tools
need_apt python3:python3
require_free_port "$P_RPC" "$P_SSE" "$P_REST"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"
PY=/usr/bin/python3

"$PY" "$H/server.py" "$P_RPC" "$P_SSE" "$P_REST" "$WORK/server.jsonl" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!; _MCPF_PIDS+=("$SERVER_PID")
wait_listen "$P_RPC"; wait_listen "$P_SSE"; wait_listen "$P_REST"
capture_start lo "tcp port $P_RPC or tcp port $P_SSE or tcp port $P_REST" "$PCAP"
sleep 0.3
"$PY" "$H/client.py" "$P_RPC" "$P_SSE" "$P_REST" "$WORK/client.jsonl"
capture_stop "$CAPTURE_PID"
stop_pid "$SERVER_PID"
"$PY" "$H/truth.py" "$WORK/client.jsonl" "$WORK/server.jsonl" "$SAMPLES_DIR/$NAME.truth.json" "$P_RPC" "$P_SSE" "$P_REST"
DEC=(-d "tcp.port==$P_RPC,http" -d "tcp.port==$P_SSE,http" -d "tcp.port==$P_REST,http")
req=$(tshark -r "$PCAP" "${DEC[@]}" -Y http.request 2>/dev/null | wc -l)
resp=$(tshark -r "$PCAP" "${DEC[@]}" -Y http.response 2>/dev/null | wc -l)
streams=$(tshark -r "$PCAP" -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
echo "$NAME.pcap: http.request=$req http.response=$resp (the 3 SSE streams never complete) tcp.streams=$streams size=$(stat -c %s "$PCAP")B"
