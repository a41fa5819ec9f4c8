//! Tasks (MCP 2025-11-25) over real HTTP: a task-augmented `tools/call` answers at once and
//! runs on, `tasks/get`/`list`/`cancel`/`result` and `notifications/tasks/status` follow it,
//! tasks expire by their TTL on the store's clock, tool-level task support is enforced, and
//! revisions without tasks refuse them. Every message the server emits (answers and the
//! session stream alike) is validated against the pinned schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_common::{Client, Echo, Schemas, call, spawn};
use protocols_mcp::content::{text, tool_result};
use protocols_mcp::{
    Level, McpServer, NoArguments, Revision, TaskLimits, TaskStore, TaskSupport, ToolDefinition,
    ToolError,
};
use protocols_runtime::{Clock, ManualClock};
use protocols_testkit::{SseReader, event_stream_get};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

/// What the fixture's tools share with the test.
#[derive(Default)]
struct Fixture {
    gate: Arc<Notify>,
    forever_dropped: Arc<AtomicBool>,
    clock: Arc<ManualClock>,
}

/// Sets its flag when the future holding it is dropped (the tool was stopped).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn task_server(fixture: &Fixture) -> McpServer {
    let limits = TaskLimits::default()
        .default_ttl(Duration::from_secs(60))
        .max_ttl(Duration::from_secs(120))
        .poll_interval(Duration::from_millis(500))
        .page_size(2);
    let clock: Arc<dyn Clock> = fixture.clock.clone();
    let gate = Arc::clone(&fixture.gate);
    let dropped = Arc::clone(&fixture.forever_dropped);
    McpServer::builder("tasks", "1.0.0")
        .task_store(TaskStore::new(limits, clock))
        .tool(
            ToolDefinition::new(
                "gated",
                "Echoes once the gate opens",
                move |args: Echo, _| {
                    let gate = Arc::clone(&gate);
                    async move {
                        gate.notified().await;
                        Ok(tool_result(vec![text(args.message)]))
                    }
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDefinition::new(
                "must_task",
                "Runs only as a task",
                |_: NoArguments, _| async { Ok(tool_result(vec![text("done")])) },
            )
            .task_support(TaskSupport::Required),
        )
        .tool(
            ToolDefinition::new(
                "reporting",
                "Reports as it works",
                |_: NoArguments, cx| async move {
                    let report =
                        |error: protocols_runtime::PeerError| ToolError::failed(error.to_string());
                    cx.progress(1.0, Some(1.0), Some("all done"))
                        .map_err(report)?;
                    cx.log(Level::Info, Some("reporting"), json!("finished"))
                        .map_err(report)?;
                    Ok(tool_result(vec![text("reported")]))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDefinition::new("ask_model", "Samples", |_: NoArguments, cx| async move {
                let answer = cx
                    .sample(&json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}))
                    .await?;
                Ok(tool_result(vec![text(format!("model said {}", answer.model))]))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(ToolDefinition::new(
            "plain",
            "Never a task",
            |_: NoArguments, _| async { Ok(tool_result(vec![text("plain")])) },
        ))
        .tool(
            ToolDefinition::new("broken", "Fails", |_: NoArguments, _| async {
                Err(ToolError::failed("it broke"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDefinition::new(
                "forever",
                "Works until stopped",
                move |_: NoArguments, _| {
                    let flag = DropFlag(Arc::clone(&dropped));
                    async move {
                        let _flag = flag;
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        Ok(tool_result(vec![text("finished")]))
                    }
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .build()
        .unwrap()
}

fn as_task(id: i64, name: &str, arguments: Value, task: Value) -> Value {
    call(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments, "task": task}),
    )
}

fn task_id(answer: &Value) -> String {
    answer["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {answer}"))
        .to_owned()
}

fn error_code(answer: &Value) -> Option<i64> {
    answer["error"]["code"].as_i64()
}

/// The session's standalone GET stream, message by message.
async fn open_session_stream(client: &Client) -> mpsc::UnboundedReceiver<Value> {
    let session = client.session.as_deref().map(|id| ("mcp-session-id", id));
    let version = client.version_header.as_deref();
    let version = version.map(|version| ("mcp-protocol-version", version));
    let response = event_stream_get(
        &client.http,
        &client.url,
        session.into_iter().chain(version),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let (sender, receiver) = mpsc::unbounded_channel();
    let mut events = SseReader::new(response);
    // Read ahead on its own task, so the stream is drained while the test waits on other calls.
    tokio::spawn(async move {
        while let Some((_, message)) = events.next_json().await {
            if sender.send(message).is_err() {
                return;
            }
        }
    });
    receiver
}

async fn next_message(stream: &mut mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(10), stream.recv())
        .await
        .expect("no message on the session stream")
        .expect("the session stream ended")
}

async fn session(url: String, revision: &str) -> Client {
    let mut client = Client::new(url);
    client.initialize(revision).await;
    client
}

#[tokio::test]
async fn a_task_augmented_call_answers_at_once_and_tasks_result_waits_for_the_tool() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let schemas = Schemas::new(Revision::V2025_11_25);
    let mut client = Client::new(running.url("/mcp"));
    let init = client.initialize("2025-11-25").await;
    let tasks = &init.answer(0)["result"]["capabilities"]["tasks"];
    assert_eq!(tasks["requests"]["tools"]["call"], json!({}), "{tasks}");
    assert!(tasks.get("list").is_some() && tasks.get("cancel").is_some());
    let listed = client.post(call(1, "tools/list", json!({}))).await;
    let tools = listed.answer(1)["result"]["tools"].clone();
    let gated = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "gated")
        .unwrap();
    assert_eq!(gated["execution"]["taskSupport"], "optional");
    let mut stream = open_session_stream(&client).await;

    let created = client
        .post(as_task(
            2,
            "gated",
            json!({"message": "hi"}),
            json!({"ttl": 30_000}),
        ))
        .await;
    let answer = created.answer(2);
    assert_eq!(answer["result"]["task"]["status"], "working");
    assert_eq!(answer["result"]["task"]["ttl"], 30_000);
    let id = task_id(answer);
    let polled = client
        .post(call(3, "tasks/get", json!({"taskId": id})))
        .await;
    assert_eq!(polled.answer(3)["result"]["status"], "working");

    let gate = Arc::clone(&fixture.gate);
    let (waited, ()) = tokio::join!(
        client.post(call(4, "tasks/result", json!({"taskId": id}))),
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            gate.notify_one();
        }
    );
    let result = &waited.answer(4)["result"];
    assert_eq!(result["content"][0]["text"], "hi");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id)
    );
    let status = next_message(&mut stream).await;
    assert_eq!(status["method"], "notifications/tasks/status");
    assert_eq!(status["params"]["taskId"], json!(id));
    assert_eq!(status["params"]["status"], "completed");
    schemas.check_emitted(&status, &Default::default());
    let done = client
        .post(call(5, "tasks/get", json!({"taskId": id})))
        .await;
    assert_eq!(done.answer(5)["result"]["status"], "completed");
    assert!(client.check_all(&schemas) >= 6);
}

#[tokio::test]
async fn tasks_list_pages_through_the_sessions_own_tasks_only() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let schemas = Schemas::new(Revision::V2025_11_25);
    let mine = session(running.url("/mcp"), "2025-11-25").await;
    let theirs = session(running.url("/mcp"), "2025-11-25").await;
    let mut created = Vec::new();
    for id in 1..=3 {
        let answer = mine
            .post(as_task(id, "must_task", json!({}), json!({})))
            .await;
        created.push(task_id(answer.answer(id)));
    }
    let other = theirs
        .post(as_task(1, "must_task", json!({}), json!({})))
        .await;
    let other_id = task_id(other.answer(1));

    let first = mine.post(call(10, "tasks/list", json!({}))).await;
    let first = &first.answer(10)["result"];
    assert_eq!(first["tasks"].as_array().unwrap().len(), 2);
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let second = mine
        .post(call(11, "tasks/list", json!({"cursor": cursor})))
        .await;
    let second = &second.answer(11)["result"];
    assert!(second.get("nextCursor").is_none(), "{second}");
    let listed: Vec<Value> = first["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["tasks"].as_array().unwrap())
        .map(|task| task["taskId"].clone())
        .collect();
    assert_eq!(
        listed,
        created.iter().map(|id| json!(id)).collect::<Vec<_>>()
    );

    let foreign = mine
        .post(call(12, "tasks/get", json!({"taskId": other_id})))
        .await;
    assert_eq!(error_code(foreign.answer(12)), Some(-32602));
    let forged = mine
        .post(call(13, "tasks/list", json!({"cursor": "not-a-cursor"})))
        .await;
    assert_eq!(error_code(forged.answer(13)), Some(-32602));
    let only_theirs = theirs.post(call(2, "tasks/list", json!({}))).await;
    assert_eq!(
        only_theirs.answer(2)["result"]["tasks"][0]["taskId"],
        json!(other_id)
    );
    mine.check_all(&schemas);
    theirs.check_all(&schemas);
}

#[tokio::test]
async fn cancelling_a_task_stops_its_tool_and_a_second_cancel_is_refused() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let schemas = Schemas::new(Revision::V2025_11_25);
    let client = session(running.url("/mcp"), "2025-11-25").await;
    let mut stream = open_session_stream(&client).await;
    let created = client
        .post(as_task(1, "forever", json!({}), json!({})))
        .await;
    let id = task_id(created.answer(1));
    let cancelled = client
        .post(call(2, "tasks/cancel", json!({"taskId": id})))
        .await;
    assert_eq!(cancelled.answer(2)["result"]["status"], "cancelled");
    let status = next_message(&mut stream).await;
    assert_eq!(status["params"]["status"], "cancelled");
    schemas.check_emitted(&status, &Default::default());
    for _ in 0..100 {
        if fixture.forever_dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(fixture.forever_dropped.load(Ordering::SeqCst));
    let again = client
        .post(call(3, "tasks/cancel", json!({"taskId": id})))
        .await;
    assert_eq!(error_code(again.answer(3)), Some(-32602));
    let result = client
        .post(call(4, "tasks/result", json!({"taskId": id})))
        .await;
    assert_eq!(error_code(result.answer(4)), Some(-32602));
    client.check_all(&schemas);
}

#[tokio::test]
async fn a_task_is_forgotten_once_its_ttl_has_passed_on_the_store_clock() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let client = session(running.url("/mcp"), "2025-11-25").await;
    let created = client
        .post(as_task(1, "must_task", json!({}), json!({"ttl": 1_000})))
        .await;
    let id = task_id(created.answer(1));
    fixture.clock.advance(Duration::from_millis(999));
    let alive = client
        .post(call(2, "tasks/get", json!({"taskId": id})))
        .await;
    assert_eq!(alive.answer(2)["result"]["taskId"], json!(id));
    fixture.clock.advance(Duration::from_millis(1));
    let gone = client
        .post(call(3, "tasks/get", json!({"taskId": id})))
        .await;
    assert_eq!(error_code(gone.answer(3)), Some(-32602));
    let listed = client.post(call(4, "tasks/list", json!({}))).await;
    assert_eq!(listed.answer(4)["result"]["tasks"], json!([]));
    client.check_all(&Schemas::new(Revision::V2025_11_25));
}

#[tokio::test]
async fn tool_task_support_is_enforced_and_a_failed_tool_fails_its_task() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let client = session(running.url("/mcp"), "2025-11-25").await;
    let forbidden = client.post(as_task(1, "plain", json!({}), json!({}))).await;
    assert_eq!(error_code(forbidden.answer(1)), Some(-32601));
    let required = client
        .post(call(
            2,
            "tools/call",
            json!({"name": "must_task", "arguments": {}}),
        ))
        .await;
    assert_eq!(error_code(required.answer(2)), Some(-32601));
    let immediate = client
        .post(call(
            3,
            "tools/call",
            json!({"name": "plain", "arguments": {}}),
        ))
        .await;
    assert_eq!(immediate.answer(3)["result"]["content"][0]["text"], "plain");

    let broken = client
        .post(as_task(4, "broken", json!({}), json!({})))
        .await;
    let id = task_id(broken.answer(4));
    let result = client
        .post(call(5, "tasks/result", json!({"taskId": id})))
        .await;
    assert_eq!(result.answer(5)["result"]["isError"], true);
    let status = client
        .post(call(6, "tasks/get", json!({"taskId": id})))
        .await;
    assert_eq!(status.answer(6)["result"]["status"], "failed");
    client.check_all(&Schemas::new(Revision::V2025_11_25));
}

#[tokio::test]
async fn revisions_before_2025_11_25_know_no_tasks() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let mut client = Client::new(running.url("/mcp"));
    let init = client.initialize("2025-06-18").await;
    assert!(
        init.answer(0)["result"]["capabilities"]
            .get("tasks")
            .is_none()
    );
    let listed = client.post(call(1, "tools/list", json!({}))).await;
    let tools = listed.answer(1)["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(tools.iter().all(|tool| tool.get("execution").is_none()));
    let refused = client.post(call(2, "tasks/list", json!({}))).await;
    assert_eq!(error_code(refused.answer(2)), Some(-32601));
    client.check_all(&Schemas::new(Revision::V2025_06_18));
}

#[tokio::test]
async fn what_a_task_sends_while_it_runs_names_the_task_and_goes_to_the_session_stream() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let schemas = Schemas::new(Revision::V2025_11_25);
    let client = session(running.url("/mcp"), "2025-11-25").await;
    let mut stream = open_session_stream(&client).await;
    let created = client
        .post(call(
            1,
            "tools/call",
            json!({"name": "reporting", "arguments": {}, "task": {}, "_meta": {"progressToken": "p1"}}),
        ))
        .await;
    let id = task_id(created.answer(1));
    let related = json!({ "taskId": id });
    let mut seen = Vec::new();
    for _ in 0..3 {
        let message = next_message(&mut stream).await;
        schemas.check_emitted(&message, &Default::default());
        seen.push(message);
    }
    let methods: Vec<&str> = seen
        .iter()
        .map(|message| message["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/message",
            "notifications/tasks/status"
        ]
    );
    for message in &seen[..2] {
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/related-task"], related,
            "{message}"
        );
    }
    assert_eq!(seen[0]["params"]["progressToken"], "p1");
    client.check_all(&schemas);
}

