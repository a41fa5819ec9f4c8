//! A2A over real sockets, driven by the typed client: both bindings (JSON-RPC, HTTP+JSON) and
//! both revisions (1.0, 0.3 with its wire validated against the pinned 0.3.0 schema).

// Helpers of these tests fail the test the way an assertion does.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod a2a_support;

use std::sync::Arc;
use std::time::Duration;

use a2a_support::{
    Options, Running, assert_valid, legacy_validator, post_rpc, start, start_with, typed_message,
};
use futures::StreamExt as _;
use protocols_a2a::client::{self, JsonRpcTransport, RestTransport, WireRevision, a2a_error};
use protocols_a2a::error::A2aError;
use protocols_a2a::push::NOTIFICATION_TOKEN_HEADER;
use protocols_a2a::v1::RemoteAgent;
use protocols_a2a::v1::types::*;
use protocols_runtime::method::RpcClient;
use serde_json::{Value, json};

fn send_request(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        configuration: None,
        message: typed_message(text),
        metadata: Default::default(),
        tenant: None,
    }
}

fn task_of(response: SendMessageResponse) -> Task {
    match response.payload {
        SendMessageResponsePayload::Task(task) => task,
        SendMessageResponsePayload::Message(_) => panic!("expected a task"),
    }
}

fn artifact_text(task: &Task) -> String {
    task.artifacts
        .iter()
        .flat_map(|artifact| &artifact.parts)
        .filter_map(|part| match &part.content {
            PartContent::Text(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

async fn agents(running: &Running) -> (RemoteAgent<JsonRpcTransport>, RemoteAgent<RestTransport>) {
    let card = client::discover(&running.http, &running.base)
        .await
        .unwrap();
    (
        client::jsonrpc_agent(&running.http, &card).unwrap(),
        client::rest_agent(&running.http, &card).unwrap(),
    )
}

fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        history_length: None,
        id: id.into(),
        tenant: None,
    }
}

fn cancel(id: &str) -> CancelTaskRequest {
    CancelTaskRequest {
        id: id.into(),
        metadata: Default::default(),
        tenant: None,
    }
}

#[tokio::test]
async fn card_lists_absolute_interfaces_for_both_bindings_and_both_revisions() {
    let running = start().await;
    let card = client::discover(&running.http, &running.base)
        .await
        .unwrap();
    let urls: Vec<_> = card
        .supported_interfaces
        .iter()
        .map(|i| {
            (
                i.protocol_binding.as_str(),
                i.protocol_version.as_str(),
                i.url.clone(),
            )
        })
        .collect();
    let (rpc, rest) = (
        format!("{}/a2a", running.base),
        format!("{}/a2a/v1", running.base),
    );
    assert_eq!(
        urls,
        [
            ("JSONRPC", "1.0", rpc.clone()),
            ("HTTP+JSON", "1.0", rest.clone()),
            ("JSONRPC", "0.3", rpc),
            ("HTTP+JSON", "0.3", rest)
        ]
    );
}

#[tokio::test]
async fn send_get_and_list_work_on_both_bindings() {
    let running = start().await;
    let (rpc, rest) = agents(&running).await;
    let over_rpc = task_of(rpc.send_message(send_request("hi")).await.unwrap());
    assert_eq!(over_rpc.status.state, TaskState::TaskStateCompleted);
    assert_eq!(artifact_text(&over_rpc), "echo: hi");
    let over_rest = task_of(rest.send_message(send_request("there")).await.unwrap());
    assert_eq!(artifact_text(&over_rest), "echo: there");
    let fetched = rest.get_task(get(&over_rpc.id)).await.unwrap();
    assert_eq!(fetched.id, over_rpc.id);
    let trimmed = rpc
        .get_task(GetTaskRequest {
            history_length: Some(0),
            ..get(&over_rpc.id)
        })
        .await
        .unwrap();
    assert!(trimmed.history.is_empty());
    let listed = rest
        .list_tasks(Some(ListTasksRequest {
            page_size: Some(1),
            ..ListTasksRequest::default()
        }))
        .await
        .unwrap();
    assert_eq!((listed.tasks.len(), listed.total_size), (1, 2));
    assert_eq!(listed.tasks[0].id, over_rest.id);
    let next = rpc
        .list_tasks(Some(ListTasksRequest {
            page_size: Some(1),
            page_token: Some(listed.next_page_token),
            ..ListTasksRequest::default()
        }))
        .await
        .unwrap();
    assert_eq!(next.tasks[0].id, over_rpc.id);
    assert!(next.next_page_token.is_empty());
}

fn kinds(events: &[StreamResponse]) -> Vec<&'static str> {
    events
        .iter()
        .map(|event| match &event.payload {
            StreamResponsePayload::Task(_) => "task",
            StreamResponsePayload::Message(_) => "message",
            StreamResponsePayload::StatusUpdate(update)
                if update.status.state == TaskState::TaskStateCompleted =>
            {
                "completed"
            }
            StreamResponsePayload::StatusUpdate(_) => "status",
            StreamResponsePayload::ArtifactUpdate(_) => "artifact",
        })
        .collect()
}

#[tokio::test]
async fn streaming_sends_task_status_artifact_and_final_status_on_both_bindings() {
    let running = start().await;
    let (rpc, rest) = agents(&running).await;
    for events in [
        rpc.send_streaming_message(send_request("hi"))
            .await
            .unwrap(),
        rest.send_streaming_message(send_request("hi"))
            .await
            .unwrap(),
    ] {
        let events: Vec<StreamResponse> = events.map(Result::unwrap).collect().await;
        assert_eq!(kinds(&events), ["task", "status", "artifact", "completed"]);
    }
}

#[tokio::test]
async fn cancel_stops_a_running_task_and_a_finished_task_is_not_cancelable() {
    let running = start().await;
    let (rpc, rest) = agents(&running).await;
    let mut request = send_request("slow one");
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: Some(true),
        ..Default::default()
    });
    let task = task_of(rpc.send_message(request).await.unwrap());
    let canceled = rest.cancel_task(cancel(&task.id)).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::TaskStateCanceled);
    for error in [
        rpc.cancel_task(cancel(&task.id)).await.unwrap_err(),
        rest.cancel_task(cancel(&task.id)).await.unwrap_err(),
    ] {
        assert_eq!(a2a_error(&error).map(|e| e.code()), Some(-32002));
    }
}

