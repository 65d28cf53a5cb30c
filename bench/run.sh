#!/usr/bin/env bash
# Benchmark: mcp-forensics `analyze` against tshark and the read-and-decode floor on synthetic MCP
# captures (issues 7 and 17) and on a mostly-not-MCP capture (issue 32).
#
#   bench/run.sh                 # 256 MiB and 1 GiB of MCP, 1 GiB mixed; markdown on stdout
#   SIZES="64MiB" MIXED_SIZES="" bench/run.sh   # any sizes the generator accepts
#
# A mixed capture (`gen_capture --noise-share`) is mostly traffic that is not MCP; the same MCP
# traffic is also written alone, analysed once, and its sessions and findings must equal those
# of the mixed capture (bench/compare_reports.py, frame and connection numbers aside).
#
# On each capture the three programs take turns (mcp-forensics, tshark, floor, mcp-forensics, ...)
# so that a slow minute of a shared machine hits them alike; the report gives medians of wall time,
# CPU time (user+sys) and peak RSS, and the ratios between them. Then bench/threads.sh runs on
# the same capture.
#
# Environment:
#   SIZES        sizes of the all-MCP captures (default "256MiB 1GiB")
#   MIXED_SIZES  sizes of the mostly-not-MCP captures (default "1GiB"; "" for none)
#   NOISE_SHARE  share of a mixed capture's bytes that is not MCP (default 0.96)
#   BENCH_DIR    where captures and reports go (default: a new temporary directory; never the repo)
#   KEEP=1       keep captures and reports afterwards (default: delete them; the counts files stay)
#   SEED, PORT   generator seed (default 1) and server port (default 8080)
#   VIEW         force the analyzer view: analyze (default when it exists) or http (fallback)
#   RUNS         runs of mcp-forensics and of the floor per size (default 3)
#   TSHARK_RUNS  runs of tshark per size (default 3); SKIP_TSHARK=1 runs none
#   THREADS      thread counts for bench/threads.sh (default "1 2 8"); SKIP_THREADS=1 skips it
#   BIN, GEN, FLOOR  prebuilt mcp-forensics, gen_capture and read_floor; what is not given is
#                built with `cargo build --release` (CARGO_TARGET_DIR honoured)
#
# Progress goes to stderr; stdout is only the markdown report (for docs/performance.md).
# Exits 1 when a count check fails or the reports of different thread counts differ.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZES=${SIZES-"256MiB 1GiB"}
MIXED_SIZES=${MIXED_SIZES-"1GiB"}
NOISE_SHARE=${NOISE_SHARE:-0.96}
# label:file name of each capture, in the order they run.
INPUTS=()
for SIZE in $SIZES; do INPUTS+=("$SIZE:mcp-$SIZE"); done
for SIZE in $MIXED_SIZES; do INPUTS+=("mixed-$SIZE:mixed-$SIZE"); done
SEED=${SEED:-1}
PORT=${PORT:-8080}
KEEP=${KEEP:-0}
SKIP_TSHARK=${SKIP_TSHARK:-0}
SKIP_THREADS=${SKIP_THREADS:-0}
RUNS=${RUNS:-3}
TSHARK_RUNS=${TSHARK_RUNS:-3}
[ "$SKIP_TSHARK" != 1 ] || TSHARK_RUNS=0
THREADS=${THREADS:-"1 2 8"}
BENCH_DIR=$(bench_dir "${BENCH_DIR:-}" mcp-forensics-bench)

# --- tools -----------------------------------------------------------------------------------
tools=(/usr/bin/time:time python3:python3)
[ "$TSHARK_RUNS" = 0 ] || tools+=(tshark:tshark)
apt_install "${tools[@]}"
BUILT=0
[ -n "${BIN:-}" ] || BUILT=1
resolve_bins bin gen floor

if [ -z "${VIEW:-}" ]; then
    if "$BIN" analyze --help >/dev/null 2>&1; then VIEW=analyze; else VIEW=http; fi
fi
if [ "$VIEW" != analyze ]; then
    log "NOTE: 'mcp-forensics analyze' is not available; measuring the '$VIEW --format json' view instead"
fi
QUIET=()
[ "$VIEW" != analyze ] || QUIET=(-q) # no progress bar (stderr is a file anyway); `http` has no -q

