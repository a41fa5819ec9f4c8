//! The generator as a whole, on the pinned files in `schema/cache/` (run
//! `cargo run -p codegen -- sync` first) and on small broken inputs.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::OnceLock;

use codegen::error::CodegenError;
use codegen::generate::{Generation, Selection, generate};
use codegen::output::plan;
use codegen::samples::{layout, sources};
use codegen::sources::DRAFT_FEATURE;

/// One full run, shared by the tests that read it.
fn everything() -> &'static Generation {
    static RUN: OnceLock<Generation> = OnceLock::new();
    RUN.get_or_init(|| {
        generate(&sources(), &layout(), &Selection::default()).unwrap_or_else(|e| panic!("{e}"))
    })
}

#[test]
fn every_pinned_revision_generates() {
    let sources = sources();
    let generation = everything();
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
    let generation = everything();
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
    let first = generate(&sources, &layout(), &selection).unwrap();
    let second = generate(&sources, &layout(), &selection).unwrap();
    assert_eq!(first.files, second.files);
}

#[test]
fn every_generated_file_starts_with_an_generated_header_naming_its_source_and_digest() {
    let sources = sources();
    let selection = Selection {
        protocol: Some("acp".into()),
        revision: Some("v1".into()),
    };
    let generation = generate(&sources, &layout(), &selection).unwrap();
    let module = generation
        .files
        .iter()
        .find(|f| f.path.ends_with("src/generated/v1.rs"))
        .unwrap();
    let pin = sources.pin("acp/v1/schema.json").unwrap();
    assert!(module.contents.starts_with("// @generated"));
    assert!(
        module
            .contents
            .contains(&format!("acp/v1/schema.json sha256 {}", pin.sha256))
    );
}

/// Each type's doc is a link to its definition's line upstream, at the pinned commit; no
/// upstream prose is copied.
#[test]
fn every_definition_type_links_to_its_line_in_the_pinned_upstream_file() {
    let sources = sources();
    let selection = Selection {
        protocol: Some("mcp".into()),
        revision: Some("2025-06-18".into()),
    };
    let generation = generate(&sources, &layout(), &selection).unwrap();
    let module = generation
        .files
        .iter()
        .find(|f| f.path.ends_with("src/generated/v2025_06_18.rs"))
        .unwrap();
    let pin = sources.pin("mcp/2025-06-18/schema.json").unwrap();
    let commit = pin.url.split('/').nth(5).unwrap();
    let link = format!(
        "/// [`CallToolRequest`](https://github.com/modelcontextprotocol/modelcontextprotocol/blob/{commit}/schema/2025-06-18/schema.json#L"
    );
    let line = module
        .contents
        .lines()
        .find(|l| l.trim_start().starts_with(&link));
    let line = line.unwrap_or_else(|| panic!("no link like {link}"));
    let number: usize = line
        .rsplit("#L")
        .next()
        .and_then(|rest| rest.split(')').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let schema = std::fs::read_to_string(layout().cache().join(&pin.path)).unwrap();
    let at = schema.lines().nth(number - 1).unwrap();
    assert_eq!(at.trim(), "\"CallToolRequest\": {", "line {number}");
}

/// The prebuilt generated tree is what the pins produce: nothing stale, missing or orphaned.
#[test]
fn the_committed_generated_tree_matches_the_pins() {
    let planned = plan(&layout().root, everything());
    let stale: Vec<String> = planned.iter().map(ToString::to_string).collect();
    assert!(stale.is_empty(), "run `cargo run -p codegen`: {stale:?}");
}

/// Every protocol crate declares the one feature a draft revision is compiled behind, so any
/// revision can be pinned as draft and build (with the feature, and without a warning).
#[test]
fn every_protocol_crate_declares_the_draft_feature() {
    let sources = sources();
    for protocol in sources.protocols() {
        let manifest = layout().protocol_crate(protocol).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        let parsed: toml::Value = toml::from_str(&text).unwrap();
        assert!(
            parsed
                .get("features")
                .and_then(|features| features.get(DRAFT_FEATURE))
                .is_some(),
            "{} has no `{DRAFT_FEATURE}` feature",
            manifest.display()
        );
    }
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
fn sync_from_a_mirror_missing_a_file_names_it_and_the_mirror_not_the_cache() {
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
    let text = error.to_string();
    assert!(matches!(error, CodegenError::NotInMirror { .. }), "{text}");
    assert!(text.starts_with(&sources.files[0].path), "{text}");
    assert!(text.contains(&empty.display().to_string()), "{text}");
    assert!(
        !text.contains("run `cargo run -p codegen -- sync`"),
        "{text}"
    );
    std::fs::remove_dir_all(&empty).unwrap();
}
