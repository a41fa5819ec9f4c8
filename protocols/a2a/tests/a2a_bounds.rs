//! No client can take the A2A agent down, over real sockets: input that once reached a panic
//! gets an error answer on a connection that lives on; a caller's value comes back quoted once
//! and bounded; the task store keeps to its bounds (tasks and bytes per owner and in all, a
//! retention for finished tasks, push configs per task), and a bound only live work fills is
//! refused with `429` (one owner's share) or `503` (the store's), `Retry-After` included, on
//! both bindings.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod a2a_support;

use std::time::Duration;

use a2a_support::{Options, Running, post_rpc, post_rpc_as, rest, rpc, start_with, user_message};
use http::{Method, StatusCode};
use protocols_a2a::store::TaskLimits;
use serde_json::{Value, json};

const V1: Option<&str> = Some("1.0");

fn limited(limits: TaskLimits) -> Options {
    Options {
        limits: Some(limits),
        ..Options::default()
    }
}

/// Starts a slow task without waiting for it; its id.
async fn start_slow(running: &Running, token: Option<&str>) -> String {
    let answer = post_rpc_as(
        running,
        &rpc(
            1,
            "SendMessage",
            json!({"message": user_message("slow work"), "configuration": {"returnImmediately": true}}),
        ),
        V1,
        token,
    )
    .await;
    answer.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{:?}", answer.body))
        .to_owned()
}

async fn cancel(running: &Running, id: &str, token: Option<&str>) {
    let _ = post_rpc_as(running, &rpc(9, "CancelTask", json!({"id": id})), V1, token).await;
}

fn reason(details: &Value) -> Option<&str> {
    details.get(0)?.get("reason")?.as_str()
}

#[tokio::test]
async fn input_that_once_reached_a_panic_is_answered_and_the_connection_serves_on() {
    let running = start_with(Options::default()).await;
    let task = post_rpc(
        &running,
        &rpc(1, "SendMessage", json!({"message": user_message("hi")})),
        V1,
    )
    .await;
    let task_id = task.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bodies = [
        r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":[]}"#.to_owned(),
        rpc(
            2,
            "message/send",
            json!({"message": {"kind": "message", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]}}),
        ),
        rpc(
            3,
            "tasks/pushNotificationConfig/set",
            json!({"taskId": task_id}),
        ),
        rpc(4, "tasks/get", json!([1, 2])),
        rpc(
            5,
            "message/send",
            json!({"message": {"role": "user", "parts": "not a list"}}),
        ),
    ];
    for body in &bodies {
        let answer = post_rpc(&running, body, None).await;
        assert_eq!(answer.status, 200, "{body}");
        assert_eq!(answer.code(), Some(-32602), "{body}: {:?}", answer.body);
    }
    // The same client, the same pooled connection, still served.
    let after = post_rpc(&running, &rpc(6, "tasks/get", json!({"id": task_id})), None).await;
    assert_eq!(after.body["result"]["id"], task_id.as_str());
}

