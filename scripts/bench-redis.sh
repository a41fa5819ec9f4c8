#!/usr/bin/env bash
# The Redis session store's benchmark (not a test), in one run against a throwaway
# `redis-server` this script starts on a free port (`--save '' --appendonly no`) and stops:
#
# 1. MCP `tools/call` echo in sessions (2025-11-25, SSE answers) at each concurrency through one
#    replica, the same binary (`redis_echo`, protocols-redis's bench) with its sessions in
#    memory (`memory`), on Redis with its event streams in memory (`redis`: replicas sticky on
#    the session for streams) and with both on Redis (`redis-events`: what `--redis` deploys),
#    driven by bench-mcp.sh's load generator (`mcp_echo load`). Requests/s of each and each
#    store÷memory, the median of the per-round ratios: the stores run back to back in every
#    round, so a ratio cancels most of the noise other work puts on the machine.
# 2. Redis commands per steady-state call (for `redis` and `redis-events`), from `INFO
#    commandstats` around batches of calls
#    (`mcp_echo calls`): two batches of different sizes on fresh sessions, so what opening the
#    sessions costs cancels in their difference. The store's client-side commands (EVALSHA,
#    ZCOUNT, the reaper's pipelined ZSCOREs) are commands it sends; the rest run inside its
#    scripts. Round trips count a pipeline once: the event store's writer pipelines its steps
#    and says how many pipelines and steps it sent (`<port-file>.sent`, see redis_echo.rs), so
#    its steps are taken out of the commands sent and its pipelines put in.
# 3. Memory per idle session on Redis: `MEMORY USAGE` of session records (averaged over a
#    sample) plus the index's share, `used_memory` delta ÷ sessions, and the replica's RSS delta
#    ÷ sessions (as bench-mcp.sh measures it) with its sessions on Redis and in memory.
#
#   scripts/bench-redis.sh [all|load|commands|sessions]
#
# Tunables: ROUNDS (3), SECONDS_PER_RUN (3), CONCURRENCY ("16 64"), SESSIONS (1000), CALLS
# (2000: the steady-state batch), SERVER_CPU (0), LOAD_CPU (1), REDIS_CPU (LOAD_CPU: the replica's
# core is its own, as it would be with Redis on another machine), REDIS_SERVER (redis-server),
# REDIS_CLI (redis-cli), OUT (target/bench-redis).
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:-all}"
ROUNDS="${ROUNDS:-3}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-3}"
CONCURRENCY="${CONCURRENCY:-16 64}"
SESSIONS="${SESSIONS:-1000}"
CALLS="${CALLS:-2000}"
SERVER_CPU="${SERVER_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
REDIS_CPU="${REDIS_CPU:-$LOAD_CPU}"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"
REDIS_CLI="${REDIS_CLI:-redis-cli}"
OUT="${OUT:-target/bench-redis}"
mkdir -p "$OUT"
source scripts/bench-common.sh
LOAD_EXE="$(bench_exe protocols-mcp mcp_echo)"
SERVER_EXE="$(bench_exe protocols-redis redis_echo)"
[[ -x "$LOAD_EXE" && -x "$SERVER_EXE" ]] || { echo "could not build the benches" >&2; exit 1; }

REDIS_PID=""
stop_all() {
    stop_server
    if [[ -n "$REDIS_PID" ]]; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    fi
}
trap stop_all EXIT

# A port nothing listens on now (the kernel's choice for port 0).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts the throwaway Redis, pinned to REDIS_CPU; sets REDIS_PORT and REDIS_PID.
start_redis() {
    REDIS_PORT="$(free_port)"
    taskset -c "$REDIS_CPU" "$REDIS_SERVER" --port "$REDIS_PORT" --bind 127.0.0.1 \
        --save '' --appendonly no --daemonize no > "$OUT/redis.log" 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 100); do
        [[ "$(rcli PING 2>/dev/null)" == PONG ]] && return
        sleep 0.05
    done
    echo "redis-server did not start (see $OUT/redis.log)" >&2
    exit 1
}

rcli() { "$REDIS_CLI" -p "$REDIS_PORT" "$@"; }

# The replica's port file; with event streams on Redis, `$PORT_FILE.sent` says what its event
# store sent (pipelines, steps).
PORT_FILE="$OUT/port.$$"

# Starts the replica with its stores <memory|redis|redis-events>, pinned to SERVER_CPU; sets
# SERVER_PID and PORT.
start_server() {
    local port_file="$PORT_FILE" url=()
    [[ "$1" == redis ]] && url=("redis://127.0.0.1:$REDIS_PORT")
    [[ "$1" == redis-events ]] && url=("redis://127.0.0.1:$REDIS_PORT" events)
    rm -f "$port_file" "$port_file.sent"
    taskset -c "$SERVER_CPU" "$SERVER_EXE" serve "$port_file" "${url[@]}" &
    SERVER_PID=$!
    await_port "$port_file" "the $1 replica"
}

