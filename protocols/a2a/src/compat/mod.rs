//! A2A 0.3 compatibility: 0.3 method names and shapes mapped onto the 1.0 operations and back.
//! Requests are rewritten from 0.3 JSON into the 1.0 params of the matching method; answers
//! and stream events from 1.0 JSON into their 0.3 shape (`kind` discriminators, lower-case
//! states, `final` on status updates, nested push configs). The mapping works on JSON values
//! so the same code serves the JSON-RPC and HTTP+JSON bindings; tests prove its output
//! validates against the pinned 0.3 schema.

pub mod proto_json;

use serde_json::{Map, Value, json};

use crate::error::A2aError;
use crate::v0_3 as legacy;
use crate::v1::methods as v1;

/// The `A2A-Version` header.
pub const VERSION_HEADER: &str = "a2a-version";

/// Which revision a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// A2A 1.0, the generated types' own shape.
    V1,
    /// A2A 0.3, converted to and from 1.0 at the edge.
    V0_3,
}

impl Revision {
    /// From the `A2A-Version` header: absent means 0.3, as the specification says.
    pub fn from_header(value: Option<&str>) -> Result<Self, A2aError> {
        match value.map(str::trim) {
            None | Some("") => Ok(Self::V0_3),
            Some(version) if version == "1.0" || version.starts_with("1.0.") => Ok(Self::V1),
            Some(version) if version == "0.3" || version.starts_with("0.3.") => Ok(Self::V0_3),
            Some(version) => Err(A2aError::version_not_supported(version)),
        }
    }
}

/// The 1.0 method a 0.3 method maps onto.
pub fn v1_method(legacy_method: &str) -> Option<&'static str> {
    Some(match legacy_method {
        legacy::methods::MESSAGE_SEND => v1::SEND_MESSAGE,
        legacy::methods::MESSAGE_STREAM => v1::SEND_STREAMING_MESSAGE,
        legacy::methods::TASKS_GET => v1::GET_TASK,
        legacy::methods::TASKS_CANCEL => v1::CANCEL_TASK,
        legacy::methods::TASKS_RESUBSCRIBE => v1::SUBSCRIBE_TO_TASK,
        legacy::methods::TASKS_PUSH_NOTIFICATION_CONFIG_SET => {
            v1::CREATE_TASK_PUSH_NOTIFICATION_CONFIG
        }
        legacy::methods::TASKS_PUSH_NOTIFICATION_CONFIG_GET => {
            v1::GET_TASK_PUSH_NOTIFICATION_CONFIG
        }
        legacy::methods::TASKS_PUSH_NOTIFICATION_CONFIG_LIST => {
            v1::LIST_TASK_PUSH_NOTIFICATION_CONFIGS
        }
        legacy::methods::TASKS_PUSH_NOTIFICATION_CONFIG_DELETE => {
            v1::DELETE_TASK_PUSH_NOTIFICATION_CONFIG
        }
        legacy::methods::AGENT_GET_AUTHENTICATED_EXTENDED_CARD => v1::GET_EXTENDED_AGENT_CARD,
        _ => return None,
    })
}

fn object(value: &Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// `key`'s value in `map`, or `null`: the mapping carries over what is there and leaves it to
/// the 1.0 decoder (and the service's checks) to refuse what is missing.
fn field<'a>(map: &'a Map<String, Value>, key: &str) -> &'a Value {
    map.get(key).unwrap_or(&Value::Null)
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key).filter(|value| !value.is_null()) {
            to.insert((*key).to_owned(), value.clone());
        }
    }
}

/// Rewrites 0.3 params of a request for `method` (its 1.0 name) into 1.0 params; params that
/// are not an object (or absent) are invalid.
pub fn params_from_v03(method: &str, params: &Value) -> Result<Value, A2aError> {
    let empty = Map::new();
    let given = match params {
        Value::Object(given) => given,
        Value::Null => &empty,
        _ => return Err(A2aError::invalid_params("params must be an object")),
    };
    let mut out = Map::new();
    match method {
        v1::SEND_MESSAGE | v1::SEND_STREAMING_MESSAGE => {
            if let Some(message) = given.get("message").filter(|message| !message.is_null()) {
                out.insert("message".into(), message_from_v03(message));
            }
            if let Some(configuration) = given.get("configuration").and_then(Value::as_object) {
                out.insert(
                    "configuration".into(),
                    configuration_from_v03(configuration),
                );
            }
            copy(given, &mut out, &["metadata"]);
        }
        v1::GET_TASK => copy(given, &mut out, &["id", "historyLength"]),
        v1::CANCEL_TASK => copy(given, &mut out, &["id", "metadata"]),
        v1::SUBSCRIBE_TO_TASK => copy(given, &mut out, &["id"]),
        v1::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => {
            out = push_config_from_v03(
                field(given, "pushNotificationConfig"),
                field(given, "taskId"),
            );
        }
        v1::GET_TASK_PUSH_NOTIFICATION_CONFIG | v1::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => {
            let task_id = field(given, "id");
            // 0.3 may name only the task: its config id then defaults to the task id.
            let config_id = given
                .get("pushNotificationConfigId")
                .filter(|value| !value.is_null())
                .unwrap_or(task_id);
            out.insert("id".into(), config_id.clone());
            out.insert("taskId".into(), task_id.clone());
        }
        v1::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            out.insert("taskId".into(), field(given, "id").clone());
        }
        _ => return Ok(params.clone()),
    }
    out.retain(|_, value| !value.is_null());
    Ok(Value::Object(out))
}

