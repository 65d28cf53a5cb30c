#!/usr/bin/env bash
# Thread scaling of `mcp-forensics analyze` on one capture.
#
#   bench/threads.sh FILE            # markdown on stdout, progress on stderr
#   THREADS="1 2 4" RUNS=5 bench/threads.sh FILE
#
# For each N of THREADS, runs `analyze --threads N --format json FILE` RUNS times, the N taking
# turns (1, 2, 8, 1, 2, 8, ...), and prints the median wall and CPU (user+sys) time, the speed-up
# over the first N (N=1 by default), and whether the JSON reports are byte-identical across N
# (cmp). When the report has `summary.shards` (one object per shard), it also prints those
# counts for the largest N and the max/mean ratio of each.
#
# Environment:
#   BIN       mcp-forensics binary (default: `cargo build --release`, CARGO_TARGET_DIR honoured)
#   THREADS   thread counts (default "1 2 8")
#   RUNS      runs per thread count (default 3)
#   OUT_DIR   where reports go (default: a new temporary directory); KEEP=1 keeps them
# Exits 1 when the reports differ or a run fails.
set -euo pipefail
LOG_TAG=threads
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# = 1 ] || { sed -n '2,18p' "$0" >&2; exit 2; }
CAP=$1
THREADS=${THREADS:-"1 2 8"}
RUNS=${RUNS:-3}
KEEP=${KEEP:-0}
OUT_DIR=$(bench_dir "${OUT_DIR:-}" mcp-forensics-threads)
apt_install python3:python3
resolve_bins bin

NAME=$(basename "$CAP")
TSV="$OUT_DIR/threads-$NAME.tsv"
: >"$TSV"
cat "$CAP" >/dev/null # page cache
for run in $(seq 1 "$RUNS"); do
    for n in $THREADS; do
        read -r W U S R X < <(measure --stdout "$OUT_DIR/threads-$NAME-$n.json" \
            --stderr "$OUT_DIR/threads-$NAME-$n.stderr" -- "$BIN" analyze --threads "$n" --format json -q "$CAP")
        log "$NAME --threads $n run $run: ${W}s wall, $(python3 -c "print(round($U+$S, 3))")s CPU, ${R} KiB, exit $X"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$W" "$U" "$S" "$R" "$X" >>"$TSV"
    done
done

FAILED=0
FIRST=${THREADS%% *}
SAME=()
for n in $THREADS; do
    if cmp -s "$OUT_DIR/threads-$NAME-$FIRST.json" "$OUT_DIR/threads-$NAME-$n.json"; then
        SAME+=("$n:yes")
    else
        SAME+=("$n:NO")
        FAILED=1
    fi
done
LAST=$(echo $THREADS | tr ' ' '\n' | sort -n | tail -1)

python3 - "$TSV" "$FIRST" "$OUT_DIR/threads-$NAME-$LAST.json" "$LAST" "$NAME" "${SAME[@]}" <<'EOF' || FAILED=1
import json, statistics, sys

tsv, first, report, last, name = sys.argv[1:6]
same = dict(s.split(":") for s in sys.argv[6:])
runs = {}
for line in open(tsv):
    n, w, u, s, r, x = line.split()
    runs.setdefault(n, []).append((float(w), float(u) + float(s), int(r), int(x)))

med = lambda xs: statistics.median(xs)
base = med([r[0] for r in runs[first]])
print(f"#### Threads on {name}")
print()
print(f"Median of {len(runs[first])} runs each, taking turns; `analyze --threads N --format json`.")
print()
print(f"| threads | wall s | CPU s | CPU % | speed-up over {first} | peak RSS MiB | report identical to {first} |")
print("|---:|---:|---:|---:|---:|---:|---|")
bad = False
for n, rs in runs.items():
    w, c, r = med([x[0] for x in rs]), med([x[1] for x in rs]), med([x[2] for x in rs])
    fail = [x[3] for x in rs if x[3] != 0]
    bad |= bool(fail)
    note = f" (exit {fail[0]})" if fail else ""
    print(f"| {n} | {w:.3f} | {c:.3f} | {100 * c / w:.0f}% | {base / w:.2f}× | {r / 1024:.0f} | {same.get(n, '?')}{note} |")


def summary_of(path, chunk=1 << 20):
    """The report's `summary` object, read without loading the sessions (it comes first)."""
    dec = json.JSONDecoder()
    buf = ""
    with open(path, encoding="utf-8") as f:
        while True:
            more = f.read(chunk)
            buf += more
            at = buf.find('"summary":')
            if at >= 0:
                pos = buf.index("{", at)
                try:
                    return dec.raw_decode(buf, pos)[0]
                except json.JSONDecodeError:
                    pass
            if not more:
                return None


print()
try:
    summary = summary_of(report)
except (OSError, ValueError) as e:
    summary = None
    print(f"Could not read the summary of the --threads {last} report: {e}")
shards = (summary or {}).get("shards")
if not isinstance(shards, list) or not shards:
    print(f"The --threads {last} report has no `summary.shards`: no per-shard counts from this binary.")
else:
    LABELS = ["shard", "id", "index"]
    fields = []
    for s in shards:
        for k, v in (s.items() if isinstance(s, dict) else []):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in fields + LABELS:
                fields.append(k)
    print(f"`summary.shards` with --threads {last}:")
    print()
    print("| shard | " + " | ".join(fields) + " |")
    print("|---:|" + "---:|" * len(fields))
    for i, s in enumerate(shards):
        label = next((s[k] for k in LABELS if k in s), i) if isinstance(s, dict) else i
        print(f"| {label} | " + " | ".join(f"{s.get(k, 0):,}" for k in fields) + " |")
    ratios = []
    for k in fields:
        vals = [s.get(k, 0) for s in shards if isinstance(s, dict)]
        mean = sum(vals) / len(vals)
        ratios.append(f"{max(vals) / mean:.2f}" if mean else "-")
    print("| **max/mean** | " + " | ".join(ratios) + " |")
sys.exit(1 if bad else 0)
EOF

[ "$KEEP" = 1 ] || rm -f "$OUT_DIR"/threads-"$NAME"-*.json
if [ "$FAILED" != 0 ]; then
    log "FAILED: reports differ across thread counts or a run failed (see $OUT_DIR)"
fi
exit $FAILED
