#!/usr/bin/env bash
# What authenticating one request costs once the issuer's key is cached (not a test): the JWT
# authenticator per algorithm against the static bearer table, measured in the same run.
#
#   scripts/bench-auth.sh [callgrind|time]
#
# `callgrind` (default; needs valgrind) counts instructions inside the bench's measured loop, a
# figure other work on the machine does not move; `time` runs criterion. Tunables:
# AUTH_REQUESTS (200), SERVER_CPU (0), EXE (a prebuilt jwt_validation binary).
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:-callgrind}"
REQUESTS="${AUTH_REQUESTS:-200}"
SERVER_CPU="${SERVER_CPU:-0}"
OUT="${OUT:-target/bench-auth}"
mkdir -p "$OUT"

source scripts/bench-common.sh
EXE="${EXE:-$(bench_exe protocols-runtime jwt_validation)}"

callgrind() {
    echo "## Instructions per authentication, cached key (callgrind, ${REQUESTS} requests each)"
    echo "| authenticator | instructions | × bearer |"
    echo "|---|---|---|"
    local baseline=""
    for kind in bearer eddsa rs256 ps256 es256; do
        local profile="$OUT/callgrind.$kind.out"
        valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*' \
            --callgrind-out-file="$profile" "$EXE" exactly "$kind" "$REQUESTS" 2> "$OUT/$kind.log"
        local total per
        total="$(callgrind_annotate "$profile" 2> /dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')"
        per=$(( total / REQUESTS ))
        baseline="${baseline:-$per}"
        echo "| $kind | $per | $(awk -v a="$per" -v b="$baseline" 'BEGIN { printf "%.1f", a / b }') |"
    done
}

case "$WHAT" in
    callgrind) callgrind ;;
    time) taskset -c "$SERVER_CPU" "$EXE" --bench --warm-up-time 1 --measurement-time 3 2>&1 |
        grep -E '^authenticate|time:' || true ;;
    *) echo "usage: $0 [callgrind|time]" >&2; exit 2 ;;
esac
