//! The A2A 1.0.1 specification's rules the official clients rely on, each over a real socket
//! and named as the rule it proves: error details, binding verbs and statuses, idempotent
//! deletes, card caching and revisions, ListTasks' and the messages' REQUIRED fields, the 0.3
//! REST binding's shapes, and JSON-RPC codes for what they are.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod a2a_support;

use a2a_support::{
    Running, V1Wire, assert_valid, legacy_definition_validator, post_rpc, rest, rpc, start,
    user_message,
};
use http::{Method, StatusCode};
use serde_json::{Value, json};

const V1: Option<&str> = Some("1.0");

async fn send(running: &Running, text: &str) -> Value {
    let answer = post_rpc(
        running,
        &rpc(1, "SendMessage", json!({"message": user_message(text)})),
        V1,
    )
    .await;
    answer.body["result"]["task"].clone()
}

async fn send_in_context(running: &Running, text: &str, context: &str) -> Value {
    let mut message = user_message(text);
    message["contextId"] = json!(context);
    let answer = post_rpc(
        running,
        &rpc(1, "SendMessage", json!({"message": message})),
        V1,
    )
    .await;
    answer.body["result"]["task"].clone()
}

// 1.

#[tokio::test]
async fn json_rpc_error_data_is_an_array_of_typed_details_with_an_error_info() {
    let running = start().await;
    let answer = post_rpc(&running, &rpc(1, "GetTask", json!({"id": "nope"})), V1).await;
    assert_eq!(answer.code(), Some(-32001));
    let data = &answer.body["error"]["data"];
    assert_eq!(
        data,
        &json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                 "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}])
    );
}

// 2.

#[tokio::test]
async fn subscribe_over_rest_is_served_on_post_as_the_binding_table_says_and_on_get() {
    let running = start().await;
    let working = post_rpc(
        &running,
        &rpc(
            3,
            "SendMessage",
            json!({"message": user_message("slow again"), "configuration": {"returnImmediately": true}}),
        ),
        V1,
    )
    .await;
    let id = working.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for verb in [Method::POST, Method::GET] {
        let response = running
            .http
            .request(
                verb.clone(),
                format!("{}/a2a/v1/tasks/{id}:subscribe", running.base),
            )
            .header("A2A-Version", "1.0")
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{verb}");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut events = protocols_testkit::SseReader::new(response);
        let (_, first) = events.next_json().await.unwrap();
        assert_eq!(first["task"]["id"], id.as_str(), "{verb}");
    }
    let _ = post_rpc(&running, &rpc(4, "CancelTask", json!({"id": id})), V1).await;
}

// 4.

#[tokio::test]
async fn deleting_a_push_config_is_idempotent_on_both_bindings() {
    let running = start().await;
    let task = send(&running, "hi").await;
    let id = task["id"].as_str().unwrap();
    let created = post_rpc(
        &running,
        &rpc(
            2,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c1", "url": "https://example.com/hook"}),
        ),
        V1,
    )
    .await;
    assert_eq!(created.body["result"]["id"], "c1", "{:?}", created.body);
    for n in 0..2 {
        let deleted = post_rpc(
            &running,
            &rpc(
                3,
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": id, "id": "c1"}),
            ),
            V1,
        )
        .await;
        assert_eq!(
            deleted.body["result"],
            json!({}),
            "delete {n}: {:?}",
            deleted.body
        );
        let over_rest = rest(
            &running,
            Method::DELETE,
            &format!("/tasks/{id}/pushNotificationConfigs/c1"),
            None,
            V1,
        )
        .await;
        assert_eq!(over_rest.status, 200, "delete {n} over REST");
    }
    // The task itself must still exist.
    let gone = post_rpc(
        &running,
        &rpc(
            4,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "nope", "id": "c1"}),
        ),
        V1,
    )
    .await;
    assert_eq!(gone.code(), Some(-32001));
}

// 5.