#[tokio::test]
async fn subscribe_mid_stream_sees_the_current_task_then_the_rest() {
    let running = start().await;
    let (rpc, rest) = agents(&running).await;
    let mut first = rpc
        .send_streaming_message(send_request("slow two"))
        .await
        .unwrap();
    let StreamResponsePayload::Task(task) = first.next().await.unwrap().unwrap().payload else {
        panic!("task first")
    };
    first.next().await.unwrap().unwrap();
    let subscribed = rest
        .subscribe_to_task(SubscribeToTaskRequest {
            id: task.id.clone(),
            tenant: None,
        })
        .await
        .unwrap();
    let mut subscribed = subscribed.map(Result::unwrap);
    let StreamResponsePayload::Task(snapshot) = subscribed.next().await.unwrap().payload else {
        panic!("snapshot first")
    };
    assert_eq!(snapshot.status.state, TaskState::TaskStateWorking);
    rpc.cancel_task(cancel(&task.id)).await.unwrap();
    let rest_of: Vec<StreamResponse> = subscribed.collect().await;
    let StreamResponsePayload::StatusUpdate(last) = &rest_of.last().unwrap().payload else {
        panic!("status last")
    };
    assert_eq!(last.status.state, TaskState::TaskStateCanceled);
    // The refusal arrives as the call's error, or as the stream's only item.
    let error = match rpc
        .subscribe_to_task(SubscribeToTaskRequest {
            id: task.id,
            tenant: None,
        })
        .await
    {
        Err(error) => error,
        Ok(mut stream) => stream.next().await.unwrap().err().unwrap(),
    };
    assert_eq!(a2a_error(&error).map(|e| e.code()), Some(-32004));
}

