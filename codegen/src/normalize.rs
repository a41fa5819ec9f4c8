//! The normalization pass: rewrites each schema construct typify 0.8 cannot take (or takes
//! wrongly) into equivalent schema it can. One function per rewrite; each returns the
//! definitions it changed so the run can report which definitions needed which treatment.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::schema_doc::{ref_target, walk_post_order};

/// Definitions by name.
pub type Definitions = BTreeMap<String, Value>;

/// Which definitions each rewrite touched, by rewrite name.
pub type Treatments = BTreeMap<&'static str, BTreeSet<String>>;

/// Why a rewrite could not proceed; the caller names file and pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewriteError {
    pub definition: String,
    pub message: String,
}

/// Runs every rewrite in order and records what each touched.
pub fn normalize(definitions: &mut Definitions) -> Result<Treatments, RewriteError> {
    let mut treatments = Treatments::new();
    let mut record = |name: &'static str, touched: BTreeSet<String>| {
        if !touched.is_empty() {
            treatments.insert(name, touched);
        }
    };
    record("refs-to-definitions", rewrite_defs_refs(definitions));
    record("strip-annotations", strip_annotations(definitions));
    record("strip-string-formats", strip_string_formats(definitions));
    record("const-to-enum", const_to_enum(definitions));
    record("ref-with-siblings", split_ref_with_siblings(definitions));
    record(
        "collapse-single-ref-allof",
        collapse_single_ref_all_of(definitions),
    );
    record("merge-allof", merge_all_of(definitions)?);
    record(
        "schema-documents-stay-open",
        schema_documents_stay_open(definitions),
    );
    record("hoist-params-result", hoist_message_bodies(definitions));
    record("numbers-keep-their-text", plain_numbers(definitions));
    record(
        "optional-collections-keep-presence",
        optional_collections_nullable(definitions),
    );
    record(
        "order-union-by-specificity",
        order_unions_by_specificity(definitions),
    );
    record("anyof-as-oneof", any_of_as_one_of(definitions));
    record(
        "unevaluated-properties-kept",
        unevaluated_properties_kept(definitions),
    );
    record(
        "distribute-object-over-nested-union",
        distribute_object_over_nested_union(definitions),
    );
    record("request-keeps-its-id", request_id_property(definitions));
    Ok(treatments)
}

/// Applies `rewrite` to every subschema of every definition; returns the definitions where it
/// reported a change.
fn rewrite_each(
    definitions: &mut Definitions,
    rewrite: &mut dyn FnMut(&mut Map<String, Value>) -> bool,
) -> BTreeSet<String> {
    let mut touched = BTreeSet::new();
    for (name, schema) in definitions.iter_mut() {
        let mut changed = false;
        walk_post_order(schema, &mut |object| changed |= rewrite(object));
        if changed {
            touched.insert(name.clone());
        }
    }
    touched
}

/// `$ref: "#/$defs/X"` (ACP, MCP ≥ 2025-11-25) → `#/definitions/X`, the only form typify resolves.
pub fn rewrite_defs_refs(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let Some(Value::String(reference)) = object.get_mut("$ref") else {
            return false;
        };
        let Some(name) = reference.strip_prefix("#/$defs/") else {
            return false;
        };
        *reference = format!("#/definitions/{name}");
        true
    })
}

/// Keywords that carry upstream prose or annotations only: they never reach generated code
/// (docs name definition and revision instead) and they are what typify trips on inside `allOf`.
/// `default` is here too: as a serde default it would make a round trip add absent fields.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "examples",
    "$comment",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "markdownDescription",
    "discriminator",
    "$schema",
    "$id",
];

/// Removes annotation keywords and `x-` extensions from every subschema.
pub fn strip_annotations(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let before = object.len();
        object.retain(|key, _| !ANNOTATIONS.contains(&key.as_str()) && !key.starts_with("x-"));
        object.len() != before
    })
}

/// Drops `format` on strings (`uri`, `date-time`, `byte`, …): typify would map some to chrono or
/// uuid types, which do not round-trip the exact text; numeric formats stay (they size integers).
pub fn strip_string_formats(definitions: &mut Definitions) -> BTreeSet<String> {
    const NUMERIC: &[&str] = &[
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float",
        "double", "uint", "int",
    ];
    rewrite_each(definitions, &mut |object| {
        let Some(Value::String(format)) = object.get("format") else {
            return false;
        };
        if NUMERIC.contains(&format.as_str()) {
            return false;
        }
        object.remove("format");
        true
    })
}

