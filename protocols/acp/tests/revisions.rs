//! Every pinned ACP revision, as `schema/sources.toml` lists them (drafts with `unstable`): the
//! generated test support (`support/generated/`) hands its list to the checks `codegen::samples`
//! runs, so pinning and generating a revision puts it under every check below without a line of
//! test code: method table against `meta.json`, dispatch by method name to each handler method,
//! round trips, upstream examples (where a revision pins them), and wire validation against the
//! pinned schema.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
#[path = "support/generated/mod.rs"]
mod generated;

use codegen::samples::checks;
use protocols_runtime::method::RpcMethod;
use serde_json::json;

#[test]
fn every_pinned_revision_is_generated_and_under_test() {
    checks::every_pinned_revision_is_generated(
        "acp",
        generated::REVISIONS,
        cfg!(feature = "unstable"),
    );
}

#[test]
fn every_method_table_lists_exactly_the_methods_of_meta_json() {
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
fn session_prompt_result_is_decoded_by_its_method_not_by_shape() {
    use protocols_acp::generated::v1::methods::SessionPrompt;
    type PromptResult = <SessionPrompt as RpcMethod>::Result;
    let result: PromptResult = serde_json::from_value(json!({"stopReason": "end_turn"})).unwrap();
    assert_eq!(
        serde_json::to_value(result).unwrap(),
        json!({"stopReason": "end_turn"})
    );
    assert!(serde_json::from_value::<PromptResult>(json!({})).is_err());
}

#[test]
fn a_form_elicitation_decodes_as_the_params_of_its_method() {
    use protocols_acp::generated::v1::methods::ElicitationCreate;
    let params = json!({"sessionId": "s-1", "message": "Your name?", "mode": "form",
        "requestedSchema": {"type": "object", "properties": {}}});
    let decoded: <ElicitationCreate as RpcMethod>::Params =
        serde_json::from_value(params.clone()).unwrap();
    assert_eq!(serde_json::to_value(decoded).unwrap(), params);
}
