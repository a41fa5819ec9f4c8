#!/usr/bin/env bash
# The MCP benchmark (not a test): protocols-mcp against rmcp, both serving one `echo` tool over
# Streamable HTTP, driven by the same MCP load generator. `tools/call` echo at each
# concurrency, stateless (2026-07-28 requests, JSON answers) and in sessions (2025-11-25, SSE
# answers); then memory per idle session. Servers and the load generator run as separate
# processes pinned to separate cores; both servers run in every round, so ratios come from the
# same conditions.
#
#   scripts/bench-mcp.sh [all|load|sessions|profile|large]
#   RMCP=1 scripts/bench-mcp.sh        # also builds the rmcp comparator (bench/rmcp-echo)
#
# Without RMCP=1 the comparator is used if already built in RMCP_TARGET, else only our server
# is measured. Tunables: ROUNDS (3), SECONDS_PER_RUN (3), SESSIONS (10000), SERVER_CPU (0),
# LOAD_CPU (1), MODES ("stateless session"), CONCURRENCY ("1 16 64"), SERVERS ("ours rmcp"),
# RMCP_TARGET (/work/bench-target: the comparator's own target dir, outside the repository).
# `profile` runs each server under callgrind and reports instructions per request, the figure
# a busy machine does not disturb (CALLS (20000) calls at PROFILE_CONCURRENCY (16), after a
# warm-up); the profiles stay in $OUT for callgrind_annotate. SERVERS may also name
# `ours-boxed`, an experiment: our server with each request's handler future boxed.
# `large` is the large-payload measurement: every echoed message padded to MESSAGE_BYTES
# (102400), our server against `bare` (a bare axum echo of the same calls, parsing and copying
# the text once) under load (req/s × MESSAGE_BYTES is MB/s, so the req/s ratio is the MB/s
# ratio; at CONCURRENCY_LARGE (16) connections) and under callgrind (CALLS 4000 there).
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:-all}"
ROUNDS="${ROUNDS:-3}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-3}"
SESSIONS="${SESSIONS:-10000}"
SERVER_CPU="${SERVER_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
MODES="${MODES:-stateless session}"
CONCURRENCY="${CONCURRENCY:-1 16 64}"
SERVERS="${SERVERS:-ours rmcp}"
RMCP_TARGET="${RMCP_TARGET:-/work/bench-target}"
OUT="${OUT:-target/bench-mcp}"
mkdir -p "$OUT"
source scripts/bench-common.sh
# Each run's servers announce their port in a file of the run's own, so two runs sharing OUT
# never drive each other's servers.

# Our side: the bench executable (server and load generator), built in the bench profile.
EXE="$(bench_exe protocols-mcp mcp_echo)"
[[ -x "$EXE" ]] || { echo "could not build the mcp_echo bench" >&2; exit 1; }

RMCP_EXE="$RMCP_TARGET/release/rmcp-echo"
if [[ "${RMCP:-0}" == 1 ]]; then
    CARGO_TARGET_DIR="$RMCP_TARGET" cargo build --release -q \
        --manifest-path bench/rmcp-echo/Cargo.toml
fi
if [[ ! -x "$RMCP_EXE" ]]; then
    echo "rmcp comparator not built ($RMCP_EXE); measuring our server only (RMCP=1 builds it)" >&2
    SERVERS="ours"
fi

trap stop_server EXIT

# Starts <server> in <mode> pinned to SERVER_CPU; sets SERVER_PID and PORT.
start_server() {
    local server="$1" mode="$2" port_file="$OUT/port.$$"
    rm -f "$port_file"
    case "$server" in
        ours) taskset -c "$SERVER_CPU" "$EXE" serve "$mode" "$port_file" & ;;
        ours-boxed) taskset -c "$SERVER_CPU" "$EXE" serve "$mode" "$port_file" boxed & ;;
        bare) taskset -c "$SERVER_CPU" "$EXE" serve bare "$port_file" & ;;
        rmcp) taskset -c "$SERVER_CPU" "$RMCP_EXE" "$mode" "$port_file" & ;;
    esac
    SERVER_PID=$!
    await_port "$port_file" "$server $mode"
}

