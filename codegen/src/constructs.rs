//! Which JSON Schema constructs codegen generates and which it refuses. Every subschema of a file
//! is checked before normalization, as upstream wrote it, so a refusal names the file, the JSON
//! pointer as the file spells it (`$defs` or `definitions`) and the construct, in one line:
//!
//! | construct | generated as |
//! |---|---|
//! | `type`, `properties`, `required`, `additionalProperties`, `items` (one schema), `enum`, `const`, `$ref`, `anyOf`/`oneOf`, `allOf` | typify's types, after `normalize` |
//! | `patternProperties` alone | a map whose keys are checked against the pattern |
//! | `not` holding `enum`/`const` | a value refused by its deny-list |
//! | `not` in a member of `anyOf`/`oneOf` | that member, tried after the members before it |
//! | `unevaluatedProperties: true`/`{}`/`false` | `additionalProperties` (a flattened map, or a closed object) |
//! | `pattern`, `minLength`, `maxLength`, integer bounds and formats | checked by typify's types |
//! | other assertions (`minItems`, `uniqueItems`, `multipleOf`, `minProperties`, `dependentRequired`, …) | the type the shape gives, not enforced; the wire-validation tests check values against the pinned schema |
//! | annotations (`description`, `title`, `default`, `examples`, `x-*`, string `format`s, …) | nothing: never copied |
//!
//! Refused: `if`/`then`/`else`, `dependentSchemas` (and `dependencies` holding a subschema),
//! `patternProperties` beside `properties` or `additionalProperties`, `not` anywhere else,
//! `unevaluatedProperties` holding a subschema (or `false` beside a composition), tuples
//! (`prefixItems`, `items` as a list, `additionalItems`), `contains`, `unevaluatedItems`, and
//! dynamic or recursive references. Each either changes the shape with a value (no Rust type has
//! that shape) or is one typify 0.8 silently drops, which would generate a type that reads and
//! writes other documents than the schema allows.

use serde_json::{Map, Value};

use crate::error::{CodegenError, Result};
use crate::schema_doc::{SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_SINGLES, SchemaDoc};

/// Keywords refused wherever they appear, with what a refusal calls them.
const REFUSED: &[(&str, &str)] = &[
    ("if", "`if`/`then`/`else` (a subschema chosen by a value)"),
    ("then", "`if`/`then`/`else` (a subschema chosen by a value)"),
    ("else", "`if`/`then`/`else` (a subschema chosen by a value)"),
    (
        "dependentSchemas",
        "`dependentSchemas` (a subschema applied when a property is present)",
    ),
    ("prefixItems", "`prefixItems` (a tuple)"),
    ("additionalItems", "`additionalItems` (the rest of a tuple)"),
    (
        "contains",
        "`contains` (an array holding some matching item)",
    ),
    ("unevaluatedItems", "`unevaluatedItems`"),
    ("$dynamicRef", "`$dynamicRef` (a dynamic reference)"),
    ("$dynamicAnchor", "`$dynamicAnchor` (a dynamic reference)"),
    ("$recursiveRef", "`$recursiveRef` (a recursive reference)"),
    (
        "$recursiveAnchor",
        "`$recursiveAnchor` (a recursive reference)",
    ),
];

/// The first construct of `doc` codegen does not generate, as an error naming it.
pub fn check(doc: &SchemaDoc) -> Result<()> {
    for (name, schema) in &doc.definitions {
        if let Some((pointer, construct)) = refused(schema, &doc.pointer(name), false) {
            return Err(CodegenError::schema(
                &doc.file,
                &pointer,
                format!("{construct} is not generated; codegen refuses it"),
            ));
        }
    }
    Ok(())
}

