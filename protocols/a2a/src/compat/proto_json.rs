//! The 0.3 HTTP+JSON binding's shapes: proto-JSON of the 0.3 `a2a.proto` (what the official
//! SDKs' 0.3 REST clients and servers send: `content` for a message's parts, `ROLE_USER`,
//! `TASK_STATE_CANCELLED`, `{task}`/`{msg}` envelopes), mapped to and from the 0.3 JSON-RPC
//! shapes the rest of [`super`] speaks. Requests in the JSON-RPC shape are taken as they are.

use serde_json::{Map, Value, json};

use super::{copy, field, map_array, object};
use crate::v1::methods as v1;

/// A 0.3 REST request body for `method` (its 1.0 name) in the 0.3 JSON-RPC params shape.
pub fn body_to_v03(method: &str, body: &Value) -> Value {
    let Value::Object(given) = body else {
        return body.clone();
    };
    let mut out = given.clone();
    match method {
        v1::SEND_MESSAGE | v1::SEND_STREAMING_MESSAGE => {
            let proto = given.get("message").is_some_and(is_proto_message);
            if let Some(message) = given.get("message") {
                out.insert("message".into(), message_from_proto(message));
            }
            if let Some(configuration) = given.get("configuration").and_then(Value::as_object) {
                let mut configuration = configuration.clone();
                if let Some(push) = configuration.remove("pushNotification") {
                    configuration.insert("pushNotificationConfig".into(), push);
                }
                // Proto-JSON leaves out a `false`: a configuration without `blocking` asks not
                // to block (without any configuration, a send blocks, as in JSON-RPC).
                if proto {
                    configuration
                        .entry("blocking")
                        .or_insert(Value::Bool(false));
                }
                out.insert("configuration".into(), Value::Object(configuration));
            }
        }
        v1::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => {
            // `name` is `tasks/{task}/pushNotificationConfigs/{config}`; the path names the
            // task too, and wins.
            if let Some(task) = given
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| name.strip_prefix("tasks/"))
                .and_then(|rest| rest.split('/').next())
            {
                out.insert("taskId".into(), json!(task));
            }
            out.remove("name");
        }
        _ => {}
    }
    Value::Object(out)
}

/// A 0.3 JSON-RPC result of `method` as the 0.3 REST binding answers it.
pub fn result_from_v03(method: &str, result: &Value) -> Value {
    match method {
        v1::SEND_MESSAGE => match kind(result) {
            "message" => json!({"msg": message_to_proto(result)}),
            _ => json!({"task": task_to_proto(result)}),
        },
        v1::SEND_STREAMING_MESSAGE | v1::SUBSCRIBE_TO_TASK => event_to_proto(result),
        v1::GET_TASK | v1::CANCEL_TASK => task_to_proto(result),
        v1::CREATE_TASK_PUSH_NOTIFICATION_CONFIG | v1::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
            push_config_to_proto(result)
        }
        v1::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => json!({
            "configs": map_array(Some(result), push_config_to_proto),
            "nextPageToken": "",
        }),
        v1::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => json!({}),
        _ => result.clone(),
    }
}

