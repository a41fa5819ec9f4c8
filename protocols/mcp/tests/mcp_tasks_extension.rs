//! The 2026-07-28 tasks extension (SEP-2663) over real HTTP, each test named as the rule it
//! proves: the server decides when a call becomes a task, a task's `tasks/get` inlines its
//! outcome, input requests park a task until `tasks/update` answers them, cancelling only
//! acknowledges, the extension must be declared, 2025-11-25's task methods are not the
//! extension's, listeners hear of the tasks they name, and the store's bounds refuse with a
//! status and `Retry-After`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_common::{
    Client, Exchange, Running, call, spawn, stateless_call_declaring, stateless_client,
};
use protocols_mcp::content::{text, tool_result};
use protocols_mcp::{
    McpServer, NoArguments, TaskLimits, TaskStore, TaskSupport, ToolDefinition, ToolError,
};
use protocols_runtime::{Clock, SystemClock};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

#[derive(Deserialize, JsonSchema)]
struct Wait {
    millis: u64,
}

fn tasks_server(limits: TaskLimits) -> McpServer {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    McpServer::builder("tasks-extension", "1.0.0")
        .listen_window(Duration::from_millis(1500))
        .task_store(TaskStore::new(limits, clock))
        .tool(ToolDefinition::new("now", "Answers at once", |_: NoArguments, _| async {
            Ok(tool_result(vec![text("now")]))
        }))
        .tool(
            ToolDefinition::new("wait", "Waits, then answers", |args: Wait, _| async move {
                // Tokio's zero sleep still yields once; no wait must mean no await at all.
                if args.millis > 0 {
                    tokio::time::sleep(Duration::from_millis(args.millis)).await;
                }
                Ok(tool_result(vec![text(format!("waited {}", args.millis))]))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDefinition::new("must_wait", "Runs only as a task", |_: NoArguments, _| async {
                Ok(tool_result(vec![text("done")]))
            })
            .task_support(TaskSupport::Required),
        )
        .tool(
            ToolDefinition::new("fails", "A tool error after a while", |_: NoArguments, _| async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(ToolError::failed("broke"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDefinition::new("crashes", "A protocol error after a while", |_: NoArguments, _| async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(ToolError::Protocol(protocols_runtime::ErrorObject::internal_error()))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDefinition::new("confirm_twice", "Asks the user twice at once", |_: NoArguments, cx| async move {
                let ask = json!({"mode": "form", "message": "sure?", "requestedSchema": {"type": "object", "properties": {}}});
                let (first, second) = tokio::join!(cx.elicit(&ask), cx.elicit(&ask));
                Ok(tool_result(vec![text(format!("{:?} {:?}", first?.action, second?.action))]))
            })
            .task_support(TaskSupport::Optional),
        )
        .build()
        .unwrap()
}

fn declaring() -> Value {
    json!({"elicitation": {}, "extensions": {TASKS: {}}})
}

/// One 2026-07-28 request with the headers it needs, declaring `capabilities`.
async fn send(
    running: &Running,
    id: i64,
    method: &str,
    params: Value,
    capabilities: Value,
) -> Exchange {
    let target = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let client = stateless_client(running.url("/mcp"), method, target.as_deref());
    client
        .post(stateless_call_declaring(id, method, params, capabilities))
        .await
}

async fn call_tool(running: &Running, id: i64, name: &str, arguments: Value) -> Value {
    let exchange = send(
        running,
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
        declaring(),
    )
    .await;
    exchange.answer(id).clone()
}

async fn get(running: &Running, task_id: &str) -> Value {
    send(
        running,
        90,
        "tasks/get",
        json!({"taskId": task_id}),
        declaring(),
    )
    .await
    .answer(90)["result"]
        .clone()
}

/// Polls `tasks/get` until the task is terminal.
async fn settled(running: &Running, task_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(running, task_id).await;
        if matches!(
            task["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            return task;
        }
        assert!(Instant::now() < deadline, "the task never settled: {task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What SEP-2663 says a task carries at its top level, and what it must not.
fn assert_task_shape(task: &Value) {
    for field in ["taskId", "status", "createdAt", "lastUpdatedAt"] {
        assert!(task.get(field).is_some(), "no {field}: {task}");
    }
    assert!(task["ttlMs"].as_i64().unwrap() > 0, "{task}");
    assert!(task["pollIntervalMs"].as_i64().unwrap() > 0, "{task}");
    for absent in ["ttl", "pollInterval", "requestState", "task"] {
        assert!(task.get(absent).is_none(), "{absent} in {task}");
    }
}

#[tokio::test]
async fn a_call_becomes_a_task_only_when_it_has_to_wait_and_the_create_result_is_flat() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let at_once = call_tool(&running, 1, "wait", json!({"millis": 0})).await;
    assert_eq!(at_once["result"]["resultType"], "complete");
    assert_eq!(at_once["result"]["content"][0]["text"], "waited 0");
    let created = call_tool(&running, 2, "wait", json!({"millis": 300})).await;
    let created = &created["result"];
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert_task_shape(created);
    for absent in ["result", "error", "inputRequests"] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    // Durably created: a get right away resolves.
    let task_id = created["taskId"].as_str().unwrap();
    let working = get(&running, task_id).await;
    assert_eq!(
        (working["resultType"].clone(), working["status"].clone()),
        (json!("complete"), json!("working"))
    );
    let done = settled(&running, task_id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"][0]["text"], "waited 300");
    assert!(
        done["result"]
            .get("_meta")
            .is_none_or(|meta| meta.get("io.modelcontextprotocol/related-task").is_none())
    );
    // A sync-only tool never becomes a task, whatever hint a 2025-11-25 client adds.
    let hinted = send(
        &running,
        3,
        "tools/call",
        json!({"name": "now", "task": {"ttl": 1000}}),
        declaring(),
    )
    .await;
    assert_eq!(hinted.answer(3)["result"]["resultType"], "complete");
}

#[tokio::test]
async fn a_tool_error_completes_its_task_and_a_protocol_error_fails_it_with_the_error() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let failing = call_tool(&running, 1, "fails", json!({})).await;
    let completed = settled(&running, failing["result"]["taskId"].as_str().unwrap()).await;
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["result"]["isError"], true);
    let crashing = call_tool(&running, 2, "crashes", json!({})).await;
    let failed = settled(&running, crashing["result"]["taskId"].as_str().unwrap()).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(failed.get("result").is_none());
}

#[tokio::test]
async fn a_tool_that_only_runs_as_a_task_answers_with_one_even_when_it_finishes_at_once() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let created = call_tool(&running, 1, "must_wait", json!({})).await;
    assert_eq!(created["result"]["resultType"], "task");
    let task = get(&running, created["result"]["taskId"].as_str().unwrap()).await;
    assert_eq!(task["status"], "completed");
    assert_eq!(task["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn a_client_that_did_not_declare_the_extension_gets_no_task_and_32021_where_one_is_needed() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let plain = send(
        &running,
        1,
        "tools/call",
        json!({"name": "wait", "arguments": {"millis": 100}}),
        json!({}),
    )
    .await;
    assert_eq!(
        plain.answer(1)["result"]["content"][0]["text"],
        "waited 100"
    );
    let refused = send(
        &running,
        2,
        "tools/call",
        json!({"name": "must_wait"}),
        json!({}),
    )
    .await;
    assert_eq!(refused.status, 400);
    let error = &refused.answer(2)["error"];
    assert_eq!(error["code"], -32021);
    assert_eq!(
        error["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    for (id, method) in [(3, "tasks/get"), (4, "tasks/cancel"), (5, "tasks/update")] {
        let gated = send(
            &running,
            id,
            method,
            json!({"taskId": "any", "inputResponses": {}}),
            json!({}),
        )
        .await;
        assert_eq!(gated.answer(id)["error"]["code"], -32021, "{method}");
    }
}

#[tokio::test]
async fn discover_declares_the_extension_and_not_2025_11_25s_tasks_capability() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let found = send(&running, 1, "server/discover", json!({}), declaring()).await;
    let capabilities = &found.answer(1)["result"]["capabilities"];
    assert_eq!(capabilities["extensions"][TASKS], json!({}));
    assert!(capabilities.get("tasks").is_none(), "{capabilities}");
    let mut session = Client::new(running.url("/mcp"));
    let init = session.initialize("2025-11-25").await;
    assert!(init.answer(0)["result"]["capabilities"]["tasks"].is_object());
}

#[tokio::test]
async fn a_task_waits_on_every_input_it_asked_and_tasks_update_answers_them_one_by_one() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let created = call_tool(&running, 1, "confirm_twice", json!({})).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let waiting = get(&running, &task_id).await;
    assert_eq!(waiting["status"], "input_required");
    assert_task_shape(&waiting);
    let keys: Vec<String> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{waiting}");
    assert_eq!(
        waiting["inputRequests"][&keys[0]]["method"],
        "elicitation/create"
    );
    let update = |responses: Value| {
        let running = &running;
        let task_id = task_id.clone();
        async move {
            send(
                running,
                5,
                "tasks/update",
                json!({"taskId": task_id, "inputResponses": responses}),
                declaring(),
            )
            .await
            .answer(5)["result"]
                .clone()
        }
    };
    let ack = update(json!({keys[0].clone(): {"action": "accept"}, "never-asked": {}})).await;
    assert_eq!(ack, json!({"resultType": "complete"}));
    let partial = get(&running, &task_id).await;
    assert_eq!(partial["status"], "input_required");
    let left: Vec<&String> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(left, [&keys[1]]);
    update(json!({keys[1].clone(): {"action": "decline"}})).await;
    let done = settled(&running, &task_id).await;
    assert_eq!(done["status"], "completed");
}

#[tokio::test]
async fn tasks_cancel_only_acknowledges_settles_a_running_task_cancelled_and_is_idempotent() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let created = call_tool(&running, 1, "wait", json!({"millis": 60_000})).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    for id in [2, 3] {
        let ack = send(
            &running,
            id,
            "tasks/cancel",
            json!({"taskId": task_id}),
            declaring(),
        )
        .await;
        assert_eq!(ack.answer(id)["result"], json!({"resultType": "complete"}));
    }
    assert_eq!(settled(&running, &task_id).await["status"], "cancelled");
    let unknown = send(
        &running,
        4,
        "tasks/get",
        json!({"taskId": "no-such-task"}),
        declaring(),
    )
    .await;
    assert_eq!(unknown.answer(4)["error"]["code"], -32602);
}

#[tokio::test]
async fn tasks_result_and_tasks_list_are_not_methods_of_the_extension() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    for (id, method) in [(1, "tasks/result"), (2, "tasks/list")] {
        let refused = send(&running, id, method, json!({"taskId": "x"}), declaring()).await;
        assert_eq!(
            (refused.status, refused.answer(id)["error"]["code"].clone()),
            (404, json!(-32601)),
            "{method}"
        );
    }
}

#[tokio::test]
async fn a_mcp_name_that_is_not_the_task_id_is_a_header_mismatch() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let client = stateless_client(running.url("/mcp"), "tasks/get", Some("another-task"));
    let refused = client
        .post(stateless_call_declaring(
            1,
            "tasks/get",
            json!({"taskId": "a-task"}),
            declaring(),
        ))
        .await;
    assert_eq!(
        (refused.status, refused.answer(1)["error"]["code"].clone()),
        (400, json!(-32020))
    );
}

#[tokio::test]
async fn a_full_store_refuses_a_required_task_with_503_and_retry_after_and_runs_an_optional_one_now()
 {
    let limits = TaskLimits::default()
        .max_tasks(1)
        .default_ttl(Duration::from_secs(30));
    let running = spawn(tasks_server(limits)).await;
    let first = call_tool(&running, 1, "wait", json!({"millis": 60_000})).await;
    assert_eq!(first["result"]["resultType"], "task");
    let refused = send(
        &running,
        2,
        "tools/call",
        json!({"name": "must_wait"}),
        declaring(),
    )
    .await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.answer(2)["error"]["code"], -32013);
    let retry: u64 = refused.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    let now = call_tool(&running, 3, "wait", json!({"millis": 10})).await;
    assert_eq!(
        now["result"]["content"][0]["text"], "waited 10",
        "run now, not refused"
    );
}

#[tokio::test]
async fn a_session_holding_its_share_of_tasks_is_refused_with_429_while_another_is_served() {
    let limits = TaskLimits::default().max_tasks_per_owner(1);
    let running = spawn(tasks_server(limits)).await;
    let as_task = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "wait", "arguments": {"millis": 60_000}, "task": {"ttl": 60_000}
        }})
    };
    let mut greedy = Client::new(running.url("/mcp"));
    greedy.initialize("2025-11-25").await;
    assert!(greedy.post(as_task(1)).await.answer(1)["result"]["task"].is_object());
    let refused = greedy.post(as_task(2)).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.answer(2)["error"]["code"], -32012);
    assert!(refused.retry_after.is_some());
    let mut modest = Client::new(running.url("/mcp"));
    modest.initialize("2025-11-25").await;
    assert!(modest.post(as_task(3)).await.answer(3)["result"]["task"].is_object());
}

