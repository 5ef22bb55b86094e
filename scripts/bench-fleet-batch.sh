#!/usr/bin/env bash
# Issue 11's fleet benchmark: N support-judge examples (default 100,000) through one worker and
# the aggregator, first with live judges against a zero-latency fake provider, then in batch
# mode against the same fake with a short batch processing time (--batch-processing-ms 1000).
# Reports, per mode: submit → report wall time, CPU seconds of every fleet process (worker,
# aggregator, Redis, RabbitMQ, submit) — the fleet's own overhead; the fake's processing time
# costs no CPU — and their ratio (target ≤ 2×), and the worker's peak RSS (the batch
# coordinator runs inside the worker; target ≤ 256 MiB).
#   usage: scripts/bench-fleet-batch.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
cargo build --release --quiet
bin=$PWD/target/release/evalfleet
work=$(mktemp -d)
pids=()
prefix="evalfleet-bench-batch-$$"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  redis-cli --scan --pattern "$prefix:*" | xargs -r -n 500 redis-cli del >/dev/null || true
  for q in examples dead; do rabbitmqctl delete_queue "$prefix.$q" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export BENCH_KEY=sk-bench-0123456789abcdef
port=18591

"$bin" fake-provider --port $port --api-key "$BENCH_KEY" --batch-processing-ms 1000 > "$work/fake.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done

cat > "$work/config.yaml" <<YAML
reports_dir: $work/reports
fleet: {prefix: $prefix, worker_concurrency: 256, fleet_rate_limits: false, retention_hours: 1}
judges:
  providers:
    openai: {api: openai, base_url: "http://127.0.0.1:$port/v1", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 256, timeout_s: 60}
    anthropic: {api: anthropic, base_url: "http://127.0.0.1:$port", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 256, timeout_s: 60}
  cache: false
  batch: {max_wait_s: 5, poll_s: 0.5, max_poll_s: 2}
YAML
"$bin" generate support-judge -n "$n" --seed 31 --out "$work/data.jsonl"

"$bin" --config "$work/config.yaml" aggregator --http-addr 127.0.0.1:18592 > "$work/agg.log" 2>&1 &
pids+=($!); agg=$!
"$bin" --config "$work/config.yaml" worker -j 256 --metrics-addr 127.0.0.1:18593 > "$work/worker.log" 2>&1 &
pids+=($!); worker=$!
sleep 1

cpu_all() { python3 -c '
import sys
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100
print(sum(cpu(p) for p in sys.argv[1:]))' "$@"; }
now() { python3 -c "import time; print(time.time())"; }
peak_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
procs="$worker $agg $(pgrep -o redis-server) $(pgrep -o beam.smp)"

for mode in live batch; do
  before=$(cpu_all $procs)
  t0=$(now)
  /usr/bin/time -f "%U %S" -o "$work/submit.time" \
    "$bin" --config "$work/config.yaml" submit "$work/data.jsonl" --judge live --judge-mode "$mode" \
    --run-id "$prefix-$mode" --wait > "$work/$mode.out" 2>&1 || true
  t1=$(now)
  after=$(cpu_all $procs)
  read -r su ss < <(tail -1 "$work/submit.time")
  python3 -c "print('$mode', $t1 - $t0, $after - $before + $su + $ss)" >> "$work/figures"
  grep -E "ok|failed" "$work/$mode.out" | head -3 || true
done
wkb=$(peak_kb "$worker"); akb=$(peak_kb "$agg")
python3 - "$work/figures" "$n" "$wkb" "$akb" <<'PY'
import sys
rows = {l.split()[0]: list(map(float, l.split()[1:])) for l in open(sys.argv[1])}
n, wkb, akb = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
(lw, lc), (bw, bc) = rows["live"], rows["batch"]
print(f"{n:,} support-judge examples, 1 worker (-j 256) + aggregator, zero-latency fake; batches processed in 1 s")
print(f"  live : submit → report {lw:.1f} s; fleet CPU {lc:.1f} s = {lc/n*1e6:.0f} CPU-µs per example")
print(f"  batch: submit → report {bw:.1f} s; fleet CPU {bc:.1f} s = {bc/n*1e6:.0f} CPU-µs per example")
print(f"  batch / live fleet CPU: {bc/lc:.2f}x (target ≤ 2x)")
print(f"  peak RSS: worker (with the batch coordinator) {wkb/1024:.0f} MiB, aggregator {akb/1024:.0f} MiB (target ≤ 256 MiB)")
PY
