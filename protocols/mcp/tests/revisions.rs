//! Every pinned MCP revision, as `schema/sources.toml` lists them: the generated test support
//! (`support/generated/`, written by codegen for each pinned revision) hands its list to the
//! checks `codegen::samples` runs, so pinning and generating a revision puts it under every
//! check below without a line of test code: method table against the schema's `method` consts,
//! dispatch by method name to each handler method, round trips, upstream examples (where a
//! revision pins them), and wire validation against the pinned schema.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
#[path = "support/generated/mod.rs"]
mod generated;

use codegen::samples::checks;
use serde_json::json;

#[test]
fn every_pinned_revision_is_generated_and_under_test() {
    checks::every_pinned_revision_is_generated(
        "mcp",
        generated::REVISIONS,
        cfg!(feature = "unstable"),
    );
}

#[test]
fn every_method_table_lists_exactly_the_method_consts_of_its_schema() {
    checks::method_tables_list_exactly_the_methods_of_their_sources(generated::REVISIONS);
}

#[test]
fn every_method_reaches_its_own_handler_method_by_name_never_by_shape() {
    checks::every_method_reaches_its_own_handler_method(generated::REVISIONS);
}

#[test]
fn every_definition_round_trips_its_smallest_instance() {
    checks::every_definition_round_trips(generated::REVISIONS);
}

#[test]
fn every_upstream_example_round_trips_through_the_type_its_folder_names() {
    checks::every_example_round_trips(generated::REVISIONS);
}

#[test]
fn what_the_generated_types_write_is_valid_against_the_pinned_schema() {
    checks::generated_output_is_valid_on_the_wire(generated::REVISIONS);
}

#[test]
fn a_result_is_decoded_by_the_method_it_answers() {
    use protocols_mcp::generated::v2025_06_18::ServerResult;
    let empty = json!({});
    let ping = ServerResult::decode_result("ping", empty.clone()).unwrap();
    assert_eq!(ping.method(), "ping");
    assert!(
        ServerResult::decode_result("tools/list", empty).is_err(),
        "tools/list needs `tools`"
    );
}

#[test]
fn a_call_tool_request_whose_method_is_tools_list_does_not_deserialize() {
    use protocols_mcp::generated::v2026_07_28::types::CallToolRequest;
    let message = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"name": "get_weather", "_meta": {}}
    });
    let decoded = serde_json::from_value::<CallToolRequest>(message);
    assert!(
        decoded.is_err(),
        "a wrong method const must be refused: {decoded:?}"
    );
}

#[test]
fn a_revision_is_named_and_listed_by_the_generated_revision_enum() {
    use protocols_mcp::generated::Revision;
    let listed: Vec<&str> = Revision::ALL.iter().map(|r| r.as_str()).collect();
    let generated: Vec<&str> = generated::REVISIONS.iter().map(|r| r.revision).collect();
    assert_eq!(listed, generated);
    let revision = Revision::from_text("2025-06-18").unwrap();
    assert_eq!(revision.module(), "v2025_06_18");
    let rows = protocols_mcp::match_revision!(revision, module => module::METHODS.len());
    assert_eq!(rows, protocols_mcp::generated::v2025_06_18::METHODS.len());
    assert_eq!(Revision::from_text("1999-01-01"), None);
}