fn configuration_from_v03(configuration: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    copy(
        configuration,
        &mut out,
        &["acceptedOutputModes", "historyLength"],
    );
    // 0.3 answers a send when the task ends unless `blocking` is false.
    if configuration.get("blocking") == Some(&Value::Bool(false)) {
        out.insert("returnImmediately".into(), Value::Bool(true));
    }
    if let Some(push) = configuration.get("pushNotificationConfig") {
        out.insert(
            "taskPushNotificationConfig".into(),
            Value::Object(push_config_from_v03(push, &Value::Null)),
        );
    }
    Value::Object(out)
}

fn push_config_from_v03(config: &Value, task_id: &Value) -> Map<String, Value> {
    let given = object(config);
    let mut out = Map::new();
    copy(&given, &mut out, &["id", "url", "token"]);
    if !task_id.is_null() {
        out.insert("taskId".into(), task_id.clone());
        if !out.contains_key("id") {
            out.insert("id".into(), task_id.clone());
        }
    }
    if let Some(auth) = given.get("authentication").and_then(Value::as_object) {
        let scheme = auth
            .get("schemes")
            .and_then(Value::as_array)
            .and_then(|schemes| schemes.first())
            .cloned()
            .unwrap_or_else(|| json!("Bearer"));
        let mut authentication = Map::new();
        authentication.insert("scheme".into(), scheme);
        copy(auth, &mut authentication, &["credentials"]);
        out.insert("authentication".into(), Value::Object(authentication));
    }
    out
}

/// A 0.3 role as 1.0 spells it; an absent role stays absent (the service refuses it).
fn role_from_v03(role: &Value) -> Option<Value> {
    let role = role.as_str()?;
    Some(json!(match role {
        "agent" => "ROLE_AGENT",
        "user" => "ROLE_USER",
        _ => "ROLE_UNSPECIFIED",
    }))
}

fn role_to_v03(role: &Value) -> Value {
    json!(match role.as_str() {
        Some("ROLE_AGENT") => "agent",
        _ => "user",
    })
}

const MESSAGE_FIELDS: &[&str] = &[
    "messageId",
    "contextId",
    "taskId",
    "referenceTaskIds",
    "extensions",
    "metadata",
];

fn message_from_v03(message: &Value) -> Value {
    let given = object(message);
    let mut out = Map::new();
    copy(&given, &mut out, MESSAGE_FIELDS);
    if let Some(role) = role_from_v03(field(&given, "role")) {
        out.insert("role".into(), role);
    }
    out.insert("parts".into(), map_array(given.get("parts"), part_from_v03));
    Value::Object(out)
}

fn part_from_v03(part: &Value) -> Value {
    let given = object(part);
    let mut out = Map::new();
    copy(&given, &mut out, &["metadata"]);
    match given.get("kind").and_then(Value::as_str) {
        Some("file") => {
            let file = object(field(&given, "file"));
            if let Some(bytes) = file.get("bytes") {
                out.insert("raw".into(), bytes.clone());
            } else if let Some(uri) = file.get("uri") {
                out.insert("url".into(), uri.clone());
            }
            if let Some(mime) = file.get("mimeType") {
                out.insert("mediaType".into(), mime.clone());
            }
            if let Some(name) = file.get("name") {
                out.insert("filename".into(), name.clone());
            }
        }
        Some("data") => {
            out.insert(
                "data".into(),
                given.get("data").cloned().unwrap_or(json!({})),
            );
        }
        _ => copy(&given, &mut out, &["text"]),
    }
    Value::Object(out)
}

