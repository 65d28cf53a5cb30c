#!/usr/bin/env bash
# Re-creates samples/snaplen-mcp.{pcap,truth.json}: the committed samples/python-sdk-healthy.pcap (official
# Python SDK server and client, Streamable HTTP with a session; see python-sdk-healthy.sh) cut to a
# snap length of 128 bytes per packet, as a capture taken with `tcpdump -s 128` would be: request and
# status lines survive, bodies and most headers do not. The truth is the source's truth plus the snap
# length. Deterministic: the same input gives the same bytes.
source "$(dirname "$0")/_common.sh"
NAME=snaplen-mcp
SNAPLEN=128
SRC=python-sdk-healthy
need_capture_tools
need_apt python3:python3
[ -f "$SAMPLES_DIR/$SRC.pcap" ] && [ -f "$SAMPLES_DIR/$SRC.truth.json" ] \
  || { echo "needs samples/$SRC.pcap and its truth (make/$SRC.sh)" >&2; exit 1; }
# -F pcap: editcap writes pcapng unless told; keep the source's format (and a header snaplen of 128)
editcap -F pcap -s "$SNAPLEN" "$SAMPLES_DIR/$SRC.pcap" "$SAMPLES_DIR/$NAME.pcap"
/usr/bin/python3 "$MAKE_DIR/$NAME/truth.py" "$SAMPLES_DIR/$SRC.truth.json" "$SRC.pcap" \
  "$(sha256sum "$SAMPLES_DIR/$SRC.pcap" | cut -d' ' -f1)" "$SNAPLEN" "$SAMPLES_DIR/$NAME.truth.json"
tshark_counts "$SAMPLES_DIR/$NAME.pcap" 3000
capinfos -l "$SAMPLES_DIR/$NAME.pcap" | tail -2
