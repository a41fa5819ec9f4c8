//! Graceful shutdown over a real socket: a streaming answer still running when the server shuts
//! down — JSON-RPC's, or HTTP+JSON's `message:stream` and `tasks/{id}:subscribe` — ends as a
//! complete response (the chunked body terminated, not reset), and `serve_until` returns instead
//! of waiting for the task behind the stream to finish.

// Helpers of these tests fail the test the way an assertion does.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use protocols_a2a::card::{AgentCards, Endpoints};
use protocols_a2a::executor::{AgentExecutor, TaskUpdater, text_part};
use protocols_a2a::server::A2aServer;
use protocols_a2a::service::A2aService;
use protocols_a2a::store::MemoryTaskStore;
use protocols_a2a::v1::types::*;
use protocols_runtime::server::{ListenerConfig, Server};
use protocols_testkit::SseReader;
use protocols_testkit::sse::assert_event_stream;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How long the executor would keep the stream open on its own: far longer than any wait below.
const TASK_RUNS_FOR: Duration = Duration::from_secs(120);

/// Reports progress every 50 ms for [`TASK_RUNS_FOR`], unless cancelled.
struct EndlessExecutor;

impl AgentExecutor for EndlessExecutor {
    async fn execute(&self, _message: Message, updater: TaskUpdater) {
        let until = tokio::time::Instant::now() + TASK_RUNS_FOR;
        while tokio::time::Instant::now() < until {
            if updater.working(None).await.is_err() {
                return;
            }
            tokio::select! {
                () = updater.cancellation().cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        let _ = updater.complete(None).await;
    }
}

fn card() -> AgentCard {
    AgentCard {
        capabilities: AgentCapabilities {
            streaming: Some(true),
            ..AgentCapabilities::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        description: "shutdown test".into(),
        documentation_url: None,
        icon_url: None,
        name: "shutdown test".into(),
        provider: None,
        security_requirements: Vec::new(),
        security_schemes: Default::default(),
        signatures: Vec::new(),
        skills: Vec::new(),
        supported_interfaces: Vec::new(),
        version: "1".into(),
    }
}

fn streaming_request() -> String {
    let message = Message {
        message_id: "m-1".into(),
        parts: vec![text_part("go")],
        role: Role::RoleUser,
        ..Message::default()
    };
    json!({
        "jsonrpc": "2.0",
        "id": 7,
        "method": "SendStreamingMessage",
        "params": {"message": message}
    })
    .to_string()
}

/// The endless agent served on a loopback socket, its streams tied to the server's shutdown.
struct Running {
    base: String,
    /// Fires the graceful shutdown `serving` waits for.
    signal: CancellationToken,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve_endless_agent() -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let service = A2aService::new(
        EndlessExecutor,
        Arc::new(MemoryTaskStore::new()),
        None,
        AgentCards::new(card(), None, Endpoints::at(&base, "/a2a", "/a2a/v1")),
    );
    // The endless task outlives any drain: its streams end at this deadline.
    let builder = Server::builder()
        .listener(ListenerConfig::default().drain_deadline(Duration::from_millis(500)));
    let agent = A2aServer::new(service).with_shutdown(builder.shutdown_token());
    let server = builder
        .routes(agent.routes("/a2a", "/a2a/v1"))
        .build()
        .unwrap();
    let signal = CancellationToken::new();
    let fire = signal.clone();
    let serving = tokio::spawn(server.serve_until(listener, async move {
        fire.cancelled().await;
    }));
    Running {
        base,
        signal,
        serving,
    }
}

impl Running {
    /// Shuts the server down and checks `serve_until` returns cleanly well before the task
    /// would have ended on its own.
    async fn shut_down(self) {
        self.signal.cancel();
        let served = tokio::time::timeout(TASK_RUNS_FOR / 4, self.serving).await;
        assert!(
            matches!(served, Ok(Ok(Ok(())))),
            "serve_until returned cleanly"
        );
    }
}

/// Checks `response` is an SSE stream and reads its first event's data.
async fn open_stream(response: reqwest::Response) -> (SseReader, String) {
    assert_eq!(response.status(), 200);
    assert_event_stream(&response);
    let mut events = SseReader::new(response);
    let first = events.next().await.expect("a first event");
    (events, first.into_data())
}

/// Reads `events` to their end, which must come well before the task would have finished on
/// its own; the reader fails on a reset connection or a body ending inside an event.
async fn assert_ends_cleanly(mut events: SseReader) {
    let ended = tokio::time::timeout(TASK_RUNS_FOR / 4, async {
        while events.next().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ended at shutdown");
}

/// A request for `path` under the HTTP+JSON prefix, in 1.0.
fn rest(method: reqwest::Method, base: &str, path: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .request(method, format!("{base}/a2a/v1{path}"))
        .header("A2A-Version", "1.0")
}

#[tokio::test]
async fn a_streaming_json_rpc_answer_ends_cleanly_when_the_server_shuts_down() {
    let running = serve_endless_agent().await;
    let response = reqwest::Client::new()
        .post(format!("{}/a2a", running.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("A2A-Version", "1.0")
        .body(streaming_request())
        .send()
        .await
        .unwrap();
    let (body, first) = open_stream(response).await;
    assert!(first.contains("\"id\":7"));

    let stream_ends = tokio::spawn(assert_ends_cleanly(body));
    running.shut_down().await;
    stream_ends.await.unwrap();
}

#[tokio::test]
async fn rest_message_stream_and_task_subscribe_end_cleanly_when_the_server_shuts_down() {
    let running = serve_endless_agent().await;
    let message = Message {
        message_id: "m-rest".into(),
        parts: vec![text_part("go")],
        role: Role::RoleUser,
        ..Message::default()
    };
    let request = json!({"message": message}).to_string();
    let response = rest(reqwest::Method::POST, &running.base, "/message:stream")
        .header("content-type", "application/a2a+json")
        .body(request)
        .send()
        .await
        .unwrap();
    let (streamed, first) = open_stream(response).await;
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    let task_id = first["task"]["id"].as_str().expect("the task first");

    let subscribe = format!("/tasks/{task_id}:subscribe");
    let response = rest(reqwest::Method::GET, &running.base, &subscribe)
        .send()
        .await
        .unwrap();
    let (subscribed, snapshot) = open_stream(response).await;
    assert!(
        snapshot.contains(task_id),
        "the subscription is to the task"
    );

    let streams_end = tokio::spawn(async move {
        assert_ends_cleanly(streamed).await;
        assert_ends_cleanly(subscribed).await;
    });
    running.shut_down().await;
    streams_end.await.unwrap();
}
