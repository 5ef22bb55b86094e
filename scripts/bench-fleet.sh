#!/usr/bin/env bash
# Benchmarks of issue 4 (the fleet), each measured as a ratio within one run:
#   1. zero-latency fake provider, 20,000 support-judge examples, one worker: fleet examples/s
#      against the raw broker ceiling (fleet/examples/broker_ceiling.rs: publish → consume → ack
#      with the same queue and message settings, no work) and against embedded `run`;
#      CPU-µs per example per process (median of REPS=3 alternating repetitions), and issue 10's ratios: the fleet's CPU (worker + Redis +
#      aggregator + submit) against embedded `run`'s (target ≤ 1.5), RabbitMQ's CPU per message
#      in the fleet run against the ceiling program's (target ≤ 1.2); worker peak RSS at
#      concurrency 256;
#   2. three workers sharing 3,000 requests/minute per provider (fleet-wide GCRA) against a
#      200 ms fake: share of the limit used and of 429s;
#   3. the aggregator writing the report of a 1,000,000-result run: peak RSS.
#   usage: scripts/bench-fleet.sh [1|2|3 ...]     (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
bench_init evalfleet-bench 18571
cargo build --release --quiet -p evalfleet-fleet --example broker_ceiling

stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }

config() { # rpm fleet_limits panel
  cat > "$work/config.yaml" <<YAML
reports_dir: $work/reports
fleet: {prefix: $prefix, worker_concurrency: 256, fleet_rate_limits: $2, retention_hours: 1}
providers:
  openai: {api: openai, base_url: "http://127.0.0.1:$port/v1", api_key_env: BENCH_KEY, rpm: $1, tpm: 0, max_in_flight: 256, timeout_s: 30}
  anthropic: {api: anthropic, base_url: "http://127.0.0.1:$port", api_key_env: BENCH_KEY, rpm: $1, tpm: 0, max_in_flight: 256, timeout_s: 30}
judges:
  cache: false
  panel: [${3:-}]
YAML
}



secs() { python3 -c "import time; print(time.time())"; }

