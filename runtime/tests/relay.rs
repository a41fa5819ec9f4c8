//! Two replicas of one server sharing session records (each materialises its own `Session`, as
//! a Redis-backed store does) and an in-memory relay, but not their event stores: what reaches
//! replica A from a POST to replica B got there through the relay alone.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    CANCEL_METHOD, Endpoint, TestProtocol, TestServer, TestSession, serve, test_hardening,
};
use protocols_runtime::RequestId;
use protocols_runtime::http::{HttpConfig, ResponseMode};
use protocols_runtime::relay::{MemoryRelay, MemoryRelayHub, Relay, ReplicaTag};
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::session::SessionLimits;
use protocols_runtime::tail::{EventStore, MemoryEventStore};
use protocols_testkit::SseReader;
use protocols_testkit::sessions::{RecordSessionStore, SharedRecords};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// One replica on its own listener and event store, with the shared records and `relay`.
async fn replica(shared: &Arc<SharedRecords>, relay: Option<Arc<dyn Relay>>) -> TestServer {
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(1_024));
    let sessions = Arc::new(RecordSessionStore::<TestSession>::new(
        shared,
        &events,
        SessionLimits::default(),
    ));
    let mut config = HttpConfig::default().response_mode(ResponseMode::Sse);
    if let Some(relay) = relay {
        config = config.relay(relay);
    }
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http_with_stores("/rpc", TestProtocol::new(), config, sessions, events)
        .build()
        .expect("server builds");
    serve(server).await
}

/// Replicas A and B on one relay hub (or none), and a session opened on A.
async fn pair(relayed: bool) -> (TestServer, TestServer, Endpoint, Endpoint, String) {
    let shared = Arc::new(SharedRecords::default());
    let hub = MemoryRelayHub::new();
    let relay = || relayed.then(|| Arc::new(MemoryRelay::join(&hub)) as Arc<dyn Relay>);
    let replica_a = replica(&shared, relay()).await;
    let replica_b = replica(&shared, relay()).await;
    let (a, b) = (Endpoint::of(&replica_a), Endpoint::of(&replica_b));
    let session = a.open().await;
    (replica_a, replica_b, a, b, session)
}

/// The server→client request on a call's stream.
async fn client_request(stream: &mut SseReader) -> Value {
    let (_, message) = tokio::time::timeout(Duration::from_secs(5), stream.next_json())
        .await
        .expect("in time")
        .expect("the server's request");
    assert_eq!(message["method"], "client/ask");
    message
}

/// The answer to request 1 on a call's stream (a timed-out call cancels its request first).
async fn answer_to_call(stream: &mut SseReader) -> Value {
    loop {
        let (_, message) = tokio::time::timeout(Duration::from_secs(5), stream.next_json())
            .await
            .expect("in time")
            .expect("the call's answer");
        if message["id"] == 1 {
            return message;
        }
    }
}

#[tokio::test]
async fn a_request_replica_a_sent_is_answered_by_a_post_to_replica_b() {
    let (_ra, _rb, a, b, session) = pair(true).await;
    let mut on_a = SseReader::new(a.call(&session, 1, "ask-client", json!({"q": 1})).await);
    let asked = client_request(&mut on_a).await;
    let id = &asked["id"];
    let request_id = RequestId::from_json(id).expect("a request id");
    assert!(
        ReplicaTag::of_request(&request_id).is_some(),
        "a relayed replica's request id carries its tag: {id}"
    );

    let answered = b
        .post(
            Some(&session),
            "application/json",
            &json!({"jsonrpc": "2.0", "id": id, "result": {"a": 42}}),
        )
        .await;
    assert_eq!(answered.status(), StatusCode::ACCEPTED);

    let (_, answer) = tokio::time::timeout(Duration::from_secs(5), on_a.next_json())
        .await
        .expect("the call completes in time")
        .expect("the call's answer on replica A");
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["client_said"], json!({"a": 42}));
}

#[tokio::test]
async fn an_answer_posted_to_replica_b_in_another_session_does_not_reach_replica_a_waiter() {
    let (_ra, _rb, a, b, session) = pair(true).await;
    let other = b.open().await;
    let mut on_a = SseReader::new(a.call(&session, 1, "ask-client-briefly", json!({})).await);
    let asked = client_request(&mut on_a).await;
    b.post(
        Some(&other),
        "application/json",
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {}}),
    )
    .await;
    let answer = answer_to_call(&mut on_a).await;
    assert_eq!(
        answer["error"]["code"], -32002,
        "the call timed out: {answer}"
    );
}

#[tokio::test]
async fn a_cancellation_posted_to_replica_b_cancels_the_call_running_on_replica_a() {
    let (_ra, _rb, a, b, session) = pair(true).await;
    let mut on_a = SseReader::new(a.call(&session, 9, "slow", json!({})).await);
    // The call is running on A once its stream is open; the cancel may race its start only
    // by the time the handler takes to begin, which the retry below covers.
    let cancel = json!({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 9}});
    let ended = async {
        loop {
            let posted = b.post(Some(&session), "application/json", &cancel).await;
            assert_eq!(posted.status(), StatusCode::ACCEPTED);
            if tokio::time::timeout(Duration::from_millis(500), on_a.next_json())
                .await
                .is_ok()
            {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), ended)
        .await
        .expect("the 30-second call on A ended within 5 s of a cancel posted to B");
}

#[tokio::test]
async fn without_a_relay_ids_are_counted_and_nothing_crosses_replicas() {
    let (_ra, _rb, a, b, session) = pair(false).await;
    let mut on_a = SseReader::new(a.call(&session, 1, "ask-client-briefly", json!({})).await);
    let asked = client_request(&mut on_a).await;
    assert_eq!(asked["id"], 0, "ids count from 0 as before");
    b.post(
        Some(&session),
        "application/json",
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {}}),
    )
    .await;
    let answer = answer_to_call(&mut on_a).await;
    assert_eq!(
        answer["error"]["code"], -32002,
        "B's answer did not reach A"
    );

    let mut slow = SseReader::new(a.call(&session, 9, "slow", json!({})).await);
    let cancel = json!({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 9}});
    b.post(Some(&session), "application/json", &cancel).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(700), slow.next_json())
            .await
            .is_err(),
        "the call on A runs on"
    );
}