/// `const: v` → `enum: [v]`: typify ignores `const`, so a `method` would become any string;
/// a one-value enum is enforced on deserialization.
pub fn const_to_enum(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let Some(value) = object.remove("const") else {
            return false;
        };
        if !object.contains_key("type")
            && let Some(kind) = json_type_of(&value)
        {
            object.insert("type".into(), Value::String(kind.into()));
        }
        object.insert("enum".into(), Value::Array(vec![value]));
        true
    })
}

fn json_type_of(value: &Value) -> Option<&'static str> {
    match value {
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_f64() => Some("number"),
        Value::Number(_) => Some("integer"),
        _ => None,
    }
}

/// `{"$ref": X, <constraints>}` → `{"allOf": [{"$ref": X}, {<constraints>}]}` so the merge
/// below sees one construct (typify ignores a `$ref`'s siblings).
pub fn split_ref_with_siblings(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        if object.len() < 2 || !object.contains_key("$ref") {
            return false;
        }
        let Some(reference) = object.remove("$ref") else {
            return false;
        };
        let siblings = std::mem::take(object);
        object.insert(
            "allOf".into(),
            json!([{ "$ref": reference }, Value::Object(siblings)]),
        );
        true
    })
}

/// `{"allOf": [{"$ref": X}]}` with nothing beside it → `{"$ref": X}` (ACP wraps every reference
/// this way to attach a description; typify does not implement the nested form).
pub fn collapse_single_ref_all_of(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        if object.len() != 1 {
            return false;
        }
        let Some(Value::Array(members)) = object.get("allOf") else {
            return false;
        };
        let [Value::Object(member)] = members.as_slice() else {
            return false;
        };
        if member.len() != 1 || !member.contains_key("$ref") {
            return false;
        }
        let member = member.clone();
        *object = member;
        true
    })
}

/// Merges every remaining `allOf` into one object schema: `$ref` members are resolved (and
/// merged recursively), `properties` united with later members winning, `required` united.
/// typify's own merge asserts on MCP 2025-11-25 and is unimplemented for ACP's nesting.
pub fn merge_all_of(definitions: &mut Definitions) -> Result<BTreeSet<String>, RewriteError> {
    let snapshot = definitions.clone();
    let mut touched = BTreeSet::new();
    for (name, schema) in definitions.iter_mut() {
        let mut failure = None;
        let mut changed = false;
        walk_post_order(schema, &mut |object| {
            if failure.is_none() && object.contains_key("allOf") {
                changed = true;
                if let Err(message) = merge_node(object, &snapshot, 0) {
                    failure = Some(message);
                }
            }
        });
        if let Some(message) = failure {
            return Err(RewriteError {
                definition: name.clone(),
                message,
            });
        }
        if changed {
            touched.insert(name.clone());
        }
    }
    Ok(touched)
}

const MAX_MERGE_DEPTH: usize = 32;

fn merge_node(
    object: &mut Map<String, Value>,
    definitions: &Definitions,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_MERGE_DEPTH {
        return Err("allOf references nest too deep (a cycle?)".into());
    }
    let Some(Value::Array(members)) = object.remove("allOf") else {
        return Err("allOf is not an array".into());
    };
    let own = std::mem::take(object);
    let mut merged = Map::new();
    for member in members {
        let resolved = resolve_member(member, definitions, depth)?;
        merge_into(&mut merged, resolved)?;
    }
    merge_into(&mut merged, own)?;
    *object = merged;
    Ok(())
}

