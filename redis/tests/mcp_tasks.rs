//! MCP tasks in Redis against a real, throwaway `redis-server`, through two task stores on the
//! same Redis (two replicas): a task opened on one is read, listed, awaited and cancelled
//! through the other; expiry leaves no key; an outage is `-32017` within the timeout and the
//! store serves again once Redis is back; the bounds hold across both; round trips counted.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use protocols_mcp::TaskLimits;
use protocols_mcp::TaskStore;
use protocols_mcp::errors::{CALLER_FULL, STORE_UNAVAILABLE};
use protocols_mcp::tasks::TaskWire;
use protocols_mcp::types::TaskStatus;
use protocols_redis::{RedisConfig, RedisTaskRecords};
use protocols_runtime::session::SystemClock;
use protocols_testkit::{RedisServer, Reply};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Short, so an outage costs the tests little; the default is a second.
const TIMEOUT: Duration = Duration::from_millis(250);

const OWNER: Option<&str> = Some("session-a");

fn limits() -> TaskLimits {
    TaskLimits::default()
        .page_size(2)
        .poll_interval(Duration::from_millis(50))
}

async fn store(server: &RedisServer, limits: TaskLimits) -> TaskStore {
    let config = RedisConfig::new(server.url())
        .timeout(TIMEOUT)
        .reconnect_delay(Duration::from_millis(20));
    let records = RedisTaskRecords::connect(config).await.expect("connected");
    TaskStore::shared(Arc::new(records), limits, Arc::new(SystemClock))
}

async fn open(store: &TaskStore, ttl_ms: Option<i64>) -> (String, CancellationToken) {
    let created = store
        .open(OWNER, ttl_ms, TaskWire::Experimental)
        .await
        .expect("opened");
    (created.task.task_id, created.cancellation)
}

#[tokio::test]
async fn a_task_opened_on_one_replica_is_read_listed_and_its_result_answered_on_another() {
    let server = RedisServer::start();
    let (a, b) = (
        store(&server, limits()).await,
        store(&server, limits()).await,
    );
    let ids = [
        open(&a, None).await.0,
        open(&a, None).await.0,
        open(&b, None).await.0,
    ];
    let on_b = b.fetch(OWNER, &ids[0]).await.expect("found on b");
    assert_eq!(on_b.status, TaskStatus::Working);
    assert!(b.fetch(Some("someone-else"), &ids[0]).await.is_err());

    let waiter = {
        let (b, id) = (b.clone(), ids[0].clone());
        tokio::spawn(async move { b.result(OWNER, &id, &CancellationToken::new()).await })
    };
    let finished = a
        .settle(
            &ids[0],
            Ok(json!({"content": [{"type": "text", "text": "done"}]})),
        )
        .await
        .expect("finished");
    assert_eq!(finished.status, TaskStatus::Completed);
    let answered = waiter.await.unwrap().expect("the result");
    assert_eq!(answered["content"][0]["text"], "done");

    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let (page, next) = b.page(OWNER, cursor.as_deref()).await.expect("listed");
        assert!(page.len() <= 2);
        listed.extend(page.into_iter().map(|task| (task.task_id, task.status)));
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let listed_ids: Vec<&str> = listed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        listed_ids,
        ids.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(listed[0].1, TaskStatus::Completed);
    assert!(
        b.page(Some("someone-else"), None)
            .await
            .unwrap()
            .0
            .is_empty()
    );
    assert!(b.page(OWNER, Some("not-a-cursor")).await.is_err());
}

#[tokio::test]
async fn a_task_cancelled_through_another_replica_stops_where_it_runs_and_keeps_no_outcome() {
    let server = RedisServer::start();
    let (a, b) = (
        store(&server, limits()).await,
        store(&server, limits()).await,
    );
    let (id, work) = open(&a, None).await;
    let cancelled = b.stop(OWNER, &id).await.expect("cancelled");
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    tokio::time::timeout(Duration::from_secs(2), work.cancelled())
        .await
        .expect("the running replica saw the cancellation");
    assert!(a.settle(&id, Ok(json!({"content": []}))).await.is_none());
    assert_eq!(
        a.fetch(OWNER, &id).await.unwrap().status,
        TaskStatus::Cancelled
    );
    assert_eq!(b.stop(OWNER, &id).await.unwrap_err().code, -32602);
    let result = a.result(OWNER, &id, &CancellationToken::new()).await;
    assert_eq!(result.unwrap_err().code, -32602);
    // Cancelled where it runs: the work stops at once.
    let (local, local_work) = open(&a, None).await;
    a.stop(OWNER, &local).await.expect("cancelled");
    assert!(local_work.is_cancelled());
}

