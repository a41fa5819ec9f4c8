//! A loaded JSON Schema file: its definitions under one key (`definitions`), every `$ref` pointing
//! at `#/definitions/Name`, every reference checked to resolve, and a walker over subschemas that
//! the normalization pass and the front ends share.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{CodegenError, Result};

/// One parsed schema file.
#[derive(Debug, Clone)]
pub struct SchemaDoc {
    /// Cache-relative path, for error messages and headers.
    pub file: String,
    /// The key the file keeps its definitions under (`definitions` or `$defs`), for pointers.
    pub defs_key: String,
    pub definitions: BTreeMap<String, Value>,
    /// The document minus its definitions (ACP's top-level `anyOf`, for instance).
    pub root: Value,
}

impl SchemaDoc {
    /// Parses `bytes` as a JSON Schema whose definitions live under `definitions` or `$defs`.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Self> {
        let mut root: Value =
            serde_json::from_slice(bytes).map_err(|source| CodegenError::NotJson {
                file: file.to_string(),
                source,
            })?;
        let object = root
            .as_object_mut()
            .ok_or_else(|| CodegenError::schema(file, "", "the document is not a JSON object"))?;
        let (defs_key, defs) = ["definitions", "$defs"]
            .iter()
            .find_map(|key| object.remove(*key).map(|defs| (key.to_string(), defs)))
            .ok_or_else(|| CodegenError::schema(file, "", "no `definitions` or `$defs`"))?;
        let Value::Object(defs) = defs else {
            return Err(CodegenError::schema(
                file,
                &format!("/{defs_key}"),
                "not an object",
            ));
        };
        let definitions = defs.into_iter().collect();
        Ok(Self {
            file: file.to_string(),
            defs_key,
            definitions,
            root,
        })
    }

    /// The JSON pointer of a definition as the source file spells it.
    pub fn pointer(&self, name: &str) -> String {
        definition_pointer(&self.defs_key, name)
    }
}

/// The 1-based line of each definition's key in a schema file whose definitions live under
/// `defs_key` at the top level; a link to a definition points there. A small scan of the JSON
/// text (serde_json keeps no positions); a definition it cannot place is simply left out.
pub fn definition_lines(bytes: &[u8], defs_key: &str) -> BTreeMap<String, usize> {
    struct Frame {
        is_object: bool,
        expect_key: bool,
        key: Option<String>,
    }
    let mut lines = BTreeMap::new();
    let mut line = 1;
    let mut stack: Vec<Frame> = Vec::new();
    let mut chars = bytes.iter().copied();
    while let Some(byte) = chars.next() {
        match byte {
            b'\n' => line += 1,
            b'{' | b'[' => stack.push(Frame {
                is_object: byte == b'{',
                expect_key: byte == b'{',
                key: None,
            }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    top.expect_key = top.is_object;
                }
            }
            b'"' => {
                let text = read_string(&mut chars);
                let is_definition = stack.len() == 2
                    && stack.first().and_then(|root| root.key.as_deref()) == Some(defs_key);
                if let Some(top) = stack.last_mut().filter(|top| top.expect_key) {
                    top.expect_key = false;
                    if is_definition {
                        lines.entry(text.clone()).or_insert(line);
                    }
                    top.key = Some(text);
                }
            }
            _ => {}
        }
    }
    lines
}

/// The rest of a JSON string after its opening quote, escapes kept as written except `\"`.
fn read_string(chars: &mut impl Iterator<Item = u8>) -> String {
    let mut text = Vec::new();
    while let Some(byte) = chars.next() {
        match byte {
            b'"' => break,
            b'\\' => {
                if let Some(escaped) = chars.next() {
                    if escaped != b'"' && escaped != b'\\' {
                        text.push(b'\\');
                    }
                    text.push(escaped);
                }
            }
            _ => text.push(byte),
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// `/<defs_key>/<name>` with JSON-pointer escaping.
pub fn definition_pointer(defs_key: &str, name: &str) -> String {
    format!("/{defs_key}/{}", name.replace('~', "~0").replace('/', "~1"))
}

/// The definition name a local `$ref` points at, if it is one.
pub fn ref_target(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/definitions/")
        .or_else(|| reference.strip_prefix("#/$defs/"))
}

/// Keywords whose value is a map from names to subschemas.
pub(crate) const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "dependentSchemas",
];
/// Keywords whose value is one subschema.
pub(crate) const SCHEMA_SINGLES: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Keywords whose value is a list of subschemas.
pub(crate) const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Calls `visit` on each immediate subschema of `schema`.
pub fn for_each_child_mut(schema: &mut Value, visit: &mut dyn FnMut(&mut Value)) {
    let Value::Object(object) = schema else {
        return;
    };
    for (key, value) in object.iter_mut() {
        let key = key.as_str();
        if SCHEMA_MAPS.contains(&key) {
            if let Value::Object(map) = value {
                map.values_mut().for_each(&mut *visit);
            }
        } else if SCHEMA_SINGLES.contains(&key) || (key == "items" && value.is_object()) {
            visit(value);
        } else if (SCHEMA_LISTS.contains(&key) || key == "items")
            && let Value::Array(list) = value
        {
            list.iter_mut().for_each(&mut *visit);
        }
    }
}

/// Visits `schema` and every subschema, children first.
pub fn walk_post_order(schema: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>)) {
    for_each_child_mut(schema, &mut |child| walk_post_order(child, visit));
    if let Value::Object(object) = schema {
        visit(object);
    }
}

/// Visits every subschema object, parents first, with its JSON-pointer suffix.
pub fn walk_with_pointer(
    schema: &Value,
    pointer: &str,
    visit: &mut dyn FnMut(&Map<String, Value>, &str),
) {
    let Value::Object(object) = schema else {
        return;
    };
    visit(object, pointer);
    for (key, value) in object {
        let key_str = key.as_str();
        let here = format!("{pointer}/{key_str}");
        if SCHEMA_MAPS.contains(&key_str) {
            if let Value::Object(map) = value {
                for (name, child) in map {
                    walk_with_pointer(child, &format!("{here}/{name}"), visit);
                }
            }
        } else if SCHEMA_SINGLES.contains(&key_str) || (key_str == "items" && value.is_object()) {
            walk_with_pointer(value, &here, visit);
        } else if (SCHEMA_LISTS.contains(&key_str) || key_str == "items")
            && let Value::Array(list) = value
        {
            for (index, child) in list.iter().enumerate() {
                walk_with_pointer(child, &format!("{here}/{index}"), visit);
            }
        }
    }
}

/// Every local `$ref` target named anywhere inside `schema`.
pub fn referenced_names(schema: &Value) -> Vec<String> {
    let mut names = Vec::new();
    walk_with_pointer(schema, "", &mut |object, _| {
        if let Some(target) = object
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(ref_target)
        {
            names.push(target.to_string());
        }
    });
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_definition_is_placed_on_the_line_of_its_key() {
        let text = "{\n  \"$schema\": \"x\",\n  \"$defs\": {\n    \"A\": {\"properties\": {\"B\": {}}},\n\n    \"B\": {\n      \"description\": \"a \\\"quoted\\\" {brace\"\n    },\n    \"C\": []\n  },\n  \"other\": {\"D\": 1}\n}";
        let lines = definition_lines(text.as_bytes(), "$defs");
        assert_eq!(
            lines,
            BTreeMap::from([("A".into(), 4), ("B".into(), 6), ("C".into(), 9)])
        );
    }
}
