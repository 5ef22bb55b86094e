#!/usr/bin/env bash
# Fuzzes every parser of outside input with cargo-fuzz (libFuzzer): the targets are in
# fuzz/fuzz_targets/ (docs/BENCHMARKS.md, "Fuzzing"). Installs cargo-fuzz if it is missing,
# seeds each target's corpus (fuzz/corpus/TARGET) from the bundled examples, suites and test
# fixtures, then runs one target, or all of them one after another, for SECONDS each, with an
# RSS limit (unbounded memory is a failure) and a size limit per target. Crashing inputs land in
# fuzz/artifacts/TARGET/, the libFuzzer output in fuzz/logs/TARGET.log; a summary line per target
# is printed at the end, and the exit status is non-zero if any target failed.
#   usage: scripts/fuzz.sh [TARGET|all] [SECONDS]     (default: all, 60 s each)
#   env:   FUZZ_SANITIZER=address|none (default address; `none` where ASan does not link)
#          FUZZ_JOBS_NICE=N  run the fuzzers under `nice -n N` (default 10)
# cargo-fuzz needs nightly flags; on a stable toolchain RUSTC_BOOTSTRAP=1 enables them.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(dataset_jsonl dataset_json_array dataset_csv suite_yaml judge_reply_openai
  judge_reply_anthropic batch_results_openai batch_results_anthropic queue_message)
which=${1:-all}
seconds=${2:-60}
sanitizer=${FUZZ_SANITIZER:-address}
niceness=${FUZZ_JOBS_NICE:-10}
export RUSTC_BOOTSTRAP=1
# A smaller ASan quarantine than the default 256 MB, so that the RSS limit measures the parsers.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=64

# The largest input each target is given: a few records, a suite file, a reply body, a message.
max_len() {
  case $1 in
    suite_yaml) echo 16384 ;;
    judge_reply_*) echo 4096 ;;
    *) echo 8192 ;;
  esac
}

if [ "$which" != all ] && ! printf '%s\n' "${targets[@]}" | grep -qx "$which"; then
  echo "unknown target '$which': use all or one of ${targets[*]}" >&2
  exit 2
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

# --- seeds ------------------------------------------------------------------------------------
# Files are cut into pieces of a few records, so that a seed fits the target's size limit.
seed_dir() { mkdir -p "fuzz/corpus/$1"; echo "fuzz/corpus/$1"; }

# chunks FILE DIR PREFIX LINES [HEADER]: FILE in pieces of LINES lines (at most 20 pieces), each
# after HEADER's first line if given.
chunks() {
  local file=$1 dir=$2 prefix=$3 lines=$4 header=${5:-}
  local tmp
  tmp=$(mktemp -d)
  if [ -n "$header" ]; then tail -n +2 "$file"; else cat "$file"; fi |
    split -l "$lines" -a 3 - "$tmp/p"
  local n=0
  for piece in "$tmp"/p*; do
    [ -e "$piece" ] && [ $n -lt 20 ] || break
    { [ -z "$header" ] || head -n 1 "$file"; cat "$piece"; } > "$dir/$prefix-$n"
    n=$((n + 1))
  done
  rm -rf "$tmp"
}

