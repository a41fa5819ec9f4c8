//! The generator as a whole, on the pinned files in `schema/cache/` (run
//! `cargo run -p codegen -- sync --from ../shared/schema` first) and on small broken inputs.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use codegen::emit::emit_revision;
use codegen::error::CodegenError;
use codegen::frontend::parse_and_normalize;
use codegen::generate::{Selection, generate};
use codegen::model::RevisionModel;
use codegen::samples::{SYNC_HINT, layout};
use codegen::schema_doc::SchemaDoc;
use codegen::sources::Sources;
use serde_json::json;

fn sources() -> Sources {
    assert!(layout().cache().exists(), "{SYNC_HINT}");
    Sources::load(&layout().sources_toml()).unwrap()
}

#[test]
fn every_pinned_revision_generates() {
    let sources = sources();
    let generation = generate(&sources, &layout().cache(), &Selection::default())
        .unwrap_or_else(|e| panic!("{e} ({SYNC_HINT})"));
    assert_eq!(generation.summaries.len(), sources.revisions.len());
    for summary in &generation.summaries {
        assert!(
            summary.definitions > 0 && summary.methods > 0,
            "{summary:?}"
        );
    }
}

/// An empty enum in the types of a revision is a union member typify found unsatisfiable: a
/// definition that silently lost its fields (ACP `CreateElicitationRequest` once did).
#[test]
fn no_generated_definition_type_is_an_empty_enum() {
    let sources = sources();
    let generation = generate(&sources, &layout().cache(), &Selection::default()).unwrap();
    for file in generation
        .files
        .iter()
        .filter(|f| f.path.starts_with("protocols"))
    {
        let Some(start) = file.contents.find("pub mod types {") else {
            continue;
        };
        let types = &file.contents[start..];
        let types = &types[..types.find("\n}\n").unwrap_or(types.len())];
        let empty: Vec<&str> = types
            .lines()
            .filter(|line| line.trim_start().starts_with("pub enum ") && line.ends_with(" {}"))
            .collect();
        assert!(empty.is_empty(), "{}: {empty:?}", file.path.display());
    }
}

#[test]
fn two_generator_runs_are_byte_identical() {
    let sources = sources();
    let selection = Selection {
        protocol: Some("mcp".into()),
        revision: Some("2025-11-25".into()),
    };
    let first = generate(&sources, &layout().cache(), &selection).unwrap();
    let second = generate(&sources, &layout().cache(), &selection).unwrap();
    assert_eq!(first.files, second.files);
}

#[test]
fn every_generated_file_starts_with_an_generated_header_naming_its_source_and_digest() {
    let sources = sources();
    let selection = Selection {
        protocol: Some("acp".into()),
        revision: Some("v1".into()),
    };
    let generation = generate(&sources, &layout().cache(), &selection).unwrap();
    let module = generation
        .files
        .iter()
        .find(|f| f.path.ends_with("v1.rs"))
        .unwrap();
    let pin = sources.pin("acp/v1/schema.json").unwrap();
    assert!(module.contents.starts_with("// @generated"));
    assert!(
        module
            .contents
            .contains(&format!("acp/v1/schema.json sha256 {}", pin.sha256))
    );
}

#[test]
fn a_schema_that_is_not_json_is_an_error_naming_the_file() {
    let error = parse_and_normalize("mcp/broken/schema.json", b"{ not json").unwrap_err();
    assert!(matches!(error, CodegenError::NotJson { .. }), "{error}");
    assert!(
        error.to_string().contains("mcp/broken/schema.json"),
        "{error}"
    );
}

#[test]
fn a_ref_to_a_missing_definition_names_file_and_pointer() {
    let schema = json!({"$defs": {
        "Ok": {"type": "string"},
        "Broken": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Nowhere"}}}
    }});
    let error = parse_and_normalize("x/schema.json", schema.to_string().as_bytes()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("x/schema.json#/$defs/Broken/properties/x"),
        "{text}"
    );
    assert!(text.contains("Nowhere"), "{text}");
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

/// typify 0.8 panics on ACP's schema as published (nested `allOf` inside `anyOf`); run without
/// the normalization pass, the panic becomes an error naming the definition, found by
/// converting each definition with only what it references.
#[test]
fn a_typify_panic_is_an_error_naming_the_definition() {
    let file = "acp/v1/schema.json";
    let bytes = codegen::sync::read_cached(&sources(), &layout().cache(), file).unwrap();
    let doc = SchemaDoc::parse(file, &bytes).unwrap();
    let mut definitions = doc.definitions.clone();
    codegen::normalize::rewrite_defs_refs(&mut definitions);
    let model = RevisionModel {
        protocol: "acp".into(),
        revision: "v1".into(),
        module: "v1".into(),
        sources: vec![codegen::model::SourceFile {
            path: file.into(),
            sha256: String::new(),
        }],
        definitions,
        custom_types: BTreeMap::new(),
        methods: Vec::new(),
        feature: None,
    };
    let error = emit_revision(&model).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("acp/v1/schema.json#/definitions/"),
        "{text}"
    );
    assert!(text.contains("typify panicked"), "{text}");
}

#[test]
fn a_pinned_file_whose_digest_changed_is_refused_by_name() {
    let mut sources = sources();
    let pin = sources
        .files
        .iter_mut()
        .find(|f| f.path == "mcp/2025-06-18/schema.json")
        .unwrap();
    pin.sha256 = "0".repeat(64);
    let error =
        codegen::sync::read_cached(&sources, &layout().cache(), "mcp/2025-06-18/schema.json")
            .unwrap_err();
    assert!(matches!(error, CodegenError::Digest { .. }), "{error}");
    assert!(
        error.to_string().contains("mcp/2025-06-18/schema.json"),
        "{error}"
    );
}

#[test]
fn sync_from_a_mirror_missing_a_file_names_it() {
    let sources = sources();
    let empty = std::env::temp_dir().join(format!("codegen-empty-mirror-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let target = std::env::temp_dir().join(format!("codegen-cache-{}", std::process::id()));
    let error = codegen::sync::sync(
        &sources,
        &codegen::sync::Origin::Mirror(empty.clone()),
        &target,
    )
    .unwrap_err();
    assert!(matches!(error, CodegenError::Missing { .. }), "{error}");
    assert!(
        error.to_string().contains(&sources.files[0].path),
        "{error}"
    );
    std::fs::remove_dir_all(&empty).unwrap();
}
