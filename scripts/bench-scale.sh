#!/usr/bin/env bash
# Benchmark of issue 20 (results flow through Redis, not into it): N support-judge examples
# (default 10,000,000; BENCH_N to change it) with the heuristic judge through the fleet — one
# worker and the aggregator — measuring what the run needs, not only how fast it goes:
#   - Redis used memory: peak above its level at the start, and what is left once the report
#     is written (the run's keys: a bit per example, counts, spec, summary);
#   - peak RSS of RabbitMQ (beam.smp, above its start), the worker and the aggregator;
#   - throughput submit → report, and how long the report took after the last result;
#   - the sizes of items.parquet and report.json.
#   usage: scripts/bench-scale.sh            BENCH_N=1000000 scripts/bench-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
bench_init evalfleet-scale 18671
n=${BENCH_N:-10000000}

cat > "$work/config.yaml" <<YAML
reports_dir: $work/reports
fleet: {prefix: $prefix, worker_concurrency: 64, retention_hours: 1}
YAML

echo "generating $n examples"
"$bin" generate support-judge -n "$n" --seed 20 --out "$work/data.jsonl"
mem() { redis-cli info memory | awk -F: '/^used_memory:/ {print $2+0}'; }
beam=$(pgrep -o beam.smp)
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
redis_start=$(mem)
beam_start=$(rss_kb "$beam")

# The aggregator logs how long each report took (`report_seconds`).
RUST_LOG=info role aggregator aggregator --http-addr 127.0.0.1:18680
role worker worker --metrics-addr 127.0.0.1:18681
sleep 1

# Redis's memory and RabbitMQ's RSS, sampled each second until the report exists.
(redis_peak=$redis_start; beam_peak=$beam_start; while :; do
   m=$(mem); b=$(rss_kb "$beam")
   [ "$m" -gt "$redis_peak" ] && redis_peak=$m
   [ "$b" -gt "$beam_peak" ] && beam_peak=$b
   echo "$redis_peak $beam_peak" > "$work/peaks"
   sleep 1
 done) &
sampler=$!
pids+=("$sampler")

t0=$(date +%s.%N)
"$bin" --config "$work/config.yaml" submit "$work/data.jsonl" --run-id "$prefix-run" --judge heuristic --wait > "$work/submit.out" 2>&1 || true
t1=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
read -r redis_peak beam_peak < "$work/peaks"
sleep 2
redis_after=$(mem)
last=$(sed 's/\x1b\[[0-9;]*m//g' "$work/aggregator.log" | grep -o 'report_seconds=[0-9.]*' | tail -1 | cut -d= -f2 || true)
dir="$work/reports/$prefix-run"

python3 - "$n" "$t0" "$t1" "$redis_start" "$redis_peak" "$redis_after" "$beam_start" "$beam_peak" \
  "$(peak_kb "$worker_pid")" "$(peak_kb "$aggregator_pid")" "${last:-nan}" \
  "$(stat -c %s "$dir/items.parquet")" "$(stat -c %s "$dir/report.json")" "$(du -sb "$dir/.results" | cut -f1)" <<'PY'
import sys
n, t0, t1, rs, rp, ra, bs, bp, w, a, last, parquet, report, logs = sys.argv[1:]
n = int(n); mib = 1 << 20
print(f"{n} examples, heuristic judge, 1 worker + aggregator")
print(f"  submit → report: {float(t1) - float(t0):.0f} s = {n / (float(t1) - float(t0)):.0f} examples/s")
print(f"  report written in {float(last):.1f} s after the last result")
print(f"  Redis used memory: peak {(int(rp) - int(rs)) / mib:.0f} MiB above its start, "
      f"{(int(ra) - int(rs)) / mib:.1f} MiB left after the report")
print(f"  RabbitMQ RSS: peak {(int(bp) - int(bs)) / 1024:.0f} MiB above its start")
print(f"  worker peak RSS {int(w) / 1024:.0f} MiB, aggregator peak RSS {int(a) / 1024:.0f} MiB")
print(f"  items.parquet {int(parquet) / mib:.1f} MiB, report.json {int(report) / mib:.1f} MiB, "
      f"result logs {int(logs) / mib:.1f} MiB")
PY
