//! MCP tasks across replicas on one throwaway `redis-server`: two `mcp-everything --redis`
//! processes (and an `all-protocols --redis`) serve one 2025-11-25 session; a task-augmented
//! `tools/call` made on the first is read, listed and its result fetched through the second,
//! and another task is cancelled through the second while the first runs it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod mcp_client;

use common::AllProtocols;
use mcp_client::{open_session, post};
use protocols_testkit::RedisServer;
use serde_json::{Value, json};

async fn mcp_everything(redis: &RedisServer) -> AllProtocols {
    AllProtocols::start_binary(
        env!("CARGO_BIN_EXE_mcp-everything"),
        &["--redis", &redis.url()],
    )
    .await
}

/// The JSON-RPC answer in a body that is either JSON or an event stream of JSON messages.
fn answer_in(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {body}"))
}

/// POSTs `method` with `params` in `session` to `url`; the JSON-RPC answer.
async fn call(url: &str, session: &str, id: i64, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let answer = post(url, session, &body).await;
    assert_eq!(answer.status(), 200, "{method}");
    answer_in(&answer.text().await.unwrap())
}

/// A task-augmented `slow_compute` of `seconds` on `url`; the task's id.
async fn start_task(url: &str, session: &str, id: i64, seconds: f64) -> String {
    let created = call(
        url,
        session,
        id,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": seconds, "label": "replicated"},
            "task": {"ttl": 60_000}}),
    )
    .await;
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    task["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_task_created_on_one_replica_is_read_listed_awaited_and_cancelled_through_another() {
    let redis = RedisServer::start();
    let (a, b) = (mcp_everything(&redis).await, mcp_everything(&redis).await);
    let (on_a, on_b) = (a.mcp_url(), b.mcp_url());
    let session = open_session(&on_a, json!({})).await;

    let task = start_task(&on_a, &session, 2, 1.0).await;
    let got = call(&on_b, &session, 3, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    let listed = call(&on_b, &session, 4, "tasks/list", json!({})).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    assert_eq!(ids, [task.as_str()], "{listed}");
    // tasks/result on B waits for the work running on A.
    let result = call(&on_b, &session, 5, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "replicated took 1s",
        "{result}"
    );
    let done = call(&on_a, &session, 6, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");

    let long = start_task(&on_a, &session, 7, 30.0).await;
    let cancelled = call(&on_b, &session, 8, "tasks/cancel", json!({"taskId": long})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let seen_on_a = call(&on_a, &session, 9, "tasks/get", json!({"taskId": long})).await;
    assert_eq!(seen_on_a["result"]["status"], "cancelled", "{seen_on_a}");
    let refused = call(&on_a, &session, 10, "tasks/result", json!({"taskId": long})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // all-protocols on the same Redis answers for the session's tasks too.
    let all = AllProtocols::start(&["--redis", &redis.url()]).await;
    let listed = call(&all.mcp_url(), &session, 11, "tasks/list", json!({})).await;
    assert_eq!(
        listed["result"]["tasks"].as_array().unwrap().len(),
        2,
        "{listed}"
    );
    // And another session sees none of them.
    let other = open_session(&on_b, json!({})).await;
    let none = call(&on_a, &other, 12, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(none["error"]["code"], -32602, "{none}");
}