/// The pointer and name of the first refused construct in `schema`, which sits at `pointer` and
/// is a member of a union when `union_member` says so.
fn refused(schema: &Value, pointer: &str, union_member: bool) -> Option<(String, String)> {
    let object = schema.as_object()?;
    if let Some(found) = refused_here(object, pointer, union_member) {
        return Some(found);
    }
    for (key, value) in object {
        let here = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
        let key = key.as_str();
        let found = if SCHEMA_MAPS.contains(&key) {
            value.as_object().and_then(|map| {
                map.iter().find_map(|(name, child)| {
                    let escaped = name.replace('~', "~0").replace('/', "~1");
                    refused(child, &format!("{here}/{escaped}"), false)
                })
            })
        } else if SCHEMA_SINGLES.contains(&key) || key == "items" {
            match value {
                Value::Array(_) if key == "items" => None,
                other => refused(other, &here, false),
            }
        } else if SCHEMA_LISTS.contains(&key) || key == "dependencies" {
            let in_union = key == "anyOf" || key == "oneOf";
            match value {
                Value::Array(list) => list.iter().enumerate().find_map(|(index, child)| {
                    refused(child, &format!("{here}/{index}"), in_union)
                }),
                _ => None,
            }
        } else {
            None
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// A refused keyword of this subschema itself.
fn refused_here(
    object: &Map<String, Value>,
    pointer: &str,
    union_member: bool,
) -> Option<(String, String)> {
    let at = |key: &str| format!("{pointer}/{key}");
    if let Some((key, construct)) = REFUSED.iter().find(|(key, _)| object.contains_key(*key)) {
        return Some((at(key), (*construct).to_string()));
    }
    if matches!(object.get("items"), Some(Value::Array(_))) {
        return Some((at("items"), "`items` as a list (a tuple)".to_string()));
    }
    if let Some(Value::Object(dependencies)) = object.get("dependencies")
        && dependencies.values().any(Value::is_object)
    {
        return Some((
            at("dependencies"),
            "`dependencies` holding a subschema (a subschema applied when a property is present)"
                .to_string(),
        ));
    }
    if object.contains_key("patternProperties")
        && (object.contains_key("properties") || object.contains_key("additionalProperties"))
    {
        return Some((
            at("patternProperties"),
            "`patternProperties` beside `properties` or `additionalProperties`".to_string(),
        ));
    }
    if let Some(negated) = object.get("not")
        && !union_member
        && !is_deny_list(negated)
    {
        return Some((
            at("not"),
            "`not` outside a member of `anyOf`/`oneOf` (other than a deny-list of values)"
                .to_string(),
        ));
    }
    if let Some(unevaluated) = object.get("unevaluatedProperties") {
        let composed = ["allOf", "anyOf", "oneOf", "$ref"]
            .iter()
            .any(|key| object.contains_key(*key));
        let expressible = match unevaluated {
            Value::Bool(true) => true,
            Value::Object(schema) => schema.is_empty(),
            Value::Bool(false) => !composed,
            _ => false,
        };
        if !expressible {
            return Some((
                at("unevaluatedProperties"),
                "`unevaluatedProperties` holding a subschema, or `false` beside a composition"
                    .to_string(),
            ));
        }
    }
    None
}

/// `{"enum": [...]}` or `{"const": v}`, possibly with a `type`: typify refuses those values.
fn is_deny_list(schema: &Value) -> bool {
    schema.as_object().is_some_and(|object| {
        (object.contains_key("enum") || object.contains_key("const"))
            && object
                .keys()
                .all(|key| matches!(key.as_str(), "enum" | "const" | "type"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_defs(defs: Value) -> std::result::Result<(), String> {
        let doc = SchemaDoc::parse(
            "x/schema.json",
            json!({ "$defs": defs }).to_string().as_bytes(),
        )
        .unwrap();
        check(&doc).map_err(|error| error.to_string())
    }

    #[test]
    fn an_if_then_else_deep_in_a_definition_is_refused_at_its_pointer() {
        let error = check_defs(json!({"A": {"type": "object", "properties": {"b": {
            "if": {"properties": {"k": {"const": 1}}}, "then": {"required": ["x"]}}}}}))
        .unwrap_err();
        assert_eq!(
            error,
            "x/schema.json#/$defs/A/properties/b/if: `if`/`then`/`else` (a subschema chosen by a \
             value) is not generated; codegen refuses it"
        );
    }

    #[test]
    fn a_not_in_a_union_member_or_holding_values_is_generated_and_elsewhere_refused() {
        let member = json!({"A": {"anyOf": [{"type": "string"},
            {"type": "object", "not": {"required": ["k"]}}]}});
        assert_eq!(check_defs(member), Ok(()));
        let deny = json!({"A": {"type": "string", "not": {"enum": ["x"]}}});
        assert_eq!(check_defs(deny), Ok(()));
        let plain = json!({"A": {"type": "object", "not": {"required": ["k"]}}});
        assert!(
            check_defs(plain)
                .unwrap_err()
                .starts_with("x/schema.json#/$defs/A/not: `not` outside"),
        );
    }

    #[test]
    fn values_that_are_not_subschemas_are_not_read_as_constructs() {
        let defs = json!({"A": {"type": "object", "default": {"if": 1, "not": 2},
            "examples": [{"contains": 3}], "properties": {"if": {"type": "string"}}}});
        assert_eq!(check_defs(defs), Ok(()));
    }
}