fn part_to_v03(part: &Value) -> Value {
    let given = object(part);
    let mut out = Map::new();
    copy(&given, &mut out, &["metadata"]);
    if let Some(text) = given.get("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text.clone());
    } else if let Some(data) = given.get("data") {
        out.insert("kind".into(), json!("data"));
        // 0.3 data parts hold an object.
        let data = if data.is_object() {
            data.clone()
        } else {
            json!({ "value": data })
        };
        out.insert("data".into(), data);
    } else {
        let mut file = Map::new();
        if let Some(raw) = given.get("raw") {
            file.insert("bytes".into(), raw.clone());
        } else {
            file.insert(
                "uri".into(),
                given.get("url").cloned().unwrap_or_else(|| json!("")),
            );
        }
        if let Some(media) = given.get("mediaType") {
            file.insert("mimeType".into(), media.clone());
        }
        if let Some(name) = given.get("filename") {
            file.insert("name".into(), name.clone());
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    }
    Value::Object(out)
}

fn message_to_v03(message: &Value) -> Value {
    let given = object(message);
    let mut out = Map::new();
    out.insert("kind".into(), json!("message"));
    copy(&given, &mut out, MESSAGE_FIELDS);
    out.insert("role".into(), role_to_v03(field(&given, "role")));
    out.insert("parts".into(), map_array(given.get("parts"), part_to_v03));
    Value::Object(out)
}

fn map_array(value: Option<&Value>, map: fn(&Value) -> Value) -> Value {
    Value::Array(
        value
            .and_then(Value::as_array)
            .map(|items| items.iter().map(map).collect())
            .unwrap_or_default(),
    )
}

/// A 1.0 `TASK_STATE_*` name as its 0.3 spelling.
pub fn state_to_v03(state: &str) -> &'static str {
    match state {
        "TASK_STATE_SUBMITTED" => "submitted",
        "TASK_STATE_WORKING" => "working",
        "TASK_STATE_COMPLETED" => "completed",
        "TASK_STATE_FAILED" => "failed",
        "TASK_STATE_CANCELED" => "canceled",
        "TASK_STATE_INPUT_REQUIRED" => "input-required",
        "TASK_STATE_REJECTED" => "rejected",
        "TASK_STATE_AUTH_REQUIRED" => "auth-required",
        _ => "unknown",
    }
}

/// Whether a 0.3 state ends a stream (the 0.3 `final` flag).
fn is_final_v03(state: &str) -> bool {
    matches!(
        state,
        "completed" | "failed" | "canceled" | "rejected" | "input-required" | "auth-required"
    )
}

fn status_to_v03(status: &Value) -> Value {
    let given = object(status);
    let mut out = Map::new();
    let state = given
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert("state".into(), json!(state_to_v03(state)));
    if let Some(message) = given.get("message") {
        out.insert("message".into(), message_to_v03(message));
    }
    copy(&given, &mut out, &["timestamp"]);
    Value::Object(out)
}

fn artifact_to_v03(artifact: &Value) -> Value {
    let given = object(artifact);
    let mut out = Map::new();
    copy(
        &given,
        &mut out,
        &[
            "artifactId",
            "name",
            "description",
            "metadata",
            "extensions",
        ],
    );
    out.insert("parts".into(), map_array(given.get("parts"), part_to_v03));
    Value::Object(out)
}

fn task_to_v03(task: &Value) -> Value {
    let given = object(task);
    let mut out = Map::new();
    out.insert("kind".into(), json!("task"));
    copy(&given, &mut out, &["id", "metadata"]);
    out.insert(
        "contextId".into(),
        given.get("contextId").cloned().unwrap_or_else(|| json!("")),
    );
    out.insert("status".into(), status_to_v03(field(&given, "status")));
    if given.contains_key("history") {
        out.insert(
            "history".into(),
            map_array(given.get("history"), message_to_v03),
        );
    }
    if given.contains_key("artifacts") {
        out.insert(
            "artifacts".into(),
            map_array(given.get("artifacts"), artifact_to_v03),
        );
    }
    Value::Object(out)
}

/// A 1.0 `StreamResponse` (or `SendMessageResponse`) as the 0.3 event or result.
pub fn event_to_v03(event: &Value) -> Value {
    if let Some(task) = event.get("task") {
        return task_to_v03(task);
    }
    if let Some(message) = event.get("message") {
        return message_to_v03(message);
    }
    if let Some(update) = event.get("statusUpdate") {
        let given = object(update);
        let status = status_to_v03(field(&given, "status"));
        let state = status
            .get("state")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut out = Map::new();
        out.insert("kind".into(), json!("status-update"));
        copy(&given, &mut out, &["taskId", "contextId", "metadata"]);
        out.insert("final".into(), json!(is_final_v03(state)));
        out.insert("status".into(), status);
        return Value::Object(out);
    }
    if let Some(update) = event.get("artifactUpdate") {
        let given = object(update);
        let mut out = Map::new();
        out.insert("kind".into(), json!("artifact-update"));
        copy(
            &given,
            &mut out,
            &["taskId", "contextId", "append", "lastChunk", "metadata"],
        );
        out.insert(
            "artifact".into(),
            artifact_to_v03(field(&given, "artifact")),
        );
        return Value::Object(out);
    }
    event.clone()
}