fn kind(value: &Value) -> &str {
    value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A 0.3 stream event as a 0.3 `StreamResponse`.
fn event_to_proto(event: &Value) -> Value {
    let given = object(event);
    match kind(event) {
        "message" => json!({"msg": message_to_proto(event)}),
        "status-update" => {
            let mut out = Map::new();
            copy(
                &given,
                &mut out,
                &["taskId", "contextId", "final", "metadata"],
            );
            out.insert("status".into(), status_to_proto(field(&given, "status")));
            json!({"statusUpdate": out})
        }
        "artifact-update" => {
            let mut out = Map::new();
            copy(
                &given,
                &mut out,
                &["taskId", "contextId", "append", "lastChunk", "metadata"],
            );
            out.insert(
                "artifact".into(),
                artifact_to_proto(field(&given, "artifact")),
            );
            json!({"artifactUpdate": out})
        }
        _ => json!({"task": task_to_proto(event)}),
    }
}

fn task_to_proto(task: &Value) -> Value {
    let given = object(task);
    let mut out = Map::new();
    copy(&given, &mut out, &["id", "contextId", "metadata"]);
    out.insert("status".into(), status_to_proto(field(&given, "status")));
    if given.contains_key("artifacts") {
        out.insert(
            "artifacts".into(),
            map_array(given.get("artifacts"), artifact_to_proto),
        );
    }
    if given.contains_key("history") {
        out.insert(
            "history".into(),
            map_array(given.get("history"), message_to_proto),
        );
    }
    Value::Object(out)
}

/// A 0.3 state as the 0.3 proto names it (which spells `CANCELLED` with two Ls).
fn state_to_proto(state: &str) -> &'static str {
    match state {
        "submitted" => "TASK_STATE_SUBMITTED",
        "working" => "TASK_STATE_WORKING",
        "completed" => "TASK_STATE_COMPLETED",
        "failed" => "TASK_STATE_FAILED",
        "canceled" => "TASK_STATE_CANCELLED",
        "input-required" => "TASK_STATE_INPUT_REQUIRED",
        "rejected" => "TASK_STATE_REJECTED",
        "auth-required" => "TASK_STATE_AUTH_REQUIRED",
        _ => "TASK_STATE_UNSPECIFIED",
    }
}

fn status_to_proto(status: &Value) -> Value {
    let given = object(status);
    let state = given
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("state".into(), json!(state_to_proto(state)));
    if let Some(message) = given.get("message") {
        out.insert("message".into(), message_to_proto(message));
    }
    copy(&given, &mut out, &["timestamp"]);
    Value::Object(out)
}

fn message_to_proto(message: &Value) -> Value {
    let given = object(message);
    let mut out = Map::new();
    copy(
        &given,
        &mut out,
        &["messageId", "contextId", "taskId", "metadata", "extensions"],
    );
    let role = match given.get("role").and_then(Value::as_str) {
        Some("agent") => "ROLE_AGENT",
        Some("user") => "ROLE_USER",
        _ => "ROLE_UNSPECIFIED",
    };
    out.insert("role".into(), json!(role));
    out.insert(
        "content".into(),
        map_array(given.get("parts"), part_to_proto),
    );
    Value::Object(out)
}

fn artifact_to_proto(artifact: &Value) -> Value {
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
    out.insert("parts".into(), map_array(given.get("parts"), part_to_proto));
    Value::Object(out)
}

fn part_to_proto(part: &Value) -> Value {
    let given = object(part);
    match kind(part) {
        "file" => {
            let file = object(field(&given, "file"));
            let mut out = Map::new();
            if let Some(bytes) = file.get("bytes") {
                out.insert("fileWithBytes".into(), bytes.clone());
            } else {
                out.insert("fileWithUri".into(), field(&file, "uri").clone());
            }
            copy(&file, &mut out, &["mimeType"]);
            json!({"file": out})
        }
        "data" => json!({"data": {"data": field(&given, "data")}}),
        _ => json!({"text": field(&given, "text")}),
    }
}

fn push_config_to_proto(config: &Value) -> Value {
    let inner = config
        .get("pushNotificationConfig")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let task = config
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let id = inner.get("id").and_then(Value::as_str).unwrap_or_default();
    json!({
        "name": format!("tasks/{task}/pushNotificationConfigs/{id}"),
        "pushNotificationConfig": inner,
    })
}

/// Whether a message is in the 0.3 proto shape (its parts are `content`, its role `ROLE_*`).
fn is_proto_message(message: &Value) -> bool {
    message.get("content").is_some()
        || message
            .get("role")
            .and_then(Value::as_str)
            .is_some_and(|role| role.starts_with("ROLE_"))
}

