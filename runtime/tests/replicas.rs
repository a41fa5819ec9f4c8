//! Two replicas of one server — two `StreamableHttp` transports on two listeners — sharing a
//! session store and an event store, the way a deployment past one machine shares them
//! (DESIGN decision 8). The session store here is the testkit's record store: replicas share
//! serialized records only, and each replica materialises its own `Session` from the record, as
//! one backed by Redis does. So the test protocol's state reaches the other replica only
//! through the record, and an event published on one replica reaches a reader on the other
//! only through the shared event store.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    Endpoint, SESSION_HEADER, TestProtocol, TestServer, TestSession, request, serve, test_hardening,
};
use protocols_runtime::http::{HttpConfig, ResponseMode};
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::session::SessionLimits;
use protocols_runtime::tail::{EventStore, MemoryEventStore};
use protocols_testkit::SseReader;
use protocols_testkit::sessions::{RecordSessionStore, SharedRecords};
use reqwest::StatusCode;
use reqwest::header::{self, HeaderName};
use serde_json::{Value, json};

/// What every replica sees: the sessions' records.
type SharedSessions = SharedRecords;

fn config() -> HttpConfig {
    HttpConfig::default()
        .tail_capacity(4_096)
        .response_mode(ResponseMode::Sse)
}

/// One replica on its own listener, with the shared session records and `events`.
async fn replica(shared: &Arc<SharedSessions>, events: &Arc<dyn EventStore>) -> TestServer {
    let sessions = Arc::new(RecordSessionStore::<TestSession>::new(
        shared,
        events,
        SessionLimits::default(),
    ));
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http_with_stores(
            "/rpc",
            TestProtocol::new(),
            config(),
            sessions,
            Arc::clone(events),
        )
        .build()
        .expect("server builds");
    serve(server).await
}

fn shared_event_store() -> Arc<dyn EventStore> {
    Arc::new(MemoryEventStore::new(4_096))
}

/// The `i` of a `progress` notification, or `None` for anything else.
fn progress_index(message: &Value) -> Option<u64> {
    (message["method"] == "progress").then(|| message["params"]["i"].as_u64().expect("an index"))
}

#[tokio::test]
async fn a_stream_started_on_one_replica_resumes_on_another_with_every_event_exactly_once_in_order()
{
    const COUNT: u64 = 2_000;
    let (shared, events) = (Arc::new(SharedSessions::default()), shared_event_store());
    let replica_a = replica(&shared, &events).await;
    let replica_b = replica(&shared, &events).await;
    let (a, b) = (Endpoint::of(&replica_a), Endpoint::of(&replica_b));
    let session = a.open().await;

    let response = a.call(&session, 7, "burst", json!({"count": COUNT})).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut on_a = SseReader::new(response);
    let mut seen: Vec<u64> = Vec::new();
    while seen.len() < 300 {
        let (_, message) = on_a.next_json().await.expect("an event on replica A");
        seen.push(progress_index(&message).expect("a progress notification"));
    }
    let cursor = on_a.last_event_id().expect("events carry ids");
    drop(on_a);

    // Replica A is still publishing; the client comes back through replica B.
    let resumed = b.event_stream(&session, Some(&cursor.to_string())).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut on_b = SseReader::new(resumed);
    let mut answer = None;
    while let Some((_, message)) = on_b.next_json().await {
        match progress_index(&message) {
            Some(index) => seen.push(index),
            None => {
                answer = Some(message);
                break;
            }
        }
    }
    assert_eq!(
        seen,
        (0..COUNT).collect::<Vec<_>>(),
        "every event exactly once, in order, across the two replicas"
    );
    let answer = answer.expect("the final answer arrives on replica B");
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"]["sent"], COUNT);
    assert!(
        on_b.next_json().await.is_none(),
        "the stream ends after the answer"
    );
}