fn push_config_to_v03(config: &Value) -> Value {
    let given = object(config);
    let mut inner = Map::new();
    copy(&given, &mut inner, &["id", "url", "token"]);
    if let Some(auth) = given.get("authentication").and_then(Value::as_object) {
        let mut authentication = Map::new();
        authentication.insert(
            "schemes".into(),
            json!([auth
                .get("scheme")
                .cloned()
                .unwrap_or_else(|| json!("Bearer"))]),
        );
        copy(auth, &mut authentication, &["credentials"]);
        inner.insert("authentication".into(), Value::Object(authentication));
    }
    json!({
        "taskId": given.get("taskId").cloned().unwrap_or_else(|| json!("")),
        "pushNotificationConfig": inner,
    })
}

/// Rewrites a 1.0 result of `method` into its 0.3 shape.
pub fn result_to_v03(method: &str, result: &Value) -> Value {
    match method {
        v1::SEND_MESSAGE | v1::SEND_STREAMING_MESSAGE | v1::SUBSCRIBE_TO_TASK => {
            event_to_v03(result)
        }
        v1::GET_TASK | v1::CANCEL_TASK => task_to_v03(result),
        v1::CREATE_TASK_PUSH_NOTIFICATION_CONFIG | v1::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
            push_config_to_v03(result)
        }
        v1::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            map_array(result.get("configs"), push_config_to_v03)
        }
        v1::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => Value::Null,
        v1::GET_EXTENDED_AGENT_CARD => card_to_v03(result),
        _ => result.clone(),
    }
}

/// A 1.0 card as a 0.3 card: its 0.3 interfaces (those announcing `0.3`, or else all) become
/// `url`, `preferredTransport` and `additionalInterfaces`.
pub fn card_to_v03(card: &Value) -> Value {
    let mut fields = object(card);
    let interfaces = fields
        .remove("supportedInterfaces")
        .and_then(|value| value.as_array().cloned())
        .unwrap_or_default();
    let legacy: Vec<&Value> = interfaces
        .iter()
        .filter(|iface| {
            iface
                .get("protocolVersion")
                .and_then(Value::as_str)
                .is_some_and(|version| version.starts_with("0.3"))
        })
        .collect();
    let interfaces: Vec<&Value> = if legacy.is_empty() {
        interfaces.iter().collect()
    } else {
        legacy
    };
    let url = |iface: &Value| iface.get("url").cloned().unwrap_or(Value::Null);
    let binding = |iface: &Value| iface.get("protocolBinding").cloned().unwrap_or(Value::Null);
    if let Some(first) = interfaces.first() {
        fields.insert("url".into(), url(first));
        fields.insert("preferredTransport".into(), binding(first));
    }
    fields.insert(
        "additionalInterfaces".into(),
        Value::Array(
            interfaces
                .iter()
                .map(|iface| json!({"url": url(iface), "transport": binding(iface)}))
                .collect(),
        ),
    );
    fields.insert("protocolVersion".into(), json!(LEGACY_CARD_VERSION));
    let extended = fields
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
        .and_then(|capabilities| capabilities.remove("extendedAgentCard"));
    fields.insert(
        "supportsAuthenticatedExtendedCard".into(),
        extended.unwrap_or(Value::Bool(false)),
    );
    if let Some(requirements) = fields.remove("securityRequirements") {
        fields.insert("security".into(), security_to_v03(&requirements));
    }
    if let Some(schemes) = fields.remove("securitySchemes") {
        fields.insert("securitySchemes".into(), schemes_to_v03(&schemes));
    }
    fill_legacy_card_defaults(&mut fields);
    Value::Object(fields)
}

/// The revision a 0.3 card announces.
pub const LEGACY_CARD_VERSION: &str = "0.3.0";

fn security_to_v03(requirements: &Value) -> Value {
    map_array(Some(requirements), |requirement| {
        let schemes = object(requirement.get("schemes").unwrap_or(&Value::Null));
        Value::Object(
            schemes
                .into_iter()
                .map(|(name, list)| (name, list.get("list").cloned().unwrap_or(json!([]))))
                .collect(),
        )
    })
}

