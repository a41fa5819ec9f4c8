//! `all-protocols --session-idle SECONDS` ends an MCP session nobody uses within that time, so
//! a client that never sends DELETE holds the server's memory only that long.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::AllProtocols;
use protocols_testkit::{ACCEPT_EITHER, json_rpc_post};
use serde_json::json;

async fn serve_with_session_idle(seconds: &str) -> (AllProtocols, String) {
    let serving = AllProtocols::start(&["--session-idle", seconds]).await;
    let url = serving.mcp_url();
    (serving, url)
}

/// Opens a session and returns its id.
async fn open_session(client: &reqwest::Client, url: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "idle-test", "version": "1"}}});
    let opened = json_rpc_post(client, url, ACCEPT_EITHER, [], &initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

async fn ping_status(client: &reqwest::Client, url: &str, session: &str) -> u16 {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    json_rpc_post(client, url, ACCEPT_EITHER, headers, &ping)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_session_unused_for_the_session_idle_time_is_gone_and_a_used_one_lives() {
    let (_serving, url) = serve_with_session_idle("2").await;
    let client = reqwest::Client::new();
    let abandoned = open_session(&client, &url).await;
    let used = open_session(&client, &url).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert_eq!(
            ping_status(&client, &url, &used).await,
            200,
            "a used session lives on"
        );
    }
    assert_eq!(
        ping_status(&client, &url, &abandoned).await,
        404,
        "a session unused for longer than --session-idle has ended"
    );
}
