# Shared by the fleet benchmarks (sourced after `cd` to the repository): the release binary, a
# work directory, the processes started in the background and their cleanup (processes, the
# benchmark's Redis keys and queues, the work directory; BENCH_KEEP=DIR keeps the processes'
# logs there), and the fake provider.
#   bench_init PREFIX PORT    sets bin, work, pids, prefix, port, BENCH_KEY
#   fake [options...]         starts `fake-provider` on $port (fake_pid) and waits for it
#   role NAME ARGS...         starts `evalfleet --config $work/config.yaml ARGS...` (NAME_pid)
#   peak_kb PID               a process's peak RSS, in KiB

bench_init() {
  cargo build --release --quiet
  bin=$PWD/target/release/evalfleet
  work=$(mktemp -d)
  pids=()
  prefix="$1-$$"
  port=$2
  export BENCH_KEY=sk-bench-0123456789abcdef
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  redis-cli --scan --pattern "$prefix:*" | xargs -r -n 500 redis-cli del >/dev/null || true
  for q in examples dead; do rabbitmqctl delete_queue "$prefix.$q" >/dev/null 2>&1 || true; done
  if [ -n "${BENCH_KEEP:-}" ]; then
    mkdir -p "$BENCH_KEEP" && cp "$work"/*.log "$work"/*.out "$BENCH_KEEP"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}

fake() {
  "$bin" fake-provider --port "$port" --api-key "$BENCH_KEY" "$@" > "$work/fake.log" 2>&1 &
  pids+=($!)
  fake_pid=$!
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.1; done
  echo "fake-provider did not start"; exit 1
}

role() {
  local name=$1; shift
  "$bin" --config "$work/config.yaml" "$@" > "$work/$name.log" 2>&1 &
  pids+=($!)
  eval "${name}_pid=$!"
}

peak_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