#[tokio::test]
async fn unknown_task_is_task_not_found_on_both_bindings_and_404_over_rest() {
    let running = start().await;
    let (rpc, rest) = agents(&running).await;
    for error in [
        rpc.get_task(get("nope")).await.unwrap_err(),
        rest.get_task(get("nope")).await.unwrap_err(),
    ] {
        assert!(
            matches!(a2a_error(&error), Some(A2aError::TaskNotFound(_))),
            "{error}"
        );
    }
    let response = running
        .http
        .get(format!("{}/a2a/v1/tasks/nope", running.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
}

/// The body of a JSON-RPC answer.
async fn post_body(running: &Running, body: &str, version: Option<&str>) -> Value {
    post_rpc(running, body, version).await.body
}

#[tokio::test]
async fn json_rpc_errors_parse_unknown_method_invalid_params_and_version() {
    let running = start().await;
    assert_eq!(
        post_body(&running, "{not json", Some("1.0")).await["error"]["code"],
        -32700
    );
    let unknown =
        json!({"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod", "params": {}}).to_string();
    assert_eq!(
        post_body(&running, &unknown, Some("1.0")).await["error"]["code"],
        -32601
    );
    // A 1.0 name is unknown to a 0.3 caller (no version header).
    let v1_name =
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "x"}}).to_string();
    assert_eq!(
        post_body(&running, &v1_name, None).await["error"]["code"],
        -32601
    );
    let bad =
        json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": 5}}).to_string();
    assert_eq!(
        post_body(&running, &bad, Some("1.0")).await["error"]["code"],
        -32602
    );
    let future =
        json!({"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": "x"}}).to_string();
    assert_eq!(
        post_body(&running, &future, Some("9.9")).await["error"]["code"],
        -32009
    );
    let card = json!({"jsonrpc": "2.0", "id": 5, "method": "GetExtendedAgentCard"}).to_string();
    assert_eq!(
        post_body(&running, &card, Some("1.0")).await["error"]["code"],
        -32007
    );
    let listing =
        json!({"jsonrpc": "2.0", "id": 6, "method": "ListTasks", "params": {"pageSize": 1000}})
            .to_string();
    assert_eq!(
        post_body(&running, &listing, Some("1.0")).await["error"]["code"],
        -32602
    );
}

#[tokio::test]
async fn push_config_crud_and_a_webhook_delivered_to_a_local_receiver() {
    let running = start().await;
    let (rpc, rest) = agents(&running).await;
    let (received_tx, mut received) =
        tokio::sync::mpsc::unbounded_channel::<(Option<String>, Value)>();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: http::HeaderMap, body: axum::Json<Value>| {
            let token = headers
                .get(NOTIFICATION_TOKEN_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            received_tx.send((token, body.0)).unwrap();
            async { "ok" }
        }),
    );
    let hook_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook_url = format!("http://{}/hook", hook_listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(hook_listener, receiver).await });

    let mut request = send_request("slow three");
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: Some(true),
        ..Default::default()
    });
    let task = task_of(rpc.send_message(request).await.unwrap());
    let config = TaskPushNotificationConfig {
        id: Some("c1".into()),
        task_id: Some(task.id.clone()),
        token: Some("secret".into()),
        url: hook_url,
        ..Default::default()
    };
    let created = rest
        .create_task_push_notification_config(config)
        .await
        .unwrap();
    assert_eq!(created.id.as_deref(), Some("c1"));
    let fetched = rpc
        .get_task_push_notification_config(GetTaskPushNotificationConfigRequest {
            id: "c1".into(),
            task_id: task.id.clone(),
            tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(fetched.token.as_deref(), Some("secret"));
    let listed = rest
        .list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest {
            task_id: task.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.configs.len(), 1);

    let (token, event) = tokio::time::timeout(Duration::from_secs(5), received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(token.as_deref(), Some("secret"));
    assert_eq!(event["statusUpdate"]["taskId"], task.id.as_str());

    rpc.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest {
        id: "c1".into(),
        task_id: task.id.clone(),
        tenant: None,
    })
    .await
    .unwrap();
    let after = rpc
        .list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest {
            task_id: task.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(after.configs.is_empty());
    rpc.cancel_task(cancel(&task.id)).await.unwrap();
}

#[tokio::test]
async fn the_0_3_binding_answers_in_0_3_shapes_that_validate_against_the_pinned_schema() {
    let running = start().await;
    let validator = legacy_validator();
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}});
    let answer = post_body(&running, &send.to_string(), None).await;
    assert_valid(&validator, &answer);
    assert_eq!(answer["result"]["kind"], "task");
    assert_eq!(answer["result"]["status"]["state"], "completed");
    let task_id = answer["result"]["id"].as_str().unwrap().to_owned();
    let answers = [
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task_id, "historyLength": 1}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": task_id}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"id": "missing"}}),
    ];
    let mut codes = Vec::new();
    for request in answers {
        let answer = post_body(&running, &request.to_string(), None).await;
        assert_valid(&validator, &answer);
        codes.push(answer["error"]["code"].as_i64());
    }
    assert_eq!(codes, [None, Some(-32002), Some(-32001)]);

    // Streaming: each SSE event is a 0.3 JSON-RPC response.
    let card = client::discover(&running.http, &running.base)
        .await
        .unwrap();
    let transport = JsonRpcTransport::new(
        running.http.clone(),
        client::interface_url(&card, "JSONRPC").unwrap(),
        WireRevision::V0_3,
    );
    let params = serde_json::value::to_raw_value(&json!({"message": {
        "kind": "message", "messageId": "m2", "role": "user", "parts": [{"kind": "text", "text": "yo"}]}}))
    .unwrap();
    let events: Vec<Value> = transport
        .call_streaming("message/stream", Some(params))
        .await
        .unwrap()
        .map(|raw| serde_json::from_str(raw.unwrap().get()).unwrap())
        .collect()
        .await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["task", "status-update", "artifact-update", "status-update"]
    );
    assert_eq!(events.last().unwrap()["final"], true);
    for (n, event) in events.into_iter().enumerate() {
        assert_valid(
            &validator,
            &json!({"jsonrpc": "2.0", "id": n, "result": event}),
        );
    }

    // And the generated 0.3 typed client decodes them.
    let legacy = client::legacy_jsonrpc_agent(&running.http, &card).unwrap();
    let got = legacy
        .tasks_get(serde_json::from_value(json!({"id": task_id})).unwrap())
        .await
        .unwrap();
    assert_eq!(got.id, task_id);
}