for s in ${*:-1 2 3}; do
  case $s in
  1)
    "$bin" generate support-judge -n 20000 --seed 21 --out "$work/d20k.jsonl"
    fake; config 0 false
    role aggregator aggregator --http-addr 127.0.0.1:18580
    role worker worker -j 256 --metrics-addr 127.0.0.1:18581
    sleep 1
    # Warm-up (connections, Lua scripts loaded, pools filled), as the embedded run has its own.
    head -2000 "$work/d20k.jsonl" > "$work/warm.jsonl"
    "$bin" --config "$work/config.yaml" submit "$work/warm.jsonl" --judge live --run-id "$prefix-warm" --wait >/dev/null || true
    # CPU time is noisy on 2 shared cores: ceiling, embedded and fleet runs alternate REPS
    # times, and the summary takes each figure's median.
    beam=$(pgrep -o beam.smp)
    for rep in $(seq 1 "${REPS:-3}"); do
      beam_cpu0=$(awk '{print $14+$15}' "/proc/$beam/stat")
      ceiling=$(target/release/examples/broker_ceiling "$work/d20k.jsonl" 512 | tee /dev/stderr | sed -E 's/.*= ([0-9]+) messages\/s.*/\1/')
      beam_cpu1=$(awk '{print $14+$15}' "/proc/$beam/stat")
      t0=$(secs)
      /usr/bin/time -f "%U %S" -o "$work/embedded.time" "$bin" --config "$work/config.yaml" run "$work/d20k.jsonl" --judge live -j 256 --out "$work/embedded" >/dev/null || true
      t1=$(secs)
      read -r eu es < <(tail -1 "$work/embedded.time")
      # Times both: every result stored (processing) and the report written (end to end), and
      # the CPU time each process spent meanwhile. The poll is one Redis connection (a
      # redis-cli process every 20 ms would itself take a share of these 2 cores).
      read -r stored fleet c_worker c_redis c_agg c_submit c_rabbit < <(python3 - "$bin" "$work/config.yaml" "$work/d20k.jsonl" "$prefix-$rep" \
          "$beam" "$(pgrep -o redis-server)" "$fake_pid" "$worker_pid" "$aggregator_pid" <<'PY'
import socket, subprocess, sys, time
bin, cfg, data, run = sys.argv[1:5]
prefix = run.rsplit("-", 1)[0]
procs = dict(zip(["rabbitmq", "redis", "fake-provider", "worker", "aggregator"], sys.argv[5:]))
def cpu(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / 100
    except (OSError, ValueError):
        return 0.0
redis = socket.create_connection(("127.0.0.1", 6379))
def hget(key, field):
    redis.sendall(f"*3\r\n$4\r\nHGET\r\n${len(key)}\r\n{key}\r\n${len(field)}\r\n{field}\r\n".encode())
    reply = redis.recv(4096).split(b"\r\n")
    return int(reply[1]) if reply[0].startswith(b"$") and reply[0] != b"$-1" else 0
before = {k: cpu(p) for k, p in procs.items()}
t0 = time.time()
p = subprocess.Popen([bin, "--config", cfg, "submit", data, "--judge", "live", "--run-id", run, "--wait"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
stored, submit_cpu = None, 0.0
while p.poll() is None:
    submit_cpu = cpu(p.pid) or submit_cpu
    if stored is None and hget(f"{prefix}:run:{run}:counts", "ok") >= 20000:
        stored = time.time() - t0
    time.sleep(0.02)
end = time.time() - t0
stored = stored or end
used = {k: cpu(p) - before[k] for k, p in procs.items()}
used["submit"] = submit_cpu
print(f"   CPU seconds during the fleet run ({end:.2f} s wall): " + ", ".join(f"{k} {v:.2f}" for k, v in used.items()) + f"; total {sum(used.values()):.2f}", file=sys.stderr)
print(round(20000 / stored), round(20000 / end), *(f"{used[k]:.2f}" for k in ["worker", "redis", "aggregator", "submit", "rabbitmq"]))
PY
)
      echo "$ceiling $(python3 -c "print(round(20000/($t1-$t0)))") $stored $fleet $eu $es $c_worker $c_redis $c_agg $c_submit $c_rabbit $(python3 -c "print(($beam_cpu1-$beam_cpu0)/100)")" >> "$work/reps"
      python3 -c "print(f'   rep $rep: embedded run {($eu+$es)/0.02:.0f} CPU-µs per example ({$t1-$t0:.2f} s wall)')" >&2
    done
    wkb=$(peak_kb "$worker_pid")
    python3 - "$work/reps" "$wkb" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
kb = float(sys.argv[2])
med = lambda i: statistics.median(r[i] for r in rows)
us = lambda cpu: cpu / 20000 * 1e6
c, e, s, f = med(0), med(1), med(2), med(3)
emb = [us(r[4] + r[5]) for r in rows]
fleet = [us(r[6] + r[7] + r[8] + r[9]) for r in rows]
ratios = [fl / em for fl, em in zip(fleet, emb)]
rabbit = [r[10] / max(r[11], 1e-9) for r in rows]
print(f"1. median of {len(rows)} alternating repetitions, CPU-µs per example:")
print(f"   embedded run {statistics.median(emb):.0f} · fleet: worker {us(med(6)):.0f} + redis {us(med(7)):.0f} + aggregator {us(med(8)):.0f} + submit {us(med(9)):.0f} = {statistics.median(fleet):.0f}")
print(f"   fleet / embedded: {statistics.median(ratios):.2f}x (each repetition: {', '.join(f'{x:.2f}' for x in ratios)}; target ≤ 1.5x)")
print(f"   RabbitMQ CPU-µs per message: fleet run {us(med(10)):.0f}, ceiling program {us(med(11)):.0f} → {statistics.median(rabbit):.2f}x (each: {', '.join(f'{x:.2f}' for x in rabbit)}; target ≤ 1.2x)")
print(f"   broker ceiling {c:,.0f} msg/s · embedded run {e:,.0f} examples/s (end to end)")
print(f"   fleet, 1 worker: submit → every result stored {s:,.0f} examples/s = {s/c:.0%} of the ceiling, {s/e:.0%} of embedded")
print(f"   fleet, 1 worker: submit → report written      {f:,.0f} examples/s = {f/c:.0%} of the ceiling, {f/e:.0%} of embedded")
print(f"   worker peak RSS {kb/1024:.1f} MiB at concurrency 256 (target ≤ 64 MiB)")
PY
    stop_all
    ;;
  2)
    "$bin" generate support-judge -n 3000 --seed 22 --out "$work/d3k.jsonl"
    fake --latency-ms 200 --rpm-openai 3000 --rpm-anthropic 3000
    config 3000 true "openai, anthropic"
    role aggregator aggregator --http-addr 127.0.0.1:18580
    for w in 1 2 3; do role "w$w" worker -j 128 --metrics-addr "127.0.0.1:1859$w"; done
    sleep 1
    "$bin" --config "$work/config.yaml" submit "$work/d3k.jsonl" --judge live --run-id "$prefix-2" --wait >/dev/null || true
    curl -sf "http://127.0.0.1:$port/stats" > "$work/stats.json"
    python3 - "$work/stats.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
secs = (s["last_request_unix_ms"] - s["first_request_unix_ms"]) / 1000
for p, by in sorted(s["by_provider_status"].items()):
    ok, r429, total = by.get("200", 0), by.get("429", 0), sum(by.values())
    print(f"2. {p}: {ok} accepted in {secs:.1f} s = {ok/secs*60:,.0f}/min = {ok/secs*60/3000:.1%} of 3,000 (target ≥ 95%); 429: {r429} = {r429/max(1,total):.2%} (target < 0.5%)")
PY
    stop_all
    ;;
  3)
    "$bin" generate support-judge -n 1000000 --seed 23 --out "$work/d1m.jsonl"
    config 0 false
    role aggregator aggregator --http-addr 127.0.0.1:18580
    role w1 worker -j 64 --metrics-addr 127.0.0.1:18591
    role w2 worker -j 64 --metrics-addr 127.0.0.1:18592
    sleep 1
    t0=$(secs); "$bin" --config "$work/config.yaml" submit "$work/d1m.jsonl" --run-id "$prefix-3" --wait >/dev/null || true; t1=$(secs)
    akb=$(peak_kb "$aggregator_pid"); w1kb=$(peak_kb "$w1_pid")
    python3 -c "print(f'3. 1,000,000 examples (heuristic judge, 2 workers): submit → report {($t1-$t0):.0f} s = {1e6/($t1-$t0):,.0f} examples/s; aggregator peak RSS {$akb/1024:.1f} MiB (target ≤ 256); worker peak RSS {$w1kb/1024:.1f} MiB')"
    ls -la "$work/reports/$prefix-3"
    stop_all
    ;;
  esac
done
