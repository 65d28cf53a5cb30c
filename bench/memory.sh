#!/usr/bin/env bash
# Memory benchmark: peak RSS of `mcp-forensics analyze --format json` against what is open at once.
#
#   bench/memory.sh > memory.md      # markdown on stdout, progress on stderr
#   CONC_SIZE=32MiB CONCURRENCIES="250 1000" MEM_SIZES="16MiB 32MiB" SIZE_CONC=1000 bench/memory.sh
#
# Two series of synthetic captures (examples/gen_capture.rs):
#   - concurrency: CONC_SIZE (default 256MiB: shorter captures do not reach the higher
#     concurrencies) at --concurrency CONCURRENCIES (default "250 1000 2500 5000");
#   - size: MEM_SIZES (default "64MiB 128MiB 256MiB 512MiB") at --concurrency SIZE_CONC (1000,
#     which even the 64 MiB capture reaches).
# Each capture is analysed RUNS times (default 1; the median peak RSS is used) under
# `/usr/bin/time -v`, and its report checked against the generator's counts (check_counts.py).
# The generator's detail.max_concurrent_clients (open sessions) and
# detail.max_concurrent_connections (open connections) are then fitted by least squares:
#     peak RSS ≈ base + a·open_sessions + b·sessions_in_the_run
# (what is open, and what the run keeps of every session it saw). Sessions and connections open
# at once are proportional in the generator's captures (each client holds one or two
# connections), so bytes per open connection are the per-session figure put on its connections.
# The size series shows how much RSS grows when only the length of the traffic grows.
#
# Environment: BIN, GEN (prebuilt binaries; otherwise `cargo build --release`, CARGO_TARGET_DIR
# honoured), BENCH_DIR, KEEP=1, SEED (1), PORT (8080), RUNS, ARGS (extra analyze options, e.g.
# "--threads 1"). Captures are deleted after use unless KEEP=1. Exits 1 when a count check fails.
set -euo pipefail
LOG_TAG=memory
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CONC_SIZE=${CONC_SIZE:-256MiB}
CONCURRENCIES=${CONCURRENCIES:-"250 1000 2500 5000"}
SIZE_CONC=${SIZE_CONC:-1000}
MEM_SIZES=${MEM_SIZES:-"64MiB 128MiB 256MiB 512MiB"}
RUNS=${RUNS:-1}
SEED=${SEED:-1}
PORT=${PORT:-8080}
KEEP=${KEEP:-0}
ARGS=${ARGS:-}
BENCH_DIR=$(bench_dir "${BENCH_DIR:-}" mcp-forensics-memory)

apt_install /usr/bin/time:time python3:python3
resolve_bins bin gen

# One line per capture: series, size, concurrency, counts file, peak RSS KiB (median), wall s (median).
POINTS="$BENCH_DIR/memory.tsv"
: >"$POINTS"
FAILED=0
declare -A DONE

