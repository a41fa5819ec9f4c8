#!/usr/bin/env bash
# Runs the official Python ACP client (agent-client-protocol, pinned below) against
# `all-protocols --stdio acp`: a prompt, a permission round trip (allowed and rejected), a
# cancel, session/load replay, an unknown session and end of input. The client lives in a
# virtualenv under .tools/ (gitignored). Prints one line per check and a summary; exits non-zero
# when any check fails.
set -euo pipefail

PACKAGE_VERSION="0.12.1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/acp-venv"

if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('agent-client-protocol') != '$PACKAGE_VERSION')" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "agent-client-protocol==$PACKAGE_VERSION"
fi

cd "$root"
cargo build --quiet -p protocols-examples --bin all-protocols
target_dir="${CARGO_TARGET_DIR:-$root/target}"
exec "$venv/bin/python" "$root/protocols/acp/tests/python/real_client.py" \
    "$target_dir/debug/all-protocols" --stdio acp
