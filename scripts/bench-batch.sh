#!/usr/bin/env bash
# Issue 11, batch mode in `run`: the same generated support-judge dataset judged live and in
# batch mode against `evalfleet fake-provider` (zero latency, no limits; batches take
# BATCH_MS to process). Prints, per mode, wall time, CPU (user + sys) per example of the
# evalfleet process and of the fake, and evalfleet's peak RSS; and the ratio of evalfleet's CPU
# per example, batch over live (its own overhead: the fake's processing time is not in it).
#   usage: scripts/bench-batch.sh [N] [BATCH_MS]   (default 100000 examples, 2000 ms)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
batch_ms=${2:-2000}
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet
bin=$PWD/target/release/evalfleet
work=$(mktemp -d)
fake_pid=
cleanup() {
  if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" fake-provider --port "$port" --api-key sk-bench --wrap-rate 0 \
  --batch-processing-ms "$batch_ms" >"$work/fake.log" 2>&1 &
fake_pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
cat > "$work/judges.yaml" <<YAML
providers:
  openai: {api: openai, base_url: "http://127.0.0.1:$port/v1", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 256}
  anthropic: {api: anthropic, base_url: "http://127.0.0.1:$port", api_key_env: BENCH_KEY, rpm: 0, tpm: 0, max_in_flight: 256}
judges:
  cache: false
  batch: {max_wait_s: 10, poll_s: 0.5, max_poll_s: 2}
YAML
"$bin" generate support-judge -n "$n" --seed 11 --out "$work/data.jsonl" >/dev/null
fake_cpu() { # user + sys clock ticks of the fake so far
  awk '{ print $14 + $15 }' "/proc/$fake_pid/stat"
}
declare -A per_example
for mode in live batch; do
  before=$(fake_cpu)
  BENCH_KEY=sk-bench /usr/bin/time -f "%e %U %S %M" -o "$work/$mode.time" \
    "$bin" run "$work/data.jsonl" --judge live --judge-mode "$mode" --config "$work/judges.yaml" \
    --out "$work/$mode" >/dev/null || true
  after=$(fake_cpu)
  read -r wall user sys kb < <(tail -n 1 "$work/$mode.time")
  ticks=$(getconf CLK_TCK)
  per_example[$mode]=$(awk -v u="$user" -v s="$sys" -v n="$n" 'BEGIN { printf "%.1f", (u + s) * 1e6 / n }')
  fake_us=$(awk -v a="$after" -v b="$before" -v t="$ticks" -v n="$n" 'BEGIN { printf "%.1f", (a - b) / t * 1e6 / n }')
  ok=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['totals']['ok'])" "$work/$mode/report.json")
  printf '%-5s %d examples (%s ok): %6.1f s wall · evalfleet %s µs CPU/example, peak RSS %.0f MiB · fake %s µs CPU/example\n' \
    "$mode" "$n" "$ok" "$wall" "${per_example[$mode]}" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')" "$fake_us"
done
curl -s "http://127.0.0.1:$port/stats" | python3 -c '
import json, sys
s = json.load(sys.stdin)["batches"]
print("batches:", {p: (s[p]["batches"], s[p]["requests"], len(s[p]["repeated_custom_ids"])) for p in s}, "(batches, requests, custom_ids batched twice)")'
awk -v b="${per_example[batch]}" -v l="${per_example[live]}" 'BEGIN { printf "evalfleet CPU per example, batch / live: %.2fx (target <= 2x)\n", b / l }'
