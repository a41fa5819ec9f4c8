#!/usr/bin/env bash
# Runtime benchmarks (not tests): HTTP overhead of the runtime against a bare axum handler,
# memory per idle session and after expiry, and SSE codec throughput. Servers and the load
# generator run as separate processes pinned to separate cores. The generator writes
# pre-encoded requests on raw sockets from one thread and checks every answer, so it stays
# cheaper per request than the servers it measures (a hyper client cost as much as the bare
# server). `bare-headers` is a second baseline: the bare handler answering with the six
# security headers the hardening stamps; the headline ratios stay against `bare`. `runtime` is
# the echo served by the runtime's own listener (`Server::serve_until`, as a deployment runs);
# `runtime-nested` is the same hardened router nested into `axum::serve`; `runtime-unstamped` is
# `runtime` with every security header omitted, to show what the runtime costs apart from them.
#
#   scripts/bench-runtime.sh [all|http|sessions|sse|layers|callgrind]
#
# Tunables: ROUNDS (default 3), SECONDS_PER_RUN (3), SESSIONS (10000), SERVER_CPU (0),
# LOAD_CPU (1), KINDS ("bare bare-headers hardened runtime runtime-nested runtime-auto"), CONCURRENCY ("1 16 64"),
# CALLGRIND_REQUESTS (4000), EXE (a prebuilt http_overhead binary).
#
# `callgrind` (needs valgrind; not part of `all`) counts each server's instructions per request:
# unlike wall-clock figures, it does not move when other work shares the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:-all}"
ROUNDS="${ROUNDS:-3}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-3}"
SESSIONS="${SESSIONS:-10000}"
SERVER_CPU="${SERVER_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
KINDS="${KINDS:-bare bare-headers hardened runtime runtime-nested runtime-auto}"
CONCURRENCY="${CONCURRENCY:-1 16 64}"
OUT="${OUT:-target/bench-runtime}"
mkdir -p "$OUT"
source scripts/bench-common.sh

trap stop_server EXIT

# Starts `serve <kind>` pinned to SERVER_CPU; sets SERVER_PID and PORT.
start_server() {
    local port_file="$OUT/port"
    rm -f "$port_file"
    taskset -c "$SERVER_CPU" "$EXE" serve "$1" "$port_file" &
    SERVER_PID=$!
    await_port "$port_file" "serve $1"
}


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

# One field of the memory server's JSON report.
report_field() { "$MEMORY_EXE" report "$PORT" | grep -o "\"$1\":-\?[0-9]*" | cut -d: -f2; }

# Memory per idle session, and after the sessions expire. The server (session_memory) counts its
# live heap bytes with a counting allocator and reports RSS after malloc_trim(0): RSS alone
# cannot tell freed memory from leaked memory, because glibc keeps freed pages for reuse.
session_memory() {
    MEMORY_EXE="$(bench_exe protocols-runtime session_memory)"
    local port_file="$OUT/port"
    rm -f "$port_file"
    taskset -c "$SERVER_CPU" "$MEMORY_EXE" serve "$port_file" &
    SERVER_PID=$!
    await_port "$port_file" "the session memory server"
    local idle_wait=13   # the bench protocol's sessions idle out after 10 s, reaped every 1 s
    # Warm the server (allocator arenas, runtime buffers, connections' first allocations) with a
    # few sessions that then expire. What the first cycle leaves above this baseline is memory
    # kept for reuse (e.g. the store's table at its peak size); the second cycle shows it reused.
    taskset -c "$LOAD_CPU" "$EXE" open "$PORT" 100 > /dev/null
    sleep "$idle_wait"
    local heap=() trimmed=() first alive gone
    heap+=("$(report_field live_heap_bytes)"); trimmed+=("$(report_field trimmed_rss_kib)")
    first="$(taskset -c "$LOAD_CPU" "$EXE" open "$PORT" "$SESSIONS")"
    heap+=("$(report_field live_heap_bytes)"); trimmed+=("$(report_field trimmed_rss_kib)")
    alive="$(taskset -c "$LOAD_CPU" "$EXE" probe "$PORT" "$first")"
    sleep "$idle_wait"
    gone="$(taskset -c "$LOAD_CPU" "$EXE" probe "$PORT" "$first")"
    heap+=("$(report_field live_heap_bytes)"); trimmed+=("$(report_field trimmed_rss_kib)")
    # A second cycle: what expired is reused, not added to.
    taskset -c "$LOAD_CPU" "$EXE" open "$PORT" "$SESSIONS" > /dev/null
    heap+=("$(report_field live_heap_bytes)"); trimmed+=("$(report_field trimmed_rss_kib)")
    sleep "$idle_wait"
    heap+=("$(report_field live_heap_bytes)"); trimmed+=("$(report_field trimmed_rss_kib)")
    stop_server
    echo "## Memory per idle session (${SESSIONS} sessions; live heap from a counting allocator, RSS after malloc_trim(0))"
    echo "| | baseline | opened | expired | opened again | expired again |"
    echo "|---|---|---|---|---|---|"
    echo "| live heap (bytes) | ${heap[0]} | ${heap[1]} | ${heap[2]} | ${heap[3]} | ${heap[4]} |"
    echo "| RSS after trim (KiB) | ${trimmed[0]} | ${trimmed[1]} | ${trimmed[2]} | ${trimmed[3]} | ${trimmed[4]} |"
    echo
    echo "- heap per idle session: $(( (heap[1] - heap[0]) / SESSIONS )) bytes (RSS: $(( (trimmed[1] - trimmed[0]) * 1024 / SESSIONS )) bytes)"
    echo "- heap left after expiry: $(( heap[2] - heap[0] )) bytes, after the second cycle: $(( heap[4] - heap[0] )) bytes"
    echo "- trimmed RSS left after expiry: $(( trimmed[2] - trimmed[0] )) KiB, after the second cycle: $(( trimmed[4] - trimmed[0] )) KiB"
    echo "- a call on the first session: $alive while alive, $gone once expired"
}