#[tokio::test]
async fn an_expired_task_leaves_no_key_and_its_work_is_cancelled() {
    let server = RedisServer::start();
    let a = store(&server, limits()).await;
    let (finished, _) = open(&a, Some(300)).await;
    a.settle(&finished, Ok(json!({"content": []})))
        .await
        .expect("finished");
    let (running, work) = open(&a, Some(300)).await;
    assert!(server.key_count() > 0);
    tokio::time::timeout(Duration::from_secs(2), work.cancelled())
        .await
        .expect("the expired task's work was cancelled");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        server.key_count(),
        0,
        "{:?}",
        server.command(&["KEYS", "*"])
    );
    assert!(a.fetch(OWNER, &running).await.is_err());
}

#[tokio::test]
async fn a_redis_outage_is_store_unavailable_within_the_timeout_and_the_store_recovers_after() {
    let mut server = RedisServer::start();
    let a = store(&server, limits()).await;
    let (id, _) = open(&a, None).await;
    server.stop();
    for _ in 0..3 {
        let asked = Instant::now();
        let error = a.fetch(OWNER, &id).await.unwrap_err();
        assert_eq!(error.code, STORE_UNAVAILABLE, "{error:?}");
        assert!(asked.elapsed() < TIMEOUT + Duration::from_millis(400));
    }
    let refused = a
        .open(OWNER, None, TaskWire::Experimental)
        .await
        .unwrap_err();
    assert_eq!(refused.code, STORE_UNAVAILABLE);
    assert_eq!(
        a.page(OWNER, None).await.unwrap_err().code,
        STORE_UNAVAILABLE
    );
    assert_eq!(
        a.stop(OWNER, &id).await.unwrap_err().code,
        STORE_UNAVAILABLE
    );
    server.resume();
    let resumed = Instant::now();
    let reopened = loop {
        match a.open(OWNER, None, TaskWire::Experimental).await {
            Ok(created) => break created.task.task_id,
            Err(error) => {
                assert!(
                    resumed.elapsed() < Duration::from_secs(2),
                    "not recovered: {error:?}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert!(a.fetch(OWNER, &reopened).await.is_ok());
    // The killed Redis kept nothing (no persistence): the earlier task is gone, not "unavailable".
    assert_eq!(a.fetch(OWNER, &id).await.unwrap_err().code, -32602);
}

#[tokio::test]
async fn an_owners_task_bound_holds_across_two_replicas() {
    let server = RedisServer::start();
    let two = limits().max_tasks_per_owner(2);
    let (a, b) = (store(&server, two).await, store(&server, two).await);
    open(&a, Some(5_500)).await;
    open(&b, None).await;
    let refused = a
        .open(OWNER, None, TaskWire::Experimental)
        .await
        .unwrap_err();
    assert_eq!(refused.code, CALLER_FULL);
    assert_eq!(refused.data.unwrap()["retryAfterSeconds"], 6);
    assert!(
        b.open(Some("another"), None, TaskWire::Experimental)
            .await
            .is_ok()
    );
}

/// Calls of `name` clients sent since the statistics were reset.
fn calls(server: &RedisServer, name: &str) -> u64 {
    let Reply::Bulk(Some(info)) = server.command(&["INFO", "commandstats"]) else {
        panic!("no INFO reply");
    };
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("cmdstat_{name}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse::<u64>().unwrap())
}

/// Script calls, and `HMGET`s, since `reset` (the watcher is kept quiet by a long poll).
fn round_trips(server: &RedisServer) -> (u64, u64) {
    (
        calls(server, "evalsha") + calls(server, "eval"),
        calls(server, "hmget"),
    )
}

#[tokio::test]
async fn each_task_step_is_one_round_trip() {
    let server = RedisServer::start();
    let quiet = limits().poll_interval(Duration::from_secs(3600));
    let a = store(&server, quiet).await;
    let reset = || server.command(&["CONFIG", "RESETSTAT"]);
    reset();
    let (id, _) = open(&a, None).await;
    assert_eq!(round_trips(&server).0, 1, "create");
    reset();
    a.fetch(OWNER, &id).await.unwrap();
    assert_eq!(round_trips(&server), (0, 1), "get");
    reset();
    a.page(OWNER, None).await.unwrap();
    assert_eq!(round_trips(&server).0, 1, "list");
    let (other, _) = open(&a, None).await;
    reset();
    a.settle(&id, Ok(json!({"content": []}))).await.unwrap();
    assert_eq!(round_trips(&server).0, 1, "finish");
    reset();
    a.stop(OWNER, &other).await.unwrap();
    assert_eq!(round_trips(&server).0, 1, "cancel");
    reset();
    a.result(OWNER, &id, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(round_trips(&server), (0, 1), "result of a finished task");
}
