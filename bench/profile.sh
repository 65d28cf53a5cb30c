#!/usr/bin/env bash
# Instructions per stage of `mcp-forensics analyze`, from valgrind's callgrind.
#
#   bench/profile.sh > profile.md                       # markdown on stdout, progress on stderr
#   BIN=/path/to/mcp-forensics-debuginfo SIZE=64MiB bench/profile.sh
#
# Runs `valgrind --tool=callgrind BIN analyze --threads 1 --format json -q FILE` on a synthetic
# capture, reads the inclusive cost of each function from `callgrind_annotate --inclusive=yes`, and
# splits the instructions into the stages of STAGES below. With one thread the stages nest (the
# reassembler calls the HTTP stage of the connection's shard, which reads the JSON-RPC of each
# message it finds, then the MCP builder, which calls the analysis when a session ends, which
# renders its record), so a stage is the inclusive cost of its entry points
# minus that of the entry points of the stages it calls. Costs of a function that callgrind lists
# under several source files (inlined code) are taken from the outermost, the largest.
#
# Environment:
#   BIN          binary with line tables (default: built with
#                CARGO_PROFILE_RELEASE_DEBUG=line-tables-only into $CARGO_TARGET_DIR/debuginfo)
#   FILE         capture to profile (default: generated with GEN, SIZE, SEED, PORT)
#   SIZE         size of the generated capture (default 32MiB); SEED (1), PORT (8080)
#   NOISE_SHARE  generate a mostly-not-MCP capture with this share of other traffic (e.g. 0.96;
#                default: all MCP)
#   GEN          prebuilt gen_capture (default: `cargo build --release --example gen_capture`)
#   PROFILE_DIR  where the capture, callgrind.out and the annotation go (default: a new
#                temporary directory); KEEP=1 keeps the capture
#   CALLGRIND_OUT  an existing callgrind.out of such a run, with FILE the capture it read:
#                only the table is computed again (after editing STAGES, say)
set -euo pipefail
LOG_TAG=profile
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# --- stages ----------------------------------------------------------------------------------
# One line per stage: label | entry points added | entry points subtracted. Entry points are
# function names exactly as callgrind_annotate prints them (without the file), separated by " ; ".
# Pick functions that are real calls (not inlined) and are only called from within the stage's
# own entry points when subtracted. Edit this list when functions are renamed: a name not found in
# the profile is reported and counts as zero. "other" (start-up, exit, anything outside the entry
# points) is the total minus the stages. STAGES in the environment replaces this list.
DEFAULT_STAGES='
reading the capture (capture::reader) | mcpf_capture::reader::CaptureReader::next_frame |
link, IP, TCP decoding, reassembly (capture) | mcpf_capture::run | mcpf_capture::reader::CaptureReader::next_frame ; <mcpf_http::Stage<S> as mcpf_capture::tcp::TcpSink>::on_tcp ; mcpf_mcp::builder::prepared::<impl mcpf_mcp::builder::Builder>::on_prepared
HTTP framing, chunked decoding, bodies (http::conn) | <mcpf_http::Stage<S> as mcpf_capture::tcp::TcpSink>::on_tcp | mcpf_http::sse::SseParser::feed ; mcpf_mcp::builder::prepared::prepare
SSE parsing (http::sse) | mcpf_http::sse::SseParser::feed |
JSON-RPC envelopes and event records (mcp::prepare) | mcpf_mcp::builder::prepared::prepare |
MCP session building (mcp::builder) | mcpf_mcp::builder::prepared::<impl mcpf_mcp::builder::Builder>::on_prepared ; mcpf_mcp::builder::Builder::finish | mcpf_mcp::builder::lifetime::<impl mcpf_mcp::builder::Builder>::finalize
analysis at session end: unpacking, attribution, detectors (finalize) | mcpf_mcp::builder::lifetime::<impl mcpf_mcp::builder::Builder>::finalize | mcpf_report::analyze::writer::SessionWriter::write
rendering session records (report) | mcpf_report::analyze::writer::SessionWriter::write |
assembling the JSON document (report) | mcpf_report::analyze::json::write_json |
'
STAGES=${STAGES:-$DEFAULT_STAGES}

SIZE=${SIZE:-32MiB}
SEED=${SEED:-1}
PORT=${PORT:-8080}
KEEP=${KEEP:-0}
PROFILE_DIR=$(bench_dir "${PROFILE_DIR:-}" mcp-forensics-profile)

apt_install valgrind:valgrind callgrind_annotate:valgrind python3:python3
if [ -n "${CALLGRIND_OUT:-}" ]; then
    [ -n "${FILE:-}" ] || { log "CALLGRIND_OUT needs FILE, the capture it profiled"; exit 2; }
    BIN=${BIN:-$(sed -n 's/^cmd: *\([^ ]*\).*/\1/p' "$CALLGRIND_OUT" | head -1)}
elif [ -z "${BIN:-}" ]; then
    DEBUG_TARGET="$(target_dir)/debuginfo"
    log "building mcp-forensics with line tables into $DEBUG_TARGET"
    (cd "$REPO" && CARGO_TARGET_DIR="$DEBUG_TARGET" CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
        cargo build --release --quiet --bin mcp-forensics >&2)
    BIN="$DEBUG_TARGET/release/mcp-forensics"