#[tokio::test]
async fn a_listener_that_names_a_task_hears_each_change_of_it_and_naming_one_needs_the_extension() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let created = call_tool(&running, 1, "confirm_twice", json!({})).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let waiting = get(&running, &task_id).await;
    let answers: serde_json::Map<String, Value> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .map(|key| (key.clone(), json!({"action": "accept"})))
        .collect();
    let listen = json!({"notifications": {"taskIds": [task_id.clone()]}});
    let listener = stateless_client(running.url("/mcp"), "subscriptions/listen", None);
    let request = stateless_call_declaring(2, "subscriptions/listen", listen.clone(), declaring());
    let (heard, ()) = tokio::join!(listener.post(request), async {
        // Answered while the stream is open, the task works on and completes.
        tokio::time::sleep(Duration::from_millis(300)).await;
        send(
            &running,
            3,
            "tasks/update",
            json!({"taskId": task_id, "inputResponses": answers}),
            declaring(),
        )
        .await;
    });
    let ack = &heard.notifications("notifications/subscriptions/acknowledged")[0]["params"];
    assert_eq!(ack["notifications"]["taskIds"], json!([task_id]));
    let told = heard.notifications("notifications/tasks");
    let statuses: Vec<&str> = told
        .iter()
        .filter_map(|told| told["params"]["status"].as_str())
        .collect();
    assert_eq!(statuses.last(), Some(&"completed"), "{told:?}");
    for told in &told {
        assert_eq!(told["params"]["taskId"], json!(task_id));
        assert!(told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number());
    }
    let refused = send(&running, 4, "subscriptions/listen", listen, json!({})).await;
    assert_eq!(refused.answer(4)["error"]["code"], -32021);
}

#[tokio::test]
async fn the_experimental_tasks_of_2025_11_25_are_unchanged_beside_the_extension() {
    let running = spawn(tasks_server(TaskLimits::default())).await;
    let mut session = Client::new(running.url("/mcp"));
    session.initialize("2025-11-25").await;
    let created = session
        .post(call(
            1,
            "tools/call",
            json!({"name": "wait", "arguments": {"millis": 10}, "task": {"ttl": 5000}}),
        ))
        .await;
    let task = &created.answer(1)["result"]["task"];
    assert_eq!(task["ttl"], 5000);
    let id = task["taskId"].as_str().unwrap();
    let result = session
        .post(call(2, "tasks/result", json!({"taskId": id})))
        .await;
    assert_eq!(
        result.answer(2)["result"]["content"][0]["text"],
        "waited 10"
    );
    // An experimental task is not the extension's to see.
    let other_wire = send(&running, 3, "tasks/get", json!({"taskId": id}), declaring()).await;
    assert_eq!(other_wire.answer(3)["error"]["code"], -32602);
}
