//! The Redis A2A task store against a real, throwaway `redis-server`, two stores standing for
//! two replicas: tasks saved, read and listed by owner; push configs kept with their task;
//! expiry by Redis itself with no key left behind; every live update seen by a subscriber on
//! the other store, in order; a cancellation reaching the store that watches the task; an
//! outage answered "unavailable" within the timeout, and recovery once Redis is back; the round
//! trips of a live update counted.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use protocols_a2a::error::A2aError;
use protocols_a2a::store::{Owner, TaskFilter, TaskLimits, TaskStore};
use protocols_a2a::v1::types::{
    StreamResponse, StreamResponsePayload, Task, TaskPushNotificationConfig, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use protocols_redis::{RedisConfig, RedisTaskStore};
use protocols_testkit::RedisServer;
use tokio_util::sync::CancellationToken;

/// Short, so an outage costs the tests little; the default is a second.
const TIMEOUT: Duration = Duration::from_millis(250);

fn config(server: &RedisServer) -> RedisConfig {
    RedisConfig::new(server.url())
        .timeout(TIMEOUT)
        .reconnect_delay(Duration::from_millis(20))
}

async fn store(server: &RedisServer, limits: TaskLimits) -> RedisTaskStore {
    RedisTaskStore::connect(config(server), limits)
        .await
        .expect("connected")
}

/// Two stores on one Redis with the same limits: two replicas' views of the same tasks.
async fn two_stores(server: &RedisServer, limits: TaskLimits) -> (RedisTaskStore, RedisTaskStore) {
    (
        store(server, limits.clone()).await,
        store(server, limits).await,
    )
}

/// Saves a task of `alice()` in context "c", which the test needs to succeed.
async fn insert_for_alice(store: &RedisTaskStore, id: &str, state: TaskState) {
    store.insert(task(id, "c", state), &alice()).await.unwrap();
}

fn task(id: &str, context: &str, state: TaskState) -> Task {
    Task {
        artifacts: Vec::new(),
        context_id: Some(context.into()),
        history: Vec::new(),
        id: id.into(),
        metadata: serde_json::Map::new(),
        status: TaskStatus {
            message: None,
            state,
            timestamp: Some(chrono::Utc::now()),
        },
    }
}

fn alice() -> Owner {
    Owner::Subject("alice".into())
}

fn ids(tasks: &[Task]) -> Vec<String> {
    tasks.iter().map(|task| task.id.clone()).collect()
}

fn status_event(task: &Task) -> Option<StreamResponse> {
    Some(StreamResponse {
        payload: StreamResponsePayload::StatusUpdate(TaskStatusUpdateEvent {
            context_id: task.context_id.clone().unwrap_or_default(),
            metadata: serde_json::Map::new(),
            status: task.status.clone(),
            task_id: task.id.clone(),
        }),
    })
}

fn state_of(event: &StreamResponse) -> TaskState {
    match &event.payload {
        StreamResponsePayload::StatusUpdate(update) => update.status.state,
        other => panic!("not a status update: {other:?}"),
    }
}

#[tokio::test]
async fn tasks_saved_on_one_store_are_read_on_another_and_listed_by_owner_newest_first() {
    let server = RedisServer::start();
    let (first, second) = two_stores(&server, TaskLimits::default()).await;
    for n in 0..5 {
        let context = if n % 2 == 0 { "even" } else { "odd" };
        first
            .insert(
                task(&format!("t{n}"), context, TaskState::TaskStateWorking),
                &alice(),
            )
            .await
            .unwrap();
    }
    first
        .insert(
            task("theirs", "even", TaskState::TaskStateWorking),
            &Owner::Anonymous,
        )
        .await
        .unwrap();
    let (read, owner) = second.get_owned("t3").await.unwrap().expect("found");
    assert_eq!((read.id.as_str(), owner), ("t3", alice()));
    assert!(second.get("missing").await.unwrap().is_none());

    let mine = TaskFilter {
        owner: Some(alice()),
        ..TaskFilter::default()
    };
    let page = second.list(&mine, None, 2).await.unwrap();
    assert_eq!(
        (ids(&page.tasks), page.total),
        (vec!["t4".into(), "t3".into()], 5)
    );
    // A task whose status changes moves to the front; the cursor keeps the pages stable.
    first
        .update("t0", &mut |task| {
            task.status.timestamp = Some(chrono::Utc::now());
        })
        .await
        .unwrap();
    let page = second.list(&mine, page.next_cursor, 2).await.unwrap();
    assert_eq!(ids(&page.tasks), ["t2", "t1"]);
    assert_eq!(
        page.next_cursor, None,
        "t0 moved ahead of the pages already read"
    );
    let fresh = second.list(&mine, None, 10).await.unwrap();
    assert_eq!(ids(&fresh.tasks), ["t0", "t4", "t3", "t2", "t1"]);

    let odd = TaskFilter {
        owner: Some(alice()),
        context_id: Some("odd".into()),
        ..TaskFilter::default()
    };
    assert_eq!(
        ids(&second.list(&odd, None, 10).await.unwrap().tasks),
        ["t3", "t1"]
    );
    let everyone = second.list(&TaskFilter::default(), None, 10).await.unwrap();
    assert_eq!(everyone.total, 6);
}

#[tokio::test]
async fn push_configs_are_kept_with_their_task_replaced_by_id_and_bounded() {
    let server = RedisServer::start();
    let limits = TaskLimits::default().max_push_configs_per_task(2);
    let (first, second) = two_stores(&server, limits).await;
    insert_for_alice(&first, "t", TaskState::TaskStateWorking).await;
    let config = |id: &str, url: &str| TaskPushNotificationConfig {
        id: Some(id.into()),
        task_id: Some("t".into()),
        url: url.into(),
        ..TaskPushNotificationConfig::default()
    };
    first
        .put_push_config(config("a", "https://a.example/hook"))
        .await
        .unwrap();
    first
        .put_push_config(config("b", "https://b.example/hook"))
        .await
        .unwrap();
    second
        .put_push_config(config("b", "https://b.example/other"))
        .await
        .unwrap();
    let refused = second
        .put_push_config(config("c", "https://c.example/hook"))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), http_status(429));
    let stored = second.push_configs("t").await.unwrap();
    let urls: Vec<&str> = stored.iter().map(|config| config.url.as_str()).collect();
    assert_eq!(urls, ["https://a.example/hook", "https://b.example/other"]);
    assert!(first.delete_push_config("t", "a").await.unwrap());
    assert!(!first.delete_push_config("t", "a").await.unwrap());
    assert_eq!(second.push_configs("t").await.unwrap().len(), 1);
    let unknown = TaskPushNotificationConfig {
        task_id: Some("nope".into()),
        ..config("x", "https://x.example/hook")
    };
    assert!(matches!(
        first.put_push_config(unknown).await,
        Err(A2aError::TaskNotFound(_))
    ));
}

