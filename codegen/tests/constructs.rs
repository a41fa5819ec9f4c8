//! Every JSON Schema construct is generated faithfully or refused with one line naming the file,
//! the JSON pointer as the file spells it and the construct, with no typify panic text: the five
//! constructs typify 0.8 drops or panics on, each either way, through the whole pipeline (parse,
//! construct check, normalization, typify, emit).

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use codegen::emit::emit_revision;
use codegen::frontend::parse_and_normalize;
use codegen::model::{Origins, Peers, RevisionModel, SourceFile};
use serde_json::{Value, json};

const FILE: &str = "mcp/test/schema.json";

/// Generates the types of `definitions` (under `$defs`) the way a revision is generated; the
/// error is what the user would read.
fn generate(definitions: Value) -> Result<String, String> {
    let schema = json!({ "$defs": definitions });
    let bytes = schema.to_string();
    let (doc, _, normalized) =
        parse_and_normalize(FILE, bytes.as_bytes()).map_err(|e| e.to_string())?;
    let model = RevisionModel {
        protocol: "mcp".into(),
        revision: "test".into(),
        module: "vtest".into(),
        sources: vec![SourceFile {
            path: FILE.into(),
            sha256: String::new(),
        }],
        origins: Origins {
            file: FILE.into(),
            places: normalized
                .keys()
                .map(|name| (name.clone(), format!("#{}", doc.pointer(name))))
                .collect(),
            ..Origins::default()
        },
        definitions: normalized,
        custom_types: BTreeMap::new(),
        methods: Vec::new(),
        peers: Peers::new("Client", "Server"),
        message_unions: Vec::new(),
        dispatched_enums: Vec::new(),
        field_aliases: BTreeMap::new(),
        feature: None,
    };
    let emitted = emit_revision(&model).map_err(|e| e.to_string())?;
    Ok(emitted
        .source
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" "))
}

fn assert_one_line_refusal(error: &str, pointer: &str, construct: &str) {
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.starts_with(&format!("{FILE}#{pointer}: {construct}")),
        "{error}"
    );
    assert!(!error.contains("panick"), "{error}");
}

#[test]
fn if_then_else_is_refused_by_name_at_its_pointer_as_the_file_spells_it() {
    let error = generate(json!({"Shape": {"type": "object",
        "properties": {"kind": {"type": "string"}},
        "if": {"properties": {"kind": {"const": "circle"}}},
        "then": {"required": ["radius"]}}}))
    .unwrap_err();
    assert_one_line_refusal(&error, "/$defs/Shape/if", "`if`/`then`/`else`");
}

#[test]
fn dependent_schemas_are_refused_by_name_not_dropped() {
    let error = generate(json!({"Card": {"type": "object",
        "properties": {"number": {"type": "string"}},
        "dependentSchemas": {"number": {"required": ["expiry"]}}}}))
    .unwrap_err();
    assert_one_line_refusal(&error, "/$defs/Card/dependentSchemas", "`dependentSchemas`");
}

#[test]
fn pattern_properties_alone_generate_a_map_with_checked_keys() {
    let code = generate(json!({"Headers": {"type": "object",
        "patternProperties": {"^x-": {"type": "integer"}}}}))
    .unwrap();
    assert!(
        code.contains("pub struct Headers(pub ::std::collections::HashMap<HeadersKey, i64>)"),
        "{code}"
    );
    assert!(code.contains("::regress::Regex::new(\"^x-\")"), "{code}");
}

#[test]
fn pattern_properties_beside_properties_are_refused_by_name() {
    let error = generate(json!({"Tool": {"type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}}}}))
    .unwrap_err();
    assert_one_line_refusal(
        &error,
        "/$defs/Tool/patternProperties",
        "`patternProperties`",
    );
}

#[test]
fn not_holding_values_generates_a_deny_list_and_elsewhere_is_refused_by_name() {
    let code = generate(json!({"Name": {"type": "string", "not": {"enum": ["root"]}}})).unwrap();
    assert!(
        code.contains("if [\"root\".to_string()].contains(&value)"),
        "{code}"
    );
    let error = generate(json!({"Open": {"type": "object",
        "properties": {"a": {"type": "string"}}, "not": {"required": ["b"]}}}))
    .unwrap_err();
    assert_one_line_refusal(&error, "/$defs/Open/not", "`not`");
}

#[test]
fn not_in_a_union_member_generates_that_member_tried_after_the_others() {
    let code = generate(json!({"Block": {"anyOf": [
        {"type": "object", "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
            "required": ["type", "text"]},
        {"type": "object", "properties": {"type": {"type": "string"}}, "required": ["type"],
            "not": {"properties": {"type": {"const": "text"}}, "required": ["type"]}}]}}))
    .unwrap();
    let first = code.find("Variant0").unwrap();
    let second = code.find("Variant1").unwrap();
    assert!(first < second, "{code}");
}

#[test]
fn unevaluated_properties_false_closes_the_object_and_true_keeps_the_rest() {
    let closed = generate(json!({"Closed": {"type": "object",
        "properties": {"a": {"type": "string"}}, "unevaluatedProperties": false}}))
    .unwrap();
    assert!(
        closed.contains("#[serde(deny_unknown_fields)] pub struct Closed"),
        "{closed}"
    );
    let open = generate(json!({"Open": {"type": "object",
        "properties": {"a": {"type": "string"}}, "unevaluatedProperties": true}}))
    .unwrap();
    assert!(
        open.contains("#[serde(flatten)] pub extra: ::serde_json::Map"),
        "{open}"
    );
}

#[test]
fn unevaluated_properties_holding_a_subschema_are_refused_by_name() {
    let error = generate(json!({"Typed": {"type": "object",
        "properties": {"a": {"type": "string"}}, "unevaluatedProperties": {"type": "integer"}}}))
    .unwrap_err();
    assert_one_line_refusal(
        &error,
        "/$defs/Typed/unevaluatedProperties",
        "`unevaluatedProperties`",
    );
}

#[test]
fn a_tuple_is_refused_by_name_instead_of_typify_dumping_the_schema() {
    let error = generate(json!({"Pair": {"type": "array",
        "items": [{"type": "string"}, {"type": "integer"}]}}))
    .unwrap_err();
    assert_one_line_refusal(&error, "/$defs/Pair/items", "`items` as a list");
}

#[test]
fn a_schema_that_is_not_json_is_an_error_naming_the_file() {
    let error = parse_and_normalize("mcp/broken/schema.json", b"{ not json").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("mcp/broken/schema.json: not valid JSON"),
        "{error}"
    );
}

#[test]
fn a_ref_to_a_missing_definition_names_file_and_pointer() {
    let error = generate(json!({
        "Ok": {"type": "string"},
        "Broken": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Nowhere"}}}
    }))
    .unwrap_err();
    assert!(
        error.starts_with("mcp/test/schema.json#/$defs/Broken/properties/x"),
        "{error}"
    );
    assert!(error.contains("Nowhere"), "{error}");
}

#[test]
fn an_external_ref_is_an_unmappable_construct_named_by_file_and_pointer() {
    let schema = json!({"definitions": {
        "Elsewhere": {"$ref": "other.json#/definitions/Thing"}
    }});
    let error = parse_and_normalize("a2a/x.json", schema.to_string().as_bytes()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("a2a/x.json#/definitions/Elsewhere"),
        "{error}"
    );
}