fi
[ -n "${CALLGRIND_OUT:-}" ] || [ -x "$BIN" ] || { log "BIN=$BIN is not an executable"; exit 2; }

GENERATED=0
if [ -z "${FILE:-}" ]; then
    GENERATED=1
    resolve_bins gen
    FILE="$PROFILE_DIR/profile-$SIZE.pcap"
    MIX=()
    [ -z "${NOISE_SHARE:-}" ] || MIX=(--noise-share "$NOISE_SHARE" --mcp-out "$FILE.mcp.pcap")
    log "generating $SIZE ${NOISE_SHARE:+(noise share $NOISE_SHARE) }-> $FILE"
    "$GEN" --size "$SIZE" --out "$FILE" --seed "$SEED" --port "$PORT" "${MIX[@]}" >/dev/null 2>&1
fi
BYTES=$(stat -c %s "$FILE")

OUT=${CALLGRIND_OUT:-$PROFILE_DIR/callgrind.out}
if [ -z "${CALLGRIND_OUT:-}" ]; then
    log "valgrind --tool=callgrind (about 10 s per 32 MiB on a 2-core VM)"
    rm -f "$OUT"
    set +e
    valgrind --tool=callgrind --callgrind-out-file="$OUT" "$BIN" analyze --threads 1 --format json -q "$FILE" \
        >"$PROFILE_DIR/report.json" 2>"$PROFILE_DIR/valgrind.log"
    status=$?
    set -e
    [ -s "$OUT" ] || { log "valgrind failed (exit $status), see $PROFILE_DIR/valgrind.log"; exit 1; }
    [ "$status" = 0 ] || log "note: analyze exited with $status under valgrind"
fi
callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$OUT" >"$PROFILE_DIR/annotate.txt"
log "callgrind output: $OUT; annotation: $PROFILE_DIR/annotate.txt"
[ "$GENERATED" = 0 ] || [ "$KEEP" = 1 ] || rm -f "$FILE" "$FILE.mcp.pcap"

BIN_V=$("$BIN" --version 2>/dev/null | head -1 || true)
echo "## Instructions per stage $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "- ${BIN_V:-mcp-forensics} (\`$BIN\`): \`analyze --threads 1 --format json -q\` under \`valgrind --tool=callgrind\`"
if [ "$GENERATED" = 1 ]; then
    echo "- Input: a $SIZE capture from \`examples/gen_capture.rs\` (seed $SEED, port $PORT${NOISE_SHARE:+, --noise-share $NOISE_SHARE}), $BYTES bytes"
else
    echo "- Input: \`$FILE\`, $BYTES bytes"
fi
echo
python3 - "$PROFILE_DIR/annotate.txt" "$BYTES" "$STAGES" <<'EOF'
import re, sys

annotate, nbytes, stages_text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
line_re = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)\s*$")
obj_re = re.compile(r"\s\[[^\[\]]*\]$")
total = None
incl = {}
for line in open(annotate, encoding="utf-8", errors="replace"):
    m = line_re.match(line)
    if not m:
        continue
    cost, rest = int(m.group(1).replace(",", "")), m.group(2)
    if rest == "PROGRAM TOTALS":
        total = cost
        continue
    rest = obj_re.sub("", rest)
    fn = rest.split(":", 1)[1] if ":" in rest else rest
    # The same function under several files: the inlined parts are callees of the outer entry.
    incl[fn] = max(incl.get(fn, 0), cost)
if not total:
    sys.exit("no PROGRAM TOTALS in " + annotate)

stages, missing, used = [], [], []
for line in stages_text.strip().splitlines():
    parts = [p.strip() for p in line.split("|")]
    while len(parts) < 3:
        parts.append("")
    label, plus, minus = parts[:3]
    plus = [f.strip() for f in plus.split(" ; ") if f.strip()]
    minus = [f.strip() for f in minus.split(" ; ") if f.strip()]
    for f in plus + minus:
        if f not in incl and f not in missing:
            missing.append(f)
        if f not in used:
            used.append(f)
    cost = sum(incl.get(f, 0) for f in plus) - sum(incl.get(f, 0) for f in minus)
    lost = [f for f in plus + minus if f not in incl]
    if plus and len([f for f in plus if f not in incl]) == len(plus):
        note = " (entry points not found)"
    elif lost:
        note = f" (incomplete: {len(lost)} entry point(s) not found)"
    else:
        note = ""
    stages.append((label, cost, note))
other = total - sum(c for _, c, _ in stages)

print(f"| stage | instructions | share | per input byte |")
print("|---|---:|---:|---:|")
for label, cost, note in stages + [("other (start-up, exit, outside the entry points)", other, "")]:
    if cost < 0:
        note += " (**negative: entry points overlap**)"
    print(f"| {label}{note} | {cost:,} | {100 * cost / total:.1f}% | {cost / nbytes:.2f} |")
print(f"| **total** | **{total:,}** | 100% | **{total / nbytes:.2f}** |")
print()
print("Entry points (inclusive instructions):")
print()
for f in used:
    print(f"- `{f}`: " + (f"{incl[f]:,}" if f in incl else "**not found in this binary** (renamed, inlined or gone: edit STAGES in bench/profile.sh)"))
if missing:
    print(f"\n{len(missing)} entry point(s) not found; the stages that use them are incomplete.", file=sys.stderr)
EOF