#[tokio::test]
async fn messages_sent_while_serving_on_one_replica_reach_the_session_stream_opened_on_the_other() {
    let (shared, events) = (Arc::new(SharedSessions::default()), shared_event_store());
    let replica_a = replica(&shared, &events).await;
    let replica_b = replica(&shared, &events).await;
    let (a, b) = (Endpoint::of(&replica_a), Endpoint::of(&replica_b));
    let session = a.open().await;
    let stream = a.event_stream(&session, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut on_a = SseReader::new(stream);

    // Served by replica B, whose handler sends on the session's own stream after answering.
    let answer = b
        .post(
            Some(&session),
            "application/json",
            &request(3, "notify-later", json!({})),
        )
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let (id, message) = tokio::time::timeout(Duration::from_secs(5), on_a.next_json())
        .await
        .expect("in time")
        .expect("the message arrives on replica A's stream");
    assert_eq!(message["method"], "later");

    // Ending the session on replica B ends the stream held open by replica A.
    let deleted = b
        .client
        .delete(&b.url)
        .header(SESSION_HEADER, &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    assert!(
        tokio::time::timeout(Duration::from_secs(5), on_a.next_json())
            .await
            .expect("the stream ends in time")
            .is_none()
    );
    let gone = a
        .event_stream(&session, Some(&id.expect("an id").to_string()))
        .await;
    assert_eq!(
        gone.status(),
        StatusCode::NOT_FOUND,
        "the session is gone everywhere"
    );
}

/// The control: replicas that share sessions but keep their own event stores cannot resume
/// each other's streams — so the two tests above pass only through the shared event store.
#[tokio::test]
async fn replicas_with_separate_event_stores_refuse_each_others_resumes_with_410() {
    let shared = Arc::new(SharedSessions::default());
    let replica_a = replica(&shared, &shared_event_store()).await;
    let replica_b = replica(&shared, &shared_event_store()).await;
    let (a, b) = (Endpoint::of(&replica_a), Endpoint::of(&replica_b));
    let session = a.open().await;
    let response = a.call(&session, 7, "burst", json!({"count": 20})).await;
    let mut on_a = SseReader::new(response);
    on_a.next_json().await.expect("an event on replica A");
    let cursor = on_a.last_event_id().expect("events carry ids");
    drop(on_a);
    let refused = b.event_stream(&session, Some(&cursor.to_string())).await;
    assert_eq!(refused.status(), StatusCode::GONE);
    let resumed_on_a = a.event_stream(&session, Some(&cursor.to_string())).await;
    assert_eq!(resumed_on_a.status(), StatusCode::OK);
}

/// The heart of the defect replicas had: state the opening request set on one replica is the
/// session's state on the other, rebuilt from the shared record rather than made afresh.
#[tokio::test]
async fn state_the_opening_request_set_on_one_replica_is_seen_on_the_other() {
    let (shared, events) = (Arc::new(SharedSessions::default()), shared_event_store());
    let replica_a = replica(&shared, &events).await;
    let replica_b = replica(&shared, &events).await;
    let (a, b) = (Endpoint::of(&replica_a), Endpoint::of(&replica_b));
    let session = a.open().await;

    let on_b = b
        .post(
            Some(&session),
            "application/json",
            &request(2, "opened-by", json!({})),
        )
        .await;
    assert_eq!(on_b.status(), StatusCode::OK);
    let answer: Value = on_b.json().await.unwrap();
    assert_eq!(answer["result"]["openedBy"], "open");
}

const SECURITY_HEADERS: [HeaderName; 6] = [
    header::CONTENT_SECURITY_POLICY,
    header::STRICT_TRANSPORT_SECURITY,
    header::X_FRAME_OPTIONS,
    header::X_CONTENT_TYPE_OPTIONS,
    header::CACHE_CONTROL,
    header::REFERRER_POLICY,
];

/// A session store that cannot answer is a 503 with a JSON-RPC error body and every security
/// header, on POST, GET and DELETE alike; never a 404 "unknown session", since the session may
/// well exist, and it is served again once the store is back.
#[tokio::test]
async fn a_store_outage_is_a_503_with_a_jsonrpc_body_never_an_unknown_session() {
    let (shared, events) = (Arc::new(SharedSessions::default()), shared_event_store());
    let replica_a = replica(&shared, &events).await;
    let a = Endpoint::of(&replica_a);
    let session = a.open().await;
    shared.set_down(true);

    let post = a
        .post(
            Some(&session),
            "application/json",
            &request(4, "echo", json!({})),
        )
        .await;
    let get = a.event_stream(&session, None).await;
    let delete = a
        .client
        .delete(&a.url)
        .header(SESSION_HEADER, &session)
        .send()
        .await
        .unwrap();
    for response in [post, get, delete] {
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        for name in &SECURITY_HEADERS {
            assert!(response.headers().contains_key(name), "{name} missing");
        }
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["error"]["code"], -32017);
    }

    shared.set_down(false);
    let served = a
        .post(
            Some(&session),
            "application/json",
            &request(5, "echo", json!({"back": true})),
        )
        .await;
    assert_eq!(served.status(), StatusCode::OK);
}
