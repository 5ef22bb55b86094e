#!/usr/bin/env bash
# Issue 20: the item API at 10^7 items. Writes a synthetic items.parquet of N rows with the items
# writer (shared/items/tests/bench.rs: support-judge-like results, 90% ok, 7% failed, 3% skipped,
# two judged dimensions with reasonings, two groupings), registers it in Redis as a finished run,
# starts `evalfleet aggregator` on it and times GET /runs/{id}/items through HTTP (curl's
# time_total; each query once, cold, in this order, so a page's timing includes its scan unless
# an earlier query left it in the cache), then the aggregator's peak RSS (VmHWM).
# Needs Redis on 127.0.0.1:6379.   usage: scripts/bench-items-api.sh [N]   (default 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
n=${1:-10000000}
bench_init evalfleet-bench-items 18931
run=bench-items
mkdir -p "$work/reports/$run"
cat > "$work/config.yaml" <<YAML
reports_dir: $work/reports
fleet:
  prefix: $prefix
YAML
echo "writing $n rows..."
EVALFLEET_BENCH_ITEMS="$work/reports/$run/items.parquet" EVALFLEET_BENCH_ROWS=$n \
  cargo test --release --quiet -p evalfleet-items --test bench write_synthetic_items -- --ignored --nocapture 2>&1 | grep wrote
redis-cli HSET "$prefix:run:$run" id "$run" status complete suite support-judge total "$n" published "$n" \
  created_at "$(date -u +%FT%TZ)" report_dir "$work/reports/$run" >/dev/null
redis-cli ZADD "$prefix:runs" "$(date +%s)000" "$run" >/dev/null
role agg aggregator --http-addr "127.0.0.1:$port"
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
echo "aggregator RSS at start: $(awk '/VmRSS/ {print $2}' "/proc/$agg_pid/status") KiB"
timed() { # label, path: ms for GET path, and what it returned
  local out
  out=$(curl -s -o "$work/body.json" -w '%{http_code} %{time_total}' "http://127.0.0.1:$port/runs/$run$2")
  local code=${out% *} secs=${out#* }
  local total
  total=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(("" if d.get("total_exact", True) else ">=") + str(d.get("total", d.get("error", ""))), len(d.get("items", [])))' "$work/body.json" 2>/dev/null || echo "?")
  printf '%9.1f ms  HTTP %s  %-34s %s  (total (>= when a lower bound), rows: %s)\n' "$(echo "$secs * 1000" | bc -l)" "$code" "$1" "$2" "$total"
}
timed "first request (reads the footer)" "/items?limit=1"
timed "first page, unfiltered" "/items"
timed "deep page, unfiltered" "/items?offset=9000000"
timed "last page, descending index" "/items?sort=-index&offset=9999900"
timed "status filter" "/items?status=failed"
for p in 1 2 3 4 5 6 7 8 9; do timed "  status filter, page $((p + 1))" "/items?status=failed&offset=$((p * 100))"; done
timed "  status filter, page 5,001" "/items?status=failed&offset=500000"
timed "tag + group filter" "/items?tag=rude&group=model=gpt-4o"
timed "  its next page" "/items?tag=rude&group=model=gpt-4o&offset=100"
timed "sorted (descending latency)" "/items?sort=-latency_ms"
for p in 1 2 3 4; do timed "  sorted, page $((p + 1))" "/items?sort=-latency_ms&offset=$((p * 100))"; done
timed "sorted, last page" "/items?sort=-latency_ms&offset=9999900"
timed "filtered + sorted" "/items?status=ok&sort=-cost_usd"
timed "text search" "/items?q=warranty,%20billing"
timed "  its next page" "/items?q=warranty,%20billing&offset=100"
timed "facets" "/items/facets"
echo "aggregator peak RSS: $(peak_kb "$agg_pid") KiB; file $(du -h "$work/reports/$run/items.parquet" | cut -f1)"