/// A message in the 0.3 proto shape (or already in the JSON-RPC shape) in the JSON-RPC shape.
fn message_from_proto(message: &Value) -> Value {
    if !is_proto_message(message) {
        return message.clone();
    }
    let given = object(message);
    let mut out = Map::new();
    out.insert("kind".into(), json!("message"));
    copy(
        &given,
        &mut out,
        &["messageId", "contextId", "taskId", "metadata", "extensions"],
    );
    if let Some(role) = given.get("role").and_then(Value::as_str) {
        let role = match role {
            "ROLE_USER" => "user",
            "ROLE_AGENT" => "agent",
            other => other,
        };
        out.insert("role".into(), json!(role));
    }
    out.insert(
        "parts".into(),
        map_array(given.get("content"), part_from_proto),
    );
    Value::Object(out)
}

fn part_from_proto(part: &Value) -> Value {
    let given = object(part);
    if let Some(file) = given.get("file") {
        let file = object(file);
        let mut out = Map::new();
        if let Some(bytes) = file.get("fileWithBytes") {
            out.insert("bytes".into(), bytes.clone());
        } else {
            out.insert("uri".into(), field(&file, "fileWithUri").clone());
        }
        copy(&file, &mut out, &["mimeType"]);
        return json!({"kind": "file", "file": out});
    }
    if let Some(data) = given.get("data") {
        let data = data.get("data").cloned().unwrap_or_else(|| json!({}));
        return json!({"kind": "data", "data": data});
    }
    json!({"kind": "text", "text": field(&given, "text")})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proto_json_send_becomes_the_json_rpc_shape() {
        let body = json!({"message": {"messageId": "m", "role": "ROLE_USER",
            "content": [{"text": "hi"}, {"file": {"fileWithUri": "https://x/y", "mimeType": "text/plain"}},
                        {"data": {"data": {"k": 1}}}]},
            "configuration": {"pushNotification": {"url": "https://h"}}});
        let mapped = body_to_v03(v1::SEND_MESSAGE, &body);
        assert_eq!(
            mapped["message"],
            json!({"kind": "message", "messageId": "m", "role": "user", "parts": [
                {"kind": "text", "text": "hi"},
                {"kind": "file", "file": {"uri": "https://x/y", "mimeType": "text/plain"}},
                {"kind": "data", "data": {"k": 1}}]})
        );
        assert_eq!(
            mapped["configuration"]["pushNotificationConfig"]["url"],
            "https://h"
        );
        // Proto-JSON wrote `blocking: false` by leaving it out.
        assert_eq!(mapped["configuration"]["blocking"], false);
    }

    #[test]
    fn a_json_rpc_shaped_message_is_taken_as_it_is() {
        let body = json!({"message": {"kind": "message", "messageId": "m", "role": "user",
            "parts": [{"kind": "text", "text": "hi"}]}});
        assert_eq!(body_to_v03(v1::SEND_MESSAGE, &body), body);
    }

    #[test]
    fn a_task_answers_in_the_proto_envelope_with_proto_names() {
        let task = json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "canceled"},
            "history": [{"kind": "message", "messageId": "m", "role": "agent",
                         "parts": [{"kind": "text", "text": "x"}]}]});
        let answer = result_from_v03(v1::SEND_MESSAGE, &task);
        assert_eq!(answer["task"]["status"]["state"], "TASK_STATE_CANCELLED");
        assert_eq!(answer["task"]["history"][0]["role"], "ROLE_AGENT");
        assert_eq!(answer["task"]["history"][0]["content"][0]["text"], "x");
        assert_eq!(answer["task"].get("kind"), None);
    }

    #[test]
    fn a_proto_message_survives_the_round_trip_through_the_json_rpc_shape() {
        let proto = json!({"messageId": "m", "contextId": "c", "role": "ROLE_USER",
            "content": [{"text": "hi"}, {"file": {"fileWithBytes": "aGk=", "mimeType": "text/plain"}},
                        {"data": {"data": {"k": [1]}}}]});
        assert_eq!(message_to_proto(&message_from_proto(&proto)), proto);
    }
}
