//! The session revisions on an endpoint without sessions (`SessionMode::Sessionless`), over
//! real HTTP: `initialize` issues no `Mcp-Session-Id`, every later request stands alone and
//! speaks the revision its `MCP-Protocol-Version` names (2025-03-26 when absent), errors keep
//! the session revisions' 200, what needs a session is refused, and the client's capabilities,
//! unknown here, count as none. Every answer is validated against the revision's schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use std::net::SocketAddr;

use mcp_common::{Client, Observed, Schemas, call, fixture_server};
use protocols_mcp::Revision;
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::http::{HttpConfig, SessionMode};
use protocols_runtime::server::Server;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A sessionless server listening on a loopback port until dropped.
struct Running {
    address: SocketAddr,
    shutdown: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The fixture server at `/mcp`, without sessions.
async fn spawn_sessionless() -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let config = HttpConfig::default().session_mode(SessionMode::Sessionless);
    let built = Server::builder()
        .hardening(HardeningConfig::new().bind_address(address))
        .streamable_http("/mcp", fixture_server(&Observed::default()), config)
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        built
            .serve_until(listener, async move { stop.cancelled().await })
            .await
    });
    Running { address, shutdown }
}

/// A client initialized at `offered` on a fresh sessionless server, its initialize answer
/// checked: no session, the revision negotiated, no subscriptions offered.
async fn initialized(offered: &str) -> (Running, Client) {
    let server = spawn_sessionless().await;
    let mut client = Client::new(format!("http://{}/mcp", server.address));
    let exchange = client.initialize(offered).await;
    assert_eq!(exchange.status, 200);
    assert_eq!(exchange.session, None, "no Mcp-Session-Id is issued");
    let result = &exchange.answer(0)["result"];
    assert_eq!(result["protocolVersion"], offered);
    assert_eq!(result["capabilities"]["resources"].get("subscribe"), None);
    (server, client)
}

/// `tools/list` then `tools/call echo` with no session; returns the listed `echo` tool.
async fn list_and_call(client: &Client) -> Value {
    let listed = client.post(call(1, "tools/list", json!({}))).await;
    assert_eq!(listed.status, 200);
    let tools = listed.answer(1)["result"]["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|tool| tool["name"] == "echo")
        .expect("echo is listed")
        .clone();
    let called = client
        .post(call(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "hi"}}),
        ))
        .await;
    assert_eq!(called.status, 200);
    assert_eq!(
        called.answer(2)["result"]["content"][0]["text"],
        "hi",
        "{:?}",
        called.messages
    );
    echo
}

#[tokio::test]
async fn initialize_then_tools_list_and_call_need_no_session_at_2025_06_18() {
    let (_server, client) = initialized("2025-06-18").await;
    assert_eq!(client.version_header.as_deref(), Some("2025-06-18"));
    let echo = list_and_call(&client).await;
    assert_eq!(
        echo["title"], "Echo",
        "served as 2025-06-18, which has titles"
    );
    assert!(client.check_all(&Schemas::new(Revision::V2025_06_18)) >= 3);
}

#[tokio::test]
async fn without_a_version_header_every_request_speaks_2025_03_26() {
    let (_server, client) = initialized("2025-03-26").await;
    assert_eq!(client.version_header, None, "2025-03-26 sends no header");
    let echo = list_and_call(&client).await;
    assert_eq!(echo.get("title"), None, "2025-03-26 has no tool titles");
    assert!(client.check_all(&Schemas::new(Revision::V2025_03_26)) >= 3);
}

#[tokio::test]
async fn resources_subscribe_is_refused_with_200_as_the_server_is_sessionless() {
    let (_server, client) = initialized("2025-11-25").await;
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let refused = client
            .post(call(3, method, json!({"uri": "test://a"})))
            .await;
        assert_eq!(refused.status, 200, "a session revision's error is 200");
        let error = &refused.answer(3)["error"];
        assert_eq!(error["code"], -32601);
        assert!(
            error["message"].as_str().unwrap().contains("sessionless"),
            "{error}"
        );
    }
    // Reading needs no session.
    let read = client
        .post(call(4, "resources/read", json!({"uri": "test://a"})))
        .await;
    assert_eq!(read.answer(4)["result"]["contents"][0]["text"], "alpha");
}

#[tokio::test]
async fn capabilities_declared_at_initialize_are_forgotten_so_sampling_is_refused_to_the_tool() {
    let (_server, client) = initialized("2025-11-25").await;
    let called = client
        .post(call(
            5,
            "tools/call",
            json!({"name": "ask_model", "arguments": {}}),
        ))
        .await;
    let result = &called.answer(5)["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not support sampling"),
        "{result}"
    );
    assert!(
        called
            .messages
            .iter()
            .all(|message| message.get("method").is_none()),
        "nothing was asked of the client"
    );
}