fn resolve_member(
    member: Value,
    definitions: &Definitions,
    depth: usize,
) -> Result<Map<String, Value>, String> {
    let Value::Object(mut member) = member else {
        return Err("allOf member is not an object".into());
    };
    if let Some(reference) = member
        .get("$ref")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        let target =
            ref_target(&reference).ok_or_else(|| format!("unsupported $ref {reference}"))?;
        let mut schema = definitions
            .get(target)
            .cloned()
            .ok_or_else(|| format!("$ref to missing definition {target}"))?;
        let mut failure = None;
        walk_post_order(&mut schema, &mut |inner| {
            if failure.is_none() && inner.contains_key("allOf") {
                failure = merge_node(inner, definitions, depth + 1).err();
            }
        });
        if let Some(message) = failure {
            return Err(message);
        }
        member.remove("$ref");
        let Value::Object(resolved) = schema else {
            return Err(format!("{target} is not an object schema"));
        };
        merge_into(&mut member, resolved)?;
    }
    Ok(member)
}

fn merge_into(target: &mut Map<String, Value>, piece: Map<String, Value>) -> Result<(), String> {
    for (key, value) in piece {
        match key.as_str() {
            "properties" => {
                let Value::Object(properties) = value else {
                    return Err("properties is not an object".into());
                };
                let slot = target.entry("properties").or_insert_with(|| json!({}));
                if let Value::Object(existing) = slot {
                    existing.extend(properties);
                }
            }
            "required" => {
                let slot = target.entry("required").or_insert_with(|| json!([]));
                if let (Value::Array(existing), Value::Array(more)) = (slot, value) {
                    for name in more {
                        if !existing.contains(&name) {
                            existing.push(name);
                        }
                    }
                }
            }
            "$ref" => return Err("a $ref inside an allOf member beside other keywords".into()),
            _ => {
                target.insert(key, value);
            }
        }
    }
    Ok(())
}

/// An inline object schema held by a property named `…Schema` (MCP's `inputSchema`,
/// `outputSchema`, `requestedSchema`) is itself a JSON Schema document, so it gets
/// `additionalProperties: {}` when it says nothing about members it does not declare: typify
/// would otherwise emit a closed struct and drop every other keyword (`$defs`, `oneOf`, …) on
/// a round trip, though the schema allows them.
pub fn schema_documents_stay_open(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let Some(Value::Object(properties)) = object.get_mut("properties") else {
            return false;
        };
        let mut changed = false;
        for (name, property) in properties.iter_mut() {
            let Some(property) = property.as_object_mut() else {
                continue;
            };
            let is_object_schema = property.get("type").and_then(Value::as_str) == Some("object");
            if name.ends_with("Schema")
                && is_object_schema
                && !property.contains_key("$ref")
                && !property.contains_key("additionalProperties")
            {
                property.insert("additionalProperties".into(), json!({}));
                changed = true;
            }
        }
        changed
    })
}

/// Moves an inline `params` of a request or notification definition (one whose `method` is a
/// fixed string) to `<Def>Params`, and an inline `result` of a response definition to
/// `<Def>Result`, so the method table and dispatch enums can name them.
pub fn hoist_message_bodies(definitions: &mut Definitions) -> BTreeSet<String> {
    let mut touched = BTreeSet::new();
    let names: Vec<String> = definitions.keys().cloned().collect();
    for name in names {
        let Some((field, new_name)) = hoist_target(definitions, &name) else {
            continue;
        };
        let reference = json!({ "$ref": format!("#/definitions/{new_name}") });
        let body = definitions
            .get_mut(&name)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(field))
            .map(|body| std::mem::replace(body, reference));
        if let Some(body) = body {
            definitions.insert(new_name, body);
            touched.insert(name);
        }
    }
    touched
}

/// The body field to hoist out of definition `name` and the name it gets, if any.
fn hoist_target(definitions: &Definitions, name: &str) -> Option<(&'static str, String)> {
    let definition = definitions.get(name)?.as_object()?;
    let (field, suffix) = if has_fixed_method(definition) {
        ("params", "Params")
    } else if is_response(definition) {
        ("result", "Result")
    } else {
        return None;
    };
    let body = definition.get("properties")?.get(field)?;
    let new_name = format!("{name}{suffix}");
    (!is_plain_ref(body) && !definitions.contains_key(&new_name)).then_some((field, new_name))
}

