//! The event store contract ([`protocols_testkit::events`]) held by the in-memory store and by
//! the switched store, which answers in boxed futures as a network store does; and what the
//! transport makes of an event store that fails: a `503` with a JSON-RPC body where no response
//! has started, a clean end of the stream where one has, and service again once it is back.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{Endpoint, TestProtocol, TestServer, request, serve, test_hardening};
use protocols_runtime::http::{HttpConfig, ResponseMode};
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::session::{MemorySessionStore, SessionLimits};
use protocols_runtime::tail::{EventStore, MemoryEventStore};
use protocols_testkit::SseReader;
use protocols_testkit::events::{EventOutage, SwitchedEventStore, event_store_contract};
use reqwest::StatusCode;
use reqwest::header::{self, HeaderName};
use serde_json::{Value, json};

#[tokio::test]
async fn the_memory_store_keeps_the_event_store_contract() {
    event_store_contract(|capacity| {
        let store: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(capacity));
        [Arc::clone(&store), store]
    })
    .await;
}

#[tokio::test]
async fn a_store_answering_in_boxed_futures_keeps_the_event_store_contract() {
    event_store_contract(|capacity| {
        let outage = Arc::new(EventOutage::default());
        let store: Arc<dyn EventStore> = Arc::new(SwitchedEventStore::new(capacity, &outage));
        [Arc::clone(&store), store]
    })
    .await;
}

const SECURITY_HEADERS: [HeaderName; 6] = [
    header::CONTENT_SECURITY_POLICY,
    header::STRICT_TRANSPORT_SECURITY,
    header::X_FRAME_OPTIONS,
    header::X_CONTENT_TYPE_OPTIONS,
    header::CACHE_CONTROL,
    header::REFERRER_POLICY,
];

/// A server whose sessions' streams live in a switched store that `outage` cuts off.
async fn serve_switched(outage: &Arc<EventOutage>) -> TestServer {
    let events: Arc<dyn EventStore> = Arc::new(SwitchedEventStore::new(256, outage));
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http_with_stores(
            "/rpc",
            TestProtocol::new(),
            HttpConfig::default().response_mode(ResponseMode::Sse),
            Arc::new(MemorySessionStore::new(SessionLimits::default())),
            events,
        )
        .build()
        .expect("server builds");
    serve(server).await
}

async fn assert_store_unavailable(response: reqwest::Response) {
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    for name in &SECURITY_HEADERS {
        assert!(response.headers().contains_key(name), "{name} missing");
    }
    let body: Value = response.json().await.expect("a JSON-RPC body");
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["code"], -32017);
}

#[tokio::test]
async fn a_stream_asked_for_while_the_event_store_is_down_is_a_503_with_a_json_rpc_body_and_resumes_once_it_is_back()
 {
    let outage = Arc::new(EventOutage::default());
    let server = serve_switched(&outage).await;
    let a = Endpoint::of(&server);
    let session = a.open().await;
    let answered = a
        .call(&session, 1, "notify-then-answer", json!({"count": 2}))
        .await;
    assert_eq!(answered.status(), StatusCode::OK);
    let drained = SseReader::new(answered).drain().await;
    assert_eq!(drained.messages.len(), 3, "{:?}", drained.messages);
    let cursor = drained
        .last_event_id
        .expect("the events carry ids")
        .to_string();

    outage.set_down(true);
    assert_store_unavailable(a.event_stream(&session, Some(&cursor)).await).await;
    assert_store_unavailable(a.event_stream(&session, None).await).await;
    let post = a
        .post(
            Some(&session),
            "application/json",
            &request(2, "echo", json!({})),
        )
        .await;
    assert_store_unavailable(post).await;

    outage.set_down(false);
    let resumed = a.event_stream(&session, Some(&cursor)).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let rest = SseReader::new(resumed).drain().await;
    assert!(
        rest.messages.is_empty(),
        "nothing followed the answer: {:?}",
        rest.messages
    );
    let served = a
        .post(
            Some(&session),
            "application/json",
            &request(3, "echo", json!({"back": true})),
        )
        .await;
    assert_eq!(served.status(), StatusCode::OK);
    let body: Value = served.json().await.unwrap();
    assert_eq!(body["result"]["back"], true);
}

#[tokio::test]
async fn an_sse_answer_whose_event_store_fails_midway_ends_cleanly_and_the_server_serves_on() {
    let outage = Arc::new(EventOutage::default());
    let server = serve_switched(&outage).await;
    let a = Endpoint::of(&server);
    let session = a.open().await;
    let streaming = a
        .call(&session, 1, "stream-slowly", json!({"ms": 400}))
        .await;
    assert_eq!(streaming.status(), StatusCode::OK);
    let mut reader = SseReader::new(streaming);
    let (_, first) = reader.next_json().await.expect("the first part arrives");
    assert_eq!(first["result"]["part"], "first", "{first}");

    outage.set_down(true);
    // The reader panics on a reset or a stall: the stream must end cleanly, asking for a retry.
    let rest = reader.drain().await;
    assert!(rest.messages.is_empty(), "{:?}", rest.messages);
    assert!(rest.retry.is_some(), "the client is told when to resume");
    let refused = a
        .post(
            Some(&session),
            "application/json, text/event-stream",
            &request(2, "stream-slowly", json!({"ms": 1})),
        )
        .await;
    assert_store_unavailable(refused).await;

    outage.set_down(false);
    let again = a.call(&session, 3, "stream-slowly", json!({"ms": 1})).await;
    assert_eq!(again.status(), StatusCode::OK);
    let whole = SseReader::new(again).drain().await;
    let parts: Vec<&Value> = whole
        .messages
        .iter()
        .map(|message| &message["result"]["part"])
        .collect();
    assert_eq!(
        parts,
        [&json!("first"), &json!("final")],
        "{:?}",
        whole.messages
    );
}