load_runs() {
    local results="$OUT/load.txt"
    : > "$results"
    for round in $(seq "$ROUNDS"); do
        for mode in $MODES; do
            for concurrency in $CONCURRENCY; do
                # Servers alternate within a round so background noise falls on both alike.
                for server in $SERVERS; do
                    start_server "$server" "$mode"
                    line="$(taskset -c "$LOAD_CPU" "$EXE" load "$PORT" "$mode" "$concurrency" \
                        "$SECONDS_PER_RUN" "$SERVER_PID")"
                    stop_server
                    echo "$round $server $mode $line" >> "$results"
                    echo "round $round: $server $mode $line" >&2
                done
            done
        done
    done
    echo "## tools/call echo (loopback, ${ROUNDS} rounds of ${SECONDS_PER_RUN}s, medians)"
    "$EXE" summarize "$results"
}

session_memory() {
    echo "## Memory per idle session (${SESSIONS} sessions: initialize + initialized, RSS from /proc)"
    echo "| server | baseline KiB | opened KiB | per session (bytes) |"
    echo "|---|---|---|---|"
    for server in $SERVERS; do
        start_server "$server" session
        # Warm the allocator and runtime buffers first, so the delta is the sessions' own.
        taskset -c "$LOAD_CPU" "$EXE" open "$PORT" 100 > /dev/null
        sleep 1
        local baseline opened
        baseline="$(rss_kib)"
        taskset -c "$LOAD_CPU" "$EXE" open "$PORT" "$SESSIONS" > /dev/null
        sleep 1
        opened="$(rss_kib)"
        stop_server
        echo "| $server | $baseline | $opened | $(( (opened - baseline) * 1024 / SESSIONS )) |"
    done
}

# Instructions the server executes per `tools/call`, counted by callgrind between a warm-up and
# the end of exactly CALLS calls.
instructions() {
    local calls="${CALLS:-20000}" concurrency="${PROFILE_CONCURRENCY:-16}"
    echo "## Instructions per tools/call (callgrind, ${calls} calls at concurrency ${concurrency})"
    echo "| mode | server | instructions per request | wrong answers |"
    echo "|---|---|---|---|"
    for mode in $MODES; do
        for server in $SERVERS; do
            local out="$OUT/callgrind.$server.$mode" port_file="$OUT/port.$$" exe
            rm -f "$port_file" "$out"*
            case "$server" in
                ours) exe=("$EXE" serve "$mode" "$port_file") ;;
                ours-boxed) exe=("$EXE" serve "$mode" "$port_file" boxed) ;;
                bare) exe=("$EXE" serve bare "$port_file") ;;
                rmcp) exe=("$RMCP_EXE" "$mode" "$port_file") ;;
            esac
            valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
                "${exe[@]}" 2>/dev/null &
            SERVER_PID=$!
            await_port "$port_file" "$server $mode under callgrind"
            "$EXE" calls "$PORT" "$mode" "$concurrency" 2000 > /dev/null
            callgrind_control -i on "$SERVER_PID" > /dev/null 2>&1
            wrong="$("$EXE" calls "$PORT" "$mode" "$concurrency" "$calls")"
            callgrind_control -i off "$SERVER_PID" > /dev/null 2>&1
            stop_server
            total="$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')"
            echo "| $mode | $server | $(( total / calls )) | $wrong |"
        done
    done
}

case "$WHAT" in
    load) load_runs ;;
    sessions) session_memory ;;
    profile) instructions ;;
    large)
        export MESSAGE_BYTES="${MESSAGE_BYTES:-102400}"
        SERVERS="ours bare"
        CONCURRENCY="${CONCURRENCY_LARGE:-16}"
        echo "# Large payloads: messages padded by ${MESSAGE_BYTES} bytes"
        load_runs; echo; CALLS="${CALLS:-4000}" instructions ;;
    all) load_runs; echo; session_memory; echo; instructions ;;
    *) echo "usage: $0 [all|load|sessions|profile|large]" >&2; exit 2 ;;
esac
