//! Per MCP revision: the method table lists exactly the schema's `method` consts; every method
//! decodes a minimal valid message to its own variant (never by shape); an unknown method is
//! `DispatchError::UnknownMethod`; a real message round-trips.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use serde_json::{Value, json};

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
    ($module:ident, $revision:literal, $real:expr) => {
        mod $module {
            use protocols_mcp::generated::$module as rev;
            use protocols_runtime::method::{DispatchError, MethodKind};

            #[test]
            fn method_table_lists_exactly_the_method_consts_of_the_schema() {
                let file = format!("mcp/{}/schema.json", $revision);
                let ours: std::collections::BTreeSet<String> =
                    rev::METHODS.iter().map(|m| m.name.to_string()).collect();
                assert_eq!(ours, super::method_consts(&file));
            }

            #[test]
            fn every_method_decodes_a_minimal_message_to_its_own_variant() {
                let model = codegen::samples::revision_model("mcp", $revision).unwrap();
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
                                rev::ServerRequest::from_method(spec.name, params.clone())
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
                                rev::ServerNotification::from_method(spec.name, params.clone())
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

fn initialize(revision: &str) -> Value {
    json!({"method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {"roots": {}},
        "clientInfo": {"name": "example-client", "version": "1.0.0"}}})
}

revision!(v2024_11_05, "2024-11-05", super::initialize("2024-11-05"));
revision!(v2025_03_26, "2025-03-26", super::initialize("2025-03-26"));
revision!(v2025_06_18, "2025-06-18", super::initialize("2025-06-18"));
revision!(v2025_11_25, "2025-11-25", super::initialize("2025-11-25"));
revision!(
    v2026_07_28,
    "2026-07-28",
    serde_json::json!({"method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "get_weather", "arguments": {"location": "New York"}}})
);

#[test]
fn tools_list_without_params_is_not_ping() {
    use protocols_mcp::generated::v2025_06_18::ClientRequest;
    let request: ClientRequest = serde_json::from_value(json!({"method": "tools/list"})).unwrap();
    assert!(
        matches!(request, ClientRequest::ToolsList(None)),
        "{request:?}"
    );
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
