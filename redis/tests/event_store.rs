//! The Redis event store against a real, throwaway `redis-server`: the shared event store
//! contract (its two handles two stores, as two replicas hold them), a cursor one replica
//! issued resumed live on another, a request stream's own reader fed in process (never before
//! Redis took an event, its steps in one pipeline), the stream's cap as the tail, a killed
//! Redis, no key left after a session's close or expiry, round trips counted.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use protocols_redis::{RedisConfig, RedisEventStore};
use protocols_runtime::session::{SessionId, SessionLimits, StoreError};
use protocols_runtime::tail::{
    EventCursor, EventReader, EventStore, EventStream, Next, PublishError, ResumeError, Start,
};
use protocols_testkit::events::event_store_contract;
use protocols_testkit::{RedisServer, Reply};

/// Short, so an outage costs the tests little; the default is a second.
const TIMEOUT: Duration = Duration::from_millis(250);

fn config(server: &RedisServer, prefix: &str) -> RedisConfig {
    RedisConfig::new(server.url())
        .prefix(prefix.to_owned())
        .timeout(TIMEOUT)
        .reconnect_delay(Duration::from_millis(20))
        .block(Duration::from_millis(500))
}

async fn store(config: RedisConfig, capacity: usize) -> Arc<RedisEventStore> {
    Arc::new(
        RedisEventStore::connect(config, capacity)
            .await
            .expect("connected"),
    )
}

/// A fresh server and one replica's store on it, its streams keeping `capacity` events.
async fn one_replica(capacity: usize) -> (RedisServer, Arc<RedisEventStore>) {
    let server = RedisServer::start();
    let events = store(config(&server, "p:"), capacity).await;
    (server, events)
}

/// A fresh server and two replicas' stores sharing it.
async fn two_replicas(
    capacity: usize,
) -> (RedisServer, Arc<RedisEventStore>, Arc<RedisEventStore>) {
    let (server, a) = one_replica(capacity).await;
    let b = store(config(&server, "p:"), capacity).await;
    (server, a, b)
}

fn payload(n: usize) -> Bytes {
    Bytes::from(format!("{{\"n\":{n}}}"))
}

async fn publish(stream: &dyn EventStream, n: usize) -> EventCursor {
    let id = stream.publish(payload(n)).await.expect("published");
    EventCursor::from_event_id(id).expect("a cursor")
}

/// The next thing the reader finds, waiting (bounded) through idle periods.
async fn next(reader: &mut dyn EventReader) -> Next {
    loop {
        match reader.poll_next() {
            Next::Idle => tokio::time::timeout(Duration::from_secs(5), reader.changed())
                .await
                .expect("the reader wakes"),
            other => return other,
        }
    }
}

async fn read(reader: &mut dyn EventReader, count: usize) -> Vec<Bytes> {
    let mut out = Vec::new();
    while out.len() < count {
        match next(reader).await {
            Next::Event(_, bytes) => out.push(bytes),
            other => panic!("expected an event, found {other:?}"),
        }
    }
    out
}