#[tokio::test]
async fn a_callers_value_in_an_error_is_quoted_once_and_bounded_on_every_binding() {
    let running = start_with(Options::default()).await;
    let id = "q".repeat(100);
    let over_rpc = post_rpc(&running, &rpc(1, "GetTask", json!({"id": id})), V1).await;
    let over_legacy = post_rpc(&running, &rpc(2, "tasks/get", json!({"id": id})), None).await;
    let over_rest = rest(&running, Method::GET, &format!("/tasks/{id}"), None, V1).await;
    let messages = [
        over_rpc.body["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned(),
        over_legacy.body["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned(),
        over_rest.body["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned(),
    ];
    for message in messages {
        assert_eq!(message.matches("task").count(), 1, "{message}");
        assert_eq!(message.matches("not found").count(), 1, "{message}");
        let quoted = message.split('`').nth(1).unwrap();
        assert!(quoted.len() <= 64 && quoted.ends_with('…'), "{message}");
    }
    let control = post_rpc(
        &running,
        &rpc(3, "GetTask", json!({"id": "a\nb\u{1b}[31m"})),
        V1,
    )
    .await;
    let message = control.body["error"]["message"].as_str().unwrap();
    assert!(!message.chars().any(char::is_control), "{message:?}");
}

#[tokio::test]
async fn an_owner_whose_share_is_live_work_is_refused_with_429_and_retry_after_on_both_bindings() {
    let running = start_with(limited(TaskLimits::default().max_tasks_per_owner(2))).await;
    let first = start_slow(&running, None).await;
    let second = start_slow(&running, None).await;
    let refused = post_rpc(
        &running,
        &rpc(
            3,
            "SendMessage",
            json!({"message": user_message("one more")}),
        ),
        V1,
    )
    .await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        refused.body
    );
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(
        reason(&refused.body["error"]["data"]),
        Some("RESOURCE_EXHAUSTED")
    );
    let over_rest = rest(
        &running,
        Method::POST,
        "/message:send",
        Some(json!({"message": user_message("one more")})),
        V1,
    )
    .await;
    assert_eq!(over_rest.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(over_rest.headers.contains_key("retry-after"));
    assert_eq!(
        reason(&over_rest.body["error"]["details"]),
        Some("RESOURCE_EXHAUSTED")
    );
    // Streaming asks the same store: the refusal is a plain answer, not a stream.
    let streamed = running
        .http
        .post(format!("{}/a2a", running.base))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("A2A-Version", "1.0")
        .body(rpc(
            4,
            "SendStreamingMessage",
            json!({"message": user_message("streamed")}),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(streamed.headers().contains_key("retry-after"));
    // Once the work ends it is finished work, and makes room.
    cancel(&running, &first, None).await;
    let admitted = post_rpc(
        &running,
        &rpc(5, "SendMessage", json!({"message": user_message("now")})),
        V1,
    )
    .await;
    assert_eq!(admitted.status, 200);
    assert_eq!(
        admitted.body["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    cancel(&running, &second, None).await;
}

#[tokio::test]
async fn a_store_full_of_live_work_is_refused_with_503_on_both_bindings() {
    let running = start_with(Options {
        limits: Some(TaskLimits::default().max_tasks(1)),
        tokens: vec![("alice-token", "alice"), ("bob-token", "bob")],
        ..Options::default()
    })
    .await;
    let alices = start_slow(&running, Some("alice-token")).await;
    let refused = post_rpc_as(
        &running,
        &rpc(2, "SendMessage", json!({"message": user_message("bob")})),
        V1,
        Some("bob-token"),
    )
    .await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(reason(&refused.body["error"]["data"]), Some("UNAVAILABLE"));
    let over_rest = running
        .http
        .post(format!("{}/a2a/v1/message:send", running.base))
        .bearer_auth("bob-token")
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(json!({"message": user_message("bob")}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(over_rest.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(over_rest.headers().contains_key("retry-after"));
    cancel(&running, &alices, Some("alice-token")).await;
}

#[tokio::test]
async fn each_subject_keeps_its_own_byte_share_and_loses_only_its_own_oldest_finished_tasks() {
    let running = start_with(Options {
        limits: Some(TaskLimits::default().max_bytes_per_owner(40_000)),
        tokens: vec![("alice-token", "alice"), ("bob-token", "bob")],
        ..Options::default()
    })
    .await;
    let send_as = |token: &'static str, text: String| {
        let running = &running;
        async move {
            let answer = post_rpc_as(
                running,
                &rpc(1, "SendMessage", json!({"message": user_message(&text)})),
                V1,
                Some(token),
            )
            .await;
            assert_eq!(answer.status, 200, "{:?}", answer.body);
            answer.body["result"]["task"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let bobs = send_as("bob-token", "b".repeat(5_000)).await;
    let mut alices = Vec::new();
    for _ in 0..12 {
        // Each task keeps the message and its echo: about 10 kB.
        alices.push(send_as("alice-token", "a".repeat(5_000)).await);
    }
    let kept = |id: String, token: &'static str| {
        let running = &running;
        async move {
            post_rpc_as(
                running,
                &rpc(2, "GetTask", json!({"id": id})),
                V1,
                Some(token),
            )
            .await
            .code()
            .is_none()
        }
    };
    assert!(
        kept(bobs, "bob-token").await,
        "another subject's task stays"
    );
    assert!(
        !kept(alices[0].clone(), "alice-token").await,
        "the oldest went"
    );
    assert!(
        kept(alices[11].clone(), "alice-token").await,
        "the newest stays"
    );
}

#[tokio::test]
async fn a_finished_task_is_gone_after_its_retention() {
    let running = start_with(limited(
        TaskLimits::default().retention(Duration::from_millis(300)),
    ))
    .await;
    let sent = post_rpc(
        &running,
        &rpc(1, "SendMessage", json!({"message": user_message("hi")})),
        V1,
    )
    .await;
    let id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let fetched = post_rpc(&running, &rpc(2, "GetTask", json!({"id": id})), V1).await;
    assert_eq!(fetched.code(), None);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let expired = post_rpc(&running, &rpc(3, "GetTask", json!({"id": id})), V1).await;
    assert_eq!(expired.code(), Some(-32001));
}

#[tokio::test]
async fn push_configs_per_task_are_bounded_and_the_next_is_refused_with_429() {
    let running = start_with(limited(TaskLimits::default().max_push_configs_per_task(2))).await;
    let sent = post_rpc(
        &running,
        &rpc(1, "SendMessage", json!({"message": user_message("hi")})),
        V1,
    )
    .await;
    let id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let create = |config: &str| {
        rpc(
            2,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": config, "url": "http://127.0.0.1:9/hook"}),
        )
    };
    for config in ["a", "b"] {
        let created = post_rpc(&running, &create(config), V1).await;
        assert_eq!(created.code(), None, "{:?}", created.body);
    }
    let refused = post_rpc(&running, &create("c"), V1).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers.contains_key("retry-after"));
    let over_rest = rest(
        &running,
        Method::POST,
        &format!("/tasks/{id}/pushNotificationConfigs"),
        Some(json!({"id": "d", "url": "http://127.0.0.1:9/hook"})),
        V1,
    )
    .await;
    assert_eq!(over_rest.status, StatusCode::TOO_MANY_REQUESTS);
}
