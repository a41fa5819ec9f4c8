//! The results the server writes once, as the 2025-11-25 handler's type wrote them, plus
//! `resultType` (`wire::shaped_as_newest_session`): for each, the peer revision's definition,
//! read from the schemas, admits every value the 2025-11-25 definition admits and defines
//! every field it defines, so nothing a re-encode through the peer's type would drop or
//! reject is ever sent.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value};

/// The handler's revision, whose results the others are compared with.
const HANDLER_REVISION: &str = "2025-11-25";

/// What the server adds to each of these results itself.
const ADDED_BY_THE_SERVER: &str = "resultType";

/// `_meta` keys under this prefix are reserved to MCP itself, so a handler of an earlier
/// revision never writes one; the definitions a later revision gives them are not compared.
const RESERVED_META_PREFIX: &str = "io.modelcontextprotocol/";

/// Keys that say nothing about which values a schema admits.
const DOCUMENTATION: &[&str] = &["description", "title", "$comment"];

fn definitions(revision: &str) -> Map<String, Value> {
    let bytes =
        codegen::samples::read_cache_file(&format!("mcp/{revision}/schema.json")).expect("schema");
    let schema: Value = serde_json::from_slice(&bytes).unwrap();
    schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap()
}

/// `schema` with its references inlined and its documentation dropped; an object schema whose
/// `additionalProperties` is the empty schema is written without it (the two admit the same).
fn resolved(schema: &Value, definitions: &Map<String, Value>, depth: usize) -> Value {
    assert!(depth < 32, "a reference cycle in a result definition");
    match schema {
        Value::Object(fields) => {
            if let Some(reference) = fields.get("$ref").and_then(Value::as_str) {
                let name = reference.rsplit('/').next().unwrap();
                return resolved(&definitions[name], definitions, depth + 1);
            }
            let mut out: Map<String, Value> = fields
                .iter()
                .filter(|(key, _)| !DOCUMENTATION.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), resolved(value, definitions, depth + 1)))
                .collect();
            if out.get("additionalProperties") == Some(&Value::Object(Map::new())) {
                out.remove("additionalProperties");
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| resolved(item, definitions, depth + 1))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// An object schema without its `properties` and `required` (compared member by member).
fn rest_of(schema: &Value) -> Value {
    let mut rest = schema.clone();
    if let Value::Object(fields) = &mut rest {
        fields.remove("properties");
        fields.remove("required");
    }
    rest
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Where `peer` fails to admit what `handler` admits, or lacks a field it defines (each a
/// path); empty when it takes every handler value as written.
fn shortfalls(peer: &Value, handler: &Value, path: &str, top: bool) -> Vec<String> {
    if peer == handler || peer == &Value::Object(Map::new()) {
        return Vec::new();
    }
    let no_fields = Map::new();
    let fields = |schema: &'_ Value| schema.get("properties").and_then(Value::as_object).cloned();
    let (peer_fields, handler_fields) = match (fields(peer), fields(handler)) {
        (None, None) => (None, None),
        (peer_fields, handler_fields) => (
            Some(peer_fields.unwrap_or_else(|| no_fields.clone())),
            Some(handler_fields.unwrap_or_else(|| no_fields.clone())),
        ),
    };
    let (Some(peer_fields), Some(handler_fields)) = (peer_fields, handler_fields) else {
        return match (peer, handler) {
            (Value::Object(peer), Value::Object(handler))
                if peer.len() == handler.len()
                    && peer.keys().all(|key| handler.contains_key(key)) =>
            {
                peer.iter()
                    .flat_map(|(key, value)| {
                        shortfalls(value, &handler[key], &format!("{path}/{key}"), false)
                    })
                    .collect()
            }
            (Value::Array(peer), Value::Array(handler)) if peer.len() == handler.len() => peer
                .iter()
                .zip(handler)
                .enumerate()
                .flat_map(|(at, (peer, handler))| {
                    shortfalls(peer, handler, &format!("{path}/{at}"), false)
                })
                .collect(),
            _ => vec![format!("{path}: {peer} does not admit {handler}")],
        };
    };
    let mut found = Vec::new();
    if rest_of(peer) != rest_of(handler) {
        found.push(format!("{path}: {peer} does not admit {handler}"));
    }
    for (name, handler_field) in &handler_fields {
        match peer_fields.get(name) {
            Some(peer_field) => {
                found.extend(shortfalls(
                    peer_field,
                    handler_field,
                    &format!("{path}/{name}"),
                    false,
                ));
            }
            None => found.push(format!("{path}/{name}: not defined by the peer")),
        }
    }
    let handler_required = required(handler);
    for name in required(peer) {
        let added = top && name == ADDED_BY_THE_SERVER;
        if !added && !handler_required.contains(&name) {
            found.push(format!("{path}/{name}: required by the peer only"));
        }
    }
    for name in peer_fields.keys() {
        let reserved = name.starts_with(RESERVED_META_PREFIX);
        let added = top && name == ADDED_BY_THE_SERVER;
        if !handler_fields.contains_key(name) && !reserved && !added {
            found.push(format!("{path}/{name}: defined by the peer only"));
        }
    }
    found
}

fn shortfalls_of(peer_revision: &str, definition: &str) -> Vec<String> {
    let peer_definitions = definitions(peer_revision);
    let handler_definitions = definitions(HANDLER_REVISION);
    let peer = resolved(&peer_definitions[definition], &peer_definitions, 0);
    let handler = resolved(&handler_definitions[definition], &handler_definitions, 0);
    shortfalls(&peer, &handler, definition, true)
}

#[test]
fn a_2026_07_28_tool_result_takes_every_2025_11_25_tool_result_as_written() {
    assert_eq!(
        shortfalls_of("2026-07-28", "CallToolResult"),
        Vec::<String>::new()
    );
}

#[test]
fn the_comparison_finds_a_field_the_peer_does_not_define() {
    // 2024-11-05's tool result has no `structuredContent`: it could not take these as written.
    let found = shortfalls_of("2024-11-05", "CallToolResult");
    assert!(
        found
            .iter()
            .any(|shortfall| shortfall.contains("structuredContent")),
        "{found:?}"
    );
}
