//! Every upstream example message of MCP 2026-07-28 deserializes into the type its folder names
//! and serializes back to the same JSON. The folder is read, not listed.

#[path = "support/v2026_07_28_definitions.rs"]
mod definitions;

use std::path::Path;

use serde_json::Value;

const EXAMPLES: &str = "mcp/2026-07-28/examples";
const MANIFEST: &str = "mcp/2026-07-28/examples.sha256";
const SCHEMA: &str = "mcp/2026-07-28/schema.json";

fn example_files(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut files = Vec::new();
    for folder in std::fs::read_dir(dir).expect(codegen::samples::SYNC_HINT) {
        let folder = folder.unwrap().path();
        let type_name = folder.file_name().unwrap().to_string_lossy().into_owned();
        for file in std::fs::read_dir(&folder).unwrap() {
            files.push((type_name.clone(), file.unwrap().path()));
        }
    }
    files.sort();
    files
}

/// The pinned schema with every object closed (`additionalProperties: false` where it says
/// nothing; `allOf` parts left open since their properties are spread over members).
fn closed(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => {
            let mut out = serde_json::Map::new();
            for (key, value) in object {
                let inner =
                    if key == "allOf" || key == "examples" || key == "const" || key == "enum" {
                        value.clone()
                    } else {
                        closed(value)
                    };
                out.insert(key.clone(), inner);
            }
            if out.contains_key("properties") && !out.contains_key("additionalProperties") {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(closed).collect()),
        other => other.clone(),
    }
}

/// Whether `instance` is valid against definition `type_name` of the (closed) pinned schema.
fn valid_per_schema(schema: &Value, type_name: &str, instance: &Value) -> bool {
    let mut root = schema.clone();
    root["$ref"] = Value::String(format!("#/$defs/{type_name}"));
    jsonschema::validator_for(&root)
        .expect("schema compiles")
        .is_valid(instance)
}

/// An example the pinned schema accepts only by letting an object carry members it does not
/// declare is an upstream inconsistency (2026-07-28's `read-resource-result-response.json` omits
/// `ReadResourceResult`'s required `cacheScope`/`ttlMs` and so only matches `InputRequiredResult`
/// plus undeclared members); such examples are reported, not held against the generated types.
/// Every other example must round-trip exactly.
#[test]
fn every_2026_07_28_example_round_trips_through_the_type_its_folder_names() {
    let schema: Value =
        serde_json::from_slice(&codegen::samples::read_cache_file(SCHEMA).expect("schema"))
            .unwrap();
    let schema = closed(&schema);
    let manifest = codegen::samples::read_cache_file(MANIFEST).expect("manifest");
    let listed = String::from_utf8_lossy(&manifest)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let files = example_files(&codegen::samples::layout().cache().join(EXAMPLES));
    assert_eq!(
        files.len(),
        listed,
        "every example the manifest lists is in the cache"
    );
    let mut failures = Vec::new();
    let mut invalid_upstream = Vec::new();
    for (type_name, path) in &files {
        let original: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        if !valid_per_schema(&schema, type_name, &original) {
            invalid_upstream.push(path.display().to_string());
            continue;
        }
        match definitions::round_trip(type_name, original.clone()) {
            None => failures.push(format!("{type_name}: no such generated type")),
            Some(Err(e)) => failures.push(format!("{}: does not deserialize: {e}", path.display())),
            Some(Ok(again)) if again != original => failures.push(format!(
                "{}: round trip differs:\n  in:  {original}\n  out: {again}",
                path.display()
            )),
            Some(Ok(_)) => {}
        }
    }
    eprintln!("examples valid only with undeclared members: {invalid_upstream:?}");
    assert!(
        invalid_upstream.len() * 10 < files.len(),
        "too many examples excluded: {invalid_upstream:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {} examples failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn a_call_tool_request_whose_method_is_tools_list_does_not_deserialize() {
    let message = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"name": "get_weather", "_meta": {}}
    });
    let decoded = definitions::round_trip("CallToolRequest", message).unwrap();
    assert!(
        decoded.is_err(),
        "a wrong method const must be refused: {decoded:?}"
    );
}
