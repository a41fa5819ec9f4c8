#!/usr/bin/env bash
# Counts protocols-runtime's public API as rustdoc shows it to a user (all features on), so the
# figure moves only when what a reader meets moves. It documents the crate
# (`cargo doc -p protocols-runtime --no-deps --all-features`) and counts, in the HTML:
#
#   items    the entries of all.html: structs, enums, unions, traits, functions, type aliases,
#            constants, statics and macros, each once however many paths re-export it;
#   modules  the public modules (one index.html each below the crate root);
#   methods  associated functions and constants in the inherent impls of those types (the
#            "Implementations" section, not trait implementations, auto traits or blankets),
#            plus the required and provided methods each public trait declares.
#
# Not counted: enum variants, struct fields, trait implementations and `#[doc(hidden)]` items
# (the door generated code uses is hidden on purpose). Prints the three counts and their total.
#
#   scripts/public-items.sh        # uses $CARGO_TARGET_DIR, else ./target
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
# rustdoc leaves the pages of items that no longer exist; counting those would count the past.
rm -rf "$target/doc/protocols_runtime"
cargo doc -q -p protocols-runtime --no-deps --all-features
doc="$target/doc/protocols_runtime"

python3 - "$doc" <<'EOF'
import pathlib
import re
import sys

doc = pathlib.Path(sys.argv[1])
all_html = (doc / "all.html").read_text()
items = len(set(re.findall(r'<li><a href="([^"]+\.html)">', all_html)))
modules = sum(1 for page in doc.rglob("index.html") if page.parent != doc)

def section(text, start, ends):
    """The part of `text` from the `start` anchor to the first of `ends` after it."""
    begin = text.find(f'id="{start}"')
    if begin < 0:
        return ""
    stops = [i for i in (text.find(f'id="{end}"', begin) for end in ends) if i >= 0]
    return text[begin:min(stops)] if stops else text[begin:]

methods = 0
for page in doc.rglob("*.html"):
    kind = page.name.split(".")[0]
    text = page.read_text()
    if kind in ("struct", "enum", "union"):
        inherent = section(
            text,
            "implementations-list",
            ("trait-implementations", "synthetic-implementations", "blanket-implementations"),
        )
        methods += len(re.findall(r'<section id="(?:method|associatedconstant)\.', inherent))
    elif kind == "trait":
        declared = section(text, "main-content", ("foreign-impls", "implementors"))
        methods += len(re.findall(r'<section id="(?:tymethod|method)\.', declared))

print(f"items {items}  modules {modules}  methods {methods}  total {items + modules + methods}")
EOF
