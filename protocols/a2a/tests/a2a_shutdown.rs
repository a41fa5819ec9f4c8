//! Graceful shutdown over a real socket: a JSON-RPC streaming answer still running when the
//! server shuts down ends as a complete response (the chunked body terminated, not reset), and
//! `serve_until` returns instead of waiting for the task behind the stream to finish.

// Helpers of these tests fail the test the way an assertion does.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use protocols_a2a::card::{AgentCards, Endpoints};
use protocols_a2a::executor::{AgentExecutor, TaskUpdater, text_part};
use protocols_a2a::server::A2aServer;
use protocols_a2a::service::A2aService;
use protocols_a2a::store::MemoryTaskStore;
use protocols_a2a::v1::types::*;
use protocols_runtime::server::Server;
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
            if updater.working(None).is_err() {
                return;
            }
            tokio::select! {
                () = updater.cancellation().cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        let _ = updater.complete(None);
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

#[tokio::test]
async fn a_streaming_json_rpc_answer_ends_cleanly_when_the_server_shuts_down() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let service = A2aService::new(
        EndlessExecutor,
        Arc::new(MemoryTaskStore::new()),
        None,
        AgentCards::new(card(), None, Endpoints::at(&base, "/a2a", "/a2a/v1")),
    );
    let builder = Server::builder();
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

    let response = reqwest::Client::new()
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("A2A-Version", "1.0")
        .body(streaming_request())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = response.bytes_stream();
    let first = body.next().await.expect("a first event").unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"id\":7"));

    signal.cancel();
    // The stream must end well before the task would have finished on its own; the body's last
    // chunk must arrive intact (a reset connection surfaces here as an error).
    let rest = tokio::time::timeout(TASK_RUNS_FOR / 4, async {
        let mut chunks = 0_usize;
        while let Some(chunk) = body.next().await {
            chunk.expect("the stream ends cleanly, not reset");
            chunks += 1;
        }
        chunks
    })
    .await;
    assert!(rest.is_ok(), "the stream ended at shutdown");
    let served = tokio::time::timeout(TASK_RUNS_FOR / 4, serving).await;
    assert!(
        matches!(served, Ok(Ok(Ok(())))),
        "serve_until returned cleanly"
    );
}
