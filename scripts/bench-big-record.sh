#!/usr/bin/env bash
# Issue 22: a record longer than `max_record_bytes` is skipped without being held in memory.
# Writes a dataset whose first record is BENCH_SIZE bytes (default 1 GiB) followed by one good
# support-judge record, in each format (JSONL line, JSON array element, CSV row), and runs
# `evalfleet validate` and `evalfleet run` on it under /usr/bin/time: wall time and peak RSS.
# Then the issue's own case: two JSONL lines, the first 60 MB. Removes everything it wrote.
#   usage: scripts/bench-big-record.sh     (BENCH_SIZE=BYTES, BENCH_TEMPLATES=N, BENCH_NO_BUILD=1)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${BENCH_SIZE:-$((1024 * 1024 * 1024))}
[ -n "${BENCH_NO_BUILD:-}" ] || cargo build --release --quiet
bin=$PWD/target/release/evalfleet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'reports_dir: %s/reports\n' "$work" > "$work/config.yaml"

good='{"id":"small","ticket":"VPN drops every hour","response":"Renew the DHCP lease and update the VPN client.","model":"gpt-4o","prompt_version":"v1"}'
filler() { head -c "$1" /dev/zero | tr '\0' x; }

write() { # format bytes file
  case $1 in
    jsonl) { printf '{"id":"huge","ticket":"'; filler "$2"; printf '","response":"r","model":"gpt-4o","prompt_version":"v1"}\n%s\n' "$good"; } > "$3" ;;
    json) { printf '[{"id":"huge","ticket":"'; filler "$2"; printf '","response":"r","model":"gpt-4o","prompt_version":"v1"},\n%s]\n' "$good"; } > "$3" ;;
    csv) { printf 'id,ticket,response,model,prompt_version\nhuge,'; filler "$2"; printf ',r,gpt-4o,v1\nsmall,VPN drops every hour,Renew the DHCP lease.,gpt-4o,v1\n'; } > "$3" ;;
  esac
}

measure() { # label command...
  local label=$1; shift
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" > "$work/out" 2>&1 || true
  read -r secs kib < <(tail -1 "$work/time")
  local skipped
  skipped=$(grep -o 'record is [0-9]* bytes ([^)]*)' "$work/out" "$work/reports"/*/report.json 2>/dev/null | head -1 | sed 's/^[^:]*://' || true)
  printf '%-34s %7.2f s  %8.1f MiB peak RSS  %s\n' "$label" "$secs" "$(echo "$kib / 1024" | bc -l)" "${skipped:-}"
}

echo "first record: $size bytes; max_record_bytes: the default (16 MiB)"
for format in jsonl json csv; do
  file=$work/big.$format
  write "$format" "$size" "$file"
  measure "validate, $format" "$bin" --config "$work/config.yaml" validate "$file"
  rm -rf "$work/reports"
  measure "run --judge heuristic, $format" "$bin" --config "$work/config.yaml" run "$file" --run-id "big-$format"
  rm -f "$file"
done

file=$work/issue.jsonl
write jsonl $((60 * 1000 * 1000)) "$file"
rm -rf "$work/reports"
measure "run, two lines, the first 60 MB" "$bin" --config "$work/config.yaml" run "$file" --run-id issue-60mb

# Templates: every record's target request runs out of fuel (10^10 iterations asked for); what
# one such example costs, end to end, with the default templates.fuel.
n=${BENCH_TEMPLATES:-2000}
python3 - "$n" > "$work/q.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"id": f"q{i}", "question": f"question {i}", "gold": {"answer": "a", "doc_chunk_ids": [], "kg_entities": [], "kg_edges": [], "concepts": [], "constraints": []}, "metadata": {"requires_kg": False, "domain": "d", "difficulty": "easy"}}))
PY
cat > "$work/spin.yaml" <<'YAML'
name: spin
kind: http
url: "http://127.0.0.1:9/never-called"
body: {question: "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ question }}"}
outputs: {trace: /data/trace}
YAML
rm -rf "$work/reports"
measure "run, $n records, fuel spent on each" "$bin" --config "$work/config.yaml" run "$work/q.jsonl" --suite rag-layers --target "$work/spin.yaml" --run-id spin -j 2
grep -o '"failed": *[0-9]*' "$work/reports/spin/report.json" | head -1 || true
