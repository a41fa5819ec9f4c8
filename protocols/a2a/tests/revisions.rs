//! Per A2A revision: the method table lists exactly the request `method` consts (0.3) or the
//! service's `rpc`s (1.0); every method
//! decodes a minimal valid message to its own variant (never by shape); an unknown method is
//! `DispatchError::UnknownMethod`; a real message round-trips.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use serde_json::Value;

/// Every `properties.method.const` of the schema's definitions, computed from the source.
fn method_consts(schema_file: &str) -> BTreeSet<String> {
    let bytes = codegen::samples::read_cache_file(schema_file).expect("schema");
    let schema: Value = serde_json::from_slice(&bytes).unwrap();
    let definitions = schema
        .get("definitions")
        .or_else(|| schema.get("$defs"))
        .and_then(Value::as_object)
        .unwrap();
    definitions
        .values()
        .filter_map(|d| d.pointer("/properties/method/const")?.as_str())
        .map(str::to_string)
        .collect()
}

/// Every `rpc` of the proto's service, computed from the source text.
fn proto_rpcs(proto_file: &str) -> BTreeSet<String> {
    let bytes = codegen::samples::read_cache_file(proto_file).expect("proto");
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("rpc "))
        .filter_map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).next())
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
    ($module:ident, $revision:literal, $expected:expr, $real:expr) => {
        mod $module {
            use protocols_a2a::generated::$module as rev;
            use protocols_runtime::method::{DispatchError, MethodKind};

            #[test]
            fn method_table_lists_exactly_the_methods_of_the_source() {
                let ours: std::collections::BTreeSet<String> =
                    rev::METHODS.iter().map(|m| m.name.to_string()).collect();
                assert_eq!(ours, $expected);
            }

            #[test]
            fn every_method_decodes_a_minimal_message_to_its_own_variant() {
                let model = codegen::samples::revision_model("a2a", $revision).unwrap();
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

revision!(
    v0_3_0,
    "0.3.0",
    super::method_consts("a2a/0.3.0/a2a.json"),
    serde_json::json!({"method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m-1", "role": "user",
        "parts": [{"kind": "text", "text": "hello"}]}}})
);
revision!(
    v1_0_1,
    "1.0.1",
    super::proto_rpcs("a2a/1.0.1/a2a.proto"),
    serde_json::json!({"method": "SendMessage", "params": {"message": {
        "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}})
);