/// Waits (bounded) until the server holds no key.
async fn until_no_key(server: &RedisServer, within: Duration) {
    let started = Instant::now();
    while server.key_count() > 0 {
        assert!(
            started.elapsed() < within,
            "keys left: {:?}",
            server.command(&["KEYS", "*"])
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_store_keeps_the_event_store_contract_across_two_replicas() {
    let server = RedisServer::start();
    let stores = AtomicUsize::new(0);
    event_store_contract(|capacity| {
        // Each claim on keys of its own, as on a fresh Redis; two stores, as two replicas.
        let prefix = format!("contract{}:", stores.fetch_add(1, Ordering::SeqCst));
        let connect = async {
            [
                store(config(&server, &prefix), capacity).await as Arc<dyn EventStore>,
                store(config(&server, &prefix), capacity).await,
            ]
        };
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(connect))
    })
    .await;
}

#[tokio::test]
async fn a_cursor_one_replica_issued_resumes_on_another_and_follows_it_live() {
    let (_server, a, b) = two_replicas(16).await;
    let session = SessionId::random();
    let stream = a.open_request_stream(&session).await.expect("opened");
    let mut on_a = stream.subscribe(Start::Beginning);
    let first = publish(stream.as_ref(), 1).await;
    publish(stream.as_ref(), 2).await;
    assert_eq!(read(on_a.as_mut(), 2).await, vec![payload(1), payload(2)]);

    let mut on_b = b.resume(&session, first).await.expect("resumed on b");
    assert_eq!(read(on_b.as_mut(), 1).await, vec![payload(2)]);
    // Published on a after the resume: b's blocked reader wakes to it, a's was taken over.
    publish(stream.as_ref(), 3).await;
    assert_eq!(read(on_b.as_mut(), 1).await, vec![payload(3)]);
    assert_eq!(next(on_a.as_mut()).await, Next::Superseded);
    stream.close().await.expect("closed");
    assert_eq!(next(on_b.as_mut()).await, Next::Closed);
}

#[tokio::test]
async fn the_tail_is_the_redis_streams_cap_and_an_evicted_cursor_is_refused() {
    let (server, a, b) = two_replicas(3).await;
    let session = SessionId::random();
    let stream = a.open_request_stream(&session).await.expect("opened");
    let mut cursors = Vec::new();
    for n in 0..10 {
        cursors.push(publish(stream.as_ref(), n).await);
    }
    let key = format!("p:events:{session}:{}", stream.number());
    assert_eq!(server.command(&["XLEN", &key]), Reply::Integer(3));
    let refused = b.resume(&session, cursors[5]).await;
    assert!(matches!(refused, Err(ResumeError::Evicted)), "{refused:?}");
    let mut kept = b.resume(&session, cursors[6]).await.expect("kept");
    assert_eq!(
        read(kept.as_mut(), 3).await,
        vec![payload(7), payload(8), payload(9)]
    );
    // A live reader that falls behind the cap is told so.
    let mut slow = stream.subscribe(Start::Beginning);
    assert_eq!(next(slow.as_mut()).await, Next::Evicted);
}

#[tokio::test]
async fn a_released_reader_ends_after_what_came_before_and_another_replica_resumes_the_rest() {
    let (_server, a, b) = two_replicas(16).await;
    let session = SessionId::random();
    let stream = a.open_request_stream(&session).await.expect("opened");
    let mut reader = stream.subscribe(Start::Beginning);
    let first = publish(stream.as_ref(), 1).await;
    stream
        .release_reader(Duration::from_millis(250))
        .await
        .expect("released");
    publish(stream.as_ref(), 2).await;
    assert_eq!(read(reader.as_mut(), 1).await, vec![payload(1)]);
    assert_eq!(
        next(reader.as_mut()).await,
        Next::Released(Duration::from_millis(250))
    );
    let mut resumed = b.resume(&session, first).await.expect("resumed");
    assert_eq!(read(resumed.as_mut(), 1).await, vec![payload(2)]);
}

#[tokio::test]
async fn a_killed_redis_is_unavailable_within_the_timeout_and_the_store_recovers_after() {
    let (mut server, events) = one_replica(16).await;
    let session = SessionId::random();
    let stream = events.open_request_stream(&session).await.expect("opened");
    let cursor = publish(stream.as_ref(), 1).await;
    let mut reader = stream.subscribe(Start::Beginning);
    assert_eq!(read(reader.as_mut(), 1).await, vec![payload(1)]);

    server.stop();
    let bound = TIMEOUT + Duration::from_millis(400);
    let asked = Instant::now();
    let refused = stream.publish(payload(2)).await;
    assert!(
        matches!(
            refused,
            Err(PublishError::Store(StoreError::Unavailable(_)))
        ),
        "{refused:?}"
    );
    assert!(asked.elapsed() < bound, "{:?}", asked.elapsed());
    let asked = Instant::now();
    let refused = events.resume(&session, cursor).await;
    assert!(
        matches!(refused, Err(ResumeError::Store(StoreError::Unavailable(_)))),
        "{refused:?}"
    );
    assert!(asked.elapsed() < bound, "{:?}", asked.elapsed());
    let asked = Instant::now();
    let refused = events.open_request_stream(&session).await;
    assert!(
        matches!(refused, Err(StoreError::Unavailable(_))),
        "{refused:?}"
    );
    assert!(asked.elapsed() < bound, "{:?}", asked.elapsed());
    assert!(
        matches!(
            events.close_session(&session).await,
            Err(StoreError::Unavailable(_))
        ),
        "a close is refused too"
    );
    // The live reader's blocking read breaks: it ends so its client resumes later.
    assert_eq!(next(reader.as_mut()).await, Next::Failed);

    server.resume();
    // The killed Redis kept nothing (no persistence, scripts lost too); the store serves again
    // by itself, on its shared connection and on readers' own.
    let resumed = Instant::now();
    let fresh = SessionId::random();
    let reopened = loop {
        match events.open_request_stream(&fresh).await {
            Ok(stream) => break stream,
            Err(error) => {
                assert!(
                    resumed.elapsed() < Duration::from_secs(3),
                    "not recovered: {error}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let mut again = reopened.subscribe(Start::Beginning);
    publish(reopened.as_ref(), 7).await;
    assert_eq!(read(again.as_mut(), 1).await, vec![payload(7)]);
    let lost = events.resume(&session, cursor).await;
    assert!(matches!(lost, Err(ResumeError::Unknown)), "{lost:?}");
}

#[tokio::test]
async fn closing_sessions_leaves_no_key() {
    let (server, a, b) = two_replicas(16).await;
    let sessions: Vec<SessionId> = (0..3).map(|_| SessionId::random()).collect();
    let mut readers = Vec::new();
    for session in &sessions {
        let standalone = a.standalone(session).await.expect("opened");
        publish(standalone.as_ref(), 1).await;
        let request = a.open_request_stream(session).await.expect("opened");
        publish(request.as_ref(), 1).await;
        readers.push(standalone.subscribe(Start::Beginning));
    }
    assert!(server.key_count() >= 9, "meta, ctl and two streams each");
    for session in &sessions {
        b.close_session(session).await.expect("closed");
    }
    for reader in &mut readers {
        assert_eq!(read(reader.as_mut(), 1).await, vec![payload(1)]);
        assert_eq!(next(reader.as_mut()).await, Next::Closed);
    }
    until_no_key(&server, Duration::from_secs(3)).await;
}

#[tokio::test]
async fn sessions_no_one_closes_leave_no_key_after_the_idle_limit() {
    let server = RedisServer::start();
    let idle = Duration::from_secs(1);
    let limits = SessionLimits::default().idle(idle);
    let events = store(config(&server, "p:").limits(limits), 16).await;
    let started = Instant::now();
    for _ in 0..3 {
        let session = SessionId::random();
        let standalone = events.standalone(&session).await.expect("opened");
        publish(standalone.as_ref(), 1).await;
        let request = events.open_request_stream(&session).await.expect("opened");
        publish(request.as_ref(), 1).await;
        // A reader that ends takes its refreshes with it.
        let mut reader = request.subscribe(Start::Beginning);
        assert_eq!(read(reader.as_mut(), 1).await, vec![payload(1)]);
    }
    assert!(server.key_count() >= 9);
    until_no_key(&server, Duration::from_secs(4)).await;
    assert!(started.elapsed() >= idle, "expired before the idle limit");
}

#[tokio::test]
async fn a_publish_is_one_round_trip() {
    let (server, events) = one_replica(16).await;
    let session = SessionId::random();
    let stream = events.open_request_stream(&session).await.expect("opened");
    publish(stream.as_ref(), 0).await;
    server.command(&["CONFIG", "RESETSTAT"]);
    for n in 1..=10 {
        publish(stream.as_ref(), n).await;
    }
    assert_eq!(client_calls(&server), 10, "one script call per publish");
    server.command(&["CONFIG", "RESETSTAT"]);
    let cursor = EventCursor {
        stream: stream.number(),
        sequence: 5,
    };
    let mut reader = events.resume(&session, cursor).await.expect("resumed");
    assert_eq!(read(reader.as_mut(), 6).await.len(), 6);
    assert_eq!(
        client_calls(&server),
        1,
        "a resume is one script call that brings the first batch"
    );
}

#[tokio::test]
async fn a_stream_nothing_was_published_into_costs_only_its_opening() {
    let (server, events) = one_replica(16).await;
    let session = SessionId::random();
    server.command(&["CONFIG", "RESETSTAT"]);
    // What an answer that goes out as plain JSON does with its stream.
    let stream = events.open_request_stream(&session).await.expect("opened");
    let mut reader = stream.subscribe(Start::Beginning);
    assert_eq!(reader.poll_next(), Next::Idle);
    stream.close().await.expect("closed");
    assert_eq!(next(reader.as_mut()).await, Next::Closed);
    drop(reader);
    assert_eq!(client_calls(&server), 1, "the opening alone");
}

#[tokio::test]
async fn a_request_streams_own_reader_reads_nothing_from_redis_and_its_steps_share_one_pipeline() {
    let (server, events) = one_replica(16).await;
    let session = SessionId::random();
    let stream = events.open_request_stream(&session).await.expect("opened");
    let mut reader = stream.subscribe(Start::Beginning);
    server.command(&["CONFIG", "RESETSTAT"]);
    let before = events.sent();
    // What a short call does with its answer stream: its events and its close asked together.
    let published: Vec<_> = (1..=3).map(|n| stream.publish(payload(n))).collect();
    let closed = stream.close();
    for answer in published {
        answer.await.expect("published");
    }
    closed.await.expect("closed");
    assert_eq!(
        read(reader.as_mut(), 3).await,
        vec![payload(1), payload(2), payload(3)]
    );
    assert_eq!(next(reader.as_mut()).await, Next::Closed);
    let after = events.sent();
    assert_eq!(
        (
            after.pipelines - before.pipelines,
            after.steps - before.steps
        ),
        (1, 4),
        "three publishes and the close in one pipeline"
    );
    assert_eq!(
        client_calls(&server),
        4,
        "the steps alone: the reader fetched nothing, nor blocked in XREAD"
    );
}

#[tokio::test]
async fn an_event_reaches_the_streams_own_reader_only_once_redis_has_taken_it() {
    let server = RedisServer::start();
    let events = store(config(&server, "p:").timeout(Duration::from_secs(3)), 16).await;
    let session = SessionId::random();
    let stream = events.open_request_stream(&session).await.expect("opened");
    let mut reader = stream.subscribe(Start::Beginning);
    // Redis holds every client's commands for a while: the publish waits, and so does the reader.
    server.command(&["CLIENT", "PAUSE", "300", "ALL"]);
    let published = tokio::spawn(stream.publish(payload(1)));
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!published.is_finished(), "Redis has not answered yet");
    assert_eq!(
        reader.poll_next(),
        Next::Idle,
        "nothing before Redis took it"
    );
    let id = published.await.expect("joined").expect("published");
    match next(reader.as_mut()).await {
        Next::Event(handed, bytes) => assert_eq!((handed, bytes), (id, payload(1))),
        other => panic!("expected the event, found {other:?}"),
    }
}

#[tokio::test]
async fn an_event_redis_did_not_take_never_reaches_the_streams_own_reader() {
    let (mut server, events) = one_replica(16).await;
    let session = SessionId::random();
    let stream = events.open_request_stream(&session).await.expect("opened");
    let mut reader = stream.subscribe(Start::Beginning);
    publish(stream.as_ref(), 1).await;
    server.stop();
    let refused = stream.publish(payload(2)).await;
    assert!(
        matches!(refused, Err(PublishError::Store(_))),
        "{refused:?}"
    );
    assert_eq!(read(reader.as_mut(), 1).await, vec![payload(1)]);
    assert_eq!(
        next(reader.as_mut()).await,
        Next::Failed,
        "the reader ends so its client resumes from Redis"
    );
}

#[tokio::test]
async fn every_event_a_requests_own_reader_was_handed_resumes_on_another_replica() {
    let (_server, a, b) = two_replicas(16).await;
    let session = SessionId::random();
    let stream = a.open_request_stream(&session).await.expect("opened");
    let mut own = stream.subscribe(Start::Beginning);
    for n in 1..=3 {
        publish(stream.as_ref(), n).await;
    }
    let mut handed = Vec::new();
    for _ in 1..=3 {
        match next(own.as_mut()).await {
            Next::Event(id, bytes) => handed.push((id, bytes)),
            other => panic!("expected an event, found {other:?}"),
        }
    }
    // Each cursor the client saw is in Redis: resuming before it on b brings that very event.
    for (id, bytes) in &handed {
        let cursor = EventCursor::from_event_id(*id).expect("a cursor");
        let before = EventCursor {
            sequence: cursor.sequence - 1,
            ..cursor
        };
        let mut resumed = b.resume(&session, before).await.expect("resumed on b");
        assert_eq!(&read(resumed.as_mut(), 1).await[0], bytes);
    }
    // The client resumes on b after the first event: it gets the rest, and what follows.
    let first = EventCursor::from_event_id(handed[0].0).expect("a cursor");
    let mut on_b = b.resume(&session, first).await.expect("resumed on b");
    publish(stream.as_ref(), 4).await;
    stream.close().await.expect("closed");
    assert_eq!(
        read(on_b.as_mut(), 3).await,
        vec![payload(2), payload(3), payload(4)]
    );
    assert_eq!(next(on_b.as_mut()).await, Next::Closed);
    assert_eq!(
        next(own.as_mut()).await,
        Next::Superseded,
        "the event after the takeover went to b alone"
    );
}

#[tokio::test]
async fn a_standalone_stream_opened_before_opens_again_without_a_step_and_writes_nothing_once_closed()
 {
    let (server, a, b) = two_replicas(16).await;
    let session = SessionId::random();
    a.standalone(&session).await.expect("opened");
    let before = a.sent();
    let again = a.standalone(&session).await.expect("opened again");
    assert_eq!(a.sent(), before, "the epoch is known: no step");
    publish(again.as_ref(), 1).await;
    // Closed on another replica: a handle of the closed session writes nothing anywhere.
    b.close_session(&session).await.expect("closed");
    let stale = a.standalone(&session).await.expect("opened");
    let refused = stale.publish(payload(2)).await;
    assert!(matches!(refused, Err(PublishError::Closed)), "{refused:?}");
    until_no_key(&server, Duration::from_secs(3)).await;
}

/// The commands clients sent since the statistics were reset (commands a script runs are not
/// counted), less the `INFO` asking.
fn client_calls(server: &RedisServer) -> u64 {
    let Reply::Bulk(Some(info)) = server.command(&["INFO", "commandstats"]) else {
        panic!("no INFO reply");
    };
    let calls = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(&format!("cmdstat_{name}:calls=")))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |calls| calls.parse::<u64>().unwrap())
    };
    ["evalsha", "eval", "xread", "script|load", "ping"]
        .iter()
        .map(|name| calls(name))
        .sum()
}
