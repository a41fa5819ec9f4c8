#!/usr/bin/env bash
# Runtime benchmarks (not tests): HTTP overhead of the runtime against a bare axum handler,
# memory per idle session and after expiry, and SSE codec throughput. Servers and the load
# generator run as separate processes pinned to separate cores.
#
#   scripts/bench-runtime.sh [all|http|sessions|sse|layers]
#
# Tunables: ROUNDS (default 3), SECONDS_PER_RUN (3), SESSIONS (10000), SERVER_CPU (0),
# LOAD_CPU (1), KINDS ("bare hardened runtime runtime-auto"), CONCURRENCY ("1 16 64").
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:-all}"
ROUNDS="${ROUNDS:-3}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-3}"
SESSIONS="${SESSIONS:-10000}"
SERVER_CPU="${SERVER_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
KINDS="${KINDS:-bare hardened runtime runtime-auto}"
CONCURRENCY="${CONCURRENCY:-1 16 64}"
OUT="${OUT:-target/bench-runtime}"
mkdir -p "$OUT"

# The path of a bench executable, built in the bench profile.
bench_exe() {
    cargo bench -q -p protocols-runtime --bench "$1" --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*"' | tail -n1 | cut -d'"' -f4
}

SERVER_PID=""
stop_server() {
    if [[ -n "$SERVER_PID" ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
trap stop_server EXIT

# Starts `serve <kind>` pinned to SERVER_CPU; sets SERVER_PID and PORT.
start_server() {
    local port_file="$OUT/port"
    rm -f "$port_file"
    taskset -c "$SERVER_CPU" "$EXE" serve "$1" "$port_file" &
    SERVER_PID=$!
    for _ in $(seq 100); do
        [[ -s "$port_file" ]] && break
        sleep 0.05
    done
    PORT="$(cat "$port_file")"
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"; }

# The server's CPU time so far (user + system), in milliseconds.
cpu_ms() {
    local ticks_per_second
    ticks_per_second="$(getconf CLK_TCK)"
    awk -v hz="$ticks_per_second" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$SERVER_PID/stat"
}

http_overhead() {
    local results="$OUT/http.txt"
    : > "$results"
    for round in $(seq "$ROUNDS"); do
        for concurrency in $CONCURRENCY; do
            # Kinds alternate within a round so background noise falls on all of them alike.
            for kind in $KINDS; do
                start_server "$kind"
                before="$(cpu_ms)"
                line="$(taskset -c "$LOAD_CPU" "$EXE" load "$PORT" "$concurrency" "$SECONDS_PER_RUN")"
                used=$(( $(cpu_ms) - before ))
                stop_server
                echo "$kind $used $line" >> "$results"
                echo "round $round: $kind cpu=${used}ms $line" >&2
            done
        done
    done
    echo "## HTTP overhead (JSON-RPC echo, loopback, ${ROUNDS} rounds of ${SECONDS_PER_RUN}s)"
    "$EXE" summarize "$results"
}

session_memory() {
    start_server sessions
    local idle_wait=13   # the bench protocol's sessions idle out after 10 s, reaped every 1 s
    # Warm the server (allocator arenas, runtime buffers) with sessions that then expire.
    taskset -c "$LOAD_CPU" "$EXE" open "$PORT" 100 > /dev/null
    sleep "$idle_wait"
    local baseline opened expired reopened reexpired first alive gone
    baseline="$(rss_kib)"
    first="$(taskset -c "$LOAD_CPU" "$EXE" open "$PORT" "$SESSIONS")"
    opened="$(rss_kib)"
    alive="$(taskset -c "$LOAD_CPU" "$EXE" probe "$PORT" "$first")"
    sleep "$idle_wait"
    gone="$(taskset -c "$LOAD_CPU" "$EXE" probe "$PORT" "$first")"
    expired="$(rss_kib)"
    # The allocator keeps freed pages, so RSS alone cannot show the sessions were freed; a
    # second cycle that reuses them instead of growing does.
    taskset -c "$LOAD_CPU" "$EXE" open "$PORT" "$SESSIONS" > /dev/null
    reopened="$(rss_kib)"
    sleep "$idle_wait"
    reexpired="$(rss_kib)"
    stop_server
    echo "## Memory per idle session (${SESSIONS} sessions, RSS from /proc, KiB)"
    echo "| baseline | opened | per session (bytes) | expired | opened again | expired again | growth of the 2nd cycle | probe live / expired |"
    echo "|---|---|---|---|---|---|---|---|"
    echo "| $baseline | $opened | $(( (opened - baseline) * 1024 / SESSIONS )) | $expired | $reopened | $reexpired | $(( reopened - opened )) | $alive / $gone |"
}

sse_codec() {
    local exe
    exe="$(bench_exe sse_codec)"
    echo "## SSE codec throughput (criterion; thrpt is bytes of encoded stream per second)"
    taskset -c "$SERVER_CPU" "$exe" --bench --warm-up-time 1 --measurement-time 3 2>&1 |
        grep -E '^sse/|thrpt:' || true
}

hardening_layers() {
    local exe
    exe="$(bench_exe hardening_layers)"
    echo "## Hardening cost per request, in process (criterion)"
    taskset -c "$SERVER_CPU" "$exe" --bench --warm-up-time 1 --measurement-time 3 2>&1 |
        grep -E '^hardening|time:' || true
}

EXE="$(bench_exe http_overhead)"
case "$WHAT" in
    http) http_overhead ;;
    sessions) session_memory ;;
    sse) sse_codec ;;
    layers) hardening_layers ;;
    all) http_overhead; echo; session_memory; echo; sse_codec; echo; hardening_layers ;;
    *) echo "usage: $0 [all|http|sessions|sse|layers]" >&2; exit 2 ;;
esac
