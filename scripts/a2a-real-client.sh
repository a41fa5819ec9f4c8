#!/usr/bin/env bash
# Drives the A2A side of `all-protocols` with the official Python a2a-sdk (pinned 1.3.x):
# installs it into .tools/a2a-venv (gitignored), starts the server on a free loopback port,
# runs protocols/a2a/tests/python/a2a_real_client.py against it, stops the server.
# Exits non-zero when anything fails. A2A_SERVER_CMD overrides the server command (it gets
# the address as its last argument).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.tools/a2a-venv
SDK_VERSION="a2a-sdk[http-server]==1.3.0"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import a2a.client, importlib.metadata as m; assert m.version("a2a-sdk") == "1.3.0"' 2>/dev/null; then
  "$VENV/bin/pip" install --quiet "$SDK_VERSION"
fi

PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ADDRESS="127.0.0.1:$PORT"
BASE="http://$ADDRESS"

if [[ -n "${A2A_SERVER_CMD:-}" ]]; then
  read -r -a SERVER <<<"$A2A_SERVER_CMD"
else
  cargo build --quiet -p protocols-examples --bin all-protocols
  SERVER=(target/debug/all-protocols --listen)
fi

LOG=$(mktemp)
"${SERVER[@]}" "$ADDRESS" >"$LOG" 2>&1 &
SERVER_PID=$!
cleanup() {
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  rm -f "$LOG"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
  if curl -sf "$BASE/.well-known/agent-card.json" >/dev/null 2>&1; then
    break
  fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "a2a-real-client: the server exited:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  sleep 0.1
done
curl -sf "$BASE/.well-known/agent-card.json" >/dev/null || {
  echo "a2a-real-client: no agent card at $BASE/.well-known/agent-card.json" >&2
  cat "$LOG" >&2
  exit 1
}

timeout 120 "$VENV/bin/python" protocols/a2a/tests/python/a2a_real_client.py "$BASE"
