#!/usr/bin/env bash
# Re-creates docs/html-report.png, the picture of the HTML report the README shows: the seed
# incident's client leg rendered by headless Chromium (Debian's package).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run --release --quiet -- analyze --format html -o "$tmp/seed.html" samples/seed-incident-client-leg.pcap || true
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$tmp/profile" --window-size=1100,1000 \
    --screenshot="$PWD/docs/html-report.png" "file://$tmp/seed.html"
