//! Our typed client against our server: each session revision's generated `RemoteServer`
//! proxy calls through `HttpClient` over Streamable HTTP, so every answer is decoded into that
//! revision's own types; server→client requests are answered through the client's callbacks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use mcp_common::{Observed, fixture_server, spawn};
use protocols_mcp::Revision;
use protocols_mcp::client::{Callbacks, HttpClient};
use protocols_runtime::method::ClientError;
use serde_json::{Value, json};

fn callbacks() -> Callbacks {
    Callbacks::new(|method, _params| async move {
        match method.as_str() {
            "sampling/createMessage" => Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "typed-model"}),
            ),
            "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Typed"}})),
            _ => Err(protocols_runtime::ErrorObject::method_not_found()),
        }
    })
}

fn params<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn first_text<T: serde::Serialize>(content: &[T]) -> String {
    serde_json::to_value(&content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

macro_rules! typed_tour {
    ($module:ident, $revision:expr, $url:expr) => {{
        use protocols_mcp::generated::$module as revision_types;
        let client = HttpClient::new($url, callbacks());
        let init = client.initialize($revision, json!({"sampling": {}, "elicitation": {}})).await.unwrap();
        assert_eq!(init["protocolVersion"], $revision.as_str());
        let server = revision_types::RemoteServer::new(&client);
        let listed = server.tools_list(None).await.unwrap();
        assert!(listed.tools.iter().any(|tool| tool.name == "echo"), "{}", $revision);
        let echoed = server.tools_call(params(json!({"name": "echo", "arguments": {"message": "typed"}}))).await.unwrap();
        assert_eq!(first_text(&echoed.content), "typed");
        let sampled = server.tools_call(params(json!({"name": "ask_model"}))).await.unwrap();
        assert_eq!(first_text(&sampled.content), "model said typed-model");
        let read = server.resources_read(params(json!({"uri": "test://item/9"}))).await.unwrap();
        assert_eq!(serde_json::to_value(&read.contents[0]).unwrap()["text"], "item 9");
        let prompt = server.prompts_get(params(json!({"name": "greet", "arguments": {"who": "typed"}}))).await.unwrap();
        assert_eq!(serde_json::to_value(&prompt.messages[0].content).unwrap()["text"], "hello typed");
        let missing = server.prompts_get(params(json!({"name": "greet"}))).await;
        assert!(matches!(missing, Err(ClientError::Rejected(ref error)) if error.code == -32602), "{missing:?}");
        assert_eq!(client.close().await.unwrap(), 200);
    }};
}

#[tokio::test]
async fn the_typed_client_speaks_2024_11_05_over_streamable_http() {
    let running = spawn(fixture_server(&Observed::default())).await;
    typed_tour!(v2024_11_05, Revision::V2024_11_05, running.url("/mcp"));
}

#[tokio::test]
async fn the_typed_client_speaks_2025_03_26_over_streamable_http() {
    let running = spawn(fixture_server(&Observed::default())).await;
    typed_tour!(v2025_03_26, Revision::V2025_03_26, running.url("/mcp"));
}

#[tokio::test]
async fn the_typed_client_speaks_2025_06_18_over_streamable_http() {
    let running = spawn(fixture_server(&Observed::default())).await;
    typed_tour!(v2025_06_18, Revision::V2025_06_18, running.url("/mcp"));
}

#[tokio::test]
async fn the_typed_client_speaks_2025_11_25_over_streamable_http() {
    let running = spawn(fixture_server(&Observed::default())).await;
    typed_tour!(v2025_11_25, Revision::V2025_11_25, running.url("/mcp"));
}

#[tokio::test]
async fn the_typed_client_receives_progress_through_its_callbacks() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let client = HttpClient::new(running.url("/mcp"), callbacks());
    client
        .initialize(Revision::V2025_11_25, json!({}))
        .await
        .unwrap();
    let server = protocols_mcp::generated::v2025_11_25::RemoteServer::new(&client);
    server
        .tools_call(params(
            json!({"name": "work", "_meta": {"progressToken": "t"}}),
        ))
        .await
        .unwrap();
    let progress: Vec<Value> = client
        .callbacks()
        .take_notifications()
        .into_iter()
        .filter(|note| note["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2);
}

#[tokio::test]
async fn the_typed_client_speaks_2024_11_05_over_legacy_http_and_sse() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let base = running.url("");
    let client = protocols_mcp::client::LegacySseClient::connect(&base, "/sse", callbacks())
        .await
        .unwrap();
    let init = client
        .initialize(Revision::V2024_11_05, json!({"sampling": {}}))
        .await
        .unwrap();
    assert_eq!(init["protocolVersion"], "2024-11-05");
    let server = protocols_mcp::generated::v2024_11_05::RemoteServer::new(&client);
    let echoed = server
        .tools_call(params(
            json!({"name": "echo", "arguments": {"message": "legacy"}}),
        ))
        .await
        .unwrap();
    assert_eq!(first_text(&echoed.content), "legacy");
    let sampled = server
        .tools_call(params(json!({"name": "ask_model"})))
        .await
        .unwrap();
    assert_eq!(first_text(&sampled.content), "model said typed-model");
    let unknown = server.tools_call(params(json!({"name": "nope"}))).await;
    assert!(
        matches!(unknown, Err(ClientError::Rejected(ref error)) if error.code == -32602),
        "{unknown:?}"
    );
}
