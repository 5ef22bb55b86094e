#!/usr/bin/env bash
# Issue 11's fleet benchmark: N support-judge examples (default 100,000) through one worker and
# the aggregator, first with live judges against a zero-latency fake provider, then in batch
# mode against the same fake with a short batch processing time (--batch-processing-ms 1000).
# Reports, per mode: submit → report wall time, CPU-µs per example of each fleet process (worker,
# aggregator, Redis, RabbitMQ, submit; counted until the fleet is idle again) — the fleet's own
# overhead; the fake's processing time costs no CPU — and their sum's ratio (target ≤ 2×), and
# the peak RSS of the worker (the batch coordinator runs inside it) and the aggregator (target
# ≤ 256 MiB each).
#   usage: scripts/bench-fleet-batch.sh [N]      (BENCH_KEEP=DIR keeps the processes' logs there)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
. scripts/bench-lib.sh
bench_init evalfleet-bench-batch 18591
fake --batch-processing-ms 1000

cat > "$work/config.yaml" <<YAML
reports_dir: $work/reports
fleet: {prefix: $prefix, worker_concurrency: 256, fleet_rate_limits: false, retention_hours: 1}
providers:
  openai: {api: openai, base_url: "http://127.0.0.1:$port/v1", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 256, timeout_s: 60}
  anthropic: {api: anthropic, base_url: "http://127.0.0.1:$port", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 256, timeout_s: 60}
judges:
  cache: false
  batch: {max_wait_s: 5, poll_s: 0.5, max_poll_s: 2}
YAML
"$bin" generate support-judge -n "$n" --seed 31 --out "$work/data.jsonl"

role agg aggregator --http-addr 127.0.0.1:18592
role worker worker -j 256 --metrics-addr 127.0.0.1:18593
sleep 1

# CPU seconds of each pid, space-separated, in the order given.
cpu_each() { python3 -c '
import sys
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100
print(" ".join(str(cpu(p)) for p in sys.argv[1:]))' "$@"; }
now() { python3 -c "import time; print(time.time())"; }
# Waits until the fleet is idle (its CPU grows < 0.05 s over 0.5 s): what a mode leaves behind
# (events folded after its report, batches being closed) is charged to it, not to the next.
settle() { python3 -c '
import sys, time
def total():
    s = 0
    for pid in sys.argv[1:]:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        s += (int(f[11]) + int(f[12])) / 100
    return s
last = total()
for _ in range(60):
    time.sleep(0.5)
    now = total()
    if now - last < 0.05:
        break
    last = now' "$@"; }
procs="$worker_pid $agg_pid $(pgrep -o redis-server) $(pgrep -o beam.smp)"

for mode in live batch; do
  # Redis's memory, sampled each second, above its level when the mode starts: parked
  # examples and queued questions live there.
  echo 0 > "$work/redis.$mode"
  (base=$(redis-cli info memory | awk -F: '/^used_memory:/ {print $2+0}'); peak=$base; while :; do
     m=$(redis-cli info memory | awk -F: '/^used_memory:/ {print $2+0}')
     [ "$m" -gt "$peak" ] && peak=$m && echo "$((peak - base))" > "$work/redis.$mode"
     sleep 1
   done) &
  sampler=$!
  # Peak RSS per mode: writing 5 to clear_refs resets a process's high-water mark.
  for p in $worker_pid $agg_pid; do echo 5 > "/proc/$p/clear_refs"; done
  before=$(cpu_each $procs)
  t0=$(now)
  /usr/bin/time -f "%U %S" -o "$work/submit.time" \
    "$bin" --config "$work/config.yaml" submit "$work/data.jsonl" --judge live --judge-mode "$mode" \
    --run-id "$prefix-$mode" --wait > "$work/$mode.out" 2>&1 || true
  t1=$(now)
  settle $procs
  after=$(cpu_each $procs)
  kill "$sampler"
  echo "$(peak_kb "$worker_pid") $(peak_kb "$agg_pid")" > "$work/rss.$mode"
  read -r su ss < <(tail -1 "$work/submit.time")
  echo "$mode $(python3 -c "print($t1 - $t0)") $before | $after | $su $ss" >> "$work/figures"
  grep -E "ok|failed" "$work/$mode.out" | head -3 || true
done
python3 - "$work/figures" "$n" "$(cat "$work/rss.live")" "$(cat "$work/rss.batch")" "$(cat "$work/redis.live")" "$(cat "$work/redis.batch")" <<'PY'
import sys
names = ["worker", "aggregator", "redis", "rabbitmq", "submit"]
rows = {}
for l in open(sys.argv[1]):
    mode, wall, rest = l.split(" ", 2)
    before, after, submit = (list(map(float, part.split())) for part in rest.split("|"))
    rows[mode] = (float(wall), [a - b for a, b in zip(after, before)] + [sum(submit)])
n = int(sys.argv[2])
(lw, la), (bw, ba) = (map(lambda kb: float(kb) / 1024, a.split()) for a in sys.argv[3:5])
print(f"{n:,} support-judge examples, 1 worker (-j 256) + aggregator, zero-latency fake; batches processed in 1 s")
print("  CPU-µs per example: " + " ".join(f"{x:>10}" for x in names + ["fleet"]))
for mode, (wall, cpu) in rows.items():
    per = [c / n * 1e6 for c in cpu]
    print(f"  {mode:5} ({wall:6.1f} s):  " + " ".join(f"{x:10.0f}" for x in per + [sum(per)]))
lc, bc = sum(rows["live"][1]), sum(rows["batch"][1])
print(f"  batch / live fleet CPU: {bc/lc:.2f}x (target ≤ 2x)")
print(f"  peak RSS, live : worker {lw:.0f} MiB, aggregator {la:.0f} MiB")
print(f"  peak RSS, batch: worker (with the batch coordinator) {bw:.0f} MiB, aggregator {ba:.0f} MiB (target ≤ 256 MiB)")
rl, rb = int(sys.argv[5]) / 2**20, int(sys.argv[6]) / 2**20
print(f"  Redis used memory, peak above the mode's start: live {rl:.0f} MiB, batch {rb:.0f} MiB")
PY
