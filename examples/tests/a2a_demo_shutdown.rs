//! The A2A demo's router ties its streams to the server's shutdown: a slow task's HTTP+JSON
//! stream, open when the server shuts down, ends cleanly at the drain deadline (before the task
//! completes) telling its client to retry, and the server stops serving instead of waiting out
//! the task.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use examples::a2a_demo;
use protocols_runtime::server::{ListenerConfig, Server};
use protocols_testkit::SseReader;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A bound no correct run comes near: the demo's slow task alone takes about 8 s.
const HANG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_slow_rest_stream_of_the_demo_router_ends_at_shutdown_before_its_task_completes() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    // A drain deadline shorter than the slow task, which then ends its stream.
    let builder = Server::builder()
        .listener(ListenerConfig::default().drain_deadline(Duration::from_secs(1)));
    let routes = a2a_demo::router(&base, builder.shutdown_token());
    let server = builder.routes(routes).build().unwrap();
    let signal = CancellationToken::new();
    let fire = signal.clone();
    let serving = tokio::spawn(server.serve_until(listener, async move {
        fire.cancelled().await;
    }));

    let message = json!({
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "slow hello"}]}
    });
    let response = reqwest::Client::new()
        .post(format!("{base}{}/message:stream", a2a_demo::REST_PATH))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/a2a+json")
        .body(message.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut events = SseReader::new(response);
    let (_, first) = events.next_json().await.expect("a first event");
    assert!(first.get("task").is_some(), "the task first: {first}");

    signal.cancel();
    // The reader fails on a reset connection or a body ending inside an event.
    let rest = tokio::time::timeout(HANG, events.drain())
        .await
        .expect("the stream ended");
    let states: Vec<&Value> = rest
        .messages
        .iter()
        .map(|event| &event["statusUpdate"]["status"]["state"])
        .collect();
    assert!(
        states.iter().all(|state| *state != "TASK_STATE_COMPLETED"),
        "the stream ended at the drain deadline, not when the task completed: {states:?}"
    );
    assert!(
        rest.retry.is_some(),
        "the cut stream tells its client to retry"
    );
    let served = tokio::time::timeout(HANG, serving).await;
    assert!(
        matches!(served, Ok(Ok(Ok(())))),
        "serve_until returned cleanly"
    );
}