fn http_status(code: u16) -> http::StatusCode {
    http::StatusCode::from_u16(code).unwrap()
}

#[tokio::test]
async fn an_owner_at_its_cap_drops_its_oldest_settled_task_then_is_refused_with_429() {
    let server = RedisServer::start();
    let store = store(&server, TaskLimits::default().max_tasks_per_owner(2)).await;
    insert_for_alice(&store, "done", TaskState::TaskStateCompleted).await;
    insert_for_alice(&store, "busy", TaskState::TaskStateWorking).await;
    insert_for_alice(&store, "next", TaskState::TaskStateWorking).await;
    assert!(
        store.get("done").await.unwrap().is_none(),
        "the settled task made room"
    );
    let refused = store
        .insert(task("more", "c", TaskState::TaskStateWorking), &alice())
        .await
        .unwrap_err();
    assert_eq!(refused.status(), http_status(429));
    store
        .insert(
            task("other", "c", TaskState::TaskStateWorking),
            &Owner::Anonymous,
        )
        .await
        .expect("another owner has a share of its own");
}

#[tokio::test]
async fn a_task_and_all_its_keys_expire_a_retention_after_its_last_change() {
    let server = RedisServer::start();
    let store = store(
        &server,
        TaskLimits::default().retention(Duration::from_secs(1)),
    )
    .await;
    let started = Instant::now();
    insert_for_alice(&store, "t", TaskState::TaskStateWorking).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let shared = store.shared().expect("shared");
    shared
        .update_announcing(
            "t",
            &mut |task| task.status.state = TaskState::TaskStateCompleted,
            &status_event,
        )
        .await
        .unwrap();
    store
        .put_push_config(TaskPushNotificationConfig {
            id: Some("p".into()),
            task_id: Some("t".into()),
            url: "https://a.example/hook".into(),
            ..TaskPushNotificationConfig::default()
        })
        .await
        .unwrap();
    // Record, event stream, owner's set, all tasks' set, sequence.
    assert_eq!(server.key_count(), 5);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        store.get("t").await.unwrap().is_some(),
        "the change moved the expiry"
    );
    while server.key_count() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "keys outlived their expiry"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(started.elapsed() >= Duration::from_millis(1600));
    assert!(store.get("t").await.unwrap().is_none());
    let listed = store.list(&TaskFilter::default(), None, 10).await.unwrap();
    assert_eq!(listed.total, 0);
}

