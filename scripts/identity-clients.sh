#!/usr/bin/env bash
# Identity end to end with real clients: the official MCP Python SDK client (mcp, pinned) with a
# bearer token, and Debian's chromium headless as a browser client over CORS, both against the
# all-protocols binary protected by JWTs (examples/tests/identity.rs). Installs the SDK into
# .tools/identity/venv and chromium with apt-get when missing, then runs the tests with both
# required, so a missing tool fails instead of skipping.
set -euo pipefail

PYTHON_SDK_VERSION=2.3.0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/identity/venv"

if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('mcp') == '$PYTHON_SDK_VERSION'" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "mcp==$PYTHON_SDK_VERSION" >&2
fi
if ! command -v chromium >/dev/null; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2
fi

export IDENTITY_PYTHON="$venv/bin/python"
export IDENTITY_CHROMIUM="$(command -v chromium)"
export IDENTITY_CLIENTS_REQUIRED=1
cd "$root"
cargo test -q -p protocols-examples --test identity -- --nocapture --test-threads 2
