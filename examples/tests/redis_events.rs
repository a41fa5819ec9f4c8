//! `all-protocols --redis URL`: three processes on one throwaway `redis-server` share every MCP
//! session's event streams, so a stream cut on one replica resumes on any other with
//! `Last-Event-ID`, every event exactly once and in order, even once the replica that wrote it
//! was killed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod mcp_client;

use std::time::Duration;

use common::AllProtocols;
use mcp_client::{REVISION, open_session, post};
use protocols_runtime::sse::EventId;
use protocols_runtime::tail::EventCursor;
use protocols_testkit::{RedisServer, Reply, SseReader, event_stream_get};
use serde_json::{Value, json};

async fn replica(redis: &RedisServer) -> AllProtocols {
    AllProtocols::start(&["--redis", &redis.url()]).await
}

/// The session's `GET` stream on `url`, resumed after `last` when given.
async fn get_stream(url: &str, session: &str, last: Option<u64>) -> SseReader {
    let last = last.map(|last| last.to_string());
    let headers = [
        ("mcp-session-id", Some(session)),
        ("mcp-protocol-version", Some(REVISION)),
        ("last-event-id", last.as_deref()),
    ];
    let headers = headers
        .into_iter()
        .filter_map(|(name, value)| value.map(|value| (name, value)));
    let answer = event_stream_get(&reqwest::Client::new(), url, headers)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{:?}", answer.text().await);
    SseReader::new(answer)
}

fn cursor(id: u64) -> EventCursor {
    EventCursor::from_event_id(EventId::new(id)).expect("a cursor")
}

/// The next event with data, failing the test if none comes within `within`.
async fn next_event(reader: &mut SseReader, within: Duration) -> (u64, Value) {
    let (id, message) = tokio::time::timeout(within, reader.next_json())
        .await
        .expect("an event came")
        .expect("the stream stays open");
    (id.expect("events carry ids"), message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_stream_cut_and_resumed_on_other_replicas_200_times_delivers_every_event_once_in_order()
 {
    let redis = RedisServer::start();
    let (a, b, c) = (
        replica(&redis).await,
        replica(&redis).await,
        replica(&redis).await,
    );
    let (on_a, on_b, on_c) = (a.mcp_url(), b.mcp_url(), c.mcp_url());
    let session = open_session(&on_a, json!({})).await;
    let announce = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "announce_list_changed", "arguments": {"list": "tools"}}})
    };
    let mut stream = get_stream(&on_a, &session, None).await;
    let mut seen: Vec<u64> = Vec::new();
    for round in 0..200u64 {
        // Published on a (where the session was opened and is held) while no reader is there
        // for every round but the first: the event waits in Redis for the resume.
        let told = post(&on_a, &session, &announce(round + 10)).await;
        assert_eq!(told.status(), 200);
        let told = told.text().await.unwrap();
        assert!(told.contains("told"), "{told}");
        let (id, message) = next_event(&mut stream, Duration::from_secs(5)).await;
        assert_eq!(message["method"], "notifications/tools/list_changed");
        seen.push(id);
        // Cut, and resumed on b and c alternately.
        drop(stream);
        let next = if round % 2 == 0 { &on_b } else { &on_c };
        stream = get_stream(next, &session, Some(id)).await;
    }
    let cursors: Vec<EventCursor> = seen.iter().map(|&id| cursor(id)).collect();
    assert!(
        cursors.iter().all(|cursor| cursor.stream == 0),
        "the session's own stream"
    );
    let sequences: Vec<u64> = cursors.iter().map(|cursor| cursor.sequence).collect();
    assert_eq!(
        sequences,
        (1..=200).collect::<Vec<_>>(),
        "every event exactly once, in order"
    );
    // Nothing more was published, so nothing more comes.
    let extra = tokio::time::timeout(Duration::from_millis(500), stream.next_json()).await;
    assert!(extra.is_err(), "an event came twice: {extra:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_replica_writing_an_sse_answer_loses_nothing_it_published_before() {
    let redis = RedisServer::start();
    let (a, b) = (replica(&redis).await, replica(&redis).await);
    let (on_a, on_b) = (a.mcp_url(), b.mcp_url());
    let session = open_session(&on_a, json!({})).await;
    // Progress every half second for eight seconds, then the answer.
    let slow = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "demo", "arguments": {"text": "slow work"},
        "_meta": {"progressToken": "work"}}});
    let answer = post(&on_a, &session, &slow).await;
    assert_eq!(answer.status(), 200);
    let mut live = SseReader::new(answer);
    let mut progress = Vec::new();
    let mut last = 0;
    for _ in 0..2 {
        let (id, message) = next_event(&mut live, Duration::from_secs(5)).await;
        assert_eq!(message["method"], "notifications/progress", "{message}");
        progress.push(message["params"]["progress"].as_f64().unwrap());
        last = id;
    }
    // One more event is published meanwhile, which the client may never have read.
    tokio::time::sleep(Duration::from_millis(700)).await;
    drop(a);
    drop(live);

    let stream = cursor(last).stream;
    assert_ne!(stream, 0, "the answer's own stream");
    let published = match redis.command(&[
        "HGET",
        &format!("protocols:events:{session}"),
        &format!("s:{stream}"),
    ]) {
        Reply::Bulk(Some(last)) => last.parse::<u64>().unwrap(),
        other => panic!("no stream state: {other:?}"),
    };
    assert!(published >= 3, "published before the kill: {published}");
    let mut resumed = get_stream(&on_b, &session, Some(last)).await;
    while cursor(last).sequence < published {
        let (id, message) = next_event(&mut resumed, Duration::from_secs(5)).await;
        assert_eq!(
            cursor(id).sequence,
            cursor(last).sequence + 1,
            "in order, none lost"
        );
        assert_eq!(message["method"], "notifications/progress", "{message}");
        progress.push(message["params"]["progress"].as_f64().unwrap());
        last = id;
    }
    let expected: Vec<f64> = (1..=progress.len()).map(|n| n as f64).collect();
    assert_eq!(progress, expected, "every progress event once, in order");
    let extra = tokio::time::timeout(Duration::from_millis(500), resumed.next_json()).await;
    assert!(
        extra.is_err(),
        "nothing follows what the killed replica published: {extra:?}"
    );
}
