#!/usr/bin/env bash
# Regenerates the README's picture of a run report, examples/report.png: runs
# examples/largest_rust_files.ts over this repository with `--report`, then takes a
# screenshot of the report in headless Chromium (Debian's package, installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium ||
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; }
fi
mkdir -p target/report
cargo run --release --quiet -- run examples/largest_rust_files.ts --root . --quiet \
  --report target/report/largest_rust_files.html >/dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
  --user-data-dir="$profile" --window-size=1280,1000 \
  --screenshot="$PWD/examples/report.png" "file://$PWD/target/report/largest_rust_files.html" 2>/dev/null
echo "wrote examples/report.png"
