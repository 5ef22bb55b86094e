#!/usr/bin/env bash
# Benchmark of issue 21 (code scorers): `evalfleet run` on N generated support-judge rows with a
# custom suite whose one check is a `command` scorer (scripts/bench/trivial_scorer.py, one
# Python process per core: reads each request, answers 1.0), against the same suite with a
# deterministic `length` check instead (the baseline: everything but the scorer). No judge.
# Prints wall time, items/s, CPU-µs per item (evalfleet and its scorer processes, user + sys)
# and evalfleet's peak RSS; each suite runs REPEAT times, alternating; the best of each counts.
#   usage: scripts/bench-scorers.sh [N] [REPEAT] [PROCESSES]   (defaults: 200000, 3, one per core)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
repeat=${2:-3}
processes=${3:-}
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=target/release/evalfleet
$bin generate support-judge -n "$n" --seed 7 --out "$work/data.jsonl"
echo "dataset: $n support-judge rows, $(du -h "$work/data.jsonl" | cut -f1); python: $(python3 --version)"
suite() { # file, check
  cat > "$1" <<YAML
name: scorer-bench
kind: custom
record:
  fields:
    ticket: {type: string, required: true}
    response: {type: string, required: true}
    model: {type: string, required: true}
    prompt_version: {type: string, required: true}
checks:
  - $2
group_by:
  - {name: by_model, keys: [model]}
YAML
}
extra=${processes:+, processes: $processes}
suite "$work/scorer.yaml" "{name: trivial, type: command, command: [python3, scripts/bench/trivial_scorer.py], fields: [response]$extra}"
suite "$work/baseline.yaml" "{name: trivial, type: length, field: response, min: 1}"
measure() { # label, suite
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    $bin run "$work/data.jsonl" --suite "$2" --judge none --out "$work/report-$1" > "$work/out"
  read -r secs user sys kb < "$work/time"
  grep -q "ok $n " "$work/out" || { cat "$work/out"; echo "not every item is ok"; exit 1; }
  awk -v l="$1" -v s="$secs" -v u="$user" -v y="$sys" -v k="$kb" -v n="$n" \
    'BEGIN { printf "%-9s %7.2f s  %8.0f items/s  %6.2f CPU-us/item  peak RSS %6.1f MiB\n",
             l, s, n / s, (u + y) * 1e6 / n, k / 1024 }' | tee -a "$work/results"
}
for _ in $(seq 1 "$repeat"); do
  measure baseline "$work/baseline.yaml"
  measure scorer "$work/scorer.yaml"
done
awk '{ rate[$1] = ($4 > rate[$1]) ? $4 : rate[$1] }
     END { printf "best: baseline %.0f items/s, command scorer %.0f items/s (target >= 5,000)\n",
           rate["baseline"], rate["scorer"] }' "$work/results"
