#!/usr/bin/env bash
# Benchmarks of issue 3: live judges against fake-provider on this machine.
#   1. zero latency, 20,000 support-judge examples (40,000 judge calls): judge calls/s;
#   2. 200 ms ± 50 ms and 3,000 requests/minute per provider: share of the limit used, 429 share
#      (a panel of both judges, so that both providers have work all the time);
#   3. 200 ms, no limit, concurrency 256: achieved calls/s against the 256 / 0.2 s bound;
#   4. sporadic 429s (3%, Retry-After 1 s) at 20 ± 10 ms, concurrency 128: answered calls/s
#      against the bound C / (L + p × w) = 128 / (0.020 + 0.03 × 1.0);
#   5. an incident: 5% 529/503 overloads (no Retry-After: w = the first backoff, 0.5 s) at
#      20 ± 10 ms, concurrency 128: against 128 / (0.020 + 0.05 × 0.5);
#   6. the same setup with no fault, for reference.
# Rates come from fake-provider's own /stats (first to last request), so they count what
# reached the "provider", retries included.
#   usage: scripts/bench-judges.sh [1|2|3|4|5|6 ...]     (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=$PWD/target/release/evalfleet
work=$(mktemp -d)
fake_pid=
cleanup() { [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port=18471
export BENCH_KEY=sk-bench-0123456789abcdef

start_fake() { # fake-provider options...
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null || true
  "$bin" fake-provider --port $port --api-key "$BENCH_KEY" "$@" > "$work/fake.log" 2>&1 &
  fake_pid=$!
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.1; done
  echo "fake-provider did not start"; cat "$work/fake.log"; exit 1
}

config() { # rpm max_in_flight [panel]
  cat > "$work/config.yaml" <<YAML
providers:
  openai: {api: openai, base_url: "http://127.0.0.1:$port/v1", api_key_env: BENCH_KEY, rpm: $1, tpm: 0, max_in_flight: $2, timeout_s: 30}
  anthropic: {api: anthropic, base_url: "http://127.0.0.1:$port", api_key_env: BENCH_KEY, rpm: $1, tpm: 0, max_in_flight: $2, timeout_s: 30}
judges:
  cache: false
  panel: [${3:-}]
YAML
}

stats() { # label [bound calls/s]
  curl -sf "http://127.0.0.1:$port/stats" > "$work/stats.json"
  python3 - "$1" "$work/stats.json" "${2:-0}" <<'PY'
import json, sys
label, s, bound = sys.argv[1], json.load(open(sys.argv[2])), float(sys.argv[3])
secs = max(1e-9, (s["last_request_unix_ms"] - s["first_request_unix_ms"]) / 1000)
ok = s["by_status"].get("200", 0); total = s["total"]; r429 = s["by_status"].get("429", 0)
print(f"{label}: {total} requests in {secs:.2f} s = {total/secs:,.0f} req/s; 200: {ok} ({ok/secs:,.0f}/s); 429: {r429} ({100*r429/max(1,total):.2f}%); by status {s['by_status']}")
if bound:
    print(f"    answered {ok/secs:,.0f} calls/s = {100*ok/secs/bound:.1f}% of the bound {bound:,.0f}/s (target >= 80%)")
for p, by in sorted(s["by_provider_status"].items()):
    print(f"    {p}: {by}  -> {by.get('200',0)/secs*60:,.0f} accepted/min")
PY
}

run_live() { # dataset concurrency
  /usr/bin/time -f "    evalfleet run: %e s wall, %M KB peak RSS" "$bin" run "$1" --suite support-judge --judge live \
    --config "$work/config.yaml" -j "$2" --out "$work/report" | sed -n 2p || true  # exit 1 = gates failed: fine here
}

scenarios=${*:-1 2 3 4 5 6}
for s in $scenarios; do
  case $s in
  1)
    "$bin" generate support-judge -n 20000 --seed 11 --out "$work/d20k.jsonl"
    start_fake
    config 0 256
    run_live "$work/d20k.jsonl" 256
    stats "1. zero latency, 20,000 examples"
    ;;
  2)
    "$bin" generate support-judge -n 3600 --seed 12 --out "$work/d3k.jsonl"
    start_fake --latency-ms 150 --jitter-ms 100 --rpm-openai 3000 --rpm-anthropic 3000
    config 3000 256 "openai, anthropic"
    run_live "$work/d3k.jsonl" 256
    stats "2. 200±50 ms, 3,000 rpm per provider (limit = 3,000 accepted/min each)"
    ;;
  3)
    "$bin" generate support-judge -n 6000 --seed 13 --out "$work/d6k.jsonl"
    start_fake --latency-ms 200
    config 0 256
    run_live "$work/d6k.jsonl" 256
    stats "3. 200 ms, no limit, concurrency 256 (bound 1,280 calls/s)"
    ;;
  4|5|6)
    [ -f "$work/d12k.jsonl" ] || "$bin" generate support-judge -n 12000 --seed 14 --out "$work/d12k.jsonl"
    case $s in
    4) start_fake --latency-ms 10 --jitter-ms 20 --fault-429 0.03 --fault-retry-after-ms 1000 --seed 4
       label="4. 3% sporadic 429s (Retry-After 1 s), 20±10 ms, concurrency 128"; bound=$(python3 -c 'print(128 / (0.020 + 0.03 * 1.0))') ;;
    5) start_fake --latency-ms 10 --jitter-ms 20 --fault-529 0.05 --seed 5
       label="5. 5% 529/503 overloads, 20±10 ms, concurrency 128"; bound=$(python3 -c 'print(128 / (0.020 + 0.05 * 0.5))') ;;
    6) start_fake --latency-ms 10 --jitter-ms 20 --seed 6
       label="6. no fault, 20±10 ms, concurrency 128 (reference)"; bound=$(python3 -c 'print(128 / 0.020)') ;;
    esac
    config 0 128
    run_live "$work/d12k.jsonl" 128
    stats "$label" "$bound"
    ;;
  esac
done
