#!/usr/bin/env bash
# Re-creates samples/seed-incident-{vxlan,geneve,gre,erspan2,erspan3,ipip,mpls,span-dup}.pcap from
# the committed samples/seed-incident-client-leg.pcap (run seed-incident.sh first to re-capture
# that one; this step itself is deterministic): each frame wrapped in a tunnel as cloud traffic
# mirroring (VXLAN, Geneve), a switch (ERSPAN II, III), a GRE or IP-in-IP tunnel or an MPLS core
# delivers it, and a SPAN copy with every frame twice (make/tunnels/tunnels.py says how).
#
# The oracle is tshark, on the files: each tunnelled copy must give the plain leg's counts of TCP
# frames, TCP streams, HTTP requests and responses, and `editcap -d` must take the SPAN copy back
# to the plain leg's frames exactly. The script stops at the first difference.
source "$(dirname "$0")/_common.sh"
SRC=seed-incident-client-leg
KINDS=(vxlan geneve gre erspan2 erspan3 ipip mpls span-dup)
need_capture_tools
PY="$(py_venv "py-scapy" "$MAKE_DIR/tunnels/requirements.txt")"
[ -f "$SAMPLES_DIR/$SRC.pcap" ] || { echo "needs samples/$SRC.pcap (make/seed-incident.sh)" >&2; exit 1; }
"$PY" "$MAKE_DIR/tunnels/tunnels.py" "$SAMPLES_DIR/$SRC.pcap" "$SAMPLES_DIR"

# counts FILE: TCP frames, TCP streams, HTTP requests and responses as tshark reads them (its
# default dissectors unwrap every tunnel here; port 8080 is HTTP to it).
counts() {
  local tcp streams req resp
  tcp=$(tshark -r "$1" -Y tcp 2>/dev/null | wc -l)
  streams=$(tshark -r "$1" -Y tcp -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
  req=$(_tc "$1" -Y http.request -T fields -e http.request.method)
  resp=$(_tc "$1" -Y http.response -T fields -e http.response.code)
  echo "tcp=$tcp tcp.streams=$streams http.request=$req http.response=$resp"
}

plain="$(counts "$SAMPLES_DIR/$SRC.pcap")"
echo "$SRC.pcap: $plain"
for kind in "${KINDS[@]}"; do
  f="$SAMPLES_DIR/seed-incident-$kind.pcap"
  got="$(counts "$f")"
  echo "$(basename "$f"): $got size=$(stat -c %s "$f")B"
  [ "$kind" = span-dup ] && continue
  [ "$got" = "$plain" ] || { echo "tshark reads $kind otherwise than the plain leg" >&2; exit 1; }
done

# The SPAN copy: editcap -d (MD5 of each frame against the 4 before it) removes every second
# copy, and what it leaves is the plain leg, frame for frame.
dedup="$SCRATCH/tunnels-span-dedup.pcap"
editcap -d "$SAMPLES_DIR/seed-incident-span-dup.pcap" "$dedup" >&2
cmp <(tshark -r "$dedup" -T fields -e frame.time_epoch -e frame.len -e tcp.seq_raw 2>/dev/null) \
    <(tshark -r "$SAMPLES_DIR/$SRC.pcap" -T fields -e frame.time_epoch -e frame.len -e tcp.seq_raw 2>/dev/null) \
  || { echo "editcap -d does not take the SPAN copy back to the plain leg" >&2; exit 1; }
echo "seed-incident-span-dup.pcap after editcap -d: $(counts "$dedup")"
[ "$(counts "$dedup")" = "$plain" ] || { echo "the deduplicated SPAN copy reads otherwise" >&2; exit 1; }
