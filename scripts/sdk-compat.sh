#!/usr/bin/env bash
# Checks that the current official OpenAI and Anthropic Python SDKs work against
# `evalfleet fake-provider` (scripts/sdk-compat.py: a judge call with each SDK, Anthropic Bearer
# auth, 401 on a wrong key, 429s retried after `retry-after`, both batch APIs).
#
# Installs the newest `openai` and `anthropic` from PyPI into a venv (SDK_VENV, default
# target/sdk-venv; reused, upgraded each run), starts target/debug/evalfleet fake-provider on a
# free 127.0.0.1 port with a random API key (builds the binary only if it is missing), runs the
# checks and always stops the fake. Exits non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${SDK_VENV:-target/sdk-venv}
BIN=target/debug/evalfleet
FAKE_LOG=${TMPDIR:-/tmp}/evalfleet-sdk-compat-fake.$$.log

log() { printf '\n== %s\n' "$*"; }

log "python SDKs (venv $VENV)"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" 2>/dev/null || {
    # Debian splits venv support out of python3.
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$VENV"
  }
fi
PY=$VENV/bin/python
"$PY" -m pip install -q --disable-pip-version-check --upgrade openai anthropic
"$PY" -c 'import openai, anthropic; print(f"openai {openai.__version__}, anthropic {anthropic.__version__}")'

log "fake-provider"
[ -x "$BIN" ] || cargo build --bin evalfleet

# Only the script's own settings reach the SDKs: no key, base URL or proxy from the environment.
unset OPENAI_API_KEY OPENAI_BASE_URL OPENAI_ORG_ID OPENAI_PROJECT_ID \
  ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL \
  HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

key="sk-sdkcompat-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
fake_pid=
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  if [ -n "$fake_pid" ]; then
    kill "$fake_pid" 2>/dev/null || true
    wait "$fake_pid" 2>/dev/null || true
  fi
  rm -f "$FAKE_LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
answers() {
  "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1).read()' \
    "$1" 2>/dev/null
}

# A free port can be taken between the probe and the bind: try a few.
base=
for _ in 1 2 3; do
  port=$(free_port)
  "$BIN" fake-provider --host 127.0.0.1 --port "$port" --api-key "$key" --seed 1 >"$FAKE_LOG" 2>&1 &
  fake_pid=$!
  for _ in $(seq 1 100); do
    if answers "http://127.0.0.1:$port/stats"; then base="http://127.0.0.1:$port"; break; fi
    kill -0 "$fake_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$base" ] && break
  kill "$fake_pid" 2>/dev/null || true
  wait "$fake_pid" 2>/dev/null || true
  fake_pid=
  cat "$FAKE_LOG" >&2
done
if [ -z "$base" ]; then
  echo "sdk-compat: fake-provider did not start" >&2
  exit 1
fi
echo "fake-provider at $base (pid $fake_pid)"

log "SDK checks (scripts/sdk-compat.py)"
status=0
SDK_COMPAT_BASE_URL=$base SDK_COMPAT_API_KEY=$key "$PY" scripts/sdk-compat.py || status=$?
if [ "$status" -ne 0 ]; then
  echo "-- fake-provider log (last 40 lines)" >&2
  tail -n 40 "$FAKE_LOG" >&2 || true
fi
exit "$status"
