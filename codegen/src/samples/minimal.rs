//! The smallest JSON instance a definition accepts (every required property, and every property
//! with a default at that default, first enum value, first union member), so every method can be
//! exercised with params its schema allows. A proto field without presence has a default, which
//! its writer writes unless it is an empty list or map: the instance carries it too, so it reads
//! and writes the same.

use serde_json::{Map, Value};

use crate::normalize::Definitions;
use crate::schema_doc::ref_target;

const MAX_DEPTH: usize = 24;

/// The smallest instance `schema` accepts, resolving `$ref`s against `definitions`.
pub fn minimal_instance(definitions: &Definitions, schema: &Value) -> Value {
    minimal_at(definitions, schema, 0)
}

fn minimal_at(definitions: &Definitions, schema: &Value, depth: usize) -> Value {
    let Some(object) = schema.as_object() else {
        return Value::Null;
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(ref_target)
    {
        return definitions
            .get(target)
            .map(|s| minimal_at(definitions, s, depth + 1))
            .unwrap_or(Value::Null);
    }
    if let Some(first) = object
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
    {
        return first.clone();
    }
    if let Some(value) = object.get("const") {
        return value.clone();
    }
    let own = object.get("properties");
    let mut parts = Vec::new();
    for union in ["anyOf", "oneOf"] {
        if let Some(first) = object
            .get(union)
            .and_then(Value::as_array)
            .and_then(|m| m.first())
        {
            parts.push(minimal_at(definitions, &inheriting(first, own), depth + 1));
        }
    }
    if let Some(Value::Array(members)) = object.get("allOf") {
        let members: Vec<Value> = members.iter().map(|m| inheriting(m, own)).collect();
        parts.push(merged_members(definitions, &members, depth));
    }
    if !parts.is_empty() {
        return with_own_properties(minimal_object(definitions, object, depth), parts);
    }
    match first_type(object).as_deref() {
        Some("string") => Value::String("x".into()),
        Some("integer") | Some("number") => {
            object.get("minimum").cloned().unwrap_or(Value::from(0))
        }
        Some("boolean") => Value::Bool(false),
        Some("null") => Value::Null,
        Some("array") => minimal_array(definitions, object, depth),
        _ => minimal_object(definitions, object, depth),
    }
}

/// A member that only names what must be present (`{"required": ["text"]}`, a proto oneof
/// branch) means the properties of the schema holding it.
fn inheriting(member: &Value, properties: Option<&Value>) -> Value {
    let (Value::Object(object), Some(properties)) = (member, properties) else {
        return member.clone();
    };
    if object.contains_key("properties") || object.contains_key("$ref") {
        return member.clone();
    }
    let mut object = object.clone();
    object.insert("properties".into(), properties.clone());
    for union in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(members)) = object.get_mut(union) {
            for nested in members.iter_mut() {
                *nested = inheriting(nested, Some(properties));
            }
        }
    }
    Value::Object(object)
}

fn first_type(object: &Map<String, Value>) -> Option<String> {
    match object.get("type")? {
        Value::String(kind) => Some(kind.clone()),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .map(str::to_string),
        _ => None,
    }
}

fn minimal_array(definitions: &Definitions, object: &Map<String, Value>, depth: usize) -> Value {
    let needed = object.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let item = object.get("items").cloned().unwrap_or(Value::Bool(true));
    let items = (0..needed)
        .map(|_| minimal_at(definitions, &item, depth + 1))
        .collect();
    Value::Array(items)
}

fn minimal_object(definitions: &Definitions, object: &Map<String, Value>, depth: usize) -> Value {
    let mut out = Map::new();
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            if required.contains(&name.as_str()) {
                out.insert(name.clone(), minimal_at(definitions, property, depth + 1));
            } else if let Some(default) = property.get("default").filter(|d| !is_empty(d)) {
                // An empty list or map is left out, as its writer leaves it out.
                out.insert(name.clone(), default.clone());
            }
        }
    }
    Value::Object(out)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.is_empty(),
        Value::Object(members) => members.is_empty(),
        _ => false,
    }
}

/// A schema combining its own `properties` with `anyOf`/`allOf` members (ACP's
/// `{properties, required, anyOf: [...]}`) needs both its own required properties and the
/// members'; a member that is not an object (a union of strings) stands alone.
fn with_own_properties(own: Value, parts: Vec<Value>) -> Value {
    let Value::Object(mut out) = own else {
        return own;
    };
    for part in parts {
        match part {
            Value::Object(part) => out.extend(part),
            other => return other,
        }
    }
    Value::Object(out)
}

fn merged_members(definitions: &Definitions, members: &[Value], depth: usize) -> Value {
    let mut out = Map::new();
    for member in members {
        match minimal_at(definitions, member, depth + 1) {
            Value::Object(part) => out.extend(part),
            // `allOf: [{"$ref": <a string type>}]` wraps a scalar: the scalar is the instance.
            scalar => return scalar,
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minimal_instance_keeps_its_own_required_properties_beside_a_union_member() {
        let definitions: Definitions = [(
            "Mode".to_string(),
            json!({"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}}}),
        )]
        .into();
        let schema = json!({"type": "object", "required": ["sessionId"],
            "properties": {"sessionId": {"type": "string"}},
            "anyOf": [{"type": "object", "required": ["mode"],
                "properties": {"mode": {"const": "url"}},
                "allOf": [{"$ref": "#/definitions/Mode"}]}]});
        let value = minimal_instance(&definitions, &schema);
        assert_eq!(value, json!({"sessionId": "x", "mode": "url", "url": "x"}));
    }

    #[test]
    fn minimal_instance_fills_required_properties_through_refs() {
        let definitions: Definitions = [
            ("Kind".to_string(), json!({"enum": ["a", "b"]})),
            (
                "Params".to_string(),
                json!({"type": "object", "required": ["kind", "n"],
                    "properties": {"kind": {"$ref": "#/definitions/Kind"}, "n": {"type": "integer"},
                        "optional": {"type": "string"}}}),
            ),
        ]
        .into();
        let value = minimal_instance(&definitions, &json!({"$ref": "#/definitions/Params"}));
        assert_eq!(value, json!({"kind": "a", "n": 0}));
    }
}