sse_codec() {
    local exe
    exe="$(bench_exe protocols-runtime sse_codec)"
    echo "## SSE codec throughput (criterion; thrpt is bytes of encoded stream per second)"
    taskset -c "$SERVER_CPU" "$exe" --bench --warm-up-time 1 --measurement-time 3 2>&1 |
        grep -E '^sse/|thrpt:' || true
}

hardening_layers() {
    local exe
    exe="$(bench_exe protocols-runtime hardening_layers)"
    echo "## Hardening cost per request, in process (criterion)"
    taskset -c "$SERVER_CPU" "$exe" --bench --warm-up-time 1 --measurement-time 3 2>&1 |
        grep -E '^hardening|time:' || true
}

# Instructions per request of each server kind, counted by callgrind only while a fixed number
# of requests is served after a warm-up (connection set-up and first-use allocations excluded).
instructions_per_request() {
    local requests="${CALLGRIND_REQUESTS:-4000}" concurrency="${CONCURRENCY_CALLGRIND:-16}"
    echo "## Server instructions per request (callgrind, ${requests} requests over ${concurrency} connections)"
    echo "| server | instructions per request |"
    echo "|---|---|"
    for kind in $KINDS; do
        local port_file="$OUT/port" profile="$OUT/callgrind.$kind.out"
        rm -f "$port_file" "$profile"
        valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$profile" \
            "$EXE" serve "$kind" "$port_file" 2> "$OUT/callgrind.$kind.log" &
        SERVER_PID=$!
        await_port "$port_file" "serve $kind under callgrind"
        "$EXE" exactly "$PORT" "$concurrency" 200 > /dev/null
        callgrind_control -i on "$SERVER_PID" > /dev/null
        "$EXE" exactly "$PORT" "$concurrency" "$requests" > /dev/null
        callgrind_control -i off "$SERVER_PID" > /dev/null
        stop_server
        local total
        total="$(callgrind_annotate "$profile" 2> /dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')"
        echo "| $kind | $(( total / requests )) |"
    done
}

# EXE may name an already built http_overhead binary (cargo waits while others build).
EXE="${EXE:-$(bench_exe protocols-runtime http_overhead)}"
case "$WHAT" in
    http) http_overhead ;;
    sessions) session_memory ;;
    sse) sse_codec ;;
    layers) hardening_layers ;;
    callgrind) instructions_per_request ;;
    all) http_overhead; echo; session_memory; echo; sse_codec; echo; hardening_layers ;;
    *) echo "usage: $0 [all|http|sessions|sse|layers|callgrind]" >&2; exit 2 ;;
esac
