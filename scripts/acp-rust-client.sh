#!/usr/bin/env bash
# Runs the official Rust ACP SDK (the crates.io crate agent-client-protocol, what the Zed editor
# builds on; pinned in clients/acp-rust-client/Cargo.toml with its Cargo.lock) as the client of
# `all-protocols --stdio acp`: a prompt, a permission round trip (allowed and rejected), a
# cancel, session/load replay, an unknown session and end of input. The client is a crate of
# its own, outside the workspace, so the SDK's dependencies stay out of it; it shares the
# workspace's target directory so the dependencies both use are built once. Prints one line per
# check and a summary; exits non-zero when any check fails.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

cd "$root"
cargo build --quiet -p protocols-examples --bin all-protocols
cargo build --quiet --locked --manifest-path clients/acp-rust-client/Cargo.toml \
    --target-dir "$target_dir"
exec "$target_dir/debug/acp-rust-client" "$target_dir/debug/all-protocols" --stdio acp