point() { # series size concurrency
    local series=$1 size=$2 conc=$3 cap="$BENCH_DIR/mem-$2-c$3.pcap" key="$2 $3" rss=() walls=() run
    if [ -n "${DONE[$key]:-}" ]; then
        printf '%s\t%s\n' "$series" "${DONE[$key]}" >>"$POINTS"
        return
    fi
    log "generating $size at --concurrency $conc"
    "$GEN" --size "$size" --out "$cap" --seed "$SEED" --port "$PORT" --concurrency "$conc" >/dev/null
    cat "$cap" >/dev/null
    for run in $(seq 1 "$RUNS"); do
        set +e
        # shellcheck disable=SC2086
        /usr/bin/time -v -o "$cap.time" "$BIN" analyze --format json -q $ARGS "$cap" >"$cap.json" 2>"$cap.stderr"
        set -e
        read -r w r x < <(python3 - "$cap.time" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
secs = 0.0
for part in wall.split(":"):
    secs = secs * 60 + float(part)
rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)
status = re.search(r"Exit status: (\d+)", t)
print(f"{secs:.2f} {rss} {status.group(1) if status else '?'}")
EOF
)
        log "  run $run: ${w}s, $r KiB, exit $x"
        [ "$x" = 0 ] || { log "  analyze failed (see $cap.stderr)"; FAILED=1; }
        rss+=("$r")
        walls+=("$w")
    done
    if ! python3 "$REPO/bench/check_counts.py" "$cap.counts.json" "$cap.json" >"$cap.check.md"; then
        log "  count check FAILED ($cap.check.md)"
        FAILED=1
    fi
    local line
    line=$(printf '%s\t%s\t%s\t%s\t%s' "$size" "$conc" "$cap.counts.json" \
        "$(printf '%s\n' "${rss[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" \
        "$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')")
    DONE[$key]=$line
    printf '%s\t%s\n' "$series" "$line" >>"$POINTS"
    [ "$KEEP" = 1 ] || rm -f "$cap" "$cap.json"
}

for c in $CONCURRENCIES; do point concurrency "$CONC_SIZE" "$c"; done
for s in $MEM_SIZES; do point size "$s" "$SIZE_CONC"; done

BIN_V=$("$BIN" --version 2>/dev/null | head -1 || true)
echo "## Memory benchmark $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "- Machine: $(nproc) CPUs, $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}') RAM, $(uname -sr)"
echo "- ${BIN_V:-mcp-forensics} (\`$BIN\`): \`analyze --format json -q${ARGS:+ $ARGS}\`, peak RSS from \`/usr/bin/time -v\`, median of $RUNS run(s)"
echo "- Captures from \`examples/gen_capture.rs\` (seed $SEED, port $PORT); open sessions and connections are the generator's \`detail.max_concurrent_clients\` and \`detail.max_concurrent_connections\`"
echo
python3 - "$POINTS" <<'EOF'
import json, sys

rows = []
for line in open(sys.argv[1]):
    series, size, conc, counts, rss, wall = line.rstrip("\n").split("\t")
    c = json.load(open(counts))["counts"]
    rows.append(dict(series=series, size=size, conc=int(conc), bytes=c["bytes"], sessions=c["sessions"],
                     conns=c["connections"], open_s=c["detail"]["max_concurrent_clients"],
                     open_c=c["detail"]["max_concurrent_connections"], rss=int(rss) * 1024, wall=float(wall)))


def solve(a, b):
    """Solves a·x = b (small dense system) by Gaussian elimination with partial pivoting."""
    n = len(b)
    m = [list(map(float, r)) + [float(v)] for r, v in zip(a, b)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        if abs(m[p][i]) < 1e-12:
            return None
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [x - f * y for x, y in zip(m[r], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def lstsq(xs, ys):
    """Least squares for y ≈ x·beta (each x a list, the first element 1 for the intercept)."""
    k = len(xs[0])
    ata = [[sum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    aty = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(k)]
    return solve(ata, aty)


def corr(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    saa = sum((x - ma) ** 2 for x in a)
    sbb = sum((y - mb) ** 2 for y in b)
    return sab / (saa * sbb) ** 0.5 if saa and sbb else float("nan")


MiB = 1 << 20
for series, title in (("concurrency", "Concurrency at a fixed size"), ("size", "Size at a fixed concurrency")):
    rs = [r for r in rows if r["series"] == series]
    if not rs:
        continue
    print(f"### {title}")
    print()
    print("| capture | --concurrency | sessions | connections | open sessions | open connections | wall s | peak RSS MiB | RSS × first |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rs:
        print(f"| {r['size']} | {r['conc']} | {r['sessions']:,} | {r['conns']:,} | {r['open_s']:,} | {r['open_c']:,} | "
              f"{r['wall']:.2f} | {r['rss'] / MiB:.1f} | {r['rss'] / rs[0]['rss']:.2f} |")
    print()
    if series == "concurrency" and len(rs) >= 2:
        fit = lstsq([[1, r["open_s"]] for r in rs], [r["rss"] for r in rs])
        fitc = lstsq([[1, r["open_c"]] for r in rs], [r["rss"] for r in rs])
        if fit and fitc:
            print(f"Slope of this series: **{fit[1]:,.0f} bytes of peak RSS per open session** (its connections included; "
                  f"base {fit[0] / MiB:.1f} MiB), or {fitc[1]:,.0f} bytes per open connection if all of it is put on "
                  f"connections (base {fitc[0] / MiB:.1f} MiB).")
            print()
    if series == "size" and len(rs) >= 2:
        lo, hi = rs[0], rs[-1]
        fit = lstsq([[1, r["sessions"]] for r in rs], [r["rss"] for r in rs])
        print(f"Peak RSS of {hi['size']} is {hi['rss'] / lo['rss']:.2f}× that of {lo['size']} for "
              f"{hi['bytes'] / lo['bytes']:.1f}× the bytes and {hi['sessions'] / lo['sessions']:.1f}× the sessions"
              + (f"; it grows by {fit[1]:,.0f} bytes per session in the run (slope of this series)." if fit else "."))
        print()

pts = {}
for r in rows:
    pts[(r["size"], r["conc"])] = r
pts = list(pts.values())
print("### Fit over all captures")
print()
if len(pts) < 4:
    print(f"{len(pts)} distinct captures: too few to fit three parameters.")
else:
    # What is open and what the run has seen so far: the concurrency series varies the first at
    # a fixed length, the size series the second at a fixed concurrency, so the two are apart.
    fit = lstsq([[1, r["open_s"], r["sessions"]] for r in pts], [r["rss"] for r in pts])
    if not fit:
        print("The fit is singular.")
    else:
        base, a, b = fit
        pred = [base + a * r["open_s"] + b * r["sessions"] for r in pts]
        res = [r["rss"] - p for r, p in zip(pts, pred)]
        rms = (sum(x * x for x in res) / len(res)) ** 0.5
        per_conn = sum(r["open_c"] for r in pts) / sum(r["open_s"] for r in pts)
        print(f"peak RSS ≈ {base / MiB:.1f} MiB + **{a:,.0f} bytes per open session** (with its "
              f"{per_conn:.2f} open connections: **{a / per_conn:,.0f} bytes per open connection** if all of "
              f"it is put on connections) + **{b:,.0f} bytes per session in the run** "
              f"({len(pts)} captures; residuals RMS {rms / MiB:.1f} MiB, largest {max(abs(x) for x in res) / MiB:.1f} MiB).")
        print()
        print("The generator opens about the same number of connections per session in every capture "
              f"(r = {corr([r['open_s'] for r in pts], [r['open_c'] for r in pts]):.3f} between open sessions and "
              "open connections), so what a session holds and what its connections hold cannot be told apart "
              "by these captures; the two figures above are the same memory put on one or the other.")
        print()
        print("| capture | --concurrency | peak RSS MiB | fitted MiB | residual MiB |")
        print("|---|---:|---:|---:|---:|")
        for r, p, e in zip(pts, pred, res):
            print(f"| {r['size']} | {r['conc']} | {r['rss'] / MiB:.1f} | {p / MiB:.1f} | {e / MiB:+.1f} |")
EOF
if [ "$FAILED" != 0 ]; then
    echo
    echo "**A run failed or a count check did not match** (files in $BENCH_DIR)."
fi
log "done; files in $BENCH_DIR"
exit $FAILED
