#!/usr/bin/env bash
# The abuse of issue 13 against the runtime's own listener (not part of CI): the JSON-RPC echo
# served by `Server::serve_until` at a file limit of 1,024, first unloaded, then under 1,100
# silent sockets and 100 dribblers (a head one byte a second), each opened once (as in the
# issue) or, with RECONNECT_MS, opened again that long after the server closes it.
# A healthy client measures its latency over a kept-alive connection and over a fresh
# connection per request (what a new client meets); the script prints both reports, the p99
# ratios abused ÷ unloaded, and the server's open descriptors while abused.
#
#   scripts/abuse.sh
#
# Tunables: SECONDS_PER_RUN (10), SILENT (1100), DRIBBLERS (100), FILE_LIMIT (1024),
# RECONNECT_MS (0: never), HEALTHY_IP (127.0.0.1, the attackers' own address; 127.0.0.2 is
# another peer),
# SERVER_CPU (0), LOAD_CPU (1), EXE (a prebuilt http_overhead binary: e.g. one built from an
# older commit, to compare), ABUSE (a prebuilt abuse binary).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}"
SILENT="${SILENT:-1100}"
DRIBBLERS="${DRIBBLERS:-100}"
FILE_LIMIT="${FILE_LIMIT:-1024}"
SERVER_CPU="${SERVER_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
RECONNECT_MS="${RECONNECT_MS:-0}"
HEALTHY_IP="${HEALTHY_IP:-127.0.0.1}"
OUT="${OUT:-target/abuse}"
mkdir -p "$OUT"
source scripts/bench-common.sh

EXE="${EXE:-$(bench_exe protocols-runtime http_overhead)}"
ABUSE="${ABUSE:-$(bench_exe protocols-runtime abuse)}"

trap stop_server EXIT

port_file="$OUT/port"
rm -f "$port_file"
# The server alone runs at the file limit; the generator needs more descriptors than it.
( ulimit -n "$FILE_LIMIT" && exec taskset -c "$SERVER_CPU" "$EXE" serve runtime "$port_file" ) &
SERVER_PID=$!
await_port "$port_file" "the server"
ulimit -n $(( SILENT + DRIBBLERS + 1024 ))

echo "## Abuse (file limit ${FILE_LIMIT}; ${SILENT} silent sockets, ${DRIBBLERS} dribblers, reconnect ${RECONNECT_MS} ms; healthy client from ${HEALTHY_IP}; ${SECONDS_PER_RUN} s each)"
unloaded="$(taskset -c "$LOAD_CPU" "$ABUSE" "$PORT" 0 0 "$SECONDS_PER_RUN" 0 "$HEALTHY_IP")"
echo "unloaded: $unloaded"
taskset -c "$LOAD_CPU" "$ABUSE" "$PORT" "$SILENT" "$DRIBBLERS" "$SECONDS_PER_RUN" \
    "$RECONNECT_MS" "$HEALTHY_IP" > "$OUT/abused.json" &
ABUSE_PID=$!
sleep $(( 3 + SECONDS_PER_RUN / 2 ))
descriptors="$(ls "/proc/$SERVER_PID/fd" | wc -l)"
wait "$ABUSE_PID"
abused="$(cat "$OUT/abused.json")"
echo "abused:   $abused"
echo "server descriptors open while abused: $descriptors (limit $FILE_LIMIT)"
p99() { grep -o "\"$2\":{[^}]*}" <<< "$1" | grep -o '"p99_us":[0-9]*' | cut -d: -f2; }
for kind in kept_alive fresh; do
    before="$(p99 "$unloaded" "$kind")"; during="$(p99 "$abused" "$kind")"
    awk -v k="$kind" -v b="$before" -v d="$during" \
        'BEGIN { printf "%s p99: %d us unloaded, %d us abused, ratio %.2f\n", k, b, d, (b > 0 ? d / b : 0) }'
done
