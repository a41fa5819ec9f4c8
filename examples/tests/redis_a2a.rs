//! A2A across replicas: three `all-protocols --redis URL` processes on one throwaway
//! `redis-server` serve one client's tasks whichever replica each request reaches: a `slow`
//! task sent on A is read on B and followed to its end on C, every update in order; another,
//! cancelled through B, ends canceled and its executor on A stops; C lists both. With Redis
//! stopped every A2A call is a quick `503` with a JSON-RPC body, and serves again once it is back.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::AllProtocols;
use protocols_testkit::sse::SseReader;
use protocols_testkit::{ACCEPT_EITHER, RedisServer, Reply, json_rpc_post, request};
use serde_json::{Value, json};

/// One replica's A2A JSON-RPC endpoint.
struct Replica {
    _process: AllProtocols,
    url: String,
}

async fn replica(redis: &RedisServer) -> Replica {
    let process = AllProtocols::start(&["--redis", &redis.url()]).await;
    let url = process.mcp_url().replace("/mcp", "/a2a");
    Replica {
        _process: process,
        url,
    }
}

fn post(replica: &Replica, method: &str, params: Value) -> reqwest::RequestBuilder {
    json_rpc_post(
        &reqwest::Client::new(),
        &replica.url,
        ACCEPT_EITHER,
        [("a2a-version", "1.0")],
        &request(1, method, params),
    )
}

async fn call(replica: &Replica, method: &str, params: Value) -> Value {
    let answer = post(replica, method, params).send().await.unwrap();
    let status = answer.status();
    let body: Value = answer.json().await.unwrap();
    assert_eq!(status, 200, "{method}: {body}");
    body.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method}: {body}"))
}

/// Sends `text` on `replica` and answers the new task's id at once.
async fn start_task(replica: &Replica, text: &str) -> String {
    let sent = call(
        replica,
        "SendMessage",
        json!({"message": {"messageId": format!("m-{text}"), "role": "ROLE_USER",
                           "parts": [{"text": text}]},
               "configuration": {"returnImmediately": true}}),
    )
    .await;
    sent["task"]["id"].as_str().unwrap().to_owned()
}

/// The progress a `slow` task reported last (`working 3/16` is 3), 0 before its first.
fn progress(status: &Value) -> u64 {
    status["message"]["parts"][0]["text"]
        .as_str()
        .and_then(|text| text.strip_prefix("working "))
        .and_then(|text| text.split('/').next())
        .map_or(0, |n| n.parse().unwrap())
}

/// How many `HMGET`s Redis has served: each read of a task, so an executor still reporting
/// progress moves it every tick.
fn reads(redis: &RedisServer) -> u64 {
    let Reply::Bulk(Some(stats)) = redis.command(&["INFO", "commandstats"]) else {
        panic!("INFO answers a bulk string")
    };
    stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_hmget:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap())
}

#[tokio::test]
async fn a_slow_task_sent_on_one_replica_is_read_followed_and_cancelled_through_the_others() {
    let redis = RedisServer::start();
    let (a, b, c) = (
        replica(&redis).await,
        replica(&redis).await,
        replica(&redis).await,
    );

    let followed = start_task(&a, "slow followed").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let read = call(&b, "GetTask", json!({"id": followed})).await;
    assert_eq!(read["id"], followed.as_str());
    assert_eq!(read["status"]["state"], "TASK_STATE_WORKING", "{read}");

    let subscribed = post(&c, "SubscribeToTask", json!({"id": followed}))
        .send()
        .await
        .unwrap();
    assert_eq!(subscribed.status(), 200);
    let mut events = SseReader::new(subscribed);
    let (_, first) = events.next_json().await.expect("the task first");
    let snapshot = &first["result"]["task"];
    assert_eq!(snapshot["id"], followed.as_str(), "{first}");
    let mut seen = progress(&snapshot["status"]);
    assert!(
        seen >= 1,
        "the snapshot has the progress made on A: {snapshot}"
    );
    let mut artifact = false;
    let last = loop {
        let (_, event) = events.next_json().await.expect("events until the end");
        let result = &event["result"];
        if let Some(update) = result.get("artifactUpdate") {
            assert_eq!(
                update["artifact"]["parts"][0]["text"],
                "echo: slow followed"
            );
            artifact = true;
            continue;
        }
        let status = &result["statusUpdate"]["status"];
        if status["state"] != "TASK_STATE_WORKING" {
            break status.clone();
        }
        assert!(!artifact, "progress after the artifact: {event}");
        seen += 1;
        assert_eq!(progress(status), seen, "every update, in order: {event}");
    };
    assert_eq!(last["state"], "TASK_STATE_COMPLETED", "{last}");
    assert_eq!(seen, 16, "the subscriber saw progress up to the last tick");
    assert!(artifact, "the answer came before the end");
    assert!(
        events.next().await.is_none(),
        "the stream ends with the task"
    );

    let cancelled = start_task(&a, "slow cancelled").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let canceled = call(&b, "CancelTask", json!({"id": cancelled})).await;
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    // The executor on A stopped: it reads its task before every update, every half second,
    // and no longer does.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let before = reads(&redis);
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(
        reads(&redis),
        before,
        "the executor on A still reports progress"
    );
    let read = call(&c, "GetTask", json!({"id": cancelled})).await;
    assert_eq!(read["status"]["state"], "TASK_STATE_CANCELED", "{read}");

    let listed = call(&c, "ListTasks", json!({})).await;
    let ids: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [cancelled.as_str(), followed.as_str()], "{listed}");
}

#[tokio::test]
async fn with_redis_stopped_a2a_calls_are_503s_with_json_rpc_bodies_and_recover_after() {
    let mut redis = RedisServer::start();
    let a = replica(&redis).await;
    let before = start_task(&a, "hello").await;
    redis.stop();
    for method in ["GetTask", "ListTasks", "SendMessage"] {
        let params = match method {
            "GetTask" => json!({"id": before}),
            "ListTasks" => json!({}),
            _ => json!({"message": {"messageId": "m-down", "role": "ROLE_USER",
                                    "parts": [{"text": "hello"}]}}),
        };
        let started = std::time::Instant::now();
        let answer = post(&a, method, params).send().await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(3), "{method} hung");
        assert_eq!(answer.status(), 503, "{method}");
        assert!(answer.headers().contains_key("retry-after"), "{method}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["error"]["code"], -32603, "{body}");
    }
    redis.resume();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = post(
            &a,
            "SendMessage",
            json!({"message": {"messageId": "m-back", "role": "ROLE_USER",
                               "parts": [{"text": "hello again"}]}}),
        )
        .send()
        .await
        .unwrap();
        if answer.status() == 200 {
            let body: Value = answer.json().await.unwrap();
            assert_eq!(
                body["result"]["task"]["status"]["state"],
                "TASK_STATE_COMPLETED"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not recovered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
