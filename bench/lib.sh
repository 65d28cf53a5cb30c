# Shared by bench/run.sh, threads.sh, memory.sh and profile.sh; sourced, not run.
#
# Sets REPO and BENCH_LIB; defines log, apt_install, target_dir, resolve_bins, measure.

BENCH_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_LIB/.." && pwd)

log() { printf '[%s] %s\n' "${LOG_TAG:-bench}" "$*" >&2; }

# apt_install CMD:PACKAGE...  installs from Debian the packages whose command is missing
# (`/usr/bin/time` is checked as a path).
apt_install() {
    local pkgs=() item cmd pkg
    for item in "$@"; do
        cmd=${item%%:*} pkg=${item#*:}
        case "$cmd" in
        /*) [ -x "$cmd" ] || pkgs+=("$pkg") ;;
        *) command -v "$cmd" >/dev/null || pkgs+=("$pkg") ;;
        esac
    done
    [ ${#pkgs[@]} -gt 0 ] || return 0
    log "installing ${pkgs[*]} from Debian"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >&2
}

# The cargo target directory (CARGO_TARGET_DIR honoured).
target_dir() {
    if [ -n "${CARGO_TARGET_DIR:-}" ]; then
        echo "$CARGO_TARGET_DIR"
    else
        (cd "$REPO" && cargo metadata --format-version 1 --no-deps |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
    fi
}

# resolve_bins [bin] [gen] [floor]: sets BIN (mcp-forensics), GEN (gen_capture) and FLOOR
# (read_floor), building with `cargo build --release` only those the environment does not give.
resolve_bins() {
    local args=() want td
    for want in "$@"; do
        case "$want" in
        bin) [ -n "${BIN:-}" ] || args+=(--bin mcp-forensics) ;;
        gen) [ -n "${GEN:-}" ] || args+=(--example gen_capture) ;;
        floor) [ -n "${FLOOR:-}" ] || args+=(--example read_floor) ;;
        esac
    done
    if [ ${#args[@]} -gt 0 ]; then
        log "building: cargo build --release ${args[*]}"
        (cd "$REPO" && cargo build --release --quiet "${args[@]}" >&2)
        td=$(target_dir)
        BIN=${BIN:-$td/release/mcp-forensics}
        GEN=${GEN:-$td/release/examples/gen_capture}
        FLOOR=${FLOOR:-$td/release/examples/read_floor}
    fi
    for want in "$@"; do
        case "$want" in
        bin) [ -x "$BIN" ] || { log "BIN=$BIN is not an executable"; exit 2; } ;;
        gen) [ -x "$GEN" ] || { log "GEN=$GEN is not an executable"; exit 2; } ;;
        floor) [ -x "$FLOOR" ] || { log "FLOOR=$FLOOR is not an executable"; exit 2; } ;;
        esac
    done
}

# measure [--stdout F] [--stderr F] -- CMD...  ->  "wall user sys peak_rss_kib status"
measure() { python3 "$BENCH_LIB/measure.py" "$@"; }

# bench_dir DIR|"" PREFIX: DIR made absolute (or a new temporary one), refused inside the repo.
bench_dir() {
    local dir=${1:-}
    [ -n "$dir" ] || dir=$(mktemp -d "${TMPDIR:-/tmp}/$2.XXXXXX")
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    case "$dir/" in
    "$REPO"/*) log "the output directory must be outside the repository: $dir"; exit 2 ;;
    esac
    echo "$dir"
}
