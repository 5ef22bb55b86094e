#!/usr/bin/env bash
# Benchmark of issue 12: `evalfleet compare` of two 1,000,000-item reports (the bootstrap, the
# per-group comparisons and the flip list included). The two reports come from two generated
# datasets with the same ids and different content (seeds 7 and 8), run with the heuristic
# judge, so about a third of the items flip. Prints wall time and peak RSS of `compare`
# (target: ≤ 30 s and ≤ 512 MiB).
#   usage: scripts/bench-compare.sh [N] [SUITE]   (default 1000000 support-judge; SUITE may be
#          rag-layers: 2 scores and 14 continuous metrics per item, 2.2 GB reports)
#   BENCH_KEEP=DIR keeps the two reports in DIR and reuses them on the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
suite=${2:-support-judge}
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet
if [ -n "${BENCH_KEEP:-}" ]; then
  work=$BENCH_KEEP
  mkdir -p "$work"
  rm -rf "$work/cmp"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
bin=target/release/evalfleet
for seed in 7 8; do
  [ -f "$work/seed-$seed/report.json" ] && continue
  $bin generate "$suite" -n "$n" --seed "$seed" --out "$work/data-$seed.jsonl"
  $bin run "$work/data-$seed.jsonl" --suite "$suite" --run-id "seed-$seed" --out "$work/seed-$seed" >/dev/null || true
  rm "$work/data-$seed.jsonl"
done
echo "$suite reports: $n items each, $(du -h "$work/seed-7/report.json" | cut -f1) and $(du -h "$work/seed-8/report.json" | cut -f1)"
RUST_LOG=${RUST_LOG:-evalfleet_compare=debug} /usr/bin/time -f "%e %M" -o "$work/time" $bin compare "$work/seed-7" "$work/seed-8" --out "$work/cmp" > "$work/out" || true
cat "$work/out"
read -r secs kb < "$work/time"
awk -v s="$secs" -v k="$kb" 'BEGIN { printf "compare: %.2f s wall, peak RSS %.1f MiB\n", s, k / 1024 }'
ls -la "$work/cmp"
python3 - "$work/cmp/compare.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for q in c["comparisons"]:
    print(f'{q["kind"]:6} {q["name"]:10} n={q["n"]} delta={q["delta"]:+.5f} ci={q["ci_method"]}({q["bootstrap_resampling"]}) p={q["p_value"]:.3g}')
print("group comparisons:", len(c["groups"]), "· flips:", len(c["flips"]["pass_to_fail"]), "pass→fail,", len(c["flips"]["fail_to_pass"]), "fail→pass")
PY
