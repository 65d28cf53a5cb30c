#!/usr/bin/env bash
# Re-creates samples/http-basic.pcap and samples/http-basic.truth.json:
# plain HTTP/1.1 on 127.0.0.1:8000 between a tiny raw-socket server and client (no MCP).
# Needs root (tcpdump on lo), Debian 12; installs tcpdump/tshark if missing.
source "$(dirname "$0")/_common.sh"
NAME=http-basic
PORT=8000
H="$MAKE_DIR/$NAME"
need_capture_tools
need_apt python3:python3
require_free_port "$PORT"
WORK="$(mktemp -d "$SCRATCH/$NAME.XXXXXX")"
PCAP="$SAMPLES_DIR/$NAME.pcap"

bg SERVER_PID /usr/bin/python3 "$H/server.py" "$PORT" "$WORK/server.json" 3
wait_listen "$PORT"  # the server counts connections, so don't probe it with a connect
capture_start lo "tcp port $PORT" "$PCAP"
/usr/bin/python3 "$H/client.py" "$PORT" "$WORK/client.json"
wait "$SERVER_PID"
capture_stop "$CAPTURE_PID"
/usr/bin/python3 "$H/truth.py" "$WORK/client.json" "$WORK/server.json" "$SAMPLES_DIR/$NAME.truth.json" "$PORT"
tshark_counts "$PCAP" "$PORT"