#[tokio::test]
async fn the_agent_card_carries_max_age_and_an_etag_and_a_matching_if_none_match_is_304() {
    let running = start().await;
    let url = format!("{}/.well-known/agent-card.json", running.base);
    let first = running.http.get(&url).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let cache_control = first.headers()["cache-control"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cache_control.contains("max-age="), "{cache_control}");
    assert!(!cache_control.contains("no-store"), "{cache_control}");
    let etag = first.headers()["etag"].clone();
    // Every security header but the cache policy is still stamped.
    assert_eq!(first.headers()["x-content-type-options"], "nosniff");
    let again = running
        .http
        .get(&url)
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["etag"], etag);
    assert!(again.bytes().await.unwrap().is_empty());
    let stale = running
        .http
        .get(&url)
        .header("if-none-match", "\"something-else\"")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 200);
    // The 0.3 card is another document, with another tag.
    let legacy = running
        .http
        .get(&url)
        .header("A2A-Version", "0.3")
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(legacy.status(), 200);
    assert_ne!(legacy.headers()["etag"], etag);
}

// 6.

#[tokio::test]
async fn a_0_3_rest_client_sends_proto_json_and_reads_0_3_error_objects() {
    let running = start().await;
    let body = json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
        "content": [{"text": "hello"}]}, "configuration": {"blocking": true}});
    let sent = rest(&running, Method::POST, "/v1/message:send", Some(body), None).await;
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    let task = &sent.body["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let id = task["id"].as_str().unwrap();
    let fetched = rest(
        &running,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
        None,
    )
    .await;
    assert_eq!(fetched.body["id"], id);
    let missing = rest(&running, Method::GET, "/v1/tasks/nope", None, Some("0.3")).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["code"], -32001, "{:?}", missing.body);
    assert!(missing.body["message"].as_str().unwrap().contains("`nope`"));
    // The 0.3 error object is the schema's own.
    assert_valid(
        &legacy_definition_validator("TaskNotFoundError"),
        &missing.body,
    );
}

// 7.

#[tokio::test]
async fn an_empty_listing_still_carries_its_required_tasks_field() {
    let running = start().await;
    let answer = post_rpc(
        &running,
        &rpc(1, "ListTasks", json!({"contextId": "nothing-here"})),
        V1,
    )
    .await;
    assert_eq!(
        answer.body["result"]["tasks"],
        json!([]),
        "{:?}",
        answer.body
    );
    V1Wire::new().assert_valid("ListTasksResponse", &answer.body["result"]);
}

#[tokio::test]
async fn page_size_zero_is_invalid_params() {
    let running = start().await;
    let answer = post_rpc(&running, &rpc(1, "ListTasks", json!({"pageSize": 0})), V1).await;
    assert_eq!(answer.code(), Some(-32602));
}