#[tokio::test]
async fn every_update_announced_on_one_store_reaches_a_subscriber_on_another_in_order() {
    let server = RedisServer::start();
    let (runner, watcher) = two_stores(&server, TaskLimits::default()).await;
    insert_for_alice(&runner, "t", TaskState::TaskStateSubmitted).await;
    let announce = |n: usize| {
        let runner = &runner;
        async move {
            runner
                .shared()
                .unwrap()
                .update_announcing(
                    "t",
                    &mut |task| {
                        task.status.state = TaskState::TaskStateWorking;
                        task.metadata.insert("step".into(), n.into());
                    },
                    &|task| {
                        let mut event = status_event(task)?;
                        if let StreamResponsePayload::StatusUpdate(update) = &mut event.payload {
                            update.metadata.insert("step".into(), n.into());
                        }
                        Some(event)
                    },
                )
                .await
                .unwrap()
        }
    };
    // Two updates before the subscription: the snapshot has them, the events do not.
    announce(1).await;
    announce(2).await;
    let (snapshot, mut events) = watcher
        .shared()
        .unwrap()
        .subscribe("t")
        .await
        .unwrap()
        .expect("found");
    assert_eq!(snapshot.metadata.get("step"), Some(&2.into()));
    for n in 3..=40 {
        announce(n).await;
    }
    runner
        .shared()
        .unwrap()
        .update_announcing(
            "t",
            &mut |task| task.status.state = TaskState::TaskStateCompleted,
            &status_event,
        )
        .await
        .unwrap();
    let mut steps = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("an event within 5 s")
            .expect("the stream goes on until the task completes");
        if state_of(&event) == TaskState::TaskStateCompleted {
            break;
        }
        let StreamResponsePayload::StatusUpdate(update) = &event.payload else {
            unreachable!()
        };
        steps.push(update.metadata["step"].as_u64().unwrap());
    }
    assert_eq!(steps, (3..=40).collect::<Vec<u64>>());
}

