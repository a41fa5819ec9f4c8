//! Every A2A message the agent emits, over real sockets, validated on the wire: each method of
//! both bindings in 1.0 against the pinned 1.0.1 proto's definition of its result (stream
//! events as `StreamResponse`, webhook payloads too), closed to the fields the proto names;
//! each method in 0.3 over JSON-RPC against the pinned 0.3.0 JSON Schema's response envelope;
//! both cards against their revision's card definition.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod a2a_support;

use std::time::Duration;

use a2a_support::{
    Options, Running, V1Wire, assert_valid, legacy_definition_validator, legacy_validator,
    post_rpc, rest, rpc, start_with, user_message,
};
use http::Method;
use protocols_testkit::SseReader;
use serde_json::{Value, json};

const V1: Option<&str> = Some("1.0");

/// The 1.0 result of `method` answered over JSON-RPC, validated; the result.
async fn rpc_result(running: &Running, wire: &V1Wire, method: &str, params: Value) -> Value {
    let answer = post_rpc(running, &rpc(1, method, params), V1).await;
    assert_eq!(answer.status, 200, "{method}: {:?}", answer.body);
    let result = answer.body.get("result").cloned().unwrap_or_else(|| {
        panic!("{method}: {:?}", answer.body);
    });
    wire.assert_valid(&V1Wire::result_definition(method), &result);
    result
}

/// The 1.0 result of `method` answered over REST, validated.
async fn rest_result(
    running: &Running,
    wire: &V1Wire,
    method: &str,
    verb: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let answer = rest(running, verb, path, body, V1).await;
    assert_eq!(answer.status, 200, "{method}: {:?}", answer.body);
    assert_eq!(answer.headers["content-type"], "application/a2a+json");
    wire.assert_valid(&V1Wire::result_definition(method), &answer.body);
    answer.body
}

/// Every event of a 1.0 stream, each validated as a `StreamResponse`.
async fn stream_events(wire: &V1Wire, response: reqwest::Response, enveloped: bool) -> Vec<Value> {
    assert_eq!(response.status(), 200);
    let mut reader = SseReader::new(response);
    let mut events = Vec::new();
    while let Some((_, event)) = reader.next_json().await {
        let event = if enveloped {
            event["result"].clone()
        } else {
            event
        };
        wire.assert_valid("StreamResponse", &event);
        events.push(event);
    }
    events
}

