# Sourced by the benchmark scripts, not run: building a bench executable, waiting for a server
# started in the background to announce its port in a file, reading its RSS and stopping it.

# The path of bench executable <bench> of package <package>, built in the bench profile.
bench_exe() {
    cargo bench -q -p "$1" --bench "$2" --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*"' | tail -n1 | cut -d'"' -f4
}

# The server started in the background; `stop_server` ends it.
SERVER_PID=""
stop_server() {
    if [[ -n "$SERVER_PID" ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}

# Waits up to a minute (a server under valgrind starts slowly) for <port file> to be written;
# sets PORT, or stops the script saying <what> did not start.
await_port() {
    local port_file="$1" what="$2"
    for _ in $(seq 600); do
        [[ -s "$port_file" ]] && break
        sleep 0.1
    done
    [[ -s "$port_file" ]] || { echo "$what did not start" >&2; exit 1; }
    PORT="$(cat "$port_file")"
}

# The server's resident set, in KiB.
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"; }