count_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"][sys.argv[2]])' "$1" "$2"; }
cpu_of() { python3 -c 'import sys; print(round(float(sys.argv[1]) + float(sys.argv[2]), 3))' "$1" "$2"; }

# One line per run: size, tool, run, wall, user, sys, peak RSS KiB, exit status.
RUNS_TSV="$BENCH_DIR/runs.tsv"
: >"$RUNS_TSV"
record() { # size tool run "wall user sys rss status"
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(echo "$4" | tr ' ' '\t')" >>"$RUNS_TSV"
    read -r w u s r x <<<"$4"
    log "  $2 run $3: ${w}s wall, $(cpu_of "$u" "$s")s CPU, $r KiB, exit $x"
}

CHECKS=()
INFO=()
THREAD_SECTIONS=()
FAILED=0

for INPUT in "${INPUTS[@]}"; do
    SIZE=${INPUT%%:*} NAME=${INPUT#*:}
    CAP="$BENCH_DIR/$NAME.pcap"
    COUNTS="$CAP.counts.json"
    MIXED=0 ALONE="" GEN_ARGS=()
    if [ "$NAME" != "mcp-$SIZE" ]; then
        MIXED=1 ALONE="$BENCH_DIR/$NAME.mcp.pcap"
        GEN_ARGS=(--noise-share "$NOISE_SHARE" --mcp-out "$ALONE")
    fi
    log "generating $SIZE -> $CAP"
    G=$(measure --stderr "$BENCH_DIR/gen-$SIZE.stderr" -- "$GEN" --size "${SIZE#mixed-}" --out "$CAP" --seed "$SEED" --port "$PORT" "${GEN_ARGS[@]}")
    record "$SIZE" generator 1 "$G"
    PACKETS=$(count_field "$COUNTS" packets)
    REQUESTS=$(count_field "$COUNTS" http_requests)

    # Every program reads from the page cache.
    cat "$CAP" >/dev/null

    REPORT="$BENCH_DIR/report-$SIZE.json"
    MAX_RUNS=$(( RUNS > TSHARK_RUNS ? RUNS : TSHARK_RUNS ))
    T_BAD=0 F_BAD=0
    for run in $(seq 1 "$MAX_RUNS"); do
        if [ "$run" -le "$RUNS" ]; then
            record "$SIZE" mcp-forensics "$run" "$(measure --stdout "$REPORT" --stderr "$BENCH_DIR/mf-$SIZE.stderr" \
                -- "$BIN" "$VIEW" --format json "${QUIET[@]}" "$CAP")"
        fi
        if [ "$run" -le "$TSHARK_RUNS" ]; then
            record "$SIZE" tshark "$run" "$(measure --stdout "$BENCH_DIR/ts-$SIZE.txt" --stderr "$BENCH_DIR/ts-$SIZE.stderr" \
                -- tshark -r "$CAP" -d "tcp.port==$PORT,http" -Y http.request -T fields -e http.request.method)"
            T_REQ=$(wc -l <"$BENCH_DIR/ts-$SIZE.txt")
            # On a mixed capture tshark decodes HTTP/1.1 on its own ports only: no exact count.
            [ "$T_REQ" = "$REQUESTS" ] || [ "$MIXED" = 1 ] || T_BAD=1
        fi
        if [ "$run" -le "$RUNS" ]; then
            record "$SIZE" floor "$run" "$(measure --stdout "$BENCH_DIR/floor-$SIZE.json" --stderr "$BENCH_DIR/floor-$SIZE.stderr" \
                -- "$FLOOR" "$CAP")"
            F_FRAMES=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["frames"])' "$BENCH_DIR/floor-$SIZE.json" 2>/dev/null || echo "?")
            [ "$F_FRAMES" = "$PACKETS" ] || F_BAD=1
        fi
    done
    REPORT_BYTES=$(stat -c %s "$REPORT")

    log "checking counts"
    # The generator counts what is on the wire; the early classification sets connections aside
    # unread (docs/classification.md). The counts are checked on a run that examines every
    # connection, and the timed run must say the same of MCP as that run.
    WHOLE="$REPORT"
    if [ "$VIEW" = analyze ]; then
        WHOLE="$BENCH_DIR/report-$SIZE.examine-all.json"
        "$BIN" analyze --examine-all --format json -q "$CAP" >"$WHOLE"
    fi
    set +e
    ALONE_COUNTS=()
    [ "$MIXED" = 0 ] || ALONE_COUNTS=(--alone "$ALONE.counts.json")
    python3 "$REPO/bench/check_counts.py" --view "$VIEW" "${ALONE_COUNTS[@]}" "$COUNTS" "$WHOLE" >"$BENCH_DIR/check-$SIZE.md"
    [ $? = 0 ] || FAILED=1
    set -e
    CHECKS+=("### $SIZE: \`$VIEW\` counts vs generator (\`--examine-all\`)" "" "$(cat "$BENCH_DIR/check-$SIZE.md")" "")
    if [ "$VIEW" = analyze ]; then
        set +e
        python3 "$REPO/bench/compare_reports.py" "$REPORT" "$WHOLE" >"$BENCH_DIR/classified-$SIZE.md"
        [ $? = 0 ] || FAILED=1
        set -e
        CHECKS+=("### $SIZE: sessions and findings classified vs \`--examine-all\`" "" "$(cat "$BENCH_DIR/classified-$SIZE.md")" "")
        [ "$KEEP" = 1 ] || rm -f "$WHOLE"
    fi
    if [ "$MIXED" = 1 ] && [ "$VIEW" = analyze ]; then
        log "analysing the MCP traffic alone and comparing sessions and findings"
        ALONE_REPORT="$BENCH_DIR/report-$SIZE.alone.json"
        A=$(measure --stdout "$ALONE_REPORT" --stderr "$BENCH_DIR/mf-$SIZE.alone.stderr" -- "$BIN" analyze --format json -q "$ALONE")
        record "$SIZE" mcp-alone 1 "$A"
        set +e
        python3 "$REPO/bench/compare_reports.py" "$REPORT" "$ALONE_REPORT" >"$BENCH_DIR/compare-$SIZE.md"
        [ $? = 0 ] || FAILED=1
        python3 "$REPO/bench/check_counts.py" --set-aside "$ALONE_REPORT" "$COUNTS" "$REPORT" >"$BENCH_DIR/aside-$SIZE.md"
        [ $? = 0 ] || FAILED=1
        set -e
        CHECKS+=("### $SIZE: sessions and findings vs the same MCP traffic alone" "" "$(cat "$BENCH_DIR/compare-$SIZE.md")" "")
        CHECKS+=("### $SIZE: what the classification set aside vs generator" "" "$(cat "$BENCH_DIR/aside-$SIZE.md")" "")
        [ "$KEEP" = 1 ] || rm -f "$ALONE_REPORT"
    fi
    [ "$KEEP" = 1 ] || rm -f "$REPORT"
    if [ "$TSHARK_RUNS" -gt 0 ] && [ "$MIXED" = 1 ]; then
        CHECKS+=("tshark on $SIZE: $T_REQ HTTP/1.1 requests on the ports it decodes as HTTP (not compared: the generator's $REQUESTS exchanges include ports 8000 and 8545 and HTTP/2 streams)" "")
    elif [ "$TSHARK_RUNS" -gt 0 ]; then
        if [ "$T_BAD" = 0 ]; then T_OK=ok; else T_OK=MISMATCH; FAILED=1; fi
        CHECKS+=("tshark on $SIZE: $T_REQ HTTP requests (every run), generator $REQUESTS: $T_OK" "")
    fi
    if [ "$F_BAD" = 0 ]; then F_OK=ok; else F_OK=MISMATCH; FAILED=1; fi
    CHECKS+=("floor on $SIZE: $F_FRAMES frames (every run), generator $PACKETS packets: $F_OK" "")

    if [ "$SKIP_THREADS" != 1 ]; then
        log "thread scaling on $SIZE"
        set +e
        SECTION=$(BIN="$BIN" THREADS="$THREADS" RUNS="$RUNS" OUT_DIR="$BENCH_DIR" KEEP="$KEEP" \
            "$REPO/bench/threads.sh" "$CAP")
        [ $? = 0 ] || FAILED=1
        set -e
        THREAD_SECTIONS+=("$SECTION" "")
    fi

    INFO+=("- $SIZE: $(python3 - "$COUNTS" "$REPORT_BYTES" "$VIEW" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
c = doc["counts"]
d = c["detail"]
if "noise" in doc:
    m, n = doc["mcp"], doc["noise"]
    kinds = ", ".join("{} {:,}".format(k, v["connections"]) for k, v in n["by_kind"].items())
    print(
        "{:,} bytes, {:,} packets, {:.1f}% of the bytes MCP; {:,} TCP connections ({:,} not MCP: {}), "
        "{:,} HTTP exchanges ({:,} HTTP/1.1 and {:,} HTTP/2 streams not MCP, {:,} of them Ethereum JSON-RPC), "
        "{:,} TLS connections; the MCP part as alone: {:,} bytes, {:,} MCP sessions (up to {:,} clients at once), "
        "{:,} SSE events; {:.0f} s of traffic; `{}` JSON output {:.1f} MB".format(
            c["bytes"], c["packets"], 100 * d["mcp_bytes_share"], c["connections"], n["connections"], kinds,
            c["http_requests"], n["http1_requests"], n["h2_streams"], n["jsonrpc_exchanges"],
            n["tls_connections"], m["bytes"], m["sessions"], m["detail"]["max_concurrent_clients"],
            m["sse_events"], d["capture_seconds"], sys.argv[3], int(sys.argv[2]) / 1e6))
    sys.exit()
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
    [ "$KEEP" = 1 ] || rm -f "$CAP" ${ALONE:+"$ALONE"}
done

# --- report ----------------------------------------------------------------------------------
CPU_MODEL=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
MEM=$(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')
TSHARK_V=$( [ "$TSHARK_RUNS" = 0 ] || tshark -v 2>/dev/null | head -1)
BIN_V=$("$BIN" --version 2>/dev/null | head -1 || true)
if [ "$BUILT" = 1 ]; then
    REV=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
    DIRTY=$(cd "$REPO" && [ -n "$(git status --porcelain 2>/dev/null)" ] && echo " with uncommitted changes" || true)
    BIN_DESC="${BIN_V:-mcp-forensics}, release build of $REV$DIRTY"
else
    BIN_DESC="${BIN_V:-mcp-forensics}, prebuilt \`$BIN\`"
fi

echo "## Benchmark run $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "- Machine: $(nproc) CPUs ($CPU_MODEL), $MEM RAM, $(uname -sr)"
echo "- $BIN_DESC; ${TSHARK_V:-tshark not run}"
echo "- Captures from \`examples/gen_capture.rs\` (seed $SEED, port $PORT; mixed-: \`--noise-share $NOISE_SHARE\`), read from the page cache:"
printf '%s\n' "${INFO[@]}"
if [ "$VIEW" != analyze ]; then
    echo
    echo "> **Note:** \`mcp-forensics analyze\` did not exist when this ran; the rows measure \`mcp-forensics $VIEW --format json\` instead."
fi
echo
echo "- mcp-forensics: \`$VIEW --format json ${QUIET[*]:+${QUIET[*]} }FILE\`"
echo "- tshark: \`tshark -r FILE -d tcp.port==$PORT,http -Y http.request -T fields -e http.request.method\`"
echo "- floor: \`read_floor FILE\` (bench/floor.rs: reads the capture and decodes Ethernet/IP/TCP, nothing else)"
echo
python3 - "$RUNS_TSV" "$VIEW" "${INPUTS[*]}" <<'EOF'
import statistics, sys

tsv, view = sys.argv[1], sys.argv[2]
inputs = [i.split(":", 1) for i in sys.argv[3].split()]
sizes = [label for label, _ in inputs]
files = dict(inputs)
runs = {}
for line in open(tsv):
    size, tool, _, w, u, s, r, x = line.rstrip("\n").split("\t")
    runs.setdefault((size, tool), []).append((float(w), float(u) + float(s), int(r), int(x)))
med = statistics.median
stats = {}
for key, rs in runs.items():
    stats[key] = dict(
        n=len(rs), wall=med([x[0] for x in rs]), lo=min(x[0] for x in rs), hi=max(x[0] for x in rs),
        cpu=med([x[1] for x in rs]), rss=med([x[2] for x in rs]),
        bad=[x[3] for x in rs if x[3] != 0])

label = {"mcp-forensics": f"mcp-forensics {view}", "tshark": "tshark",
         "floor": "read-and-decode floor", "generator": "generator (for reference)",
         "mcp-alone": f"mcp-forensics {view} on the MCP part alone (for reference)"}
counts = {}
import json, os
bench_dir = os.path.dirname(tsv)
for size in sizes:
    try:
        counts[size] = json.load(open(os.path.join(bench_dir, f"{files[size]}.pcap.counts.json")))["counts"]
    except OSError:
        counts[size] = {}

n = {t: max((st["n"] for (s, tt), st in stats.items() if tt == t), default=0) for t in label}
print(f"Medians of {n['mcp-forensics']} runs of mcp-forensics and of the floor, {n['tshark']} of tshark, the three "
      "taking turns on each file; wall s gives the range of the runs in brackets. CPU s is user+sys; "
      "CPU % above 100 means more than one core. MB = 10^6 bytes of capture file; peak RSS is the "
      "kernel's maximum resident set (as `/usr/bin/time -v`).")
print()
print("| capture | tool | runs | wall s | CPU s | CPU % | MB/s | k packets/s | peak RSS MiB |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for size in sizes:
    b, p = counts[size].get("bytes"), counts[size].get("packets")
    for tool in ["mcp-forensics", "tshark", "floor", "generator", "mcp-alone"]:
        st = stats.get((size, tool))
        if not st:
            continue
        w = st["wall"]
        rng = f" ({st['lo']:.3f}–{st['hi']:.3f})" if st["n"] > 1 else ""
        # The MCP part alone is another, smaller file: its rate in this file's bytes would mislead.
        mbs = f"{b / w / 1e6:.1f}" if b and tool != "mcp-alone" else ""
        kps = f"{p / w / 1e3:.0f}" if p and tool not in ("generator", "mcp-alone") else ""
        bad = f" (exit {st['bad'][0]})" if st["bad"] else ""
        print(f"| {size} | {label[tool]}{bad} | {st['n']} | {w:.3f}{rng} | {st['cpu']:.3f} | "
              f"{100 * st['cpu'] / w:.0f}% | {mbs} | {kps} | {st['rss'] / 1024:.0f} |")

print()
print("| capture | wall × tshark (times faster) | CPU × tshark (times less) | wall × floor (times the floor) | peak RSS / tshark's |")
print("|---|---:|---:|---:|---:|")
for size in sizes:
    m, t, f = (stats.get((size, k)) for k in ("mcp-forensics", "tshark", "floor"))
    if not m:
        continue
    wt = f"**{t['wall'] / m['wall']:.1f}×**" if t else "-"
    ct = f"{t['cpu'] / m['cpu']:.1f}×" if t else "-"
    wf = f"**{m['wall'] / f['wall']:.1f}×**" if f else "-"
    rt = f"**{m['rss'] / t['rss']:.3f}** (1/{t['rss'] / m['rss']:.1f})" if t else "-"
    print(f"| {size} | {wt} | {ct} | {wf} | {rt} |")

busy = sorted({size for (size, tool), st in stats.items()
               if tool in ("tshark", "floor") and st["cpu"] < 0.9 * st["wall"]})
if busy:
    print()
    print(f"> **Note:** tshark or the floor, both single-threaded, got less than 90% of a core on {', '.join(busy)}: "
          "the machine was busy with something else and these timings are unreliable.")

sizes = [s for s in sizes if not s.startswith("mixed-")]
if len(sizes) >= 2 and (sizes[0], "mcp-forensics") in stats and (sizes[-1], "mcp-forensics") in stats:
    r0, r1 = stats[(sizes[0], "mcp-forensics")]["rss"], stats[(sizes[-1], "mcp-forensics")]["rss"]
    print()
    print(f"Peak RSS of mcp-forensics, {sizes[-1]} vs {sizes[0]}: {r1 / r0:.2f}× (target ≤ 1.5×).")
EOF
if [ ${#THREAD_SECTIONS[@]} -gt 0 ]; then
    echo
    echo "### Thread scaling"
    echo
    printf '%s\n' "${THREAD_SECTIONS[@]}"
fi
echo
printf '%s\n' "${CHECKS[@]}"
log "done; files in $BENCH_DIR"
exit $FAILED
