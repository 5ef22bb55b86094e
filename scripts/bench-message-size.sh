#!/usr/bin/env bash
# Issue 10: the bytes RabbitMQ holds for one run's messages. Submits a dataset (default: the
# bundled log-analysis example) with no worker running, reads the work queue's message count and
# bytes from the management API (rabbitmq-plugins enable rabbitmq_management; quorum queues do
# not report bytes to rabbitmqctl on 3.10), and removes everything it created. With BASELINE_BIN set (an evalfleet
# binary built from an older commit), measures that binary the same way, in the same run.
#   usage: scripts/bench-message-size.sh [DATASET] [SUITE]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-examples/log-analysis.jsonl}
suite=${2:-log-analysis}
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() { # label binary
  local prefix="evalfleet-size-$$-$RANDOM"
  printf 'fleet: {prefix: %s, retention_hours: 1}\n' "$prefix" > "$work/config.yaml"
  "$2" --config "$work/config.yaml" submit "$data" --suite "$suite" --run-id "$prefix-run" >/dev/null 2>&1
  local row=""
  for _ in $(seq 1 30); do # queue statistics are emitted every 5 s
    row=$(curl -sf -u guest:guest "http://127.0.0.1:15672/api/queues/%2f/$prefix.examples" |
      python3 -c 'import json, sys; q = json.load(sys.stdin); print(q["messages"], q["message_bytes"]) if q.get("messages") else None')
    [ -n "$row" ] && break
    sleep 1
  done
  rabbitmqctl -q delete_queue "$prefix.examples" >/dev/null 2>&1 || true
  rabbitmqctl -q delete_queue "$prefix.dead" >/dev/null 2>&1 || true
  redis-cli --scan --pattern "$prefix:*" | xargs -r redis-cli del >/dev/null
  read -r n bytes <<< "$row"
  printf '%-9s %5d messages, %9d bytes, %7d bytes a message\n' "$1" "$n" "$bytes" "$((bytes / n))"
}

echo "$data ($suite)"
[ -n "${BASELINE_BIN:-}" ] && measure baseline "$BASELINE_BIN"
measure current target/release/evalfleet
