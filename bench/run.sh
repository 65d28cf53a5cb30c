#!/usr/bin/env bash
# Benchmark: mcp-forensics `analyze` against tshark on synthetic MCP captures (issue 7).
#
#   bench/run.sh                 # 256 MiB and 1 GiB, results as markdown on stdout
#   SIZES="64MiB" bench/run.sh   # any sizes the generator accepts
#
# Environment:
#   SIZES      capture sizes (default "256MiB 1GiB")
#   BENCH_DIR  where captures and reports go (default: a new temporary directory; never the repo)
#   KEEP=1     keep captures and reports afterwards (default: delete them; the counts files stay)
#   SEED, PORT generator seed (default 1) and server port (default 8080)
#   VIEW       force the analyzer view: analyze (default when it exists) or http (fallback)
#   SKIP_TSHARK=1  do not run tshark
#   RUNS       runs of mcp-forensics per size; the best wall time is reported (default 3)
#   CARGO_TARGET_DIR is honoured.
#
# Progress goes to stderr; stdout is only the markdown report (for docs/performance.md).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIZES=${SIZES:-"256MiB 1GiB"}
SEED=${SEED:-1}
PORT=${PORT:-8080}
KEEP=${KEEP:-0}
SKIP_TSHARK=${SKIP_TSHARK:-0}
RUNS=${RUNS:-3}
BENCH_DIR=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mcp-forensics-bench.XXXXXX")}
mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
case "$BENCH_DIR/" in
"$REPO"/*) echo "BENCH_DIR must be outside the repository" >&2; exit 2 ;;
esac

log() { printf '[bench] %s\n' "$*" >&2; }

# --- tools -----------------------------------------------------------------------------------
need_pkgs=()
[ -x /usr/bin/time ] || need_pkgs+=(time)
if [ "$SKIP_TSHARK" != 1 ] && ! command -v tshark >/dev/null; then need_pkgs+=(tshark); fi
command -v python3 >/dev/null || need_pkgs+=(python3)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    log "installing ${need_pkgs[*]} from Debian"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >&2
fi

# --- build -----------------------------------------------------------------------------------
log "building release binary and generator"
(cd "$REPO" && cargo build --release --quiet --bin mcp-forensics --example gen_capture >&2)
TARGET_DIR=${CARGO_TARGET_DIR:-$(cd "$REPO" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')}
BIN="$TARGET_DIR/release/mcp-forensics"
GEN="$TARGET_DIR/release/examples/gen_capture"

if [ -z "${VIEW:-}" ]; then
    if "$BIN" analyze --help >/dev/null 2>&1; then VIEW=analyze; else VIEW=http; fi
fi
if [ "$VIEW" != analyze ]; then
    log "NOTE: 'mcp-forensics analyze' is not available; measuring the '$VIEW --format json' view instead"
fi

# --- helpers ---------------------------------------------------------------------------------
# Wall seconds, peak RSS (KiB) and CPU% from a `/usr/bin/time -v` report.
parse_time() {
    python3 - "$1" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
secs = 0.0
for part in wall.split(":"):
    secs = secs * 60 + float(part)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
cpu = re.search(r"Percent of CPU this job got: (\d+)%", t)
status = re.search(r"Exit status: (\d+)", t)
print(f"{secs:.3f} {rss} {cpu.group(1) if cpu else '?'} {status.group(1) if status else '?'}")
EOF
}

count_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"][sys.argv[2]])' "$1" "$2"; }

fmt() { python3 -c "$1" "${@:2}"; }

ROWS=()
CHECKS=()
INFO=()
FAILED=0
declare -A RSS_BY_SIZE

for SIZE in $SIZES; do
    CAP="$BENCH_DIR/mcp-$SIZE.pcap"
    COUNTS="$CAP.counts.json"
    log "generating $SIZE -> $CAP"
    /usr/bin/time -v -o "$BENCH_DIR/gen-$SIZE.time" "$GEN" --size "$SIZE" --out "$CAP" --seed "$SEED" --port "$PORT" >&2
    BYTES=$(count_field "$COUNTS" bytes)
    PACKETS=$(count_field "$COUNTS" packets)
    REQUESTS=$(count_field "$COUNTS" http_requests)
    read -r G_WALL G_RSS G_CPU _ < <(parse_time "$BENCH_DIR/gen-$SIZE.time")

    # Both tools read from the page cache.
    cat "$CAP" >/dev/null

    log "$VIEW on $SIZE"
    REPORT="$BENCH_DIR/report-$SIZE.json"
    # Best wall time of RUNS runs (a shared VM's timings vary by tens of percent from run to
    # run); the peak RSS reported is the highest of all runs.
    M_WALL=""; M_RSS=0; M_CPU=""; M_STATUS=0
    for run in $(seq 1 "$RUNS"); do
        set +e
        /usr/bin/time -v -o "$BENCH_DIR/mf-$SIZE.time" "$BIN" "$VIEW" --format json "$CAP" >"$REPORT" 2>"$BENCH_DIR/mf-$SIZE.stderr"
        set -e
        read -r R_WALL R_RSS R_CPU R_STATUS < <(parse_time "$BENCH_DIR/mf-$SIZE.time")
        log "  run $run: ${R_WALL}s, ${R_RSS} KiB"
        if [ -z "$M_WALL" ] || python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$R_WALL" "$M_WALL"; then
            M_WALL=$R_WALL; M_CPU=$R_CPU
        fi
        [ "$R_RSS" -gt "$M_RSS" ] && M_RSS=$R_RSS
        [ "$R_STATUS" = 0 ] || M_STATUS=$R_STATUS
    done
    [ "$M_STATUS" = 0 ] || log "WARNING: mcp-forensics exited with $M_STATUS (see $BENCH_DIR/mf-$SIZE.stderr)"
    REPORT_BYTES=$(stat -c %s "$REPORT")

    log "checking counts"
    set +e
    python3 "$REPO/bench/check_counts.py" --view "$VIEW" "$COUNTS" "$REPORT" >"$BENCH_DIR/check-$SIZE.md"
    [ $? = 0 ] || FAILED=1
    set -e
    CHECKS+=("### $SIZE: \`$VIEW\` counts vs generator" "" "$(cat "$BENCH_DIR/check-$SIZE.md")" "")
    [ "$KEEP" = 1 ] || rm -f "$REPORT"

    if [ "$SKIP_TSHARK" != 1 ]; then
        log "tshark on $SIZE"
        set +e
        /usr/bin/time -v -o "$BENCH_DIR/ts-$SIZE.time" tshark -r "$CAP" -d "tcp.port==$PORT,http" \
            -Y http.request -T fields -e http.request.method >"$BENCH_DIR/ts-$SIZE.txt" 2>"$BENCH_DIR/ts-$SIZE.stderr"
        set -e
        read -r T_WALL T_RSS T_CPU T_STATUS < <(parse_time "$BENCH_DIR/ts-$SIZE.time")
        T_REQ=$(wc -l <"$BENCH_DIR/ts-$SIZE.txt")
        if [ "$T_REQ" = "$REQUESTS" ]; then T_OK="ok"; else T_OK="MISMATCH"; FAILED=1; fi
        CHECKS+=("tshark on $SIZE: $T_REQ HTTP requests, generator $REQUESTS: $T_OK" "")
    fi

    RSS_BY_SIZE[$SIZE]=$M_RSS
    ROW=$(fmt '
import sys
size, b, p, w, rss, cpu, label = sys.argv[1:8]
b, p, w, rss = int(b), int(p), float(w), int(rss)
print(f"| {size} | {label} | {w:.2f} | {b/w/1e6:.1f} | {p/w/1e3:.0f} | {rss/1024:.0f} | {cpu}% |")
' "$SIZE" "$BYTES" "$PACKETS" "$M_WALL" "$M_RSS" "$M_CPU" "mcp-forensics $VIEW")
    ROWS+=("$ROW")
    if [ "$SKIP_TSHARK" != 1 ]; then
        ROWS+=("$(fmt '
import sys
size, b, p, w, rss, cpu = sys.argv[1:7]
b, p, w, rss = int(b), int(p), float(w), int(rss)
print(f"| {size} | tshark | {w:.2f} | {b/w/1e6:.1f} | {p/w/1e3:.0f} | {rss/1024:.0f} | {cpu}% |")
' "$SIZE" "$BYTES" "$PACKETS" "$T_WALL" "$T_RSS" "$T_CPU")")
        ROWS+=("$(fmt '
import sys
size, mw, tw, mr, tr = sys.argv[1:6]
print(f"| {size} | **ratio** | | **{float(tw)/float(mw):.1f}× tshark throughput** | | **RSS {int(mr)/int(tr):.3f}× tshark (1/{int(tr)/max(int(mr),1):.1f})** | |")
' "$SIZE" "$M_WALL" "$T_WALL" "$M_RSS" "$T_RSS")")
    fi
    ROWS+=("$(fmt '
import sys
size, b, w, rss, cpu = sys.argv[1:6]
print(f"| {size} | generator (for reference) | {float(w):.2f} | {int(b)/float(w)/1e6:.1f} | | {int(rss)/1024:.0f} | {cpu}% |")
' "$SIZE" "$BYTES" "$G_WALL" "$G_RSS" "$G_CPU")")
    INFO+=("- $SIZE: $(python3 - "$COUNTS" "$REPORT_BYTES" "$VIEW" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["counts"]
d = c["detail"]
print(
    "{:,} bytes, {:,} packets, {:,} TCP connections (up to {:,} open at once), "
    "{:,} MCP sessions (up to {:,} clients at once), {:,} HTTP requests ({:,} non-MCP), "
    "{:,} SSE events, {:,} resumed streams, {:.0f} s of traffic; `{}` JSON output {:.0f} MB".format(
        c["bytes"], c["packets"], c["connections"], d["max_concurrent_connections"],
        c["sessions"], d["max_concurrent_clients"], c["http_requests"], c["non_mcp_requests"],
        c["sse_events"], c["resumed_streams"], d["capture_seconds"], sys.argv[3],
        int(sys.argv[2]) / 1e6))
EOF
)")
    [ "$KEEP" = 1 ] || rm -f "$CAP"
done

# --- report ----------------------------------------------------------------------------------
CPU_MODEL=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
MEM=$(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')
TSHARK_V=$( [ "$SKIP_TSHARK" = 1 ] || tshark -v 2>/dev/null | head -1)
REV=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(cd "$REPO" && [ -n "$(git status --porcelain 2>/dev/null)" ] && echo " (with uncommitted changes)" || true)

echo "## Benchmark run $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "- Machine: $(nproc) CPUs ($CPU_MODEL), $MEM RAM, $(uname -sr)"
echo "- mcp-forensics $REV$DIRTY, release build; ${TSHARK_V:-tshark not run}"
echo "- Captures from \`examples/gen_capture.rs\` (seed $SEED, port $PORT), read from the page cache:"
printf '%s\n' "${INFO[@]}"
if [ "$VIEW" != analyze ]; then
    echo
    echo "> **Note:** \`mcp-forensics analyze\` did not exist when this ran; the rows measure \`mcp-forensics $VIEW --format json\` instead."
fi
echo
echo "tshark: \`tshark -r FILE -d tcp.port==$PORT,http -Y http.request -T fields -e http.request.method\`."
echo "mcp-forensics: best wall time of $RUNS runs (peak RSS: the highest of them); tshark: one run."
echo "MB = 10^6 bytes of capture file; peak RSS from \`/usr/bin/time -v\`; CPU% above 100 means more than one core."
echo
echo "| capture | tool | wall s | MB/s | k packets/s | peak RSS MiB | CPU |"
echo "|---|---|---:|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
SIZES_ARR=($SIZES)
if [ ${#SIZES_ARR[@]} -ge 2 ]; then
    FIRST=${SIZES_ARR[0]}
    LAST=${SIZES_ARR[${#SIZES_ARR[@]}-1]}
    echo
    echo "Peak RSS of mcp-forensics, $LAST vs $FIRST: $(fmt 'import sys; print(f"{int(sys.argv[2])/int(sys.argv[1]):.2f}×")' "${RSS_BY_SIZE[$FIRST]}" "${RSS_BY_SIZE[$LAST]}") (target ≤ 1.5×)."
fi
echo
printf '%s\n' "${CHECKS[@]}"
log "done; files in $BENCH_DIR"
exit $FAILED
