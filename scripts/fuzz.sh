#!/usr/bin/env bash
# Runs the libFuzzer targets in fuzz/ (cargo-fuzz), each for SECONDS (default 60), and fails if
# any of them crashes (a panic, a broken claim, a timeout or running out of memory).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      # all targets when none is named
#
# Each run's corpus is fuzz/corpus/<target>/ (gitignored, kept between runs): the committed seeds
# (fuzz/seeds/<target>/) are copied in, and for the JSON targets so are the upstream example
# messages from the gitignored schema cache (fill it with `cargo run -p codegen -- sync`). A
# crash leaves its input in fuzz/artifacts/<target>/; replay it with
# `cargo fuzz run <target> <file>` from fuzz/ (with RUSTC_BOOTSTRAP=1 and the same flags).
#
# FUZZ_SANITIZER (default `none`): the targets are safe Rust, so AddressSanitizer finds nothing
# a panic would not, while it slows the build and each execution; `address` turns it on.
# FUZZ_PROFILE (default `release`): `dev` builds faster and runs slower.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${1:-60}"
shift || true
CARGO_FUZZ_VERSION=0.13.2
TOOLS="$PWD/.tools/cargo-fuzz"

if ! "$TOOLS/bin/cargo-fuzz" --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
    echo "installing cargo-fuzz $CARGO_FUZZ_VERSION into $TOOLS"
    cargo install -q --locked --root "$TOOLS" cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
export PATH="$TOOLS/bin:$PATH"
# cargo-fuzz passes -Z flags (sanitizer coverage); stable rustc takes them with this set.
export RUSTC_BOOTSTRAP=1

# Overflow checks and debug assertions on: an arithmetic overflow reached from input is a crash.
FLAGS=(--sanitizer "${FUZZ_SANITIZER:-none}" --debug-assertions)
if [ "${FUZZ_PROFILE:-release}" = dev ]; then
    FLAGS+=(--dev)
fi

cd fuzz
started=$(date +%s)
cargo fuzz build "${FLAGS[@]}"
echo "built every target in $(( $(date +%s) - started )) s"

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi

# The upstream example messages (MCP publishes them per revision) seed the JSON targets.
upstream_examples() {
    case "$1" in
        jsonrpc_decode | jsonrpc_common_shape | mcp_messages | mcp_stateless_head)
            find ../schema/cache/mcp -path '*/examples/*' -name '*.json' -type f 2>/dev/null
            ;;
    esac
}

failed=()
summary=()
for target in "${targets[@]}"; do
    corpus="corpus/$target"
    mkdir -p "$corpus" "artifacts/$target"
    cp -n "seeds/$target/"* "$corpus/" 2>/dev/null || true
    examples=0
    while IFS= read -r example; do
        # Named by the example's path, so a second run does not copy it again.
        name="upstream-$(printf '%s' "$example" | sha1sum | cut -c1-16)"
        cp -n "$example" "$corpus/$name"
        examples=$((examples + 1))
    done < <(upstream_examples "$target")
    dict=()
    if [ -f "dicts/$target.dict" ]; then
        dict=("-dict=dicts/$target.dict")
    fi
    log="artifacts/$target/last-run.log"
    echo "==> $target: ${SECONDS_EACH} s, $(ls "$corpus" | wc -l) corpus inputs ($examples upstream examples)"
    if cargo fuzz run "${FLAGS[@]}" "$target" "$corpus" -- \
        -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "${dict[@]}" >"$log" 2>&1; then
        outcome=ok
    else
        outcome=CRASH
        failed+=("$target")
        grep -E "panicked at|ERROR: libFuzzer|Test unit written|SUMMARY" "$log" | head -20 || true
    fi
    runs=$(grep -oP 'stat::number_of_executed_units:\s*\K\d+' "$log" | tail -1 || true)
    features=$(grep -oP 'stat::new_units_added:\s*\K\d+' "$log" | tail -1 || true)
    line="$target: $outcome, ${runs:-?} executions in ${SECONDS_EACH} s, ${features:-?} new corpus inputs"
    echo "$line"
    summary+=("$line")
done

echo
echo "fuzz summary (${SECONDS_EACH} s per target, $(( $(date +%s) - started )) s in all):"
printf '  %s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "crashed: ${failed[*]} (inputs and logs in fuzz/artifacts/)" >&2
    exit 1
fi
