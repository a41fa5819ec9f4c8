#!/usr/bin/env bash
# Adds a revision the way README's "Adding a spec revision" says, end to end, in a scratch clone:
# pins a copy of the newest pinned revision of a protocol under a new name (as a draft), syncs it
# from a scratch mirror, generates, makes the one hand edit the glue's compiler demands (MCP: the
# new revision's arm in `wire::codec`, how its messages are written; every other list is the
# generated `Revision`), counts the hand-written lines it took outside `generated/` and
# `schema/`, builds and tests the protocol crate with the new revision (its revisions tests
# cover it with no new test code; for MCP a tool call at every stateless revision is answered),
# then unpins it and shows `--check` reporting the orphaned module. Not run in CI: it compiles
# the crate. Usage: scripts/new-revision.sh [mcp|acp|a2a] [NEW-REVISION]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PROTOCOL="${1:-mcp}"
NEW="${2:-2099-01-01}"
MODULE="v${NEW//[^A-Za-z0-9]/_}"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
# Registry crates are reused from this checkout's target directory; the workspace's own crates
# rebuild, since their paths differ.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

step() { printf '\n==> %s\n' "$*"; }

step "scratch clone of HEAD in $SCRATCH/repo"
git clone -q "$ROOT" "$SCRATCH/repo"
cd "$SCRATCH/repo"

# The newest revision of the protocol: the last [[revision]] pinned for it.
OLD="$(awk -v p="$PROTOCOL" '
  /^\[\[revision\]\]/ { in_rev = 1; next }
  /^\[\[/ { in_rev = 0 }
  in_rev && $1 == "protocol" { proto = $3 }
  in_rev && $1 == "revision" && proto == "\"" p "\"" { rev = $3 }
  END { gsub(/"/, "", rev); print rev }' schema/sources.toml)"
[ -n "$OLD" ] || { echo "no $PROTOCOL revision pinned" >&2; exit 1; }

# The directory its files live in (`acp/v2` for ACP's v2-unstable), from its first input.
OLD_DIR="$(awk -v p="\"$PROTOCOL\"" -v r="\"$OLD\"" '
  /^\[\[revision\]\]/ { in_rev = 1; proto = ""; rev = ""; next }
  /^\[\[/ { in_rev = 0 }
  in_rev && $1 == "protocol" { proto = $3 }
  in_rev && $1 == "revision" { rev = $3 }
  in_rev && $1 == "inputs" && proto == p && rev == r {
    match($0, /"[^"]*"/); first = substr($0, RSTART + 1, RLENGTH - 2)
    sub(/\/[^\/]*$/, "", first); print first }' schema/sources.toml)"
NEW_DIR="$PROTOCOL/$NEW"

step "pin $PROTOCOL $OLD again as $NEW (module $MODULE, draft; files $OLD_DIR -> $NEW_DIR)"
# Every [[file]] of the old revision and its [[revision]] entry, copied with the paths moved to
# the new directory. URLs and digests stay: the files are byte-identical copies.
awk -v p="\"$PROTOCOL\"" -v old="\"$OLD\"" -v new="$NEW" -v module="$MODULE" \
    -v from="$OLD_DIR/" -v to="$NEW_DIR/" '
  function flush() {
    if (block != "" && proto == p && rev == old) {
      n = split(block, lines, "\n"); copy = ""
      for (i = 1; i < n; i++) {
        line = lines[i]
        if (line ~ /^(path|inputs|include_dirs) /) gsub(from, to, line)
        if (line ~ /^revision /) line = "revision = \"" new "\""
        if (line ~ /^module /) line = "module = \"" module "\""
        if (line ~ /^stability /) continue
        copy = copy line "\n"
      }
      if (kind == "revision") copy = copy "stability = \"draft\"\n"
      extra = extra "\n" copy
    }
    block = ""; kind = ""; proto = ""; rev = ""
  }
  /^\[\[file\]\]/ { flush(); kind = "file" }
  /^\[\[revision\]\]/ { flush(); kind = "revision" }
  /^$/ { flush() }
  { print }
  kind != "" && $0 !~ /^#/ { block = block $0 "\n" }
  kind != "" && $1 == "protocol" { proto = $3 }
  kind != "" && $1 == "revision" { rev = $3 }
  END { flush(); printf "%s", extra }' schema/sources.toml > "$SCRATCH/sources.toml"
mv "$SCRATCH/sources.toml" schema/sources.toml
git --no-pager diff --stat

step "sync from a scratch mirror: the pinned files plus copies under $NEW_DIR"
mkdir -p "$SCRATCH/mirror/$NEW_DIR"
cp -R "$ROOT/schema/cache/." "$SCRATCH/mirror/"
cp -R "$ROOT/schema/cache/$OLD_DIR/." "$SCRATCH/mirror/$NEW_DIR/"
CODEGEN_SCHEMA_MIRROR="$SCRATCH/mirror" cargo run -q -p codegen -- sync

step "generate"
cargo run -q -p codegen
if [ "$PROTOCOL" = mcp ]; then
  step "the hand edit the compiler demands: the $MODULE arm of wire::codec (a draft's is gated)"
  # After the codec's last module arm, the same arm for the new module.
  awk -v module="$MODULE" -v variant="V${MODULE#v}" '
    { lines[NR] = $0 }
    /^ *Revision::V[A-Za-z0-9_]* => through!\(v[A-Za-z0-9_]*\),$/ { last = NR }
    END {
      for (i = 1; i <= NR; i++) {
        print lines[i]
        if (i == last) {
          indent = lines[i]; sub(/[^ ].*$/, "", indent)
          print indent "#[cfg(feature = \"unstable\")]"
          print indent "Revision::" variant " => through!(" module "),"
        }
      }
    }' protocols/mcp/src/wire.rs > "$SCRATCH/wire.rs"
  mv "$SCRATCH/wire.rs" protocols/mcp/src/wire.rs
fi
git add -A
echo "hand-written lines the revision took (outside generated/ and schema/):"
git --no-pager diff --cached --numstat -- . ':(exclude)**/generated/**' ':(exclude)schema/**'

step "build and test protocols-$PROTOCOL with the new revision"
cargo build -q -p "protocols-$PROTOCOL"
cargo clippy -q -p "protocols-$PROTOCOL" --features unstable -- -D warnings
cargo test -q -p "protocols-$PROTOCOL" --features unstable --test revisions
if [ "$PROTOCOL" = mcp ]; then
  cargo test -q -p protocols-mcp --features unstable --test mcp_trait \
    every_listed_stateless_revision_answers_a_tool_call_as_it_defines_one
fi

step "unpin it again: --check reports the module no pin produces"
git checkout -q -- schema/sources.toml
if cargo run -q -p codegen -- --check; then
  echo "--check passed with an orphaned module" >&2
  exit 1
fi
echo "new-revision: $PROTOCOL $NEW pinned, generated, built and tested; unpinned, --check reported it"
