//! `all-protocols --redis URL`: two processes on one throwaway `redis-server` serve one MCP
//! session, whichever of them each request reaches, and a Redis that cannot be reached stops
//! the server at start with the reason.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::AllProtocols;
use protocols_testkit::{ACCEPT_EITHER, RedisServer, Reply, json_rpc_post};
use serde_json::{Value, json};

async fn replica(redis: &RedisServer) -> (AllProtocols, String) {
    let serving = AllProtocols::start(&["--redis", &redis.url()]).await;
    let url = serving.mcp_url();
    (serving, url)
}

async fn post(url: &str, session: &str, body: &Value) -> (u16, String) {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let answer = json_rpc_post(&reqwest::Client::new(), url, ACCEPT_EITHER, headers, body)
        .send()
        .await
        .unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
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

    let deleted = reqwest::Client::new()
        .delete(&on_b)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let (status, _) = post(
        &on_a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 404, "deleted through the other replica");
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