fn schemes_to_v03(schemes: &Value) -> Value {
    Value::Object(
        object(schemes)
            .into_iter()
            .map(|(name, scheme)| {
                let converted = if let Some(http) = scheme.get("httpAuthSecurityScheme") {
                    let mut out = object(http);
                    out.insert("type".into(), json!("http"));
                    Value::Object(out)
                } else if let Some(key) = scheme.get("apiKeySecurityScheme") {
                    let mut out = object(key);
                    if let Some(location) = out.remove("location") {
                        out.insert("in".into(), location);
                    }
                    out.insert("type".into(), json!("apiKey"));
                    Value::Object(out)
                } else if let Some(oidc) = scheme.get("openIdConnectSecurityScheme") {
                    let mut out = object(oidc);
                    out.insert("type".into(), json!("openIdConnect"));
                    Value::Object(out)
                } else {
                    json!({"type": "mutualTLS"})
                };
                (name, converted)
            })
            .collect(),
    )
}

/// Fields a 0.3 card requires that 1.0 serialization omits when empty.
fn fill_legacy_card_defaults(fields: &mut Map<String, Value>) {
    for key in ["defaultInputModes", "defaultOutputModes", "skills"] {
        fields.entry(key).or_insert_with(|| json!([]));
    }
    if let Some(skills) = fields.get_mut("skills").and_then(Value::as_array_mut) {
        for skill in skills.iter_mut().filter_map(Value::as_object_mut) {
            skill.entry("tags").or_insert_with(|| json!([]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_version_header_means_0_3_and_unknown_versions_are_refused() {
        assert_eq!(Revision::from_header(None).unwrap(), Revision::V0_3);
        assert_eq!(Revision::from_header(Some("1.0")).unwrap(), Revision::V1);
        assert_eq!(Revision::from_header(Some("0.3")).unwrap(), Revision::V0_3);
        assert!(matches!(
            Revision::from_header(Some("2.0")),
            Err(A2aError::VersionNotSupported(_))
        ));
    }

    #[test]
    fn a_0_3_send_becomes_a_1_0_send_that_parses() {
        let params = json!({
            "message": {
                "kind": "message", "messageId": "m1", "role": "user",
                "parts": [{"kind": "text", "text": "hi"},
                          {"kind": "file", "file": {"uri": "https://x/y", "mimeType": "text/plain"}}]
            },
            "configuration": {"blocking": false, "historyLength": 2}
        });
        let mapped = params_from_v03(v1::SEND_MESSAGE, &params).unwrap();
        let request: crate::v1::types::SendMessageRequest = serde_json::from_value(mapped).unwrap();
        assert_eq!(request.message.role, crate::v1::types::Role::RoleUser);
        assert_eq!(request.message.parts.len(), 2);
        let configuration = request.configuration.unwrap();
        assert_eq!(configuration.return_immediately, Some(true));
        assert_eq!(configuration.history_length, Some(2));
    }

    #[test]
    fn a_final_status_update_is_marked_final_in_0_3() {
        let event = json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}});
        let legacy = event_to_v03(&event);
        assert_eq!(legacy["kind"], "status-update");
        assert_eq!(legacy["final"], true);
        assert_eq!(legacy["status"]["state"], "completed");
    }

    #[test]
    fn push_config_get_by_task_only_uses_the_task_id_as_config_id() {
        let mapped =
            params_from_v03(v1::GET_TASK_PUSH_NOTIFICATION_CONFIG, &json!({"id": "t1"})).unwrap();
        assert_eq!(mapped, json!({"taskId": "t1", "id": "t1"}));
    }

    #[test]
    fn params_that_are_not_an_object_are_invalid_params() {
        let error = params_from_v03(v1::SEND_MESSAGE, &json!([])).unwrap_err();
        assert_eq!(error.code(), -32602);
    }

    #[test]
    fn a_message_without_role_maps_to_one_without_role() {
        let params = json!({"message": {"kind": "message", "messageId": "m",
            "parts": [{"kind": "text", "text": "hi"}]}});
        let mapped = params_from_v03(v1::SEND_MESSAGE, &params).unwrap();
        assert_eq!(mapped["message"].get("role"), None);
        let request: crate::v1::types::SendMessageRequest = serde_json::from_value(mapped).unwrap();
        assert_eq!(
            request.message.role,
            crate::v1::types::Role::RoleUnspecified
        );
    }

    #[test]
    fn a_push_config_set_naming_only_its_task_maps_without_a_url() {
        let mapped = params_from_v03(
            v1::CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
            &json!({"taskId": "t1"}),
        )
        .unwrap();
        assert_eq!(mapped, json!({"taskId": "t1", "id": "t1"}));
    }
}
