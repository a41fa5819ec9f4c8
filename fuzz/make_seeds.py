#!/usr/bin/env python3
"""Writes the committed seed corpora, fuzz/seeds/<target>/t-<hash>, from the project's own test
messages: every Rust string literal (plain, raw or byte) in the crates' sources and tests that
is a JSON-RPC message or an SSE stream, plus the A2A route table's paths. Run it from anywhere
after changing tests: `python3 fuzz/make_seeds.py`. It rewrites only the `t-*` files, so the
hand-named seeds beside them (`crash-*`, `was-panic-*`: inputs that once broke a claim) stay.
Upstream example messages are not seeds: scripts/fuzz.sh copies them from the gitignored
schema cache into each run's corpus."""

import hashlib
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = ROOT / "fuzz" / "seeds"
SOURCES = ["runtime", "protocols/mcp", "protocols/a2a", "protocols/acp", "examples", "testkit"]
# Generated modules hold no messages, only types; they are large, so skip them.
SKIP = ("/generated/",)

# The SSE target's first two bytes: the event size limit (3: 1 MiB) and the chunking seed.
SSE_PREFIXES = [b"\x03\x01", b"\x01\x2a"]
# A 2026-07-28 request's header lines, for the stateless head target.
STATELESS_HEADERS = "mcp-protocol-version: 2026-07-28\nmcp-method: {method}\n{name}\n"

LITERAL = re.compile(
    r'b?r(?P<hashes>#*)"(?P<raw>.*?)"(?P=hashes)|b?"(?P<plain>(?:[^"\\]|\\.)*)"', re.S
)
ESCAPE = re.compile(r'\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|\n\s*|.)', re.S)
SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def unescape(body):
    def one(match):
        escape = match.group(1)
        if escape.startswith("u{"):
            return chr(int(escape[2:-1], 16))
        if escape.startswith("x"):
            return chr(int(escape[1:], 16))
        if escape.startswith("\n"):
            return ""  # a line continuation
        return SIMPLE_ESCAPES.get(escape, "\\" + escape)

    return ESCAPE.sub(one, body)


def literals(text):
    for match in LITERAL.finditer(text):
        if match.group("raw") is not None:
            yield match.group("raw")
        else:
            yield unescape(match.group("plain"))


def json_macros(text):
    """The bodies of the `json!(…)` calls in `text`, as JSON: each Rust expression standing for
    a key or a value (a variable, a call, a constant) becomes the string "x"."""
    for match in re.finditer(r"json!\s*\(", text):
        body = balanced(text, match.end() - 1)
        if body is not None:
            yield rust_json(body[1:-1])


def balanced(text, start):
    """The bracketed text opening at `start`, string literals skipped; None if unclosed."""
    depth, at = 0, start
    while at < len(text):
        char = text[at]
        if char == '"':
            at = string_end(text, at)
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return text[start : at + 1]
        at += 1
    return None


def string_end(text, at):
    """The index past the Rust string literal opening at `at`."""
    at += 1
    while at < len(text) and text[at] != '"':
        at += 2 if text[at] == "\\" else 1
    return at + 1


JSON_WORD = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])|true\b|false\b|null\b")


def rust_json(body):
    out, at = [], 0
    while at < len(body):
        char = body[at]
        if char.isspace() or char in "{}[]:,":
            out.append(char)
            at += 1
        elif char == '"':
            end = string_end(body, at)
            out.append(json.dumps(unescape(body[at + 1 : end - 1])))
            at = end
        elif word := JSON_WORD.match(body, at):
            out.append(word.group(0))
            at = word.end()
        else:
            at = expression_end(body, at)
            out.append('"x"')
    text = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    return text


def expression_end(body, at):
    """Past a Rust expression: up to a `,` `:` `}` or `]` outside its own brackets (a path's
    `::` is part of it)."""
    depth = 0
    while at < len(body):
        char = body[at]
        if char == '"':
            at = string_end(body, at)
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return at
            depth -= 1
        elif depth == 0 and char == ",":
            return at
        elif depth == 0 and char == ":":
            if body.startswith("::", at):
                at += 2
                continue
            return at
        at += 1
    return at


def messages_in(value):
    """The JSON-RPC-looking objects in a parsed literal: itself, or a batch's entries."""
    entries = value if isinstance(value, list) else [value]
    return [entry for entry in entries if isinstance(entry, dict) and ("method" in entry or "jsonrpc" in entry)]


def protocol_of(path):
    for protocol in ("mcp", "a2a", "acp"):
        if f"protocols/{protocol}/" in path or f"/{protocol}_" in path or f"{protocol}_demo" in path:
            return protocol
    return None


def route_lines():
    """Every route of the A2A 1.0 table with its variables filled, plain and under a tenant,
    and a few with a query."""
    generated = (ROOT / "protocols/a2a/src/generated/v1_0_1.rs").read_text()
    routes = re.findall(r'verb: "(\w+)",\s*path: "([^"]+)"', generated)
    lines = set()
    for verb, path in routes:
        concrete = path.replace("{tenant}", "acme").replace("{id=*}", "t-1").replace("{task_id=*}", "t-1")
        lines.add(f"{verb} {concrete}")
        lines.add(f"{verb.lower()} {concrete}?historyLength=2&pageSize=10&includeArtifacts=true")
    lines.add("GET /tasks/a%2Fb:subscribe?x=%e2%9c%93+y&=&&k")
    return sorted(lines)


