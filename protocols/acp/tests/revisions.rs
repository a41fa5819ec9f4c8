//! Per ACP revision: the method table lists exactly the methods of `meta.json`; every method
//! decodes a minimal valid message to its own variant (never by shape); an unknown method is
//! `DispatchError::UnknownMethod`; a real message round-trips.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use serde_json::{Value, json};

/// Every method name `meta.json` lists, computed from the source.
fn meta_methods(meta_file: &str) -> BTreeSet<String> {
    let bytes = codegen::samples::read_cache_file(meta_file).expect("meta.json");
    let meta: Value = serde_json::from_slice(&bytes).unwrap();
    ["agentMethods", "clientMethods", "protocolMethods"]
        .iter()
        .filter_map(|group| meta.get(*group).and_then(Value::as_object))
        .flat_map(|group| group.values())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// The method a decode was routed to: the variant's on success, the method named by
/// `InvalidParams` when the schema-derived sample does not satisfy the type (the sample builder
/// takes each union's first member, which nested ACP unions do not always accept). Either way
/// the message went to that method's params type; `UnknownMethod` is a failure.
fn routed_method(
    method: &str,
    decoded: Result<&'static str, protocols_runtime::method::DispatchError>,
) -> &'static str {
    match decoded {
        Ok(routed) => routed,
        Err(protocols_runtime::method::DispatchError::InvalidParams { method: routed, .. }) => {
            routed
        }
        Err(other) => panic!("{method}: {other}"),
    }
}

/// A minimal instance of a `MethodSpec` type path, from the revision's normalized definitions.
fn minimal(model: &codegen::model::RevisionModel, type_path: Option<&str>) -> Option<Value> {
    let schema = codegen::samples::definition_for_type_path(&model.definitions, type_path?)
        .expect("the table's type is a definition");
    Some(codegen::samples::minimal_instance(
        &model.definitions,
        schema,
    ))
}

macro_rules! revision {
    ($module:ident, $revision:literal, $meta:literal, $real:expr) => {
        mod $module {
            use protocols_acp::generated::$module as rev;
            use protocols_runtime::method::{DispatchError, MethodKind};

            #[test]
            fn method_table_lists_exactly_the_methods_of_meta_json() {
                let ours: std::collections::BTreeSet<String> =
                    rev::METHODS.iter().map(|m| m.name.to_string()).collect();
                assert_eq!(ours, super::meta_methods($meta));
            }

            #[test]
            fn every_method_decodes_a_minimal_message_to_its_own_variant() {
                let model = codegen::samples::revision_model("acp", $revision).unwrap();
                for spec in rev::METHODS {
                    let params = super::minimal(&model, spec.params_type);
                    let client = spec.direction.from_client();
                    let server = spec.direction.from_server();
                    let decoded: Vec<&'static str> = match spec.kind {
                        MethodKind::Request => [
                            client.then(|| {
                                rev::ClientRequest::from_method(spec.name, params.clone())
                                    .map(|r| r.method())
                            }),
                            server.then(|| {
                                rev::AgentRequest::from_method(spec.name, params.clone())
                                    .map(|r| r.method())
                            }),
                        ]
                        .into_iter()
                        .flatten()
                        .map(|r| super::routed_method(spec.name, r))
                        .collect(),
                        MethodKind::Notification => [
                            client.then(|| {
                                rev::ClientNotification::from_method(spec.name, params.clone())
                                    .map(|r| r.method())
                            }),
                            server.then(|| {
                                rev::AgentNotification::from_method(spec.name, params.clone())
                                    .map(|r| r.method())
                            }),
                        ]
                        .into_iter()
                        .flatten()
                        .map(|r| super::routed_method(spec.name, r))
                        .collect(),
                    };
                    assert!(!decoded.is_empty(), "{} is in no direction enum", spec.name);
                    assert!(
                        decoded.iter().all(|m| *m == spec.name),
                        "{}: {decoded:?}",
                        spec.name
                    );
                    if spec.params_optional && spec.kind == MethodKind::Request && client {
                        let bare = rev::ClientRequest::from_method(spec.name, None).unwrap();
                        assert_eq!(
                            bare.method(),
                            spec.name,
                            "without params it stays {}",
                            spec.name
                        );
                    }
                }
            }

            #[test]
            fn an_unknown_method_is_a_distinct_method_not_found_error() {
                let error = rev::ClientRequest::from_method("no/such/method", None).unwrap_err();
                assert!(matches!(error, DispatchError::UnknownMethod));
                assert_eq!(error.code(), -32601);
            }

            #[test]
            fn a_real_client_request_round_trips() {
                let message: serde_json::Value = $real;
                let request: rev::ClientRequest = serde_json::from_value(message.clone()).unwrap();
                assert_eq!(serde_json::to_value(&request).unwrap(), message);
            }
        }
    };
}

fn initialize(version: u64) -> Value {
    json!({"method": "initialize", "params": {"protocolVersion": version}})
}

/// v2 names the client in `initialize`.
#[cfg(feature = "unstable")]
fn initialize_v2() -> Value {
    json!({"method": "initialize", "params": {"protocolVersion": 2,
        "info": {"name": "example-editor", "version": "1.0.0"}}})
}

revision!(v1, "v1", "acp/v1/meta.json", super::initialize(1));
#[cfg(feature = "unstable")]
revision!(v2, "v2", "acp/v2/meta.json", super::initialize_v2());
#[cfg(feature = "unstable")]
revision!(
    v1_unstable,
    "v1-unstable",
    "acp/v1/meta.unstable.json",
    super::initialize(1)
);
#[cfg(feature = "unstable")]
revision!(
    v2_unstable,
    "v2-unstable",
    "acp/v2/meta.unstable.json",
    super::initialize_v2()
);

#[test]
fn session_prompt_result_is_decoded_by_its_method_not_by_shape() {
    use protocols_acp::generated::v1::AgentResult;
    let result =
        AgentResult::decode_result("session/prompt", json!({"stopReason": "end_turn"})).unwrap();
    assert_eq!(result.method(), "session/prompt");
    assert!(AgentResult::decode_result("session/prompt", json!({})).is_err());
}
#[test]
fn a_form_elicitation_decodes_to_its_method() {
    use protocols_acp::generated::v1::AgentRequest;
    let params = json!({"sessionId": "s-1", "message": "Your name?", "mode": "form",
        "requestedSchema": {"type": "object", "properties": {}}});
    let request = AgentRequest::from_method("elicitation/create", Some(params)).unwrap();
    assert_eq!(request.method(), "elicitation/create");
}