/// `{"type": "number", <bounds>}` → `{"type": "number"}`, which the back end maps to
/// `serde_json::Number`: an `f64` would re-serialize `50` as `50.0`. Bounds are not enforced by
/// typify for floats anyway.
pub fn plain_numbers(definitions: &mut Definitions) -> BTreeSet<String> {
    const NUMBER_KEYWORDS: &[&str] = &[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "format",
    ];
    rewrite_each(definitions, &mut |object| {
        if object.get("type").and_then(Value::as_str) != Some("number") {
            return false;
        }
        let before = object.len();
        object.retain(|key, _| !NUMBER_KEYWORDS.contains(&key.as_str()));
        object.len() != before
    })
}

/// An optional array or free-form object property gets `null` added to its type: typify would
/// otherwise emit a bare `Vec`/`Map` skipped when empty, so `"roots": {}` (a capability being
/// present) would vanish on re-serialization.
pub fn optional_collections_nullable(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let Some(Value::Object(properties)) = object.get_mut("properties") else {
            return false;
        };
        let mut changed = false;
        for (name, property) in properties.iter_mut() {
            if required.contains(name) {
                continue;
            }
            if let Some(property) = property.as_object_mut()
                && is_collection(property)
            {
                let kind = property.get("type").cloned().unwrap_or(Value::Null);
                property.insert("type".into(), json!([kind, "null"]));
                changed = true;
            }
        }
        changed
    })
}

fn is_collection(schema: &Map<String, Value>) -> bool {
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => true,
        Some("object") => schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty),
        _ => false,
    }
}

/// Orders a union of `$ref`s by how many properties each member requires, most first (stable):
/// typify emits untagged enums tried in order, and a member requiring little (2026-07-28
/// `InputRequiredResult`) would otherwise swallow a richer one (`CallToolResult`).
pub fn order_unions_by_specificity(definitions: &mut Definitions) -> BTreeSet<String> {
    let snapshot = definitions.clone();
    let required_count = |member: &Value| -> usize {
        member
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(ref_target)
            .and_then(|target| snapshot.get(target))
            .and_then(|schema| schema.get("required"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    rewrite_each(definitions, &mut |object| {
        let mut changed = false;
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(members)) = object.get_mut(key) else {
                continue;
            };
            if !members.iter().all(|m| m.get("$ref").is_some()) {
                continue;
            }
            let before = members.clone();
            members.sort_by_key(|member| std::cmp::Reverse(required_count(member)));
            changed |= *members != before;
        }
        changed
    })
}

/// `anyOf` (without a `null` member) → `oneOf`: typify renders an `anyOf` it cannot prove
/// exclusive as a struct of optional flattened members, which loses every member's fields
/// (MCP `PrimitiveSchemaDefinition`); as `oneOf` it is an enum whose first matching member wins,
/// which is what an `anyOf` instance decodes as.
pub fn any_of_as_one_of(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let Some(Value::Array(members)) = object.get("anyOf") else {
            return false;
        };
        let has_null = members
            .iter()
            .any(|m| m.get("type").and_then(Value::as_str) == Some("null"));
        if has_null || object.contains_key("oneOf") {
            return false;
        }
        if let Some(members) = object.remove("anyOf") {
            object.insert("oneOf".into(), members);
        }
        true
    })
}

/// `unevaluatedProperties: true` (or `{}`) → `additionalProperties: {}`, and
/// `unevaluatedProperties: false` → `additionalProperties: false`, on an object schema that says
/// nothing about additional properties: typify ignores the 2019-09 keyword, so the members an
/// object allows (ACP's other-mode elicitation, whose payload is upstream's to extend) were
/// dropped on a round trip, and the members it forbids were accepted. typify keeps
/// `additionalProperties` (a flattened map, merged into each member of a union the object holds;
/// or a closed struct). `constructs` refuses the forms this cannot express (a subschema, or
/// `false` beside a composition whose members evaluate properties), so what reaches here is
/// one of these two.
pub fn unevaluated_properties_kept(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let replacement = match object.get("unevaluatedProperties") {
            Some(Value::Bool(true)) => json!({}),
            Some(Value::Object(schema)) if schema.is_empty() => json!({}),
            Some(Value::Bool(false)) => json!(false),
            _ => return false,
        };
        object.remove("unevaluatedProperties");
        // Beside `additionalProperties` the keyword adds nothing: every member the object does
        // not name is already judged by it.
        object.entry("additionalProperties").or_insert(replacement);
        true
    })
}

