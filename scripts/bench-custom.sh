#!/usr/bin/env bash
# Benchmark of issue 9: a custom suite (one judge dimension, three checks:
# scripts/bench/support-custom.yaml) against the built-in support-judge, both with the heuristic
# judge, on the same generated support-judge rows, in the same run of this script. Prints wall
# time, examples/s, CPU-µs per example (user + system, all threads) and peak RSS of each, and the
# custom/built-in throughput ratio. Each suite runs REPEAT times, alternating, and the best
# (least disturbed) run of each is compared; every run is printed.
#   usage: scripts/bench-custom.sh [N] [REPEAT]      (defaults: 1000000, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
repeat=${2:-3}
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=target/release/evalfleet
$bin generate support-judge -n "$n" --seed 7 --out "$work/data.jsonl"
echo "dataset: $n support-judge examples, $(du -h "$work/data.jsonl" | cut -f1)"
measure() { # label, suite
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    $bin run "$work/data.jsonl" --suite "$2" --judge heuristic --out "$work/report-$1" \
    > "$work/out" || true
  read -r secs user sys kb < "$work/time"
  awk -v l="$1" -v s="$secs" -v u="$user" -v y="$sys" -v k="$kb" -v n="$n" \
    'BEGIN { printf "%-12s %7.2f s  %9.0f examples/s  %6.2f CPU-us/example  peak RSS %6.1f MiB\n",
             l, s, n / s, (u + y) * 1e6 / n, k / 1024 }' | tee -a "$work/results"
}
for _ in $(seq 1 "$repeat"); do
  measure built-in support-judge
  measure custom scripts/bench/support-custom.yaml
done
awk '{ rate[$1] = ($4 > rate[$1]) ? $4 : rate[$1] }
     END { printf "best: built-in %.0f/s, custom %.0f/s: custom runs at %.1f%% of built-in (target >= 80%%)\n",
           rate["built-in"], rate["custom"], 100 * rate["custom"] / rate["built-in"] }' "$work/results"
