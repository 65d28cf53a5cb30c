#!/usr/bin/env bash
# Stress benchmark (issue 12): every generator of bench/stress at two sizes 10x apart, each
# analysed by `mcp-forensics analyze` under a time and memory limit; a markdown table on stdout.
#
#   bench/stress/run.sh                       # every class
#   CLASSES="syn_flood many_calls" bench/stress/run.sh
#
# Environment:
#   CLASSES    classes to run (default: all, in the order of the table below)
#   SCALE      multiplies every size (default 1; SCALE=0.1 for a quick look, rounded up to 1)
#   TIMEOUT    seconds per analysis before it is stopped (default 120; shown as exit 124)
#   MEM_LIMIT  address-space limit per analysis in KiB, `ulimit -v` (default 4194304 = 4 GiB);
#              an allocation failure beyond it shows as exit 134 (SIGABRT) or 137
#   STRESS_DIR where inputs and reports go (default: a new temporary directory; never the repo)
#   KEEP=1     keep them afterwards
#   CARGO_TARGET_DIR is honoured.
#
# Progress goes to stderr. Each row: class, n (what the generator's n counts: `gen_stress --list`),
# input size, wall time, peak RSS, exit status, and what the report found (sessions, findings
# above info, HTTP anomalies, `limits` counters, whether every inputs[].accounting ledger adds
# up). The ratio columns compare the big size with the small one: linear time gives ~10x, capped
# memory ~1x.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TIMEOUT=${TIMEOUT:-120}
MEM_LIMIT=${MEM_LIMIT:-4194304}
SCALE=${SCALE:-1}
KEEP=${KEEP:-0}
STRESS_DIR=${STRESS_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mcp-forensics-stress.XXXXXX")}
mkdir -p "$STRESS_DIR"
STRESS_DIR=$(cd "$STRESS_DIR" && pwd)
case "$STRESS_DIR/" in
"$REPO"/*) echo "STRESS_DIR must be outside the repository" >&2; exit 2 ;;
esac
[ "$KEEP" = 1 ] || trap 'rm -rf "$STRESS_DIR"' EXIT
log() { printf '[stress] %s\n' "$*" >&2; }

[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 2; }

log "building release binary and generator"
(cd "$REPO" && cargo build --release --quiet --bin mcp-forensics --example gen_stress >&2) || exit 2
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
BIN="$TARGET_DIR/release/mcp-forensics"
GEN="$TARGET_DIR/release/examples/gen_stress"

# class, small n, extra analyze flags. The big size is 10x the small one.
PLAN="
brotli_bomb 500
gzip_bomb 50
gzip_answers 100
held_bodies 20
brotli_windows 20
syn_flood 30000
sse_events 30000 --events
many_calls 2000
batch 10000
duplicates 10000
resumes 3000
fallbacks 3000
access_log 2000
ooo_conns 26000
ooo_bytes 160000
snaplen_ooo 50000
big_har 300
sse_result 2
json_result 4
ts_backwards 1000
many_headers 200
secrets 10
corrupt_pcap 100
corrupt_pcapng 100
truncated_gz 100
h2_calls 2000
h2_continuation 200
h2_open_streams 20000
hpack_bomb 200
sse_gzip_bomb 100
h2_sse_gzip_bomb 100
har_sse_bomb 100
"
CLASSES=${CLASSES:-$(echo "$PLAN" | awk 'NF {print $1}')}

# Reads the /usr/bin/time report and the JSON report; prints the cells after "exit".
summarise() {
    python3 - "$@" <<'EOF'
import json, re, sys
time_file, report, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
t = open(time_file).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t)
secs = 0.0
if wall:
    for part in wall.group(1).split(":"):
        secs = secs * 60 + float(part)
rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", t)
rss = int(rss.group(1)) / 1024 if rss else 0
docs = []
try:
    with open(report) as f:
        if fmt == "ndjson":
            docs = [json.loads(l) for l in f if l.strip()]
        else:
            docs = [json.load(f)]
except Exception:
    docs = []
cells = ["-"] * 6
if fmt == "json" and docs:
    d = docs[0]
    s = d.get("summary", {})
    above_info = sum(v for k, v in s.get("findings", {}).items() if k != "info")
    limits = s.get("limits") or []
    events = len(d.get("events") or [])
    ok = all(
        l["total"] == l["analysed"] + sum(l["skipped"].values()) + sum(l["lost"].values())
        for i in d.get("inputs", []) if i.get("accounting")
        for l in (i["accounting"]["packets"], i["accounting"]["bytes"])
    )
    has_acc = any(i.get("accounting") for i in d.get("inputs", []))
    cells = [s.get("sessions", "-"), above_info, s.get("http_anomalies", "-"),
             len(limits), events, ("yes" if ok else "NO") if has_acc else "-"]
elif fmt == "ndjson" and docs:
    events = sum(1 for d in docs if d.get("type") == "event")
    cells = ["-", "-", "-", "-", events, "-"]
print(f"{secs:.2f}\t{rss:.0f}\t" + "\t".join(str(c) for c in cells))
EOF
}

printf '| class | n | input | wall s | peak RSS MiB | exit | time × | RSS × | sessions | findings > info | anomalies | limits hit | events | ledger balanced |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n'
declare -A small_wall small_rss
echo "$PLAN" | while read -r class small flags; do
    [ -n "$class" ] || continue
    case " $(echo $CLASSES) " in *" $class "*) ;; *) continue ;; esac
    ext=$("$GEN" --list | awk -v c="$class" '$1 == c {print $2}')
    small=$(python3 -c "import math; print(max(1, math.ceil($small * $SCALE)))")
    for n in "$small" $((small * 10)); do
        input="$STRESS_DIR/$class-$n.$ext"
        log "$class n=$n: generating"
        "$GEN" "$class" "$n" "$input" || { log "generator failed"; continue; }
        size=$(du -h --apparent-size "$input" | cut -f1)
        for fmt in json $( [ -n "$flags" ] && echo ndjson ); do
            report="$STRESS_DIR/$class-$n.$fmt"
            log "$class n=$n: analyze --format $fmt $flags"
            (
                ulimit -v "$MEM_LIMIT"
                /usr/bin/time -v -o "$report.time" timeout -k 5 "$TIMEOUT" \
                    "$BIN" analyze --format "$fmt" $flags "$input" >"$report" 2>"$report.stderr"
            )
            status=$?
            # GNU time reports a killed child as "Command terminated by signal N".
            sig=$(sed -n 's/.*Command terminated by signal \([0-9]*\).*/\1/p' "$report.time")
            [ -n "$sig" ] && status=$((128 + sig))
            [ "$status" = 124 ] && status="124 (timeout)"
            cells=$(summarise "$report.time" "$report" "$fmt")
            label=$class
            [ "$fmt" = ndjson ] && label="$class (ndjson $flags)"
            [ "$fmt" = json ] && [ -n "$flags" ] && label="$class (json $flags)"
            IFS=$'\t' read -r wall rss c1 c2 c3 c4 c5 c6 <<<"$cells"
            # The big row compares itself with the small one (time and RSS ratios).
            if [ "$n" = "$small" ]; then
                small_wall[$fmt]=$wall small_rss[$fmt]=$rss tx="" rx=""
            else
                tx=$(python3 -c "print(f'{max($wall, 0.01) / max(${small_wall[$fmt]}, 0.01):.1f}')")
                rx=$(python3 -c "print(f'{max($rss, 1) / max(${small_rss[$fmt]}, 1):.1f}')")
            fi
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
                "$label" "$n" "$size" "$wall" "$rss" "$status" "$tx" "$rx" \
                "$c1" "$c2" "$c3" "$c4" "$c5" "$c6"
            rm -f "$report"
        done
        rm -f "$input"
    done
done