/// `{properties: P, required: R, oneOf: [M1, …]}` where some inline member `Mi` holds a union
/// of its own → `{oneOf: [P∧R∧M1, …]}`: typify merges the siblings into each member together with
/// the negation of every other member, and its `not` cannot subtract a member that is itself a
/// union (ACP `CreateElicitationRequest`: form ∧ ¬(other mode ∧ (session ∨ request))), so the
/// form and url members came out as empty enums that lost `requestedSchema`. Merged here, each
/// member is a plain object-with-union typify renders whole, tried in schema order.
pub fn distribute_object_over_nested_union(definitions: &mut Definitions) -> BTreeSet<String> {
    rewrite_each(definitions, &mut |object| {
        let Some(Value::Array(members)) = object.get("oneOf") else {
            return false;
        };
        let all_inline_objects = members
            .iter()
            .all(|m| m.as_object().is_some_and(|m| !m.contains_key("$ref")));
        let some_member_nests_a_union = members
            .iter()
            .any(|m| m.get("oneOf").is_some() || m.get("anyOf").is_some());
        let has_siblings = object.contains_key("properties") || object.contains_key("required");
        if !(all_inline_objects && some_member_nests_a_union && has_siblings) {
            return false;
        }
        let mut siblings = object.clone();
        let Some(Value::Array(members)) = siblings.remove("oneOf") else {
            return false;
        };
        let distributed: Option<Vec<Value>> = members
            .into_iter()
            .map(|member| {
                let mut merged = siblings.clone();
                merge_into(&mut merged, member.as_object()?.clone()).ok()?;
                Some(Value::Object(merged))
            })
            .collect();
        // A member that cannot be merged leaves the union as upstream wrote it.
        let Some(distributed) = distributed else {
            return false;
        };
        *object = Map::from_iter([("oneOf".to_string(), Value::Array(distributed))]);
        true
    })
}

/// A request definition without an `id` property (MCP's `…Request` bodies) gets an optional
/// `id: RequestId`, so a full JSON-RPC request (upstream's own examples carry the id) survives a
/// round trip instead of losing its id.
pub fn request_id_property(definitions: &mut Definitions) -> BTreeSet<String> {
    if !definitions.contains_key("RequestId") {
        return BTreeSet::new();
    }
    let mut touched = BTreeSet::new();
    for (name, schema) in definitions.iter_mut() {
        let Some(object) = schema.as_object_mut() else {
            continue;
        };
        if !name.ends_with("Request") || !has_fixed_method(object) {
            continue;
        }
        if let Some(Value::Object(properties)) = object.get_mut("properties")
            && !properties.contains_key("id")
        {
            properties.insert("id".into(), json!({"$ref": "#/definitions/RequestId"}));
            touched.insert(name.clone());
        }
    }
    touched
}

/// Whether a definition is a message whose `method` is one fixed string.
pub fn has_fixed_method(definition: &Map<String, Value>) -> bool {
    fixed_method(definition).is_some()
}

/// The fixed `method` string of a request or notification definition (after `const-to-enum`).
pub fn fixed_method(definition: &Map<String, Value>) -> Option<&str> {
    let method = definition.get("properties")?.get("method")?;
    if let Some(Value::Array(values)) = method.get("enum")
        && let [Value::String(name)] = values.as_slice()
    {
        return Some(name);
    }
    method.get("const").and_then(Value::as_str)
}

fn is_response(definition: &Map<String, Value>) -> bool {
    definition
        .get("properties")
        .is_some_and(|p| p.get("result").is_some() && p.get("id").is_some())
}

