#!/usr/bin/env bash
# Benchmark of issue 2: `evalfleet run` on a generated 1,000,000-example support-judge JSONL with
# the heuristic judge, report files included. Prints wall time, examples/s and peak RSS, and the
# same for `evalfleet validate` on the same file (read + validate only) as the in-run baseline.
#   usage: scripts/bench-run.sh [N]      (default N = 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=target/release/evalfleet
$bin generate support-judge -n "$n" --seed 7 --out "$work/data.jsonl"
echo "dataset: $n examples, $(du -h "$work/data.jsonl" | cut -f1)"
measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/out" || true
  read -r secs kb < "$work/time"
  awk -v l="$label" -v s="$secs" -v k="$kb" -v n="$n" \
    'BEGIN { printf "%-34s %7.2f s  %9.0f examples/s  peak RSS %6.1f MiB\n", l, s, n / s, k / 1024 }'
}
measure "validate (read + validate only)" $bin validate "$work/data.jsonl" --suite support-judge
measure "run --judge heuristic (+ reports)" $bin run "$work/data.jsonl" --suite support-judge --out "$work/report"
ls -la "$work/report"
