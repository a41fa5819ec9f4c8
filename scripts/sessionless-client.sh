#!/usr/bin/env bash
# The official MCP Python SDK client (mcp, pinned as in interop-client.sh, sharing its venv in
# .tools/interop) against `mcp-everything --sessionless`: initialize, tools/list and a tools/call
# with no Mcp-Session-Id ever issued (scripts/interop/sessionless_client.py). Bounded: the
# client gets 30 s.
set -euo pipefail

PYTHON_SDK_VERSION=2.3.0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/interop/venv"
if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('mcp') == '$PYTHON_SDK_VERSION'" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "mcp==$PYTHON_SDK_VERSION" >&2
fi

cd "$root"
cargo build --quiet -p protocols-examples --bin mcp-everything
server_bin="${CARGO_TARGET_DIR:-$root/target}/debug/mcp-everything"

log="$(mktemp)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
"$server_bin" --listen "127.0.0.1:$port" --sessionless 2>"$log" &
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

if ! timeout 30 "$venv/bin/python" "$root/scripts/interop/sessionless_client.py" "http://127.0.0.1:$port/mcp"; then
    echo "the Python SDK client failed against mcp-everything --sessionless; its log:" >&2
    cat "$log" >&2
    exit 1
fi
