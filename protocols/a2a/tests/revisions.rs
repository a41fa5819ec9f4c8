//! Every pinned A2A revision, as `schema/sources.toml` lists them: the generated test support
//! (`support/generated/`) hands its list to the checks `codegen::samples` runs, so pinning and
//! generating a revision puts it under every check below without a line of test code: method
//! table against the request `method` consts (0.3) or the service's `rpc`s (1.0), dispatch by
//! method name to each handler method, round trips, upstream examples (where a revision pins
//! them), and wire validation against the pinned JSON Schema (0.3) or with a ProtoJSON parser of
//! the pinned proto (1.0).

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
#[path = "support/generated/mod.rs"]
mod generated;

use codegen::samples::checks;
use protocols_runtime::method::RpcMethod;
use serde_json::{Value, json};

#[test]
fn every_pinned_revision_is_generated_and_under_test() {
    checks::every_pinned_revision_is_generated(
        "a2a",
        generated::REVISIONS,
        cfg!(feature = "unstable"),
    );
}

#[test]
fn every_method_table_lists_exactly_the_methods_of_its_source() {
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
fn what_the_generated_types_write_is_valid_on_the_wire() {
    checks::generated_output_is_valid_on_the_wire(generated::REVISIONS);
}

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(value: &Value) -> Value {
    let typed: T = serde_json::from_value(value.clone()).unwrap();
    serde_json::to_value(typed).unwrap()
}

#[test]
fn a_real_0_3_message_send_round_trips() {
    use protocols_a2a::generated::v0_3_0::methods::MessageSend;
    let params = json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
        "parts": [{"kind": "text", "text": "hello"}]}});
    assert_eq!(
        round_trip::<<MessageSend as RpcMethod>::Params>(&params),
        params
    );
}

#[test]
fn a_real_1_0_send_message_round_trips() {
    use protocols_a2a::generated::v1_0_1::methods::SendMessage;
    let params = json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
        "parts": [{"text": "hello"}]}});
    assert_eq!(
        round_trip::<<SendMessage as RpcMethod>::Params>(&params),
        params
    );
}

/// ProtoJSON parsers accept a field's proto name (`message_id`) as well as its lowerCamelCase
/// JSON name (`messageId`); output keeps the JSON name. Here through nested messages, a oneof
/// member (`Part.text`), repeated and optional fields.
#[test]
fn a_1_0_message_with_proto_field_names_decodes_like_its_json_names() {
    use protocols_a2a::generated::v1_0_1::methods::{GetTask, SendMessage};
    let snake = json!({
        "message": {"message_id": "m-1", "context_id": "c-1", "task_id": "t-1",
            "role": "ROLE_USER", "reference_task_ids": ["t-0"],
            "parts": [{"text": "hello", "media_type": "text/plain"}]},
        "configuration": {"accepted_output_modes": ["text/plain"], "history_length": 3,
            "return_immediately": true}
    });
    let camel = json!({
        "message": {"messageId": "m-1", "contextId": "c-1", "taskId": "t-1",
            "role": "ROLE_USER", "referenceTaskIds": ["t-0"],
            "parts": [{"text": "hello", "mediaType": "text/plain"}]},
        "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 3,
            "returnImmediately": true}
    });
    type Params = <SendMessage as RpcMethod>::Params;
    assert_eq!(round_trip::<Params>(&snake), camel);
    assert_eq!(round_trip::<Params>(&camel), camel);
    let get = json!({"id": "t-1", "history_length": 2});
    assert_eq!(
        round_trip::<<GetTask as RpcMethod>::Params>(&get),
        json!({"id": "t-1", "historyLength": 2})
    );
}