seed() {
  local dir name f
  dir=$(seed_dir "$1")
  case $1 in
    dataset_jsonl)
      for f in examples/*.jsonl tests/fixtures/seed-data/*/*.jsonl; do
        chunks "$f" "$dir" "$(basename "$f" .jsonl)" 3
      done
      printf '# a comment\n\n{"id": 1}\r\n   \n{"id": "x", "a": [1, {"b": null}]}\n{"id":\n' > "$dir/hand-1"
      printf '\xc2\xa0\n{"a": "\\u00e9\\ud83d\\ude00"}\n[1, 2]\n7\n' > "$dir/hand-2"
      ;;
    dataset_json_array)
      for f in tests/fixtures/seed-data/*/*.json examples/scenarios/*.json; do
        cp "$f" "$dir/$(basename "$f")"
      done
      for f in examples/*.jsonl tests/fixtures/seed-data/*/*.jsonl; do
        name=$(basename "$f" .jsonl)
        chunks "$f" "$dir" "$name" 3
        for piece in "$dir/$name"-*; do # JSONL pieces become arrays
          { printf '['; paste -sd, "$piece"; printf ']\n'; } > "$piece.array" && mv "$piece.array" "$piece"
        done
      done
      printf '[{"a":"x,]}"}, {"a": }, 7, {"b":[1,{"c":2}]} ]' > "$dir/hand-1"
      printf ' [ {"a":"say \\"hi\\", ]"}, [], "", {"a":1}, ] junk' > "$dir/hand-2"
      ;;
    dataset_csv)
      chunks examples/qa-faithfulness.csv "$dir" qa-faithfulness 3 header
      printf '\xef\xbb\xbf# exported\r\ns,n,b,j,latency_ms\r\n"a, ""b""",42,true,"{""k"": [1]}",1.5\r\n x ,1e3,no,,\n\n  # c\nlast,-7,YES,"""q""",inf\n' > "$dir/hand-1"
      printf 'n,b\r1,0\r2\r"3\n4",x,y\r' > "$dir/hand-2"
      ;;
    suite_yaml)
      cp config/suites/*.yaml "$dir/"
      printf 'extends: support-judge\ngates:\n  - {tag: low_relevance, threshold: 2}\n  - {tag: new, metric: relevance, op: lt, threshold: 3}\nrun_gates: {min_pass_rate: 0.5}\n' > "$dir/hand-1"
      printf 'extends: rag-layers\nrag: {top_k: 3}\ncompare: {max_drop: {overall: 0.1}}\n' > "$dir/hand-2"
      ;;
    judge_reply_openai)
      printf '%s' '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"score\": 4, \"reasoning\": \"Good.\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135}}' > "$dir/ok"
      printf '%s' '{"choices":[{"message":{"content":"```json\n{\"score\": \"5\"}\n```"}}]}' > "$dir/fence"
      printf '%s' '{"choices":[{"message":{"content":[{"type":"text","text":"Verdict: {\"sc"},{"type":"text","text":"ore\": 2.0} {\"score\": 9}"}]}}]}' > "$dir/parts"
      printf '%s' '{"choices":[{"message":{"content":null,"refusal":"I cannot."}}]}' > "$dir/refusal"
      printf '%s' '{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}' > "$dir/error"
      ;;
    judge_reply_anthropic)
      printf '%s' '{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Sure: "},{"type":"text","text":"{\"score\": 5, \"reasoning\": \"Direct.\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":5,"output_tokens":12}}' > "$dir/ok"
      printf '%s' '{"type":"message","content":[{"type":"text","text":"Here: {\"note\": \"}\"} {\"score\": 3e0, \"reasoning\": null}"}]}' > "$dir/prose"
      printf '%s' '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' > "$dir/error"
      ;;
    batch_results_openai)
      {
        printf '%s\n' '{"id":"batch_req_1","custom_id":"r1/0/relevance/j0-a","response":{"status_code":200,"request_id":"req_1","body":{"choices":[{"message":{"content":"{\"score\": 4}"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}},"error":null}'
        printf '%s\n' '{"id":"batch_req_2","custom_id":"r1/1/relevance/j0-a","response":{"status_code":429,"request_id":"req_2","body":{"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded"}}},"error":null}'
        printf '%s\n' '{"id":"batch_req_3","custom_id":"r1/2/relevance/j0-a","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}'
        printf '%s' '{"id":"batch_req_4","custom_id":"r1/3/relevance/j0-a","response":null,"error":{"code":"server_error","message":"x"}}'
      } > "$dir/lines"
      ;;
    batch_results_anthropic)
      {
        printf '%s\n' '{"custom_id":"r1-0-relevance-j0-a","result":{"type":"succeeded","message":{"id":"msg_1","type":"message","content":[{"type":"text","text":"{\"score\":3}"}],"usage":{"input_tokens":10,"output_tokens":4}}}}'
        printf '%s\n' '{"custom_id":"r1-1-relevance-j0-a","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}}}'
        printf '%s\n' '{"custom_id":"r1-2-relevance-j0-a","result":{"type":"expired"}}'
        printf '%s' '{"custom_id":"r1-3-relevance-j0-a","result":{"type":"canceled"}}'
      } > "$dir/lines"
      ;;
    queue_message)
      # One v2 message of each example kind, as the producer publishes them (long texts cut).
      local i=0
      while IFS= read -r line; do
        printf '%s' "$line" > "$dir/message-$i"
        i=$((i + 1))
      done <<'EOF'
{"v":2,"run_id":"r1","index":0,"line":1,"suite":"support-judge","example":{"support":{"id":"ticket-000001","ticket":"Readiness probe failing for checkout-api after switching the","response":"Good catch. The probe reaches the app but the path returns 4","model":"gpt-4o","prompt_version":"v1.0","provider":"openai"}}}
{"v":2,"run_id":"r1","index":0,"line":2,"suite":"rag-layers","example":{"rag":{"id":"lg041","question":"SoS(Share of Shelf)란 무엇인가요?","gold":{"answer":"SoS(Share of Shelf)는 특정 카테고리 Top 100 내에서 해당 브랜드 제품이 차지하는 비율입","doc_chunk_ids":["metric_guide_sos_01"],"kg_entities":["sos"],"kg_edges":[],"concepts":["sos","definition","kpi"],"constraints":[],"entity_types":{"sos":"metric"}},"metadata":{"requires_kg":false,"domain":"metric","difficulty":"easy"},"trace":{"entities":["sos"],"concepts":["sos","definition","kpi"],"applied_rules":[],"retrieved_chunk_ids":["metric_guide_sos_01","market_trend_01","metric_guide_rank_01"],"kg_entities":["sos","churn_rate","lip_care"],"kg_edges":[],"inferences":[],"constraint_violations":[],"answer":"SoS(Share of Shelf)란 무엇인가요: SoS(Share of Shelf)는 특정 카테고리 Top","context":"Q: SoS(Share of Shelf)란 무엇인가요?\n[metric_guide_sos_01] SoS(Sha","latency_ms":3286.0,"usage":{"input_tokens":573,"output_tokens":90,"cost_usd":null},"entity_types":{"sos":"metric"}}}}}
{"v":2,"run_id":"r1","index":0,"line":1,"suite":"log-analysis","example":{"log":{"id":"log-000001","scenario":"c1fb8c928e03ec939f10719f87ebaff08fc60274818f4a2eae402491dfdb8744","output":"```json\n{\n  \"events_detected\": [\n    {\n      \"event_type\": \"","config":"baseline_single_agent","model":"gpt-4o-mini"}}}
{"v":2,"run_id":"r1","index":0,"line":2,"suite":"qa-faithfulness","example":{"custom":{"id":"qa-0001","values":["How do I restore a file I deleted?","[1] Deleted files stay in the Trash for 30 days on Basic and","Open Trash in the Driftbox web app, select the file and clic"],"provider":"openai","group":{"model":"gpt-4o","prompt_version":"v1"},"metadata":{"locale":"en-US"}}}}
{"v":1,"run_id":"r","index":0,"suite":"support-judge","example":{"id":"a"}}
EOF
      ;;
  esac
}

# --- runs -------------------------------------------------------------------------------------
mkdir -p fuzz/logs
summary=()
failed=0
run() {
  local target=$1 log="fuzz/logs/$1.log" status=0
  seed "$target"
  mkdir -p "fuzz/artifacts/$target"
  local before
  before=$(find "fuzz/artifacts/$target" -type f | wc -l)
  echo "== $target: ${seconds}s, max_len $(max_len "$target"), corpus $(find "fuzz/corpus/$target" -type f | wc -l) files" >&2
  nice -n "$niceness" cargo fuzz run -s "$sanitizer" "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=512 -timeout=10 \
    -max_len="$(max_len "$target")" -print_final_stats=1 > "$log" 2>&1 || status=$?
  local after
  after=$(find "fuzz/artifacts/$target" -type f | wc -l)
  stat_of() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  local last
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  local cov ft corp
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<< "$last")
  local line
  line=$(printf '%-24s execs %10s  exec/s %6s  cov %5s  ft %6s  corpus %5s  peak RSS %4s MB  new artifacts %d  exit %d' \
    "$target" "$(stat_of number_of_executed_units)" "$(stat_of average_exec_per_sec)" "${cov:-?}" "${ft:-?}" \
    "${corp:-?}" "$(stat_of peak_rss_mb)" "$((after - before))" "$status")
  echo "$line" >&2
  summary+=("$line")
  if [ "$status" -ne 0 ]; then
    failed=1
    grep -E '^(==[0-9]+==|thread .* panicked|SUMMARY|artifact_prefix|Test unit written)' "$log" | head -20 >&2 || true
  fi
}

if [ "$which" = all ]; then
  for t in "${targets[@]}"; do run "$t"; done
else
  run "$which"
fi
echo "== summary" >&2
printf '%s\n' "${summary[@]}"
exit "$failed"