load_runs() {
    local results="$OUT/load.txt"
    : > "$results"
    for round in $(seq "$ROUNDS"); do
        for concurrency in $CONCURRENCY; do
            # The stores alternate within a round so background noise falls on both alike.
            for store in memory redis redis-events; do
                rcli FLUSHALL > /dev/null
                start_server "$store"
                line="$(taskset -c "$LOAD_CPU" "$LOAD_EXE" load "$PORT" session "$concurrency" \
                    "$SECONDS_PER_RUN" "$SERVER_PID")"
                stop_server
                echo "$round $store session $line" >> "$results"
                echo "round $round: $store $line" >&2
            done
        done
    done
    echo "## tools/call echo in sessions, one replica (loopback, ${ROUNDS} rounds of ${SECONDS_PER_RUN}s, medians)"
    "$LOAD_EXE" summarize "$results" > "$OUT/summary.txt"
    sed '/^$/q' "$OUT/summary.txt"
    echo "| conc. | store | throughput store÷memory (median of per-round ratios) | server CPU/req store÷memory |"
    echo "|---|---|---|---|"
    python3 - "$results" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    round_, store, _mode, doc = line.split(" ", 3)
    run = json.loads(doc)
    runs[(run["concurrency"], round_, store)] = run
for conc in sorted({key[0] for key in runs}):
    rounds = sorted({key[1] for key in runs if key[0] == conc})
    for store in ("redis", "redis-events"):
        pairs = [(runs[(conc, r, store)], runs[(conc, r, "memory")]) for r in rounds
                 if (conc, r, store) in runs and (conc, r, "memory") in runs]
        if not pairs:
            continue
        rps = statistics.median(other["rps"] / memory["rps"] for other, memory in pairs)
        cpu = statistics.median(other["cpu_us_per_req"] / memory["cpu_us_per_req"] for other, memory in pairs)
        print(f"| {conc} | {store} | {rps:.2f} | {cpu:.2f} |")
EOF
}

# `INFO commandstats` as `name calls usec` lines.
command_stats() {
    rcli INFO commandstats | tr -d '\r' |
        sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p'
}

# What the event store has sent (`pipelines steps`; `0 0` with streams in memory), read after
# the file's next rewrite.
event_store_sent() {
    sleep 0.3
    cat "$PORT_FILE.sent" 2>/dev/null || echo "0 0"
}

# Runs `mcp_echo calls` (<concurrency> fresh sessions, <count> calls) between a stats reset and
# a stats read; the stats go to file <out>, the event store's sent counts before and after to
# <out>.sent.
counted_batch() {
    local concurrency="$1" count="$2" out="$3" wrong
    rcli CONFIG RESETSTAT > /dev/null
    event_store_sent > "$out.sent"
    wrong="$(taskset -c "$LOAD_CPU" "$LOAD_EXE" calls "$PORT" session "$concurrency" "$count")"
    event_store_sent >> "$out.sent"
    command_stats > "$out"
    [[ "$wrong" == 0 ]] || echo "warning: $wrong wrong answers in a counted batch" >&2
}