#[tokio::test]
async fn a_cancellation_requested_on_one_store_fires_the_token_the_other_watches() {
    let server = RedisServer::start();
    let (runner, canceller) = two_stores(&server, TaskLimits::default()).await;
    insert_for_alice(&runner, "t", TaskState::TaskStateWorking).await;
    let (watched, other) = (CancellationToken::new(), CancellationToken::new());
    runner.shared().unwrap().watch_cancel("t", watched.clone());
    runner.shared().unwrap().watch_cancel("u", other.clone());
    canceller
        .shared()
        .unwrap()
        .request_cancel("t")
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(2), watched.cancelled())
        .await
        .expect("the watching store heard the cancellation");
    assert!(!other.is_cancelled(), "only the task named is cancelled");
    // Unwatched (its executor returned): a later request fires nothing.
    runner.shared().unwrap().unwatch_cancel("u");
    canceller
        .shared()
        .unwrap()
        .request_cancel("u")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!other.is_cancelled());
}

#[tokio::test]
async fn a_redis_outage_is_unavailable_within_the_timeout_and_the_store_recovers_after() {
    let mut server = RedisServer::start();
    let store = store(&server, TaskLimits::default()).await;
    insert_for_alice(&store, "before", TaskState::TaskStateWorking).await;
    server.stop();
    for _ in 0..3 {
        let started = Instant::now();
        let failed = store.get("before").await.unwrap_err();
        assert!(
            started.elapsed() < TIMEOUT * 4,
            "answered in {:?}",
            started.elapsed()
        );
        assert!(matches!(failed, A2aError::Unavailable { .. }), "{failed:?}");
        assert_eq!(failed.status(), http_status(503));
        let refused = store
            .insert(task("during", "c", TaskState::TaskStateWorking), &alice())
            .await
            .unwrap_err();
        assert_eq!(refused.status(), http_status(503));
        assert!(store.shared().unwrap().subscribe("before").await.is_err());
    }
    server.resume();
    // Redis came back empty (no persistence); the scripts are loaded again on first use.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match store
            .insert(task("after", "c", TaskState::TaskStateWorking), &alice())
            .await
        {
            Ok(()) => break,
            Err(error) => assert!(Instant::now() < deadline, "not recovered: {error:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(store.get("after").await.unwrap().is_some());
    // The cancellation channel is subscribed again too.
    let token = CancellationToken::new();
    store.shared().unwrap().watch_cancel("after", token.clone());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !token.is_cancelled() {
        assert!(Instant::now() < deadline, "cancellations not heard again");
        store
            .shared()
            .unwrap()
            .request_cancel("after")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The commands a read or an update sends Redis (`HMGET`, `EVALSHA`, `EVAL`), as
/// `INFO commandstats` counts them: round trips, since the store sends each alone (the
/// commands a script runs inside Redis are counted under their own names, so left out here).
fn served(server: &RedisServer) -> u64 {
    let protocols_testkit::Reply::Bulk(Some(stats)) = server.command(&["INFO", "commandstats"])
    else {
        panic!("INFO answers a bulk string")
    };
    stats
        .lines()
        .filter(|line| {
            ["cmdstat_hmget:", "cmdstat_evalsha:", "cmdstat_eval:"]
                .iter()
                .any(|name| line.starts_with(name))
        })
        .filter_map(|line| line.split("calls=").nth(1))
        .filter_map(|rest| rest.split(',').next())
        .map(|calls| calls.parse::<u64>().unwrap())
        .sum()
}

#[tokio::test]
async fn a_live_update_costs_two_round_trips_and_an_ignored_one_a_single_read() {
    let server = RedisServer::start();
    let store = store(&server, TaskLimits::default()).await;
    insert_for_alice(&store, "t", TaskState::TaskStateWorking).await;
    let shared = store.shared().unwrap();
    let before = served(&server);
    shared
        .update_announcing(
            "t",
            &mut |task| task.status.timestamp = Some(chrono::Utc::now()),
            &status_event,
        )
        .await
        .unwrap();
    assert_eq!(served(&server) - before, 2, "HMGET, then one script");
    let before = served(&server);
    shared
        .update_announcing("t", &mut |_| {}, &|_| None)
        .await
        .unwrap();
    assert_eq!(
        served(&server) - before,
        1,
        "nothing changed: the read alone"
    );
}