#[tokio::test]
async fn extended_card_is_served_only_to_an_authenticated_caller_on_both_bindings() {
    let running = start_with(Options {
        extended_card_token: Some("s3cret"),
        ..Options::default()
    })
    .await;
    let card = client::discover(&running.http, &running.base)
        .await
        .unwrap();
    assert_eq!(card.capabilities.extended_agent_card, Some(true));
    let (rpc, rest) = agents(&running).await;
    for error in [
        rpc.get_extended_agent_card(None).await.unwrap_err(),
        rest.get_extended_agent_card(None).await.unwrap_err(),
    ] {
        assert_eq!(
            a2a_error(&error),
            Some(A2aError::Unauthenticated),
            "{error}"
        );
    }
    let response = running
        .http
        .get(format!("{}/a2a/v1/extendedAgentCard", running.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let mut headers = http::HeaderMap::new();
    headers.insert("authorization", "Bearer s3cret".parse().unwrap());
    let url = client::interface_url(&card, "JSONRPC").unwrap();
    let authed = RemoteAgent::new(
        JsonRpcTransport::new(running.http.clone(), url, WireRevision::V1)
            .with_headers(headers.clone()),
    );
    assert_eq!(
        authed.get_extended_agent_card(None).await.unwrap().name,
        "test agent, extended"
    );
    let url = client::interface_url(&card, "HTTP+JSON").unwrap();
    let authed = RemoteAgent::new(
        RestTransport::new(running.http.clone(), url, WireRevision::V1).with_headers(headers),
    );
    assert_eq!(
        authed.get_extended_agent_card(None).await.unwrap().name,
        "test agent, extended"
    );
}

#[tokio::test]
async fn a_webhook_on_a_loopback_address_is_refused_by_default() {
    let running = start_with(Options {
        strict_webhooks: true,
        ..Options::default()
    })
    .await;
    let (rpc, _) = agents(&running).await;
    let task = task_of(rpc.send_message(send_request("hi")).await.unwrap());
    let config = TaskPushNotificationConfig {
        task_id: Some(task.id.clone()),
        url: "http://127.0.0.1:9/hook".into(),
        ..Default::default()
    };
    let error = rpc
        .create_task_push_notification_config(config)
        .await
        .unwrap_err();
    assert!(
        matches!(a2a_error(&error), Some(A2aError::InvalidParams(_))),
        "{error}"
    );
}

#[tokio::test]
async fn a_failed_webhook_delivery_is_retried_until_it_succeeds() {
    let running = start().await;
    let (rpc, _) = agents(&running).await;
    let bodies = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = Arc::clone(&bodies);
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::Json<Value>| {
            let mut seen = seen.lock().unwrap();
            seen.push(body.0);
            // The first delivery fails; only a retry can bring its event again.
            let status = if seen.len() == 1 {
                http::StatusCode::SERVICE_UNAVAILABLE
            } else {
                http::StatusCode::OK
            };
            async move { status }
        }),
    );
    let hook_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook_url = format!("http://{}/hook", hook_listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(hook_listener, receiver).await });
    let mut request = send_request("hi");
    request.configuration = Some(SendMessageConfiguration {
        task_push_notification_config: Some(TaskPushNotificationConfig {
            url: hook_url,
            ..Default::default()
        }),
        ..Default::default()
    });
    rpc.send_message(request).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        {
            let bodies = bodies.lock().unwrap();
            if bodies.len() > 1 && bodies[1..].contains(&bodies[0]) {
                break;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the refused event never came again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn tenant_routes_reach_the_same_methods() {
    let running = start().await;
    let (rpc, _) = agents(&running).await;
    let task = task_of(rpc.send_message(send_request("hi")).await.unwrap());
    let response = running
        .http
        .get(format!("{}/a2a/v1/acme/tasks/{}", running.base, task.id))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/a2a+json");
    let fetched: Task = response.json().await.unwrap();
    assert_eq!(fetched.id, task.id);
    let wrong_verb = running
        .http
        .delete(format!("{}/a2a/v1/message:send", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_verb.status(), 405);
}

#[tokio::test]
async fn the_0_3_rest_binding_takes_either_0_3_body_shape_and_answers_in_the_proto_envelope() {
    let running = start().await;
    let json_rpc_shaped = json!({"message": {"kind": "message", "messageId": "m9", "role": "user",
        "parts": [{"kind": "text", "text": "rest"}]}});
    let proto_shaped = json!({"message": {"messageId": "m10", "role": "ROLE_USER",
        "content": [{"text": "rest"}]}});
    for body in [json_rpc_shaped, proto_shaped] {
        let response = running
            .http
            .post(format!("{}/a2a/v1/v1/message:send", running.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "application/json");
        let answer: Value = response.json().await.unwrap();
        let task = &answer["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: rest");
        assert_eq!(task["history"][0]["role"], "ROLE_USER");
        assert_eq!(task["history"][0]["content"][0]["text"], "rest");
    }
}

#[tokio::test]
async fn push_config_crud_and_resubscribe_in_0_3_shapes_validate_against_the_pinned_schema() {
    let running = start().await;
    let validator = legacy_validator();
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": "m3", "role": "user",
                    "parts": [{"kind": "text", "text": "slow five"}]},
        "configuration": {"blocking": false}}});
    let answer = post_body(&running, &send.to_string(), None).await;
    assert_valid(&validator, &answer);
    let task_id = answer["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(answer["result"]["status"]["state"], "submitted");

    let calls = [
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/pushNotificationConfig/set", "params": {
            "taskId": task_id, "pushNotificationConfig": {"url": "http://127.0.0.1:9/hook", "token": "t",
            "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/pushNotificationConfig/get", "params": {"id": task_id}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/pushNotificationConfig/list", "params": {"id": task_id}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/pushNotificationConfig/delete", "params": {
            "id": task_id, "pushNotificationConfigId": task_id}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/pushNotificationConfig/list", "params": {"id": task_id}}),
    ];
    let mut answers = Vec::new();
    for call in calls {
        let answer = post_body(&running, &call.to_string(), None).await;
        assert_valid(&validator, &answer);
        answers.push(answer["result"].clone());
    }
    assert_eq!(answers[0]["pushNotificationConfig"]["id"], task_id.as_str());
    assert_eq!(
        answers[1]["pushNotificationConfig"]["authentication"]["schemes"],
        json!(["Bearer"])
    );
    assert_eq!(answers[2].as_array().map(Vec::len), Some(1));
    assert_eq!(answers[3], Value::Null);
    assert_eq!(answers[4], json!([]));

    let card = client::discover(&running.http, &running.base)
        .await
        .unwrap();
    let transport = JsonRpcTransport::new(
        running.http.clone(),
        client::interface_url(&card, "JSONRPC").unwrap(),
        WireRevision::V0_3,
    );
    let params = serde_json::value::to_raw_value(&json!({"id": task_id})).unwrap();
    let mut events = transport
        .call_streaming("tasks/resubscribe", Some(params))
        .await
        .unwrap();
    let first: Value = serde_json::from_str(events.next().await.unwrap().unwrap().get()).unwrap();
    assert_eq!(first["kind"], "task");
    let cancel =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/cancel", "params": {"id": task_id}});
    let canceled = post_body(&running, &cancel.to_string(), None).await;
    assert_valid(&validator, &canceled);
    assert_eq!(canceled["result"]["status"]["state"], "canceled");
    let rest: Vec<Value> = events
        .map(|raw| serde_json::from_str(raw.unwrap().get()).unwrap())
        .collect()
        .await;
    let last = rest.last().unwrap();
    assert_eq!(
        (last["status"]["state"].as_str(), last["final"].as_bool()),
        (Some("canceled"), Some(true))
    );
    for (n, event) in std::iter::once(first).chain(rest).enumerate() {
        assert_valid(
            &validator,
            &json!({"jsonrpc": "2.0", "id": n, "result": event}),
        );
    }
}