# Redis commands per steady-state call of the replica with stores <redis|redis-events>.
commands_per_call() {
    local store="$1" concurrency=16 small=200
    rcli FLUSHALL > /dev/null
    start_server "$store"
    # Warm-up: connections, scripts cached, allocator.
    taskset -c "$LOAD_CPU" "$LOAD_EXE" calls "$PORT" session "$concurrency" 400 > /dev/null
    counted_batch "$concurrency" "$small" "$OUT/stats.small"
    counted_batch "$concurrency" "$((small + CALLS))" "$OUT/stats.large"
    stop_server
    echo "## Redis commands per steady-state tools/call, $store (INFO commandstats; (batch of $((small + CALLS)) − batch of $small) ÷ $CALLS, $concurrency sessions each)"
    python3 - "$OUT/stats.small" "$OUT/stats.large" "$CALLS" "$concurrency" "$small" <<'EOF'
import sys
def read(path):
    stats = {}
    for line in open(path):
        name, calls, usec = line.split()
        stats[name] = (int(calls), int(usec))
    return stats
small, large = read(sys.argv[1]), read(sys.argv[2])
def store_sent(path):
    (p0, s0), (p1, s1) = [map(int, line.split()) for line in open(path + ".sent")]
    return p1 - p0, s1 - s0
(small_pipes, small_steps), (large_pipes, large_steps) = store_sent(sys.argv[1]), store_sent(sys.argv[2])
calls, sessions, small_calls = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
# What the store sends itself; everything else it causes runs inside its scripts. The
# measuring commands (CONFIG RESETSTAT, INFO) are left out.
# A live reader's blocking XREAD and the connection it opens are the replica's own too.
client_side = {"evalsha", "eval", "zcount", "zscore", "ping", "script|load", "script",
               "xread", "hello", "client|setinfo", "client|setname", "select"}
measuring = {"config|resetstat", "info"}
print("| command | sent by | per call | per session opened | µs in Redis per call |")
print("|---|---|---|---|---|")
round_trips = inner = usec_total = 0.0
for name in sorted(set(small) | set(large)):
    if name in measuring:
        continue
    (c1, u1), (c2, u2) = small.get(name, (0, 0)), large.get(name, (0, 0))
    per_call = (c2 - c1) / calls
    per_open = (c1 - per_call * small_calls) / sessions
    sent = "replica" if name in client_side else "script"
    usec = (u2 - u1) / calls
    if sent == "replica":
        usec_total += usec
        if name != "zscore":
            round_trips += per_call
    else:
        inner += per_call
    print(f"| {name} | {sent} | {per_call:.3f} | {per_open:.2f} | {usec:.2f} |")
zscore = (large.get("zscore", (0, 0))[0] - small.get("zscore", (0, 0))[0]) / calls
print()
print(f"- commands the replica sends per steady-state call: {round_trips:.3f} (script calls and direct commands"
      f" the replica sends; the reaper's pipelined ZSCOREs, {zscore:.3f} per call, ride in one"
      " pipeline per reap and are not per call)")
print(f"- commands run inside scripts per call: {inner:.3f}; Redis time per call: {usec_total:.1f} µs")
pipes = (large_pipes - small_pipes) / calls
steps = (large_steps - small_steps) / calls
print(f"- round trips per steady-state call, a pipeline counted once: {round_trips - steps + pipes:.3f}"
      f" (the event store sent {steps:.3f} steps per call in {pipes:.3f} pipelines)")
EOF
}

# One field of `INFO memory`.
redis_memory() { rcli INFO memory | tr -d '\r' | sed -n "s/^$1:\([0-9]*\)$/\1/p"; }

session_memory() {
    echo "## Memory per idle session (${SESSIONS} sessions: initialize + initialized, then idle)"
    echo "| store | replica RSS baseline KiB | opened KiB | replica bytes per session | Redis used_memory delta per session | MEMORY USAGE per record (sampled) | index share per session |"
    echo "|---|---|---|---|---|---|---|"
    for store in memory redis; do
        rcli FLUSHALL > /dev/null
        start_server "$store"
        # Warm the allocator, the runtime's buffers and Redis first, so the delta is the sessions'.
        taskset -c "$LOAD_CPU" "$LOAD_EXE" open "$PORT" 100 > /dev/null
        sleep 1
        local baseline opened used_before used_after
        baseline="$(rss_kib)"
        used_before="$(redis_memory used_memory)"
        taskset -c "$LOAD_CPU" "$LOAD_EXE" open "$PORT" "$SESSIONS" > /dev/null
        sleep 1
        opened="$(rss_kib)"
        used_after="$(redis_memory used_memory)"
        local replica=$(( (opened - baseline) * 1024 / SESSIONS ))
        if [[ "$store" == redis ]]; then
            local sample total=0 count=0 bytes index live
            # Through a file: `head` closing the pipe early would fail the run (pipefail).
            rcli --scan --pattern 'protocols:session:*' > "$OUT/keys.txt"
            sample="$(head -n 100 "$OUT/keys.txt")"
            for key in $sample; do
                bytes="$(rcli MEMORY USAGE "$key" SAMPLES 0)"
                total=$(( total + bytes )); count=$(( count + 1 ))
            done
            index="$(rcli MEMORY USAGE protocols:sessions SAMPLES 0)"
            live="$(rcli ZCARD protocols:sessions)"
            echo "| redis | $baseline | $opened | $replica | $(( (used_after - used_before) / SESSIONS )) | $(( total / count )) (of $count) | $(( index / live )) (index of $live) |"
        else
            echo "| memory | $baseline | $opened | $replica | – | – | – |"
        fi
        stop_server
    done
}

start_redis
case "$WHAT" in
    load) load_runs ;;
    commands) commands_per_call redis; echo; commands_per_call redis-events ;;
    sessions) session_memory ;;
    all) load_runs; echo; commands_per_call redis; echo; commands_per_call redis-events; echo; session_memory ;;
    *) echo "usage: $0 [all|load|commands|sessions]" >&2; exit 2 ;;
esac
