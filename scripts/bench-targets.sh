#!/usr/bin/env bash
# Benchmarks of issue 19 (targets): the fleet runs the system under test, then the judges.
# 20,000 support-judge tickets; a chat target (OpenAI API) answers each one, and the Anthropic
# judge scores the answer on two dimensions at once. fake-provider serves both.
#   1. 200 ms for the target and for the judges, `run -j 256`: examples/s against the bound
#      C / (L_target + L_judge) = 256 / 0.4 s (target ≥ 90%); peak RSS;
#   2. the same through the fleet, three workers at -j 256: against three times that bound
#      (target ≥ 80%); worker peak RSS (target ≤ 128 MiB);
#   3. 0 ms: CPU per example of `run` with the target against the same run on the recorded
#      answers (target ≤ 1.3x), median of REPS=3 alternating repetitions, with fake-provider's
#      own CPU per example beside it (everything shares these 2 cores).
#   usage: scripts/bench-targets.sh [1|2|3 ...]     (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
bench_init evalfleet-bench-targets 18671

N=20000
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }

cat > "$work/config.yaml" <<YAML
reports_dir: $work/reports
fleet: {prefix: $prefix, worker_concurrency: 256, retention_hours: 1}
providers:
  openai: {api: openai, base_url: "http://127.0.0.1:$port/v1", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 1024, timeout_s: 30}
  anthropic: {api: anthropic, base_url: "http://127.0.0.1:$port", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 1024, timeout_s: 30}
judges:
  cache: false
YAML
# Every ticket is asked (no reply cache): repeated tickets would otherwise beat the bound.
cat > "$work/bot.yaml" <<YAML
name: bot
kind: chat
provider: openai
model: gpt-4o-mini
system: "You are a support engineer. Answer in at most five sentences."
prompt: "{{ ticket }}"
params: {temperature: 0, max_tokens: 200}
output: response
model_field: model
set: {prompt_version: bot-v1}
cache: false
YAML
"$bin" generate support-judge -n $N --seed 31 --out "$work/tickets.jsonl"
secs() { python3 -c "import time; print(time.time())"; }
cpu_s() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; }

for s in ${*:-1 2 3}; do
  case $s in
  1)
    fake --latency-ms 200
    t0=$(secs)
    /usr/bin/time -f "%M" -o "$work/run.time" "$bin" --config "$work/config.yaml" run "$work/tickets.jsonl" \
      --target "$work/bot.yaml" --judge live -j 256 --out "$work/r1" >/dev/null || true
    t1=$(secs)
    python3 - "$t0" "$t1" "$(tail -1 "$work/run.time")" "$work/r1/report.json" <<'PY'
import json, sys
t0, t1, kb = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
r = json.load(open(sys.argv[4]))
n, bound = r["totals"]["ok"], 256 / 0.4
rate = n / (t1 - t0)
print(f"1. run -j 256, 200 ms target + 200 ms judges: {n} ok in {t1-t0:.1f} s = {rate:,.0f} examples/s"
      f" = {rate/bound:.1%} of the bound {bound:,.0f}/s (target >= 90%); peak RSS {kb/1024:.1f} MiB;"
      f" target p50 {r['target']['latency_ms']['p50']} ms, calls {r['target']['calls']}")
PY
    stop_all
    ;;
  2)
    fake --latency-ms 200
    role aggregator aggregator --http-addr 127.0.0.1:18680
    for w in 1 2 3; do role "w$w" worker -j 256 --metrics-addr "127.0.0.1:1869$w"; done
    sleep 1
    t0=$(secs)
    "$bin" --config "$work/config.yaml" submit "$work/tickets.jsonl" --target "$work/bot.yaml" \
      --judge live --run-id "$prefix-2" --wait >/dev/null 2>&1 || true
    t1=$(secs)
    kbs="$(peak_kb "$w1_pid") $(peak_kb "$w2_pid") $(peak_kb "$w3_pid")"
    python3 - "$t0" "$t1" "$work/reports/$prefix-2/report.json" $kbs <<'PY'
import json, sys
t0, t1 = float(sys.argv[1]), float(sys.argv[2])
r = json.load(open(sys.argv[3]))
kbs = [float(k) for k in sys.argv[4:]]
n, bound = r["totals"]["ok"], 3 * 256 / 0.4
rate = n / (t1 - t0)
print(f"2. fleet, 3 workers -j 256: {n} ok, submit → report {t1-t0:.1f} s = {rate:,.0f} examples/s"
      f" = {rate/bound:.1%} of 3 × 640 = {bound:,.0f}/s (target >= 80%);"
      f" worker peak RSS {', '.join(f'{k/1024:.1f}' for k in kbs)} MiB (target <= 128)")
PY
    stop_all
    ;;
  3)
    fake
    for rep in $(seq 1 "${REPS:-3}"); do
      for mode in recorded target; do
        extra=()
        [ "$mode" = target ] && extra=(--target "$work/bot.yaml")
        f0=$(cpu_s "$fake_pid")
        /usr/bin/time -f "%U %S %e" -o "$work/$mode.time" "$bin" --config "$work/config.yaml" run \
          "$work/tickets.jsonl" "${extra[@]}" --judge live -j 256 --out "$work/r3-$mode" >/dev/null || true
        f1=$(cpu_s "$fake_pid")
        echo "$mode $(tail -1 "$work/$mode.time") $(python3 -c "print($f1 - $f0)")" >> "$work/reps3"
      done
    done
    python3 - "$work/reps3" $N <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n = int(sys.argv[2])
us = lambda s: s / n * 1e6
def of(mode, f):
    return [f(list(map(float, r[1:]))) for r in rows if r[0] == mode]
run = {m: of(m, lambda r: us(r[0] + r[1])) for m in ("recorded", "target")}
fake = {m: of(m, lambda r: us(r[3])) for m in ("recorded", "target")}
wall = {m: of(m, lambda r: r[2]) for m in ("recorded", "target")}
ratios = [t / r for t, r in zip(run["target"], run["recorded"])]
print(f"3. 0 ms, median of {len(ratios)} alternating repetitions, CPU-µs per example:")
for m in ("recorded", "target"):
    print(f"   {m:<8} run {statistics.median(run[m]):.0f} (each {', '.join(f'{x:.0f}' for x in run[m])}),"
          f" fake-provider {statistics.median(fake[m]):.0f}; wall {statistics.median(wall[m]):.1f} s")
print(f"   run with target / recorded: {statistics.median(ratios):.2f}x (each {', '.join(f'{x:.2f}' for x in ratios)}; target <= 1.3x)")
PY
    stop_all
    ;;
  esac
done
