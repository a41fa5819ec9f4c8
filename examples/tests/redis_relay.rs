//! `all-protocols --redis URL`, three processes on one throwaway `redis-server`: what one
//! replica starts, a request to another finishes, through the relay on Redis pub/sub. Sampling
//! asked by a tool on A is answered by a POST to B; a call running on A is cancelled by a
//! notification posted to B; a list change made on C reaches the session's GET stream on B.
//! Each session's streams are read on the replica that serves them (event streams stay in that
//! replica's memory here).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod mcp_client;

use std::time::Duration;

use common::AllProtocols;
use mcp_client::{REVISION, open_session, post};
use protocols_testkit::{RedisServer, SseReader, event_stream_get};
use serde_json::{Value, json};

async fn replicas(redis: &RedisServer) -> Vec<(AllProtocols, String)> {
    let mut started = Vec::new();
    for _ in 0..3 {
        let serving = AllProtocols::start(&["--redis", &redis.url()]).await;
        let url = serving.mcp_url();
        started.push((serving, url));
    }
    started
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

/// The next JSON message on `stream` within `within`.
async fn next_within(stream: &mut SseReader, within: Duration) -> Option<Value> {
    tokio::time::timeout(within, stream.next_json())
        .await
        .expect("the stream answers in time")
        .map(|(_, message)| message)
}

#[tokio::test]
async fn sampling_a_tool_on_replica_a_asks_for_is_answered_through_replica_b() {
    let redis = RedisServer::start();
    let started = replicas(&redis).await;
    let (on_a, on_b) = (&started[0].1, &started[1].1);
    let session = open_session(on_a, json!({"sampling": {}})).await;

    let answer = post(
        on_a,
        &session,
        &call(7, "test_sampling", json!({"prompt": "hi"})),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let mut stream = SseReader::new(answer);
    let asked = loop {
        let message = next_within(&mut stream, Duration::from_secs(5))
            .await
            .expect("the sampling request");
        if message["method"] == "sampling/createMessage" {
            break message;
        }
    };
    let sampled = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "answered on B"},
        "model": "test"}});
    assert_eq!(post(on_b, &session, &sampled).await.status(), 202);

    let result = loop {
        let message = next_within(&mut stream, Duration::from_secs(5))
            .await
            .expect("the tool's answer on replica A");
        if message["id"] == 7 {
            break message;
        }
    };
    assert_eq!(
        result["result"]["content"][0]["text"], "LLM response: answered on B",
        "{result}"
    );
}

#[tokio::test]
async fn a_call_running_on_replica_a_is_cancelled_by_a_notification_posted_to_replica_b() {
    let redis = RedisServer::start();
    let started = replicas(&redis).await;
    let (on_a, on_b) = (&started[0].1, &started[1].1);
    let session = open_session(on_a, json!({"sampling": {}})).await;

    // Eight seconds of work, reporting progress every half second.
    let mut slow = call(5, "demo", json!({"text": "slow work"}));
    slow["params"]["_meta"] = json!({"progressToken": "slow"});
    let answer = post(on_a, &session, &slow).await;
    assert_eq!(answer.status(), 200);
    let mut stream = SseReader::new(answer);
    let progress = next_within(&mut stream, Duration::from_secs(5))
        .await
        .expect("progress while it runs");
    assert_eq!(progress["method"], "notifications/progress", "{progress}");

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 5, "reason": "changed my mind"}});
    assert_eq!(post(on_b, &session, &cancel).await.status(), 202);
    // The stream ends without an answer well before the work would have finished.
    while let Some(message) = next_within(&mut stream, Duration::from_secs(3)).await {
        assert_ne!(message["id"], 5, "the cancelled call answered: {message}");
    }
}

#[tokio::test]
async fn a_list_change_made_on_replica_c_reaches_the_session_stream_open_on_replica_b_once() {
    let redis = RedisServer::start();
    let started = replicas(&redis).await;
    let (on_a, on_b, on_c) = (&started[0].1, &started[1].1, &started[2].1);
    let session = open_session(on_a, json!({"sampling": {}})).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", REVISION),
    ];
    let opened = event_stream_get(&reqwest::Client::new(), on_b, headers)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let mut on_b_stream = SseReader::new(opened);

    // A second client, whose whole session lives on C, makes the change.
    let other = open_session(on_c, json!({"sampling": {}})).await;
    let changed = post(
        on_c,
        &other,
        &call(2, "test_trigger_tool_change", json!({})),
    )
    .await;
    assert_eq!(changed.status(), 200);

    let heard = next_within(&mut on_b_stream, Duration::from_secs(5))
        .await
        .expect("the change on replica B's stream");
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
    // A, where the session was initialized, left its broadcasts to B when B opened the stream
    // both write through the shared event store.
    let again = tokio::time::timeout(Duration::from_secs(1), on_b_stream.next_json()).await;
    assert!(again.is_err(), "the change was delivered twice: {again:?}");
}
