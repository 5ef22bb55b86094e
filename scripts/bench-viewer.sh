#!/usr/bin/env bash
# Issue 12: report.html of a 1,000,000-item run. Writes the reports of a generated support-judge
# run (heuristic judge), and measures the page's size and how long after navigation start its
# item browser is ready in headless Chromium, against the bundled 120-item example in the same
# run. Needs /usr/bin/chromium.   usage: scripts/bench-viewer.sh [N]   (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
cargo build --release --quiet
bin=target/release/evalfleet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" generate support-judge -n "$n" --seed 5 --out "$work/big.jsonl" >/dev/null
/usr/bin/time -f "%e s wall, %M KiB peak RSS" -o "$work/run.time" \
  "$bin" run "$work/big.jsonl" --suite support-judge --out "$work/big" >/dev/null || true
"$bin" run examples/support-judge.jsonl --suite support-judge --out "$work/small" >/dev/null || true
ready_ms() { # report.html -> ms from navigation start to the end of the page's scripts
  sed 's|</body></html>|<script>document.title="READY="+Math.round(performance.now())</script></body></html>|' "$1" > "$work/timed.html"
  rm -rf "$work/profile"
  timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --dump-dom "file://$work/timed.html" 2>/dev/null |
    grep -o 'READY=[0-9]*' | head -1 | cut -d= -f2
}
echo "run of $n items: $(cat "$work/run.time"); report.html $(du -h "$work/big/report.html" | cut -f1), report.json $(du -h "$work/big/report.json" | cut -f1)"
for i in 1 2 3; do
  echo "page ready: $n-item run $(ready_ms "$work/big/report.html") ms · 120-item run $(ready_ms "$work/small/report.html") ms"
done
