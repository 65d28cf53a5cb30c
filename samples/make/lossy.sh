#!/usr/bin/env bash
# Re-creates samples/lossy.{pcap,truth.json} from samples/python-sdk-healthy.pcap (run
# python-sdk-healthy.sh first to re-capture that one; this step itself is deterministic).
source "$(dirname "$0")/_common.sh"
NAME=lossy
need_capture_tools
PY="$(py_venv "py-dpkt" "$MAKE_DIR/$NAME/requirements.txt")"
[ -f "$SAMPLES_DIR/python-sdk-healthy.pcap" ] || bash "$MAKE_DIR/python-sdk-healthy.sh"
"$PY" "$MAKE_DIR/$NAME/lossy.py" "$SAMPLES_DIR/python-sdk-healthy.pcap" "$SAMPLES_DIR/$NAME.pcap" \
  "$SAMPLES_DIR/$NAME.truth.json" 3000
tshark_counts "$SAMPLES_DIR/$NAME.pcap" 3000
echo "with -o tcp.reassemble_out_of_order:TRUE: http.request=$(_tc "$SAMPLES_DIR/$NAME.pcap" -d tcp.port==3000,http -o tcp.reassemble_out_of_order:TRUE -Y http.request -T fields -e http.request.method) http.response=$(_tc "$SAMPLES_DIR/$NAME.pcap" -d tcp.port==3000,http -o tcp.reassemble_out_of_order:TRUE -Y http.response -T fields -e http.response.code)"