def collect():
    seeds = {name: set() for name in (
        "jsonrpc_decode", "jsonrpc_common_shape", "sse_decoder", "mcp_stateless_head",
        "a2a_rest_route", "a2a_compat", "mcp_messages", "a2a_messages", "acp_messages",
    )}
    for source in SOURCES:
        for path in sorted((ROOT / source).rglob("*.rs")):
            name = str(path.relative_to(ROOT))
            if any(skip in "/" + name for skip in SKIP):
                continue
            protocol = protocol_of(name)
            source_text = path.read_text()
            for text in list(literals(source_text)) + list(json_macros(source_text)):
                stripped = text.strip()
                if "data:" in text and "\n" in text:
                    for prefix in SSE_PREFIXES:
                        seeds["sse_decoder"].add(prefix + text.encode())
                if not stripped.startswith(("{", "[")):
                    continue
                try:
                    value = json.loads(stripped)
                except ValueError:
                    continue
                found = messages_in(value)
                if not found:
                    continue
                body = text.encode()
                seeds["jsonrpc_decode"].add(body)
                seeds["jsonrpc_common_shape"].add(body)
                for message in found:
                    one = json.dumps(message, ensure_ascii=False).encode()
                    if protocol:
                        seeds[f"{protocol}_messages"].add(one)
                    method = message.get("method")
                    if protocol == "a2a" and isinstance(method, str) and "/" in method:
                        seeds["a2a_compat"].add(one)
                    if protocol == "mcp" and isinstance(message.get("params"), (dict, list)):
                        seeds["mcp_stateless_head"].add(one)
                        seeds["mcp_stateless_head"].add(stateless_variant(message))
    for line in route_lines():
        seeds["a2a_rest_route"].add(line.encode())
    for protocol in ("mcp", "a2a", "acp"):
        for method in sorted(generated_words(protocol)[0]):
            for message in (
                {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}},
                {"jsonrpc": "2.0", "id": 1, "method": method, "result": {}},
            ):
                seeds[f"{protocol}_messages"].add(json.dumps(message).encode())
    return seeds


def generated_words(protocol):
    """The method names and the renamed wire names (fields, enum values) of a protocol's
    generated modules."""
    methods, names = set(), set()
    for path in sorted((ROOT / f"protocols/{protocol}/src/generated").glob("v*.rs")):
        text = path.read_text()
        module = text[text.find("\npub mod methods {") :]
        methods.update(re.findall(r'pub const [A-Z0-9_]+: &str = "([^"]+)";', module))
        names.update(re.findall(r'rename = "([^"]+)"', text))
    return methods, names


def dictionary(words):
    """libFuzzer's dictionary format: one quoted token a line, `"` and `\\` escaped."""
    def quoted(word):
        escaped = "".join(
            "\\" + char if char in '"\\' else char if 32 <= ord(char) < 127 else "".join(
                f"\\x{byte:02X}" for byte in char.encode()
            )
            for char in word
        )
        return f'"{escaped}"'

    return "".join(quoted(word) + "\n" for word in sorted(words))


JSONRPC_WORDS = ['"jsonrpc"', '"2.0"', '"id"', '"method"', '"params"', '"result"', '"error"',
                 '"code"', '"message"', '"data"', "null", "true", "false", "-32600", "\\u0000"]
SSE_WORDS = ["data:", "data: ", "id:", "id: ", "event:", "event: ", "retry:", ":", "\r\n",
             "\r", "\n\n", "\ufeff"]


def stateless_variant(message):
    """The message as a 2026-07-28 request: the protocol version in its `_meta` and the headers
    that must repeat its method and target."""
    message = json.loads(json.dumps(message))
    params = message.get("params")
    if not isinstance(params, dict):
        params = {}
    meta = params.setdefault("_meta", {}) if isinstance(params.get("_meta", {}), dict) else {}
    meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
    meta["io.modelcontextprotocol/clientCapabilities"] = {}
    message["params"] = params
    target = params.get("name") or params.get("uri")
    name = f"mcp-name: {target}" if isinstance(target, str) else ""
    head = STATELESS_HEADERS.format(method=message.get("method", ""), name=name)
    return (head + "\n" + json.dumps(message, ensure_ascii=False)).encode()


def write_dictionaries():
    directory = ROOT / "fuzz" / "dicts"
    directory.mkdir(exist_ok=True)
    jsonrpc = dictionary(JSONRPC_WORDS)
    for target in ("jsonrpc_decode", "jsonrpc_common_shape"):
        (directory / f"{target}.dict").write_text(jsonrpc)
    (directory / "sse_decoder.dict").write_text(dictionary(SSE_WORDS))
    for protocol in ("mcp", "a2a", "acp"):
        methods, names = generated_words(protocol)
        words = {json.dumps(word) for word in methods | names} | set(JSONRPC_WORDS)
        (directory / f"{protocol}_messages.dict").write_text(dictionary(words))
        if protocol == "mcp":
            (directory / "mcp_stateless_head.dict").write_text(dictionary(words | {
                '"_meta"', '"io.modelcontextprotocol/protocolVersion"', '"2026-07-28"',
                '"io.modelcontextprotocol/clientCapabilities"', '"io.modelcontextprotocol/logLevel"',
                '"io.modelcontextprotocol/clientInfo"', '"progressToken"', '"inputResponses"',
                "mcp-method: ", "mcp-name: ", "mcp-protocol-version: ", "\n\n",
            }))
        if protocol == "a2a":
            (directory / "a2a_compat.dict").write_text(dictionary(words))


def main():
    write_dictionaries()
    for target, inputs in collect().items():
        directory = SEEDS / target
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("t-*"):
            stale.unlink()
        for data in inputs:
            (directory / f"t-{hashlib.sha1(data).hexdigest()[:16]}").write_bytes(data)
        print(f"{target}: {len(inputs)} seeds")


if __name__ == "__main__":
    main()
