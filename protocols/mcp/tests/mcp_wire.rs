//! Wire validity: on every revision, every message the server emits — answers, progress and
//! log notifications, server→client requests, errors — is an instance of that revision's pinned
//! JSON Schema, checked by a JSON Schema validator against the definition the method table
//! names.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use mcp_common::{Client, Observed, Schemas, call, fixture_server, spawn};
use protocols_mcp::Revision;
use serde_json::{Value, json};

/// Drives one of everything through a session of `revision`; returns the client.
async fn session_tour(revision: Revision, url: String) -> Client {
    let mut client = Client::new(url);
    let init = client.initialize(revision.as_str()).await;
    assert_eq!(
        init.answer(0)["result"]["protocolVersion"],
        revision.as_str()
    );
    client.post(call(1, "ping", json!({}))).await;
    client
        .post(call(2, "logging/setLevel", json!({"level": "info"})))
        .await;
    let tools = client.post(call(3, "tools/list", json!({}))).await;
    let cursor = tools.answer(3)["result"]["nextCursor"].clone();
    client
        .post(call(4, "tools/list", json!({"cursor": cursor})))
        .await;
    client
        .post(call(
            5,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "hi"}}),
        ))
        .await;
    client
        .post(call(
            6,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        ))
        .await;
    client
        .post(call(7, "tools/call", json!({"name": "sound"})))
        .await;
    client
        .post(call(8, "tools/call", json!({"name": "fail"})))
        .await;
    client
        .post(call(
            9,
            "tools/call",
            json!({"name": "work", "_meta": {"progressToken": "p1"}}),
        ))
        .await;
    client
        .post(call(10, "tools/call", json!({"name": "ask_model"})))
        .await;
    if revision.has_elicitation() {
        client
            .post(call(11, "tools/call", json!({"name": "ask_user"})))
            .await;
    }
    client.post(call(12, "resources/list", json!({}))).await;
    client
        .post(call(13, "resources/templates/list", json!({})))
        .await;
    client
        .post(call(14, "resources/read", json!({"uri": "test://item/7"})))
        .await;
    client
        .post(call(15, "resources/subscribe", json!({"uri": "test://a"})))
        .await;
    client.post(call(16, "prompts/list", json!({}))).await;
    client
        .post(call(
            17,
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "you"}}),
        ))
        .await;
    if revision > Revision::V2024_11_05 {
        client
            .post(call(18, "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "al"}})))
            .await;
    }
    client
        .post(call(19, "tools/call", json!({"name": "no-such-tool"})))
        .await;
    client
        .post(call(20, "resources/read", json!({"uri": "test://missing"})))
        .await;
    client
}

async fn every_message_conforms_on(revision: Revision) {
    let running = spawn(fixture_server(&Observed::default())).await;
    let client = session_tour(revision, running.url("/mcp")).await;
    let checked = client.check_all(&Schemas::new(revision));
    assert!(checked >= 20, "only {checked} messages were recorded");
}

#[tokio::test]
async fn every_message_on_2024_11_05_conforms_to_its_schema() {
    every_message_conforms_on(Revision::V2024_11_05).await;
}

#[tokio::test]
async fn every_message_on_2025_03_26_conforms_to_its_schema() {
    every_message_conforms_on(Revision::V2025_03_26).await;
}

#[tokio::test]
async fn every_message_on_2025_06_18_conforms_to_its_schema() {
    every_message_conforms_on(Revision::V2025_06_18).await;
}

#[tokio::test]
async fn every_message_on_2025_11_25_conforms_to_its_schema() {
    every_message_conforms_on(Revision::V2025_11_25).await;
}

#[tokio::test]
async fn structured_output_reaches_2025_06_18_and_is_absent_before() {
    let running = spawn(fixture_server(&Observed::default())).await;
    for (revision, expected) in [
        (Revision::V2025_03_26, Value::Null),
        (Revision::V2025_06_18, json!({"sum": 3.0})),
    ] {
        let mut client = Client::new(running.url("/mcp"));
        client.initialize(revision.as_str()).await;
        let answer = client
            .post(call(
                1,
                "tools/call",
                json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
            ))
            .await;
        assert_eq!(
            answer.answer(1)["result"]["structuredContent"],
            expected,
            "{revision}"
        );
    }
}

#[tokio::test]
async fn progress_and_logs_travel_before_the_answer_and_respect_the_level() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    client
        .post(call(1, "logging/setLevel", json!({"level": "info"})))
        .await;
    let exchange = client
        .post(call(
            2,
            "tools/call",
            json!({"name": "work", "_meta": {"progressToken": 42}}),
        ))
        .await;
    assert!(exchange.content_type.starts_with("text/event-stream"));
    let progress = exchange.notifications("notifications/progress");
    assert_eq!(progress.len(), 2);
    assert!(
        progress
            .iter()
            .all(|note| note["params"]["progressToken"] == 42)
    );
    let logs = exchange.notifications("notifications/message");
    assert_eq!(
        logs.len(),
        1,
        "the debug message is below the level: {logs:?}"
    );
    let last = exchange.messages.last().unwrap();
    assert_eq!(last["id"], 2);
}

