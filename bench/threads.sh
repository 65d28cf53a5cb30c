#!/usr/bin/env bash
# Thread scaling of `mcp-forensics analyze` on one capture.
#
#   bench/threads.sh FILE            # markdown on stdout, progress on stderr
#   THREADS="1 2 4" RUNS=5 bench/threads.sh FILE
#
# For each N of THREADS, runs `analyze --threads N --format json FILE` RUNS times, the N taking
# turns (1, 2, 8, 1, 2, 8, ...), and prints the median wall and CPU (user+sys) time, the speed-up
# over the first N (N=1 by default), and whether the JSON reports are byte-identical across N
# (cmp). One more run at the largest N with `--shard-stats` gives the work of each shard of the
# per-connection stages (connections, TCP events, bytes, HTTP events): printed with the max/mean
# ratio of each, and the same summed per worker thread.
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
# Untimed: the work of each shard (an older binary without the flag prints nothing of it).
"$BIN" analyze --threads "$LAST" --workers "$LAST" --format json -q --shard-stats "$CAP" \
    >/dev/null 2>"$OUT_DIR/threads-$NAME-shards.stderr" || true

python3 - "$TSV" "$FIRST" "$OUT_DIR/threads-$NAME-shards.stderr" "$LAST" "$NAME" "${SAME[@]}" <<'EOF' || FAILED=1
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


def shard_stats(path):
    """The `{"shard_stats": [...]}` line `--shard-stats` prints on standard error."""
    try:
        for line in open(path, encoding="utf-8", errors="replace"):
            if line.startswith('{"shard_stats"'):
                return json.loads(line)["shard_stats"]
    except (OSError, ValueError):
        pass
    return None


def table(rows, label, fields):
    print(f"| {label} | " + " | ".join(fields) + " |")
    print("|---:|" + "---:|" * len(fields))
    for key, r in rows:
        print(f"| {key} | " + " | ".join(f"{r.get(k, 0):,}" for k in fields) + " |")
    ratios = []
    for k in fields:
        vals = [r.get(k, 0) for _, r in rows]
        mean = sum(vals) / len(vals)
        ratios.append(f"{max(vals) / mean:.2f}" if mean else "-")
    print("| **max/mean** | " + " | ".join(ratios) + " |")
    print()


print()
shards = shard_stats(report)
if not shards:
    print(f"No per-shard counts: this binary has no `--shard-stats`.")
else:
    fields = [k for k in shards[0] if k not in ("shard", "worker")]
    print(f"Work of each shard of the per-connection stages, `--threads {last} --workers {last} --shard-stats`:")
    print()
    table([(s["shard"], s) for s in shards], "shard", fields)
    workers = {}
    for s in shards:
        w = workers.setdefault(s["worker"], {})
        for k in fields:
            w[k] = w.get(k, 0) + s[k]
    print(f"The same by worker thread (`--threads {last} --workers {last}`):")
    print()
    table(sorted(workers.items()), "worker", fields)
sys.exit(1 if bad else 0)
EOF

[ "$KEEP" = 1 ] || rm -f "$OUT_DIR"/threads-"$NAME"-*.json
if [ "$FAILED" != 0 ]; then
    log "FAILED: reports differ across thread counts or a run failed (see $OUT_DIR)"
fi
exit $FAILED
