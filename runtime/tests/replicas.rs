//! Two replicas of one server — two `StreamableHttp` transports on two listeners — sharing a
//! session store and an event store, the way a deployment past one machine shares them
//! (DESIGN decision 8). The session store here shares only which sessions exist: each replica
//! materialises its own `Session` record, as one backed by Redis would, so the only way an event
//! published on one replica reaches a reader on the other is the shared event store.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Endpoint, SESSION_HEADER, TestProtocol, TestServer, request, serve, test_hardening};
use protocols_runtime::http::{HttpConfig, ResponseMode};
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::session::{Session, SessionId, SessionLimitReached, SessionStore};
use protocols_runtime::tail::{EventStore, MemoryEventStore};
use protocols_testkit::SseReader;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// What every replica sees: the ids of the live sessions.
#[derive(Default)]
struct SharedSessions {
    ids: Mutex<HashSet<SessionId>>,
}

/// One replica's view of the shared sessions: its own `Session` records, made on first use of an
/// id the shared store knows, with their streams in the replica's event store.
struct ReplicaSessions<S> {
    shared: Arc<SharedSessions>,
    local: Mutex<HashMap<SessionId, Arc<Session<S>>>>,
    events: Arc<dyn EventStore>,
}

impl<S> ReplicaSessions<S> {
    fn new(shared: &Arc<SharedSessions>, events: &Arc<dyn EventStore>) -> Self {
        Self {
            shared: Arc::clone(shared),
            local: Mutex::new(HashMap::new()),
            events: Arc::clone(events),
        }
    }
}

impl<S: Default + Send + Sync + 'static> SessionStore<S> for ReplicaSessions<S> {
    fn has_room(&self) -> bool {
        true
    }

    fn insert(&self, session: Arc<Session<S>>) -> Result<(), SessionLimitReached> {
        self.shared.ids.lock().unwrap().insert(session.id().clone());
        self.local
            .lock()
            .unwrap()
            .insert(session.id().clone(), session);
        Ok(())
    }

    fn get(&self, id: &SessionId, now: Instant) -> Option<Arc<Session<S>>> {
        if !self.shared.ids.lock().unwrap().contains(id) {
            return None;
        }
        let mut local = self.local.lock().unwrap();
        let session = local.entry(id.clone()).or_insert_with(|| {
            Arc::new(Session::with_events(
                id.clone(),
                S::default(),
                now,
                Arc::clone(&self.events),
            ))
        });
        Some(Arc::clone(session))
    }

    fn remove(&self, id: &SessionId) -> Option<Arc<Session<S>>> {
        if !self.shared.ids.lock().unwrap().remove(id) {
            return None;
        }
        let session = self.local.lock().unwrap().remove(id).unwrap_or_else(|| {
            Arc::new(Session::with_events(
                id.clone(),
                S::default(),
                Instant::now(),
                Arc::clone(&self.events),
            ))
        });
        session.end();
        Some(session)
    }

    fn reap(&self, _now: Instant) -> usize {
        0
    }

    fn len(&self) -> usize {
        self.shared.ids.lock().unwrap().len()
    }

    fn clear(&self) {
        self.shared.ids.lock().unwrap().clear();
        for (_, session) in self.local.lock().unwrap().drain() {
            session.end();
        }
    }
}

fn config() -> HttpConfig {
    HttpConfig::default()
        .tail_capacity(4_096)
        .response_mode(ResponseMode::Sse)
}

/// One replica on its own listener, with the shared session ids and `events`.
async fn replica(shared: &Arc<SharedSessions>, events: &Arc<dyn EventStore>) -> TestServer {
    let sessions = Arc::new(ReplicaSessions::new(shared, events));
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