#[tokio::test]
async fn a_task_waiting_on_the_client_is_input_required_until_it_answers() {
    let fixture = Fixture::default();
    let running = spawn(task_server(&fixture)).await;
    let schemas = Schemas::new(Revision::V2025_11_25);
    let client = session(running.url("/mcp"), "2025-11-25").await;
    let mut stream = open_session_stream(&client).await;
    let created = client
        .post(as_task(1, "ask_model", json!({}), json!({})))
        .await;
    let id = task_id(created.answer(1));
    let waiting = next_message(&mut stream).await;
    assert_eq!(waiting["params"]["status"], "input_required", "{waiting}");
    let asked = next_message(&mut stream).await;
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id)
    );
    let polled = client
        .post(call(2, "tasks/get", json!({"taskId": id})))
        .await;
    assert_eq!(polled.answer(2)["result"]["status"], "input_required");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi"},
        "model": "test-model", "stopReason": "endTurn"}});
    let reply = client.request(&answer).send().await.unwrap();
    assert_eq!(reply.status(), 202);
    let working = next_message(&mut stream).await;
    assert_eq!(working["params"]["status"], "working");
    let completed = next_message(&mut stream).await;
    assert_eq!(completed["params"]["status"], "completed");
    for message in [&waiting, &asked, &working, &completed] {
        schemas.check_emitted(message, &Default::default());
    }
    let result = client
        .post(call(3, "tasks/result", json!({"taskId": id})))
        .await;
    assert_eq!(
        result.answer(3)["result"]["content"][0]["text"],
        "model said test-model"
    );
    client.check_all(&schemas);
}
