#!/usr/bin/env bash
# Benchmark of issue 21: what human-agreement and self-preference statistics add to the report
# of a 10^6-item run (target: <= 2 s).
#  1. In process (shared/report/examples/bench_human.rs): N results with a panel of an OpenAI and
#     an Anthropic judge on both dimensions, folded and rendered as a plain run and as a run with
#     human labels and answer providers; the difference is the statistics' cost.
#  2. End to end: `evalfleet run --judge heuristic` on the same N generated support-judge rows,
#     each with a `human_relevance` and a `human_tone` column, once with the built-in suite (the
#     columns are only metadata) and once with config/suites/support-judge-human.yaml (the
#     columns are labels: each result carries them, the report folds them, items.parquet has
#     their columns). REPEAT runs each, alternating; the best of each is compared.
#   usage: scripts/bench-human.sh [N] [REPEAT]      (defaults: 1000000, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
repeat=${2:-3}
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }

echo "== 1. in process: fold and render, plain vs labelled"
cargo run --release --quiet -p evalfleet-report --example bench_human -- "$n" "$repeat"

echo "== 2. end to end: evalfleet run --judge heuristic"
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=target/release/evalfleet
$bin generate support-judge -n "$n" --seed 7 --out "$work/plain.jsonl"
# Labels that agree with nothing in particular: 1..5 from the line number.
awk '{ sub(/}$/, ",\"human_relevance\":" (NR % 5 + 1) ",\"human_tone\":" ((NR * 7) % 5 + 1) "}"); print }' \
  "$work/plain.jsonl" > "$work/data.jsonl"
rm "$work/plain.jsonl"
echo "dataset: $n labelled support-judge examples, $(du -h "$work/data.jsonl" | cut -f1)"
measure() { # label, suite
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    $bin run "$work/data.jsonl" --suite "$2" --judge heuristic --out "$work/report-$1" \
    > "$work/out" || true
  read -r secs user sys kb < "$work/time"
  awk -v l="$1" -v s="$secs" -v u="$user" -v y="$sys" -v k="$kb" -v n="$n" \
    'BEGIN { printf "%-9s %7.2f s  %9.0f examples/s  %6.2f CPU-us/example  peak RSS %6.1f MiB\n",
             l, s, n / s, (u + y) * 1e6 / n, k / 1024 }' | tee -a "$work/results"
}
for _ in $(seq 1 "$repeat"); do
  measure plain support-judge
  measure labelled config/suites/support-judge-human.yaml
done
ls -l "$work/report-labelled/report.json" "$work/report-plain/report.json" \
  "$work/report-labelled/items.parquet" "$work/report-plain/items.parquet" | awk '{ print $5, $9 }'
awk '{ t = $2; if (!($1 in best) || t < best[$1]) best[$1] = t }
     END { printf "best: plain %.2f s, labelled %.2f s: human agreement adds %.2f s end to end (target <= 2 s)\n",
           best["plain"], best["labelled"], best["labelled"] - best["plain"] }' "$work/results"