#[tokio::test]
async fn listing_by_context_id_returns_only_that_contexts_tasks() {
    let running = start().await;
    send_in_context(&running, "one", "ctx-a").await;
    send_in_context(&running, "two", "ctx-b").await;
    send_in_context(&running, "three", "ctx-a").await;
    for (contexts, params) in [
        (vec!["ctx-a", "ctx-a"], Some(json!({"contextId": "ctx-a"}))),
        (vec!["ctx-b"], Some(json!({"contextId": "ctx-b"}))),
    ] {
        let answer = post_rpc(&running, &rpc(1, "ListTasks", params.unwrap()), V1).await;
        let listed: Vec<&str> = answer.body["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|task| task["contextId"].as_str().unwrap())
            .collect();
        assert_eq!(listed, contexts);
    }
    let over_rest = rest(&running, Method::GET, "/tasks?contextId=ctx-b", None, V1).await;
    assert_eq!(over_rest.body["tasks"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_message_without_its_required_role_is_invalid_params_in_both_revisions() {
    let running = start().await;
    let v1 = post_rpc(
        &running,
        &rpc(
            1,
            "SendMessage",
            json!({"message": {"messageId": "m", "parts": [{"text": "hi"}]}}),
        ),
        V1,
    )
    .await;
    assert_eq!(v1.code(), Some(-32602));
    let legacy = post_rpc(
        &running,
        &rpc(
            2,
            "message/send",
            json!({"message": {"kind": "message", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!(legacy.code(), Some(-32602));
}

#[tokio::test]
async fn get_task_and_get_push_config_without_their_required_id_are_invalid_params() {
    let running = start().await;
    let task = send(&running, "hi").await;
    for (method, params) in [
        ("GetTask", json!({})),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": task["id"]}),
        ),
        ("GetTaskPushNotificationConfig", json!({"id": "c"})),
        ("CancelTask", json!({})),
        ("SubscribeToTask", json!({})),
    ] {
        let answer = post_rpc(&running, &rpc(1, method, params.clone()), V1).await;
        assert_eq!(answer.code(), Some(-32602), "{method} {params}");
    }
}

#[tokio::test]
async fn subscribing_to_a_finished_task_is_a_plain_json_rpc_error_not_a_stream() {
    let running = start().await;
    let task = send(&running, "done").await;
    let response = running
        .http
        .post(format!("{}/a2a", running.base))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("A2A-Version", "1.0")
        .body(rpc(2, "SubscribeToTask", json!({"id": task["id"]})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32004);
}

#[tokio::test]
async fn json_rpc_parse_errors_and_invalid_requests_go_out_with_200_like_every_json_rpc_error() {
    let running = start().await;
    for (body, code) in [
        ("{not json", -32700),
        (
            r#"{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}"#,
            -32600,
        ),
        (
            r#"[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]"#,
            -32600,
        ),
        (&rpc(1, "NoSuchMethod", json!({})), -32601),
        (&rpc(1, "GetTask", json!({"id": "x"})), -32001),
    ] {
        let answer = post_rpc(&running, body, V1).await;
        assert_eq!(answer.status, 200, "{body}");
        assert_eq!(answer.code(), Some(code), "{body}");
    }
}

// 8.

#[tokio::test]
async fn http_refusals_carry_json_rpc_codes_for_what_they_are_and_rest_routes_their_own_body() {
    let running = start().await;
    let get_rpc = running
        .http
        .get(format!("{}/a2a", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(get_rpc.status(), 405);
    let body: Value = get_rpc.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32601);
    let wrong_type = running
        .http
        .post(format!("{}/a2a", running.base))
        .header("content-type", "text/plain")
        .body(rpc(1, "GetTask", json!({"id": "x"})))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), 415);
    let body: Value = wrong_type.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);

    let unknown_path = running
        .http
        .post(format!("{}/a2a/no-such-path", running.base))
        .header("content-type", "application/json")
        .body(rpc(1, "GetTask", json!({"id": "x"})))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown_path.status(), 404);
    let body: Value = unknown_path.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32601);

    let wrong_verb = rest(&running, Method::DELETE, "/message:send", None, V1).await;
    assert_eq!(wrong_verb.status, 405);
    assert_eq!(wrong_verb.headers["allow"], "POST");
    assert_eq!(wrong_verb.body["error"]["code"], 405);
    assert_eq!(
        wrong_verb.body["error"]["details"][0]["reason"],
        "METHOD_NOT_FOUND"
    );
    let unknown = rest(&running, Method::GET, "/no/such/route", None, V1).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["error"]["status"], "NOT_FOUND");
    let rest_type = running
        .http
        .post(format!("{}/a2a/v1/message:send", running.base))
        .header("A2A-Version", "1.0")
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(rest_type.status(), 415);
    let body: Value = rest_type.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "INVALID_REQUEST");
    // The same refusal in 0.3's REST shape.
    let legacy = rest(&running, Method::DELETE, "/v1/message:send", None, None).await;
    assert_eq!(
        (legacy.status.as_u16(), &legacy.body["code"]),
        (405, &json!(-32601))
    );
}

// 9.

#[tokio::test]
async fn the_1_0_card_is_a_valid_1_0_card_announcing_0_3_as_interfaces_and_0_3_clients_read_a_0_3_card()
 {
    let running = start().await;
    let url = format!("{}/.well-known/agent-card.json", running.base);
    for version in [None, V1] {
        let mut request = running.http.get(&url);
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        let card: Value = request.send().await.unwrap().json().await.unwrap();
        V1Wire::new().assert_valid("AgentCard", &card);
        for field in ["url", "preferredTransport", "protocolVersion"] {
            assert_eq!(card.get(field), None, "{field} in the 1.0 card");
        }
        let versions: Vec<&str> = card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|iface| iface["protocolVersion"].as_str().unwrap())
            .collect();
        assert_eq!(versions, ["1.0", "1.0", "0.3", "0.3"]);
    }
    let legacy: Value = running
        .http
        .get(&url)
        .header("A2A-Version", "0.3")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_valid(&legacy_definition_validator("AgentCard"), &legacy);
    assert_eq!(legacy["url"], format!("{}/a2a", running.base));
    assert_eq!(legacy["preferredTransport"], "JSONRPC");
}