fn is_plain_ref(schema: &Value) -> bool {
    schema
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.contains_key("$ref"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types_emit::render_types_for_test;

    /// Normalizes, runs typify, returns the formatted Rust.
    fn generate(value: Value) -> (Treatments, String) {
        let mut definitions: Definitions = serde_json::from_value(value).unwrap();
        let treatments = normalize(&mut definitions).unwrap();
        (treatments, render_types_for_test(&definitions))
    }

    fn squash(code: &str) -> String {
        code.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn dollar_defs_refs_resolve_as_definitions() {
        let (treatments, code) = generate(json!({
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}, "required": ["b"]},
            "B": {"type": "string"}
        }));
        assert!(treatments["refs-to-definitions"].contains("A"));
        assert!(squash(&code).contains("pub b: B,"), "{code}");
    }

    #[test]
    fn const_method_becomes_an_enforced_single_value_enum() {
        let (_, code) = generate(json!({
            "CallToolRequest": {"type": "object",
                "properties": {"method": {"const": "tools/call", "type": "string"}},
                "required": ["method"]}
        }));
        let code = squash(&code);
        assert!(code.contains("pub enum CallToolRequestMethod"), "{code}");
        assert!(
            code.contains("#[serde(rename = \"tools/call\")] ToolsCall"),
            "{code}"
        );
    }

    #[test]
    fn descriptions_and_titles_never_reach_generated_code() {
        let (treatments, code) = generate(json!({
            "A": {"type": "object", "description": "UPSTREAM PROSE", "title": "TITLE",
                "properties": {"x": {"type": "string", "description": "MORE PROSE"}}}
        }));
        assert!(treatments["strip-annotations"].contains("A"));
        assert!(
            !code.contains("UPSTREAM PROSE") && !code.contains("MORE PROSE"),
            "{code}"
        );
    }

    #[test]
    fn string_formats_stay_plain_strings() {
        let (treatments, code) = generate(json!({
            "A": {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}},
                "required": ["at"]}
        }));
        assert!(treatments["strip-string-formats"].contains("A"));
        assert!(
            squash(&code).contains("pub at: ::std::string::String,"),
            "{code}"
        );
    }

    #[test]
    fn ref_with_sibling_constraints_is_merged_with_its_target() {
        let (treatments, code) = generate(json!({
            "Base": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            "Derived": {"$ref": "#/definitions/Base",
                "properties": {"b": {"type": "integer"}}, "required": ["b"]}
        }));
        assert!(treatments["ref-with-siblings"].contains("Derived"));
        let code = squash(&code);
        assert!(
            code.contains("pub struct Derived { pub a: ::std::string::String, pub b: i64,"),
            "{code}"
        );
    }

    #[test]
    fn single_ref_all_of_collapses_to_the_reference() {
        let (treatments, code) = generate(json!({
            "Outer": {"type": "object", "properties": {
                "inner": {"allOf": [{"$ref": "#/$defs/Inner"}], "description": "d"}},
                "required": ["inner"]},
            "Inner": {"type": "object", "properties": {"v": {"type": "boolean"}}, "required": ["v"]}
        }));
        assert!(treatments["collapse-single-ref-allof"].contains("Outer"));
        assert!(squash(&code).contains("pub inner: Inner,"), "{code}");
    }

    #[test]
    fn all_of_of_two_refs_merges_properties_and_required() {
        let (treatments, code) = generate(json!({
            "Result": {"type": "object", "properties": {"_meta": {"type": "object"}}},
            "Task": {"type": "object", "properties": {"taskId": {"type": "string"}}, "required": ["taskId"]},
            "CancelTaskResult": {"allOf": [{"$ref": "#/definitions/Result"}, {"$ref": "#/definitions/Task"}]}
        }));
        assert!(treatments["merge-allof"].contains("CancelTaskResult"));
        let code = squash(&code);
        assert!(code.contains("pub struct CancelTaskResult {"), "{code}");
        assert!(
            code.contains("pub task_id: ::std::string::String,"),
            "{code}"
        );
        assert!(code.contains("pub meta: ::std::option::Option<"), "{code}");
    }

    #[test]
    fn numbers_become_json_numbers_that_keep_integer_text() {
        let (treatments, code) = generate(json!({
            "P": {"type": "object", "properties": {"progress": {"type": "number", "minimum": 0}},
                "required": ["progress"]}
        }));
        assert!(treatments["numbers-keep-their-text"].contains("P"));
        assert!(
            squash(&code).contains("pub progress: ::serde_json::Number,"),
            "{code}"
        );
    }

    #[test]
    fn optional_empty_object_keeps_its_presence() {
        let (treatments, code) = generate(json!({
            "Caps": {"type": "object", "properties": {"roots": {"type": "object", "properties": {}},
                "tags": {"type": "array", "items": {"type": "string"}}}}
        }));
        assert!(treatments["optional-collections-keep-presence"].contains("Caps"));
        let code = squash(&code);
        assert!(
            code.contains("pub roots: ::std::option::Option< ::serde_json::Map<"),
            "{code}"
        );
        assert!(
            code.contains("pub tags: ::std::option::Option<::std::vec::Vec<"),
            "{code}"
        );
    }

    #[test]
    fn union_members_requiring_more_are_tried_first() {
        let (treatments, code) = generate(json!({
            "Loose": {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]},
            "Rich": {"type": "object", "properties": {"kind": {"type": "string"}, "content": {"type": "string"}},
                "required": ["kind", "content"]},
            "Answer": {"anyOf": [{"$ref": "#/definitions/Loose"}, {"$ref": "#/definitions/Rich"}]}
        }));
        assert!(treatments["order-union-by-specificity"].contains("Answer"));
        let code = squash(&code);
        let rich = code.find("Rich(Rich)").unwrap();
        let loose = code.find("Loose(Loose)").unwrap();
        assert!(rich < loose, "{code}");
    }

    #[test]
    fn any_of_becomes_an_enum_instead_of_a_struct_of_optional_members() {
        let (treatments, code) = generate(json!({
            "S": {"type": "object", "properties": {"type": {"const": "string"}}, "required": ["type"]},
            "N": {"type": "object", "properties": {"type": {"const": "number"}}, "required": ["type"]},
            "Primitive": {"anyOf": [{"$ref": "#/definitions/S"}, {"$ref": "#/definitions/N"}]}
        }));
        assert!(treatments["anyof-as-oneof"].contains("Primitive"));
        let code = squash(&code);
        assert!(
            code.contains("pub enum Primitive { S(S), N(N), }"),
            "{code}"
        );
    }

    #[test]
    fn a_schema_valued_property_keeps_the_keywords_it_does_not_declare() {
        let (treatments, code) = generate(json!({
            "Tool": {"type": "object", "properties": {
                "name": {"type": "string"},
                "inputSchema": {"type": "object", "properties": {
                    "type": {"const": "object"},
                    "required": {"type": "array", "items": {"type": "string"}}},
                    "required": ["type"]},
                "label": {"type": "object", "properties": {"text": {"type": "string"}}}},
                "required": ["name", "inputSchema"]}
        }));
        assert!(treatments["schema-documents-stay-open"].contains("Tool"));
        let code = squash(&code);
        let input = code.find("pub struct ToolInputSchema").unwrap();
        let label = code.find("pub struct ToolLabel").unwrap();
        let flatten = "#[serde(flatten)] pub extra: ::serde_json::Map";
        let after_input = &code[input..];
        let input_end = after_input.find('}').unwrap();
        assert!(after_input[..input_end].contains(flatten), "{code}");
        let after_label = &code[label..];
        let label_end = after_label.find('}').unwrap();
        assert!(!after_label[..label_end].contains(flatten), "{code}");
    }

    #[test]
    fn a_union_member_holding_its_own_union_keeps_its_fields() {
        let scope = json!({"oneOf": [{"$ref": "#/definitions/SessionScope"},
            {"$ref": "#/definitions/RequestScope"}]});
        let mut form = json!({"type": "object", "properties": {
            "mode": {"const": "form"}, "requestedSchema": {"type": "object"}},
            "required": ["mode", "requestedSchema"]});
        form["oneOf"] = scope["oneOf"].clone();
        let mut other = json!({"type": "object", "properties": {"mode": {"type": "string"}},
            "required": ["mode"], "not": {"properties": {"mode": {"const": "form"}}}});
        other["oneOf"] = scope["oneOf"].clone();
        let (treatments, code) = generate(json!({
            "SessionScope": {"type": "object", "properties": {"sessionId": {"type": "string"}},
                "required": ["sessionId"]},
            "RequestScope": {"type": "object", "properties": {"requestId": {"type": "string"}},
                "required": ["requestId"]},
            "Elicit": {"type": "object", "properties": {"message": {"type": "string"}},
                "required": ["message"], "anyOf": [form, other]}
        }));
        assert!(treatments["distribute-object-over-nested-union"].contains("Elicit"));
        let code = squash(&code);
        let empty_enum = code.split("pub enum ").skip(1).find(|rest| {
            rest.split_once(' ')
                .is_some_and(|(_, body)| body.starts_with("{}"))
        });
        assert!(empty_enum.is_none(), "an empty enum remains: {code}");
        let form_variant = code.find("pub enum ElicitVariant0 {").unwrap();
        let form_code = &code[form_variant..];
        let form_code = &form_code[..form_code.find("} }").unwrap()];
        for field in [
            "message:",
            "requested_schema:",
            "session_id:",
            "request_id:",
        ] {
            assert!(form_code.contains(field), "{field} missing: {form_code}");
        }
    }

    #[test]
    fn unevaluated_members_an_object_allows_are_kept_in_a_flattened_map() {
        let scope = json!([{"$ref": "#/definitions/SessionScope"},
            {"$ref": "#/definitions/RequestScope"}]);
        let (treatments, code) = generate(json!({
            "SessionScope": {"type": "object", "properties": {"sessionId": {"type": "string"}},
                "required": ["sessionId"]},
            "RequestScope": {"type": "object", "properties": {"requestId": {"type": "string"}},
                "required": ["requestId"]},
            "Closed": {"type": "object", "properties": {"a": {"type": "string"}}},
            "Elicit": {"type": "object", "properties": {"message": {"type": "string"}},
                "required": ["message"], "anyOf": [
                    {"type": "object", "properties": {"mode": {"const": "form"}},
                        "required": ["mode"], "anyOf": scope.clone()},
                    {"type": "object", "properties": {"mode": {"type": "string"}},
                        "required": ["mode"], "anyOf": scope,
                        "unevaluatedProperties": true,
                        "not": {"properties": {"mode": {"const": "form"}}}}]}
        }));
        assert_eq!(
            treatments["unevaluated-properties-kept"],
            BTreeSet::from(["Elicit".to_string()])
        );
        let code = squash(&code);
        let flatten = "#[serde(flatten)] extra: ::serde_json::Map";
        let other = code.find("pub enum ElicitVariant1 {").unwrap();
        let other_code = &code[other..];
        let other_code = &other_code[..other_code.find("} }").unwrap()];
        assert_eq!(other_code.matches(flatten).count(), 2, "{other_code}");
        let form = code.find("pub enum ElicitVariant0 {").unwrap();
        let form_code = &code[form..];
        let form_code = &form_code[..form_code.find("} }").unwrap()];
        assert!(!form_code.contains(flatten), "{form_code}");
        let closed = code.find("pub struct Closed {").unwrap();
        let closed_code = &code[closed..];
        let closed_code = &closed_code[..closed_code.find('}').unwrap()];
        assert!(!closed_code.contains("flatten"), "{closed_code}");
    }

    #[test]
    fn request_bodies_keep_an_optional_id() {
        let (treatments, code) = generate(json!({
            "RequestId": {"type": ["string", "integer"]},
            "ListRootsRequest": {"type": "object", "properties": {"method": {"const": "roots/list"}},
                "required": ["method"]}
        }));
        assert!(treatments["request-keeps-its-id"].contains("ListRootsRequest"));
        assert!(
            squash(&code).contains("pub id: ::std::option::Option<RequestId>,"),
            "{code}"
        );
    }

    #[test]
    fn inline_params_and_results_are_hoisted_to_named_definitions() {
        let (treatments, code) = generate(json!({
            "PingRequest": {"type": "object", "properties": {
                "method": {"const": "ping"},
                "params": {"type": "object", "properties": {"n": {"type": "integer"}}}},
                "required": ["method"]},
            "PingResultResponse": {"type": "object", "properties": {
                "id": {"type": "integer"},
                "result": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
                "required": ["id", "result"]}
        }));
        assert!(treatments["hoist-params-result"].contains("PingRequest"));
        assert!(treatments["hoist-params-result"].contains("PingResultResponse"));
        let code = squash(&code);
        assert!(code.contains("pub struct PingRequestParams"), "{code}");
        assert!(
            code.contains("pub params: ::std::option::Option<PingRequestParams>"),
            "{code}"
        );
        assert!(
            code.contains("pub result: PingResultResponseResult,"),
            "{code}"
        );
    }
}
