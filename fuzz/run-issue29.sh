#!/usr/bin/env bash
# Coverage-guided fuzzing of the readers issue 29 names (HTTP/2 and HPACK, TLS records, the HAR
# reader), each for SECONDS (default: one hour), by hand, not in CI: needs nightly Rust and
# cargo-fuzz (`cargo install cargo-fuzz`). Crashes, hangs and out-of-memory inputs land in
# fuzz/artifacts/<target>/; make each a case of tests/fuzz_regressions.rs (see README.md).
#
#   fuzz/run-issue29.sh                 # h2, tls_records, har: an hour each
#   SECONDS_EACH=600 TARGETS="h2" fuzz/run-issue29.sh
#
# TIMEOUT_EACH (default 60) is libFuzzer's limit on one input, in wall seconds: on a loaded
# machine a fuzzer run at low priority can wait 10 s for a core with an input that takes 1 ms.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${SECONDS_EACH:-3600}
targets=${TARGETS:-h2 tls_records har}
for t in $targets; do
    mkdir -p "corpus/$t" "artifacts/$t"
    # HTTP/2 starts from the TCP streams of the committed HTTP/2 captures' corpus.
    if [ "$t" = h2 ] && [ -z "$(ls -A corpus/h2)" ]; then
        cp corpus/reassembly_http/* corpus/h2/ 2>/dev/null || true
    fi
    echo "== $t: $seconds s" >&2
    cargo +nightly fuzz run -O "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=${TIMEOUT_EACH:-60} \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 2>&1 | tail -n 25 || true
done
echo "artifacts (crashes, hangs, ooms):" >&2
find artifacts -type f | sort
