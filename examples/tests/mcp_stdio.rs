//! A real process over stdio: the test spawns `mcp-everything --stdio` and drives it with the
//! typed client, including a server→client sampling request answered over the same pipes, and
//! a list change announced mid-session reaching the client over stdout.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use protocols_mcp::Revision;
use protocols_mcp::client::{Callbacks, StdioClient};
use protocols_mcp::generated::v2025_11_25::RemoteServer;
use serde_json::{Value, json};
use tokio::process::Command;

fn params<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn mcp_everything_over_stdio_answers_the_typed_client_and_exits_on_eof() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-everything"));
    command.arg("--stdio");
    let callbacks = Callbacks::new(|method, _| async move {
        match method.as_str() {
            "sampling/createMessage" => Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "from the pipe"}, "model": "m"}),
            ),
            _ => Err(protocols_runtime::ErrorObject::method_not_found()),
        }
    });
    let client = StdioClient::spawn(command, callbacks.clone())
        .await
        .unwrap();
    let init = client
        .initialize(Revision::V2025_11_25, json!({"sampling": {}}))
        .await
        .unwrap();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    let server = RemoteServer::new(&client);
    let tools = server.tools_list(None).await.unwrap();
    assert!(
        tools
            .tools
            .iter()
            .any(|tool| tool.name == "test_simple_text")
    );
    let simple = server
        .tools_call(params(json!({"name": "test_simple_text"})))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&simple.content[0]).unwrap()["text"],
        "This is a simple text response for testing."
    );
    let sampled = server
        .tools_call(params(
            json!({"name": "test_sampling", "arguments": {"prompt": "hi"}}),
        ))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&sampled.content[0]).unwrap()["text"],
        "LLM response: from the pipe"
    );
    server
        .tools_call(params(
            json!({"name": "test_tool_with_progress", "_meta": {"progressToken": 5}}),
        ))
        .await
        .unwrap();
    let progress = callbacks
        .take_notifications()
        .into_iter()
        .filter(|note| note["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 3);
    let status = client.shutdown().await.unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_list_change_announced_during_the_session_reaches_the_stdio_client() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-everything"));
    command.arg("--stdio");
    let callbacks =
        Callbacks::new(|_, _| async { Err(protocols_runtime::ErrorObject::method_not_found()) });
    let client = StdioClient::spawn(command, callbacks.clone())
        .await
        .unwrap();
    client
        .initialize(Revision::V2025_11_25, json!({}))
        .await
        .unwrap();
    let server = RemoteServer::new(&client);
    let announced = server
        .tools_call(params(
            json!({"name": "announce_list_changed", "arguments": {"list": "tools"}}),
        ))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&announced.content[0]).unwrap()["text"],
        "told 1 client(s)"
    );
    let mut heard = Vec::new();
    for _ in 0..50 {
        heard.extend(callbacks.take_notifications());
        if !heard.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let methods: Vec<&Value> = heard.iter().map(|note| &note["method"]).collect();
    assert_eq!(methods, [&json!("notifications/tools/list_changed")]);
    let status = client.shutdown().await.unwrap();
    assert!(status.success(), "{status}");
}