#[tokio::test]
async fn a_tool_error_is_an_is_error_result_not_a_protocol_error() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    let exchange = client
        .post(call(1, "tools/call", json!({"name": "fail"})))
        .await;
    let answer = exchange.answer(1);
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(answer["result"]["content"][0]["text"], "it broke");
    let bad = client
        .post(call(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"wrong": 1}}),
        ))
        .await;
    assert_eq!(bad.answer(2)["result"]["isError"], true);
}

#[tokio::test]
async fn sampling_and_elicitation_round_trip_through_the_client() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    let sampled = client
        .post(call(1, "tools/call", json!({"name": "ask_model"})))
        .await;
    assert_eq!(
        sampled.answer(1)["result"]["content"][0]["text"],
        "model said test-model"
    );
    let elicited = client
        .post(call(2, "tools/call", json!({"name": "ask_user"})))
        .await;
    assert_eq!(
        elicited.answer(2)["result"]["content"][0]["text"],
        "hello Ada"
    );
}

#[tokio::test]
async fn pagination_walks_every_tool_once_and_refuses_a_forged_cursor() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    for id in 1..20 {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let page = client.post(call(id, "tools/list", params)).await;
        let result = page.answer(id)["result"].clone();
        names.extend(
            result["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|tool| tool["name"].as_str().unwrap().to_owned()),
        );
        cursor = result.get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(names.len(), 8, "{names:?}");
    let forged = client
        .post(call(99, "tools/list", json!({"cursor": "zzz"})))
        .await;
    assert_eq!(forged.answer(99)["error"]["code"], -32602);
}

#[tokio::test]
async fn a_tools_title_annotations_icons_and_meta_reach_each_revision_that_defines_them() {
    let running = spawn(fixture_server(&Observed::default())).await;
    for revision in [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let mut client = Client::new(running.url("/mcp"));
        client.initialize(revision.as_str()).await;
        let listed = client.post(call(1, "tools/list", json!({}))).await;
        let echo = listed.answer(1)["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == "echo")
            .cloned()
            .unwrap();
        let has = |field: &str| echo.get(field).is_some();
        assert_eq!(
            has("annotations"),
            revision >= Revision::V2025_03_26,
            "{revision}"
        );
        assert_eq!(
            has("title"),
            revision >= Revision::V2025_06_18,
            "{revision}"
        );
        assert_eq!(
            has("_meta"),
            revision >= Revision::V2025_06_18,
            "{revision}"
        );
        assert_eq!(
            has("icons"),
            revision >= Revision::V2025_11_25,
            "{revision}"
        );
        if revision >= Revision::V2025_03_26 {
            assert_eq!(echo["annotations"]["readOnlyHint"], true);
            assert_eq!(echo["annotations"]["destructiveHint"], false);
        }
        client.check_all(&Schemas::new(revision));
    }
}
