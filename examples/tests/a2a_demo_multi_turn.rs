//! The A2A demo's multi-turn exchange over a real socket: text starting with `ask` leaves its
//! task `INPUT_REQUIRED` with a question until the client continues the same task, which then
//! completes with both texts; `historyLength` trims the continued task's history; a task
//! waiting for input can be canceled; a finished exchange takes no further message.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use examples::a2a_demo;
use protocols_runtime::server::Server;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Demo {
    base: String,
    http: reqwest::Client,
    stop: CancellationToken,
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn demo() -> Demo {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let builder = Server::builder();
    let routes = a2a_demo::router(&base, builder.shutdown_token());
    let server = builder.routes(routes).build().unwrap();
    let stop = CancellationToken::new();
    let signal = stop.clone();
    tokio::spawn(server.serve_until(listener, async move { signal.cancelled().await }));
    Demo {
        base,
        http: reqwest::Client::new(),
        stop,
    }
}

impl Demo {
    async fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.http
            .post(format!("{}{}", self.base, a2a_demo::JSONRPC_PATH))
            .header("content-type", "application/json")
            .header("A2A-Version", "1.0")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn send(&self, message: Value, configuration: Value) -> Value {
        self.call(
            "SendMessage",
            json!({"message": message, "configuration": configuration}),
        )
        .await
    }
}

fn message(text: &str, task: Option<&str>) -> Value {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = format!("m-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    message
}

fn artifact_text(task: &Value) -> &str {
    task["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn an_ask_task_waits_for_input_until_the_client_continues_the_same_task() {
    let demo = demo().await;
    let asked = demo.send(message("ask for more", None), json!({})).await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    assert!(
        task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with('?')
    );
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();
    // Still waiting when fetched.
    let fetched = demo.call("GetTask", json!({"id": id})).await;
    assert_eq!(
        fetched["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    let mut answer = message("sprinkles", Some(id));
    answer["contextId"] = json!(context);
    let done = demo.send(answer, json!({"historyLength": 2})).await;
    let task = &done["result"]["task"];
    assert_eq!(task["id"], id);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(artifact_text(task), "echo: ask for more / sprinkles");
    // historyLength kept the last two of its three messages.
    let history = task["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    let full = demo.call("GetTask", json!({"id": id})).await;
    assert_eq!(full["result"]["history"].as_array().unwrap().len(), 3);

    let refused = demo.send(message("again", Some(id)), json!({})).await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
}

#[tokio::test]
async fn a_task_waiting_for_input_can_be_canceled() {
    let demo = demo().await;
    let asked = demo.send(message("ask me", None), json!({})).await;
    let id = asked["result"]["task"]["id"].as_str().unwrap();
    let canceled = demo.call("CancelTask", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let late = demo.send(message("too late", Some(id)), json!({})).await;
    assert_eq!(late["error"]["code"], -32004);
}

#[tokio::test]
async fn a_continuation_naming_another_context_is_refused() {
    let demo = demo().await;
    let asked = demo.send(message("ask me", None), json!({})).await;
    let id = asked["result"]["task"]["id"].as_str().unwrap();
    let mut answer = message("hi", Some(id));
    answer["contextId"] = json!("some-other-context");
    let refused = demo.send(answer, json!({})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}
