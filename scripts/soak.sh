#!/usr/bin/env bash
# Soak test (not part of CI): builds all-protocols (release), starts it on a free loopback port,
# and runs scripts/soak_load.py against it for SOAK_SECONDS (default 1800): mixed MCP and A2A
# load plus issue 13's abuse (silent sockets, header dribblers, 1 MiB A2A messages, fuzzed
# bodies), sampling the server's RSS and open file descriptors every SOAK_SAMPLE_EVERY seconds
# (default 5) from /proc. It prints whether both are flat after warm-up (the last third of the
# run against the middle third, with the figures) and exits 1 if either grew or the server died.
#
#   SOAK_SECONDS=300 scripts/soak.sh
#
# Some of the load opens MCP sessions and ACP connections and abandons them (fuzzed
# `initialize` bodies do); they hold memory until their idle time runs out. The server runs with
# `--session-idle SOAK_SESSION_IDLE` (default 120 s) so that the warm-up spans several idle
# periods and the judged thirds see the steady state; with the 30-minute production default,
# a 30-minute run would never see one of them expire.
#
# SOAK_PROFILE=debug runs the debug build instead (quicker to build; its RSS is not comparable
# with a release build's, but whether it is flat is). The samples are kept in
# target/soak/samples.csv and the server's log in target/soak/server.log.
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_SECONDS="${SOAK_SECONDS:-1800}"
SOAK_SAMPLE_EVERY="${SOAK_SAMPLE_EVERY:-5}"
SOAK_SESSION_IDLE="${SOAK_SESSION_IDLE:-120}"
OUT=target/soak
mkdir -p "$OUT"

if [ "${SOAK_PROFILE:-release}" = debug ]; then
    cargo build -q -p protocols-examples --bin all-protocols
    binary=target/debug/all-protocols
else
    cargo build -q --release -p protocols-examples --bin all-protocols
    binary=target/release/all-protocols
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"$binary" --listen "127.0.0.1:$port" --session-idle "$SOAK_SESSION_IDLE" 2>"$OUT/server.log" &
server=$!
stop() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap stop EXIT

for _ in $(seq 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
echo "soak: all-protocols (pid $server) on 127.0.0.1:$port, file limit $(awk '/Max open files/ {print $4}' /proc/$server/limits), ${SOAK_SECONDS} s, sessions idle after ${SOAK_SESSION_IDLE} s"

status=0
python3 scripts/soak_load.py --port "$port" --pid "$server" --seconds "$SOAK_SECONDS" \
    --sample-every "$SOAK_SAMPLE_EVERY" --samples-csv "$OUT/samples.csv" || status=$?
if ! kill -0 "$server" 2>/dev/null; then
    echo "soak: the server died during the run (see $OUT/server.log)" >&2
    status=1
fi
exit "$status"
