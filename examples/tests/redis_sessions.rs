//! `all-protocols --redis URL`: two or three processes on one throwaway `redis-server` serve
//! one MCP session, whichever of them each request reaches, and a Redis that cannot be reached
//! stops the server at start with the reason.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod mcp_client;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::AllProtocols;
use mcp_client::{REVISION, open_session};
use protocols_testkit::{ACCEPT_EITHER, RedisServer, Reply, SseReader, json_rpc_post};
use serde_json::{Value, json};

async fn replica(redis: &RedisServer) -> (AllProtocols, String) {
    let serving = AllProtocols::start(&["--redis", &redis.url()]).await;
    let url = serving.mcp_url();
    (serving, url)
}

async fn post(url: &str, session: &str, body: &Value) -> (u16, String) {
    let answer = mcp_client::post(url, session, body).await;
    (answer.status().as_u16(), answer.text().await.unwrap())
}

/// DELETEs `session` through `deleting`, then asks `asking` for it with a ping numbered `id`:
/// every replica must hear that the session ended.
async fn delete_then_unknown(deleting: &str, asking: &str, session: &str, id: u64) {
    let deleted = reqwest::Client::new()
        .delete(deleting)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", REVISION)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let (status, _) = post(asking, session, &ping).await;
    assert_eq!(
        status, 404,
        "deleted through one replica, unknown on another"
    );
}

#[tokio::test]
async fn two_replicas_on_one_redis_serve_one_mcp_session_and_delete_it_for_both() {
    let redis = RedisServer::start();
    let ((_a, on_a), (_b, on_b)) = (replica(&redis).await, replica(&redis).await);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "replicas", "version": "1"}}});
    let opened = json_rpc_post(
        &reqwest::Client::new(),
        &on_a,
        ACCEPT_EITHER,
        [],
        &initialize,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&on_b, &session, &initialized).await.0, 202);
    let (status, tools) = post(
        &on_b,
        &session,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200, "{tools}");
    assert!(tools.contains("\"tools\""), "{tools}");
    let set_level = json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
        "params": {"level": "error"}});
    assert_eq!(post(&on_a, &session, &set_level).await.0, 200);
    assert_eq!(
        session_keys(&redis),
        2,
        "the session's record and the index"
    );

    delete_then_unknown(&on_b, &on_a, &session, 4).await;
    // The session's event streams are closed as it ends, on their own time.
    let deadline = Instant::now() + Duration::from_secs(3);
    while redis.key_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "keys left after the session ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The session store's keys (records and the index), apart from the event streams' keys.
fn session_keys(redis: &RedisServer) -> usize {
    match redis.command(&["KEYS", "protocols:session*"]) {
        Reply::Array(keys) => keys.len(),
        other => panic!("unexpected KEYS reply {other:?}"),
    }
}

/// The log messages and the answer of a `tools/call` of `test_tool_with_logging`: an event
/// stream when it logs at the session's level, a JSON answer when nothing is logged.
async fn logged_call(url: &str, session: &str, id: u64) -> (Vec<String>, Value) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "test_tool_with_logging", "arguments": {}}});
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let answer = json_rpc_post(&reqwest::Client::new(), url, ACCEPT_EITHER, headers, &call)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let streamed = answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream");
    if !streamed {
        // Nothing logged at the session's level: the answer comes alone, as JSON.
        return (Vec::new(), answer.json().await.unwrap());
    }
    let mut stream = SseReader::new(answer);
    let mut logged = Vec::new();
    loop {
        let (_, message) = tokio::time::timeout(Duration::from_secs(10), stream.next_json())
            .await
            .expect("the stream answers in time")
            .expect("the stream ends with the answer");
        if message["method"] == "notifications/message" {
            logged.push(message["params"]["data"].as_str().unwrap().to_owned());
        } else {
            return (logged, message);
        }
    }
}

#[tokio::test]
async fn a_client_sending_each_request_to_another_of_three_replicas_is_served_as_by_one() {
    let redis = RedisServer::start();
    let ((_a, on_a), (_b, on_b), (_c, on_c)) = (
        replica(&redis).await,
        replica(&redis).await,
        replica(&redis).await,
    );
    let session = open_session(&on_a, json!({})).await;
    let (status, tools) = post(
        &on_b,
        &session,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200, "{tools}");
    assert!(tools.contains("test_tool_with_logging"), "{tools}");

    let level = |id: u64, level: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel",
            "params": {"level": level}})
    };
    assert_eq!(post(&on_b, &session, &level(3, "info")).await.0, 200);
    let (logged, answer) = logged_call(&on_c, &session, 4).await;
    assert_eq!(answer["id"], 4, "{answer}");
    assert!(answer["result"]["content"].is_array(), "{answer}");
    assert_eq!(
        logged.len(),
        3,
        "C logs at the level B recorded, on the call's event stream: {logged:?}"
    );
    assert_eq!(post(&on_a, &session, &level(5, "error")).await.0, 200);
    let (logged, answer) = logged_call(&on_c, &session, 6).await;
    assert_eq!(answer["id"], 6, "{answer}");
    assert!(logged.is_empty(), "C hears A's new level: {logged:?}");

    delete_then_unknown(&on_b, &on_c, &session, 7).await;
}

#[test]
fn all_protocols_with_no_redis_behind_its_url_exits_saying_so() {
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", nobody.local_addr().unwrap());
    drop(nobody);
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_all-protocols"))
        .args(["--listen", "127.0.0.1:0", "--redis", &url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(started.elapsed() < Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--redis: redis did not answer"), "{stderr}");
}