#[test]
fn the_1_0_validator_refuses_a_field_the_proto_does_not_name_and_a_part_without_content() {
    let wire = V1Wire::new();
    let interface = json!({"url": "http://x/a2a", "protocolBinding": "JSONRPC",
                           "protocolVersion": "1.0"});
    let card = json!({"name": "n", "description": "d", "version": "1",
        "supportedInterfaces": [interface], "capabilities": {},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"]}]});
    wire.assert_valid("AgentCard", &card);
    let mut with_0_3_field = card.clone();
    with_0_3_field["url"] = json!("http://x/a2a");
    assert!(!wire.errors("AgentCard", &with_0_3_field).is_empty());
    assert!(!wire.errors("Part", &json!({"metadata": {}})).is_empty());
    assert!(
        !wire
            .errors("Part", &json!({"text": "a", "url": "http://x"}))
            .is_empty()
    );
}

#[tokio::test]
async fn every_1_0_answer_and_event_on_both_bindings_is_a_valid_1_0_message() {
    let (hook_url, mut pushed) = webhook_receiver().await;
    let running = start_with(Options {
        extended_card_token: Some("card-token"),
        ..Options::default()
    })
    .await;
    let wire = V1Wire::new();

    let card: Value = running
        .http
        .get(format!("{}/.well-known/agent-card.json", running.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    wire.assert_valid("AgentCard", &card);
    let extended = running
        .http
        .post(format!("{}/a2a", running.base))
        .bearer_auth("card-token")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(rpc(1, "GetExtendedAgentCard", Value::Null))
        .send()
        .await
        .unwrap();
    let extended: Value = extended.json().await.unwrap();
    wire.assert_valid("AgentCard", &extended["result"]);

    let push = json!({"url": hook_url, "token": "t"});
    let sent = rpc_result(
        &running,
        &wire,
        "SendMessage",
        json!({"message": user_message("hi"),
               "configuration": {"taskPushNotificationConfig": push}}),
    )
    .await;
    let task_id = sent["task"]["id"].as_str().unwrap().to_owned();
    let over_rest = rest_result(
        &running,
        &wire,
        "SendMessage",
        Method::POST,
        "/message:send",
        Some(json!({"message": user_message("there")})),
    )
    .await;
    assert!(over_rest["task"]["id"].is_string());
    // Webhook payloads are stream responses too.
    let delivered = tokio::time::timeout(Duration::from_secs(5), pushed.recv())
        .await
        .unwrap()
        .unwrap();
    wire.assert_valid("StreamResponse", &delivered);

    rpc_result(&running, &wire, "GetTask", json!({"id": task_id})).await;
    rest_result(
        &running,
        &wire,
        "GetTask",
        Method::GET,
        &format!("/tasks/{task_id}?historyLength=1"),
        None,
    )
    .await;
    rpc_result(
        &running,
        &wire,
        "ListTasks",
        json!({"includeArtifacts": true}),
    )
    .await;
    rest_result(
        &running,
        &wire,
        "ListTasks",
        Method::GET,
        "/tasks?pageSize=1",
        None,
    )
    .await;

    let config = json!({"taskId": task_id, "id": "c1", "url": "https://example.com/hook",
                        "authentication": {"scheme": "Bearer", "credentials": "x"}});
    rpc_result(&running, &wire, "CreateTaskPushNotificationConfig", config).await;
    rest_result(
        &running,
        &wire,
        "CreateTaskPushNotificationConfig",
        Method::POST,
        &format!("/tasks/{task_id}/pushNotificationConfigs"),
        Some(json!({"id": "c2", "url": "https://example.com/hook2"})),
    )
    .await;
    rpc_result(
        &running,
        &wire,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": "c1"}),
    )
    .await;
    rest_result(
        &running,
        &wire,
        "ListTaskPushNotificationConfigs",
        Method::GET,
        &format!("/tasks/{task_id}/pushNotificationConfigs"),
        None,
    )
    .await;
    rpc_result(
        &running,
        &wire,
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": "c1"}),
    )
    .await;

    for enveloped in [true, false] {
        let response = if enveloped {
            running
                .http
                .post(format!("{}/a2a", running.base))
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .header("A2A-Version", "1.0")
                .body(rpc(
                    2,
                    "SendStreamingMessage",
                    json!({"message": user_message("streamed")}),
                ))
        } else {
            running
                .http
                .post(format!("{}/a2a/v1/message:stream", running.base))
                .header("content-type", "application/a2a+json")
                .header("A2A-Version", "1.0")
                .body(json!({"message": user_message("streamed")}).to_string())
        }
        .send()
        .await
        .unwrap();
        let events = stream_events(&wire, response, enveloped).await;
        assert!(events.len() >= 3, "{events:?}");
    }

    let slow = rpc_result(
        &running,
        &wire,
        "SendMessage",
        json!({"message": user_message("slow"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let slow_id = slow["task"]["id"].as_str().unwrap().to_owned();
    let subscription = running
        .http
        .post(format!("{}/a2a/v1/tasks/{slow_id}:subscribe", running.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    let canceling = {
        let running_base = running.base.clone();
        let http = running.http.clone();
        let slow_id = slow_id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            http.post(format!("{running_base}/a2a/v1/tasks/{slow_id}:cancel"))
                .header("A2A-Version", "1.0")
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    let events = stream_events(&wire, subscription, false).await;
    assert_eq!(
        events.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    wire.assert_valid("Task", &canceling.await.unwrap());
}

#[tokio::test]
async fn every_0_3_json_rpc_answer_and_event_and_the_0_3_card_validate_against_the_pinned_schema() {
    let running = start_with(Options::default()).await;
    let validator = legacy_validator();
    let card: Value = running
        .http
        .get(format!("{}/.well-known/agent-card.json", running.base))
        .header("A2A-Version", "0.3")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_valid(&legacy_definition_validator("AgentCard"), &card);
    let message = |text: &str| {
        json!({"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
               "parts": [{"kind": "text", "text": text}, {"kind": "data", "data": {"k": 1}},
                         {"kind": "file", "file": {"uri": "https://example.com/f", "mimeType": "text/plain"}}]})
    };
    let sent = post_rpc(
        &running,
        &rpc(1, "message/send", json!({"message": message("hi")})),
        None,
    )
    .await;
    assert_valid(&validator, &sent.body);
    let task_id = sent.body["result"]["id"].as_str().unwrap().to_owned();
    let calls = [
        rpc(2, "tasks/get", json!({"id": task_id, "historyLength": 5})),
        rpc(
            3,
            "tasks/pushNotificationConfig/set",
            json!({"taskId": task_id, "pushNotificationConfig": {"id": "p", "url": "https://example.com/h"}}),
        ),
        rpc(
            4,
            "tasks/pushNotificationConfig/get",
            json!({"id": task_id, "pushNotificationConfigId": "p"}),
        ),
        rpc(
            5,
            "tasks/pushNotificationConfig/list",
            json!({"id": task_id}),
        ),
        rpc(
            6,
            "tasks/pushNotificationConfig/delete",
            json!({"id": task_id, "pushNotificationConfigId": "p"}),
        ),
        rpc(7, "tasks/cancel", json!({"id": task_id})),
        rpc(8, "tasks/get", json!({"id": "missing"})),
        rpc(9, "tasks/resubscribe", json!({"id": task_id})),
        rpc(10, "agent/getAuthenticatedExtendedCard", Value::Null),
        rpc(11, "no/such/method", json!({})),
        rpc(
            12,
            "message/send",
            json!({"message": {"kind": "message", "messageId": "m"}}),
        ),
    ];
    for call in calls {
        let answer = post_rpc(&running, &call, None).await;
        assert_valid(&validator, &answer.body);
    }
    let streamed = running
        .http
        .post(format!("{}/a2a", running.base))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(rpc(
            13,
            "message/stream",
            json!({"message": message("ask me")}),
        ))
        .send()
        .await
        .unwrap();
    let mut reader = SseReader::new(streamed);
    let mut kinds = Vec::new();
    while let Some((_, event)) = reader.next_json().await {
        assert_valid(&validator, &event);
        kinds.push(event["result"]["kind"].as_str().unwrap().to_owned());
    }
    assert_eq!(kinds, ["task", "status-update"]);
}

/// A webhook receiver on loopback; what it receives.
async fn webhook_receiver() -> (String, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let (sender, received) = tokio::sync::mpsc::unbounded_channel();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::Json<Value>| {
            let _ = sender.send(body.0);
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, receiver).await });
    (url, received)
}
