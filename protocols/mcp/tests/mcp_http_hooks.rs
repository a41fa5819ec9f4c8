//! MCP over a real socket, through two runtime hooks: the HTTP status 2026-07-28 requires for its
//! error codes (a missing client capability is `400`, however deep in a tool it is found), and
//! SSE polling (a tool closes its request's stream mid-call; the client resumes with
//! `Last-Event-ID` and gets the rest, the result included).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use std::time::Duration;

use mcp_common::{Client, Observed, Schemas, call, fixture_server, spawn};
use protocols_mcp::content::{text, tool_result};
use protocols_mcp::{McpServer, NoArguments, Revision, ToolDefinition, ToolError};
use protocols_testkit::{drain, event_stream_get};
use serde_json::{Value, json};

#[tokio::test]
async fn a_missing_client_capability_on_2026_07_28_is_answered_with_400_and_32021() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut client = Client::new(running.url("/mcp"));
    client.version_header = Some("2026-07-28".to_owned());
    client.extra_headers = vec![
        ("mcp-method".to_owned(), "tools/call".to_owned()),
        ("mcp-name".to_owned(), "ask_user".to_owned()),
    ];
    let request = call(
        1,
        "tools/call",
        json!({"name": "ask_user", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "no-elicitation", "version": "1.0.0"}
        }}),
    );
    let refused = client.post(request).await;
    assert_eq!(refused.status, 400);
    let error = &refused.answer(1)["error"];
    assert_eq!(error["code"], -32021);
    assert!(error["data"]["requiredCapabilities"]["elicitation"].is_object());
    client.check_all(&Schemas::new(Revision::V2026_07_28));
}

#[tokio::test]
async fn an_error_without_a_declared_status_still_answers_200_on_the_session_revisions() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    let answered = client
        .post(call(1, "tools/call", json!({"name": "no_such_tool"})))
        .await;
    assert_eq!(answered.status, 200);
    assert_eq!(answered.answer(1)["error"]["code"], -32602);
}

const RETRY: Duration = Duration::from_millis(40);

/// A server whose one tool reports progress, closes its stream, then reports and answers.
fn polling_server() -> McpServer {
    McpServer::builder("polling", "1.0.0")
        .tool(ToolDefinition::new(
            "poll",
            "Closes its stream mid-call",
            |_: NoArguments, cx| async move {
                let failed =
                    |error: protocols_runtime::PeerError| ToolError::failed(error.to_string());
                cx.progress(1.0, Some(2.0), Some("before"))
                    .map_err(failed)?;
                cx.close_stream(RETRY).map_err(failed)?;
                tokio::time::sleep(Duration::from_millis(30)).await;
                cx.progress(2.0, Some(2.0), Some("after")).map_err(failed)?;
                Ok(tool_result(vec![text("answered after the resume")]))
            },
        ))
        .build()
        .unwrap()
}

fn progress_messages(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter(|message| message["method"] == "notifications/progress")
        .filter_map(|message| message["params"]["message"].as_str())
        .collect()
}

#[tokio::test]
async fn a_tool_that_closes_its_stream_answers_on_the_stream_the_client_resumes() {
    let running = spawn(polling_server()).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    let session = client.session.clone().expect("a session");

    let poll = call(
        5,
        "tools/call",
        json!({"name": "poll", "_meta": {"progressToken": "p"}}),
    );
    let posted = client.request(&poll).send().await.unwrap();
    let first = drain(posted).await;
    assert_eq!(progress_messages(&first.messages), ["before"]);
    assert!(first.messages.iter().all(|message| message["id"] != 5));
    assert_eq!(first.retry, Some(RETRY));
    let last_event_id = first
        .last_event_id
        .expect("an id to resume from")
        .to_string();

    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
        ("last-event-id", last_event_id.as_str()),
    ];
    let resumed = event_stream_get(&client.http, &running.url("/mcp"), headers)
        .send()
        .await
        .unwrap();
    let rest = drain(resumed).await;
    assert_eq!(progress_messages(&rest.messages), ["after"]);
    let answer = rest
        .messages
        .iter()
        .find(|message| message["id"] == 5)
        .expect("the result on the resumed stream");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "answered after the resume"
    );
}
