//! How the multi-replica process tests speak MCP over Streamable HTTP, written once: a session
//! opened on one replica (`initialize`, then `notifications/initialized`), and a POST in that
//! session to whichever replica a test names.

use protocols_testkit::{ACCEPT_EITHER, json_rpc_post};
use serde_json::{Value, json};

/// The revision these tests negotiate: the newest with sessions.
pub const REVISION: &str = "2025-11-25";

/// Opens a session on `url` for a client declaring `capabilities` and sends
/// `notifications/initialized`; the session's id.
pub async fn open_session(url: &str, capabilities: Value) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": REVISION, "capabilities": capabilities,
        "clientInfo": {"name": "replicas", "version": "1"}}});
    let opened = json_rpc_post(&reqwest::Client::new(), url, ACCEPT_EITHER, [], &initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, &session, &initialized).await.status(), 202);
    session
}

/// POSTs `body` in `session` to `url`, accepting JSON or an event stream.
pub async fn post(url: &str, session: &str, body: &Value) -> reqwest::Response {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", REVISION),
    ];
    json_rpc_post(&reqwest::Client::new(), url, ACCEPT_EITHER, headers, body)
        .send()
        .await
        .unwrap()
}
